"""The held-out variants of the built-in tasks, as data: which constants each one changes
(mtmc/tasks/variants.py turns a row into a task source).

A row is `V(base, tag, note, **constants)`: the built-in `base` with those module constants reassigned
(sizes, `dtype`), named `<base>__<tag>`. Optional keys: `replace`, exact source edits (a reduction's
`dim`), each of which must occur exactly once in the built-in; `cpu`, the CPU interpreter's size sets
where the built-in's would not keep the variant's shape class (a tiny M stays tiny); `gpu`, the extra
odd GPU shape where the derived one would not fit. Sizes keep the built-ins' scale (0.1-4.5 GB of compulsory
traffic, up to 1.7 TFLOP), so that none is dominated by launch overhead (docs/design.md, T7): with bytes
at 3 TB/s and FLOPs at 50 (fp32) or 600 TFLOP/s, every variant needs 0.34 ms or more on an H100 (median
1.4 ms). Estimated so, not measured: the trees recorded on a GPU will have the times.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

F16, BF16, F32 = torch.float16, torch.bfloat16, torch.float32


@dataclass(frozen=True)
class Variant:
    base: str  # the built-in task's name
    tag: str  # the variant's name is `<base>__<tag>`
    note: str  # what differs from the built-in, one phrase (the task's docstring says it)
    constants: dict[str, Any]  # module constants reassigned: sizes, `dtype`
    replace: tuple[tuple[str, str], ...] = ()
    cpu: tuple[dict[str, Any], ...] | None = None
    gpu: dict[str, Any] | None = field(default=None)

    @property
    def name(self) -> str:
        return f"{self.base}__{self.tag}"


def V(base: str, tag: str, note: str, *, replace: tuple[tuple[str, str], ...] = (),
      cpu: tuple[dict[str, Any], ...] | None = None, gpu: dict[str, Any] | None = None, **constants: Any
      ) -> Variant:
    return Variant(base, tag, note, constants, replace, cpu, gpu)


def dim(old: str, new: str) -> tuple[tuple[str, str], ...]:
    return ((f"dim={old})", f"dim={new})"),)


SPECS: tuple[Variant, ...] = (
    # --- pointwise ---------------------------------------------------------------------------------
    V("channel_affine_clamp_fp16", "bf16", "bf16 instead of fp16", dtype=BF16),
    V("channel_affine_clamp_fp16", "fp32", "fp32 instead of fp16, half the batch", dtype=F32, batch=48),
    V("channel_affine_clamp_fp16", "few_channels", "3 channels, a large batch", channels=3, batch=8192),
    V("gelu_mul_sigmoid", "narrow", "rows of 256", rows=786432, cols=256),
    V("gelu_mul_sigmoid", "wide", "96 rows of 2M", rows=96, cols=2097152),
    V("residual_relu_scale", "small_hw", "32x32 images, a larger batch", batch=768, height=32, width=32),
    V("residual_relu_scale", "few_channels", "16 channels, a larger batch", batch=768, channels=16),
    V("scale_bias_rows", "narrow", "rows of 256", rows=1048576, cols=256),
    V("scale_bias_rows", "wide", "128 rows of 2M", rows=128, cols=2097152),
    # --- activation --------------------------------------------------------------------------------
    V("gelu_tanh", "narrow", "rows of 256", rows=2097152, cols=256),
    V("gelu_tanh", "wide", "256 rows of 2M", rows=256, cols=2097152),
    V("hardswish", "small_hw", "64x64 images, a larger batch", batch=1024, height=64, width=64),
    V("hardswish", "batch1", "one 512-channel 1024x1024 image", batch=1, channels=512, height=1024,
      width=1024),
    V("leaky_relu_bf16", "fp16", "fp16 instead of bf16", dtype=F16),
    V("leaky_relu_bf16", "fp32", "fp32 instead of bf16, half the rows", dtype=F32, rows=16384),
    V("leaky_relu_bf16", "narrow", "rows of 256", rows=4194304, cols=256),
    V("silu_fp16", "bf16", "bf16 instead of fp16", dtype=BF16),
    V("silu_fp16", "fp32", "fp32 instead of fp16, half the batch", dtype=F32, batch=32),
    V("silu_fp16", "short_seq", "sequences of 64, a large batch", batch=4096, seq=64),
    V("softplus", "narrow", "rows of 256", rows=2097152, cols=256),
    V("softplus", "wide", "256 rows of 2M", rows=256, cols=2097152),
    # --- reduction ---------------------------------------------------------------------------------
    V("amax_lastdim", "dim0", "amax over dim 0 (columns) instead of the last dim", replace=dim("-1", "0")),
    V("amax_lastdim", "narrow", "rows of 256", rows=4194304, cols=256),
    V("amax_lastdim", "wide", "64 rows of 16M", rows=64, cols=16777216),
    V("max_middle_dim", "dim2", "max over the last dim instead of the middle one", replace=dim("1", "2")),
    V("max_middle_dim", "dim0", "max over the leading dim instead of the middle one", replace=dim("1", "0")),
    V("max_middle_dim", "short_middle", "a middle dim of 64, a large batch", batch=2048, length=64),
    V("mean_dim0", "dim1", "mean over dim 1 (rows) instead of dim 0", replace=dim("0", "1")),
    V("mean_dim0", "tall", "columns of 4M, 256 wide", rows=4194304, cols=256),
    V("mean_dim0", "few_rows", "a mean over 64 rows of 16M", rows=64, cols=16777216),
    V("sum_lastdim", "dim0", "sum over dim 0 (columns) instead of the last dim", replace=dim("-1", "0")),
    V("sum_lastdim", "narrow", "rows of 256", rows=4194304, cols=256),
    # --- norm --------------------------------------------------------------------------------------
    V("add_rmsnorm_bf16", "fp16", "fp16 instead of bf16", dtype=F16),
    V("add_rmsnorm_bf16", "fp32", "fp32 instead of bf16, half the batch", dtype=F32, batch=8),
    V("add_rmsnorm_bf16", "small_hidden", "hidden 512, long sequences", seq=65536, hidden=512),
    V("groupnorm", "groups8", "8 groups of 8 channels, a larger batch", groups=8, channels=64, batch=512,
      cpu=({"batch": 2, "channels": 8, "groups": 2, "height": 11, "width": 13},
           {"batch": 3, "channels": 12, "groups": 3, "height": 9, "width": 7})),
    V("groupnorm", "instance", "one group per channel (instance norm), 64 channels", groups=64, channels=64,
      batch=512,
      cpu=({"batch": 2, "channels": 6, "groups": 6, "height": 11, "width": 13},
           {"batch": 3, "channels": 5, "groups": 5, "height": 9, "width": 7})),
    V("groupnorm", "small_hw", "32x32 images, a larger batch", batch=2048, height=32, width=32),
    V("layernorm", "small_hidden", "hidden 256, long sequences", seq=65536, hidden=256),
    V("layernorm", "large_hidden", "hidden 64K, short sequences", seq=256, hidden=65536),
    V("rmsnorm_fp16", "bf16", "bf16 instead of fp16", dtype=BF16),
    V("rmsnorm_fp16", "fp32", "fp32 instead of fp16, half the batch", dtype=F32, batch=8),
    V("rmsnorm_fp16", "small_hidden", "hidden 512, long sequences", seq=32768, hidden=512),
    # --- loss --------------------------------------------------------------------------------------
    V("cross_entropy", "small_vocab", "a vocabulary of 512, a large batch", batch=1048576, vocab=512),
    V("cross_entropy", "large_vocab", "a vocabulary of 256K, a small batch", batch=2048, vocab=262144),
    V("cross_entropy_smooth_bf16", "fp16", "fp16 instead of bf16", dtype=F16),
    V("cross_entropy_smooth_bf16", "fp32", "fp32 instead of bf16, half the batch", dtype=F32, batch=8192),
    V("cross_entropy_smooth_bf16", "small_vocab", "a vocabulary of 512", batch=2097152, vocab=512),
    V("kl_div_rows", "small_classes", "512 classes, a large batch", batch=262144, classes=512),
    V("kl_div_rows", "large_classes", "256K classes, a small batch", batch=512, classes=262144),
    V("mse_rows", "narrow", "rows of 256", batch=1048576, dim=256),
    V("mse_rows", "wide", "256 rows of 1M", batch=256, dim=1048576),
    # --- softmax -----------------------------------------------------------------------------------
    V("log_softmax_vocab", "dim0", "log-softmax over dim 0 instead of the vocabulary",
      replace=dim("-1", "0")),
    V("log_softmax_vocab", "small_vocab", "a vocabulary of 512, many rows", rows=1048576, vocab=512),
    V("logsumexp_lastdim", "dim0", "logsumexp over dim 0 instead of the last dim", replace=dim("-1", "0")),
    V("logsumexp_lastdim", "narrow", "rows of 512", rows=1048576, cols=512),
    V("softmax_channels_fp16", "bf16", "bf16 instead of fp16", dtype=BF16),
    V("softmax_channels_fp16", "fp32", "fp32 instead of fp16, half the batch", dtype=F32, batch=64),
    V("softmax_channels_fp16", "lastdim", "softmax over the width (last dim) instead of channels",
      replace=dim("1", "-1")),
    V("softmax_lastdim", "dim0", "softmax over dim 0 instead of the last dim", replace=dim("-1", "0")),
    V("softmax_lastdim", "narrow", "rows of 128", rows=4194304, cols=128),
    V("softmax_lastdim", "wide", "512 rows of 1M", rows=512, cols=1048576),
    # --- matmul ------------------------------------------------------------------------------------
    V("linear_bias_bf16", "fp16", "fp16 instead of bf16", dtype=F16),
    V("linear_bias_bf16", "fp32", "fp32 instead of bf16, an eighth of the batch", dtype=F32, batch=2048),
    V("linear_bias_bf16", "small_m", "a batch of 16 (decode-like) over a 1 GB weight", batch=16,
      in_features=8192, out_features=65536,
      cpu=({"batch": 3, "in_features": 83, "out_features": 37, "dtype": F16},
           {"batch": 1, "in_features": 45, "out_features": 91, "dtype": F16})),
    V("matmul_fp16", "bf16", "bf16 instead of fp16", dtype=BF16),
    V("matmul_fp16", "small_m", "M of 64", M=64, N=65536, K=16384,
      cpu=({"M": 5, "N": 37, "K": 89}, {"M": 2, "N": 83, "K": 47})),
    V("matmul_fp16", "tall_skinny", "a 1M x 256 A times 256 x 256", M=1048576, N=256, K=256,
      cpu=({"M": 509, "N": 13, "K": 37}, {"M": 383, "N": 29, "K": 19})),
    V("matmul_fp16", "small_k", "K of 64", M=32768, N=32768, K=64,
      cpu=({"M": 61, "N": 37, "K": 5}, {"M": 29, "N": 83, "K": 16})),
    V("matmul_fp32", "small_m", "M of 32", M=32, N=16384, K=16384,
      cpu=({"M": 3, "N": 37, "K": 89}, {"M": 7, "N": 83, "K": 47})),
    V("matmul_fp32", "small_k", "K of 32", M=32768, N=16384, K=32,
      cpu=({"M": 67, "N": 45, "K": 3}, {"M": 33, "N": 95, "K": 17})),
    V("matmul_fp32", "wide_n", "N of 64K, M of 256", M=256, N=65536, K=4096),
    V("matmul_large_k_fp16", "bf16", "bf16 instead of fp16", dtype=BF16),
    V("matmul_large_k_fp16", "small_mn", "256 x 256 over K of 1M", M=256, N=256, K=1048576),
    V("matmul_large_k_fp16", "fp32", "fp32 instead of fp16, K of 16K", dtype=F32, K=16384),
    V("matmul_tall_skinny", "skinny_n", "N of 16, M of 4M", M=4194304, N=16),
    V("matmul_tall_skinny", "wide_k", "K of 4096, N of 64", M=65536, K=4096, N=64),
    # --- linear_epilogue ---------------------------------------------------------------------------
    V("linear_gelu_bf16", "fp16", "fp16 instead of bf16", dtype=F16),
    V("linear_gelu_bf16", "small_m", "a batch of 32 over a 2 GB weight", batch=32, in_features=16384,
      out_features=65536,
      cpu=({"batch": 3, "in_features": 83, "out_features": 61, "dtype": F16},
           {"batch": 5, "in_features": 29, "out_features": 95, "dtype": F16})),
    V("linear_relu_scale_residual", "small_m", "a batch of 64 over a 0.5 GB weight", batch=64,
      in_features=8192, out_features=16384,
      cpu=({"batch": 3, "in_features": 37, "out_features": 83},
           {"batch": 6, "in_features": 89, "out_features": 43})),
    V("linear_relu_scale_residual", "wide_out", "64K outputs from 1024 inputs", batch=1024, in_features=1024,
      out_features=65536),
    V("linear_swish_fp16", "bf16", "bf16 instead of fp16", dtype=BF16),
    V("linear_swish_fp16", "small_m", "a batch of 32", batch=32, in_features=16384, out_features=65536,
      cpu=({"batch": 3, "in_features": 71, "out_features": 47},
           {"batch": 5, "in_features": 37, "out_features": 89})),
    V("linear_swish_fp16", "tall", "a 2M batch through a 256 x 256 layer", batch=2097152, in_features=256,
      out_features=256),
    V("swiglu_fp16", "bf16", "bf16 instead of fp16", dtype=BF16),
    V("swiglu_fp16", "small_m", "a batch of 32 over two 0.9 GB weights", batch=32, hidden=8192,
      intermediate=57344,
      cpu=({"batch": 3, "hidden": 67, "intermediate": 89}, {"batch": 6, "hidden": 43, "intermediate": 29})),
    # --- bmm_softmax -------------------------------------------------------------------------------
    V("baddbmm_softmax", "small_k", "k of 16", k=16),
    V("baddbmm_softmax", "long_n", "m of 256, n of 16K", m=256, n=16384),
    V("bmm_softmax_fp16", "bf16", "bf16 instead of fp16", dtype=BF16),
    V("bmm_softmax_fp16", "k128", "k of 128, twice the batch", batch=256, k=128),
    V("bmm_softmax_fp16", "short", "512 x 512 scores, a large batch", batch=2048, m=512, n=512),
    # --- attention ---------------------------------------------------------------------------------
    V("attention_causal_fp16", "bf16", "bf16 instead of fp16", dtype=BF16),
    V("attention_causal_fp16", "head_dim64", "head_dim 64, 32 heads", heads=32, head_dim=64),
    V("attention_causal_fp16", "long_seq", "sequences of 8K, batch 1", batch=1, seq=8192),
    V("attention_sdpa_bf16", "fp16", "fp16 instead of bf16", dtype=F16),
    V("attention_sdpa_bf16", "head_dim64", "head_dim 64, 32 heads", heads=32, head_dim=64),
    V("attention_sdpa_bf16", "short_seq", "sequences of 512, batch 128", batch=128, seq=512),
    # --- conv --------------------------------------------------------------------------------------
    V("conv_bn_silu", "wide_channels", "256 -> 256 channels on 64x64", in_channels=256, out_channels=256,
      height=64, width=64),
    V("conv_bn_silu", "stem", "3 -> 64 channels on 256x256 (a network's stem)", in_channels=3,
      out_channels=64, height=256, width=256),
    V("conv_bn_silu", "k1", "a 1x1 conv instead of 3x3",
      replace=(("kernel_size=3, padding=1", "kernel_size=1, padding=0"),)),
    V("conv_relu_bias", "wide_channels", "256 -> 256 channels on 64x64", in_channels=256, out_channels=256,
      height=64, width=64),
    V("conv_relu_bias", "small_hw", "16x16 images, a batch of 1024", batch=1024, height=16, width=16),
    V("conv_tanh_scale_fp16", "bf16", "bf16 instead of fp16", dtype=BF16),
    V("conv_tanh_scale_fp16", "fp32", "fp32 instead of fp16, half the batch", dtype=F32, batch=64),
    V("conv_tanh_scale_fp16", "wide_channels", "256 -> 256 channels on 64x64", in_channels=256,
      out_channels=256, height=64, width=64),
)
