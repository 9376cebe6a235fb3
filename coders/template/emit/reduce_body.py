"""A reduce kernel's SSA body over its layout: how operands load, how a per-row divisor divides and
how outputs store; the probe key `fast_log`'s log."""

from __future__ import annotations

from coders.template import ops as pw
from coders.template.emit.common import BodyEmitter, Writer, ptr, var
from coders.template.emit.reduce_layout import Layout
from coders.template.ir import Kernel, Op


def _loader(kernel: Kernel, lay: Layout):
    """Operand loads in fp32 (integers as they are), masked where the layout masks their dims."""
    def load(op: Op, operand) -> str:
        if operand.scalar:
            return f"{var(operand.value)} * 1.0" if not operand.integer else var(operand.value)
        where = lay.address(operand.dims, operand.value)
        mask = lay.mask(operand.dims, operand.value)
        if where == "0":
            text = f"tl.load({ptr(operand.value)})"
        elif mask:
            text = f"tl.load({ptr(operand.value)} + {where}, mask={mask}, other=0)"
        else:
            text = f"tl.load({ptr(operand.value)} + {where})"
        return text if operand.integer else f"{text}.to(tl.float32)"
    return load


def body_of(kernel: Kernel, lay: Layout, varies: dict[str, bool]) -> BodyEmitter:
    """The kernel's body emitter: loads through the layout, reductions over the reduced dims."""
    body = BodyEmitter(kernel, _loader(kernel, lay), special={"ridx": lambda op: lay.ridx()},
                       reduce=lay.reduce)

    def divide(op: Op) -> str:
        a, b = (body.arg(x) for x in op.args)
        by_row_value = isinstance(op.args[1], str) and not varies.get(op.args[1], True)
        if by_row_value and varies.get(op.args[0]) and not op.attrs.get("rounding_mode"):
            # one reciprocal per row and a multiply per value (softmax's e / sum): fp32 `/` is a
            # division sequence per value (softmax_channels_fp16, H200: 80% -> 85% of copy bandwidth)
            return f"{a} * (1.0 / {b})"
        return pw.expr("div", [a, b], op.attrs)

    body.special["div"] = divide
    if fast_log(kernel):
        body.special["log"] = lambda op: f"_fast_log({body.arg(op.args[0])})"
    return body


def fast_log(kernel: Kernel) -> bool:
    """The probe key `fast_log` (off in every port): the body's logs as lg2.approx times ln 2."""
    return kernel.kind == "reduce" and bool(kernel.config.get("fast_log"))


def emit_fast_log(w: Writer) -> None:
    """_fast_log(x): libdevice's fast_logf, one MUFU.LG2 and a multiply on sm_90 (at most 3 ulp off
    outside [0.5, 2], 2**-21.4 absolute inside; a subnormal x flushes to 0 and gives -inf), where tl.log
    is libdevice logf's ~25 instructions, so a reduction of two logs a value (KernelBench 98_KLDivLoss)
    is bound by issue rather than memory. The interpreter has no libdevice: it takes tl.log."""
    w()
    w('_FAST_LOG = tl.constexpr(os.environ.get("TRITON_INTERPRET", "0") != "1")')
    w()
    w()
    w("@triton.jit")
    w("def _fast_log(x):")
    w("    if _FAST_LOG:")
    w("        return libdevice.fast_logf(x)")
    w("    else:")
    w("        return tl.log(x)")
    w()


def store(w: Writer, lay: Layout, out) -> None:
    """Write one output at its place in the layout."""
    where = lay.address(out.dims, out.value)
    mask = lay.mask(out.dims, out.value)
    value = f"{var(out.src)}.to({ptr(out.value)}.dtype.element_ty)"
    target = f"{ptr(out.value)} + {where}" if where != "0" else ptr(out.value)
    w(f"tl.store({target}, {value}" + (f", mask={mask})" if mask else ")"))
