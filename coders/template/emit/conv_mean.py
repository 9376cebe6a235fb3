"""A conv kernel that means (or sums) its output over every spatial dim (fuse/pooled.py merges a global
average pool, `adaptive_avg_pool2d(x, 1)` or `x.mean([2, 3])`, into it).

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
    return kernel.kind == "conv" and "spatial_mean" in kernel.space


def split(kernel: Kernel) -> tuple[Op, list[Op]]:
    """(the reduction op, the ops before it); raises FusionError for a body the epilogue cannot run."""
    reductions = [op for op in kernel.body if op.op in REDUCTIONS]
    if len(reductions) != 1 or reductions[0].op not in MEAN_OPS or kernel.body[-1] is not reductions[0]:
        raise FusionError("a conv meaning its output over the pixels ends in one mean or sum")
    return reductions[0], kernel.body[:-1]


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


def epilogue(w: Writer, kernel: Kernel, axes: list[Axis]) -> None:
    """The ops before the reduction on the tile, then each image's column sums added into the output
    (emit/conv_epilogue.indices set img_e, chan_e, n_pix and the masks)."""
    reduction, before = split(kernel)
    body = tile_body(kernel, axes, None)
    body.emit(w, before)
    out = ptr(kernel.outputs[0].value)
    scale = " / n_pix" if reduction.op == "mean" else ""
    w(f"tile_v = tl.where(m_mask & n_mask, {body.arg(reduction.args[0])}, 0.0)")
    w("# the images this tile's rows span: one, two where it crosses a plane's end, more if BLOCK_M > n_pix")
    w("img_lo = (pid_m * BLOCK_M) // n_pix")
    w("img_hi = (tl.minimum(pid_m * BLOCK_M + BLOCK_M, M) - 1) // n_pix")
    w("for im in range(img_lo, img_hi + 1):")
    w("    part = tl.sum(tl.where(img_e == im, tile_v, 0.0), axis=0, keep_dims=True)")
    w(f"    tl.atomic_add({out} + im * C_out + chan_e, part{scale}, mask=n_mask)")


def alloc(out: Output, nd: int, device: str) -> str:
    """The output: fp32 zeros on every call (the programs add into it), [N, C_out] or keepdim's."""
    ones = ", 1" * nd if out.keepdim else ""
    return f"torch.zeros((n_batch, C_out{ones}), device={device}, dtype=torch.float32)"
