"""Convolution kernels (conv1d/2d/3d forward, NC* layout) with the epilogue on the fp32 tile.

Each program computes a BLOCK_M x BLOCK_N tile of output pixels (image, spatial position) by
output channels. The `gemm` form is an implicit GEMM per group (program_id(1)); the im2col matrix
is never built. Its K loop comes in two orders (config "k_loop"):
  taps  kernel taps outside, input channels in blocks of BLOCK_K inside (one loop over the pairs).
        Per tap, each row's input address and padding mask are computed once (scalar tap offsets,
        one compare per row); an element's address is then row address + channel * plane: no
        div/mod and no per-element window test. The form for C_in/groups >= 16.
  flat  K = taps x C_in/groups walked in blocks of BLOCK_K, each K index decomposed into its tap
        and channel by div/mod, the padding tested per element. A dot needs BLOCK_K >= 16, so for
        few channels per group (an RGB input layer: 3) the taps form would pad each tap's block
        5x; the flat order packs several taps into one block instead.
  fma   (tap, channel) pairs, one FMA outer product each, no dot: the port's loop for groups of at
        most 8 input and 64 output channels (emit/conv_fma.py).
  runs  dots over contiguous runs of a window row's taps x channels, channels last (emit/conv_runs.py).
The `direct` form (depthwise: one input channel per output channel) accumulates input x weight
products tap by tap with FMAs, over output channels of every group.

The launcher lays the gemm form's weight out once per call as [C_out, taps, C_in/groups] (a permute
of the small weight tensor), K-major: a weight tile is read as [BLOCK_N, BLOCK_K] along K and
transposed in the dot. TF32 tensor-core dots (wgmma) read both operands K-major from shared
memory; with the [taps, C_in/groups, C_out] order of before, Triton could not, and on an H100 the
same tiles ran 1.3-1.9x slower on KernelBench level-1/2 convs (benchmarks/probes/2026-11-26-conv-tma).
The direct form keeps [taps, 1, C_out]: a tap's weights of consecutive channels are one row.

TF32 rounding (config "tf32_round", off by default): the tensor cores read an fp32 operand's top
19 bits (truncation), cuDNN rounds to nearest first. Truncation errs toward zero on every product,
so its error is ~2.3x rounding's (max |error| 1.2-1.4e-3 against eager's 5.3-5.8e-4 on KernelBench
55, 62, 67 on an H100; normalized 6.9-7.6e-4 against 2.6-2.9e-4 in the probe's convs). With
tf32_round a channels-last conv's launcher rounds both operands as it lays them out (emit/conv_pack.py:
one Triton pass that transposes and rounds), so the dot truncates values that are already TF32; a
channels-last conv_transpose does the same. The flat loop on NC* (and a conv_transpose read from
NC*) rounds both tiles in the kernel as they are loaded
(an integer add and mask, ties away from zero, NaN kept): eager's error exactly, but 1.35-1.45x the
time on an H100 (55: 6.41 vs 4.45 ms; the tiles then go through registers to the tensor cores).
Truncating, the port is within the TF32 tolerance on single convs; 101 layers of them (ResNet101)
exceed 3x eager's error.

Epilogue addressing: the output is (N, C_out, *spatial) with GEMM rows = N x spatial and columns
= C_out, so operands are addressed by three axes: image (rows), channel (columns) and the flat
spatial position (rows); an operand spans each of them wholly or not at all (a [C, 1, 1]
parameter, a full-size residual, a [N, C, 1, 1] tensor).

A reduction over the output channels (min, max, sum, mean, logsumexp of dim 1; fuse/channels.py)
runs in the gemm form's epilogue when groups == 1: the launcher makes BLOCK_N hold every channel,
the tile is reduced across its columns and one value per pixel is stored (emit/channel_reduce.py).
A non-overlapping max / avg pool after the conv (fuse/pooled.py) makes the gemm form's rows pooled
pixels: the K loop runs once per window position and only the pooled tile is stored (emit/conv_pool.py).
"""

from __future__ import annotations

from coders.template.emit import channel_reduce, conv_epilogue, conv_fma, conv_mean, conv_pool, conv_runs
from coders.template.emit.common import Axis, FusionError, Writer, check_operands, ptr, tile_epilogue, var
from coders.template.emit.conv_tuning import tuning_space  # noqa: F401 - the emitter's, re-exported
from coders.template.emit.launch import Launcher, kernel_header, output_alloc, wrap_call
from coders.template.ir import Kernel

SUFFIXES = {1: ["l"], 2: ["h", "w"], 3: ["d", "h", "w"]}


