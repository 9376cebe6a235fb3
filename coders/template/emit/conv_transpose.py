"""Transposed convolutions (1d/2d/3d) as implicit GEMMs over the output, epilogue fused on the tile.

    out[n, g*Cg_out + co, o] = sum over ci < C_in/groups and taps t of
                               x[n, g*Cg_in + ci, i] * w[g*Cg_in + ci, co, t]
    where, per spatial dim, o = i * stride - padding + t * dilation

Gather form: each output pixel reads, through each tap, the input pixel
i = (o + padding - t * dilation) / stride where that is whole and inside the input. Every output
element is written once by one program (no atomics, no zero-fill pass), so the fused epilogue runs on
the finished fp32 tile, as in emit/matmul/.

One program computes BLOCK_M output pixels x BLOCK_N output channels of one group. Under stride > 1
only about 1 / stride^D of the (pixel, tap) pairs are whole: the default stride-phase form (`phases`)
gives each program the pixels of one phase o = r + stride * q, for which a tap is live or dead as a
whole; the plain form (config phases=False: pixels in order, spatial fastest, so stores are
contiguous along M) masks the dead pairs row by row. The K loop (emit/conv_transpose_loop.py) walks
taps x the group's input channels in BLOCK_K chunks, one tl.dot each (with few input channels per
group, config k_loop="fma": one FMA outer product per channel, emit/conv_fma.py); each row's input
position and mask are computed per tap, not per element. The stride-phase form's default loop
(config live_taps) walks the phase's live taps only, as one loop over (live tap, channel block) that
Triton software-pipelines; live_taps=False keeps the loop before it (every tap, an `if` skipping the
dead ones, a channel loop inside) as a probe variant.

Precision: fp32 operands port with "tf32" dots, as eager's cuDNN runs fp32 transposed convolutions
by default (torch.backends.cudnn.allow_tf32; the verifier judges a task whose reference convolves
with the TF32 tolerance, as for the forward conv in conv_lower.py); the `precision` step moves them to
tf32x3 (three TF32 products, about fp32 accuracy) or ieee (fp32 FMAs). The fp32 port reads a
channels-last copy of the input (config "channels_last": a tile row's channel block is one vector),
made with the weight's K-major copy by one Triton pass each that also rounds to TF32 to nearest as
cuDNN does (emit/conv_pack.py), so the truncating dot computes cuDNN's products; with
channels_last off the kernel reads NC* and rounds only with tf32_round, in its tiles. 16-bit
operands go to the tensor cores as they are; the accumulator is fp32 in every case and the output
takes the input's dtype.

Every size (batch, channels, spatial sizes, kernel sizes) and the geometry (stride, padding,
output_padding, dilation, groups) are read at run time, so one program runs at every task size.

With groups == 1 the epilogue also takes a reduction over the output channels (fuse/channels.py), as
the forward conv's does: the launcher makes BLOCK_N hold every channel (emit/channel_reduce.py).
"""

from __future__ import annotations

from coders.template.emit import (
    channel_reduce,
    conv,
    conv_fma,
    conv_mean,
    conv_transpose_loop,
    conv_transpose_static,
)
from coders.template.emit.common import Axis, Writer, check_operands, ptr, tile_epilogue, var
from coders.template.emit.conv_transpose_loop import input_values, row_major, split
from coders.template.emit.launch import Launcher, autotune_configs, kernel_header, output_alloc, wrap_call
from coders.template.ir import Kernel

TUNE_KEY = ["M", "cout_g", "cin_g"]


def _dims(kernel: Kernel) -> int:
    return int(kernel.space["dims"])


def epilogue_axes(kernel: Kernel) -> list[Axis]:
    """The output (N, C_out, *spatial) seen by the tile: batch and spatial index the rows, channels
    the columns; operands broadcast over any of the three (a per-channel [C, 1, 1] bias spans one)."""
    spatial = list(range(2, 2 + _dims(kernel)))
    return [Axis([0], "rb", "n_batch", "m_mask"), Axis([1], "rc", "C_out", "n_mask"),
            Axis(spatial, "rs", "S_out", "m_mask")]


