"""`python -m stagec.passes`: list the registered passes (default pipeline marked with *)."""
from . import DEFAULT_PIPELINE, describe

print(describe())
print(f"default pipeline: {', '.join(DEFAULT_PIPELINE)}")
