"""The heuristic planner: an expert's rule list, no learning.

Order: port (or keep the vendor library call where port is not offered), then fuse (a whole
attention or matmul -> softmax chain first, then every pair at once, where the coder offers those;
pair by pair where that was slower), then tune by the task's
regime, read from the summary:

- matmul-heavy (most FLOPs in matmuls/convs and FLOP/byte above `compute_bound_intensity`):
  fp32 matmul dots first move to `precision tf32x3` (three TF32 tensor-core products: on the H200
  its error against an fp64 product was 2.4e-7 against cuBLAS fp32's 1.1e-6, at 1.07-1.56x cuBLAS's
  speed; convolutions keep the TF32 they port with, as cuDNN's default). The template coder ports
  fp32 matmuls at tf32x3 already, so its menu holds no such step (a step that changes nothing is
  not offered) and the wish passes on; it stays for programs with an FMA dot left. Then split-K
  when the output has fewer 128x128 tiles than SMs or the reduction is far longer than the output
  is wide (`split_value`: as many slices as give a few-tile output two programs per SM, else 4;
  where the port split already, the nearest other split is tried), then
  autotune, then persistent (the template's 16-bit GEMMs load tiles with TMA; persistent and
  autotuned they ran 0.99-1.00x cuBLAS on three of four H200 shapes), GROUP_M=8 L2 swizzle, and
  only then fixed tiles and single knobs. Autotune comes right after the fusions because its menu
  holds the known-good configurations: on the H100 and H200 suite runs, a fixed tile was slower
  than the port more often than not, and linear_gelu_bf16 and linear_swish_fp16 stopped on two
  knobs that did not help (`patience`) before reaching autotune.
- memory-bound: a split of the reduced extent into 16 parallel chunks where the coder offers one
  (it does only for a reduction that launches fewer than two programs per SM: on the H200 suite run
  mean_dim0's port ran 256 programs, 16384 columns of 64, each down 65536 rows, at 50% of the floor
  and 0.49x torch.compile, and the heuristic spent its steps on a 2-D tile and 2 warps, both slower;
  16 chunks make 4096 programs), then vectorize, a larger 1-D BLOCK, 8 warps when the largest
  tensor is large (mean_dim0 split 16: 1.070 ms with 4 warps, 0.952 ms with 8), autotune.

After a step the verifier refused because eager PyTorch computed an output in fp32 where the program's
TF32 did not match it (a rejection whose reason is tf32_beyond_eager; the template coder's own retry
already makes its TF32 kernels fp32-exact, coders/template/exact_fp32.py, so this is for a step whose
retries did not), an fp32-exact precision comes first: `precision tf32x3` (on an H100 the static runs
loop at tf32x3 ran 2.38x eager on KernelBench level-2's fp32-eager convs against 1.35x at ieee), else
`precision ieee`.

Wanted parameters are matched to the nearest legal strategy of the same kind (log2 distance). Each
kind is tried once, except fusions, which add up (see `may_repeat`); a step already tried is not
proposed again, and the planner stops once `patience` steps in a row did not help (rejected, or
accepted without a better speedup) or its list is used up. It also stops once the current program
runs at `at_roofline` of the task's roofline floor (memory bandwidth or peak FLOP/s): on the H100
suite run, nine of 19 tasks spent 13 more steps (185 s of verification) after reaching 95% of the
floor; two of those steps won 2.7% and 3.6% (from 98% and 97%), the rest nothing.
"""

from __future__ import annotations

import math
from typing import Any

from mtmc.protocols import PlanState, StepRecord
from mtmc.strategies import STOP, Strategy
from mtmc.tasks import TaskSummary
from mtmc.verify.verdict import TF32_BEYOND_EAGER

Wish = tuple[str, dict[str, Any]]  # (kind, wanted params; empty = any of that kind)
CUMULATIVE = {"fuse"}  # kinds whose legal variants add up (fuse epilogue, then fuse softmax, ...)
# A whole matmul -> softmax [-> matmul] chain in one step, before the pairwise fusions: on the H200
# suite run attention_causal_fp16 spent two of its four steps getting there (fuse epilogue first).
# Then every pair at once: on an H100 (2026-11-27) level-2 conv -> pointwise -> pool -> pointwise
# chains spent two or three of five steps on pairwise fusions and still ended with two or three kernels.
WHOLE_CHAIN_FUSIONS: list[Wish] = [("fuse", {"value": "attention"}), ("fuse", {"value": "softmax"}),
                                   ("fuse", {"value": "all"})]
