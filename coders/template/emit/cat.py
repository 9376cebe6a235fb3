"""Concatenation along one dim (torch.cat): each input is copied into its slice of the output by
one launch of a small copy kernel. Seen from the cat dim, an input is `outer` rows of
`size_i * inner` contiguous elements and the output `outer` rows of `sum(size_i) * inner`, the
input's slice starting `offset` elements into each row (DenseNet, GoogleNet, SqueezeNet, UNet)."""

from __future__ import annotations

from coders.template.emit.common import Writer
from coders.template.emit.launch import Launcher, kernel_header, output_alloc
from coders.template.ir import Kernel


def emit_kernel(w: Writer, kernel: Kernel, name: str) -> None:
    kernel_header(w, kernel, name, ["src_ptr", "out_ptr", "n", "src_row", "out_row", "offset"], ["BLOCK"])
    w.indent()
    w("offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)")
    w("mask = offs < n")
    w("x = tl.load(src_ptr + offs, mask=mask)")
    w("# row r of the input lands in row r of the output, `offset` elements in")
    w("dst = (offs // src_row) * out_row + offset + offs % src_row")
    w("tl.store(out_ptr + dst, x.to(out_ptr.dtype.element_ty), mask=mask)")
    w.dedent()
    w()


def emit_launcher(w: Writer, kernel: Kernel, name: str, launcher: Launcher) -> None:
    d = kernel.space["dim"]
    parts = [o.value for o in kernel.operands]
    out = kernel.outputs[0].value
    cfg = kernel.config
    launcher.begin(w)
    w.indent()
    launcher.contiguous(w)
    w(f"shape = list({parts[0]}.shape)")
    w(f"shape[{d}] = {' + '.join(f'{p}.shape[{d}]' for p in parts)}")
    w(f"{out} = {output_alloc('shape', kernel.outputs[0].dtype, launcher.device())}")
    w(f"inner = math.prod(shape[{d + 1}:])")
    w(f"out_row = shape[{d}] * inner")
    w("offset = 0")
    for part in parts:
        w(f"n, src_row = {part}.numel(), {part}.shape[{d}] * inner")
        w("if n:")
        w(f"    {name}[(triton.cdiv(n, {cfg['BLOCK']}),)]({part}, {out}, n, src_row, out_row, offset, "
          f"BLOCK={cfg['BLOCK']}, num_warps={cfg['num_warps']})")
        w("offset += src_row")
    launcher.finish(w)
    w.dedent()
    w()


def tuning_space(kernel: Kernel) -> list[dict]:
    return [{"BLOCK": kernel.config["BLOCK"], "num_warps": kernel.config["num_warps"]}]
