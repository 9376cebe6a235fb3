"""The K loops of transposed convolutions (emit/conv_transpose.py: its rows, x_rows, w_cols and acc).

The stride-phase form's program computes output pixels o = r + stride * q of one phase r, for which
a tap t is live (reaches whole input pixels) or dead as a whole: live where t * dil = r + pad modulo
the stride. The default loop (config "live_taps") walks the phase's live taps only, with no test:
per spatial dim they are an arithmetic sequence t = tfirst + tst * u, u < nt (live_tap_counts), so the
k-th live tap is found by div/mod like a flat tap index, and the loop is one loop over (live tap,
channel block) pairs, as emit/conv.py's taps loop: Triton software-pipelines an innermost loop only,
so the next block's loads are in flight while a dot runs, across taps too. A phase no tap reaches
(kernel 1, stride 2) runs no step: its tile is the bias. The FMA loop (few channels, emit/conv_fma.py)
keeps its channel loop inside the live taps' loop.

Before it the loop was every tap, each tested with an `if` for the whole phase and its channel
blocks in a loop inside: with one block per tap (32 channels, BLOCK_K 32) each dot sat alone in an
`if` and waited for its loads (on an H100 KernelBench level-2 34_ConvTranspose3d ran its conv in
5.87 ms, cuDNN in 0.78). `live_taps: False` keeps that form as a probe variant. On an H100 the live-tap
loop ran 10 level-2 and 7 level-1 KernelBench transposed convs at 1.93x / 1.32x eager (geomean), the
`if` loop at 1.49x / 1.22x, at the same 64 x 64 x 32 tiles (34: 8.39 -> 4.54 ms; benchmarks/probes/
2026-11-26-conv/h100-transpose-live-*.json). The plain gather form (config phases=False) walks every
tap and masks the dead ones row by row.
"""

from __future__ import annotations

from coders.template.emit import conv, conv_fma
from coders.template.emit.common import Writer, ptr
from coders.template.ir import Kernel


def input_values(kernel: Kernel) -> tuple[str, str]:
    """The transposed conv's input and weight values (emit/conv_transpose.py reads them too)."""
    return kernel.space["input"], kernel.space["weight"]


def row_major(names: list[str], sizes: list[str]) -> str:
    """The row-major flat index of coordinates `names` over extents `sizes` (the first extent unused)."""
    index = names[0]
    for j in range(1, len(names)):
        index = f"({index}) * {sizes[j]} + {names[j]}" if j > 1 else f"{index} * {sizes[j]} + {names[j]}"
    return index


def split(w: Writer, flat: str, sizes: list[str], names: list[str], rest: str) -> None:
    """names[j] = the j-th coordinate of `flat` over `sizes` (last fastest)."""
    if len(names) == 1:
        w(f"{names[0]} = {flat}")
        return
    w(f"{rest} = {flat}")
    for j in range(len(names) - 1, 0, -1):
        w(f"{names[j]} = {rest} % {sizes[j]}")
        w(f"{rest} = {rest} // {sizes[j]}")
    w(f"{names[0]} = {rest}")


def live_tap_counts(w: Writer, d: int) -> None:
    """This phase's live taps per dim: those with t * dil = r + pad (mod st). With g = gcd(st, dil)
    there are none unless g divides r + pad, and then they are t = tfirst + tst * u for u < nt, with
    tst = st / g and tfirst = (r + pad) / g * tinv mod tst, tinv the inverse of dil / g mod tst (the
    launcher passes tst and tinv). r + pad >= 0: // and % need no care for negatives here."""
    for j in range(d):
        w(f"gcd{j} = st{j} // tst{j}")
        w(f"tfirst{j} = ((r{j} + pad{j}) // gcd{j} * tinv{j}) % tst{j}")
        w(f"nt{j} = tl.where((r{j} + pad{j}) % gcd{j} == 0, (ks{j} - tfirst{j} + tst{j} - 1) // tst{j}, 0)")
    w(f"n_live = {' * '.join(f'nt{j}' for j in range(d))}  # 0: no tap reaches the phase, the tile is bias")


def _live_tap(w: Writer, d: int, live: str) -> None:
    """The live tap numbered `live`: its flat index `tap`, each row's input pixel and mask `hit`."""
    split(w, live, [f"nt{j}" for j in range(d)], [f"u{j}" for j in range(d)], "rest_u")
    for j in range(d):
        w(f"t{j} = tfirst{j} + tst{j} * u{j}")
    w(f"tap = {row_major([f't{j}' for j in range(d)], [f'ks{j}' for j in range(d)])}")
    w("# i = q + (r + pad - t * dil) / stride, an exact division for a live tap")
    w("hit = m_in")
    for j in range(d):
        w(f"i{j} = q{j} + (r{j} + pad{j} - t{j} * dil{j}) // st{j}")
        w(f"hit = hit & (i{j} >= 0) & (i{j} < in{j})")


