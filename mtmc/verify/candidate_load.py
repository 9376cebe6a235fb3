"""A candidate's module, imported from its real .py file, and its exceptions in words: their kind
(compile or runtime error) and the frames of its own file, what a coder can fix. Shared by the
candidate job (child.py) and the trusted batch job (trusted_batch.py)."""

from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path
from typing import Any


def error_kind(err: BaseException) -> str:
    """Compile errors are Triton's (the interpreter reports them when the kernel first runs)."""
    kinds = {c.__name__ for c in type(err).__mro__}
    if kinds & {"CompilationError", "CompileTimeAssertionFailure", "InterpreterError"}:
        return "compile_error"
    return "runtime_error"


def candidate_traceback(err: BaseException, path: Path, frames: int = 6) -> str:
    """The exception and the last frames inside the candidate's file (what a coder can fix)."""
    tb = traceback.extract_tb(err.__traceback__)
    ours = [f for f in tb if f.filename == str(path)][-frames:]
    lines = [f"line {f.lineno} in {f.name}: {(f.line or '').strip()}" for f in ours]
    text = f"{type(err).__name__}: {err}"
    return "\n".join([*lines, text[:2000]])


def import_candidate(path: Path, digest: str) -> Any:
    name = f"mtmc_candidate_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    if not isinstance(getattr(module, "ModelNew", None), type):
        raise TypeError("the candidate defines no class ModelNew")
    return module
