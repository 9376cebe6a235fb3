"""Bitwise equality in chunks (mtmc/verify/bitwise.py): the child's determinism and timed-output checks
on GB-sized outputs (on a GPU, a host copy against device outputs)."""

import pytest
import torch

from mtmc.verify import bitwise


@pytest.mark.parametrize("chunk_bytes", [1 << 30, 12, 4])  # whole, several chunks, one element each
def test_same_compares_every_chunk_with_nans_equal(monkeypatch, chunk_bytes):
    monkeypatch.setattr(bitwise, "COMPARE_CHUNK_BYTES", chunk_bytes)
    a = torch.randn(5, 7)
    a[1, 3] = a[4, 6] = float("nan")
    b = a.t().contiguous().t()  # equal values, another layout
    assert bitwise.same(a, b)
    for where in [(0, 0), (2, 5), (4, 6)]:  # the first, a middle and the last chunk
        c = a.clone()
        c[where] = 1.5
        assert not bitwise.same(a, c), where
    assert not bitwise.same(a, a[:4])
    ints = torch.arange(35).reshape(5, 7)
    assert bitwise.same(ints, ints.clone()) and not bitwise.same(ints, ints.flip(1))


@pytest.mark.gpu
def test_same_compares_a_host_copy_with_device_outputs_on_the_device(monkeypatch):
    monkeypatch.setattr(bitwise, "COMPARE_CHUNK_BYTES", 1 << 20)
    out = torch.randn(3 << 20, device="cuda")
    from mtmc.verify import child

    host = child._host_copy(out)
    assert bitwise.same(host, out) and bitwise.same(out, host)
    out[-1] += 1
    assert not bitwise.same(host, out)
