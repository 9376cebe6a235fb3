"""Trusted batches on a GPU (mtmc/verify/batch.py): a built-in task's port and its first steps, judged in
one batch and then one at a time through the full protocol. Same statuses; times within the noise of
two timings. Run on the GPU machine: `pytest -m gpu tests/verify/test_gpu_batch.py`."""

import pytest

from coders.template import TemplateCoder
from mtmc.strategies import PORT
from mtmc.tasks import load_task
from mtmc.verify import LocalVerifier, Status

pytestmark = pytest.mark.gpu


def test_a_trusted_batch_agrees_with_the_full_protocol_on_status_and_time():
    coder, task = TemplateCoder(), load_task("softmax_lastdim")
    port = coder.apply(task, None, PORT)
    steps = [s for s in coder.legal_strategies(task, port) if not s.is_stop][:3]
    programs = [port] + [coder.apply(task, port, s) for s in steps]
    with LocalVerifier(gpus=[0], seeds=1, timeout_s=120.0, strict=True) as verifier:
        batch = verifier.verify_batch(task, programs)
        full = [verifier.verify(task, p) for p in programs]
    assert [b.status for b in batch] == [f.status for f in full]
    assert batch[0].status == Status.OK and all("trusted_batch" in b.flags for b in batch)
    for b, f in zip(batch, full, strict=True):
        if b.ok:
            assert b.eager_ms == f.eager_ms and b.roofline_ms == f.roofline_ms
            assert 0.85 < b.candidate_ms / f.candidate_ms < 1.15, (b.candidate_ms, f.candidate_ms)
