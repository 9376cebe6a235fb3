"""How a reduce kernel walks its space (emit/reduce.py emits the kernel): the (outer, reduced, inner)
view, index variables and masks, and the reductions and accumulators written over them."""

from __future__ import annotations

import re

from coders.template.emit.common import (  # noqa: F401 - IDENTITY and COMBINE re-exported
    COMBINE,
    IDENTITY,
    Axis,
    FusionError,
    Writer,
    address,
    mask_of,
    mean_divisor,
)
from coders.template.emit.reduce_analysis import paired_reductions
from coders.template.ir import Kernel, Op

# neighbours in one thread that share a running max in a looped online softmax: 8 bf16 values are
# one 16-byte load (cross_entropy_smooth_bf16, H200 hand probes: 0.505 ms in groups of 8, 0.510 in
# groups of 4, 0.641 per lane; chunks of 1024 at 4 warps)
LANE_GROUP = 8

# per-lane online softmax keeps two or more accumulators per element of a chunk: small chunks keep
# them in registers (cross_entropy_smooth_bf16, H200: 0.67 ms in chunks of 1024 at 4 warps, 0.88 ms
# in 2048, 1.00 ms in 4096 at 8 warps; kl_div_rows 0.28 / 0.34 ms in 1024 / 2048 at 4 warps)
ONLINE_CHUNK = 1024


def chunk_of(config: dict, online: bool) -> int:
    """The chunk a looped row is walked in: a `tile` step's BLOCK, or ONLINE_CHUNK for an online
    softmax until a tile step sets one (`auto_block`)."""
    return ONLINE_CHUNK if online and config.get("auto_block") else config["BLOCK"]


def span(a: int, b: int) -> str:
    """The kernel argument holding the product of the input's dims a..b-1."""
    return f"span_{a}_{b}"


def span_sizes(text: str) -> list[str]:
    """The span_<a>_<b> sizes a kernel's text reads, in order of their dims."""
    found = {m.group(0): (int(m.group(1)), int(m.group(2)))
             for m in re.finditer(r"\bspan_(\d+)_(\d+)\b", text)}
    return sorted(found, key=found.__getitem__)


def runs(dims: list[int]) -> list[list[int]]:
    """Sorted dims grouped into runs of consecutive ones."""
    out: list[list[int]] = []
    for d in dims:
        if out and out[-1][-1] == d - 1:
            out[-1].append(d)
        else:
            out.append([d])
    return out