def check(kernel: Kernel) -> None:
    """Raise FusionError for an operand or output the epilogue cannot address."""
    check_operands(kernel, epilogue_axes(kernel))
    conv_mean.check(kernel)  # a conv meaning its output over the pixels writes the means only
    if channel_reduce.reduces_channels(kernel):
        channel_reduce.check(kernel)


def channels_last(kernel: Kernel) -> bool:
    """The kernel reads a channels-last copy of the input (config "channels_last"): a tile row's
    channel block is one contiguous vector, where NC* strides the channels by a plane."""
    return conv.transpose_channels_last(kernel)


def _operand_params(kernel: Kernel) -> list[str]:
    """Epilogue operands; the input or weight read again (a residual of x) reuses their pointer."""
    taken = set(input_values(kernel))
    out = []
    for o in kernel.operands:
        if o.scalar:
            out.append(var(o.value))
        elif o.value not in taken:
            out.append(ptr(o.value))
            taken.add(o.value)
    return out


def _per_dim(prefixes: tuple[str, ...], dims: int) -> list[str]:
    return [f"{p}{j}" for p in prefixes for j in range(dims)]


def phases(kernel: Kernel) -> bool:
    """The stride-phase form (the default): outputs o = r + stride * q of one phase r share their live
    taps, those with (r + padding - t * dilation) divisible by the stride, so a program runs over one
    phase's pixels and walks its live taps only (live_taps), where the plain gather form masks them
    row by row: stride 2 in 2-D does 1/4 of the plain form's dot work (1/8 in 3-D). Its rows read
    consecutive input pixels; its stores are strided by the stride. With stride 1 there is one phase
    and the two forms do the same work. `phases: False` in the config gives the plain form."""
    return bool(kernel.config.get("phases", True))


def live_taps(kernel: Kernel) -> bool:
    """The stride-phase form's live-tap loop (the default): it walks only the phase's live taps, with
    no test, merged with the channel blocks into one loop that Triton can pipeline (module docstring).
    `live_taps: False` gives the form before it: every tap, the dead ones skipped by an `if`."""
    return phases(kernel) and bool(kernel.config.get("live_taps", True))


def static(kernel: Kernel) -> bool:
    """Config "transpose_static" (the fp32 port's since the H100 probe of the thirteenth session; see
    conv_transpose_lower.CONV_TRANSPOSE_CONFIG): the live-tap loop's group channels and geometry as
    constexprs (emit/conv_transpose_static.py); other loops ignore it."""
    return live_taps(kernel) and conv_transpose_static.requested(kernel)


def transposed_epilogue(kernel: Kernel) -> bool:
    """Config "epilogue_t" (a probe variant, off in the port): the epilogue runs on the tile
    transposed, [BLOCK_N, BLOCK_M], so the store's lanes walk output pixels, which NC* keeps
    consecutive (a phase's at the stride), where the [BLOCK_M, BLOCK_N] tile's store gives its lanes
    the channels, a plane apart: each lane's 4 bytes is a sector of its own. Not with a reduction over
    the channels (it reduces the tile's rows across its columns)."""
    return bool(kernel.config.get("epilogue_t")) and not channel_reduce.reduces_channels(kernel)


def grouped_programs(kernel: Kernel) -> bool:
    """Config "grouped_programs" (the port's since an H100 probe: conv_transpose_lower.py): one program
    axis, ordered channel block fastest, then (group, stride phase), then pixel block, so the programs
    of one pixel block run together: its channel blocks read the same input rows while they are in L2,
    and its phases write the interleaved halves of the same output sectors. Without it the grid
    (pixel block, channel block, group x phase) runs every pixel block of one phase before the next
    phase's."""
    return bool(kernel.config.get("grouped_programs"))