def live_tap_loop(w: Writer, kernel: Kernel, d: int) -> None:
    """The K loop over the phase's live taps x channel blocks as one loop, as emit/conv.py's taps loop:
    Triton pipelines an innermost loop only. The FMA loop keeps its channel loop inside the taps'."""
    live_tap_counts(w, d)
    if conv_fma.uses_fma(kernel):
        w("for live in range(0, n_live):")
        w.indent()
        _live_tap(w, d, "live")
        _a_rows(w, kernel, d)
        _fma_channels(w, kernel)
        w.dedent()
        return
    w("c_blocks = tl.cdiv(cin_g, BLOCK_K)")
    w("# live taps outside, channel blocks inside, as one loop over the pairs: the next tap's loads")
    w("# stay in flight across the tap boundary")
    w("for step in range(0, n_live * c_blocks):")
    w.indent()
    w("c0 = (step % c_blocks) * BLOCK_K  # scalars: the tap's arithmetic is per program, not per element")
    _live_tap(w, d, "step // c_blocks")
    _a_rows(w, kernel, d)
    _channel_block(w, kernel)
    w.dedent()


def tap_loop(w: Writer, kernel: Kernel, d: int, phase: bool) -> None:
    """Every tap: the plain form masks the dead ones row by row, the `if` form (live_taps=False)
    skips them with a scalar test."""
    w("for tap in range(0, n_taps):")
    w.indent()
    split(w, "tap", [f"ks{j}" for j in range(d)], [f"t{j}" for j in range(d)], "rest_t")
    if phase:
        _phase_tap(w, kernel, d)
    else:
        _plain_tap(w, d)
        _channel_loop(w, kernel, d)
    w.dedent()


def _plain_tap(w: Writer, d: int) -> None:
    w("# the input pixel each row reads through this tap: i = (o + pad - t * dil) / stride, where")
    w("# whole and inside the input (p >= 0 is tested first: no reliance on how // rounds negatives)")
    w("hit = m_in")
    for j in range(d):
        w(f"p{j} = o{j} + pad{j} - t{j} * dil{j}")
        w(f"i{j} = p{j} // st{j}")
        w(f"hit = hit & (p{j} >= 0) & (i{j} * st{j} == p{j}) & (i{j} < in{j})")


def _phase_tap(w: Writer, kernel: Kernel, d: int) -> None:
    w("# the tap is live for the whole phase when r + pad - t * dil is a multiple of the stride")
    w("# (true whichever way % rounds negatives); then i = q + (r + pad - t * dil) / stride")
    for j in range(d):
        w(f"e{j} = r{j} + pad{j} - t{j} * dil{j}")
    w(f"if {' & '.join(f'(e{j} % st{j} == 0)' for j in range(d))}:")
    w.indent()
    w("hit = m_in")
    for j in range(d):
        w(f"i{j} = q{j} + e{j} // st{j}  # an exact division")
        w(f"hit = hit & (i{j} >= 0) & (i{j} < in{j})")
    _channel_loop(w, kernel, d)
    w.dedent()


def _channel_loop(w: Writer, kernel: Kernel, d: int) -> None:
    """acc += x[rows' input pixels, channel chunk] @ w[channel chunk, this tap, columns]."""
    _a_rows(w, kernel, d)
    if conv_fma.uses_fma(kernel):  # few input channels: outer products, not dots (emit/conv_fma.py)
        _fma_channels(w, kernel)
        return
    w("for c0 in range(0, cin_g, BLOCK_K):")
    w.indent()
    _channel_block(w, kernel)
    w.dedent()


def _a_rows(w: Writer, kernel: Kernel, d: int) -> None:
    """Each row's input pixel (i<j>) at the group's first channel."""
    pixel = row_major([f"i{j}" for j in range(d)], [f"in{j}" for j in range(d)])
    channels_last = conv.transpose_channels_last(kernel)
    w(f"a_rows = x_rows + ({pixel}) * C_in" if channels_last else f"a_rows = x_rows + {pixel}")


def _fma_channels(w: Writer, kernel: Kernel) -> None:
    x, wt = input_values(kernel)
    conv_fma.channel_loop(w, kernel, ptr(x), ptr(wt), "1" if conv.transpose_channels_last(kernel) else "S_in")


def _channel_block(w: Writer, kernel: Kernel) -> None:
    """acc += the chunk of channels from c0 on through tap `tap` (rows masked by hit)."""
    x, wt = input_values(kernel)
    w("ci = c0 + offs_k")
    w("k_in = ci < cin_g")
    channel = "ci" if conv.transpose_channels_last(kernel) else "ci * S_in"
    w(f"a = tl.load({ptr(x)} + a_rows[:, None] + ({channel})[None, :],")
    w("            mask=hit[:, None] & k_in[None, :], other=0.0)")
    w("# a [BLOCK_N, BLOCK_K] tile along K (the layout TF32 tensor-core dots read), transposed in the dot")
    w(f"b = tl.load({ptr(wt)} + w_cols[:, None] + (tap * cin_g + ci)[None, :],")
    w("            mask=n_in[:, None] & k_in[None, :], other=0.0)")
    conv.dot(w, kernel)


def launch_args(w: Writer) -> list[str]:
    """The launcher's lines for the live-tap loop's kernel arguments (tst<j>, tinv<j>: live_tap_counts);
    `_stride` and `_dilation` are the launcher's."""
    w("# the live taps' step per dim, st / gcd(st, dil), and the inverse of dil / gcd modulo it")
    w("_gcd = [math.gcd(s, d) for s, d in zip(_stride, _dilation, strict=True)]")
    w("_tstep = [s // g for s, g in zip(_stride, _gcd, strict=True)]")
    w("_tinv = [pow(d // g, -1, t) for d, g, t in zip(_dilation, _gcd, _tstep, strict=True)]")
    return ["*_tstep", "*_tinv"]