def spatial(kernel: Kernel) -> list[str]:
    return SUFFIXES[len(kernel.space["traced"]) - 2]


def is_gemm(kernel: Kernel) -> bool:
    return kernel.space["form"] == "gemm"


def epilogue_axes(kernel: Kernel) -> list[Axis]:
    rank = len(kernel.space["traced"])
    # the flat spatial index is taken modulo its size: always in range, no mask needed
    return [Axis([0], "img_e", "n_batch", "m_mask"), Axis([1], "chan_e", "C_out", "n_mask"),
            Axis(list(range(2, rank)), "pix_e", "n_pix", None)]


def check(kernel: Kernel) -> None:
    """Raise FusionError for an operand or output the epilogue cannot address."""
    check_operands(kernel, epilogue_axes(kernel))
    conv_pool.check(kernel)  # a pooling conv's body splits around its pool
    conv_mean.check(kernel)  # a conv meaning its output over the pixels writes the means only
    conv_runs.check(kernel)
    if channel_reduce.reduces_channels(kernel):
        channel_reduce.check(kernel)
        return
    full = list(range(len(kernel.space["traced"])))
    if any(o.dims != full for o in kernel.outputs) and not conv_mean.means(kernel):
        raise FusionError("a conv kernel writes whole outputs only")


def precision(kernel: Kernel) -> str:
    return kernel.config.get("precision", "ieee")


def product(names: list[str]) -> str:
    """`a * b` as a term that can be multiplied or indexed safely."""
    return _grouped(" * ".join(names))


def _grouped(expr: str) -> str:
    return expr if expr.isidentifier() else f"({expr})"


def _geometry_params(kernel: Kernel) -> list[str]:
    names = []
    for what in ("in", "out", "ks", "stride", "pad", "dil"):
        names += [f"{what}_{s}" for s in spatial(kernel)]
    return names


def _pixel_indices(w: Writer, kernel: Kernel, rows: str) -> None:
    """Output pixel (image, o_<dim>) of each row, the input position its window starts at
    (i0_<dim>), and that position's offset within a channel plane (x_start)."""
    dims = spatial(kernel)
    w(f"rest = {rows}")
    for s in reversed(dims):
        w(f"o_{s} = rest % out_{s}")
        w(f"rest = rest // out_{s}")
    w("img = rest.to(tl.int64)")
    _window_start(w, dims)


def _window_start(w: Writer, dims: list[str]) -> None:
    for s in dims:
        w(f"i0_{s} = o_{s} * stride_{s} - pad_{s}")
    w(f"x_start = {_flat_offset(dims, 'i0')}")


def _flat_offset(dims: list[str], prefix: str) -> str:
    """Row-major offset of (prefix_d, prefix_h, prefix_w) in a channel plane."""
    offset = None
    for s in dims:
        offset = f"{prefix}_{s}" if offset is None else f"{_grouped(offset)} * in_{s} + {prefix}_{s}"
    return offset


def k_loop(kernel: Kernel) -> str:
    """The gemm form's K order: "taps" (the default), "flat", "fma" or "runs" (the module docstring)."""
    return kernel.config.get("k_loop", "taps")


def tap_offsets(w: Writer, kernel: Kernel, tap: str) -> list[str]:
    """Decompose kernel tap index `tap` (row-major over the kernel extents) into per-dim input
    displacements `dk_<dim>` and `tap_off`, their offset within a channel plane."""
    dims = spatial(kernel)
    w(f"rest_t = {tap}")
    for i, s in enumerate(reversed(dims)):
        w(f"dk_{s} = (rest_t % ks_{s}) * dil_{s}")
        if i < len(dims) - 1:
            w(f"rest_t = rest_t // ks_{s}")
    w(f"tap_off = {_flat_offset(dims, 'dk')}")
    return dims


def pads(kernel: Kernel, dims: list[int]) -> bool:
    """Whether the conv pads any of the spatial dims `dims` (indices into its padding): the static K
    loops (conv_runs, conv_fma) keep a window test only there."""
    padding = kernel.space["padding"]
    return padding == "same" or any(padding[i] != 0 for i in dims)


def window_inside(dims: list[str]) -> str:
    """Each row's test that its window, shifted by the tap (dk_<dim>), lies inside the input."""
    return " & ".join(f"(i0_{s} + dk_{s} >= 0) & (i0_{s} + dk_{s} < in_{s})" for s in dims)


def channels_last(kernel: Kernel) -> bool:
    """A channels-last copy of the input: the taps loop's with config "channels_last", the runs loop's."""
    loop = k_loop(kernel) if is_gemm(kernel) else None
    return loop == "runs" or (loop == "taps" and bool(kernel.config.get("channels_last")))


