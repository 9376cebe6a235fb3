"""The "runs" K loop of convolutions with few input channels (config "k_loop": "runs"): tensor-core
dots whose K blocks are contiguous runs of a channels-last input.

In a channels-last input (N, *spatial, C) a window row's last-dim taps and their channels are one
contiguous run of ks_last x C floats: for a 3x3 conv with 8 channels, 24 floats per (kernel row, output
pixel). The taps loop (emit/conv.py) blocks K by channels per tap, so with fewer than 16 channels
most of each dot's K block is padding, and the flat loop pays a div/mod and a padding test per
element. Here the loop walks the window's outer taps (all dims but the last) and, in blocks of
BLOCK_K, each run:

    for each outer tap (kd, kh):                  a row mask (is the run's row inside the input)
        for k0 in range(0, ks_last * C, BLOCK_K):
            a = x[row's window start + (kd, kh) + k0 + k]   contiguous per row: vector loads
            b = w[columns, (kd, kh), k0 + k]                the weight's [C_out, taps, C] layout
            acc = dot(a, b^T, acc)                          TF32 (or the config's precision)

so a K block holds several taps' channels and loads as one vector per row. The run is contiguous only
where the last dim's dilation is 1 and every channel belongs to the group (groups == 1): emit refuses
the first, the launcher the second. A conv padded along the last dim masks the run's elements that
fall outside the input (one division by C per element); an unpadded one needs no such mask.

The port takes it for fp32 convs of at most MAX_IN input channels and at least MIN_OUT output channels
(`suits`), with TF32 dots on operands rounded to nearest in the channels-last copy (emit/conv_pack.py).
On an H100 (benchmarks/probes/2026-11-26-conv/h100-runs.json, KernelBench level 2) its 128 x 64 x 16
tiles ran the five 8 -> 64 convs 1.35-2.0x faster than the FMA loop (67 5.65 -> 3.57 ms, 73 1.57 ->
1.13, 87 4.44 -> 3.30, 57 1.00 -> 0.57, the 3-D 90 10.56 -> 5.24), tied with 32 output channels
(21 0.93x, the 3-D 7 1.05x) and lost with 16 (27 0.82x, 48 0.37x), where a 64-wide tile is mostly
padding; BLOCK_K 32 ran 1.2-1.9x slower than 16 on all nine.
"""

from __future__ import annotations

import torch

from coders.template.emit import conv
from coders.template.emit.common import FusionError, Writer
from coders.template.ir import Kernel

# The port's bounds: at most MAX_IN input channels (conv_fma.MAX_IN: more make the taps loop's channel
# blocks full) and at least MIN_OUT output channels, where the FMA loop trails (module docstring)
MAX_IN, MIN_OUT = 8, 64
PORT_CONFIG = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 16, "num_warps": 4, "num_stages": 3,
               "k_loop": "runs", "precision": "tf32", "tf32_round": True}


def suits(in_per_group: int, out_per_group: int, taps: int, groups: int, last_dilation: int,
          dtype: torch.dtype) -> bool:
    """Whether the port should take the runs loop: an fp32 conv with few input and many output channels,
    more than one tap, one group and an undilated last dim (the run must be contiguous)."""
    return dtype == torch.float32 and in_per_group <= MAX_IN and out_per_group >= MIN_OUT and taps > 1 \
        and groups == 1 and last_dilation == 1


def uses_runs(kernel: Kernel) -> bool:
    return kernel.kind == "conv" and kernel.space["form"] == "gemm" and kernel.config.get("k_loop") == "runs"


def check(kernel: Kernel) -> None:
    if uses_runs(kernel) and kernel.space["dilation"][-1] != 1:
        raise FusionError("the runs loop needs a last-dim dilation of 1 (its run of taps is contiguous)")


def _pads_last_dim(kernel: Kernel) -> bool:
    padding = kernel.space["padding"]
    return padding == "same" or padding[-1] != 0


def k_loop(w: Writer, kernel: Kernel) -> None:
    """emit/conv.py's gemm K loop (x_rows, w_rows, i0_<dim> and acc as it sets them)."""
    dims = conv.spatial(kernel)
    outer, last = dims[:-1], dims[-1]
    conv.group_pointers(w, kernel)
    w(f"RUN = ks_{last} * CIG  # a window row's last-dim taps x the channels: contiguous, channels last")
    w("k_blocks = tl.cdiv(RUN, BLOCK_K)")
    w("# one loop over (outer tap, K block) pairs: Triton pipelines an innermost loop only")
    w(f"for step in range(0, {conv.product([f'ks_{s}' for s in outer] or ['1'])} * k_blocks):")
    w.indent()
    w("outer = step // k_blocks  # the window's tap without its last-dim offset: scalars per program")
    w("k = (step % k_blocks) * BLOCK_K + offs_k")
    conv.tap_offsets(w, kernel, f"outer * ks_{last}")  # dk_<last> = 0: the run starts at the window
    mask = "(k < RUN)[None, :]"
    if outer:
        w(f"row_in = {conv.window_inside(outer)}")
        mask = f"row_in[:, None] & {mask}"
    if _pads_last_dim(kernel):
        w(f"i_{last} = i0_{last}[:, None] + (k // CIG)[None, :]  # each element's last-dim position")
        mask += f" & (i_{last} >= 0) & (i_{last} < in_{last})"
    w(f"a = tl.load(x_rows[:, None] + (tap_off * C_in + k)[None, :], mask={mask}, other=0.0)")
    w("b = tl.load(w_rows[:, None] + (outer * RUN + k)[None, :], mask=(k < RUN)[None, :], other=0.0)")
    conv.dot(w, kernel)
    w.dedent()


def launch_check(w: Writer, kernel: Kernel) -> None:
    """The launcher refuses a grouped conv: a group's channels are not contiguous across pixels."""
    if uses_runs(kernel):
        w("if CIG != C_in:")
        w('    raise ValueError("the runs loop needs groups == 1 (a group\'s channels are not one run)")')
