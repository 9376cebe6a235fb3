"""Pieces every kernel emitter shares: an indenting writer, operand addressing, the SSA body."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from coders.template import ops as pw
from coders.template.ir import Kernel, Op, Operand

SMEM_BYTES = 227 * 1024  # the most shared memory one program may use on an H100 / H200


def pow2_at_least(n: int) -> int:
    """The power of two at or above n (1 for n <= 1)."""
    return 1 << (max(n, 1) - 1).bit_length()


def pow2_at_least_16(n: int) -> int:
    """The power of two at or above n, at least 16 (tl.dot's smallest block)."""
    return max(16, pow2_at_least(n))


REDUCTIONS = ("sum", "max", "min", "mean")
# each reduction's value for masked-out elements, and the tl function combining a block
IDENTITY = {"sum": "0.0", "mean": "0.0", "max": 'float("-inf")', "min": 'float("inf")'}
COMBINE = {"sum": "tl.sum", "mean": "tl.sum", "max": "tl.max", "min": "tl.min"}


def mean_divisor(op: Op, size: str) -> str:
    """What a block's sum is divided by to make a mean over `size` elements (var's correction)."""
    if op.op != "mean":
        return ""
    correction = op.attrs.get("correction", 0)
    return f" / ({size} - {correction!r})" if correction else f" / {size}"

# names the kernel templates use for themselves; body values that collide get a trailing "_"
RESERVED = {"pid", "pid_m", "pid_n", "pid_b", "offs", "mask", "row", "cols", "start", "n", "n_rows",
            "n_cols", "n_red", "n_inner", "n_outer", "rows", "inner", "outer", "acc", "a", "b", "k",
            "M", "N", "K", "tl", "triton", "torch", "math", "BLOCK", "BLOCK_M", "BLOCK_N",
            "BLOCK_K", "GROUP_M", "ONE_PASS", "tile", "in_range", "r_mask", "i_mask", "col_mask",
            "offs_m", "offs_n", "offs_k", "rm", "rn", "out", "q", "v", "min", "max", "sum", "float",
            "int", "range", "len", "abs", "pow", "input", "G", "CPG", "HW", "block", "BY_CHANNEL",
            "chan", "chunk", "n_chunks", "row_mask", "ROWS"}

# the transposed-conv kernel's sizes and epilogue indices (emit/conv_transpose.py)
RESERVED |= {"rb", "rc", "rs", "m_mask", "n_mask", "batch", "spatial", "C_in", "C_out", "cin_g", "cout_g",
             "S_in", "S_out"}
# the scan and arg-reduction kernels' own names (emit/scan.py)
RESERVED |= {"lane", "carry", "at", "src", "pos", "in_walk", "out_mask", "v", "scanned", "best", "best_at",
             "take", "seen", "is_nan", "any_nan", "top", "hit", "index", "n_walk", "n_inner_blocks"}
# a split reduction's slice and workspace (emit/reduce_split.py, emit/reduce_norm_split.py)
RESERVED |= {"split", "lo", "hi", "sl", "sl_mask", "sl_count", "slice_ids", "slice0", "slice_mask", "back"}
# the row and column of an element in a triu / tril (pointwise kernels)
RESERVED |= {"tri_row", "tri_col", "tri_rows", "tri_cols"}
# the conv kernel's own names (emit/conv.py)
RESERVED |= {"a_mask", "chan", "chan_e", "chan_o", "grp", "img", "img_e", "inside", "k_in", "k_off", "n_pix",
             "pix_e", "rest", "rest_k", "w_cols", "x_cols", "x_rows", "x_start", "num_pid_n", "img_q"}
# a pooling conv's (emit/conv_pool.py)
RESERVED |= {"pool_acc", "win", "rest_w", "po_l", "po_d", "po_h", "po_w", "o_l", "o_d", "o_h", "o_w"}


class Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def __call__(self, line: str = "") -> None:
        self.lines.append(("    " * self.depth + line) if line else "")

    def indent(self) -> Writer:
        self.depth += 1
        return self

    def dedent(self) -> None:
        self.depth -= 1

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def var(name: str) -> str:
    """A body value's variable name inside a kernel."""
    return f"{name}_" if name in RESERVED else name


def ptr(value: str) -> str:
    return f"{value}_ptr"


class FusionError(ValueError):
    """An operand whose broadcast pattern a kernel kind cannot address."""


@dataclass
class Axis:
    """A group of adjacent space dims that one index variable walks."""
    dims: list[int]
    index: str  # Triton expression of this axis' index, already shaped for broadcasting
    size: str  # kernel variable holding the axis length
    mask: str | None  # in-range test, None when every index is in range


def covered_axes(axes: list[Axis], dims: list[int], what: str) -> list[Axis]:
    """Axes an operand spans; it must span each axis completely or not at all."""
    chosen = []
    for axis in axes:
        inside = [d for d in axis.dims if d in dims]
        if inside and len(inside) != len(axis.dims):
            raise FusionError(f"{what} spans part of an axis")
        if axis.dims and inside:
            chosen.append(axis)
    spanned = {d for a in chosen for d in a.dims}
    if set(dims) - spanned:
        raise FusionError(f"{what} spans dims the kernel does not iterate")
    return chosen


def address(axes: list[Axis], dims: list[int], what: str) -> str:
    """Offset of an element of a contiguous tensor spanning `dims`: sum of index * inner sizes."""
    chosen = covered_axes(axes, dims, what)
    terms = []
    for i, axis in enumerate(chosen):
        inner = [a.size for a in chosen[i + 1:]]
        terms.append(" * ".join([axis.index, *inner]))
    return " + ".join(terms) if terms else "0"


def mask_of(axes: list[Axis], dims: list[int], what: str) -> str | None:
    masks = dict.fromkeys(a.mask for a in covered_axes(axes, dims, what) if a.mask)  # each once
    return " & ".join(masks) if masks else None


def check_operands(kernel: Kernel, axes: list[Axis]) -> None:
    for o in kernel.operands:
        covered_axes(axes, o.dims, f"operand {o.value}")
    for out in kernel.outputs:
        covered_axes(axes, out.dims, f"output {out.value}")


# --------------------------------------------------------------------------------------------------
# the body
# --------------------------------------------------------------------------------------------------

Load = Callable[[Op, Operand], str]
Special = Callable[[Op], str]


class BodyEmitter:
    """Writes SSA body ops as Triton statements, tracking which values are int/bool."""

    def __init__(self, kernel: Kernel, load: Load, special: dict[str, Special] | None = None,
                 reduce: Callable[[Op, str], str] | None = None) -> None:
        self.kernel = kernel
        self.load = load
        self.special = special or {}
        self.reduce = reduce
        self.types: dict[str, str] = {}  # body name -> "f" | "b" | "i"
        self.alias: dict[str, str] = {}  # body name -> kernel variable (the matmul accumulator)

    def type_of(self, op: Op) -> str:
        if op.op == "load":
            return "i" if self.kernel.operands[op.args[0]].integer else "f"
        if op.op == "ridx":
            return "i"
        if op.op in pw.BOOL_OPS or op.op in pw.COMPARISONS:
            return "b"
        return "f"

    def arg(self, value, as_float: bool = True) -> str:
        if isinstance(value, str):
            if value == "None":
                return "None"
            name = self.alias.get(value) or var(value)
            if as_float and self.types.get(value) in ("b", "i"):
                return f"{name}.to(tl.float32)"
            return name
        return pw.literal(value)

    def statement(self, op: Op) -> str:
        if op.op == "load":
            rhs = self.load(op, self.kernel.operands[op.args[0]])
        elif op.op in self.special:
            rhs = self.special[op.op](op)
        elif op.op in REDUCTIONS:
            rhs = self.reduce(op, self.arg(op.args[0]))
        else:
            keep_type = op.op in pw.COMPARISONS or op.op in ("where", "logical_not", "cast_bool")
            args = []
            for i, a in enumerate(op.args):
                # comparisons keep integer operands exact; where's condition stays a mask
                as_float = not (keep_type and (op.op != "where" or i == 0))
                if op.op == "where" and i == 0:
                    as_float = False
                args.append(self.arg(a, as_float=as_float))
            if op.op == "where" and isinstance(op.args[0], str) and self.types.get(op.args[0]) == "f":
                args[0] = f"{args[0]} != 0.0"
            rhs = pw.expr(op.op, args, op.attrs)
        self.types[op.out] = self.type_of(op)
        return f"{var(op.out)} = {rhs}"

    def store_value(self, src: str) -> str:
        return self.alias.get(src) or var(src)

    def emit(self, w: Writer, ops: list[Op]) -> None:
        for op in ops:
            if op.out in self.alias:
                self.types[op.out] = "f"
                continue
            w(self.statement(op))


def triangles(body: BodyEmitter, row: str, col: str) -> dict[str, Special]:
    """torch.triu / torch.tril of a value, given its element's row and column (of the last two dims):
    the elements off the triangle become 0."""

    def emit(op: Op) -> str:
        keep = ">=" if op.op == "triu" else "<="
        return f"tl.where({col} - {row} {keep} {int(op.attrs['diagonal'])}, {body.arg(op.args[0])}, 0.0)"

    return {"triu": emit, "tril": emit}


def needed(body: list[Op], targets: list[str], stop: set[str] | None = None) -> list[Op]:
    """Ops `targets` depend on, in body order, not descending past names in `stop`."""
    index = {op.out: op for op in body}
    want: set[str] = set()
    todo = list(targets)
    while todo:
        name = todo.pop()
        if name in want or name not in index or (stop and name in stop):
            continue
        want.add(name)
        todo.extend(a for a in index[name].args if isinstance(a, str))
    return [op for op in body if op.out in want]


def axis_loader(axes: list[Axis]) -> Callable[[Op, Operand], str]:
    """The BodyEmitter load of a kernel whose operands are addressed by `axes`: a scalar as a
    literal, a tensor element as an fp32 load (integers kept), masked where an axis is."""

    def load(op: Op, operand: Operand) -> str:
        if operand.scalar:
            return f"{var(operand.value)} * 1.0" if not operand.integer else var(operand.value)
        where = address(axes, operand.dims, operand.value)
        mask = mask_of(axes, operand.dims, operand.value)
        if where == "0":
            text = f"tl.load({ptr(operand.value)})"
        else:
            text = f"tl.load({ptr(operand.value)} + {where}" + (f", mask={mask}, other=0)" if mask else ")")
        return text if operand.integer else f"{text}.to(tl.float32)"

    return load


def tile_epilogue(w: Writer, kernel: Kernel, axes: list[Axis], row: str | None = None,
                  col: str | None = None, columns: Axis | None = None) -> None:
    """The fused ops on a GEMM-like kernel's fp32 accumulator tile `acc`, then the stores, masked by
    `m_mask & n_mask`: matmul, conv and transposed-conv kernels set up their tile's index variables
    (`axes`) and masks, then share this. With `columns` (the axis of the tile's columns, all of them
    in this program), the body's reductions reduce the tile's rows across it: each row's value is a
    [BLOCK_M, 1] column that broadcasts against the tile, and an output without the axis's dims is
    stored one value per row."""

    body = tile_body(kernel, axes, columns)
    if row and col:  # the tile's element indices, for triu / tril in the epilogue
        body.special.update(triangles(body, row, col))
    body.emit(w, kernel.body)
    store_outputs(w, kernel, axes, body, columns)


def tile_body(kernel: Kernel, axes: list[Axis], columns: Axis | None) -> BodyEmitter:
    """The emitter of a body on the accumulator tile `acc`, its reductions across `columns` if given
    (tile_epilogue's, and emit/conv_pool.py's around its window loop)."""
    body = BodyEmitter(kernel, axis_loader(axes), reduce=column_reduction(columns) if columns else None)
    body.alias = {op.out: "acc" for op in kernel.body if op.op == "acc"}
    return body


def store_outputs(w: Writer, kernel: Kernel, axes: list[Axis], body: BodyEmitter,
                  columns: Axis | None) -> None:
    """tile_epilogue's stores (emit/conv_pool.py's too)."""
    for out in kernel.outputs:
        where = address(axes, out.dims, out.value)
        reduced = columns is not None and not set(columns.dims) & set(out.dims)
        mask = mask_of(axes, out.dims, out.value) if reduced else "m_mask & n_mask"
        value = f"{body.store_value(out.src)}.to({ptr(out.value)}.dtype.element_ty)"
        w(f"tl.store({ptr(out.value)} + {where}, {value}" + (f", mask={mask})" if mask else ")"))


def column_reduction(columns: Axis) -> Callable[[Op, str], str]:
    """A BodyEmitter reduce over a tile's columns: the columns past the axis's size (masked by
    its mask) hold the reduction's identity, so they leave the result as it is."""

    def reduce(op: Op, arg: str) -> str:
        kind = op.op
        masked = f"tl.where({columns.mask}, {arg}, {IDENTITY[kind]})"
        return f"{COMBINE[kind]}({masked}, axis=1, keep_dims=True){mean_divisor(op, columns.size)}"

    return reduce
