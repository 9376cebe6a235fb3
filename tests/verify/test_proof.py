"""Identity snapshots (T3): replacing any watched function is seen, restoring it is not."""

import torch

from mtmc.verify import proof


def test_replaced_timer_is_detected(monkeypatch):
    before = proof.snapshot_identities()
    assert proof.changed_identities(before) == []
    monkeypatch.setattr(torch.cuda.Event, "elapsed_time", lambda self, end: 0.0)
    monkeypatch.setattr(torch, "equal", lambda a, b: True)
    assert proof.changed_identities(before) == ["torch.cuda.Event.elapsed_time", "torch.equal"]
    monkeypatch.undo()
    assert proof.changed_identities(before) == []


def test_every_watched_name_resolves():
    import triton.runtime.interpreter  # noqa: F401  (present in every triton 3.x)

    missing = [name for name in proof.WATCHED if proof._resolve(name) is None]
    assert missing == []
