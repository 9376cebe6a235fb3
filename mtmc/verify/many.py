"""Judge many (task, program) pairs at once: `workers` threads calling `verify`, verdicts as they finish.

    for index, verdict in judge_concurrently(verifier.verify, pairs, workers=verifier.concurrency): ...

Every verifier with a pool hands each `verify` call whichever worker is free (verifier=ray's actors,
LocalVerifier's one fork-server per GPU, InterpreterVerifier's `workers`), so as many threads as it
has workers keep them all busy. This is their one `verify_many`, so the rules below hold for all.

Errors: a pair whose `verify` raises VerifierError (its task's reference cannot run, a broken
harness) has no verdict, and the others still get theirs: every verdict is yielded first, then the
iterator raises one BatchError (a VerifierError) holding each failed pair's error by index. A caller
can leave out just those pairs' tasks (`mtmc tree record` does); one that does not catch it stops
as it would on `verify`'s own VerifierError. Any other exception is a bug: it is raised as soon as its
pair ends, after the pairs already running finish; the pairs not started yet are dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from mtmc.program import Program
from mtmc.tasks import Task
from mtmc.verify.engine import VerifierError
from mtmc.verify.verdict import Verdict

Verify = Callable[[Task, Program], Verdict]


class BatchError(VerifierError):
    """Some pairs of a `judge_concurrently` call raised VerifierError: `errors` maps each one's index
    to its error (every other pair's verdict was yielded before this was raised)."""

    def __init__(self, errors: dict[int, VerifierError]) -> None:
        self.errors = dict(sorted(errors.items()))
        shown = "; ".join(f"pair {i}: {_first_line(err)}" for i, err in list(self.errors.items())[:4])
        super().__init__(f"{len(self.errors)} pair(s) could not be judged ({shown})")


def judge_concurrently(verify: Verify, pairs: Iterable[tuple[Task, Program]],
                       workers: int) -> Iterator[tuple[int, Verdict]]:
    """(index into `pairs`, verdict) for every pair, in the order they finish, `workers` at a time;
    then BatchError if any pair raised VerifierError (see the module docstring)."""
    errors: dict[int, VerifierError] = {}
    for index, outcome in _outcomes(verify, list(pairs), workers):
        if isinstance(outcome, VerifierError):
            errors[index] = outcome
        else:
            yield index, outcome
    if errors:
        raise BatchError(errors)


def verify_pairs(verifier: Any, pairs: list[tuple[Task, Program]]) -> Iterator[tuple[int, Verdict]]:
    """A batch through the verifier's own `verify_many` where it has one (every worker at once), else
    one pair at a time here; BatchError after the verdicts either way (`mtmc tree record` / `retime`)."""
    if callable(getattr(verifier, "verify_many", None)):
        return verifier.verify_many(pairs)
    return judge_concurrently(verifier.verify, pairs, workers=1)


def _outcomes(verify: Verify, pairs: list[tuple[Task, Program]],
              workers: int) -> Iterator[tuple[int, Verdict | VerifierError]]:
    if workers <= 1 or len(pairs) <= 1:  # nothing to overlap: here, in order, no thread
        for index, (task, program) in enumerate(pairs):
            yield index, _attempt(verify, task, program)
        return
    pool = ThreadPoolExecutor(max_workers=min(workers, len(pairs)), thread_name_prefix="mtmc-verify")
    try:
        futures = {pool.submit(_attempt, verify, task, program): index
                   for index, (task, program) in enumerate(pairs)}
        for future in as_completed(futures):
            yield futures[future], future.result()
    finally:  # also when the caller stops early: no new pair starts, the running ones end
        pool.shutdown(wait=True, cancel_futures=True)


def _first_line(err: Exception) -> str:
    return (str(err).splitlines() or [type(err).__name__])[0][:200]


def _attempt(verify: Verify, task: Task, program: Program) -> Verdict | VerifierError:
    try:
        return verify(task, program)
    except VerifierError as err:  # the pair's own failure, reported with its index
        return err
