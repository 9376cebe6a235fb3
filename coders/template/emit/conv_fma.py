"""The FMA K loop of convolutions with few channels per group (config "k_loop": "fma").

A conv whose groups have few input channels (an RGB input layer: 3; KernelBench level 2's 3-D convs:
3 or 8) and few output channels is a GEMM with a short, ragged K (C_in/groups x taps: 81 for
3 x 3x3x3) and a narrow N (16-64 output channels). A tensor-core dot needs K blocks of 16: the
flat loop packs taps into them, and pays a div/mod decomposition and a padding test per element
of the im2col tile, which the dot then uses only N times. Here the loop walks (tap, channel) pairs:

    for each tap: the rows' input offsets (and their padding mask, only where the conv pads)
        for each input channel c of the group:
            a = x[rows' pixels through the tap, c]      a [BLOCK_M] vector: consecutive output pixels
            b = w[columns, tap, c]                      a [BLOCK_N] vector
            acc += a[:, None] * b[None, :]              an outer product, BLOCK_M x BLOCK_N FMAs

so each loaded input value feeds BLOCK_N FMAs with no per-element index arithmetic. An unpadded conv
needs no mask at all: a valid window of an output pixel lies inside the input, and rows past the
last pixel wrap to a valid one (the store masks them). The products are fp32 FMAs, as exact as
eager's fp32 cuDNN convolution (cuDNN runs 3-D convs in fp32 even with TF32 allowed), so this form
has no precision step. It reads the input as NC* (a channel's plane is contiguous along the rows)
and the weight in the gemm form's [C_out, taps, C_in/groups] layout (w_rows: one row per column).
"""

from __future__ import annotations

from coders.template.emit import conv
from coders.template.emit.common import Writer, pow2_at_least_16
from coders.template.ir import Kernel

# The port takes this form for groups of at most MAX_IN input and MAX_OUT output channels and more
# than one tap. On an H100 (KernelBench's small-channel convs, benchmarks/probes/2026-11-26-conv/
# h100-fma-*.json) it ran 1.5-3.7x the flat loop's TF32 dots with 16-32 output channels (level 2's
# 3-D convs and transposed convs) and 1.1-1.7x with 64 (level 2's ten 2-D convs 8 -> 64, level 1's
# 3-D convs 54 and 59); with 64 the dots won on three 3-D convs (90_Conv3d 4%, level-1 60 and 66
# 15-17%), and with 96 (level-1 50, 11x11) by 1.3x. A forward fp32 conv the runs loop suits
# (emit/conv_runs.py: 64 output channels or more, or 8 input channels) takes that loop instead.
MAX_IN, MAX_OUT = 8, 64
# autotune's tiles (BLOCK_M, BLOCK_N, num_warps, num_stages): FMAs want many per thread and enough
# programs; BLOCK_K is a parameter of the kernels the loop does not use
TILES = ((128, 32, 4, 2), (256, 32, 8, 2), (128, 64, 4, 2), (256, 16, 4, 2), (64, 64, 4, 2), (32, 64, 4, 2),
         (256, 64, 8, 2), (64, 128, 8, 2))


def uses_fma(kernel: Kernel) -> bool:
    return kernel.kind in ("conv", "conv_transpose") and kernel.config.get("k_loop") == "fma"


def unrolled(kernel: Kernel) -> bool:
    """Config "fma_unroll": the channel loop unrolled, the group's input channels a constexpr (CIG_U,
    one compile per channel count), so each tap's loads and FMAs are straight-line code the compiler
    can schedule together. Not the port's: untimed on a GPU (a probe variant)."""
    return uses_fma(kernel) and bool(kernel.config.get("fma_unroll"))


