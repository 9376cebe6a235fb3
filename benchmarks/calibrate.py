"""Measure the GPU's two ceilings (copy bandwidth, matmul rate per dtype) for roofline figures.

    python benchmarks/calibrate.py --out mtmc/bench/calibrations/<date>-<gpu>-calibration.json

Files in mtmc/bench/calibrations ship with the package: `mtmc bench calibration=auto` reads them.

Bandwidth counts bytes read plus bytes written of a large device-to-device copy; matmul rates use
random (never zero) operands. Each figure is the median of CUDA-event timings after warm-up. The
"tf32" rate (fp32 operands on the TF32 tensor cores) is the ceiling mtmc/bench/roofline.py holds fp32
convolutions and tasks that allow tf32 to, and a third of it caps tf32x3 dots; a calibration without
it leaves those tasks' roofline unknown.
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch


def median_ms(fn, reps: int = 30, warmup: int = 5) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def copy_bandwidth(n_bytes: int = 4 << 30) -> float:
    src = torch.randn(n_bytes // 4, device="cuda")
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src))
    return 2 * n_bytes / (ms * 1e-3)


def matmul_rate(dtype: torch.dtype, n: int = 8192, tf32: bool = False) -> float:
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a, b = (torch.randn(n, n, device="cuda", dtype=dtype) for _ in range(2))
    ms = median_ms(lambda: a @ b, reps=10)
    torch.backends.cuda.matmul.allow_tf32 = False
    return 2 * n**3 / (ms * 1e-3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="calibration.json")
    args = parser.parse_args()
    props = torch.cuda.get_device_properties(0)
    result = {
        "gpu": props.name,
        "sms": props.multi_processor_count,
        "l2_bytes": props.L2_cache_size,
        "torch": torch.__version__,
        "copy_bytes_per_s": copy_bandwidth(),
        "matmul_flops": {
            "float32": matmul_rate(torch.float32),
            "tf32": matmul_rate(torch.float32, tf32=True),
            "float16": matmul_rate(torch.float16),
            "bfloat16": matmul_rate(torch.bfloat16),
        },
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
    print(f"{result['gpu']}: copy {result['copy_bytes_per_s'] / 1e12:.2f} TB/s; matmul TFLOP/s "
          + ", ".join(f"{k} {v / 1e12:.0f}" for k, v in result["matmul_flops"].items()))


if __name__ == "__main__":
    main()
