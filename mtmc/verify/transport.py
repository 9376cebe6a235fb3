"""Large tensors travel between the verifier's processes as raw files, not inside result.pt.

    child:  torch.save(offload(result, scratch), scratch / "result.pt")
    main:   result = restore(torch.load(scratch / "result.pt", weights_only=True), scratch)

torch.save and torch.load of a GB-sized tensor cost about 3 s per GiB each way (zip records,
checksums, copies): on an H100 host one softmax_lastdim verdict, whose outputs are 2 GiB each,
spent 70 s writing and reading its reference outputs. A raw file written through a memory map
costs one copy and no parsing, and the main process maps it back without reading it. The mapping
outlives the file's removal, so the scratch folder can go as soon as the result is restored.

A marker names a plain file in the child's own scratch folder only, and its size must match the
shape and dtype it claims: a child can hand back its result, nothing else.
"""

from __future__ import annotations

import itertools
import math
import os
from pathlib import Path
from typing import Any

import torch

MARKER = "__raw_tensor__"
RAW_MIN_BYTES = 1 << 20  # smaller tensors stay inside result.pt, where they cost nothing


def offload(value: Any, folder: Path, min_bytes: int = RAW_MIN_BYTES) -> Any:
    """`value` with every tensor of `min_bytes` or more replaced by a marker of a raw file in `folder`."""
    names = (f"tensor{n}.bin" for n in itertools.count())

    def walk(item: Any) -> Any:
        if isinstance(item, torch.Tensor) and item.layout == torch.strided and item.nbytes >= min_bytes:
            return _write(item, folder, next(names))
        if isinstance(item, dict):
            return {k: walk(v) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return type(item)(walk(v) for v in item)
        return item

    return walk(value)


def restore(value: Any, folder: Path) -> Any:
    """`value` with every marker replaced by its tensor, memory-mapped from `folder`."""
    if isinstance(value, dict):
        if MARKER in value:
            return _read(value, folder)
        return {k: restore(v, folder) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(restore(v, folder) for v in value)
    return value


def _write(tensor: torch.Tensor, folder: Path, name: str) -> dict[str, Any]:
    # A new file of our own (O_EXCL: nothing the candidate left in its working folder, such as a
    # link to another file, is written through), its space reserved up front: a full /dev/shm then
    # fails here as the harness's error, not later as a SIGBUS that would read as the candidate's
    # crash. Then one copy straight from the tensor's device.
    fd = os.open(folder / name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        if tensor.nbytes:
            os.posix_fallocate(fd, 0, tensor.nbytes)
    finally:
        os.close(fd)
    mapped = torch.from_file(str(folder / name), shared=True, size=tensor.numel(), dtype=tensor.dtype)
    mapped.copy_(tensor.detach().reshape(-1))
    return {MARKER: name, "shape": list(tensor.shape), "dtype": str(tensor.dtype).removeprefix("torch.")}


def _read(marker: dict[str, Any], folder: Path) -> torch.Tensor:
    name = marker[MARKER]
    if not isinstance(name, str) or Path(name).name != name or name.startswith("."):
        raise ValueError(f"raw tensor marker names {name!r}, not a file of the child's scratch folder")
    dtype = getattr(torch, str(marker["dtype"]), None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"raw tensor marker has an unknown dtype {marker['dtype']!r}")
    shape = [int(s) for s in marker["shape"]]
    numel = math.prod(shape)
    path = folder / name
    if path.is_symlink() or not path.is_file():
        raise ValueError(f"{name}: not a plain file")
    expected = numel * dtype.itemsize
    if path.stat().st_size != expected:
        raise ValueError(f"{name}: {path.stat().st_size} bytes where shape {shape} {dtype} needs {expected}")
    if numel == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.from_file(str(path), shared=False, size=numel, dtype=dtype).view(shape)
