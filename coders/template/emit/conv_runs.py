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

The port takes it for fp32 convs of at most MAX_IN input channels and at least MIN_OUT output channels,
or of exactly MAX_IN input and at least 16 output channels (`suits`), with TF32 dots on operands rounded
to nearest in the channels-last copy (emit/conv_pack.py). On an H100 (benchmarks/probes/2026-11-26-conv/
h100-runs.json, h100-runs-narrow-l1/l2.json; KernelBench):
  - 128 x 64 x 16 tiles ran the five level-2 8 -> 64 convs 1.35-2.0x faster than the FMA loop (67 5.65 ->
    3.57 ms, 73 1.57 -> 1.13, 87 4.44 -> 3.30, 57 1.00 -> 0.57, the 3-D 90 10.56 -> 5.24), and level 1's
    3 -> 96 (50) and 3 -> 64 3-D convs (54, 60) 1.2-2.1x faster than both the FMA and the flat loop;
  - with 8 input and 16-32 output channels, 128 x 32 tiles beat the FMA loop by 1.1-1.4x (3-D 7 5.97 ->
    4.22 ms, 8 3.90 -> 3.55, 21 3.24 -> 2.97); with 3 input channels and 16-24 output channels the FMA
    loop stays ahead (48 1.24 against 2.48 ms, 23 1.06 against 1.16, 27 even), the run of 9 or 12 floats
    padding its K block of 16;
  - BLOCK_K 32 ran 1.2-1.9x slower than 16; with 16 output channels a 256 x 16 tile ran slower than
    128 x 32 (8: 4.42 against 3.55 ms).
