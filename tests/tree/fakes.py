"""Fakes for the tree tests: a verifier that "times" a program by its digest (one whose times drift
from call to call, one that refuses TF32 dots for tf32_beyond_eager), a coder that refuses one step and
one that edits it, tiny tasks, and synthetic tree files written row by row with known times."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from coders.template import TemplateCoder
from mtmc.program import Program
from mtmc.protocols import CoderError
from mtmc.strategies import Strategy
from mtmc.tasks import Task
from mtmc.tree.format import FORMAT
from mtmc.verify import VerifierError
from mtmc.verify.many import judge_concurrently
from mtmc.verify.verdict import TF32_BEYOND_EAGER, Status, Verdict

TASK_SOURCE = '''
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) * {scale}

def get_inputs():
    return [torch.randn(16, 257)]

def get_init_inputs():
    return []

MTMC = {{"split": "{split}"}}
'''


def tiny_task(name: str = "relu_scale", scale: int = 2, split: str = "train") -> Task:
    return Task(name=name, source=TASK_SOURCE.format(scale=scale, split=split))


class DigestVerifier:
    """Deterministic fake verdicts: a program's time comes from its digest (0.5 to 1.5 ms, eager 2 ms);
    a digest ending in one of `failing` is `incorrect`, except a port's. Counts its calls. Every program
    of a task named in `broken` raises VerifierError, as for a task whose reference cannot run."""

    def __init__(self, failing: str = "0", broken: tuple[str, ...] = ()) -> None:
        self.failing = failing
        self.broken = set(broken)
        self.calls: list[str] = []

    def verify(self, task: Task, program: Program) -> Verdict:
        if task.name in self.broken:
            raise VerifierError(f"fake: the reference of {task.name} cannot run")
        self.calls.append(program.digest)
        if program.digest[-1] in self.failing and program.metadata.get("template_steps") != ["port"]:
            return Verdict(Status.INCORRECT, message="fake: wrong", device="fake gpu",
                           verifier_version="fake")
        ms = 0.5 + int(program.digest[:4], 16) / 0xFFFF
        return Verdict(Status.OK, candidate_ms=ms, eager_ms=2.0, compiled_ms=1.5, roofline_ms=0.25,
                       device="fake gpu", verifier_version="fake", phases_s={"worker.cases": 0.5})

    def __enter__(self) -> DigestVerifier:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class Tf32Verifier(DigestVerifier):
    """A DigestVerifier on a GPU where eager computed the task's convolutions in fp32: a program with a
    TF32 dot is refused for tf32_beyond_eager, as the real verifier refuses it (the CPU interpreter has
    no TF32, so the refusal is simulated); any other program passes."""

    def __init__(self, **kwargs) -> None:
        super().__init__(failing="", **kwargs)

    def verify(self, task: Task, program: Program) -> Verdict:
        verdict = super().verify(task, program)
        if 'input_precision="tf32"' not in program.source:
            return verdict
        return Verdict(Status.INCORRECT, message="fake: erred as TF32 does where eager computed in fp32",
                       reason=TF32_BEYOND_EAGER, device="fake gpu", verifier_version="fake")


class RefusingCoder(TemplateCoder):
    """The template coder, except that it refuses every `kind` step (a CoderError, as for an op it
    cannot port)."""

    def __init__(self, kind: str = "vectorize") -> None:
        self.kind = kind

    def apply(self, task: Task, program: Program | None, strategy: Strategy,
              feedback: Verdict | None = None) -> Program:
        if strategy.kind == self.kind:
            raise CoderError(f"fake: no {self.kind}")
        return super().apply(task, program, strategy, feedback)


# ---------------------------------------------------------------------------------------------------
# synthetic trees


def node(task: str, digest: str, parent: str | None, strategy: str, depth: int, ms: float | None, *,
         rank: int = 0, status: str = "ok", eager_ms: float = 4.0, split_sha: str = "sha") -> dict:
    return {"kind": "node", "format": FORMAT, "task": task, "task_sha": split_sha, "parent": parent,
            "strategy": strategy, "rank": rank, "digest": digest, "depth": depth, "status": status,
            "message": "" if status == "ok" else f"fake {status}", "candidate_ms": ms,
            "candidate_median_ms": ms, "eager_ms": eager_ms, "compiled_ms": eager_ms / 2,
            "roofline_ms": 0.1, "triton_share": None, "flags": [], "device": "fake gpu", "isolation": "",
            "verifier_version": "fake", "coder": "fake", "wall_s": 1.0}


def edge(task: str, parent: str, strategy: str, digest: str | None, depth: int, *, rank: int = 0,
         error: str | None = None) -> dict:
    return {"kind": "edge", "format": FORMAT, "task": task, "parent": parent, "strategy": strategy,
            "rank": rank, "digest": digest, "depth": depth, "error": error}


def expanded(task: str, digest: str, steps: int) -> dict:
    return {"kind": "expanded", "format": FORMAT, "task": task, "digest": digest, "steps": steps}


def branching_rows(task: str = "t") -> list[dict]:
    """port P (2 ms) -> num_warps 8: A (1 ms) -> tile BLOCK=1024: D (0.5 ms, a leaf)
                     -> vectorize: B (incorrect) | autotune: refused | num_warps 2: C (3 ms, slower)
    (A's menu: num_warps 2 -> C, tile BLOCK=1024 -> D)"""
    return [node(task, "P", None, "port", 0, 2.0),
            node(task, "A", "P", "num_warps 8", 1, 1.0, rank=0),
            node(task, "B", "P", "vectorize", 1, None, rank=1, status="incorrect"),
            edge(task, "P", "autotune", None, 1, rank=2, error="fake: no autotune"),
            node(task, "C", "P", "num_warps 2", 1, 3.0, rank=3),
            expanded(task, "P", 4),
            node(task, "D", "A", "tile BLOCK=1024", 2, 0.5, rank=1),
            edge(task, "A", "num_warps 2", "C", 2, rank=0),
            expanded(task, "A", 2)]


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


class ManyVerifier(DigestVerifier):
    """A DigestVerifier that judges batches (`verify_many`) of its own kind: answering in reverse order as
    a parallel verifier may, and stopping at a VerifierError. Records each batch's (task, digest) pairs."""

    concurrency = 4

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.batches: list[list[tuple[str, str]]] = []

    def verify_many(self, pairs):
        pairs = list(pairs)
        self.batches.append([(task.name, program.digest) for task, program in pairs])
        for index in reversed(range(len(pairs))):
            yield index, self.verify(*pairs[index])


class PoolVerifier(DigestVerifier):
    """A DigestVerifier judging `concurrency` programs at once in threads, through the real verifiers'
    `verify_many` (mtmc/verify/many.py)."""

    concurrency = 4

    def verify_many(self, pairs):
        return judge_concurrently(self.verify, pairs, self.concurrency)


class BatchVerifier(DigestVerifier):
    """A DigestVerifier with trusted batches (`verify_batch`, mtmc/verify/batch.py), `concurrency` of them
    at once (the recorder's stream). Records each batch's size."""

    concurrency = 2

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.batch_sizes: list[int] = []

    def verify_batch(self, task, programs):
        self.batch_sizes.append(len(programs))
        return [self.verify(task, program) for program in programs]


class JitterVerifier(PoolVerifier):
    """A PoolVerifier whose times drift: the n-th verdict of a program is its digest's time times
    `factors[n]` (the last factor once they run out), so a program recorded by a DigestVerifier and
    judged again with factors (1.02, 1.04) has a spread of 1.04. The first `dead` verdicts asked for
    fail for the machine instead (`infrastructure`, as from a dead worker)."""

    def __init__(self, factors: tuple[float, ...] = (1.0,), dead: int = 0, **kwargs) -> None:
        super().__init__(**kwargs)
        self.factors, self.dead = factors, dead
        self.judged: Counter[str] = Counter()  # verdicts given per digest
        self.lock = threading.Lock()  # verify_many calls verify from several threads

    def verify(self, task: Task, program: Program) -> Verdict:
        verdict = super().verify(task, program)
        with self.lock:
            if self.dead:
                self.dead -= 1
                return Verdict(Status.CRASH, "fake: the worker died", device="fake gpu",
                               flags=["infrastructure: fake worker died"])
            nth = self.judged[program.digest]
            self.judged[program.digest] += 1
        if verdict.candidate_ms is not None:
            verdict.candidate_ms *= self.factors[min(nth, len(self.factors) - 1)]
        return verdict


class EditingCoder(TemplateCoder):
    """The template coder, except that every `kind` step writes another source (a comment more), as a
    changed coder would: the programs it ends have other digests than the recorded ones."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def apply(self, task: Task, program: Program | None, strategy: Strategy,
              feedback: Verdict | None = None) -> Program:
        child = super().apply(task, program, strategy, feedback)
        if strategy.kind != self.kind:
            return child
        return Program(child.source + "\n# edited\n", child.metadata)


def is_port(program: Program) -> bool:
    return program.metadata.get("template_steps") == ["port"]


class SleepyVerifier(DigestVerifier):
    """A DigestVerifier whose jobs take time, `concurrency` of them at once: a job (one `verify`, or one
    `verify_batch` of a task's programs) sleeps `seconds(task, program)` for each of its programs, which
    may also block; then the DigestVerifier's verdicts. Records each job as (task, digests, start, end)
    on time.monotonic(), and the most jobs ever in flight."""

    def __init__(self, seconds: Callable[[Task, Program], float], concurrency: int = 3, **kwargs) -> None:
        super().__init__(**kwargs)
        self.seconds, self.concurrency = seconds, concurrency
        self.jobs: list[tuple[str, list[str], float, float]] = []
        self.in_flight = self.peak = 0
        self.lock = threading.Lock()

    def verify(self, task: Task, program: Program) -> Verdict:
        return self._job(task, [program])[0]

    def verify_batch(self, task: Task, programs: list[Program]) -> list[Verdict]:
        return self._job(task, programs)

    def _job(self, task: Task, programs: list[Program]) -> list[Verdict]:
        start = time.monotonic()
        with self.lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            time.sleep(sum(self.seconds(task, program) for program in programs))
            return [DigestVerifier.verify(self, task, program) for program in programs]
        finally:
            with self.lock:
                self.in_flight -= 1
                self.jobs.append((task.name, [p.digest for p in programs], start, time.monotonic()))
