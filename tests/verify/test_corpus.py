"""The adversarial corpus on the CPU backend: every bad candidate gets its specific verdict, every
honest candidate passes, and one pool survives the whole corpus (no lost verdict, no hang).

The expectation of each file is in its header (see corpus_index.py; corpus/README.md has them as a
table). GPU-only patterns (BACKEND: gpu) run in test_gpu.py.
"""

import pytest
from corpus_index import corpus, honest, with_known_gaps

from mtmc.verify import Status, format_verdict_table

CPU_CORPUS = [e for e in corpus() if e.backend != "gpu"]
SEEN: dict[str, str] = {}  # corpus file -> status, filled as the corpus runs


@pytest.mark.parametrize("entry", with_known_gaps(CPU_CORPUS))
def test_corpus_verdict(entry, verifier, unchecked_verifier):
    v = verifier if entry.static else unchecked_verifier
    verdict = v.verify(entry.task(), entry.program())
    SEEN[entry.name] = str(verdict.status)
    status, message = entry.expected(gpu=False)
    table = format_verdict_table(verdict)
    assert verdict.status == Status(status), f"{entry.pattern}\n{table}"
    # alternatives (" || "): either reason is a correct catch (e.g. unwritten memory read as NaN or not)
    assert any(m in verdict.message for m in message.split(" || ")), f"expected {message!r}\n{table}"
    assert verdict.device == "cpu (triton interpreter)"
    assert verdict.candidate_ms is None  # the interpreter never times


@pytest.mark.parametrize("name,task,program", honest(), ids=lambda x: x if isinstance(x, str) else "")
def test_honest_candidates_pass(name, task, program, verifier):
    verdict = verifier.verify(task, program)
    assert verdict.ok, format_verdict_table(verdict)
    assert verdict.triton_launches and verdict.triton_launches > 0
    assert verdict.max_abs_error is not None and verdict.rel_error < 1e-5


def test_pool_survives_the_corpus(verifier, unchecked_verifier):
    """Runs last in this module: every corpus entry that ran got a verdict, and both pools still
    judge an honest candidate correctly (test_sandbox covers a worker killed and replaced)."""
    ran = [e.name for e in CPU_CORPUS if e.name in SEEN]
    assert len(ran) == len(SEEN)
    for v in (verifier, unchecked_verifier):
        assert all(w.proc.poll() is None for w in v.engine.pool.workers)
        name, task, program = honest()[-1]
        assert v.verify(task, program).ok
