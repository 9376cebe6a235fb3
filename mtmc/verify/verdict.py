"""The verifier's typed result. Every candidate gets one; a bad candidate never raises."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    OK = "ok"
    COMPILE_ERROR = "compile_error"  # syntax error, import failure, Triton compile failure
    RUNTIME_ERROR = "runtime_error"  # raised while running, illegal memory access
    TIMEOUT = "timeout"  # worker exceeded its wall-clock budget
    CRASH = "crash"  # worker died: segfault, OOM kill, abort
    INCORRECT = "incorrect"  # ran, but the output does not match the reference
    REJECTED = "rejected"  # reward hacking: static check, decoy kernel, impossible time
    UNRECORDED = "unrecorded"  # replay only (mtmc/tree/replay.py): the program is not in the tree file


# Verdict.reason codes: why a verdict failed, where a coder or planner can act on it without reading
# the message. An fp32 output erred as TF32 does where eager PyTorch computed it in fp32 on this GPU
# (mtmc/verify/correctness.py, TF32_BEYOND_EAGER_REFUSAL): make the program's TF32 kernels fp32-exact.
TF32_BEYOND_EAGER = "tf32_beyond_eager"


@dataclass
class Verdict:
    status: Status
    message: str = ""
    reason: str = ""  # a failed verdict's code where the verifier names one (TF32_BEYOND_EAGER), else ""
    # correctness, over all seeds and sizes checked: max |out - ref| and ||out - ref|| / ||ref||
    max_abs_error: float | None = None
    rel_error: float | None = None
    # timing in milliseconds (None on the CPU interpreter: correctness only); times are the 10th
    # percentile of the timed calls (mtmc/verify/timing.py says why), the median is kept beside it
    candidate_ms: float | None = None
    candidate_median_ms: float | None = None
    eager_ms: float | None = None
    compiled_ms: float | None = None
    # PyTorch backend flags eager and torch.compile were timed with (its defaults: cuDNN convolutions
    # on TF32, matmuls strict fp32; child.baseline)
    baseline_flags: dict[str, bool] = field(default_factory=dict)
    roofline_ms: float | None = None
    triton_share: float | None = None  # fraction of the candidate's GPU time spent in Triton kernels
    triton_launches: int | None = None
    flags: list[str] = field(default_factory=list)
    device: str = "unknown"
    isolation: str = ""  # the candidate's sandbox, e.g. "netns+pidns+readonly+nobody" or "rlimits-only"
    verifier_version: str = ""
    wall_s: float | None = None
    # where the wall time went: reference (0 when cached), worker (the candidate's child, all of
    # it), its phases (load, cases, profile, timing) and baselines (0 when cached)
    phases_s: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == Status.OK

    @property
    def speedup_eager(self) -> float | None:
        return _ratio(self.eager_ms, self.candidate_ms)

    @property
    def speedup_compiled(self) -> float | None:
        return _ratio(self.compiled_ms, self.candidate_ms)

    @property
    def roofline_fraction(self) -> float | None:
        """Share of the hardware floor reached: 1.0 means the candidate runs at the roofline."""
        return _ratio(self.roofline_ms, self.candidate_ms)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["status"] = str(self.status)
        data["speedup_eager"] = self.speedup_eager
        data["speedup_compiled"] = self.speedup_compiled
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        kwargs["status"] = Status(kwargs["status"])
        return cls(**kwargs)


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


class VerifierError(RuntimeError):
    """The verifier itself failed (a harness bug, a task whose reference cannot run): raised, never
    a verdict, since it says nothing of the candidate."""
