"""What the hardware allows: peak numbers per GPU and the roofline floor a time must not beat (T4).

The floor is `max(matmul_flops / peak_flops, bytes_min / peak_bandwidth)` from the task summary:
no correct program moves fewer bytes than its inputs, weights and outputs, nor does fewer FLOPs
than the reference's matmuls. Bandwidths are measured copy bandwidths (DESIGN.md: 4.23 TB/s on
an H200), not datasheet numbers, so `roofline_fraction` reads as "share of what is reachable".
FLOP peaks are the dense tensor-core peaks (TF32 for fp32 tasks, since tf32x3 `tl.dot` is an
honest fp32 strategy that runs on tensor cores): the floor must never reject an honest kernel,
so it uses the fastest math an fp32 kernel could legitimately use. A time below
`floor_margin * roofline_ms` is physically impossible and rejected.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Peaks:
    bandwidth: float  # bytes/s (measured copy)
    flops_fp32: float  # FLOP/s, fastest fp32-output math (TF32 tensor cores, dense)
    flops_fp16: float  # FLOP/s, fp16/bf16 tensor cores, dense


# Matched by substring of torch.cuda.get_device_name(), first match wins (specific names first).
KNOWN_PEAKS: list[tuple[str, Peaks]] = [
    ("H200", Peaks(bandwidth=4.2e12, flops_fp32=495e12, flops_fp16=990e12)),
    ("H100 NVL", Peaks(bandwidth=3.4e12, flops_fp32=418e12, flops_fp16=835e12)),
    ("H100 PCIe", Peaks(bandwidth=1.8e12, flops_fp32=378e12, flops_fp16=756e12)),
    ("H100", Peaks(bandwidth=3.0e12, flops_fp32=495e12, flops_fp16=990e12)),
    ("A100", Peaks(bandwidth=1.7e12, flops_fp32=156e12, flops_fp16=312e12)),
    ("L40S", Peaks(bandwidth=0.8e12, flops_fp32=183e12, flops_fp16=362e12)),
]


def peaks_for(device_name: str, bandwidth: float | None = None, flops_fp32: float | None = None,
              flops_fp16: float | None = None) -> Peaks | None:
    """Peaks for a device, with any given number overriding the table; None when unknown."""
    known = next((p for key, p in KNOWN_PEAKS if key in device_name), None)
    if known is None and None in (bandwidth, flops_fp32, flops_fp16):
        return None
    return Peaks(bandwidth=bandwidth or known.bandwidth, flops_fp32=flops_fp32 or known.flops_fp32,
                 flops_fp16=flops_fp16 or known.flops_fp16)


def roofline_ms(matmul_flops: int, bytes_min: int, half_precision: bool, peaks: Peaks) -> float:
    flops = peaks.flops_fp16 if half_precision else peaks.flops_fp32
    return 1e3 * max(matmul_flops / flops, bytes_min / peaks.bandwidth)


def below_floor(candidate_ms: float, floor_ms: float, margin: float) -> bool:
    """True when the measured time beats the hardware by more than the measurement margin."""
    return candidate_ms < margin * floor_ms
