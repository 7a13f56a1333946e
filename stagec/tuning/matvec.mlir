// float32 row vector by matrix products x @ W (1 row, 256+ columns), compiled without data tiling. IREE folds the
// unit row away and tiles the (columns, reduction) generic 64 columns a workgroup, 32 a vector step, over the whole
// reduction: each workgroup reads 256 bytes of every row of W, 16 KiB apart (4096 columns), a pattern the caches'
// prefetchers do not follow: 1x4096x4096 took 5.3 ms on one core, where reading W once takes ~1.2. Here: 2048
// columns a workgroup from 4096 columns, 512 below (two or more workgroups for two workers: one workgroup of 1024
// columns ran slower than IREE's 16 on local-task), the reduction cut into 8-row panels (`cache_reduction`), 64
// columns a vector step (4 AVX-512 accumulators), 8 rows a vector reduction: each panel of 8 rows of W is read as 8
// contiguous streams, a workgroup's results (2-8 KiB) staying in L1. Measured (docs/passes.md, "Float32 matrix-vector
// products"): 1x4096x4096 5.3 -> 1.3 ms, 1x1024x1024 0.094 -> 0.045, 1x128x4096 0.050 -> 0.024 (one core).
module @matvec attributes {transform.with_named_sequence} {
  // x @ W as IREE sees it once the unit row is folded: out(n) += x(k) * W(k, n), float32, 256+ columns.
  transform.named_sequence @match(%op: !transform.any_op {transform.readonly}) -> (!transform.any_op) {
    %b, %m, %n, %k = transform.iree.match.contraction %op, lhs_type = f32, rhs_type = f32, output_type = f32, indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>] : !transform.any_op -> !transform.param<i64>
    transform.iree.match.dims_equal %b, [] : !transform.param<i64>
    transform.iree.match.dims_equal %m, [] : !transform.param<i64>
    transform.match.structured failures(propagate) %op : !transform.any_op {
    ^bb0(%s: !transform.any_op):
      %cols = "transform.match.structured.dim"(%s) <{raw_dim_list = array<i64: 0>}> : (!transform.any_op) -> !transform.param<i64>
      %c256 = transform.param.constant 256 : i64 -> !transform.param<i64>
      transform.match.param.cmpi ge %cols, %c256 : !transform.param<i64>
      transform.match.structured.yield
    }
    transform.yield %op : !transform.any_op
  }
  // ... of 4096+ columns: 2048 a workgroup (below 4096, 512: two or more workgroups for two workers).
  transform.named_sequence @match_wide(%op: !transform.any_op {transform.readonly}) -> (!transform.any_op) {
    %b, %m, %n, %k = transform.iree.match.contraction %op, lhs_type = f32, rhs_type = f32, output_type = f32, indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>] : !transform.any_op -> !transform.param<i64>
    transform.iree.match.dims_equal %b, [] : !transform.param<i64>
    transform.iree.match.dims_equal %m, [] : !transform.param<i64>
    transform.match.structured failures(propagate) %op : !transform.any_op {
    ^bb0(%s: !transform.any_op):
      %cols = "transform.match.structured.dim"(%s) <{raw_dim_list = array<i64: 0>}> : (!transform.any_op) -> !transform.param<i64>
      %c4096 = transform.param.constant 4096 : i64 -> !transform.param<i64>
      transform.match.param.cmpi ge %cols, %c4096 : !transform.param<i64>
      transform.match.structured.yield
    }
    transform.yield %op : !transform.any_op
  }
  transform.named_sequence @tile(%op: !transform.any_op {transform.readonly}) {
    %cfg = transform.param.constant #iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<distribution = [512, 0], cache_parallel = [512, 0], cache_reduction = [0, 8], vector_common_parallel = [64, 0], vector_reduction = [0, 8]>, translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>, {enable_loop_peeling}>> -> !transform.any_param
    transform.annotate %op "compilation_info" = %cfg : !transform.any_op, !transform.any_param
    transform.yield
  }
  transform.named_sequence @tile_wide(%op: !transform.any_op {transform.readonly}) {
    %cfg = transform.param.constant #iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<distribution = [2048, 0], cache_parallel = [2048, 0], cache_reduction = [0, 8], vector_common_parallel = [64, 0], vector_reduction = [0, 8]>, translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>, {enable_loop_peeling}>> -> !transform.any_param
    transform.annotate %op "compilation_info" = %cfg : !transform.any_op, !transform.any_param
    transform.yield
  }
  transform.named_sequence @entry(%arg0: !transform.any_op {transform.consumed}) -> !transform.any_op {
    %res = transform.foreach_match in %arg0 @match_wide -> @tile_wide, @match -> @tile : (!transform.any_op) -> !transform.any_op
    transform.yield %res : !transform.any_op
  }
}
