"""The pool kernel's forms (flat, tile, rows, vector taps) and the menu steps between them
(emit/pool.py and emit/pool_rows.py emit them; steps/menu.py and steps/apply.py hand the steps here;
pooling.py asks `port_config` for the port's form)."""

from __future__ import annotations

from coders.template.ir import Kernel
from mtmc.protocols import CoderError
from mtmc.strategies import Strategy

# the tile form's menu (rows x columns of output): a 1-D pool's rows are independent, so wide
# rows; a 2-D/3-D pool's row blocks share the windows' halo rows, so taller tiles
TILES = {1: ((1, 1024), (4, 256), (8, 128)), 2: ((8, 128), (16, 64), (32, 32), (4, 64))}
VECTOR_TILE = (8, 32)  # the tile `vectorize` picks from the flat form: KV taps per output in registers
VECTOR_MAX = 16  # a vector step's taps along the last dim, at most (registers: BLOCK_M x BLOCK_N x KV)
# the rows form's strips (output columns per program): a 1-D pool's rows are long and independent,
# so wide strips; a 2-D/3-D plane's rows are as wide as its output, and a strip wider than the row
# only masks lanes off
STRIPS = {1: (512, 1024, 2048), 2: (64, 128, 256, 512)}
PORT_STRIP = {1: 1024, 2: 512}  # the port's strip, at most (4 warps: 8 or 4 columns per thread)
BAND_NOMINAL = 16  # rows per program that steps.programs assumes (the launcher picks the band)
FLAT_CONFIG = {"BLOCK": 512, "num_warps": 4}  # the flat form: output elements per program
# the port's rows form where windows share rows (slide_in_port): 2 output rows per loop step, a strip
# of at most 128 columns, 4 warps
SLIDE_CONFIG = {"slide": 2, "BLOCK_N": 128, "num_warps": 4}
# the port's shifted taps (shift_in_port; emit/pool_shift.py) per probed shape: the best variant of
# benchmarks/probes/2026-11-28-pool (sh8-2048-w8, sh4-512-w4-s2, sh2-64-w1-s2) and, for 46's
# undilated 3-D window, of 2026-11-29-pool (sh2-128-w2-s2); one group per thread
SHIFT_CONFIGS = {"1d": {"BLOCK_N": 2048, "num_warps": 8, "shift": 8},
                 "2d": {"BLOCK_N": 512, "num_warps": 4, "shift": 4, "slide": 2},
                 "3d-dilated": {"BLOCK_N": 64, "num_warps": 1, "shift": 2, "slide": 2},
                 "3d-128": {"BLOCK_N": 128, "num_warps": 2, "shift": 2, "slide": 2}}
# the port's separated taps (sep_in_port; emit/pool_sep.py): 2026-11-30-pool's sep-64-w2-s2 on 43's
# window (the slide, strip 64, 2 warps, 2 output rows a step)
SEP_CONFIG = {"BLOCK_N": 64, "num_warps": 2, "slide": 2, "sep": 1}


# --------------------------------------------------------------------------------------------------
# forms
# --------------------------------------------------------------------------------------------------

def is_tile(kernel: Kernel) -> bool:
    return kernel.config.get("form", "flat") == "tile"


def is_rows(kernel: Kernel) -> bool:
    return kernel.config.get("form", "flat") == "rows" and rows_ok(kernel)


def is_slide(kernel: Kernel) -> bool:
    """The rows form's slide (config `slide`: output rows per loop step; emit/pool_slide.py): a queue
    of row results in the strip's own registers instead of the ring, several rows per step."""
    return is_rows(kernel) and bool(kernel.config.get("slide"))


def is_vector(kernel: Kernel) -> bool:
    """Vector taps in the tile or rows form, where their preconditions hold (elsewhere the form
    loops over every tap)."""
    return (is_tile(kernel) or is_rows(kernel)) and bool(kernel.config.get("vector")) and vector_ok(kernel)


