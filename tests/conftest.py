"""Shared fixtures. Compiled modules are shared across tests through stagec's in-process caches."""
from __future__ import annotations

import pytest

import stagec


@pytest.fixture
def x64():
    """Enable 64-bit types for one test, then restore the previous setting."""
    old = stagec.config.enable_x64
    stagec.config.update("enable_x64", True)
    yield
    stagec.config.update("enable_x64", old)


@pytest.fixture(scope="session", autouse=True)
def _throwaway_persistent_cache(tmp_path_factory):
    """Never touch the user's ~/.cache/stagec: a fresh persistent cache per session (subprocesses inherit it);
    STAGEC_TEST_CACHE_DIR names a folder to reuse across runs instead."""
    import os
    old = os.environ.get("STAGEC_CACHE_DIR")
    os.environ["STAGEC_CACHE_DIR"] = os.environ.get("STAGEC_TEST_CACHE_DIR") or str(tmp_path_factory.mktemp("stagec-cache"))
    yield
    if old is None:
        os.environ.pop("STAGEC_CACHE_DIR", None)
    else:
        os.environ["STAGEC_CACHE_DIR"] = old
