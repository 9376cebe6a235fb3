"""The K loops of transposed convolutions (emit/conv_transpose.py: its rows, x_rows, w_cols and acc).

Every tap outside, the group's input channels inside in BLOCK_K chunks (one tl.dot each, or FMA
outer products, emit/conv_fma.py). The stride-phase form's program computes output pixels
o = r + stride * q of one phase r, for which a tap t is live or dead as a whole: an `if` skips the
dead taps. The plain gather form (config phases=False) masks them row by row.
"""

from __future__ import annotations

from coders.template.emit import conv, conv_fma
from coders.template.emit.common import Writer, ptr
from coders.template.ir import Kernel


def _channels_last(kernel: Kernel) -> bool:
    return conv.transpose_channels_last(kernel)


def _input_values(kernel: Kernel) -> tuple[str, str]:
    return kernel.space["input"], kernel.space["weight"]


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


def tap_loop(w: Writer, kernel: Kernel, d: int, phase: bool) -> None:
    """Every tap: the plain form masks the dead ones row by row, the phase form skips them with a
    scalar test."""
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
    pixel = "i0"
    for j in range(1, d):
        pixel = f"({pixel}) * in{j} + i{j}" if j > 1 else f"{pixel} * in{j} + i{j}"
    w(f"a_rows = x_rows + ({pixel}) * C_in" if _channels_last(kernel) else f"a_rows = x_rows + {pixel}")


def _fma_channels(w: Writer, kernel: Kernel) -> None:
    x, wt = _input_values(kernel)
    conv_fma.channel_loop(w, kernel, ptr(x), ptr(wt), "1" if _channels_last(kernel) else "S_in")


def _channel_block(w: Writer, kernel: Kernel) -> None:
    """acc += the chunk of channels from c0 on through tap `tap` (rows masked by hit)."""
    x, wt = _input_values(kernel)
    w("ci = c0 + offs_k")
    w("k_in = ci < cin_g")
    channel = "ci" if _channels_last(kernel) else "ci * S_in"
    w(f"a = tl.load({ptr(x)} + a_rows[:, None] + ({channel})[None, :],")
    w("            mask=hit[:, None] & k_in[None, :], other=0.0)")
    w("# a [BLOCK_N, BLOCK_K] tile along K (the layout TF32 tensor-core dots read), transposed in the dot")
    w(f"b = tl.load({ptr(wt)} + w_cols[:, None] + (tap * cin_g + ci)[None, :],")
    w("            mask=n_in[:, None] & k_in[None, :], other=0.0)")
    conv.dot(w, kernel)

