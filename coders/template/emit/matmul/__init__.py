"""Matmul kernels (linear, mm, bmm) with the epilogue fused onto the fp32 accumulator tile.

Each program computes one BLOCK_M x BLOCK_N output tile; A and B are read through their strides,
so transposed views cost no copy (16-bit 2-D GEMMs load through TMA descriptors where rows are
16-byte aligned; fp32 tensor-core GEMMs of a misaligned K read copies zero-padded along K).
Options the planner turns on: grouped tile order (GROUP_M),
split-K (partial tiles to an fp32 workspace, then a reduce kernel that runs the epilogue), a
persistent grid, and autotuning.

`layout.py` (what the space and config decide), `kernel.py`, `launcher.py`.
"""

from coders.template.emit.matmul.kernel import emit_kernel
from coders.template.emit.matmul.launcher import emit_config_hook, emit_launcher
from coders.template.emit.matmul.layout import (
           check_triangles,
           epilogue_axes,
           triangle_outputs,
           tuning_space,
           uses_tma,
)

__all__ = ["check_triangles", "emit_config_hook", "emit_kernel", "emit_launcher", "epilogue_axes",
           "triangle_outputs", "tuning_space", "uses_tma"]
