"""The candidate's free GPU memory overwritten before each of its calls (docs/design.md, Verification
step 3's state check and the S23 row; verifier 2.12).

In the candidate's process, memory outside every live tensor survives from one call to the next: a
block freed back to PyTorch's caching allocator, which a same-sized `torch.empty` on the next call
hands back with its old bytes, and the rounding slack past a storage's requested size inside its
allocator block. A candidate can keep a content-keyed result cache there (its answer and a cheap
fingerprint of the inputs written into a scratch tensor it frees; the next call's `torch.empty` of
that size finds them): the state check walks live tensors only, the timing loop restores inputs, not
that memory, and `case_io.poison` fills only blocks of the outputs' sizes. So before each call the
child overwrites, with FILL (0xFF bytes: NaN in every float format, -1 in every integer one), every
inactive block of the allocator, every block whose free waits on another stream's event, and the
slack of every active block past its requested size. Only ranges inside the allocator's own
segments, as `torch.cuda.memory_snapshot()` lists them; never the requested bytes of an active block,
nor an active block whose requested size the snapshot does not give.

Where: every candidate call hands its inputs over through `CallInputs.before` (pristine.py) last, so
`Scrubbed` wraps it: the checked cases and their repeats (after the call's input copy and checks,
before `case_io.poison`), the state check's two calls, the untimed calls on the timing sets, each
timed call (the timing loop's `loaded`, before the L2 flush and the start event: outside the timed
region), and the profile once before its three calls (a cache the first fills can only lower the
Triton share it reports, which is not judged since 1.6, and cannot hide a foreign kernel: the first
call had nothing to read). The timing loop's warm-up calls are not scrubbed: their outputs are
never used, and whatever they leave is scrubbed before the next call that is.

How: the snapshot (`include_traces=False`), a device-wide sync on each device it lists (every
kernel, on any stream, is then done with the memory it calls free; nothing allocates between the
snapshot and the fills, so its states hold), then one `fill_` per range
through a non-owning uint8 view of its bytes (`torch._C._construct_storage_from_data_pointer`, which
PyTorch's own CUDA-graph trees use to alias the allocator's memory), on that device's current
stream, then the sync again, so the call starts after the fills whatever stream it uses. Not a
Triton kernel on raw addresses: it would compile (or load from the cache) in every child and
launch through the harness's own launch hooks; not `cudaMemsetAsync`: PyTorch binds no memset
(`torch.cuda.cudart()` has a handful of calls). The views allocate nothing from the allocator.

Reach: the functions used are held here from import (child.py imports this module before the
candidate's module is imported), their torch originals are in proof.WATCHED (replacing one is
tampering), and the candidate may not name them: `torch.cuda.memory*` (`memory_snapshot` among them)
is refused statically (S21), `torch._C` too (S1).

Pools: the snapshot with no pool named lists every block the allocator holds, private pools (graph
pools, `MemPool`) included; expandable segments are listed as their mapped ranges, which is all a
kernel can reach. Not covered: memory the allocator gave back to the driver (`empty_cache`, or its
own release of free segments when an allocation fails) and that a later segment's `cudaMalloc` may
hand back unchanged; memory outside the allocator (a library's own `cudaMalloc`, pinned host memory).

CUDA only. Under the CPU interpreter the hole is malloc's (a freed buffer's bytes in the heap's
free lists): there is no map of it to walk, and glibc may return a freed chunk to the next
allocation of its size; no CPU version is pretended here (the CPU verdict's timings are not judged).

Cost (estimate, not measured on a GPU): the snapshot walks the allocator's blocks in C++ and builds a
dict each (~0.1-1 ms for hundreds to a few thousand blocks); the fills write the free cache once
(~0.35 ms a GiB at ~3 TB/s on an H100) plus ~5 us of launch per range; two idle syncs. About 1 ms a
call for a task of MBs, ~6 ms where 16 GiB sit free (45_Average_Pooling_2D's fresh copies), all
outside the timed region (the timing loop's 2 s budget holds fewer reps).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

FILL = 0xFF  # every byte: NaN in any float format (sign set, exponent and mantissa all ones), -1 in ints
FREE_STATES = frozenset({"inactive", "active_pending_free", "active_awaiting_free"})  # the docs use both
ACTIVE = "active_allocated"
Range = tuple[int, int, int]  # (device, start address, length in bytes)

# Held from import, before any candidate code runs (module docstring).
_snapshot = torch.cuda.memory_snapshot
_synchronize = torch.cuda.synchronize
_storage_at = getattr(torch._C, "_construct_storage_from_data_pointer", None)
_empty = torch.empty
_set = torch.Tensor.set_
_fill = torch.Tensor.fill_


def free_ranges(segments: list[dict[str, Any]]) -> list[Range]:
    """The byte ranges to overwrite, from a `memory_snapshot()`: free blocks whole, an active block's
    slack past its requested size; adjacent ranges merged. Each range lies inside its segment: a block
    that would run past its segment's end is clipped to it."""
    ranges: list[Range] = []
    for segment in segments:
        device, base = int(segment.get("device", 0)), int(segment["address"])
        end = base + int(segment["total_size"])
        address = base
        for block in segment.get("blocks", []):
            start = int(block.get("address", address))
            size = int(block["size"])
            address = start + size
            cut = _first_free_byte(block, size)
            if cut is None or cut >= size:
                continue
            low, high = max(start + cut, base), min(start + size, end)
            if low >= high:
                continue
            if ranges and ranges[-1][0] == device and ranges[-1][1] + ranges[-1][2] == low:
                ranges[-1] = (device, ranges[-1][1], high - ranges[-1][1])
            else:
                ranges.append((device, low, high - low))
    return ranges