def rows_ok(kernel: Kernel) -> bool:
    """The rows form's preconditions, vector_ok's: a fixed window (its ring of row results holds a
    fixed span of rows) and no indices (a row's reduction drops the tap positions)."""
    return vector_ok(kernel)


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
    """Steps into the tile form (a few row x column tiles), the rows form (a few strip widths) and
    vector taps where they apply; steps/menu.py offers them next to the flat form's blocks and the
    warps."""
    cfg = kernel.config
    nd = min(kernel.space["nd"], 2)
    current = (cfg.get("BLOCK_M"), cfg.get("BLOCK_N")) if is_tile(kernel) else None
    steps = [Strategy.make("tile", BLOCK_M=m, BLOCK_N=n) for m, n in TILES[nd] if (m, n) != current]
    if rows_ok(kernel):
        strip = cfg.get("BLOCK_N") if is_rows(kernel) else None
        steps += [Strategy.make("tile", BLOCK_N=n) for n in STRIPS[nd] if n != strip]
    if vector_ok(kernel) and not is_vector(kernel):
        steps.append(Strategy.make("vectorize"))
    return steps


def port_config(kernel: Kernel) -> dict:
    """The port's configuration of a pool kernel: the slide with separated taps on 43's window
    (`sep_in_port`), else the rows form with shifted taps where the probe measured them win
    (`shift_in_port`), else the rows form where it applies and the window is not
    dilated (with the slide where windows share rows above 1-D: `slide_in_port`), else the flat
    form.

    The rows form reads each input row once per program and keeps the window's rows in registers,
    so a tap is one contiguous load of the strip instead of a gather per output (the flat form: a
    div/mod per element and K**nd taps each through L1). Its strip covers the output row up to
    PORT_STRIP. On an H100 (benchmarks/probes/2026-11-27-pool, KernelBench level 1) it took the
    average pools from 41-62% of the memory floor to 72-93% (45: 93%, with plain taps; its vector
    taps ran 73%) and 42's max pool from 19% to 24%; on the two dilated max pools (41 and 43,
    dilation 3) it ran at 0.69x and 0.35x of the flat form, which they keep. Vector taps stay a
    menu step (`vectorize`)."""
    fixed = kernel.space.get("fixed") or {}
    if measured := sep_in_port(kernel) or shift_in_port(kernel):
        return {"form": "rows", **measured, "BLOCK": measured["BLOCK_N"] * BAND_NOMINAL}
    if not rows_ok(kernel) or any(d != 1 for d in fixed.get("dilation", [1])):
        return dict(FLAT_CONFIG)
    nd = min(kernel.space["nd"], 2)
    out_w = max(1, kernel.space["traced"][-1])
    strip = min(max(1 << (out_w - 1).bit_length(), STRIPS[nd][0]), PORT_STRIP[nd])
    if slide_in_port(kernel):
        # 128 as probed (at slide 8, 256 columns and 8 warps ran 1% faster on 42, 1.7x slower on 46);
        # a row of at most 64 columns keeps the ring's strip of 64, which masks fewer lanes off
        strip = min(strip, SLIDE_CONFIG["BLOCK_N"])
        return {"form": "rows", **SLIDE_CONFIG, "BLOCK_N": strip, "BLOCK": strip * BAND_NOMINAL}
    return {"form": "rows", "BLOCK_N": strip, "BLOCK": strip * BAND_NOMINAL, "num_warps": 4}


def slide_in_port(kernel: Kernel) -> bool:
    """Whether the port takes the slide (SLIDE_CONFIG) over the ring: a 2-D or 3-D pool whose traced
    window is fixed, undilated in every pooled dim (port_config's rows form) and whose windows share
    rows (stride < kernel along the pooled dim before the last: the slide's queue is on).

    On an H100 (2026-11-27, benchmarks/probes/2026-11-27-pool, h100-slide.log; KernelBench level 1)
    slide 2, strip 128, 4 warps took 42's MaxPool2d k4 s1 p1 from 5.97 ms (the ring, strip 512;
    23.8% of the floor) to 3.33 ms (42.6%; slide 4 and 8 ran 3.39 and 3.31, the ring at strip 128
    7.16), and 46's AvgPool3d k3 s2 p1 from 4.42 ms (72.2%) to 3.42 ms (93.4%; slide 4 3.40, slide 8
    4.44). On an H200 the same form ran 46 at 81.3% (2026-11-29-pool) and 81.6% (2026-11-30-pool),
    and 46 no longer takes it: shift_in_port's sh2-128-w2-s2 (85.5%, 86.9%) goes first. The dilated
    pools stay off this rule (the flat form, where shift_in_port and sep_in_port do not take them):
    43's MaxPool3d d3 ran 3.87 ms against the flat form's 3.62 (slide 8, strip 256, 8 warps: 16.6),
    41's MaxPool1d d3 3.80 against 3.78. Not probed, so unchanged: 1-D pools (44's AvgPool1d k8 s1),
    whose rows are independent (no queue), and windows that share no rows (45's AvgPool2d k11 s11, 93%
    of the floor in the ring)."""
    fixed = kernel.space.get("fixed")
    if not fixed or kernel.space["nd"] < 2 or any(d != 1 for d in fixed.get("dilation", [1])):
        return False
    r = kernel.space["nd"] - 2
    return fixed["stride"][r] < fixed["kernel_size"][r]


