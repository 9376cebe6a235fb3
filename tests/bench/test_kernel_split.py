"""The kernel-split probe (benchmarks/probes/2026-11-27-kernel-split/run.py): its kernel families, its
sums over torch.profiler's rows, and one dry run on the CPU interpreter.

The kernel names below are of the shapes cuDNN, aten, inductor and our template programs give their
kernels (written for the test, not taken from a profile)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from torch.autograd import DeviceType

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def split():
    path = ROOT / "benchmarks" / "probes" / "2026-11-27-kernel-split" / "run.py"
    spec = importlib.util.spec_from_file_location("kernel_split_probe", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FAMILY_OF = {
    # cuDNN
    "sm90_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x32_cudnn": "conv",
    "sm80_xmma_dgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize64x64x32": "conv",
    "void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>(int, int)": "conv",
    "void cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, true, false, "
    "(cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>)": "copy",
    "void cudnn::bn_fw_inf_1C11_kernel_NCHW<float, float, true, 1>(float, float)": "reduce/norm",
    # cuBLAS
    "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_cublas": "gemm",
    "ampere_sgemm_128x64_tn": "gemm",
    # inductor: named after the ops it fuses, the convolution included
    "triton_poi_fused_convolution_gelu_0": "elementwise",
    "triton_per_fused_convolution_native_layer_norm_0": "reduce/norm",
    "triton_red_fused_mean_1": "reduce/norm",
    "triton_tem_fused_convolution_0": "conv",
    # aten
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>(int)": "elementwise",
    "void at::native::vectorized_elementwise_kernel<4, at::native::clamp_min_scalar_kernel_impl>(int)":
        "elementwise",
    "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda>(int)": "copy",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, "
    "float, float, float>, unsigned int, float, 4, 4> >(float)": "reduce/norm",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int)": "reduce/norm",
    "void at::native::(anonymous namespace)::RowwiseMomentsCUDAKernel<float>(long, float)": "reduce/norm",
    "Memcpy DtoD (Device -> Device)": "copy",
    "Memset (Device)": "copy",
    # ours: the conv kernel carries its fused epilogue's name
    "_conv_gelu_kernel": "conv",
    "_conv_truediv_max_pool_kernel": "conv",
    "_conv_transpose_add_kernel": "conv",
    "_tf32_pack_kernel": "copy",
    "_layer_norm_gelu_mul_kernel": "reduce/norm",
    "_bn_mean_planes_kernel": "reduce/norm",
    "_avg_pool2_kernel": "reduce/norm",
    # the dry run's CPU ops
    "aten::mkldnn_convolution": "conv",
    "aten::native_layer_norm": "reduce/norm",
    "aten::gelu": "elementwise",
    "aten::copy_": "copy",
    "aten::addmm": "gemm",
    "aten::empty": "other",
    # "conv" inside "convert" is no convolution
    "convertTensor_kernel": "other",
}


@pytest.mark.parametrize("name", FAMILY_OF)
def test_each_kernel_name_falls_in_its_family(split, name):
    assert split.family_of(name) == FAMILY_OF[name]


def test_every_rule_names_a_reported_family(split):
    assert {family for family, _ in split.FAMILY_RULES} < set(split.FAMILIES)


def row(key, device, count=1, **times):
    return SimpleNamespace(key=key, device_type=device, count=count, is_user_annotation=False, **times)


def test_the_gpu_sum_counts_device_rows_once_and_reads_either_time_name(split):
    averages = [
        row("sm90_xmma_fprop_implicit_gemm_x", DeviceType.CUDA, count=4, self_device_time_total=4000.0),
        row("triton_poi_fused_gelu_0", DeviceType.CUDA, count=4, self_cuda_time_total=1000.0),  # older torch
        row("aten::convolution", DeviceType.CPU, self_device_time_total=0.0, self_cpu_time_total=50.0),
        SimpleNamespace(key="Torch-Compiled Region", device_type=DeviceType.CUDA, count=4,
                        is_user_annotation=True, self_device_time_total=5000.0),  # spans the others
        row("idle", DeviceType.CUDA, self_device_time_total=0.0),
    ]
    result = split.breakdown(split.kernel_times(averages, cpu=False), calls=4)
    assert result["kernel_ms"] == pytest.approx(1.25)
    assert result["launches"] == 2
    assert result["families"] == {"conv": pytest.approx(1.0), "elementwise": pytest.approx(0.25)}
    assert [k["name"] for k in result["kernels"]] == ["sm90_xmma_fprop_implicit_gemm_x",
                                                      "triton_poi_fused_gelu_0"]  # the slowest first


def test_the_cpu_sum_counts_the_ops_self_time(split):
    averages = [row("aten::mkldnn_convolution", DeviceType.CPU, count=2, self_cpu_time_total=3000.0),
                row("aten::gelu", DeviceType.CPU, count=2, self_cpu_time_total=1000.0)]
    result = split.breakdown(split.kernel_times(averages, cpu=True), calls=2)
    assert result["families"] == {"conv": pytest.approx(1.5), "elementwise": pytest.approx(0.5)}


def test_the_gap_is_ours_minus_the_base_per_family(split):
    ours = {"ms": 7.0, "kernel_ms": 6.5, "families": {"conv": 5.0, "reduce/norm": 1.5}}
    compiled = {"ms": 2.5, "kernel_ms": 2.3,
                "families": {"conv": 1.5, "reduce/norm": 0.3, "elementwise": 0.5}}
    gap = split.gaps({"ours": ours, "compile": compiled, "eager": {"error": "x"}}, "compile")
    assert gap == pytest.approx({"wall": 4.5, "kernels": 4.2, "conv": 3.5, "reduce/norm": 1.2,
                                 "elementwise": -0.5})
    assert split.gaps({"ours": ours, "eager": {"error": "x"}}, "eager") == {}


def test_a_dry_run_writes_each_runner(split, tmp_path, capsys):
    out = tmp_path / "split.json"
    split.main(["--tasks-dir", str(ROOT / "tests" / "coders" / "tasks" / "conv"),
                "--tasks", "conv2d_bias_relu", "--out", str(out), "--cpu-dry-run",
                "--programs", str(tmp_path)])  # no <task>/kernel.py there: the program runner skips
    task = json.loads(out.read_text())["rows"][0]
    runners = task["runners"]
    assert runners["eager"]["families"]["conv"] > 0 and runners["eager"]["max_err"] == 0
    assert runners["ours"]["max_err"] < 1e-2 and runners["ours"]["ms"] > 0  # its conv rounds to TF32
    assert "skipped" in runners["compile"] and "skipped" in runners["program"]
    assert set(task["ours_minus_eager"]) >= {"wall", "kernels"}
    assert "ours - eager" in capsys.readouterr().out