def _first_free_byte(block: dict[str, Any], size: int) -> int | None:
    """Where the overwritable part of a block starts (0: all of it), or None for none of it."""
    state = block.get("state")
    if state in FREE_STATES:
        return 0
    if state != ACTIVE:
        return None  # a state this code does not know: left as it is
    requested = block.get("requested_size")
    if not isinstance(requested, int) or not 0 <= requested <= size:
        return None  # no requested size to trust: the whole block may be a tensor's
    return requested


class FreeMemoryScrub:
    """Made before the candidate's module is imported; each call overwrites the free memory of the
    caching allocator (module docstring) on CUDA and does nothing on the CPU. `fill` and `snapshot`
    are seams for tests."""

    def __init__(self, device: str, snapshot: Callable[[], list[dict[str, Any]]] | None = None,
                 fill: Callable[[Range], None] | None = None,
                 synchronize: Callable[[int], None] | None = None) -> None:
        self.on = device == "cuda"
        if self.on and fill is None and _storage_at is None:  # before the candidate runs: a harness error
            raise RuntimeError("this torch has no torch._C._construct_storage_from_data_pointer: the "
                               "free-memory scrub (verifier 2.12) cannot run")
        self._snapshot = snapshot or _segments
        self._fill = fill or _fill_range
        self._synchronize = synchronize or _synchronize
        self.calls = 0
        self.bytes = 0  # overwritten in all (a test's or a report's figure)

    def __call__(self) -> None:
        if not self.on:
            return
        segments = self._snapshot()  # nothing allocates from here to the fills: the states hold
        devices = {int(s.get("device", 0)) for s in segments}
        for device in devices:
            self._synchronize(device)  # every stream's work done: the free blocks are free
        ranges = free_ranges(segments)
        for piece in ranges:
            self._fill(piece)
        for device in devices | {r[0] for r in ranges}:
            self._synchronize(device)  # the fills done before the call, on whatever stream it runs
        self.calls += 1
        self.bytes += sum(r[2] for r in ranges)


def _segments() -> list[dict[str, Any]]:
    try:
        return _snapshot(include_traces=False)
    except TypeError:  # a torch before `include_traces` (traces are empty unless history is recorded)
        return _snapshot()


def _fill_range(piece: Range) -> None:
    """FILL over one range, through a uint8 view that owns nothing (dropping it frees nothing)."""
    device, start, length = piece
    assert _storage_at is not None  # FreeMemoryScrub refused to start without it
    where = torch.device("cuda", device)
    storage = _storage_at(start, where, length)
    view = _set(_empty(0, dtype=torch.uint8, device=where), storage, 0, (length,), (1,))
    _fill(view, FILL)


class Scrubbed:
    """A CallInputs (pristine.py) whose `before`, the last thing before every candidate call, also
    scrubs: the inputs are checked, then the free memory is overwritten, then they are handed over."""

    def __init__(self, audit: Any, scrub: Callable[[], None]) -> None:
        self.audit, self.scrub = audit, scrub

    def before(self, case: dict[str, Any], inputs: list[Any]) -> list[Any]:
        inputs = self.audit.before(case, inputs)
        self.scrub()
        return inputs

    def after(self, case: dict[str, Any], inputs: list[Any]) -> None:
        self.audit.after(case, inputs)

    def report(self) -> dict[str, Any]:
        return self.audit.report()