def sep_in_port(kernel: Kernel) -> dict | None:
    """The slide's separated taps (SEP_CONFIG; emit/pool_sep.py) where the port takes them, else None
    (then shift_in_port, the same kind of answer, is asked): 43's window
    only, the one measured. On an H200 (2026-11-28, benchmarks/probes/2026-11-30-pool, pool30.log;
    KernelBench level-1 43_Max_Pooling_3D, [16, 32, 128^3] -> 62^3; floor 1.120 ms) sep-64-w2-s2 ran
    1.203 ms, 93.1% of the memory floor, max error 0, against the port's shift (sh2-64-w1-s2) 2.065 ms
    (54.2%); at one warp sep ran 67.2% (slide 2), 72.0% (slide 1), 57.8% (slide 4). So: a 3-D max
    pool, k3 s2 p1 d3 in every dim, floor mode, whose traced output row fits the strip (33 to 64
    outputs, 43's 62) and whose input row its 64 x 2 columns (the launcher's SEP on: 43's 128). Other
    dilated 3-D pools keep the shift (shift_in_port) or the flat form: not measured."""
    fixed = kernel.space.get("fixed")
    if not fixed or kernel.space["nd"] != 3 or kernel.space["pool"] != "max" or not rows_ok(kernel):
        return None
    window = {k: fixed.get(k) for k in ("kernel_size", "stride", "padding", "dilation")}
    if window != {"kernel_size": [3] * 3, "stride": [2] * 3, "padding": [1] * 3, "dilation": [3] * 3}:
        return None
    n = SEP_CONFIG["BLOCK_N"]
    out_w, in_w = kernel.space["traced"][-1], kernel.space["in_traced"][-1]
    fits = not fixed.get("ceil_mode") and n // 2 < out_w <= n and in_w <= n * 2
    return dict(SEP_CONFIG) if fits else None


def shift_in_port(kernel: Kernel) -> dict | None:
    """The port's rows form with shifted taps (SHIFT_CONFIGS) where the 2026-11-28 and 2026-11-29
    pool probes measured it win, else None (the port's other forms). Each case is the shape of the
    pools they measured (benchmarks/probes/2026-11-28-pool, h100-shift.log, and 2026-11-29-pool on an
    H200; KernelBench level 1, % of the memory floor, the port then the shift; every variant exact):
    - 1-D, stride 1, an output row wider than 1024 (41 MaxPool1d k8 p4 d3, rows of 65523: the flat
      form 56.8% -> 94.2%; 44 AvgPool1d k8 p4, 65537: the rows form 67.6% -> 94.4%);
    - 2-D undilated, stride 1, windows sharing rows (the slide's), the row in one strip of 512 (257 to
      512 outputs; 42 MaxPool2d k4 p1, 511: the slide at strip 128 42.6% -> 89.4%);
    - 3-D dilated, stride 2 along the row, the row in one strip of 64 (33 to 64 outputs; 43 MaxPool3d
      k3 p1 d3, 62: the flat form 43.7% -> 69.3%; its plain rows form ran 36.8%; 43's own window
      takes the separated taps since, sep_in_port, checked first);
    - 3-D undilated, stride 2 along the row, windows sharing rows (the slide's), the row in one strip
      of 128 (65 to 128 outputs; 46 AvgPool3d k3 p1, 128 wide, on an H200: the slide at strip 128,
      4 warps, plain taps 81.3% -> G 2, 2 warps 85.5%).
    In every case the windows overlap along the row (stride < the window's span): the taps the shift
    folds from aligned chunks are loads of the same columns. Not probed, so left as they were: windows
    that do not overlap (45's k11 s11 and the level-2 pools, stride = kernel), other strides and row
    widths."""
    fixed = kernel.space.get("fixed")
    if not fixed or not rows_ok(kernel):
        return None
    nd = kernel.space["nd"]
    ks, st = fixed["kernel_size"], fixed["stride"]
    dl = fixed.get("dilation", [1] * nd)
    out_w = kernel.space["traced"][-1]
    if st[-1] >= dl[-1] * (ks[-1] - 1) + 1:  # the windows do not overlap along the row
        return None
    dilated = any(d != 1 for d in dl)
    if nd == 1 and st[-1] == 1 and out_w > 1024:
        return dict(SHIFT_CONFIGS["1d"])
    if nd == 2 and st[-1] == 1 and 256 < out_w <= 512 and slide_in_port(kernel):
        return dict(SHIFT_CONFIGS["2d"])
    if nd == 3 and dilated and st[-1] == 2 and 32 < out_w <= 64:
        return dict(SHIFT_CONFIGS["3d-dilated"])
    if nd == 3 and st[-1] == 2 and 64 < out_w <= 128 and slide_in_port(kernel):
        return dict(SHIFT_CONFIGS["3d-128"])
    return None