def rounds_tf32(kernel: Kernel) -> bool:
    """A TF32 dot's operands are rounded to nearest first, as cuDNN does (module docstring)."""
    return precision(kernel) == "tf32" and kernel.space.get("dtype") == "float32" and \
        bool(kernel.config.get("tf32_round", False))


def rounds_in_pack(kernel: Kernel) -> bool:
    """The launcher's channels-last copy rounds both operands (emit/conv_pack.py), not the kernel;
    a transposed conv's "channels_last" is its own (emit/conv_transpose.py)."""
    if kernel.kind == "conv_transpose":
        return rounds_tf32(kernel) and transpose_channels_last(kernel)
    return kernel.kind == "conv" and rounds_tf32(kernel) and channels_last(kernel)


def transpose_channels_last(kernel: Kernel) -> bool:
    """A transposed conv reads a channels-last copy of its input (config "channels_last"), unless its
    epilogue reads the input too: that operand shares the input's pointer (emit/conv_transpose.py)."""
    x = kernel.space["input"]
    return bool(kernel.config.get("channels_last")) and all(o.value != x for o in kernel.operands)


def round_tf32_operands(w: Writer, kernel: Kernel) -> None:
    """Round the a and b tiles of a TF32 dot to nearest (module docstring); shared with conv_transpose."""
    if rounds_tf32(kernel) and not rounds_in_pack(kernel):
        w("# TF32 to nearest, ties away (as cuDNN): the tensor cores would truncate the low 13 bits")
        for t in ("a", "b"):
            w(f"{t}_bits = ({t}.to(tl.uint32, bitcast=True) + 0x1000) & 0xFFFFE000")
            w(f"{t} = tl.where({t} == {t}, {t}_bits.to(tl.float32, bitcast=True), {t})")


def group_pointers(w: Writer, kernel: Kernel) -> None:
    plane = product([f"in_{s}" for s in spatial(kernel)])
    w("offs_k = tl.arange(0, BLOCK_K)")
    if channels_last(kernel):
        w("# each row's window start (its pixel's channel vector) at the group's first channel")
        w(f"x_rows = x_ptr + (img * {plane} + x_start) * C_in + grp * CIG")
    else:
        w("# each row's window start in its image's first channel of the group")
        w(f"x_rows = x_ptr + (img * C_in + grp * CIG) * {plane} + x_start")
    w("# columns past the group's channels wrap, the store masks them; the weight is [C_out, taps * CIG]")
    w("w_rows = w_ptr + (grp * COG + offs_n % COG) * K")
    w("acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)")


def dot(w: Writer, kernel: Kernel) -> None:  # acc += a @ b^T: conv, conv_runs, conv_transpose
    round_tf32_operands(w, kernel)
    w(f'acc = tl.dot(a, tl.trans(b), acc, input_precision="{precision(kernel)}")')


def _k_loop_taps(w: Writer, kernel: Kernel) -> None:
    plane = product([f"in_{s}" for s in spatial(kernel)])
    group_pointers(w, kernel)
    w("c_blocks = tl.cdiv(CIG, BLOCK_K)")
    w("# taps outside, channel blocks inside, as one loop over the pairs: Triton pipelines an")
    w("# innermost loop only, so one loop keeps the next tap's loads in flight across the tap boundary")
    w(f"for step in range(0, {product([f'ks_{s}' for s in spatial(kernel)])} * c_blocks):")
    w.indent()
    w("tap = step // c_blocks  # scalars: the tap's arithmetic is per program, not per element")
    w("c = (step % c_blocks) * BLOCK_K + offs_k")
    dims = tap_offsets(w, kernel, "tap")
    w("# one padding mask per row: is the tap's input position inside the input")
    w(f"row_in = {window_inside(dims)}")
    w("c_in = c < CIG")
    if channels_last(kernel):
        w("# the row's address + the channel: a tile row is contiguous channels (vector loads)")
        w("a_cols = tap_off * C_in + c")
    else:
        w(f"a_cols = tap_off + c * {plane}  # the row's address + the channel's plane: no div/mod")
    w("a = tl.load(x_rows[:, None] + a_cols[None, :], mask=row_in[:, None] & c_in[None, :], other=0.0)")
    w("b = tl.load(w_rows[:, None] + (tap * CIG + c)[None, :], mask=c_in[None, :], other=0.0)")
    dot(w, kernel)
    w.dedent()


