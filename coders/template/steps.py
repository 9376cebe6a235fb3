"""The macro steps on the IR: which ones change the program now, and applying one.

Tuning steps (tile, num_warps, num_stages, group_m, split_k, persistent, vectorize, autotune,
precision) apply to the *dominant* kernel: the one with the largest estimated time (matmul FLOPs
and bytes moved against an H100-class roofline), and to its twins (kernels of the same kind, shape,
dtype and configuration, such as the gate and up projections of a SwiGLU). `fuse epilogue` /
`fuse prologue` merge the first fusable producer/consumer pair in program order; `fuse attention` swaps a
matmul -> softmax -> matmul chain for a flash-attention kernel, `fuse softmax` a matmul -> softmax
chain for a flash kernel that writes the probabilities; `library conv2d` swaps a Triton conv for
the vendor call where the task allows it (its epilogue stays a Triton kernel). Every legal step
changes the
program; menus are small and discrete so a planner can score all of them.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from coders.template import conv_transpose_lower, fuse, recurrent
from coders.template.conv_lower import conv_flops, conv_gemm, library_ops, to_library
from coders.template.emit import pool as pool_emit
from coders.template.emit import reduce as reduce_emit
from coders.template.emit import scan as scan_emit
from coders.template.emit.reduce import Layout
from coders.template.ir import SPACE_VALUES, Kernel, ProgramIR
from coders.template.lower import POINTWISE_CONFIG
from coders.template.scans import WALK_KINDS
from mtmc.protocols import CoderError
from mtmc.strategies import Strategy
from mtmc.tasks import Task

PEAK_BYTES = 3.0e12
PEAK_FLOPS = {"float32": 5.0e13, "float16": 5.0e14, "bfloat16": 5.0e14}
_ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4, "bool": 1}

POINTWISE_BLOCKS = (256, 512, 1024, 2048, 4096)
POOL_BLOCKS = (128, 256, 512, 1024, 2048)  # output elements per program
ROW_BLOCKS = (1024, 2048, 4096, 8192, 16384, 32768)
WALK_BLOCKS = (256, 512, 1024, 2048, 4096)  # positions per chunk of a row scan or arg-reduction
MATMUL_BLOCKS = (32, 64, 128, 256)
MATMUL_PRESETS = ((128, 128, 32), (128, 64, 32), (64, 128, 32), (128, 256, 64), (64, 64, 32))
ATTENTION_BLOCKS = (32, 64, 128)
WARPS = (2, 4, 8, 16)
STAGES = (1, 2, 3, 4, 5)
GROUPS = (1, 4, 8, 16)
SPLITS = (1, 2, 4, 8)
SMS = 132  # H100 / H200
SMEM_BYTES = 227 * 1024  # the most shared memory one program may use on an H100 / H200
DOT_KINDS = (*fuse.GEMM_KINDS, "attention")  # kernels with a pipelined tl.dot loop (but see uses_dot)


# --------------------------------------------------------------------------------------------------
# which kernel
# --------------------------------------------------------------------------------------------------

def _numel(shape: list[int] | None) -> int:
    return math.prod(shape) if shape else 1


def _bytes(ir: ProgramIR, value: str) -> int:
    info = ir.values.get(value, {})
    if info.get("shape") is None:
        return 0
    return _numel(info["shape"]) * _ITEMSIZE.get(info.get("dtype") or "float32", 4)


def matmul_mnk(ir: ProgramIR, kernel: Kernel) -> tuple[int, int, int, int]:
    """(batch, M, N, K) at the traced sizes."""
    a = ir.shape(kernel.space["a"])
    b = ir.shape(kernel.space["b"])
    form = kernel.space["form"]
    if form == "bmm":
        return _numel(a[:-2]), a[-2], b[-1], a[-1]
    n = b[0] if form == "linear" else b[1]
    return 1, _numel(a[:-1]), n, a[-1]


def cost(ir: ProgramIR, kernel: Kernel) -> float:
    reads = {o.value for o in kernel.operands if not o.scalar}
    reads |= {kernel.space[k] for k in SPACE_VALUES if isinstance(kernel.space.get(k), str)}
    moved = sum(_bytes(ir, v) for v in reads) + sum(_bytes(ir, o.value) for o in kernel.outputs)
    flops = 0
    dtype = "float32"
    if kernel.kind == "matmul":
        batch, m, n, k = matmul_mnk(ir, kernel)
        flops = 2 * batch * m * n * k
        dtype = ir.values[kernel.space["a"]]["dtype"]
    elif kernel.kind == "conv":
        flops = conv_flops(ir, kernel)
    elif kernel.kind == "conv_transpose":
        flops = conv_transpose_lower.flops(ir, kernel)
        dtype = kernel.space["dtype"]
    elif kernel.kind == "attention" and kernel.space["v"] is None:
        q, sk = ir.shape(kernel.space["q"]), kernel.space["traced"][-1]
        flops = 2 * 2 * _numel(q) * sk  # the scores are computed twice
        dtype = ir.values[kernel.space["q"]]["dtype"]
    elif kernel.kind == "attention":
        q, v = ir.shape(kernel.space["q"]), ir.shape(kernel.space["v"])
        flops = 2 * _numel(q) * v[-2] + 2 * _numel(q[:-1]) * v[-2] * v[-1]
        dtype = ir.values[kernel.space["q"]]["dtype"]
    elif kernel.kind == "recurrent":
        flops, moved = recurrent.flops(kernel), moved + recurrent.moved(ir, kernel)
        dtype = kernel.space["dtype"]
    # a kernel with fewer programs than SMs leaves the rest of the GPU idle
    occupancy = min(1.0, programs(ir, kernel) / SMS)
    return max(moved / PEAK_BYTES, flops / PEAK_FLOPS.get(dtype, 5.0e13)) / occupancy


def programs(ir: ProgramIR, kernel: Kernel) -> int:
    """How many programs the kernel launches at the traced sizes (about)."""
    shape, cfg = kernel.space["traced"], kernel.config
    split = cfg.get("split_k", 1)
    if kernel.kind == "reduce":
        lay = Layout(kernel)
        if lay.groups:
            return max(1, shape[0] * 8)
        rows = _numel(shape[:lay.d0])
        if lay.column:
            rows *= -(-_numel(shape[lay.d1:]) // cfg["BLOCK_N"])
        return rows * split
    if kernel.kind == "matmul":
        batch, m, n, _ = matmul_mnk(ir, kernel)
        return batch * -(-m // cfg["BLOCK_M"]) * -(-n // cfg["BLOCK_N"]) * split
    if kernel.kind == "attention":
        return _numel(shape[:-2]) * -(-shape[-2] // cfg["BLOCK_M"])
    if kernel.kind == "conv":
        groups, m, n, _ = conv_gemm(ir, kernel)
        if kernel.space["form"] == "direct":  # one tile spans the channels of every group
            return -(-m // cfg["BLOCK_M"]) * -(-(n * groups) // cfg["BLOCK_N"])
        return groups * -(-m // cfg["BLOCK_M"]) * -(-n // cfg["BLOCK_N"])
    if kernel.kind == "conv_transpose":
        return conv_transpose_lower.programs(ir, kernel)
    if kernel.kind == "recurrent":
        return recurrent.programs(kernel)
    if kernel.kind in WALK_KINDS:
        d = kernel.space["dim"]
        if scan_emit.is_row(kernel):
            return _numel(shape[:d])
        return _numel(shape[:d]) * -(-_numel(shape[d + 1:]) // cfg["BLOCK_N"])
    return -(-_numel(shape) // cfg.get("BLOCK", 1024))


def dominant(ir: ProgramIR) -> Kernel:
    kernels = ir.kernels()
    if not kernels:
        raise CoderError("the program has no Triton kernel to tune")
    return max(kernels, key=lambda k: cost(ir, k))


def uses_dot(kernel: Kernel) -> bool:
    """The kernel's inner loop is a tl.dot: a depthwise conv's direct form does per-tap FMAs."""
    return kernel.kind in DOT_KINDS and not (kernel.kind == "conv" and kernel.space["form"] == "direct")


def _is_column(kernel: Kernel) -> bool:
    return kernel.kind == "reduce" and Layout(kernel).column


def _fp32_operands(ir: ProgramIR, kernel: Kernel) -> bool:
    keys = {"matmul": ("a", "b"), "conv": ("input", "weight"), "conv_transpose": ("input", "weight")}
    keys = keys.get(kernel.kind, ("q", "k", "v"))
    return all(ir.values[kernel.space[k]]["dtype"] == "float32" for k in keys if kernel.space[k] is not None)


# --------------------------------------------------------------------------------------------------
# the menu
# --------------------------------------------------------------------------------------------------

def legal(ir: ProgramIR, task: Task) -> list[Strategy]:
    out: list[Strategy] = []
    for kind in ("epilogue", "prologue"):
        if fuse.fusions(ir, kind)[:1]:
            out.append(Strategy.make("fuse", kind))
    for kind in ("attention", "softmax"):
        if fuse.fuse_attention(ir, kind) is not None:
            out.append(Strategy.make("fuse", kind))
    out += [Strategy.make("library", op) for op in library_ops(ir, task.library_ops)
            if to_library(ir, op, POINTWISE_CONFIG).kernels()]
    kernel = dominant(ir)
    out += [s for s in _knobs(ir, task, kernel) + _precisions(ir, task) if _useful(ir, task, s)]
    return out


def _knobs(ir: ProgramIR, task: Task, kernel: Kernel) -> list[Strategy]:
    cfg = kernel.config
    tuned = bool(cfg.get("autotune"))
    menu: list[Strategy] = []
    make = Strategy.make
    if kernel.kind == "pointwise":
        if not tuned:
            menu += [make("tile", BLOCK=b) for b in POINTWISE_BLOCKS]
            menu += [make("num_warps", w) for w in WARPS]
        if not cfg.get("vectorize"):
            menu.append(make("vectorize"))
    elif kernel.kind in ("pool", "cat"):
        if not tuned:
            menu += [make("tile", BLOCK=b) for b in POOL_BLOCKS]
            menu += [make("num_warps", w) for w in WARPS]
            menu += pool_emit.form_steps(kernel) if kernel.kind == "pool" else []  # tiles, vector taps
    elif kernel.kind in WALK_KINDS and not tuned:
        if scan_emit.is_row(kernel):
            n_walk = kernel.space["traced"][kernel.space["dim"]]
            menu += [make("tile", BLOCK=b) for b in WALK_BLOCKS if b <= 2 * max(n_walk, 256)]
        else:
            bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
            for m, n in ((bm * 2, bn), (bm // 2, bn), (bm, bn * 2), (bm, bn // 2)):
                if 8 <= m <= 256 and 16 <= n <= 256:
                    menu.append(make("tile", BLOCK_M=m, BLOCK_N=n))
        menu += [make("num_warps", w) for w in WARPS]
    elif kernel.kind == "reduce" and not _is_column(kernel):
        n_cols = _numel(kernel.space["traced"][slice(*kernel.space["red"])])
        if not tuned:
            menu += [make("tile", BLOCK=b) for b in ROW_BLOCKS if b <= 2 * max(n_cols, 1024)]
            menu += [make("num_warps", w) for w in WARPS]
            if n_cols > cfg["BLOCK"]:
                menu += [make("num_stages", s) for s in (1, 2, 3)]
        if not cfg.get("persistent"):
            menu.append(make("persistent"))
        menu += _reduce_splits(ir, kernel)
    elif kernel.kind == "reduce":
        if not tuned:
            bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
            for m, n in ((bm * 2, bn), (bm // 2, bn), (bm, bn * 2), (bm, bn // 2)):
                if 8 <= m <= 256 and 16 <= n <= 256:
                    menu.append(make("tile", BLOCK_M=m, BLOCK_N=n))
            menu += [make("num_warps", w) for w in WARPS]
        menu += _reduce_splits(ir, kernel)
    elif kernel.kind == "matmul":
        split = cfg.get("split_k", 1) > 1
        if not tuned:
            bm, bn, bk = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
            tiles = [(bm * 2, bn, bk), (bm // 2, bn, bk), (bm, bn * 2, bk), (bm, bn // 2, bk),
                     (bm, bn, 64 if bk == 32 else 32), *MATMUL_PRESETS]
            for m, n, k in dict.fromkeys(tiles):
                if m in MATMUL_BLOCKS and n in MATMUL_BLOCKS and k in (32, 64) and m * n <= 128 * 256:
                    menu.append(make("tile", BLOCK_M=m, BLOCK_N=n, BLOCK_K=k))
            menu += [make("num_warps", w) for w in (2, 4, 8)]
            menu += [make("num_stages", s) for s in STAGES]
        menu += [make("group_m", g) for g in GROUPS]
        _, m_, n_, k_ = matmul_mnk(ir, kernel)
        if not tuned and not cfg.get("persistent") and (k_ >= 4 * max(m_, n_) or
                                                        (m_ * n_ <= 512 * 512 and k_ >= 1024)):
            menu += [make("split_k", s) for s in SPLITS]
        if not cfg.get("persistent") and not split:
            menu.append(make("persistent"))
        if not tuned and not split:
            menu.append(make("autotune"))
    elif kernel.kind == "conv":
        menu += _conv_knobs(kernel) if not tuned else []
    elif kernel.kind == "conv_transpose":
        if not tuned:
            menu += _conv_transpose_tiles(cfg)
            menu += [make("num_warps", w) for w in (2, 4, 8)]
            menu += [make("num_stages", s) for s in STAGES]
    elif kernel.kind == "recurrent":  # a tl.dot block of the hidden state is at least 16
        menu += [make("tile", BLOCK=b) for b in (16, 32, 64, 128)]
        menu += [make("num_warps", w) for w in (2, 4, 8)]
    elif kernel.kind == "attention":
        if not tuned:
            bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
            for m, n in ((bm * 2, bn), (bm // 2, bn), (bm, bn * 2), (bm, bn // 2)):
                if m in ATTENTION_BLOCKS and n in ATTENTION_BLOCKS:
                    menu.append(make("tile", BLOCK_M=m, BLOCK_N=n))
            menu += [make("num_warps", w) for w in (4, 8)]
            menu += [make("num_stages", s) for s in (1, 2, 3, 4)]
    # a cat launches once per input, a recurrence once per time step
    if kernel.kind not in ("matmul", "cat", "recurrent") and not tuned:
        menu.append(make("autotune"))
    return menu


def _conv_knobs(kernel: Kernel) -> list[Strategy]:
    """Neighbouring tiles (a dot needs blocks of at least 16), warps and stages; autotune holds the
    wider search. A short menu: each step is verified on the interpreter, where a conv program
    costs several times an elementwise one. group_m and split_k are not implemented for convs."""
    cfg = kernel.config
    make = Strategy.make
    bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
    menu: list[Strategy] = []
    if kernel.space["form"] == "gemm":
        bk = cfg["BLOCK_K"]
        tiles = [(bm * 2, bn, bk), (bm // 2, bn, bk), (bm, bn * 2, bk), (bm, bn, 64 if bk == 32 else 32)]
        for m, n, k in dict.fromkeys(tiles):
            if 16 <= m <= 256 and 16 <= n <= 256 and k in (16, 32, 64) and m * n <= 128 * 256:
                menu.append(make("tile", BLOCK_M=m, BLOCK_N=n, BLOCK_K=k))
    else:
        for m, n in ((bm * 2, bn), (bm // 2, bn), (bm, bn * 2), (bm, bn // 2)):
            if 16 <= m <= 256 and 16 <= n <= 128:
                menu.append(make("tile", BLOCK_M=m, BLOCK_N=n))
    menu += [make("num_warps", w) for w in (4, 8)]
    menu += [make("num_stages", s) for s in (2, 3, 4)]
    return menu
def _conv_transpose_tiles(cfg: dict[str, Any]) -> list[Strategy]:
    """Neighbours of the current tile (each block halved or doubled) and a few common presets."""
    bm, bn, bk = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
    tiles = [(bm * 2, bn, bk), (bm // 2, bn, bk), (bm, bn * 2, bk), (bm, bn // 2, bk), (bm, bn, bk * 2),
             (bm, bn, bk // 2), (128, 64, 32), (64, 64, 32), (128, 128, 32)]
    return [Strategy.make("tile", BLOCK_M=m, BLOCK_N=n, BLOCK_K=k) for m, n, k in dict.fromkeys(tiles)
            if 16 <= m <= 256 and 16 <= n <= 256 and 16 <= k <= 128 and m * n <= 128 * 256]


def _reduce_splits(ir: ProgramIR, kernel: Kernel) -> list[Strategy]:
    """Split a long reduction across programs when too few programs would run it (few rows)."""
    cfg = kernel.config
    if cfg.get("autotune") or cfg.get("persistent") or not reduce_emit.splittable(kernel):
        return []
    lay = Layout(kernel)
    n_red = _numel(kernel.space["traced"][lay.d0:lay.d1])
    if programs(ir, kernel) // cfg.get("split_k", 1) >= 2 * SMS or n_red < 4096:
        return []
    return [Strategy.make("split_k", s) for s in (1, 4, 16, 64)]


def _dot_kernels(ir: ProgramIR) -> list[Kernel]:
    """The kernels whose dots read fp32 operands: what a `precision` step changes."""
    return [k for k in ir.kernels() if uses_dot(k) and _fp32_operands(ir, k)]


TF32_BY_DEFAULT = ("conv", "conv_transpose")  # eager PyTorch runs these on TF32 (cuDNN's default)


def tf32_allowed(task: Task, kernel: Kernel) -> bool:
    """fp32 precision follows eager PyTorch on the same GPU: cuDNN runs fp32 convolutions on TF32
    tensor cores by default (torch.backends.cudnn.allow_tf32 is True), so a convolution kernel may
    too; matmuls run strict fp32 (torch.backends.cuda.matmul.allow_tf32 is False), so a matmul or
    attention kernel uses TF32 only where the task allows it (MTMC["precision"])."""
    return kernel.kind in TF32_BY_DEFAULT or "tf32" in task.precisions


def _precisions(ir: ProgramIR, task: Task) -> list[Strategy]:
    """ieee and tf32x3 (3 tensor-core passes, about fp32 accuracy) always; tf32 where a kernel may
    take it (tf32_allowed). A precision is the program's, not one kernel's: it applies to every fp32
    dot that may take it (baddbmm_softmax's dominant kernel is its softmax, so a precision for the
    dominant kernel alone never reached its bmm)."""
    dots = _dot_kernels(ir)
    if not dots:
        return []
    options = ["ieee", "tf32x3"] + (["tf32"] if any(tf32_allowed(task, k) for k in dots) else [])
    return [Strategy.make("precision", p) for p in options]


def _useful(ir: ProgramIR, task: Task, strategy: Strategy) -> bool:
    """The step changes the program, and its kernels' tiles still fit in shared memory."""
    try:
        after = apply(ir, task, strategy)
    except CoderError:
        return False
    fits = all(smem_bytes(after, k) <= SMEM_BYTES for k in after.kernels())
    return fits and after.to_dict() != ir.to_dict()


