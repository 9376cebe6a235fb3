"""The port's kernel configs: simple, safe blocks per kernel kind; the planner tunes from here."""

from __future__ import annotations

import torch

POINTWISE_CONFIG = {"BLOCK": 1024, "num_warps": 4}
# columns per chunk; a row that fits is read once; auto_block: the emitter sizes both by the kernel's
# form (emit/reduce_launch.py row_blocks) until a `tile` step sets BLOCK
ROW_CONFIG = {"BLOCK": 8192, "split_k": 1, "auto_block": True}
# A reduction that few programs would run starts split (the menu's `split_k`, emit/reduce_split.py):
# SPLIT programs share each row (or column block) until the launch has SPLIT_PROGRAMS programs, two a
# streaming multiprocessor of an H100 (132), each slice at least SPLIT_SLICE values (a 16K-value slice
# is two of the port's 8192-value chunks; a shorter one costs more in the second launch than it saves).
# KernelBench level 1 on an H100 at split 1 (one program per row): 37_FrobeniusNorm_ 0.02x
# torch.compile, 94_MSELoss 0.02x, 96_HuberLoss 0.03x (a full reduction: one program); 40_LayerNorm
# 0.28x (16 rows; a normalization splits as emit/reduce_norm_split.py's two kernels).
SPLIT_PROGRAMS = 264
SPLIT_SLICE = 16384
SPLIT_MIN = 4  # fewer slices: a second launch for at most a halved (and already short) reduction
# Rows of at most SHORT_ROW values share a program, SHORT_ROWS of them as one tile (config ROWS, the
# `rows` step). One row a program gives a 64-wide LayerNorm row one warp and leaves the GPU mostly idle:
# on an H100, KernelBench level-2 34_ went from 4.23 to 2.41 ms and 3_ from 5.05 to 3.23 with ROWS 4,
# 16 or 64 alike (benchmarks/probes/2026-11-27-reduce-rows). Rows wider than 64 were not probed.
SHORT_ROW = 256
SHORT_ROWS = 16
COLUMN_CONFIG = {"BLOCK_M": 32, "BLOCK_N": 64, "num_warps": 4, "split_k": 1}  # (reduced rows, columns)
# a full-size output (softmax over channels): up to 128 reduced rows of 32 columns in registers, read
# once (softmax_channels_fp16, H200: 1.19 ms at 2 warps, 1.20 at 4; 2.77 ms for 64-row chunks)
COLUMN_FULL_CONFIG = {"BLOCK_M": 128, "BLOCK_N": 32, "num_warps": 2, "split_k": 1}
MATMUL_CONFIG = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 1, "num_warps": 4,
                 "num_stages": 3, "split_k": 1, "precision": "ieee"}
# 16-bit operands run on the tensor cores: bigger tiles keep them busy
MATMUL_CONFIG_16 = {**MATMUL_CONFIG, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8}
ATTENTION_CONFIG = {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 2, "precision": "ieee"}
ATTENTION_CONFIG_16 = {**ATTENTION_CONFIG, "BLOCK_M": 128, "num_warps": 8}
HALF = (torch.float16, torch.bfloat16)
