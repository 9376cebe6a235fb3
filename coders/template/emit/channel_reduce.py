"""A reduction over a conv's output channels in its epilogue (fuse/channels.py merges it there).

A conv or transposed-conv kernel's tile is BLOCK_M output pixels by BLOCK_N output channels. When
one program's tile holds every output channel (groups == 1 and BLOCK_N >= C_out, chosen by the
launcher at run time), the body's reductions (min, max, sum, mean, and what is built of them:
logsumexp, softmax) reduce the tile's rows across its columns in registers (common.tile_epilogue).
An output of the reduced values, (N, 1, *spatial) or (N, *spatial), is written one value per pixel;
the full-size conv output is written only where another step still reads it.
"""

from __future__ import annotations

from collections.abc import Callable

from coders.template.emit.common import REDUCTIONS, SMEM_BYTES, FusionError, Writer, pow2_at_least_16
from coders.template.ir import Kernel, Output

# the most output channels one tile holds: BLOCK_N = 256 fp32 columns of the accumulator
MAX_CHANNELS = 256
# BLOCK_M x BLOCK_N of a tile that keeps every channel: the fp32 accumulator stays in registers
# (a 64 x 256 tile is 128 values per thread at 4 warps)
TILE_ELEMENTS = 128 * 128


def reduces_channels(kernel: Kernel) -> bool:
    """The kernel's epilogue reduces over the output channels (a conv meaning its output over the
    pixels, emit/conv_mean.py, reduces the other way)."""
    return "spatial_mean" not in kernel.space and any(op.op in REDUCTIONS for op in kernel.body)


def fit_tile(kernel: Kernel) -> None:
    """The config of a conv that just took a channel reduction: every traced channel in one tile,
    and BLOCK_M no larger than keeps the tile in registers. The launcher sets BLOCK_N again from
    the run-time C_out; the config's value is what the cost model and the menu see."""
    cfg = kernel.config
    cfg["BLOCK_N"] = pow2_at_least_16(kernel.space["traced"][1])  # every channel, and tl.dot's 16
    cfg["BLOCK_M"] = max(16, min(cfg["BLOCK_M"], TILE_ELEMENTS // cfg["BLOCK_N"]))
    itemsize = 2 if kernel.space.get("dtype") in ("float16", "bfloat16") else 4
    stage = (cfg["BLOCK_M"] + cfg["BLOCK_N"]) * cfg.get("BLOCK_K", 0) * itemsize  # an a and a b tile
    # the menu's steps are held to SMEM_BYTES; a fusion is not, so the widened tile keeps its
    # pipelined buffers within it here
    while cfg.get("num_stages", 1) > 1 and cfg["num_stages"] * stage > SMEM_BYTES:
        cfg["num_stages"] -= 1


def varies_by_channel(kernel: Kernel) -> dict[str, bool]:
    """Which body values differ from one output channel to the next (a reduction's result does not)."""
    varies: dict[str, bool] = {}
    for op in kernel.body:
        if op.op == "acc":
            varies[op.out] = True
        elif op.op == "load":
            varies[op.out] = 1 in kernel.operands[op.args[0]].dims
        elif op.op in REDUCTIONS:
            varies[op.out] = False
        else:
            varies[op.out] = any(varies.get(a, False) for a in op.args if isinstance(a, str))
    return varies


def is_reduced(out: Output) -> bool:
    return 1 not in out.dims


def check(kernel: Kernel) -> None:
    """Raise FusionError for outputs a channel-reducing epilogue cannot write: each is the whole
    output, or one value per pixel computed from reductions (not from one channel's values)."""
    rank = len(kernel.space["traced"])
    full, per_pixel = list(range(rank)), [0, *range(2, rank)]
    if kernel.space.get("form") == "direct":
        raise FusionError("the direct (depthwise) form's tile spans the channels of several groups")
    varies = varies_by_channel(kernel)
    for out in kernel.outputs:
        if out.dims not in (full, per_pixel):
            raise FusionError(f"output {out.value}: a conv writes whole outputs or one value per pixel")
        if is_reduced(out) and varies.get(out.src, False):
            raise FusionError(f"output {out.value} is one value per pixel but varies by channel")


def output_shape(out: Output, batch: str, channels: str, pixels: list[str]) -> str:
    """The allocation's shape: (N, C_out, *spatial), or reduced (N, 1, *spatial) / (N, *spatial)."""
    if not is_reduced(out):
        middle = [channels]
    else:
        middle = ["1"] if out.keepdim else []
    return "(" + ", ".join([batch, *middle, *pixels]) + ")"


def launch_block_n(w: Writer, channels: str, groups: str) -> str:
    """The launcher's BLOCK_N of a channel-reducing conv, every output channel in one tile: the
    launcher variable holding it (a launcher local starts with "_", as no graph value does)."""
    w(f"assert {groups} == 1, 'the channel reduction in the epilogue needs groups == 1'")
    w(f"_block_n = max(16, triton.next_power_of_2({channels}))  # one tile holds every output channel")
    return "_block_n"


def launch_blocks(w: Writer, kernel: Kernel, consts: list[str], channels: str, groups: str,
                  grid: Callable[[str, str], str]) -> list[str]:
    """The grid line and the block arguments of a conv's or transposed conv's launch: the config's,
    none under autotune (its configs give them), and a channel-reducing kernel's BLOCK_N, which the
    launcher sets from `channels`. `grid(m, n)` is the grid for the BLOCK_M and BLOCK_N expressions."""
    cfg = kernel.config
    given = {} if cfg.get("autotune") else {k: str(cfg[k]) for k in consts}
    if reduces_channels(kernel):
        given["BLOCK_N"] = launch_block_n(w, channels, groups)
    m, n = (given.get(k, f"meta['{k}']") for k in ("BLOCK_M", "BLOCK_N"))
    w(("grid = lambda meta: " if cfg.get("autotune") else "grid = ") + grid(m, n))
    return [f"{k}={v}" for k, v in given.items()]


def tuning_menu(kernel: Kernel, keys: list[str], candidates: list[tuple]) -> tuple[list[str], list[tuple]]:
    """The autotune keys and candidates of a channel-reducing conv: BLOCK_N is the launcher's (it
    follows C_out), so it leaves the configs, and BLOCK_M keeps the tile within TILE_ELEMENTS."""
    at = keys.index("BLOCK_N")
    limit = TILE_ELEMENTS // pow2_at_least_16(kernel.space["traced"][1])
    kept = [c[:at] + c[at + 1:] for c in candidates if c[keys.index("BLOCK_M")] <= max(16, limit)]
    return keys[:at] + keys[at + 1:], kept
