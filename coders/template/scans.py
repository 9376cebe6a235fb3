"""Scans and arg-reductions in the template coder: ops that walk one dim of their input.

    cumsum / cumprod (x, dim)          a "scan" node: every prefix of the dim combined
    argmax / argmin (x, dim, keepdim)  an "argreduce" node: the first index of the best value, int64

KernelBench spells two scan variants through other ops; both become flags of one scan node, so
nothing is flipped or shifted in memory:

    reverse     torch.cumsum(x.flip(d), d).flip(d): the sums of every suffix. `flip` is traced as a
                "flip" node that only a scan may absorb; a flip of a flip is no flip.
    exclusive   torch.cat((zeros_like(<x's slice 0 along d>), torch.cumsum(x.narrow(d, 0, n - 1), d)), d):
                output k holds the sum of x[:k] (0 at k = 0).

Each node lowers to one kernel (emit/scan.py) whose body is the loads, the elementwise ops fused
before the walk (a prologue: masked cumsum's `x * mask`) and the walk op itself, last.
"""

from __future__ import annotations

from typing import Any

from coders.template.ir import Kernel, Op, Operand, Output
from coders.template.trace import GNode, Graph, Ref, unsupported

SCANS = ("cumsum", "cumprod")
ARG_REDUCTIONS = ("argmax", "argmin")
WALK_OPS = SCANS + ARG_REDUCTIONS
WALK_KINDS = ("scan", "argreduce")

# a row kernel walks BLOCK positions per chunk; a column kernel BLOCK_M positions of BLOCK_N columns
ROW_CONFIG = {"BLOCK": 1024, "num_warps": 4}
COLUMN_CONFIG = {"BLOCK_M": 32, "BLOCK_N": 64, "num_warps": 4}


def _dim(nz: Any, x: Ref, dim: Any, op: str) -> int:
    rank = len(nz.shape(x))
    if rank == 0:
        raise unsupported(f"{op} of a 0-d tensor")
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise unsupported(f"{op} over {'all elements (dim=None)' if dim is None else 'a computed dim'}")
    return dim % rank


def _float_input(nz: Any, x: Ref, op: str) -> None:
    # the kernels compute in fp32: integer inputs (whose cumsum is int64) are not covered
    if not nz.meta(x).dtype.is_floating_point:
        raise unsupported(f"{op} of a {nz.meta(x).dtype} tensor")


# --------------------------------------------------------------------------------------------------
# tracing (called from coders/template/trace/registry.py's handler table)
# --------------------------------------------------------------------------------------------------

def trace_scan(nz: Any, name: str, op: str, b: dict, result: Any) -> Ref:
    x = b["input"]
    if b.get("dtype") is not None:
        raise unsupported(f"{op} with dtype=")
    _float_input(nz, x, op)
    d = _dim(nz, x, b.get("dim"), op)
    src = nz.meta(x)
    if src.kind == "flip" and src.attrs["dims"] == [d]:
        # cumsum(x.flip(d), d) is the suffix scan of x, flipped: scan x from its end, keep the flip
        # (a flip around the whole expression cancels it)
        suffix = nz.add(f"{name}_suffix", "scan", op, [src.args[0]],
                        {"dim": d, "reverse": True, "exclusive": False}, like=result)
        return nz.add(name, "flip", "flip", [suffix], {"dims": [d]}, like=result)
    return nz.add(name, "scan", op, [x], {"dim": d, "reverse": False, "exclusive": False}, like=result)


def trace_flip(nz: Any, name: str, op: str, b: dict, result: Any) -> Ref:
    x = b["input"]
    rank = len(nz.shape(x))
    dims = b.get("dims")
    dims = list(dims) if isinstance(dims, list | tuple) else [dims]
    if not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise unsupported("flip over a computed dim")
    dims = sorted({d % rank for d in dims})
    src = nz.meta(x)
    if src.kind == "flip" and src.attrs["dims"] == dims:
        return src.args[0]  # flipped twice
    return nz.add(name, "flip", "flip", [x], {"dims": dims}, like=result)


