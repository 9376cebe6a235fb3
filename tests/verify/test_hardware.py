"""Peak table and the roofline floor (T4): pure functions, so the GPU rule is tested on the CPU."""

import pytest

from mtmc.verify.hardware import below_floor, peaks_for, roofline_ms


def test_peaks_by_device_name():
    assert peaks_for("NVIDIA H200").bandwidth == 4.2e12
    assert peaks_for("NVIDIA H100 80GB HBM3").bandwidth == 3.0e12
    assert peaks_for("NVIDIA H100 PCIe").bandwidth < 3.0e12  # the more specific name wins
    assert peaks_for("Some Future GPU") is None
    custom = peaks_for("Some Future GPU", bandwidth=1e12, flops_fp32=1e14, flops_fp16=2e14)
    assert custom.bandwidth == 1e12
    assert peaks_for("NVIDIA H200", bandwidth=5e12).bandwidth == 5e12


def test_roofline_and_floor():
    h100 = peaks_for("NVIDIA H100 80GB HBM3")
    # 256 MiB moved: 89 us at 3.0 TB/s; a 1024^3 matmul: 2.1 GFLOP / 495 TFLOP/s = 4.3 us
    assert roofline_ms(0, 2**28, False, h100) == pytest.approx(1e3 * 2**28 / 3.0e12)
    assert roofline_ms(2 * 1024**3, 12 * 2**20, False, h100) == pytest.approx(1e3 * 2 * 1024**3 / 495e12)
    assert below_floor(0.05, 0.0895, margin=0.9)
    assert not below_floor(0.085, 0.0895, margin=0.9)  # within the measurement margin