def static(kernel: Kernel) -> bool:
    """Config "fma_static" (off in the port's own FMA form, on in exact_fp32.py's since the H100 probe
    of the thirteenth session: geomean 1.18x -> 1.29x eager on level-1 54 59 60 66, 59 the one slower,
    1.23x -> 1.09x; BENCHMARKS.md): the forward
    conv's group channels and kernel extents are constexprs (CIG_F, KS_<dim>; one compile per conv
    shape), so the loop walks the window's outer taps (all dims but the last) with a constant trip
    count and, unrolled inside, the last dim's taps x the channels: every weight offset is a constant,
    the outer tap's div/mod is by constants, and only a padded dim keeps a window test (the last dim's
    one per unrolled tap). A transposed conv ignores it (its live taps are found per stride phase).

    Why, from compile-only counts (no timing): the exact_fp32 form (128 x 64 tile, 4 warps) compiled
    for sm_90 on the CPU (Triton 3.9, the launch's specializations, KernelBench sizes). A (tap,
    channel) step is 64 FFMAs a thread. Runtime form: each step is 97 SASS instructions (94 PTX: the
    64 FMAs, the a and b loads, and a's trip through shared memory, 1 STS, 2 BAR, 16 LDS.128, since
    the tile's layout gives a thread 64 rows of one column), and each tap adds ~93 more for its three
    runtime div/mod of the tap index (3 PTX div/rem), shared by its channels: 128 a step with 3
    channels (level-1 54, 60, 66; 120 for 59's 3x3x1 kernel), 109 with 8 (level-2 90; 2-D 21 105).
    fma_static: 88 a step on 54 (796 per outer tap of 9), 86 on 60 and 66, 93 on 59, 86.5 on 90, 86
    on 21; what stays besides the FMAs is a's trip through shared memory (19) and 2 global loads.
    The epilogue is another matter: the whole 54 kernel is ~5,700 SASS instructions, over half of them
    the store's per-row index chain with 134 register spills, which split_rows cuts (60: 7,144 ->
    4,144 with fma_static)."""
    return uses_fma(kernel) and kernel.kind == "conv" and bool(kernel.config.get("fma_static"))


def constexprs(kernel: Kernel) -> list[str]:
    if static(kernel):
        return ["CIG_F", *(f"KS_{s}" for s in conv.spatial(kernel))]
    return ["CIG_U"] if unrolled(kernel) else []


def launch_kwargs(kernel: Kernel, channels: str) -> list[str]:
    """The launch's constexprs: `channels`, the launcher's expression for the group's input channels
    (the forward conv's launcher names the kernel extents ks_<dim>)."""
    if static(kernel):
        return [f"CIG_F={channels}", *(f"KS_{s}=ks_{s}" for s in conv.spatial(kernel))]
    return [f"CIG_U={channels}"] if unrolled(kernel) else []


def _channel_range(kernel: Kernel, runtime: str) -> str:
    return "tl.static_range(CIG_U)" if unrolled(kernel) else f"range(0, {runtime})"


def tuning_candidates(kernel: Kernel) -> tuple[list[str], list[tuple]]:
    """Autotune's keys and candidates for an FMA loop (BLOCK_K stays the config's)."""
    bk = kernel.config["BLOCK_K"]
    keys = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages"]
    return keys, [(m, n, bk, warps, stages) for m, n, warps, stages in TILES]


def port_config(out_per_group: int) -> dict:
    """The port's config (conv and conv_transpose): fp32 FMAs, no dot and no TF32, the input read as it
    lies. The tile: BLOCK_N covers the group's output channels, and 4 warps hold 32-64 accumulators a
    thread. On an H100, 256 rows beat 128 by 1.15-1.6x with 16 output channels and 128 rows beat 256
    by 1.1-1.6x with 64; 8 warps or 64 rows ran 1.3-4x slower (h100-fma-*.json). BLOCK_K is a kernel
    parameter the loop does not read."""
    block_n = pow2_at_least_16(out_per_group)
    return {"BLOCK_M": 256 if block_n <= 32 else 128, "BLOCK_N": block_n, "BLOCK_K": 16, "num_warps": 4,
            "num_stages": 2, "k_loop": "fma", "precision": "ieee", "channels_last": False,
            "tf32_round": False}


def suits(in_per_group: int, out_per_group: int, taps: int) -> bool:
    """Whether the port should take the FMA loop (MAX_IN, MAX_OUT)."""
    return in_per_group <= MAX_IN and out_per_group <= MAX_OUT and taps > 1


def unpadded(kernel: Kernel) -> bool:
    padding = kernel.space["padding"]
    return padding != "same" and not any(padding)


