"""Exceptions users see. Each message names the function, argument, shape or file at fault."""
from __future__ import annotations


class StagecError(Exception):
    """Base class for stagec's own errors."""


class ConcretizationTypeError(StagecError, TypeError):
    """A traced (abstract) value was used where Python needs a concrete one."""


class TracerBoolConversionError(ConcretizationTypeError):
    """A tracer was used where Python needs a bool (`if`, `while`, `and`, `not`)."""


class TracerArrayConversionError(StagecError, TypeError):
    """A tracer was converted to a NumPy array inside a traced function."""


class TracerIntegerConversionError(ConcretizationTypeError):
    """A tracer was used where Python needs an int (an index, `range`, ...)."""


class UnexpectedTracerError(StagecError):
    """A tracer escaped the function that was being traced."""


class CompileError(StagecError):
    """IREE failed to compile a module; the message names the function and the MLIR file."""


class CallbackError(StagecError, RuntimeError):
    """A Python function called from compiled code (debug.print, pure_callback, io_callback) raised."""