def smem_bytes(ir: ProgramIR, kernel: Kernel) -> int:
    """Shared memory the pipelined loop of a matmul or attention kernel needs, about: `num_stages`
    buffers of each tile its loop loads (Triton's own count adds a little for layout conversions).
    On an H100, attention_sdpa_bf16 (head_dim 128) with 128x128 tiles and num_stages 4 failed to
    launch (OutOfResources: 4 x 128 x (128 + 128) x 2 B of K and V tiles, plus Q's, is 288 KiB).
    Autotuned kernels are not counted: Triton's autotuner skips configurations that do not fit."""
    cfg = kernel.config
    if cfg.get("autotune") or not uses_dot(kernel):
        return 0
    stages = max(1, int(cfg.get("num_stages", 1)))
    if kernel.kind in fuse.GEMM_KINDS:
        a = kernel.space["a"] if kernel.kind == "matmul" else kernel.space["input"]
        itemsize = _ITEMSIZE.get(ir.values[a]["dtype"], 4)
        bm, bn, bk = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
        return stages * (bm * bk + bk * bn) * itemsize
    itemsize = _ITEMSIZE.get(ir.values[kernel.space["q"]]["dtype"], 4)
    d_qk = ir.shape(kernel.space["q"])[-1]
    d_v = ir.shape(kernel.space["v"])[-1] if kernel.space["v"] is not None else 0
    return (stages * cfg["BLOCK_N"] * (d_qk + d_v) + cfg["BLOCK_M"] * d_qk) * itemsize