def _k_loop_flat(w: Writer, kernel: Kernel) -> None:
    plane = product([f"in_{s}" for s in spatial(kernel)])
    group_pointers(w, kernel)
    w("for k0 in range(0, K, BLOCK_K):")
    w.indent()
    w("k = k0 + offs_k  # the weight's row: tap * CIG + channel")
    w("k_in = k < K")
    w("chan = k % CIG")
    dims = tap_offsets(w, kernel, "k // CIG")
    w("# the im2col gather: zero where the window leaves the input (the padding)")
    w("a_mask = k_in[None, :]")
    for s in dims:
        w(f"i_{s} = i0_{s}[:, None] + dk_{s}[None, :]")
        w(f"a_mask = a_mask & (i_{s} >= 0) & (i_{s} < in_{s})")
    w(f"a = tl.load(x_rows[:, None] + (chan * {plane} + tap_off)[None, :], mask=a_mask, other=0.0)")
    w("b = tl.load(w_rows[:, None] + k[None, :], mask=k_in[None, :], other=0.0)")
    dot(w, kernel)
    w.dedent()


def _k_loop_direct(w: Writer, kernel: Kernel) -> None:
    plane = product([f"in_{s}" for s in spatial(kernel)])
    w("# each column's output channel reads the input channel of its group (one: depthwise)")
    w("chan_o = offs_n % C_out")
    w(f"x_cols = (chan_o // COG) * {plane}")
    w(f"x_rows = x_ptr + img * C_in * {plane} + x_start")
    w("acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)")
    w("for tap in range(0, K):")
    w.indent()
    dims = tap_offsets(w, kernel, "tap")
    w(f"inside = {window_inside(dims)}")
    w("a = tl.load(x_rows[:, None] + (x_cols + tap_off)[None, :], mask=inside[:, None], other=0.0)")
    w("b = tl.load(w_ptr + tap * C_out + chan_o)  # the weight is [taps, 1, C_out]: a contiguous row")
    w("acc += a.to(tl.float32) * b.to(tl.float32)[None, :]")
    w.dedent()


def _operand_params(kernel: Kernel) -> list[str]:
    return [var(o.value) if o.scalar else ptr(o.value) for o in kernel.operands]


def emit_kernel(w: Writer, kernel: Kernel, name: str) -> None:
    check(kernel)
    gemm = is_gemm(kernel)
    params = ["x_ptr", "w_ptr"] + _operand_params(kernel) + [ptr(o.value) for o in kernel.outputs] + \
        ["n_batch", "C_in", "C_out", "CIG", "COG", "M", "K"] + _geometry_params(kernel)
    consts = ["BLOCK_M", "BLOCK_N", *(["BLOCK_K"] if gemm else []), *conv_pool.constexprs(kernel),
              *conv_fma.constexprs(kernel), *conv_runs.constexprs(kernel)]
    kernel_header(w, kernel, name, params, consts, key=["M", "C_out", "K"])
    w.indent()
    w("pid = tl.program_id(0)")
    w(f"num_pid_n = tl.cdiv({'COG' if gemm else 'C_out'}, BLOCK_N)")
    w("pid_m = pid // num_pid_n")
    w("pid_n = pid % num_pid_n")
    if gemm:
        w("grp = tl.program_id(1)")
    w("offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)")
    w("offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)")
    w("# rows past the edge wrap around: loads stay in bounds, the store masks them out")
    w("rows = offs_m % M")
    if conv_pool.pools(kernel):  # rows are pooled pixels, a conv tile per window position
        conv_pool.pooled_pixels(w, dims := spatial(kernel))
        conv_pool.emit_windows(w, kernel, dims, lambda: _conv_tile(w, kernel),
                               conv_epilogue.indices(w, kernel))
    else:
        _pixel_indices(w, kernel, "rows")
        _k_loop(w, kernel)
        axes, columns = conv_epilogue.indices(w, kernel)
        if conv_mean.means(kernel):  # each image's column sums added into the [N, C_out] output
            conv_mean.epilogue(w, kernel, axes)
        else:
            tile_epilogue(w, kernel, axes, columns=columns)
    w.dedent()
    w()


def _conv_tile(w: Writer, kernel: Kernel) -> None:
    """A pooling conv's tile at the conv output pixels o_<dim> of its window position."""
    _window_start(w, spatial(kernel))
    _k_loop(w, kernel)


def _k_loop(w: Writer, kernel: Kernel) -> None:
    forms = {"flat": _k_loop_flat, "taps": _k_loop_taps, "fma": conv_fma.k_loop, "runs": conv_runs.k_loop}
    (forms[k_loop(kernel)] if is_gemm(kernel) else _k_loop_direct)(w, kernel)


