// Column sums on the CPU, a part of the tuning spec that stagec.tuning gives IREE's llvm-cpu codegen, for float32
// modules that reduce over leading dimensions (`tuning.reduces_columns`). It tunes one pattern: a dispatch that is
// a single reduction of one to three float32 arrays down their columns (`sum(g * h, 0)`, a bias gradient), which
// IREE 3.13 tiles 16 columns wide. Here: 64 columns (four AVX-512 vectors) per step, one row at a time, 128
// columns per workgroup. Single-threaded (iree.runtime local-sync, 256x2048 float32, interleaved calls), columns
// per workgroup / per step / rows per step: `sum(g * h + 0.0, 0)` IREE's 32/16/1 210 us, 256/64/1 145, 128/64/1
// 146, 256/32/1 211 (`sum(g * h, 1)` of the same arrays: 134); `sum(abs(g * h), 0)` IREE's 519, 256/64/1 145,
// 256/16/1 388, 256/64/4 332 (docs/passes.md, "Column sums of products").
// Also a generic of stagec's `fuse` computing several reductions down the columns (and values kept beside them):
// its exact indexing maps, found in the module (`tuning.sibling_maps`), are matched where the comment below
// stands (a loss and its bias gradient, 256x2048, one thread: 409-439 -> 260 us).
// A module calling BLAS, whose dispatches run on the calling thread, gets all columns in one workgroup and one row
// a step instead (`tuning._WHOLE_ROWS`: the 128 columns below read 512 bytes of each row, 8 KiB apart), and the
// dispatch may hold 2-D elementwise generics too (the summed array computed as a result of its own: `_OWN_2D`).
module @columns attributes {transform.with_named_sequence} {
  // A float32 generic op over (columns, rows), 256 columns or more, reducing the rows.
  transform.named_sequence @column_shape(%op: !transform.any_op {transform.readonly}) -> (!transform.any_op) {
    transform.match.operation_name %op ["linalg.generic"] : !transform.any_op
    transform.match.structured failures(propagate) %op : !transform.any_op {
    ^bb0(%s: !transform.any_op):
      %rank = transform.match.structured.rank %s : (!transform.any_op) -> !transform.param<i64>
      %c2 = transform.param.constant 2 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %c2 : !transform.param<i64>
      "transform.match.structured.dim"(%s) <{raw_dim_list = array<i64: 0>, parallel = unit}> : (!transform.any_op) -> ()
      "transform.match.structured.dim"(%s) <{raw_dim_list = array<i64: 1>, reduction = unit}> : (!transform.any_op) -> ()
      %cols = "transform.match.structured.dim"(%s) <{raw_dim_list = array<i64: 0>}> : (!transform.any_op) -> !transform.param<i64>
      %c256 = transform.param.constant 256 : i64 -> !transform.param<i64>
      transform.match.param.cmpi ge %cols, %c256 : !transform.param<i64>
      %init = "transform.match.structured.init"(%s) <{raw_position_list = array<i64: 0>}> : (!transform.any_op) -> !transform.any_value
      %bits = transform.match.structured.elemental_bitwidth %init : (!transform.any_value) -> !transform.param<i64>
      %c32 = transform.param.constant 32 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %bits, %c32 : !transform.param<i64>
      transform.match.structured.yield
    }
    transform.yield %op : !transform.any_op
  }
  // Such a generic whose inputs are all read (row, column): the dispatch's only generic but for elementwise ops on
  // its result (a mean's division).
  transform.named_sequence @column_reduction(%op: !transform.any_op {transform.readonly}) -> (!transform.any_op) {
    %0 = transform.include @column_shape failures(propagate) (%op) : (!transform.any_op) -> !transform.any_op
    %f = "transform.get_parent_op"(%op) <{op_name = "func.func", nth_parent = 1 : i64}> : (!transform.any_op) -> !transform.any_op
    %a = transform.structured.match ops{["linalg.generic"]} attributes {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>]} in %f : (!transform.any_op) -> !transform.any_op
    %b = transform.structured.match ops{["linalg.generic"]} attributes {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>]} in %f : (!transform.any_op) -> !transform.any_op
    %c = transform.structured.match ops{["linalg.generic"]} attributes {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>]} in %f : (!transform.any_op) -> !transform.any_op
    // (stagec.tuning: the module's sibling reductions)
    %cols = transform.merge_handles %a, %b, %c : !transform.any_op
    %all = transform.structured.match ops{["linalg.generic"]} in %f : (!transform.any_op) -> !transform.any_op
    %with = transform.merge_handles deduplicate %cols, %op : !transform.any_op
    %n = transform.num_associations %cols : (!transform.any_op) -> !transform.param<i64>
    %m = transform.num_associations %with : (!transform.any_op) -> !transform.param<i64>
    %ew = transform.structured.match ops{["linalg.generic"]} attributes {iterator_types = [#linalg.iterator_type<parallel>]} in %f : (!transform.any_op) -> !transform.any_op
    %mine = transform.merge_handles %ew, %op : !transform.any_op
    %k = transform.num_associations %all : (!transform.any_op) -> !transform.param<i64>
    %l = transform.num_associations %mine : (!transform.any_op) -> !transform.param<i64>
    transform.match.param.cmpi eq %n, %m : !transform.param<i64>
    transform.match.param.cmpi eq %k, %l : !transform.param<i64>
    transform.yield %op : !transform.any_op
  }
  // (a matcher's own ops must be match ops: the checks above are included)
  transform.named_sequence @match(%op: !transform.any_op {transform.readonly}) -> (!transform.any_op) {
    %0 = transform.include @column_reduction failures(propagate) (%op) : (!transform.any_op) -> !transform.any_op
    transform.yield %op : !transform.any_op
  }
  // A column reduction reading a per-column value that the dispatch's one plain column sum computes (`var(x, 0)`,
  // `std(x, 0)`: the sum of (x - mean)^2 after the mean's sum); the two, and elementwise ops on their 1-D results,
  // are the dispatch's only generics. IREE 3.13 tiled it 25 columns a workgroup (docs/passes.md, "Column sums of
  // products": var(x, 0) of 1000x1000 one thread 0.42 -> 0.15 ms).
  transform.named_sequence @column_dependent(%op: !transform.any_op {transform.readonly}) -> (!transform.any_op) {
    %0 = transform.include @column_shape failures(propagate) (%op) : (!transform.any_op) -> !transform.any_op
    %f = "transform.get_parent_op"(%op) <{op_name = "func.func", nth_parent = 1 : i64}> : (!transform.any_op) -> !transform.any_op
    %sum = transform.structured.match ops{["linalg.generic"]} attributes {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>]} in %f : (!transform.any_op) -> !transform.any_op
    %dep = transform.structured.match ops{["linalg.generic"]} attributes {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>]} in %f : (!transform.any_op) -> !transform.any_op
    %all = transform.structured.match ops{["linalg.generic"]} in %f : (!transform.any_op) -> !transform.any_op
    %ew = transform.structured.match ops{["linalg.generic"]} attributes {iterator_types = [#linalg.iterator_type<parallel>]} in %f : (!transform.any_op) -> !transform.any_op
    %mine = transform.merge_handles deduplicate %ew, %sum, %dep : !transform.any_op
    %with = transform.merge_handles deduplicate %dep, %op : !transform.any_op
    %ns = transform.num_associations %sum : (!transform.any_op) -> !transform.param<i64>
    %nd = transform.num_associations %dep : (!transform.any_op) -> !transform.param<i64>
    %nw = transform.num_associations %with : (!transform.any_op) -> !transform.param<i64>
    %k = transform.num_associations %all : (!transform.any_op) -> !transform.param<i64>
    %l = transform.num_associations %mine : (!transform.any_op) -> !transform.param<i64>
    %c1 = transform.param.constant 1 : i64 -> !transform.param<i64>
    transform.match.param.cmpi eq %ns, %c1 : !transform.param<i64>
    transform.match.param.cmpi eq %nd, %c1 : !transform.param<i64>
    transform.match.param.cmpi eq %nw, %c1 : !transform.param<i64>
    transform.match.param.cmpi eq %k, %l : !transform.param<i64>
    transform.yield %op : !transform.any_op
  }
  transform.named_sequence @match_dependent(%op: !transform.any_op {transform.readonly}) -> (!transform.any_op) {
    %0 = transform.include @column_dependent failures(propagate) (%op) : (!transform.any_op) -> !transform.any_op
    transform.yield %op : !transform.any_op
  }
  transform.named_sequence @tile(%op: !transform.any_op {transform.readonly}) {
    %f = "transform.get_parent_op"(%op) <{op_name = "func.func", nth_parent = 1 : i64}> : (!transform.any_op) -> !transform.any_op
    %fill = transform.structured.match ops{["linalg.fill"]} in %f : (!transform.any_op) -> !transform.any_op
    %fill_cfg = transform.param.constant #iree_cpu.lowering_config<vector_common_parallel = [64]> -> !transform.any_param
    transform.annotate %fill "lowering_config" = %fill_cfg : !transform.any_op, !transform.any_param
    %ew = transform.structured.match ops{["linalg.generic"]} attributes {iterator_types = [#linalg.iterator_type<parallel>]} in %f : (!transform.any_op) -> !transform.any_op
    transform.annotate %ew "lowering_config" = %fill_cfg : !transform.any_op, !transform.any_param
    %cfg = transform.param.constant #iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<distribution = [128, 0], vector_common_parallel = [64, 0], vector_reduction = [0, 1]>, translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>, {enable_loop_peeling}>> -> !transform.any_param
    transform.annotate %op "compilation_info" = %cfg : !transform.any_op, !transform.any_param
    transform.yield
  }
  transform.named_sequence @tile_dependent(%op: !transform.any_op {transform.readonly}) {
    transform.include @tile failures(propagate) (%op) : (!transform.any_op) -> ()
    %f = "transform.get_parent_op"(%op) <{op_name = "func.func", nth_parent = 1 : i64}> : (!transform.any_op) -> !transform.any_op
    // (the sum's tiles as a lowering config, @tile's own: one op of a dispatch sets its translation; IREE's own
    // tiles for the sum, beside these, made vectors too large to compile. `tuning._TILES` rewrites both for a
    // module run on one thread.)
    %sum = transform.structured.match ops{["linalg.generic"]} attributes {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>]} in %f : (!transform.any_op) -> !transform.any_op
    %sum_cfg = transform.param.constant #iree_cpu.lowering_config<distribution = [128, 0], vector_common_parallel = [64, 0], vector_reduction = [0, 1]> -> !transform.any_param
    transform.annotate %sum "lowering_config" = %sum_cfg : !transform.any_op, !transform.any_param
    transform.yield
  }
  transform.named_sequence @entry(%arg0: !transform.any_op {transform.consumed}) -> !transform.any_op {
    %res = transform.foreach_match in %arg0 @match -> @tile, @match_dependent -> @tile_dependent : (!transform.any_op) -> !transform.any_op
    transform.yield %res : !transform.any_op
  }
}
