"""`python -m stagec ...` is the `stagec` command."""
import sys

from .cli import main

sys.exit(main())