def emit_launcher(w: Writer, kernel: Kernel, name: str, launcher: Launcher) -> None:
    sp = kernel.space
    x, weight = sp["input"], sp["weight"]
    dims = spatial(kernel)
    launcher.begin(w)
    w.indent()
    launcher.contiguous(w)
    order = ", ".join(str(d) for d in range(2, len(dims) + 2))
    if channels_last(kernel):
        w("# channels last: a tile row's K block (the channels of one pixel) is one contiguous vector,")
        w("# where NC* strides the channels by a plane and Triton cannot prove the pixels contiguous")
        w(f"{x}_cl = {_channels_last_copy(kernel, x, order)}")
    if rounds_in_pack(kernel):
        w("# [C_out, taps, C_in/groups] and the input rounded to TF32 as cuDNN does, in the copies: the")
        w("# dot's truncation of a TF32 value is exact (emit/conv_pack.py)")
        w(f"{weight}_taps = _tf32_pack({weight})")
    elif is_gemm(kernel):
        w("# [C_out, taps, C_in/groups]: K-major weight tiles, the order TF32 tensor-core dots read")
        w(f"{weight}_taps = {weight}.permute(0, {order}, 1).contiguous()")
    else:
        w("# [taps, 1, C_out]: a tap's weights of consecutive channels are one contiguous row")
        w(f"{weight}_taps = {weight}.permute({order}, 1, 0).contiguous()")
    w(f"n_batch, C_in = {x}.shape[0], {x}.shape[1]")
    w(f"C_out, CIG = {weight}.shape[0], {weight}.shape[1]")
    w("COG = C_out // (C_in // CIG)  # output channels per group")
    conv_runs.launch_check(w, kernel)
    for i, s in enumerate(dims):
        w(f"in_{s}, ks_{s} = {x}.shape[{i + 2}], {weight}.shape[{i + 2}]")
        w(f"stride_{s}, dil_{s} = {sp['stride'][i]}, {sp['dilation'][i]}")
        if sp["padding"] == "same":
            w(f"pad_{s} = dil_{s} * (ks_{s} - 1) // 2  # 'same': the odd element of the padding goes after")
            w(f"out_{s} = in_{s}")
        else:
            w(f"pad_{s} = {sp['padding'][i]}")
            w(f"out_{s} = (in_{s} + 2 * pad_{s} - dil_{s} * (ks_{s} - 1) - 1) // stride_{s} + 1")
    pooled = conv_pool.launch(w, kernel, dims) if conv_pool.pools(kernel) else []  # out_<dim>: pooled
    for out in kernel.outputs:
        shape = channel_reduce.output_shape(out, "n_batch", "C_out", [f"out_{s}" for s in dims])
        alloc = conv_mean.alloc(out, len(dims), f"{x}.device") if conv_mean.means(kernel) else None
        w(f"{out.value} = {alloc or output_alloc(shape, out.dtype, f'{x}.device')}")
    w("M = n_batch * " + " * ".join(f"out_{s}" for s in dims))
    w("K = CIG * " + " * ".join(f"ks_{s}" for s in dims))
    geometry = [f"{what}_{s}" for what in ("in", "out", "ks", "stride", "pad", "dil") for s in dims]
    source = f"{x}_cl" if channels_last(kernel) else x
    args = [source, f"{weight}_taps"] + [o.value for o in kernel.operands] + \
        [o.value for o in kernel.outputs] + ["n_batch", "C_in", "C_out", "CIG", "COG", "M", "K"] + geometry
    cols, groups = ("COG", "C_in // CIG") if is_gemm(kernel) else ("C_out", "1")
    consts = ["BLOCK_M", "BLOCK_N", *(["BLOCK_K"] if is_gemm(kernel) else []), "num_warps", "num_stages"]
    kw = channel_reduce.launch_blocks(w, kernel, consts, "C_out", groups, lambda m, n: (
        f"(triton.cdiv(M, {m}) * triton.cdiv({cols}, {n}), {groups})"))
    kw += pooled + conv_fma.launch_kwargs(kernel, "CIG") + conv_runs.launch_kwargs(kernel)
    w("if M > 0 and C_out > 0:")
    for line in wrap_call(f"{name}[grid]", args + kw, "", w.depth + 1):
        w("    " + line)
    launcher.finish(w)
    w.dedent()
    w()


def _channels_last_copy(kernel: Kernel, x: str, order: str) -> str:
    return f"_tf32_pack({x})" if rounds_in_pack(kernel) else f"{x}.permute(0, {order}, 1).contiguous()"
