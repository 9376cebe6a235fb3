"""What the hardware allows: peak numbers per GPU and the roofline floor a time must not beat (T4).

The floor comes from the task summary, `max(matmul_flops / peak_flops, bytes_min / bandwidth_max)`:
no correct program moves fewer bytes than its inputs, weights and outputs, nor does fewer FLOPs
than the reference's matmuls need, and none moves them faster than the datasheet's rates.
- What the matmuls need leaves out what a mask makes unnecessary (mtmc/tasks/masked_work.py): causal
  attention counts its triangle of kept (query, key) pairs. Until verifier 2.4 it counted all S x S,
  twice what a flash kernel does, so the floor rejected an honest causal kernel doing more than
  about 0.9 / 2 of the tensor-core peak on its real work.
- `Verdict.roofline_ms` (what "share of roofline" reads against) is that floor, at the physical
  rates. Until verifier 2.3 it used the measured copy bandwidth (`bandwidth`), which a read-only
  stream beats: amax_lastdim read at 4.655 TB/s on an H200, where a copy runs at 4.24 TB/s, and 56
  verdicts of honest reductions read 100.4-110.8% of that floor (benchmarks/roofline_audit.py,
  2026-11-27). A share of roofline above 1.0 now means faster than the hardware.
- The rejection: a time below `floor_margin` times the floor is physically impossible (the margin
  allows for clock and measurement noise).
FLOP peaks are the dense tensor-core peaks (TF32 for fp32 tasks, since tf32x3 `tl.dot` is an
honest fp32 strategy that runs on tensor cores): the floor must never reject an honest kernel,
so it uses the fastest math an fp32 kernel could legitimately use.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Peaks:
    bandwidth: float  # bytes/s, measured device-to-device copy: bandwidth_max is never lower
    bandwidth_max: float  # bytes/s, the memory's datasheet rate: the floor's (T4)
    flops_fp32: float  # FLOP/s, fastest fp32-output math (TF32 tensor cores, dense)
    flops_fp16: float  # FLOP/s, fp16/bf16 tensor cores, dense


# Matched by substring of torch.cuda.get_device_name(), first match wins (specific names first).
# bandwidth_max is the fastest memory the name may stand for (A100: the 80 GB SXM part).
KNOWN_PEAKS: list[tuple[str, Peaks]] = [
    ("H200", Peaks(bandwidth=4.2e12, bandwidth_max=4.8e12, flops_fp32=495e12, flops_fp16=990e12)),
    ("H100 NVL", Peaks(bandwidth=3.4e12, bandwidth_max=3.9e12, flops_fp32=418e12, flops_fp16=835e12)),
    ("H100 PCIe", Peaks(bandwidth=1.8e12, bandwidth_max=2.0e12, flops_fp32=378e12, flops_fp16=756e12)),
    ("H100", Peaks(bandwidth=3.0e12, bandwidth_max=3.35e12, flops_fp32=495e12, flops_fp16=990e12)),
    ("A100", Peaks(bandwidth=1.7e12, bandwidth_max=2.04e12, flops_fp32=156e12, flops_fp16=312e12)),
    ("L40S", Peaks(bandwidth=0.8e12, bandwidth_max=0.864e12, flops_fp32=183e12, flops_fp16=362e12)),
]


def peaks_for(device_name: str, bandwidth: float | None = None, flops_fp32: float | None = None,
              flops_fp16: float | None = None, bandwidth_max: float | None = None) -> Peaks | None:
    """Peaks for a device, with any given number overriding the table; None when unknown.
    An unknown device needs the three rates; its `bandwidth_max` defaults to its `bandwidth`, and no
    device's may be lower than its measured `bandwidth` (nothing streams faster than its limit)."""
    known = next((p for key, p in KNOWN_PEAKS if key in device_name), None)
    if known is None and None in (bandwidth, flops_fp32, flops_fp16):
        return None
    bandwidth = bandwidth or known.bandwidth
    limit = bandwidth_max or (known.bandwidth_max if known else bandwidth)
    return Peaks(bandwidth=bandwidth, bandwidth_max=max(limit, bandwidth),
                 flops_fp32=flops_fp32 or known.flops_fp32, flops_fp16=flops_fp16 or known.flops_fp16)


def roofline_ms(matmul_flops: int, bytes_min: int, half_precision: bool, peaks: Peaks) -> float:
    """The physical floor: the datasheet's memory rate and the dense tensor-core math rate."""
    flops = peaks.flops_fp16 if half_precision else peaks.flops_fp32
    return 1e3 * max(matmul_flops / flops, bytes_min / peaks.bandwidth_max)


def below_floor(candidate_ms: float, floor_ms: float, margin: float) -> bool:
    """True when the measured time beats the hardware by more than the measurement margin."""
    return candidate_ms < margin * floor_ms
