"""A step's attempts as the optimize graph makes them, for the walkers of a tree (the recorder, `tree
check`, `tree retime`): `gate` retries a failed attempt while retries are left (`max_retries`, the
graph's own `decide`) and `code` hands the coder that attempt's verdict as feedback
(mtmc/graph/nodes.py). The template coder acts on one reason, tf32_beyond_eager (its retry is the
step's fp32-exact twin, coders/template/exact_fp32.py), so a retry can reach a program the step alone
never does, and a tree that lacks it is not the tree the live loop walks.

Offline the feedback is the verdict as recorded (format.verdict_of: what a rerun, `tree check` and
`tree retime` can give again), and a coder's refusal is the compile_error verdict the graph's `code`
makes of it. A retry that gives the attempt before's program again is a fixpoint: the graph judges it
again, gets the same verdict and feeds it back again, so no later attempt differs and the tree
records nothing for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mtmc.budgets import Budgets
from mtmc.graph.nodes import decide
from mtmc.program import Program
from mtmc.protocols import Coder, CoderError
from mtmc.strategies import Strategy
from mtmc.tasks import Task
from mtmc.tree.format import verdict_of
from mtmc.tree.index import Tree
from mtmc.verify.verdict import Status, Verdict

MAX_RETRIES = Budgets().max_retries  # a run's retries by default: a tree holds what such a run reaches
Recorded = Callable[[str], Verdict | None]  # digest -> its recorded verdict; None: not judged (yet)


@dataclass(frozen=True)
class Attempt:
    number: int  # 0: the step itself; n: its n-th retry
    child: Program | None  # None: the coder refused (`error` says why)
    error: str | None = None

    @property
    def digest(self) -> str | None:
        return None if self.child is None else self.child.digest


def code(coder: Coder, task: Task, program: Program | None, strategy: Strategy, number: int = 0,
         feedback: Verdict | None = None) -> Attempt:
    try:
        return Attempt(number, coder.apply(task, program, strategy, feedback))
    except CoderError as err:
        return Attempt(number, None, str(err))


def feedback(attempt: Attempt, recorded: Recorded) -> Verdict | None:
    """The attempt's verdict as the graph feeds it to a retry; None where it is not recorded yet."""
    if attempt.child is None:
        return Verdict(Status.COMPILE_ERROR, message=f"coder error: {attempt.error}")  # as nodes.code
    return recorded(attempt.child.digest)


def retry(coder: Coder, task: Task, program: Program | None, strategy: Strategy, previous: Attempt,
          verdict: Verdict, max_retries: int) -> Attempt | None:
    """The attempt after `previous`, which was judged `verdict`; None where the gate moves on (passed,
    or no retry left) or the coder wrote `previous`'s program again (the fixpoint)."""
    if decide(verdict, None, attempt=previous.number, max_retries=max_retries) != "retry":
        return None
    following = code(coder, task, program, strategy, previous.number + 1, verdict)
    same = (following.digest, following.error) == (previous.digest, previous.error)
    return None if same else following


def attempts(coder: Coder, task: Task, program: Program | None, strategy: Strategy, recorded: Recorded,
             max_retries: int) -> list[Attempt]:
    """The step's attempts that each give another program, as far as `recorded` knows their verdicts."""
    chain = [code(coder, task, program, strategy)]
    while (verdict := feedback(chain[-1], recorded)) is not None:
        following = retry(coder, task, program, strategy, chain[-1], verdict, max_retries)
        if following is None:
            break
        chain.append(following)
    return chain


def recorded_verdicts(tree: Tree, task: str) -> Recorded:
    """The tree's verdicts of one task's programs, by digest."""
    def recorded(digest: str) -> Verdict | None:
        row = tree.node(task, digest)
        return None if row is None else verdict_of(row)
    return recorded