def trace_zeros_like(nz: Any, name: str, op: str, b: dict, result: Any) -> Ref:
    """A zero tensor shaped like another: an exclusive scan's leading zeros, or else a tensor the
    program allocates (lower/program.py); its source is a ref, not an operand."""
    return nz.add(name, "zeros", "zeros_like", [], {"refs": [b["input"]]}, like=result)


def trace_exclusive_scan(nz: Any, name: str, b: dict, result: Any) -> Ref | None:
    """The exclusive cumsum a `cat` of leading zeros and a shifted cumsum spells, or None for any
    other cat (a plain concatenation: trace/walks.py's cat node)."""
    tensors, dim = b.get("tensors"), b.get("dim", 0)
    x = _exclusive_scan_input(nz, tensors, dim, result)
    if x is None:
        return None
    return nz.add(name, "scan", "cumsum", [x], {"dim": dim % len(result.shape), "reverse": False,
                                                "exclusive": True}, like=result)


def _exclusive_scan_input(nz: Any, tensors: Any, dim: Any, result: Any) -> Ref | None:
    """x, when `cat((zeros, cumsum(x.narrow(d, 0, n - 1), d)), d)` is x's exclusive cumsum along d."""
    if not isinstance(tensors, list | tuple) or len(tensors) != 2 or not isinstance(dim, int):
        return None
    zeros, scan = (nz.meta(t) for t in tensors)
    if zeros is None or scan is None or zeros.kind != "zeros" or scan.kind != "scan":
        return None
    d = dim % len(result.shape)
    if scan.op != "cumsum" or scan.attrs != {"dim": d, "reverse": False, "exclusive": False}:
        return None
    narrow = nz.meta(scan.args[0])
    picked = narrow.attrs.get("narrow") if narrow is not None else None
    if not picked or picked["dim"] % len(result.shape) != d or picked["start"] != 0:
        return None
    x = Ref(picked["input"])
    shape = tuple(nz.shape(x))
    # the slice drops the last position: the traced lengths say so (n - 1 of n)
    if shape != tuple(result.shape) or zeros.shape[d] != 1 or narrow.shape[d] != shape[d] - 1 or \
            zeros.dtype != scan.dtype:
        return None
    return x


def trace_argreduce(nz: Any, name: str, op: str, b: dict, result: Any) -> Ref:
    x = b["input"]
    _float_input(nz, x, op)
    d = _dim(nz, x, b.get("dim"), op)
    return nz.add(name, "argreduce", op, [x], {"dim": d, "keepdim": bool(b.get("keepdim", False))},
                  like=result)


def trace_indices(nz: Any, name: str, op: str, x: Ref, d: int, keepdim: bool, result: Any) -> Ref:
    """The indices of torch.max / torch.min over a dim: an arg-reduction beside the values."""
    _float_input(nz, x, op)
    return nz.add(name, "argreduce", op, [x], {"dim": d, "keepdim": keepdim}, like=result)


# --------------------------------------------------------------------------------------------------
# lowering (called from coders/template/lower/program.py)
# --------------------------------------------------------------------------------------------------

def lower_walk(graph: Graph, node: GNode) -> Kernel:
    """One scan or arg-reduction kernel: load the input, walk it."""
    x = node.args[0].name
    shape = list(graph.node(x).shape)
    rank = len(shape)
    d = node.attrs["dim"]
    full = list(range(rank))
    integer = not graph.node(x).dtype.is_floating_point
    operands = [Operand(x, full, integer=integer)]
    body = [Op("x", "load", [0]), Op(node.name, node.op, ["x"])]
    space: dict[str, Any] = {"input": x, "dim": d, "traced": shape}
    if node.kind == "scan":
        space.update(reverse=node.attrs["reverse"], exclusive=node.attrs["exclusive"])
        output = Output(node.name, node.name, full, f"like:{x}")
    else:
        output = Output(node.name, node.name, [i for i in full if i != d], "int64",
                        keepdim=node.attrs["keepdim"])
    config = ROW_CONFIG if d == rank - 1 else COLUMN_CONFIG
    return Kernel(name=node.name, kind=node.kind, space=space, operands=operands, body=body,
                  outputs=[output], config=dict(config))