class Layout:
    """How a reduce kernel walks its space: index variables, masks, reductions."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.rank = len(kernel.space["traced"])
        d0, d1 = kernel.space["red"]
        self.d0, self.d1 = d0, d1
        self.groups = kernel.space.get("groups")
        self.by_channel = False  # a group row addressed as channel `chan`, columns within it
        self.column = d1 < self.rank and not self.groups
        self.red_dims = list(range(d0, d1))
        if self.column:
            self.axes = [Axis(list(range(d0)), "outer", "n_outer", None),
                         Axis(self.red_dims, "rows", "n_red", "row_mask"),
                         Axis(list(range(d1, self.rank)), "inner", "n_inner", "inner_mask")]
        else:
            self.axes = [Axis(list(range(d0)), "row", "n_rows", None),
                         Axis(self.red_dims, "cols", "n_cols", "col_mask")]
        self.tail = self._tail_start()  # n_tail = the product of the row dims from here to d0
        self.block = "BLOCK_M" if self.column else "BLOCK"
        self.red_mask = "row_mask" if self.column else "col_mask"
        self.red_size = "n_red" if self.column else "n_cols"
        self.keep = ", keep_dims=True" if self.column else ""
        # a row kernel with an online softmax walks its chunks as (BLOCK // LANE_GROUP, LANE_GROUP)
        # tiles: each thread's neighbours share one running max (see _online_groups)
        kinds = {kind for kind, _, _ in paired_reductions(kernel).values()}
        self.online = "online" in kinds
        self.grouped = self.online and "welford" not in kinds and not self.column and not self.groups \
            and kernel.config.get("split_k", 1) <= 1 \
            and chunk_of(kernel.config, self.online) >= 2 * LANE_GROUP
        # ROWS > 1: a one-pass program takes ROWS rows as a [ROWS, BLOCK] tile (short rows, one warp
        # each, leave most of a program idle); `tiled` is on while that form is written
        self.rows = kernel.config.get("ROWS", 1)
        self.tiled = False
        if self.rows > 1:
            self._check_rows()

    def _check_rows(self) -> None:
        """Several rows per program: the plain row form only, ROWS a power of two."""
        cfg = self.kernel.config
        form = "a column reduction" if self.column else "GroupNorm" if self.groups else \
            "a full reduction" if self.d0 == 0 else \
            "a split reduction" if cfg.get("split_k", 1) > 1 else \
            "a persistent kernel" if cfg.get("persistent") else None
        if form:
            raise FusionError(f"ROWS={self.rows}: {form} takes one row per program")
        if self.rows & (self.rows - 1):
            raise FusionError(f"ROWS={self.rows}: rows per program must be a power of two")

    # --- addressing -------------------------------------------------------------------------------
    def address(self, dims: list[int], what: str) -> str:
        if self.groups:
            return self._group_address(dims, what)
        if self._reads_a_row_tail(dims):
            return "(row % n_tail)" + (" * n_cols + cols" if self._col_dims(dims) else "")
        if self.spreads(dims):
            return self._spread_address(dims)
        return address(self.axes, dims, what)

    def mask(self, dims: list[int], what: str) -> str | None:
        mask = self._mask(dims, what)
        if self.tiled and self._row_dims(dims):  # the tile's last rows may lie past n_rows
            return f"{mask} & row_mask" if mask else "row_mask"
        return mask

    def _mask(self, dims: list[int], what: str) -> str | None:
        if self.groups:
            first = 2 if self.by_channel else 1  # by channel, a per-channel value is one scalar
            return "col_mask" if set(dims) & set(range(first, self.rank)) else None
        if self._reads_a_row_tail(dims):
            return "col_mask" if self._col_dims(dims) else None
        if self.spreads(dims):  # in range wherever the axes it touches are
            masks = dict.fromkeys(a.mask for a in self.axes if a.mask and set(a.dims) & set(dims))
            return " & ".join(masks) if masks else None
        return mask_of(self.axes, dims, what)

    # An operand may span the trailing row dims only: a per-channel (C,) parameter read by a reduction
    # over each (n, c) plane, whose rows are (n, c) flattened, is element row % C. Batch norm's
    # normalizing pass then joins a reduction after it as its prologue (fuse/merge.py).
    def _tail_start(self) -> int | None:
        if self.kernel.config.get("split_k", 1) > 1:  # no n_tail there: spread addresses instead
            return None
        starts = {self._row_dims(o.dims)[0] for o in self.kernel.operands
                  if not self.groups and not self.column and self._partial_rows(o.dims)}
        if len(starts) > 1:
            raise FusionError("operands span different trailing parts of the rows")
        return starts.pop() if starts else None

    def _row_dims(self, dims: list[int]) -> list[int]:
        return [d for d in dims if d < self.d0]

    def _col_dims(self, dims: list[int]) -> list[int]:
        return [d for d in dims if d >= self.d0]

    def _partial_rows(self, dims: list[int]) -> bool:
        """`dims` span a trailing part of the row dims (not all of them) and all or none of the columns."""
        rows = self._row_dims(dims)
        return bool(rows) and rows == list(range(rows[0], self.d0)) and rows[0] > 0 and \
            self._col_dims(dims) in ([], self.red_dims)

    def _reads_a_row_tail(self, dims: list[int]) -> bool:
        return self.tail is not None and self._partial_rows(dims) and self._row_dims(dims)[0] == self.tail

    # An operand may span part of an axis in general (HingeLoss's targets, one dim of the flattened columns
    # of a full mean; a per-channel weight of a row that is (n, c) flattened, in a split kernel): each run
    # of its dims within an axis is indexed from the axis' flat index as the pointwise emitter does,
    # `(index // <sizes after the run>) % <run size>`, the sizes passed as span_<a>_<b> (the product of
    # the input's dims a..b-1, reduce_launch.py). Outputs never: rows would race to write them.
    def spreads(self, dims: list[int]) -> bool:
        """`dims` span part of an axis (and are not a row tail, nor GroupNorm's)."""
        if self.groups or self._reads_a_row_tail(dims):
            return False
        return any(0 < len(set(a.dims) & set(dims)) < len(a.dims) for a in self.axes)

    def _spread_address(self, dims: list[int]) -> str:
        walks: list[tuple[str, list[int]]] = []  # (index expression, the run of dims it walks)
        for axis in self.axes:
            for run in runs([d for d in axis.dims if d in dims]):
                index = axis.index
                after = [d for d in axis.dims if d > run[-1]]
                if after:
                    index = f"{index} // {span(after[0], after[-1] + 1)}"
                if run[0] != axis.dims[0]:
                    index = f"({index}) % {span(run[0], run[-1] + 1)}" if after else \
                        f"{index} % {span(run[0], run[-1] + 1)}"
                walks.append((index, run))
        terms = []
        for index, run in walks:
            inner = [span(r[0], r[-1] + 1) for r in runs([d for d in dims if d > run[-1]])]
            terms.append(" * ".join([f"({index})" if inner and " " in index else index, *inner]))
        return " + ".join(terms)

    def _group_address(self, dims: list[int], what: str) -> str:
        """Rows are (batch, group); a row's columns are its channels' elements, channel-major."""
        rest = list(range(1, self.rank))
        within = " + chan * HW + cols" if self.by_channel else " + cols"  # by channel: cols < HW
        if dims == [1] and self.by_channel:
            return "(row % G) * CPG + chan"
        if dims == [0, *rest]:
            return "row * n_cols" + within
        if dims == rest:
            return "(row % G) * n_cols" + within
        if dims == [1]:
            return "(row % G) * CPG + cols // HW"
        if dims == [0]:
            return "row // G"
        if dims == []:
            return "0"
        raise FusionError(f"{what}: a GroupNorm kernel cannot address dims {dims}")

    def check(self) -> None:
        for o in self.kernel.operands:
            self.address(o.dims, f"operand {o.value}")
        for out in self.kernel.outputs:  # a row tail is for reads: rows would race to write it
            if self.groups:
                self._group_address(out.dims, f"output {out.value}")
            else:
                address(self.axes, out.dims, f"output {out.value}")

    # --- walking ----------------------------------------------------------------------------------
    def program(self, w: Writer) -> None:
        if self.column:
            w("pid = tl.program_id(0)")
            w("n_inner_blocks = tl.cdiv(n_inner, BLOCK_N)")
            w("outer = (pid // n_inner_blocks).to(tl.int64)")
            w("inner = (pid % n_inner_blocks) * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]")
            w("inner_mask = inner < n_inner")
        elif not self.kernel.config.get("persistent"):
            w("row = tl.program_id(0).to(tl.int64)")

    def program_rows(self, w: Writer) -> None:
        """The tile's rows, one per row of [ROWS, BLOCK]: per-row values are [ROWS, 1] columns."""
        w("row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)[:, None]")
        w("row_mask = row < n_rows")

    def index(self, w: Writer, start: str | None, bound: str | None = None) -> None:
        offset = f"{start} + " if start else ""
        if self.column:
            w(f"rows = {offset}tl.arange(0, BLOCK_M)[:, None]")
            w(f"row_mask = rows < {bound or 'n_red'}")
        elif self.grouped and start:
            g = LANE_GROUP
            w(f"cols = {offset}tl.arange(0, BLOCK // {g})[:, None] * {g} + tl.arange(0, {g})[None, :]")
            w(f"col_mask = cols < {bound or 'n_cols'}")
        else:
            tile = "[None, :]" if self.tiled else ""
            w(f"cols = {offset}tl.arange(0, BLOCK){tile}")
            w(f"col_mask = cols < {bound or 'n_cols'}")

    def reduce(self, op: Op, arg: str) -> str:
        kind = op.op
        axis = "axis=1, keep_dims=True" if self.tiled else f"axis=0{self.keep}"  # a tile: one per row
        text = f"{COMBINE[kind]}(tl.where({self.red_mask}, {arg}, {IDENTITY[kind]}), {axis})"
        return text + self.mean_divisor(op)

    def mean_divisor(self, op: Op) -> str:
        return mean_divisor(op, self.red_size)

    def acc_shape(self) -> str:
        if self.grouped:
            return f"[BLOCK // {LANE_GROUP}, {LANE_GROUP}]"
        return "[BLOCK_M, BLOCK_N]" if self.column else "[BLOCK]"

    def online_init(self, kind: str) -> str:
        """An online softmax's running statistic: one per group of LANE_GROUP neighbours, or per lane."""
        if self.grouped:
            return f"tl.full([BLOCK // {LANE_GROUP}], {IDENTITY[kind]}, tl.float32)"
        return self.acc_init(kind)

    def stat_shape(self) -> str:
        """A running statistic of a row: one scalar, or one per inner column of a column reduction."""
        return "[1, BLOCK_N]" if self.column else "[]"

    def acc_init(self, kind: str) -> str:
        if kind in ("sum", "mean"):
            return f"tl.zeros({self.acc_shape()}, dtype=tl.float32)"
        return f"tl.full({self.acc_shape()}, {IDENTITY[kind]}, tl.float32)"

    def acc_update(self, kind: str, acc: str, arg: str) -> str:
        masked = f"tl.where({self.red_mask}, {arg}, {IDENTITY[kind]})"
        if kind in ("sum", "mean"):
            return f"{acc} += {masked}"
        fn = "tl.maximum" if kind == "max" else "tl.minimum"
        return f"{acc} = {fn}({acc}, {masked})"

    def acc_final(self, op: Op, acc: str) -> str:
        axis = "" if self.grouped else ", axis=0"  # no axis: a (groups, LANE_GROUP) tile reduces whole
        return f"{COMBINE[op.op]}({acc}{axis}{self.keep})" + self.mean_divisor(op)

    def ridx(self) -> str:
        return "rows" if self.column else "cols"