# after a tf32_beyond_eager rejection (module docstring): tf32x3 where it is legal, else ieee
EXACT_FP32_WISHES: list[Wish] = [("precision", {"value": "tf32x3"}), ("precision", {"value": "ieee"})]


class HeuristicPlanner:
    def __init__(self, compute_bound_intensity: float = 20.0, patience: int = 2, sm_count: int = 132,
                 block: int = 2048, large_output: int = 1 << 20, at_roofline: float = 0.98,
                 reduce_split: int = 16) -> None:
        self.compute_bound_intensity = compute_bound_intensity  # FLOP/byte; fp32 ridge is ~15 on H100
        self.patience = patience
        self.sm_count = sm_count  # 132 on H100 SXM; split-K below one 128x128 tile per SM
        self.block = block  # wanted 1-D BLOCK for memory-bound kernels
        self.large_output = large_output  # elements; above this, 8 warps per program
        self.at_roofline = at_roofline  # share of the roofline floor at which there is nothing left to win
        self.reduce_split = reduce_split  # chunks for a memory-bound reduction with too few programs

    def propose(self, state: PlanState) -> Strategy:
        moves = [s for s in state.legal if not s.is_stop]
        if not moves or stalled(state.history, self.patience):
            return STOP
        if state.program is None:
            return _first_of_kind(moves, "port") or _first_of_kind(moves, "library") or moves[0]
        floor_share = state.verdict.roofline_fraction if state.verdict is not None else None
        if floor_share is not None and floor_share >= self.at_roofline:
            return STOP  # at the hardware's floor: any further step can only tie or lose
        tried = {record.strategy for record in state.history}
        tried_kinds = {Strategy.parse(text).kind for text in tried}
        fresh = [s for s in moves if str(s) not in tried or may_repeat(str(s), state.history)]
        for kind, params in exact_fp32_wishes(state.history) + self.wishlist(state.summary):
            if kind in tried_kinds and kind not in CUMULATIVE:
                continue  # one tile (warps, stages, ...) choice per run: the alternatives are not steps
            pick = closest(kind, params, fresh)
            if pick is not None:
                return pick
        return STOP

    def wishlist(self, summary: TaskSummary) -> list[Wish]:
        if self.is_matmul_heavy(summary):
            half = _is_16bit(summary)
            tile = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64} if half else \
                {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32}
            wishes: list[Wish] = [*WHOLE_CHAIN_FUSIONS, ("fuse", {})]
            if not half and "convolution" not in summary.ops:
                # convolutions already run TF32 tiles, as eager's cuDNN does (coders/template/
                # conv_lower.py): tf32x3 would triple their tensor-core work for accuracy eager lacks
                wishes.append(("precision", {"value": "tf32x3"}))
            if self.wants_split_k(summary):
                wishes.append(("split_k", {"value": self.split_value(summary)}))
            return wishes + [("autotune", {}), ("persistent", {}), ("group_m", {"value": 8}),
                             ("tile", tile), ("num_stages", {"value": 4 if half else 3}),
                             ("num_warps", {"value": 8})]
        warps = 8 if _largest_numel(summary) >= self.large_output else 4
        return [*WHOLE_CHAIN_FUSIONS, ("fuse", {}), ("split_k", {"value": self.reduce_split}),
                ("vectorize", {}), ("tile", {"BLOCK": self.block}),
                ("num_warps", {"value": warps}), ("autotune", {})]

    def wants_split_k(self, summary: TaskSummary) -> bool:
        """Split the reduction when the output has fewer 128x128 tiles than SMs (idle SMs), or when
        the reduction is much longer than the output's side (K=131072 over a 2048x2048 output)."""
        out = _output_numel(summary)
        k = summary.matmul_flops / max(2 * out, 1)  # a GEMM does 2*M*N*K FLOPs into M*N outputs
        return out < self.sm_count * 128 * 128 or k >= 8 * math.sqrt(out)

    def split_value(self, summary: TaskSummary) -> int:
        """The template port's own rule (coders/template/lower/matmul.py port_split_k): with fewer
        output tiles (64x64 fp32, 128x128 16-bit) than SMs, the power of two that makes two programs
        per SM, each slice 4096 or more of K, at most 64; else 4, the wish it always was."""
        out = _output_numel(summary)
        k = summary.matmul_flops / max(2 * out, 1)
        tiles = max(1, out // (128 * 128 if _is_16bit(summary) else 64 * 64))
        split = 1
        while tiles < self.sm_count and tiles * split < 2 * self.sm_count and split * 2 * 4096 <= k \
                and split < 64:
            split *= 2
        return split if split > 1 else 4

    def is_matmul_heavy(self, summary: TaskSummary) -> bool:
        return (summary.matmul_flops * 2 >= summary.flops > 0
                and summary.intensity >= self.compute_bound_intensity)


def exact_fp32_wishes(history: list[StepRecord]) -> list[Wish]:
    """EXACT_FP32_WISHES once a step was rejected for tf32_beyond_eager (Verdict.reason), else none."""
    refused = any(not r.accepted and r.reason == TF32_BEYOND_EAGER for r in history)
    return list(EXACT_FP32_WISHES) if refused else []


def may_repeat(strategy: str, history: list[StepRecord]) -> bool:
    """Fusions add up, so a fusion step already tried may be proposed again: after it was accepted
    (the same name now merges the next pair: kl_div_rows needs three `fuse epilogue` to become one
    kernel), or after it was rejected once another fusion has changed the kernels (rmsnorm_fp16's
    `fuse epilogue` gained nothing alone on an H100, and makes one kernel of the row after
    `fuse prologue`). The coder stops offering a fusion when no pair is left."""
    kind = Strategy.parse(strategy).kind
    tries = [r for r in history if r.strategy == strategy]
    if kind not in CUMULATIVE or not tries:
        return False
    last = tries[-1]
    fused_since = any(r.index > last.index and r.accepted and Strategy.parse(r.strategy).kind == kind
                      for r in history)
    return last.accepted or fused_since


def stalled(history: list[StepRecord], patience: int) -> bool:
    """True when the last `patience` steps each failed to help: rejected, or accepted without
    beating the best speedup so far (without timings, being accepted is helping)."""
    streak, best = 0, None
    for record in history:
        helped = record.accepted and (record.speedup is None or best is None or record.speedup > best)
        if record.accepted and record.speedup is not None:
            best = record.speedup if best is None else max(best, record.speedup)
        streak = 0 if helped else streak + 1
    return streak >= patience


def closest(kind: str, params: dict[str, Any], candidates: list[Strategy]) -> Strategy | None:
    """The candidate of `kind` nearest to the wanted params (first one on ties; any if none wanted)."""
    # a named value (a precision) must match exactly: tf32x3 keeps fp32 accuracy, tf32 does not
    same = [s for s in candidates if s.kind == kind and all(
        s.args.get(k) == v for k, v in params.items() if not isinstance(v, int))]
    if not same:
        return None
    return min(same, key=lambda s: _distance(params, s.args))


def _distance(wanted: dict[str, Any], offered: dict[str, Any]) -> float:
    total = 0.0
    for key, value in wanted.items():
        got = offered.get(key)
        if isinstance(value, int) and isinstance(got, int) and value > 0 and got > 0:
            total += abs(math.log2(got / value))
        elif got != value:
            total += 4.0  # a missing or non-numeric mismatch counts like a 16x miss
    return total


def _first_of_kind(moves: list[Strategy], kind: str) -> Strategy | None:
    return next((s for s in moves if s.kind == kind), None)


def _output_numel(summary: TaskSummary) -> int:
    return sum(math.prod(t.shape) for t in summary.outputs)


def _largest_numel(summary: TaskSummary) -> int:
    return max(math.prod(t.shape) for t in [*summary.inputs, *summary.outputs])


def _is_16bit(summary: TaskSummary) -> bool:
    return any(t.dtype in ("float16", "bfloat16") for t in summary.inputs)