def emit_kernel(w: Writer, kernel: Kernel, name: str) -> None:
    check(kernel)
    d = _dims(kernel)
    x, wt = input_values(kernel)
    sizes = ["M", "C_in", "cin_g", "cout_g", "C_out", "S_in", "S_out"]
    geometry = _per_dim(("in", "out", "ks", "st", "pad", "dil"), d)
    if live_taps(kernel):
        geometry += _per_dim(("tst", "tinv"), d)  # the live taps' step and an inverse (its module)
    params = [ptr(x), ptr(wt)] + _operand_params(kernel) + [ptr(o.value) for o in kernel.outputs] + \
        sizes + geometry
    if static(kernel):
        params = conv_transpose_static.constexpr_params(params, d)
    kernel_header(w, kernel, name, params, ["BLOCK_M", "BLOCK_N", "BLOCK_K", *conv_fma.constexprs(kernel)],
                  key=TUNE_KEY)
    w.indent()
    group_phase = "tl.program_id(2)"
    if grouped_programs(kernel):
        group_phase = _grouped_pids(w, d if phases(kernel) else 0)
    else:
        w("pid_m = tl.program_id(0)")
        w("pid_n = tl.program_id(1)")
    w("offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)")
    w("offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)")
    w("offs_k = tl.arange(0, BLOCK_K)")
    w("n_in = offs_n < cout_g")
    if phases(kernel):
        _phase_rows(w, d, group_phase)
    else:
        _plain_rows(w, d, group_phase)
    if channels_last(kernel):
        w("x_rows = batch.to(tl.int64) * S_in * C_in + pid_g * cin_g  # channels last: (N, *S_in, C_in)")
    else:
        w("x_rows = (batch.to(tl.int64) * C_in + pid_g * cin_g) * S_in")
    w(f"n_taps = {' * '.join(f'ks{j}' for j in range(d))}")
    w("# the weight comes as (groups, C_out/groups, taps, C_in/groups): this group's block, and each")
    w("# column's row of it (its output channel's taps x channels)")
    w("w_group = pid_g.to(tl.int64) * n_taps * cin_g * cout_g")
    w("w_cols = w_group + offs_n * n_taps * cin_g")
    w("acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)")
    if static(kernel):
        conv_transpose_static.live_tap_loop(w, kernel, d)
    elif live_taps(kernel):
        conv_transpose_loop.live_tap_loop(w, kernel, d)
    else:
        conv_transpose_loop.tap_loop(w, kernel, d, phases(kernel))
    _epilogue(w, kernel)
    w.dedent()
    w()


def _grouped_pids(w: Writer, d: int) -> str:
    """grouped_programs: the program's channel block, (group, phase) and pixel block from one axis
    (d: the dims of the stride phases, 0 in the plain form, which has none)."""
    w("# one program axis: channel block fastest, then (group, stride phase), then pixel block")
    w("pid = tl.program_id(0)")
    w("n_blocks = tl.cdiv(cout_g, BLOCK_N)")
    w("n_gp = " + " * ".join(["C_out // cout_g"] + [f"st{j}" for j in range(d)]))
    w("pid_n = pid % n_blocks")
    w("pid_gp = pid // n_blocks % n_gp")
    w("pid_m = pid // (n_blocks * n_gp)")
    return "pid_gp"


def _plain_rows(w: Writer, d: int, group_phase: str) -> None:
    w(f"pid_g = {group_phase}  # the group: its input channels feed its output channels only")
    w("m_in = offs_m < M")
    w("# each row's output pixel: batch, then spatial coordinates")
    w("batch = offs_m // S_out")
    w("spatial = offs_m % S_out")
    split(w, "spatial", [f"out{j}" for j in range(d)], [f"o{j}" for j in range(d)], "rest")


