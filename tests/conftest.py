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
