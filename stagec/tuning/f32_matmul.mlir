// float32 matmuls A @ B on the CPU, for modules compiled without data tiling (`tuning.RULES`: every contraction
// of the module is one of these). IREE's packed (data-tiled) float32 matmul computes each 16x16 block of the
// result over the whole reduction, reading 64 KiB of each operand from L2 per block, and adds two packing
// dispatches per matmul (~45 us each on local-task, mostly waking the workers). Unpacked, these tiles: 8x32
// blocks of the result in registers (16 AVX-512 accumulators; 2 loads and 8 broadcasts feed 16 FMAs), the
// reduction cut into 128-long panels that stay in cache, 64x64 cache tiles (a fused consumer's intermediate
// fits the 32 KiB stack) in 64x128 workgroups. Measured single-threaded (docs/passes.md, "Float32 matmuls"):
// matmul 1024^3 17.4 -> 15.9 ms, 256^3 0.223 -> 0.185, the MLP 256x512x2048 9.1 -> 7.8.
module @f32_matmul attributes {transform.with_named_sequence} {
  // A float32 matmul (no batch dimensions) of at least 16x32x32.
  transform.named_sequence @match(%op: !transform.any_op {transform.readonly}) -> (!transform.any_op) {
    %b, %m, %n, %k = transform.iree.match.contraction %op, lhs_type = f32, rhs_type = f32, output_type = f32 : !transform.any_op -> !transform.param<i64>
    transform.iree.match.dims_equal %b, [] : !transform.param<i64>
    transform.match.operation_name %op ["linalg.generic"] : !transform.any_op
    transform.match.structured failures(propagate) %op : !transform.any_op {
    ^bb0(%s: !transform.any_op):
      %rank = transform.match.structured.rank %s : (!transform.any_op) -> !transform.param<i64>
      %c3 = transform.param.constant 3 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %c3 : !transform.param<i64>
      "transform.match.structured.dim"(%s) <{raw_dim_list = array<i64: 0, 1>, parallel = unit}> : (!transform.any_op) -> ()
      "transform.match.structured.dim"(%s) <{raw_dim_list = array<i64: 2>, reduction = unit}> : (!transform.any_op) -> ()
      %dm = "transform.match.structured.dim"(%s) <{raw_dim_list = array<i64: 0>}> : (!transform.any_op) -> !transform.param<i64>
      %dn = "transform.match.structured.dim"(%s) <{raw_dim_list = array<i64: 1>}> : (!transform.any_op) -> !transform.param<i64>
      %dk = "transform.match.structured.dim"(%s) <{raw_dim_list = array<i64: 2>}> : (!transform.any_op) -> !transform.param<i64>
      %c16 = transform.param.constant 16 : i64 -> !transform.param<i64>
      %c32 = transform.param.constant 32 : i64 -> !transform.param<i64>
      transform.match.param.cmpi ge %dm, %c16 : !transform.param<i64>
      transform.match.param.cmpi ge %dn, %c32 : !transform.param<i64>
      transform.match.param.cmpi ge %dk, %c32 : !transform.param<i64>
      transform.match.structured.yield
    }
    transform.yield %op : !transform.any_op
  }
  // The matmul's tiles; its fill and the elementwise ops fused after it take 8x32 blocks too.
  transform.named_sequence @tile(%op: !transform.any_op {transform.readonly}) {
    %f = "transform.get_parent_op"(%op) <{op_name = "func.func", nth_parent = 1 : i64}> : (!transform.any_op) -> !transform.any_op
    %block = transform.param.constant #iree_cpu.lowering_config<vector_inner_parallel = [8, 32]> -> !transform.any_param
    %fill = transform.structured.match ops{["linalg.fill"]} in %f : (!transform.any_op) -> !transform.any_op
    transform.annotate %fill "lowering_config" = %block : !transform.any_op, !transform.any_param
    %ew = transform.structured.match ops{["linalg.generic"]} attributes {iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>]} in %f : (!transform.any_op) -> !transform.any_op
    transform.annotate %ew "lowering_config" = %block : !transform.any_op, !transform.any_param
    %cfg = transform.param.constant #iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<distribution = [64, 128, 0], cache_parallel = [64, 64, 0], cache_reduction = [0, 0, 128], vector_common_parallel = [8, 32, 0], vector_reduction = [0, 0, 1]>, translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>, {enable_loop_peeling}>> -> !transform.any_param
    transform.annotate %op "compilation_info" = %cfg : !transform.any_op, !transform.any_param
    transform.yield
  }
  transform.named_sequence @entry(%arg0: !transform.any_op {transform.consumed}) -> !transform.any_op {
    %res = transform.foreach_match in %arg0 @match -> @tile : (!transform.any_op) -> !transform.any_op
    transform.yield %res : !transform.any_op
  }
}
