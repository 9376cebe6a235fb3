"""A conv kernel that means (or sums) its output over every spatial dim (fuse/pooled.py merges a global
average pool, `adaptive_avg_pool2d(x, 1)` or `x.mean([2, 3])`, into it): the forward conv's gemm form
(emit/conv.py) and the transposed conv's implicit GEMM over the output (emit/conv_transpose.py, either
form: its stride-phase rows are (image, phase pixel), an image's phase the same count of rows).

The tile is the gemm form's as it is (rows: flattened (image, pixel); columns: output channels; the K
loop and its precision unchanged). The epilogue ops before the reduction run on it, then each image's
rows of the tile are summed and added atomically into a zeroed fp32 [N, C_out] buffer (scaled by
1 / pixels for a mean first). A tile of BLOCK_M rows spans the images from its first row's to its
last's: one where it lies in a plane, two where it crosses a plane's end, more where BLOCK_M is over
the plane; the loop runs once per image it spans, each a masked column sum of the tile. Only
N x C_out values are written: the conv output is never stored. The launcher allocates the buffer
with torch.zeros on every call. Float atomics make the sum order (and its last bits) vary from run
to run; the verifier knows (StaticReport.uses_atomics).
"""

from __future__ import annotations

from coders.template.emit.common import REDUCTIONS, Axis, FusionError, Writer, ptr, tile_body
from coders.template.ir import Kernel, Op, Output

MEAN_OPS = ("mean", "sum")


def means(kernel: Kernel) -> bool:
    """A forward conv (emit/conv.py) or a transposed one (emit/conv_transpose.py) meaning its output."""
    return kernel.kind in ("conv", "conv_transpose") and "spatial_mean" in kernel.space


def final_mean(body: list[Op]) -> Op | None:
    """The body's one reduction where it is a mean or sum and the last op, else None: the only body the
    epilogue runs (fuse/pooled.refuse_mean asks it of the reduce kernel before merging)."""
    reductions = [op for op in body if op.op in REDUCTIONS]
    if len(reductions) != 1 or reductions[0].op not in MEAN_OPS or body[-1] is not reductions[0]:
        return None
    return reductions[0]


def split(kernel: Kernel) -> tuple[Op, list[Op]]:
    """(the reduction op, the ops before it); raises FusionError for a body the epilogue cannot run."""
    reduction = final_mean(kernel.body)
    if reduction is None:
        raise FusionError("a conv meaning its output over the pixels ends in one mean or sum")
    return reduction, kernel.body[:-1]


def check(kernel: Kernel) -> None:
    """Raise FusionError unless the kernel writes the per-(image, channel) result only."""
    if not means(kernel):
        return
    reduction, _ = split(kernel)
    if kernel.space.get("form", "gemm") != "gemm" or "pool" in kernel.space:
        raise FusionError("only the gemm form of a conv that does not pool means its output")
    if kernel.config.get("epilogue_t"):
        raise FusionError("a conv meaning its output over the pixels keeps its tile untransposed")
    if [(o.src, o.dims) for o in kernel.outputs] != [(reduction.out, [0, 1])]:
        raise FusionError("a conv meaning its output over the pixels writes the means only (another "
                          "step reads the conv output)")


def epilogue(w: Writer, kernel: Kernel, axes: list[Axis], image: str = "img_e", chan: str = "chan_e",
             per_image: str = "n_pix", n_pix: str = "n_pix") -> None:
    """The ops before the reduction on the tile, then each image's column sums added into the output.
    The kernel has set `image` and `chan` (each row's image, each column's channel), m_mask, n_mask,
    `per_image` (rows an image spans in the flat row index, M of them in all) and `n_pix` (pixels an
    image has): emit/conv_epilogue.indices for the forward conv (both n_pix); emit/conv_transpose.py's
    stride-phase form has S_q rows an image (its phase's pixels) of S_out."""
    reduction, before = split(kernel)
    body = tile_body(kernel, axes, None)
    body.emit(w, before)
    out = ptr(kernel.outputs[0].value)
    scale = f" / {n_pix}" if reduction.op == "mean" else ""
    w(f"tile_v = tl.where(m_mask & n_mask, {body.arg(reduction.args[0])}, 0.0)")
    w("# the images this tile's rows span: one, two where it crosses a plane's end, more if BLOCK_M > n_pix")
    w(f"img_lo = (pid_m * BLOCK_M) // {per_image}")
    w(f"img_hi = (tl.minimum(pid_m * BLOCK_M + BLOCK_M, M) - 1) // {per_image}")
    w("for im in range(img_lo, img_hi + 1):")
    w(f"    part = tl.sum(tl.where({image} == im, tile_v, 0.0), axis=0, keep_dims=True)")
    w(f"    tl.atomic_add({out} + im * C_out + {chan}, part{scale}, mask=n_mask)")


def alloc(out: Output, nd: int, device: str, batch: str = "n_batch", channels: str = "C_out") -> str:
    """The output: fp32 zeros on every call (the programs add into it), [N, C_out] or keepdim's."""
    ones = ", 1" * nd if out.keepdim else ""
    return f"torch.zeros(({batch}, {channels}{ones}), device={device}, dtype=torch.float32)"
