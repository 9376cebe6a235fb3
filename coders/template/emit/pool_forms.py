"""The pool kernel's forms (flat, tile, vector taps) and the menu steps between them (emit/pool.py
emits them; steps/menu.py and steps/apply.py hand the steps here)."""

from __future__ import annotations

from coders.template.ir import Kernel
from mtmc.protocols import CoderError
from mtmc.strategies import Strategy

# the tile form's menu (rows x columns of output): a 1-D pool's rows are independent, so wide
# rows; a 2-D/3-D pool's row blocks share the windows' halo rows, so taller tiles
TILES = {1: ((1, 1024), (4, 256), (8, 128)), 2: ((8, 128), (16, 64), (32, 32), (4, 64))}
VECTOR_TILE = (8, 32)  # the tile `vectorize` picks from the flat form: KV taps per output in registers
VECTOR_MAX = 16  # a vector step's taps along the last dim, at most (registers: BLOCK_M x BLOCK_N x KV)


# --------------------------------------------------------------------------------------------------
# forms
# --------------------------------------------------------------------------------------------------

def is_tile(kernel: Kernel) -> bool:
    return kernel.config.get("form", "flat") == "tile"


def is_vector(kernel: Kernel) -> bool:
    """The vector form, where its preconditions hold (elsewhere the tile form loops over every tap)."""
    return is_tile(kernel) and bool(kernel.config.get("vector")) and vector_ok(kernel)


def vector_ok(kernel: Kernel) -> bool:
    """The window's last-dim taps may be loaded as one vector and reduced in registers: a fixed
    window (an adaptive one's length varies per output) and no indices (the reduction drops them)."""
    return not kernel.space["pool"].startswith("adaptive") and \
        not any(op.op == "pool_index" for op in kernel.body)


class Shape:
    """How the tile form's index tensors broadcast: [BLOCK_M, BLOCK_N], or with a third axis of
    window taps (the vector form) [BLOCK_M, BLOCK_N, 1] against taps [1, 1, KV]."""

    def __init__(self, kernel: Kernel) -> None:
        self.tile = is_tile(kernel)
        self.vector = is_vector(kernel)

    def full(self) -> str:
        if not self.tile:
            return "[BLOCK]"
        return "[BLOCK_M, BLOCK_N, 1]" if self.vector else "[BLOCK_M, BLOCK_N]"

    def rows(self, name: str) -> str:
        return f"{name}[:, None, None]" if self.vector else f"{name}[:, None]"

    def cols(self, name: str) -> str:
        return f"{name}[None, :, None]" if self.vector else f"{name}[None, :]"


# --------------------------------------------------------------------------------------------------
# the menu's form steps (steps/apply.py hands `tile` and `vectorize` of a pool kernel here)
# --------------------------------------------------------------------------------------------------

def form_steps(kernel: Kernel) -> list[Strategy]:
    """Steps into the tile form (a few row x column tiles) and its vector taps where they apply;
    steps/menu.py offers them next to the flat form's blocks and the warps."""
    cfg = kernel.config
    current = (cfg.get("BLOCK_M"), cfg.get("BLOCK_N")) if is_tile(kernel) else None
    steps = [Strategy.make("tile", BLOCK_M=m, BLOCK_N=n) for m, n in TILES[min(kernel.space["nd"], 2)]
             if (m, n) != current]
    if vector_ok(kernel) and not is_vector(kernel):
        steps.append(Strategy.make("vectorize"))
    return steps


def configure(kernel: Kernel, strategy: Strategy) -> None:
    """Apply `tile BLOCK=..` (the flat form), `tile BLOCK_M=.. BLOCK_N=..` (the tile form) or
    `vectorize` (the tile form's vector taps) to a pool kernel's config; CoderError where it does
    not apply. BLOCK stays the output elements per program in both forms (steps.programs reads it)."""
    cfg = kernel.config
    args = {k: int(v) for k, v in strategy.params if k != "value"}
    if cfg.get("autotune"):
        raise CoderError("the kernel is autotuned")
    if strategy.kind == "vectorize":
        if not vector_ok(kernel):
            raise CoderError("vector taps need a fixed window and no return_indices")
        if not is_tile(kernel):
            cfg.update(form="tile", BLOCK_M=VECTOR_TILE[0], BLOCK_N=VECTOR_TILE[1],
                       BLOCK=VECTOR_TILE[0] * VECTOR_TILE[1])
        cfg["vector"] = True
    elif strategy.kind == "tile" and set(args) == {"BLOCK"}:
        _require_power_of_two(args.values())
        for key in ("BLOCK_M", "BLOCK_N", "vector"):
            cfg.pop(key, None)
        if "form" in cfg:
            cfg["form"] = "flat"
        cfg["BLOCK"] = args["BLOCK"]
    elif strategy.kind == "tile" and set(args) == {"BLOCK_M", "BLOCK_N"}:
        _require_power_of_two(args.values())
        if args["BLOCK_M"] * args["BLOCK_N"] > 8192:
            raise CoderError("a pool tile of more than 8192 outputs")
        cfg.update(form="tile", BLOCK=args["BLOCK_M"] * args["BLOCK_N"], **args)
    else:
        raise CoderError(f"`{strategy}` does not fit the pool kernel {kernel.name}: it takes "
                         "tile BLOCK=.., tile BLOCK_M=.. BLOCK_N=.. or vectorize")


def _require_power_of_two(values) -> None:
    if any(v < 1 or v & (v - 1) for v in values):
        raise CoderError("pool blocks are powers of two")
