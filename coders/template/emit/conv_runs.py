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
Not the port's: untimed on a GPU (a probe variant, benchmarks/probes/2026-11-26-conv).
"""

from __future__ import annotations

from coders.template.emit import conv
from coders.template.emit.common import FusionError, Writer
from coders.template.ir import Kernel


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
