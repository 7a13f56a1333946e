// float32 matmuls A @ B of few rows by a wide weight, compiled without data tiling (`packing.PACK_BIG`: a batch of
// 1-256 rows through a 4096x4096 weight is not worth packing). IREE's tiles for them (32x64 workgroups, 8x32
// register blocks over the whole 4096-long reduction, 16-long vector reductions) re-read each weight column panel
// from memory once per 8 rows: 32x4096x4096 took 13 ms on one core. Here: 6x64 blocks of the result in registers
// (24 AVX-512 accumulators: 4 loads and 6 broadcasts feed 24 FMAs), the reduction cut into 128-long panels
// (`cache_reduction`: a 128x128 panel of B, 64 KiB, is used by every 6-row block of a 64x128 cache tile), 4-long
// vector reductions, 256x512 workgroups (all the rows: B is read from memory once). Measured (docs/passes.md,
// "Float32 matmuls of few rows"): 32x4096x4096 13.3 -> 7.2 ms, 128x4096x4096 52 -> 23 (one core).
module @skinny attributes {transform.with_named_sequence} {
  // A float32 A @ B (nothing transposed: B.T read this way was 2.5x slower) of at most 256 rows and 1024+ columns.
  transform.named_sequence @match(%op: !transform.any_op {transform.readonly}) -> (!transform.any_op) {
    %b, %m, %n, %k = transform.iree.match.contraction %op, lhs_type = f32, rhs_type = f32, output_type = f32, indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>] : !transform.any_op -> !transform.param<i64>
    transform.iree.match.dims_equal %b, [] : !transform.param<i64>
    transform.match.operation_name %op ["linalg.generic"] : !transform.any_op
    transform.match.structured failures(propagate) %op : !transform.any_op {
    ^bb0(%s: !transform.any_op):
      %rank = transform.match.structured.rank %s : (!transform.any_op) -> !transform.param<i64>
      %c3 = transform.param.constant 3 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %c3 : !transform.param<i64>
      %rows = "transform.match.structured.dim"(%s) <{raw_dim_list = array<i64: 0>}> : (!transform.any_op) -> !transform.param<i64>
      %cols = "transform.match.structured.dim"(%s) <{raw_dim_list = array<i64: 1>}> : (!transform.any_op) -> !transform.param<i64>
      %c256 = transform.param.constant 256 : i64 -> !transform.param<i64>
      %c1024 = transform.param.constant 1024 : i64 -> !transform.param<i64>
      transform.match.param.cmpi le %rows, %c256 : !transform.param<i64>
      transform.match.param.cmpi ge %cols, %c1024 : !transform.param<i64>
      transform.match.structured.yield
    }
    transform.yield %op : !transform.any_op
  }
  // The matmul's tiles; its fill and the elementwise ops fused after it (a bias, tanh) take 6x64 blocks too.
  transform.named_sequence @tile(%op: !transform.any_op {transform.readonly}) {
    %f = "transform.get_parent_op"(%op) <{op_name = "func.func", nth_parent = 1 : i64}> : (!transform.any_op) -> !transform.any_op
    %block = transform.param.constant #iree_cpu.lowering_config<vector_inner_parallel = [6, 64]> -> !transform.any_param
    %fill = transform.structured.match ops{["linalg.fill"]} in %f : (!transform.any_op) -> !transform.any_op
    transform.annotate %fill "lowering_config" = %block : !transform.any_op, !transform.any_param
    %ew = transform.structured.match ops{["linalg.generic"]} attributes {iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>]} in %f : (!transform.any_op) -> !transform.any_op
    transform.annotate %ew "lowering_config" = %block : !transform.any_op, !transform.any_param
    %cfg = transform.param.constant #iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<distribution = [256, 512, 0], cache_parallel = [64, 128, 0], cache_reduction = [0, 0, 128], vector_common_parallel = [6, 64, 0], vector_reduction = [0, 0, 4]>, translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>, {enable_loop_peeling}>> -> !transform.any_param
    transform.annotate %op "compilation_info" = %cfg : !transform.any_op, !transform.any_param
    transform.yield
  }
  transform.named_sequence @entry(%arg0: !transform.any_op {transform.consumed}) -> !transform.any_op {
    %res = transform.foreach_match in %arg0 @match -> @tile : (!transform.any_op) -> !transform.any_op
    transform.yield %res : !transform.any_op
  }
}
