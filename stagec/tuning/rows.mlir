// Row reductions on the CPU, a part of the tuning spec that stagec.tuning gives IREE's llvm-cpu codegen, for
// modules whose reductions all read rows in order (`tuning.reads_rows_only`). It tunes one pattern: a row
// reduction whose input depends on another row reduction's result in the same dispatch, as the sum of
// exp(x - max) in softmax and the sum of (x - mean)^2 in layernorm.
//
// Why: IREE 3.13 tiles such a dispatch 8 rows x 8 columns. Its split of a reduction into vector accumulators
// (LLVMCPUSplitReduction) takes only a reduction with one input, so the second reduction reduces every 8-float
// vector across its lanes. One row per tile with 128-float vectors does 1/16 of those lane reductions, and its
// split reduction keeps 8 (AVX-512) or 16 (AVX2) independent vector accumulators (our reading of why it is faster:
// enough to hide each add's or max's latency). Single-threaded, 32-float vectors (Zen 3, AVX2; iree-benchmark-module / iree.runtime):
// layernorm 4096x1024 3.53 -> 2.69 ms, softmax 4096x1024 6.88 -> 6.10, softmax 512x100 0.141 -> 0.084 (loop
// peeling handles the remainder: without it a 4096x1000 layernorm took 4x as long). Then 32 -> 128 floats
// (a Xeon with AVX-512, jit calls on 2 cores, 3 alternating processes each, medians): softmax 4096x1024
// 1.39-1.45 -> 1.24-1.29 ms, layernorm 0.95-0.97 -> 0.85-0.90; compiled for AVX2 (haswell) on that Xeon, softmax
// 3.05 -> 1.54 ms, layernorm 0.95 -> 0.87. 256 floats measured alike on AVX-512, worse on AVX2; 64, worse on
// both. A reduction down columns, or one reduction alone (sum(x*(x+1), 1)),
// was slower with this configuration and is not matched (docs/passes.md, "Softmax and layernorm").
module @rows attributes {transform.with_named_sequence} {
  // A generic op over (rows, columns) reducing the columns.
  transform.named_sequence @row_reduction(%op: !transform.any_op {transform.readonly}) -> (!transform.any_op) {
    transform.match.operation_name %op ["linalg.generic"] : !transform.any_op
    transform.match.structured failures(propagate) %op : !transform.any_op {
    ^bb0(%s: !transform.any_op):
      %rank = transform.match.structured.rank %s : (!transform.any_op) -> !transform.param<i64>
      %c2 = transform.param.constant 2 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %c2 : !transform.param<i64>
      "transform.match.structured.dim"(%s) <{raw_dim_list = array<i64: 0>, parallel = unit}> : (!transform.any_op) -> ()
      "transform.match.structured.dim"(%s) <{raw_dim_list = array<i64: 1>, reduction = unit}> : (!transform.any_op) -> ()
      transform.match.structured.yield
    }
    transform.yield %op : !transform.any_op
  }
  // ... of float32 rows at least 32 long, read row by row (not down a column).
  transform.named_sequence @tunable_row_reduction(%op: !transform.any_op {transform.readonly}) -> (!transform.any_op) {
    %0 = transform.include @row_reduction failures(propagate) (%op) : (!transform.any_op) -> !transform.any_op
    transform.match.structured failures(propagate) %op : !transform.any_op {
    ^bb0(%s: !transform.any_op):
      %cols = "transform.match.structured.dim"(%s) <{raw_dim_list = array<i64: 1>}> : (!transform.any_op) -> !transform.param<i64>
      %c32 = transform.param.constant 32 : i64 -> !transform.param<i64>
      transform.match.param.cmpi ge %cols, %c32 : !transform.param<i64>
      %init = "transform.match.structured.init"(%s) <{raw_position_list = array<i64: 0>}> : (!transform.any_op) -> !transform.any_value
      %bits = transform.match.structured.elemental_bitwidth %init : (!transform.any_value) -> !transform.param<i64>
      transform.match.param.cmpi eq %bits, %c32 : !transform.param<i64>
      transform.match.structured.yield
    }
    // Its maps are (rows, columns), (rows) [, (rows)] or, computing softmax's exponentials too (stagec's `fuse`),
    // (rows, columns), (rows), (rows, columns), (rows): it is among the dispatch's ops with those maps.
    %f = "transform.get_parent_op"(%op) <{op_name = "func.func", nth_parent = 1 : i64}> : (!transform.any_op) -> !transform.any_op
    %a = transform.structured.match ops{["linalg.generic"]} attributes {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>]} in %f : (!transform.any_op) -> !transform.any_op
    %b = transform.structured.match ops{["linalg.generic"]} attributes {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>]} in %f : (!transform.any_op) -> !transform.any_op
    %c = transform.structured.match ops{["linalg.generic"]} attributes {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>]} in %f : (!transform.any_op) -> !transform.any_op
    %rows = transform.merge_handles %a, %b, %c : !transform.any_op
    %with = transform.merge_handles deduplicate %rows, %op : !transform.any_op
    %n = transform.num_associations %rows : (!transform.any_op) -> !transform.param<i64>
    %m = transform.num_associations %with : (!transform.any_op) -> !transform.param<i64>
    transform.match.param.cmpi eq %n, %m : !transform.param<i64>
    transform.yield %op : !transform.any_op
  }
  // softmax: the reduction's second input is another row reduction's result.
  transform.named_sequence @reads_a_reduction(%op: !transform.any_op {transform.readonly}) -> (!transform.any_op) {
    %0 = transform.include @tunable_row_reduction failures(propagate) (%op) : (!transform.any_op) -> !transform.any_op
    %p = transform.match.structured failures(propagate) %op : (!transform.any_op) -> !transform.any_op {
    ^bb0(%s: !transform.any_op):
      %in1 = "transform.match.structured.input"(%s) <{raw_position_list = array<i64: 1>}> : (!transform.any_op) -> !transform.any_op
      transform.match.structured.yield %in1 : !transform.any_op
    }
    %1 = transform.include @row_reduction failures(propagate) (%p) : (!transform.any_op) -> !transform.any_op
    transform.yield %op : !transform.any_op
  }
  // layernorm: the reduction's input is an elementwise op whose second input is another row reduction's result.
  transform.named_sequence @reads_elementwise_of_a_reduction(%op: !transform.any_op {transform.readonly}) -> (!transform.any_op) {
    %0 = transform.include @tunable_row_reduction failures(propagate) (%op) : (!transform.any_op) -> !transform.any_op
    %p = transform.match.structured failures(propagate) %op : (!transform.any_op) -> !transform.any_op {
    ^bb0(%s: !transform.any_op):
      %in0 = "transform.match.structured.input"(%s) <{raw_position_list = array<i64: 0>}> : (!transform.any_op) -> !transform.any_op
      transform.match.structured.yield %in0 : !transform.any_op
    }
    transform.match.operation_name %p ["linalg.generic"] : !transform.any_op
    %q = transform.match.structured failures(propagate) %p : (!transform.any_op) -> !transform.any_op {
    ^bb0(%s: !transform.any_op):
      %in1 = "transform.match.structured.input"(%s) <{raw_position_list = array<i64: 1>}> : (!transform.any_op) -> !transform.any_op
      transform.match.structured.yield %in1 : !transform.any_op
    }
    %1 = transform.include @row_reduction failures(propagate) (%q) : (!transform.any_op) -> !transform.any_op
    transform.yield %op : !transform.any_op
  }
  // One row per tile, 128-float vectors, for the matched op (the dispatch's root) and the ops fused with it.
  transform.named_sequence @one_row_per_tile(%op: !transform.any_op {transform.readonly}) {
    %f = "transform.get_parent_op"(%op) <{op_name = "func.func", nth_parent = 1 : i64}> : (!transform.any_op) -> !transform.any_op
    %red = transform.structured.match ops{["linalg.generic"]} attributes {iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<reduction>]} in %f : (!transform.any_op) -> !transform.any_op
    %red_cfg = transform.param.constant #iree_cpu.lowering_config<vector_common_parallel = [1, 0], vector_reduction = [0, 128]> -> !transform.any_param
    transform.annotate %red "lowering_config" = %red_cfg : !transform.any_op, !transform.any_param
    %ew = transform.structured.match ops{["linalg.generic"]} attributes {iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>]} in %f : (!transform.any_op) -> !transform.any_op
    %ew_cfg = transform.param.constant #iree_cpu.lowering_config<vector_common_parallel = [1, 0], vector_inner_parallel = [0, 128]> -> !transform.any_param
    transform.annotate %ew "lowering_config" = %ew_cfg : !transform.any_op, !transform.any_param
    %fill = transform.structured.match ops{["linalg.fill"]} in %f : (!transform.any_op) -> !transform.any_op
    %fill_cfg = transform.param.constant #iree_cpu.lowering_config<vector_common_parallel = [1]> -> !transform.any_param
    transform.annotate %fill "lowering_config" = %fill_cfg : !transform.any_op, !transform.any_param
    %cfg = transform.param.constant #iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<distribution = [32, 0], vector_common_parallel = [1, 0], vector_reduction = [0, 128]>, translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>, {enable_loop_peeling}>> -> !transform.any_param
    transform.annotate %op "compilation_info" = %cfg : !transform.any_op, !transform.any_param
    transform.yield
  }
  transform.named_sequence @entry(%arg0: !transform.any_op {transform.consumed}) -> !transform.any_op {
    %res = transform.foreach_match in %arg0
        @reads_a_reduction -> @one_row_per_tile,
        @reads_elementwise_of_a_reduction -> @one_row_per_tile : (!transform.any_op) -> !transform.any_op
    transform.yield %res : !transform.any_op
  }
}