def configure(kernel: Kernel, strategy: Strategy) -> None:
    """Apply `tile BLOCK=..` (the flat form), `tile BLOCK_M=.. BLOCK_N=..` (the tile form),
    `tile BLOCK_N=..` (the rows form) or `vectorize` (vector taps: in the rows form, else the tile
    form's) to a pool kernel's config; CoderError where it does not apply. BLOCK stays about the
    output elements per program in every form (steps.programs reads it). A strip step keeps the
    port's slide (the strips around it are tuned in the form that won); a step into the flat or tile
    form drops it, and a strip step from there walks the ring."""
    cfg = kernel.config
    args = {k: int(v) for k, v in strategy.params if k != "value"}
    if cfg.get("autotune"):
        raise CoderError("the kernel is autotuned")
    if strategy.kind == "vectorize":
        if not vector_ok(kernel):
            raise CoderError("vector taps need a fixed window and no return_indices")
        if not is_tile(kernel) and not is_rows(kernel):
            cfg.update(form="tile", BLOCK_M=VECTOR_TILE[0], BLOCK_N=VECTOR_TILE[1],
                       BLOCK=VECTOR_TILE[0] * VECTOR_TILE[1])
        cfg["vector"] = True
    elif strategy.kind == "tile" and set(args) == {"BLOCK"}:
        _require_power_of_two(args.values())
        for key in ("BLOCK_M", "BLOCK_N", "vector", "BAND", "slide", "shift"):
            cfg.pop(key, None)
        if "form" in cfg:
            cfg["form"] = "flat"
        cfg["BLOCK"] = args["BLOCK"]
    elif strategy.kind == "tile" and set(args) == {"BLOCK_M", "BLOCK_N"}:
        _require_power_of_two(args.values())
        if args["BLOCK_M"] * args["BLOCK_N"] > 8192:
            raise CoderError("a pool tile of more than 8192 outputs")
        cfg.pop("BAND", None)
        cfg.pop("slide", None)
        cfg.pop("shift", None)  # the rows form's (pool_shift.py)
        cfg.update(form="tile", BLOCK=args["BLOCK_M"] * args["BLOCK_N"], **args)
    elif strategy.kind == "tile" and set(args) == {"BLOCK_N"}:
        _require_power_of_two(args.values())
        if not rows_ok(kernel) or args["BLOCK_N"] > 4096:
            raise CoderError("the rows form needs a fixed window, no return_indices and a strip of "
                             "at most 4096 columns")
        cfg.pop("BLOCK_M", None)
        cfg.update(form="rows", BLOCK_N=args["BLOCK_N"], BLOCK=args["BLOCK_N"] * BAND_NOMINAL)
    else:
        raise CoderError(f"`{strategy}` does not fit the pool kernel {kernel.name}: it takes "
                         "tile BLOCK=.., tile BLOCK_M=.. BLOCK_N=.., tile BLOCK_N=.. or vectorize")


def _require_power_of_two(values) -> None:
    if any(v < 1 or v & (v - 1) for v in values):
        raise CoderError("pool blocks are powers of two")
