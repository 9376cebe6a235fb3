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

GPU outputs go to their raw file at once (`host_copy`, in the child while it runs), not through
`.cpu()` and a second copy in `offload`: `.cpu()` of a GB-sized GPU tensor is a pageable copy into
fresh host memory, which the driver moves through its own small pinned buffer while the kernel maps
every new page; on an H100 host the reference job's `to_host` took 19-20 s for 27_SELU_'s outputs
(three cases of 6.4 GB and a smaller derived one: issue 25). On a 2-core CPU box, a 1 GiB copy into
the raw file and offload's naming of it took 0.62 s against 1.25 s for a copy then offload's write
(benchmarks/probes/2026-11-27-transfer). `host_copy` copies chunks over PCIe into two pinned buffers
in turn (the device's next chunk while the host copies the last into the file) and registers the
file's tensor, so that `offload` names it instead of writing it again. Nothing changes for the main
process (the same markers, the same checks in `restore`), nor for what a candidate can reach: the
files are its own child's, in its own scratch folder, written as before (they only appear earlier),
and a candidate that rewrites its own copies changes its own claims, which it could always do in its
process.
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
STAGE_BYTES = 64 << 20  # each of host_copy's two pinned buffers
# host_copy's file-backed tensors in this child: data pointer -> (the tensor, its file's name). The
# tensor is held, so its mapping (and address) stays this file's until the child ends.
_IN_FILES: dict[int, tuple[torch.Tensor, str]] = {}
_host_names = (f"host{n}.bin" for n in itertools.count())


def host_copy(tensor: torch.Tensor, folder: Path | None = None) -> torch.Tensor:
    """A host copy of `tensor` that the candidate's later calls cannot reach (a new tensor of its
    own). A contiguous tensor of RAW_MIN_BYTES or more is copied straight into a raw file in
    `folder` (the child's scratch folder, its working directory), from a GPU through pinned buffers
    (module docstring); anything else as before (`.cpu()` of a GPU tensor, a clone of a host one)."""
    tensor = tensor.detach()
    plain = tensor.device.type not in ("cuda", "cpu") or not tensor.is_contiguous()
    if plain or tensor.nbytes < RAW_MIN_BYTES:
        return tensor.cpu() if tensor.device.type != "cpu" else tensor.clone()
    name = next(_host_names)
    flat = _new_file(Path(folder or Path.cwd()) / name, tensor.numel(), tensor.dtype)
    if tensor.device.type == "cuda":
        _staged_copy(flat, tensor.reshape(-1))
    else:
        flat.copy_(tensor.reshape(-1))
    copy = flat.view(tensor.shape)
    _IN_FILES[copy.data_ptr()] = (copy, name)
    return copy


def _staged_copy(dst: torch.Tensor, src: torch.Tensor) -> None:
    """dst (host) = src (GPU), both flat: chunks DMA'd into two pinned buffers in turn, each copied
    on into `dst` by the host while the device fills the other."""
    step = max(1, STAGE_BYTES // src.element_size())
    buffers = [torch.empty(min(step, src.numel()), dtype=src.dtype, pin_memory=True) for _ in range(2)]
    pending = None  # the last chunk issued: its event, buffer view and destination
    for k, start in enumerate(range(0, src.numel(), step)):
        count = min(step, src.numel() - start)
        buffer = buffers[k % 2][:count]  # its previous chunk was copied out at the last step
        buffer.copy_(src[start:start + count], non_blocking=True)
        event = torch.cuda.Event()
        event.record()
        if pending is not None:
            pending[0].synchronize()
            pending[2].copy_(pending[1])
        pending = (event, buffer, dst[start:start + count])
    if pending is not None:
        pending[0].synchronize()
        pending[2].copy_(pending[1])


def _in_file(tensor: torch.Tensor) -> str | None:
    """The raw file `tensor` is, whole, when host_copy made it; else None."""
    entry = _IN_FILES.get(tensor.data_ptr())
    if entry is None:
        return None
    held, name = entry
    same = (tensor.untyped_storage().data_ptr() == held.untyped_storage().data_ptr()
            and tensor.shape == held.shape and tensor.dtype == held.dtype and tensor.is_contiguous())
    return name if same else None


def offload(value: Any, folder: Path, min_bytes: int = RAW_MIN_BYTES) -> Any:
    """`value` with every tensor of `min_bytes` or more replaced by a marker of a raw file in `folder`."""
    names = (f"tensor{n}.bin" for n in itertools.count())

    def walk(item: Any) -> Any:
        if isinstance(item, torch.Tensor) and item.layout == torch.strided and item.nbytes >= min_bytes:
            written = _in_file(item)
            if written is not None and (folder / written).is_file():
                return _marker(item, written)
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
    mapped = _new_file(folder / name, tensor.numel(), tensor.dtype)
    mapped.copy_(tensor.detach().reshape(-1))
    return _marker(tensor, name)


def _new_file(path: Path, numel: int, dtype: torch.dtype) -> torch.Tensor:
    """A new raw file of `numel` elements, its space reserved, mapped shared as a flat tensor."""
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        if numel:
            os.posix_fallocate(fd, 0, numel * dtype.itemsize)
    finally:
        os.close(fd)
    return torch.from_file(str(path), shared=True, size=numel, dtype=dtype)


def _marker(tensor: torch.Tensor, name: str) -> dict[str, Any]:
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