def _phase_rows(w: Writer, d: int, group_phase: str) -> None:
    w("# grid axis 2: the group (its input channels feed its output channels only) and the stride")
    w("# phase r, the output pixels o = r + stride * q (last spatial dim fastest)")
    w(f"pid_g = {group_phase} // ({' * '.join(f'st{j}' for j in range(d))})")
    split(w, f"{group_phase} % ({' * '.join(f'st{j}' for j in range(d))})",
           [f"st{j}" for j in range(d)], [f"r{j}" for j in range(d)], "rest_r")
    for j in range(d):
        w(f"nq{j} = (out{j} + st{j} - 1) // st{j}")
    w(f"S_q = {' * '.join(f'nq{j}' for j in range(d))}")
    w("# each row's output pixel: batch, then its phase coordinates q (M counts the largest phase)")
    w("batch = offs_m // S_q")
    split(w, "offs_m % S_q", [f"nq{j}" for j in range(d)], [f"q{j}" for j in range(d)], "rest")
    w("m_in = offs_m < M")
    for j in range(d):
        w(f"o{j} = r{j} + st{j} * q{j}")
        w(f"m_in = m_in & (o{j} < out{j})")
    w(f"spatial = {row_major([f'o{j}' for j in range(d)], [f'out{j}' for j in range(d)])}")


def _epilogue(w: Writer, kernel: Kernel) -> None:
    """Apply the fused ops to the accumulator tile and store it (the output is contiguous NC*)."""
    axes = epilogue_axes(kernel)
    rows, cols = "[:, None]", "[None, :]"
    if transposed_epilogue(kernel):
        w("# the tile transposed, [BLOCK_N, BLOCK_M]: the store's lanes walk the output pixels")
        w("acc = tl.trans(acc)")
        rows, cols = cols, rows
    w(f"rb = batch.to(tl.int64){rows}")
    w(f"rc = (pid_g * cout_g + offs_n){cols}")
    w(f"rs = spatial{rows}")
    w(f"m_mask = m_in{rows}")
    w(f"n_mask = n_in{cols}")
    if conv_mean.means(kernel):  # each image's column sums added into the [N, C_out] output
        conv_mean.epilogue(w, kernel, axes, "rb", "rc", "S_q" if phases(kernel) else "S_out", "S_out")
        return
    # a channel reduction reduces across the tile's columns: the launcher gave it every channel
    tile_epilogue(w, kernel, axes, columns=axes[1] if channel_reduce.reduces_channels(kernel) else None)


def emit_launcher(w: Writer, kernel: Kernel, name: str, launcher: Launcher) -> None:
    d = _dims(kernel)
    x, wt = input_values(kernel)
    geometry = kernel.space["geometry"]
    launcher.begin(w)
    w.indent()
    launcher.contiguous(w, list(dict.fromkeys([x, wt] + [o.value for o in kernel.operands])))
    # launcher locals start with "_": graph values never do, so they cannot shadow an argument
    w(f"_stride, _padding, _output_padding, _dilation, _groups = {geometry}")
    w("# output size: (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1")
    w(f"_out = tuple(({x}.shape[2 + j] - 1) * _stride[j] - 2 * _padding[j]")
    w(f"             + _dilation[j] * ({wt}.shape[2 + j] - 1) + _output_padding[j] + 1 for j in range({d}))")
    w(f"_cout_g = {wt}.shape[1]")
    _layouts(w, kernel, x, wt, d)
    for out in kernel.outputs:  # the conv's own result and each fused op's that is read later
        shape = channel_reduce.output_shape(out, f"{x}.shape[0]", "_cout_g * _groups", ["*_out"])
        alloc = conv_mean.alloc(out, d, f"{x}.device", f"{x}.shape[0]", "_cout_g * _groups") \
            if conv_mean.means(kernel) else None
        w(f"{out.value} = {alloc or output_alloc(shape, out.dtype, f'{x}.device')}")
    w("_s_out = math.prod(_out)")
    if phases(kernel):
        w("# one program column per (group, stride phase); rows: the largest phase's pixels")
        w("_phases = math.prod(_stride)")
        w(f"_m = {x}.shape[0] * math.prod(-(-o // s) for o, s in zip(_out, _stride, strict=True))")
    else:
        w("_phases = 1")
        w(f"_m = {x}.shape[0] * _s_out")
    operands = []
    for o in kernel.operands:
        if o.value not in (x, wt) and o.value not in operands:
            operands.append(o.value)
    source = "_x" if channels_last(kernel) else x
    args = [source, "_w", *operands, *[o.value for o in kernel.outputs], "_m", f"{x}.shape[1]",
            f"{x}.shape[1] // _groups", "_cout_g", "_cout_g * _groups", f"math.prod({x}.shape[2:])",
            "_s_out", f"*{x}.shape[2:]", "*_out", f"*{wt}.shape[2:]", "*_stride", "*_padding",
            "*_dilation"]
    if live_taps(kernel):
        args += conv_transpose_loop.launch_args(w)
    consts = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages"]
    if grouped_programs(kernel):
        def grid(m: str, n: str) -> str:
            return f"(triton.cdiv(_m, {m}) * triton.cdiv(_cout_g, {n}) * _groups * _phases,)"
    else:
        def grid(m: str, n: str) -> str:
            return f"(triton.cdiv(_m, {m}), triton.cdiv(_cout_g, {n}), _groups * _phases)"
    kw = channel_reduce.launch_blocks(w, kernel, consts, "_cout_g", "_groups", grid)
    kw += conv_fma.launch_kwargs(kernel, f"{x}.shape[1] // _groups")
    for line in wrap_call(f"{name}[grid]", args + kw, "", w.depth):
        w(line)
    launcher.finish(w)
    w.dedent()
    w()


