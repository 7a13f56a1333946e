// float64 matmuls on the CPU. IREE 3.13 has no data-tiled (packed) float64 matmul for x86: it tiles one 4x4 block
// of the result at a time with 16-long reductions, re-reading both operands from memory for every block (a
// 1024^3 matmul took 188 ms on 2 cores, XLA 14). Here: 8x16 blocks of the result held in registers (16 AVX-512
// accumulators), the reduction cut into 128-long panels that stay in cache, 64x32 tiles per workgroup (a fused
// consumer keeps its tile on the 32 KiB stack). Measured (docs/passes.md, "float64 matmuls"): 1024^3 188 -> 16 ms,
// the MLP 256x512x2048 72 -> 12 ms. Every size: IREE's own tiles of a float64 matmul from about 32x16x32 on AVX-512
// did not compile ("operations with large vector sizes": 32x16x32, 48^3, 16x17x100; 6 of 30 random shapes).
module @f64_matmul attributes {transform.with_named_sequence} {
  // A float64 matmul (A @ B or A.T @ B), of any size.
  transform.named_sequence @match(%op: !transform.any_op {transform.readonly}) -> (!transform.any_op) {
    %b, %m, %n, %k = transform.iree.match.contraction %op, lhs_type = f64, rhs_type = f64, output_type = f64 : !transform.any_op -> !transform.param<i64>
    transform.iree.match.dims_equal %b, [] : !transform.param<i64>
    %0 = transform.include @plain failures(propagate) (%op) : (!transform.any_op) -> !transform.any_op
    transform.yield %op : !transform.any_op
  }
  transform.named_sequence @plain(%op: !transform.any_op {transform.readonly}) -> (!transform.any_op) {
    transform.match.operation_name %op ["linalg.generic"] : !transform.any_op
    transform.match.structured failures(propagate) %op : !transform.any_op {
    ^bb0(%s: !transform.any_op):
      %rank = transform.match.structured.rank %s : (!transform.any_op) -> !transform.param<i64>
      %c3 = transform.param.constant 3 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %c3 : !transform.param<i64>
      "transform.match.structured.dim"(%s) <{raw_dim_list = array<i64: 0, 1>, parallel = unit}> : (!transform.any_op) -> ()
      "transform.match.structured.dim"(%s) <{raw_dim_list = array<i64: 2>, reduction = unit}> : (!transform.any_op) -> ()
      transform.match.structured.yield
    }
    transform.yield %op : !transform.any_op
  }
  // The matmul's tiles; its fill and the elementwise ops fused after it take 8x16 blocks too.
  transform.named_sequence @tile(%op: !transform.any_op {transform.readonly}) {
    %f = "transform.get_parent_op"(%op) <{op_name = "func.func", nth_parent = 1 : i64}> : (!transform.any_op) -> !transform.any_op
    %block = transform.param.constant #iree_cpu.lowering_config<vector_inner_parallel = [8, 16]> -> !transform.any_param
    %fill = transform.structured.match ops{["linalg.fill"]} in %f : (!transform.any_op) -> !transform.any_op
    transform.annotate %fill "lowering_config" = %block : !transform.any_op, !transform.any_param
    %ew = transform.structured.match ops{["linalg.generic"]} attributes {iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>]} in %f : (!transform.any_op) -> !transform.any_op
    transform.annotate %ew "lowering_config" = %block : !transform.any_op, !transform.any_param
    %cfg = transform.param.constant #iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<distribution = [64, 32, 0], cache_parallel = [64, 32, 0], cache_reduction = [0, 0, 128], vector_common_parallel = [8, 16, 0], vector_reduction = [0, 0, 1]>, translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>, {enable_loop_peeling}>> -> !transform.any_param
    transform.annotate %op "compilation_info" = %cfg : !transform.any_op, !transform.any_param
    transform.yield
  }
  transform.named_sequence @entry(%arg0: !transform.any_op {transform.consumed}) -> !transform.any_op {
    %res = transform.foreach_match in %arg0 @match -> @tile : (!transform.any_op) -> !transform.any_op
    transform.yield %res : !transform.any_op
  }
}
