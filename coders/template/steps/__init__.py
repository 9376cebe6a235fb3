"""The macro steps on the IR (the template coder's fourth pass): which ones change the program now,
and applying one.

Tuning steps (tile, num_warps, num_stages, group_m, split_k, persistent, vectorize, autotune,
precision) apply to the *dominant* kernel: the one with the largest estimated time (matmul FLOPs
and bytes moved against an H100-class roofline), and to its twins (kernels of the same kind, shape,
dtype and configuration, such as the gate and up projections of a SwiGLU). `fuse epilogue` /
`fuse prologue` merge the first fusable producer/consumer pair in program order, and `fuse all` (offered
where two or more pairs fuse) merges pairs, either kind, until none is left; `fuse attention` swaps a
matmul -> softmax -> matmul chain for a flash-attention kernel, `fuse softmax` a matmul -> softmax
chain for a flash kernel that writes the probabilities; `library conv2d` swaps a Triton conv for
the vendor call where the task allows it (its epilogue stays a Triton kernel). Every legal step
changes the program; menus are small and discrete so a planner can score all of them.

`kernels.py` (cost, dominance, dots, shared memory), `menu.py` (the legal steps), `apply.py` (one step).
"""

from coders.template.conv_lower import conv_flops
from coders.template.emit.common import SMEM_BYTES
from coders.template.steps.apply import apply
from coders.template.steps.kernels import (
                                           PEAK_FLOPS,
                                           cost,
                                           dominant,
                                           programs,
                                           smem_bytes,
                                           tf32_allowed,
)
from coders.template.steps.menu import legal

__all__ = ["PEAK_FLOPS", "SMEM_BYTES", "apply", "conv_flops", "cost", "dominant", "legal", "programs",
           "smem_bytes", "tf32_allowed"]