def _layouts(w: Writer, kernel: Kernel, x: str, wt: str, d: int) -> None:
    """The weight as (groups, C_out/groups, taps, C_in/groups), and the input channels last if so
    configured: both rounded to TF32 in the copy where the kernel's dots take TF32 values as cuDNN
    does (emit/conv_pack.py)."""
    w("# the weight as (groups, C_out/groups, taps, C_in/groups): a tile of it is contiguous along K,")
    w("# the order TF32 tensor-core dots read (emit/conv.py); one small copy per call")
    if conv.rounds_in_pack(kernel):
        w(f"_w = _tf32_pack({wt}.view(_groups, {wt}.shape[0] // _groups, -1))")
        w(f"_x = _tf32_pack({x})  # channels last, rounded to TF32 as cuDNN does")
        return
    w(f"_w = {wt}.view(_groups, {wt}.shape[0] // _groups, _cout_g, -1)")
    w("_w = _w.permute(0, 2, 3, 1).contiguous()")
    if channels_last(kernel):
        order = ", ".join(str(j) for j in range(2, d + 2))
        w(f"_x = {x}.permute(0, {order}, 1).contiguous()  # channels last")


def tuning_space(kernel: Kernel) -> list[dict]:
    cfg = kernel.config
    keys = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages"]
    if conv_fma.uses_fma(kernel):
        keys, candidates = conv_fma.tuning_candidates(kernel)
    elif kernel.space.get("dtype") in ("float16", "bfloat16"):
        candidates = ((128, 128, 64, 8, 3), (128, 64, 64, 4, 3), (64, 128, 64, 4, 3), (64, 64, 64, 4, 3),
                      (128, 64, 32, 4, 4), (64, 32, 32, 4, 3))
    else:
        candidates = ((128, 64, 32, 4, 3), (64, 64, 32, 4, 3), (128, 128, 32, 8, 3), (64, 32, 32, 4, 2),
                      (32, 64, 32, 4, 2), (128, 32, 16, 4, 3))
    if channel_reduce.reduces_channels(kernel):
        keys, candidates = channel_reduce.tuning_menu(kernel, keys, list(candidates))
    current = {k: cfg[k] for k in keys}
    menu = [current] + [dict(zip(keys, c, strict=True)) for c in candidates]
    return autotune_configs(menu, keys)
