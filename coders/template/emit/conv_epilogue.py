"""The forward conv kernel's epilogue indices (emit/conv.py's gemm and direct forms, whatever their K
loop: taps, flat, fma, runs): each operand's and output's image, channel and flat spatial position,
and the tile's masks, for common.tile_epilogue (or emit/conv_pool.py's window loop)."""

from __future__ import annotations

from coders.template.emit import channel_reduce, conv, conv_pool
from coders.template.emit.common import Axis, Writer
from coders.template.ir import Kernel


def transposed(kernel: Kernel) -> bool:
    """Config "epilogue_t" (a probe variant, off in the port; emit/conv_transpose.py's too): the
    epilogue runs on the tile transposed, [BLOCK_N, BLOCK_M], so the store's lanes walk output pixels,
    consecutive in the NC* output (the forward conv writes no other layout: "channels_last" is its
    input's copy), where the [BLOCK_M, BLOCK_N] tile's store gives its lanes the channels, a plane
    apart. Not with a reduction over the channels (it reduces the tile's rows across its columns) nor
    a pool (its running tile, conv_pool.emit_windows, is [BLOCK_M, BLOCK_N] and built after these
    indices)."""
    return bool(kernel.config.get("epilogue_t")) and not channel_reduce.reduces_channels(kernel) \
        and not conv_pool.pools(kernel)


def split_rows(kernel: Kernel) -> bool:
    """Config "split_rows" (a probe variant, off in the port): the epilogue takes each row's image and
    pixel from one division of offs_m by n_pix. Triton recomputes the epilogue's indices in the store's
    layout, where a thread holds 32 rows of a 128 x 32 tile: from `img` and `rows % n_pix` that is the
    whole pixel chain (rows % M, a division per dim, % n_pix), five runtime divisions a row, about half
    of the epilogue's SASS for level-2 7_'s conv on sm_90 (Triton 3.9)."""
    return bool(kernel.config.get("split_rows"))


def indices(w: Writer, kernel: Kernel) -> tuple[list[Axis], Axis | None]:
    """The epilogue's indices and masks; its axes, and the columns' axis where it reduces them."""
    axes = conv.epilogue_axes(kernel)
    rows, cols = "[:, None]", "[None, :]"
    if transposed(kernel):
        w("# the tile transposed, [BLOCK_N, BLOCK_M]: the store's lanes walk the output pixels")
        w("acc = tl.trans(acc)")
        rows, cols = cols, rows
        w("# epilogue on the fp32 tile: rows are output channels, columns (image, pixel)")
    else:
        w("# epilogue on the fp32 tile: rows are (image, pixel), columns output channels")
    w(f"n_pix = {' * '.join(f'out_{s}' for s in conv.spatial(kernel))}")
    if split_rows(kernel):
        w("# one division a row: rows past M (masked) may give an image past the batch")
        w("img_q = offs_m // n_pix")
        w(f"img_e = img_q.to(tl.int64){rows}")
        w(f"pix_e = (offs_m - img_q * n_pix){rows}")
    else:
        w(f"img_e = img{rows}")
        w(f"pix_e = (rows % n_pix){rows}")
    if conv.is_gemm(kernel):
        w(f"chan_e = (grp * COG + offs_n){cols}")
        w(f"n_mask = (offs_n < COG){cols}")
    else:
        w(f"chan_e = offs_n{cols}")
        w("n_mask = chan_e < C_out")
    w(f"m_mask = (offs_m < M){rows}")
    # a channel reduction reduces across the tile's columns: the launcher gave it every channel
    return axes, axes[1] if channel_reduce.reduces_channels(kernel) else None