"""

from __future__ import annotations

import torch

from coders.template.emit import conv
from coders.template.emit.common import FusionError, Writer
from coders.template.ir import Kernel

# The port's bounds (module docstring): at most MAX_IN input channels (more fill the taps loop's channel
# blocks) and at least MIN_OUT output channels, or MAX_IN input channels and at least MIN_OUT_FULL_RUNS
MAX_IN, MIN_OUT, MIN_OUT_FULL_RUNS = 8, 64, 16
PORT_CONFIG = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 16, "num_warps": 4, "num_stages": 3,
               "k_loop": "runs", "precision": "tf32", "tf32_round": True, "runs_static": True}


def suits(in_per_group: int, out_per_group: int, taps: int, groups: int, last_dilation: int,
          dtype: torch.dtype) -> bool:
    """Whether the port should take the runs loop: an fp32 conv with few input channels and enough
    output channels, more than one tap, one group and an undilated last dim (the run is contiguous)."""
    wide = out_per_group >= MIN_OUT or (in_per_group == MAX_IN and out_per_group >= MIN_OUT_FULL_RUNS)
    return dtype == torch.float32 and in_per_group <= MAX_IN and wide and taps > 1 and groups == 1 \
        and last_dilation == 1


def port_config(out_per_group: int) -> dict:
    """128 x 64 tiles, 128 x 32 below 64 output channels (even for 16: the probe's 256 x 16 was slower)."""
    return {**PORT_CONFIG, "BLOCK_N": 64 if out_per_group >= 64 else 32}


def uses_runs(kernel: Kernel) -> bool:
    return kernel.kind == "conv" and kernel.space["form"] == "gemm" and kernel.config.get("k_loop") == "runs"


def check(kernel: Kernel) -> None:
    if uses_runs(kernel) and kernel.space["dilation"][-1] != 1:
        raise FusionError("the runs loop needs a last-dim dilation of 1 (its run of taps is contiguous)")


def static(kernel: Kernel) -> bool:
    """Config "runs_static" (on in the port): the group's channels and the kernel's
    extents are constexprs (CIG_R, KS_<dim>; one compile per conv shape), so the run, its K blocks and
    the trip count are constants. Compiled for sm_90 (Triton 3.9, level-2 7_'s 8 -> 32 conv), the
    runtime form's K step is ~400 SASS instructions for 4 HGMMAs: 4-byte cp.asyncs (16 a thread) with
    a mask each, a 64-bit address each and four runtime divisions; with constexprs the a tile's row
    base is a multiple of the 8 channels, so each thread copies 16-byte vectors (4, and 1 for b) and
    an unpadded conv drops the rows' window test (a valid pixel's window lies inside the input).
    On an H100 (benchmarks/probes/2026-11-26-conv/h100-runs-static.log, KernelBench level 2) the port's
    runs loop went from 4.22 to 2.16 ms on 7_, 3.56 to 1.79 on 8_, 3.00 to 2.47 on 21_ and 5.25 to 2.53
    on 90_; split_rows added nothing (2.17, 1.82, 2.46, 2.59) and stays off."""
    return uses_runs(kernel) and bool(kernel.config.get("runs_static"))


def constexprs(kernel: Kernel) -> list[str]:
    return ["CIG_R", *(f"KS_{s}" for s in conv.spatial(kernel))] if static(kernel) else []


def launch_kwargs(kernel: Kernel) -> list[str]:
    return ["CIG_R=CIG", *(f"KS_{s}=ks_{s}" for s in conv.spatial(kernel))] if static(kernel) else []


def k_loop(w: Writer, kernel: Kernel) -> None:
    """emit/conv.py's gemm K loop (x_rows, w_rows, i0_<dim> and acc as it sets them)."""
    if static(kernel):
        _k_loop_static(w, kernel)
        return
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
    _load_run(w, kernel, mask, "C_in", "CIG", "RUN")


def _load_run(w: Writer, kernel: Kernel, mask: str, channels: str, group: str, run: str) -> None:
    """The a and b tiles of a step (`channels`: the input's, `group`: a group's) and the dot."""
    last = conv.spatial(kernel)[-1]
    if conv.pads(kernel, [-1]):
        w(f"i_{last} = i0_{last}[:, None] + (k // {group})[None, :]  # each element's last-dim position")
        mask += f" & (i_{last} >= 0) & (i_{last} < in_{last})"
    w(f"a = tl.load(x_rows[:, None] + (tap_off * {channels} + k)[None, :], mask={mask}, other=0.0)")
    w(f"b = tl.load(w_rows[:, None] + (outer * {run} + k)[None, :], mask=(k < {run})[None, :], other=0.0)")
    conv.dot(w, kernel)
    w.dedent()


def _k_loop_static(w: Writer, kernel: Kernel) -> None:
    """k_loop with the constexprs of `static`: the same steps, constant bounds (groups == 1: CIG_R is
    the input's channels)."""
    dims = conv.spatial(kernel)
    outer, last = dims[:-1], dims[-1]
    plane = conv.product([f"in_{s}" for s in dims])
    w("offs_k = tl.arange(0, BLOCK_K)")
    w("# each row's window start: a multiple of the constexpr channels, so 16-byte vectors along K")
    w(f"x_rows = x_ptr + (img * {plane} + x_start) * CIG_R")
    w(f"w_rows = w_ptr + offs_n % COG * {conv.product([f'KS_{s}' for s in dims])} * CIG_R")
    w("acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)")
    w(f"RUN: tl.constexpr = KS_{last} * CIG_R  # a window row's last-dim taps x the channels")
    w("k_blocks: tl.constexpr = (RUN + BLOCK_K - 1) // BLOCK_K")
    w(f"for step in range(0, {conv.product([f'KS_{s}' for s in outer] or ['1'])} * k_blocks):")
    w.indent()
    w("outer = step // k_blocks  # divisions by constexprs")
    w("k = (step % k_blocks) * BLOCK_K + offs_k")
    w("rest_t = outer")
    for s in reversed(outer):
        w(f"dk_{s} = (rest_t % KS_{s}) * dil_{s}")
        w(f"rest_t = rest_t // KS_{s}")
    offset = ""  # dk_<last> = 0: the run starts at the window
    for s in outer:
        offset = f"({offset}) * in_{s} + dk_{s}" if offset else f"dk_{s}"
    w(f"tap_off = ({offset}) * in_{last}" if outer else "tap_off = 0")
    mask = "(k < RUN)[None, :]"
    if outer and conv.pads(kernel, list(range(len(outer)))):
        w(f"row_in = {conv.window_inside(outer)}")
        mask = f"row_in[:, None] & {mask}"
    _load_run(w, kernel, mask, "CIG_R", "CIG_R", "RUN")


def launch_check(w: Writer, kernel: Kernel) -> None:
    """The launcher refuses a grouped conv: a group's channels are not contiguous across pixels."""
    if uses_runs(kernel):
        w("if CIG != C_in:")
        w('    raise ValueError("the runs loop needs groups == 1 (a group\'s channels are not one run)")')