# --------------------------------------------------------------------------------------------------
# applying one step
# --------------------------------------------------------------------------------------------------

def apply(ir: ProgramIR, task: Task, strategy: Strategy) -> ProgramIR:
    kind = strategy.kind
    if kind == "fuse":
        return _fuse(ir, str(strategy.value))
    if kind == "library":
        _require(str(strategy.value) in library_ops(ir, task.library_ops),
                 f"no Triton {strategy.value} the task lets a vendor call compute")
        new = to_library(ir, str(strategy.value), POINTWISE_CONFIG)
        # the verifier rejects a program that launches no Triton kernel of its own (a decoy)
        _require(bool(new.kernels()), "the vendor call would leave no Triton kernel")
        return new
    if kind in ("port", "stop", "fix"):
        raise CoderError(f"`{strategy}` is not an IR step of the template coder")
    new = copy.deepcopy(ir)
    if kind == "precision":
        dots = _dot_kernels(new)
        _require(bool(dots), "precision applies to matmul/conv/attention kernels with fp32 operands")
        if strategy.value == "tf32":  # the kernels that may not take it keep their precision
            dots = [k for k in dots if tf32_allowed(task, k)]
            _require(bool(dots), "the task does not allow tf32 (convolutions take it by default)")
        for kernel in dots:
            _configure(new, task, kernel, strategy)
        return new
    kernel = dominant(new)
    twins = [k for k in new.kernels() if k is not kernel and k.kind == kernel.kind and
             k.config == kernel.config and _shape_key(k) == _shape_key(kernel)]
    _configure(new, task, kernel, strategy)
    for twin in twins:
        try:
            _configure(new, task, twin, strategy)
        except CoderError:
            continue  # the step does not fit this twin: it keeps its configuration
    return new


