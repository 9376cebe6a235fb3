"""Verdict cache: round trip, key sensitivity, and safe concurrent writers from several processes."""

import multiprocessing as mp

from mtmc.verify.cache import VerdictCache, cache_key
from mtmc.verify.verdict import Status, Verdict


def _verdict(**kw):
    return Verdict(Status.OK, "fine", max_abs_error=1e-6, candidate_ms=1.5, eager_ms=3.0,
                   flags=["x"], device="NVIDIA H100", verifier_version="1.0", **kw)


def test_round_trip(tmp_path):
    cache = VerdictCache(tmp_path / "v.sqlite")
    key = cache_key("task src", "abc", "NVIDIA H100", "1.0", "{}", "netns+pidns+readonly+nobody")
    assert cache.get(key) is None
    cache.put(key, _verdict(), "softmax", "abc")
    got = cache.get(key)
    assert got == _verdict() and got.speedup_eager == 2.0 and len(cache) == 1
    cache.put(key, _verdict(wall_s=2.0), "softmax", "abc")  # replace, not duplicate
    assert len(cache) == 1 and cache.get(key).wall_s == 2.0


def test_nan_errors_survive(tmp_path):
    cache = VerdictCache(tmp_path / "v.sqlite")
    cache.put("k", Verdict(Status.INCORRECT, max_abs_error=float("nan")), "t", "p")
    assert cache.get("k").max_abs_error != cache.get("k").max_abs_error


def test_key_changes_with_every_component():
    base = ("task", "prog", "dev", "1.0", "{}", "rlimits-only")
    keys = {cache_key(*base)}
    for i in range(len(base)):
        changed = list(base)
        changed[i] += "!"
        keys.add(cache_key(*changed))
    assert len(keys) == len(base) + 1


def _writer(path, start):
    cache = VerdictCache(path)
    for i in range(start, start + 25):
        cache.put(f"k{i}", _verdict(), "t", str(i))


def test_concurrent_processes(tmp_path):
    path = tmp_path / "shared.sqlite"
    VerdictCache(path)
    procs = [mp.get_context("spawn").Process(target=_writer, args=(path, 25 * i)) for i in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert len(VerdictCache(path)) == 75
