"""The macro vocabulary: one optimization step a planner proposes and a coder applies.

Every strategy has one canonical text form that parses back to itself:

    port                                  first step: a straightforward Triton port of the reference
    fuse epilogue                         fuse the ops after a matmul/conv/reduction into its kernel
                                          (also: prologue, all, attention, softmax: see the coder)
    tile BLOCK_M=128 BLOCK_N=64 BLOCK_K=32
    num_warps 8          num_stages 3          group_m 8          split_k 4          rows 16
    persistent           vectorize             autotune
    library conv2d                        keep a vendor-library call, fuse the ops around it
    precision tf32                        a reduced precision the task allows
    fix compile_error                     repair the last failure (LLM coders)
    stop

A positional argument is stored under the key "value"; `KEY=VALUE` arguments keep a fixed order.
`legal_strategies` (which steps make sense for a program) lives with the coder that applies them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# kind -> (takes a positional value?, allowed KEY= names in canonical order, instruction template)
KINDS: dict[str, tuple[bool, tuple[str, ...], str]] = {
    "port": (False, (), "Port the reference to a straightforward, correct Triton program: one kernel "
                        "per natural group of ops, simple block sizes, no tuning yet."),
    "fuse": (True, (), "Fuse ({value}): merge ops into their neighbouring kernel so the intermediate "
                       "tensors never go through global memory."),
    "tile": (False, ("BLOCK_M", "BLOCK_N", "BLOCK_K", "BLOCK"),
             "Change the tile sizes to {params}; keep the masking correct for sizes that are not "
             "multiples of the tile."),
    "num_warps": (True, (), "Launch the kernels with num_warps={value}."),
    "num_stages": (True, (), "Software-pipeline the main loop with num_stages={value}."),
    "group_m": (True, (), "Swizzle the program order in groups of GROUP_M={value} rows of tiles so "
                          "neighbouring programs reuse the same operand tiles from L2."),
    "split_k": (True, (), "Split the reduction dimension into {value} parallel chunks and combine the "
                          "partial results."),
    "rows": (True, (), "Give each program {value} short rows of a row reduction as one [rows, columns] "
                       "tile, reducing along the columns, instead of one row per program."),
    "persistent": (False, (), "Make the kernel persistent: launch one program per SM and loop over "
                              "tiles inside it."),
    "vectorize": (False, (), "Process several elements per thread with wide, contiguous loads."),
    "autotune": (False, (), "Wrap the kernel in @triton.autotune over a small set of block sizes, "
                            "num_warps and num_stages keyed on the problem sizes."),
    "library": (True, (), "Keep the vendor-library call for {value} and fuse the surrounding "
                          "elementwise ops into Triton kernels."),
    "precision": (True, (), "Use {value} arithmetic where the task allows it, accumulating in fp32."),
    "fix": (True, (), "The last attempt failed with a {value}; fix it without changing what the "
                      "program computes."),
    "stop": (False, (), "Stop optimizing: keep the current program."),
}


class StrategyError(ValueError):
    pass


@dataclass(frozen=True)
class Strategy:
    kind: str
    params: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise StrategyError(f"unknown strategy kind {self.kind!r}; known: {', '.join(KINDS)}")
        positional, names, _ = KINDS[self.kind]
        keys = [k for k, _ in self.params]
        if positional != ("value" in keys):
            need = "needs one positional argument" if positional else "takes no positional argument"
            raise StrategyError(f"{self.kind!r} {need}")
        bad = [k for k in keys if k != "value" and k not in names]
        if bad:
            raise StrategyError(f"{self.kind!r} takes no argument(s) {bad}; allowed: {list(names)}")
        # canonical order, so equal strategies compare and hash equal
        order = {name: i for i, name in enumerate(("value", *names))}
        object.__setattr__(self, "params", tuple(sorted(self.params, key=lambda kv: order[kv[0]])))

    @classmethod
    def make(cls, kind: str, value: Any = None, **kwargs: Any) -> Strategy:
        params = ([("value", value)] if value is not None else []) + list(kwargs.items())
        return cls(kind, tuple(params))

    @classmethod
    def parse(cls, text: str) -> Strategy:
        tokens = text.split()
        if not tokens:
            raise StrategyError("empty strategy text")
        params: list[tuple[str, Any]] = []
        for token in tokens[1:]:
            key, eq, value = token.partition("=")
            params.append((key, _parse_value(value)) if eq else ("value", _parse_value(key)))
        return cls(tokens[0], tuple(params))

    @property
    def args(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def value(self) -> Any:
        return self.args.get("value")

    @property
    def is_stop(self) -> bool:
        return self.kind == "stop"

    def __str__(self) -> str:
        parts = [self.kind]
        for key, value in self.params:
            parts.append(str(value) if key == "value" else f"{key}={value}")
        return " ".join(parts)

    def instruction(self) -> str:
        """The step in plain words, for LLM coders."""
        named = ", ".join(f"{k}={v}" for k, v in self.params if k != "value")
        return KINDS[self.kind][2].format(value=self.value, params=named)


STOP = Strategy("stop")
PORT = Strategy("port")


def _parse_value(text: str) -> Any:
    return int(text) if text.lstrip("-").isdigit() else text


def legal_menu(candidates: list[Strategy]) -> list[Strategy]:
    """A coder's legal next steps in the shape planners expect: no duplicates, no `port` or `stop`
    among the candidates, and `stop` last (always legal once a program exists)."""
    seen: dict[Strategy, None] = {}
    for strategy in candidates:
        if strategy.kind not in ("port", "stop"):
            seen.setdefault(strategy, None)
    return [*seen, STOP]
