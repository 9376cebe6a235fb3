"""Peak table and the roofline floor (T4): pure functions, so the GPU rule is tested on the CPU."""

import pytest

from mtmc.verify.hardware import KNOWN_PEAKS, below_floor, peaks_for, roofline_ms


def test_peaks_by_device_name():
    assert peaks_for("NVIDIA H200").bandwidth == 4.2e12
    assert peaks_for("NVIDIA H100 80GB HBM3").bandwidth == 3.0e12
    assert peaks_for("NVIDIA H100 PCIe").bandwidth < 3.0e12  # the more specific name wins
    assert peaks_for("Some Future GPU") is None
    custom = peaks_for("Some Future GPU", bandwidth=1e12, flops_fp32=1e14, flops_fp16=2e14)
    assert custom.bandwidth == 1e12
    assert peaks_for("NVIDIA H200", bandwidth=5e12).bandwidth == 5e12


def test_the_rejection_floor_uses_the_datasheet_bandwidth():
    h200 = peaks_for("NVIDIA H200")
    assert (h200.bandwidth, h200.bandwidth_max) == (4.2e12, 4.8e12)
    assert all(p.bandwidth_max >= p.bandwidth for _, p in KNOWN_PEAKS)
    custom = peaks_for("Some Future GPU", bandwidth=1e12, flops_fp32=1e14, flops_fp16=2e14)
    assert custom.bandwidth_max == 1e12
    assert peaks_for("NVIDIA H200", bandwidth=5e12).bandwidth_max == 5e12  # never under the measured rate
    assert peaks_for("NVIDIA H200", bandwidth_max=5.2e12).bandwidth_max == 5.2e12
    # amax_lastdim on the H200 (2026-11-24): 4.29e9 bytes read at 4.655 TB/s, an honest kernel that the
    # copy-rate floor (4.2e12 / 0.9 = 4.667 TB/s) passed by 0.2%; a read 1% faster must pass too
    nbytes = 65536 * 16384 * 4
    honest_ms = 1e3 * nbytes / 4.7e12
    copy_rate_floor = 1e3 * nbytes / h200.bandwidth
    assert below_floor(honest_ms, copy_rate_floor, margin=0.9)  # the copy rate would have rejected it
    assert not below_floor(honest_ms, roofline_ms(0, nbytes, False, h200), margin=0.9)
    assert below_floor(honest_ms / 1.3, roofline_ms(0, nbytes, False, h200), margin=0.9)


def test_an_honest_read_is_under_100_percent_of_the_roofline():
    """The share of roofline reads against the datasheet rate: amax_lastdim's read at 4.655 TB/s on an
    H200 is 97% of it (against the copy rate it read 111%, roofline audit 2026-11-27)."""
    h200 = peaks_for("NVIDIA H200")
    nbytes = 65536 * 16384 * 4
    share = roofline_ms(0, nbytes, False, h200) / (1e3 * nbytes / 4.655e12)
    assert share == pytest.approx(4.655 / 4.8) and share < 1.0


def test_roofline_and_floor():
    h100 = peaks_for("NVIDIA H100 80GB HBM3")
    # 256 MiB moved: 80 us at 3.35 TB/s; a 1024^3 matmul: 2.1 GFLOP / 495 TFLOP/s = 4.3 us
    assert roofline_ms(0, 2**28, False, h100) == pytest.approx(1e3 * 2**28 / 3.35e12)
    assert roofline_ms(2 * 1024**3, 12 * 2**20, False, h100) == pytest.approx(1e3 * 2 * 1024**3 / 495e12)
    assert below_floor(0.05, 0.0895, margin=0.9)
    assert not below_floor(0.085, 0.0895, margin=0.9)  # within the measurement margin
