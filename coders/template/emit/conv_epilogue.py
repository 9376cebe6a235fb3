"""The forward conv kernel's epilogue indices (emit/conv.py's gemm and direct forms, whatever their K
loop: taps, flat, fma, runs): each operand's and output's image, channel and flat spatial position,
and the tile's masks, for common.tile_epilogue (or emit/conv_pool.py's window loop)."""

from __future__ import annotations

from coders.template.emit import channel_reduce, conv
from coders.template.emit.common import Axis, Writer
from coders.template.ir import Kernel


def indices(w: Writer, kernel: Kernel) -> tuple[list[Axis], Axis | None]:
    """The epilogue's indices and masks; its axes, and the columns' axis where it reduces them."""
    axes = conv.epilogue_axes(kernel)
    w("# epilogue on the fp32 tile: rows are (image, pixel), columns output channels")
    w(f"n_pix = {' * '.join(f'out_{s}' for s in conv.spatial(kernel))}")
    w("img_e = img[:, None]")
    w("pix_e = (rows % n_pix)[:, None]")
    if conv.is_gemm(kernel):
        w("chan_e = (grp * COG + offs_n)[None, :]")
        w("n_mask = (offs_n < COG)[None, :]")
    else:
        w("chan_e = offs_n[None, :]")
        w("n_mask = chan_e < C_out")
    w("m_mask = (offs_m < M)[:, None]")
    # a channel reduction reduces across the tile's columns: the launcher gave it every channel
    return axes, axes[1] if channel_reduce.reduces_channels(kernel) else None