def _shape_key(kernel: Kernel) -> tuple:
    """What makes two kernels the same problem, apart from the tensors they read."""
    space = kernel.space
    return (str(space.get("traced")), str(space.get("red")), str(space.get("groups")), space.get("form"),
            space.get("dtype"), space.get("causal"))


def _configure(new: ProgramIR, task: Task, kernel: Kernel, strategy: Strategy) -> None:
    """Edit `kernel.config` for one tuning step (raises CoderError when it does not apply)."""
    kind = strategy.kind
    cfg = kernel.config
    args: dict[str, Any] = {k: v for k, v in strategy.params if k != "value"}
    value = strategy.value
    if kernel.kind == "pool" and kind in ("tile", "vectorize"):
        return pool_emit.configure(kernel, strategy)  # its flat and tile forms (emit/pool.py)
    if kind == "tile":
        allowed = _tile_keys(kernel)
        if set(args) != set(allowed):
            raise CoderError(f"`{strategy}` does not fit the {kernel.kind} kernel {kernel.name}: "
                             f"it takes {' '.join(k + '=..' for k in allowed)}")
        _require(not cfg.get("autotune"), "the kernel is autotuned")
        if uses_dot(kernel) or kernel.kind == "recurrent":
            _require(all(args[k] >= 16 for k in args), "tl.dot needs blocks of at least 16")
        # the row's block becomes the step's, not the form's (where the two differ)
        by_form = kernel.kind == "reduce" and not _is_column(kernel) and \
            reduce_emit.row_blocks(kernel) != (int(args["BLOCK"]),) * 2
        cfg.update({k: int(v) for k, v in args.items()})
        if by_form:
            cfg.pop("auto_block", None)
    elif kind == "num_warps":
        _require(value in (1, 2, 4, 8, 16, 32), "num_warps must be a power of two up to 32")
        _require(not cfg.get("autotune"), "the kernel is autotuned")
        cfg["num_warps"] = int(value)
    elif kind == "num_stages":
        _require(kernel.kind in DOT_KINDS + ("reduce",) and 1 <= int(value) <= 8,
                 "num_stages applies to kernels with a pipelined loop")
        _require(not cfg.get("autotune"), "the kernel is autotuned")
        cfg["num_stages"] = int(value)
    elif kind == "group_m":
        _require(kernel.kind == "matmul", "group_m applies to matmul kernels")
        cfg["GROUP_M"] = int(value)
    elif kind == "split_k" and kernel.kind == "reduce":
        _require(reduce_emit.splittable(kernel), "the reduction has dependent passes or full-size outputs")
        _require(not cfg.get("persistent") and not cfg.get("autotune"),
                 "split reductions do not combine with persistent or autotuned kernels")
        _require(int(value) >= 1, "split_k must be positive")
        cfg["split_k"] = int(value)
    elif kind == "split_k":
        _require(kernel.kind == "matmul", "split_k applies to matmul kernels")
        _require(not cfg.get("persistent") and not cfg.get("autotune"),
                 "split-K does not combine with persistent or autotuned kernels")
        _require(int(value) >= 1, "split_k must be positive")
        cfg["split_k"] = int(value)
    elif kind == "persistent":
        _require(kernel.kind == "matmul" or (kernel.kind == "reduce" and not _is_column(kernel)),
                 "persistent applies to matmul and row-reduction kernels")
        _require(cfg.get("split_k", 1) == 1, "split-K kernels are not persistent")
        cfg["persistent"] = True
    elif kind == "vectorize":
        _require(kernel.kind == "pointwise", "vectorize applies to elementwise kernels")
        cfg["vectorize"] = True
    elif kind == "autotune":
        _require(cfg.get("split_k", 1) == 1, "split-K kernels are not autotuned")
        if kernel.kind == "reduce" and not _is_column(kernel):
            cfg.setdefault("num_warps", None)
        cfg["autotune"] = True
    elif kind == "precision":  # `apply` brings only the fp32 dot kernels here
        _require(value in ("ieee", "tf32x3") or (value == "tf32" and tf32_allowed(task, kernel)),
                 f"the task does not allow {value} for the {kernel.kind} kernel {kernel.name}")
        cfg["precision"] = str(value)
    else:
        raise CoderError(f"the template coder has no `{kind}` step")


