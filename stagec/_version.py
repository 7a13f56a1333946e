"""The stagec version (written once; part of cache keys and artifact metadata)."""
__version__ = "0.2.0"
