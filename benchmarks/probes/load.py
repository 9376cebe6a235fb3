"""A dated probe's run.py loaded as a module, for the probes that build on an earlier one (their
folders' names are not package names). Imports nothing heavy: the 2026-11-28 pool probe must set
TRITON_INTERPRET (--cpu-dry-run) before torch or triton loads.

    previous = load_probe("2026-11-28-pool")   # benchmarks/probes/2026-11-28-pool/run.py
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def load_probe(folder: str) -> ModuleType:
    path = Path(__file__).resolve().parent / folder / "run.py"
    spec = importlib.util.spec_from_file_location(f"pool_probe_{folder.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