def k_loop(w: Writer, kernel: Kernel) -> None:
    """The forward conv's K loop (emit/conv.py's gemm form: x_rows, w_rows and acc as it sets them)."""
    if static(kernel):
        _k_loop_static(w, kernel)
        return
    dims = conv.spatial(kernel)
    plane = conv.product([f"in_{s}" for s in dims])
    conv.group_pointers(w, kernel)
    w(f"for tap in range(0, {conv.product([f'ks_{s}' for s in dims])}):")
    w.indent()
    conv.tap_offsets(w, kernel, "tap")
    w("x_tap = x_rows + tap_off")
    mask = ""
    if not unpadded(kernel):
        w("# one padding mask per row and tap: is the tap's input position inside the input")
        w(f"row_in = {conv.window_inside(dims)}")
        mask = ", mask=row_in, other=0.0"
    w(f"for c in {_channel_range(kernel, 'CIG')}:")
    w.indent()
    w(f"a = tl.load(x_tap + c * {plane}{mask}).to(tl.float32)")
    w("b = tl.load(w_rows + (tap * CIG + c)).to(tl.float32)  # the weight is [C_out, taps, CIG]")
    w("acc += a[:, None] * b[None, :]")
    w.dedent()
    w.dedent()


def _k_loop_static(w: Writer, kernel: Kernel) -> None:
    """k_loop with the constexprs of `static`: the same products in the same order."""
    dims = conv.spatial(kernel)
    outer, last = dims[:-1], dims[-1]
    conv.group_pointers(w, kernel)
    x_outer, mask = "x_rows", None
    if outer:
        w("# the window's outer taps: a constant trip count, divisions by constexprs")
        w(f"for outer in range(0, {conv.product([f'KS_{s}' for s in outer])}):")
        w.indent()
        x_outer, mask = _outer_tap(w, kernel, outer, last)
    w(f"for t_{last} in tl.static_range(KS_{last}):  # unrolled: the last dim's taps x the channels")
    w.indent()
    w(f"dk_{last} = t_{last} * dil_{last}")
    if conv.pads(kernel, [-1]):
        inside = f"(i0_{last} + dk_{last} >= 0) & (i0_{last} + dk_{last} < in_{last})"
        w(f"tap_in = {mask} & {inside}" if mask else f"tap_in = {inside}")
        mask = "tap_in"
    tap = f"outer * KS_{last} + t_{last}" if outer else f"t_{last}"
    w("for c in tl.static_range(CIG_F):")
    w.indent()
    masked = f", mask={mask}, other=0.0" if mask else ""
    plane = conv.product([f"in_{s}" for s in dims])
    w(f"a = tl.load({x_outer} + dk_{last} + c * {plane}{masked}).to(tl.float32)")
    w(f"b = tl.load(w_rows + (({tap}) * CIG_F + c)).to(tl.float32)  # constant offsets")
    w("acc += a[:, None] * b[None, :]")
    w.dedent()
    w.dedent()
    if outer:
        w.dedent()


def _outer_tap(w: Writer, kernel: Kernel, outer: list[str], last: str) -> tuple[str, str | None]:
    """The outer tap's displacements (dk_<dim>), the rows' pointer there and, where an outer dim pads,
    the rows' window test: (pointer, mask or None)."""
    w("rest_t = outer")
    for s in reversed(outer[1:]):
        w(f"dk_{s} = (rest_t % KS_{s}) * dil_{s}")
        w(f"rest_t = rest_t // KS_{s}")
    w(f"dk_{outer[0]} = rest_t * dil_{outer[0]}")
    offset = f"dk_{outer[0]}"
    for s in outer[1:]:
        offset = f"{offset if offset.isidentifier() else f'({offset})'} * in_{s} + dk_{s}"
    w(f"x_outer = x_rows + ({offset}) * in_{last}")
    if not conv.pads(kernel, list(range(len(outer)))):
        return "x_outer", None
    w(f"row_in = {conv.window_inside(outer)}")
    return "x_outer", "row_in"


def channel_loop(w: Writer, kernel: Kernel, x_ptr: str, w_ptr: str, channel_stride: str) -> None:
    """The transposed conv's inner loop over the group's input channels (emit/conv_transpose.py's
    a_rows, hit, w_cols, n_in and tap as it sets them): FMA outer products instead of dots."""
    w(f"for ci in {_channel_range(kernel, 'cin_g')}:")
    w.indent()
    w(f"a = tl.load({x_ptr} + a_rows + ci * {channel_stride}, mask=hit, other=0.0).to(tl.float32)")
    w(f"b = tl.load({w_ptr} + w_cols + (tap * cin_g + ci), mask=n_in, other=0.0).to(tl.float32)")
    w("acc += a[:, None] * b[None, :]")
    w.dedent()
