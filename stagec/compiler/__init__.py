"""The compile side: targets and the pipelines they declare (`targets`), and the driver that takes a lowered
module through its target's pipeline, reads its facts, chooses its flags and hands it to IREE (`driver`).

    lower_graph -> targets.pipeline(backend, passes, host_blas) -> driver.facts -> driver.module_flags
                -> cache key (text, flags, files, versions, driver.source_digest) -> driver.compile (IREE)
                   (a known IREE failure: compiled again as a variant, `retries`, keyed by its own flags)
"""
from .driver import HOST_BLAS, SYSTEM_LINK, Facts, compile, facts, module_flags, prepare, source_digest
from .retries import RETRIES, Retry, variant_flags, variant_passes
from .targets import IREE_TARGETS, TARGETS, Pipeline, Target, find_target, host_id, pipeline

__all__ = ["HOST_BLAS", "IREE_TARGETS", "RETRIES", "SYSTEM_LINK", "TARGETS", "Facts", "Pipeline", "Retry", "Target",
           "compile", "facts", "find_target", "host_id", "module_flags", "pipeline", "prepare", "source_digest",
           "variant_flags", "variant_passes"]
