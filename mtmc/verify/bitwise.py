"""Bitwise equality of two tensors, NaN equal to NaN, in chunks and across devices: the reference
job's outputs on the timing sets against its cases' (child.py) and the trusted batches' inputs after
a call (trusted_batch.py). The candidate job compares keyed digests instead (output_seals.py,
verifier 2.9): the outputs it compared were in the candidate's reach."""

from __future__ import annotations

import torch


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise-equal values, NaN equal to NaN (a NaN output must not read as nondeterminism).

    A host tensor and a device tensor are compared on the device, one chunk of the host tensor
    moved over at a time: no full second copy of a GB-sized output on either side. Large tensors
    on one device are compared in chunks too (the comparison's temporaries stay small)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.device == b.device and a.nbytes <= COMPARE_CHUNK_BYTES:
        return same_here(a, b)
    device = b.device if a.device.type == "cpu" else a.device
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    step = max(1, COMPARE_CHUNK_BYTES // a.element_size())
    return all(same_here(flat_a[i:i + step].to(device), flat_b[i:i + step].to(device))
               for i in range(0, flat_a.numel(), step))


COMPARE_CHUNK_BYTES = 256 * 2**20


def same_here(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    return torch.equal(a, b)