def _tile_keys(kernel: Kernel) -> list[str]:
    if kernel.kind in fuse.GEMM_KINDS and uses_dot(kernel):
        return ["BLOCK_M", "BLOCK_N", "BLOCK_K"]
    if kernel.kind == "conv":
        return ["BLOCK_M", "BLOCK_N"]
    if kernel.kind == "attention" or _is_column(kernel):
        return ["BLOCK_M", "BLOCK_N"]
    if kernel.kind in WALK_KINDS and not scan_emit.is_row(kernel):
        return ["BLOCK_M", "BLOCK_N"]
    return ["BLOCK"]


def _require(condition: bool, why: str) -> None:
    if not condition:
        raise CoderError(why)


def _fuse(ir: ProgramIR, what: str) -> ProgramIR:
    if what in ("attention", "softmax"):
        fused = fuse.fuse_attention(ir, what)
        if fused is None:
            chain = "matmul -> softmax -> matmul" if what == "attention" else "matmul -> softmax"
            raise CoderError(f"no {chain} chain to fuse")
        return fused
    if what not in ("epilogue", "prologue"):
        raise CoderError(f"`fuse {what}`: the template coder fuses epilogue, prologue, attention or softmax")
    options = fuse.fusions(ir, what)
    if not options:
        raise CoderError(f"no {what} to fuse")
    return options[0]
