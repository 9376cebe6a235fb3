"""GPU timing protocol (timing.py), in-process on a GPU: stable medians, replayed or stale results
caught, side-stream work counted, events never exceeding the wall clock."""

import pytest
import torch

from mtmc.verify.timing import TimingOptions, time_calls

pytestmark = pytest.mark.gpu


def sets(n=3, size=1 << 22):
    return [[torch.randn(size, device="cuda")] for _ in range(n)]


def own_outputs(call, input_sets):
    return [[o.clone() for o in call(s)] for s in input_sets]


def test_honest_call_is_stable_and_consistent():
    def call(inputs):
        return [inputs[0] * 2 + 1]

    s = sets()
    result = time_calls({"c": call}, s, {"c": own_outputs(call, s)}, True, TimingOptions())
    t = result["timings"]["c"]
    assert t["mismatches"] == 0 and t["reused_storage"] == 0
    assert t["reps"] >= 10 and t["rse"] < 0.05 and t["median_ms"] > 0
    assert 0 < t["reported_ms"] <= t["median_ms"]
    assert result["events_ms"] <= result["wall_ms"]
    assert result["threads_started"] == 0


def test_replayed_result_is_caught():
    cache = {}

    def call(inputs):
        if "out" not in cache:
            cache["out"] = inputs[0] * 2
        return [cache["out"]]

    s = sets()
    own = [[s_[0] * 2] for s_ in s]
    t = time_calls({"c": call}, s, {"c": own}, True, TimingOptions(max_reps=12))["timings"]["c"]
    assert t["mismatches"] > 0


def test_reused_output_storage_is_caught():
    buffer = {}

    def call(inputs):
        out = buffer.setdefault("out", torch.empty_like(inputs[0]))
        torch.mul(inputs[0], 2, out=out)
        return [out]

    s = sets()
    own = [[s_[0] * 2] for s_ in s]
    t = time_calls({"c": call}, s, {"c": own}, True, TimingOptions(max_reps=12))["timings"]["c"]
    assert t["mismatches"] == 0 and t["reused_storage"] > 0


def test_side_stream_work_is_inside_the_timed_region():
    side = torch.cuda.Stream()
    cycles = 20_000_000  # ~10 ms on a recent GPU

    def idle(inputs):
        return [inputs[0]]

    def sneaky(inputs):
        with torch.cuda.stream(side):
            torch.cuda._sleep(cycles)
        return [inputs[0]]

    s = sets(size=1024)
    options = TimingOptions(max_reps=10, warmup_ms=1)
    result = time_calls({"idle": idle, "sneaky": sneaky}, s, {}, True, options)
    assert result["timings"]["sneaky"]["median_ms"] > 5 * result["timings"]["idle"]["median_ms"] + 1.0
    assert result["timings"]["sneaky"]["side_work"] == result["timings"]["sneaky"]["reps"]
    assert result["timings"]["idle"]["side_work"] < result["timings"]["idle"]["reps"] / 2  # round-trip noise


def test_host_launch_overhead_is_not_gpu_time():
    import time

    def slow_host(inputs):  # 1 ms of Python before a microsecond kernel
        time.sleep(0.001)
        return [inputs[0] + 1]

    s = sets(size=1024)
    result = time_calls({"c": slow_host}, s, {}, True, TimingOptions(max_reps=20))
    assert result["timings"]["c"]["median_ms"] < 0.3


def test_sleeps_sized_from_a_low_clock_reading_are_corrected(monkeypatch):
    import time

    from mtmc.verify import timing

    def slow_host(inputs):  # 1 ms of Python before a microsecond kernel
        time.sleep(0.001)
        return [inputs[0] + 1]

    true_rate = timing._sleep_cycles_per_ms()
    monkeypatch.setattr(timing, "_sleep_cycles_per_ms", lambda: true_rate / 20)  # sleeps 20x too short
    s = sets(size=1024)
    result = time_calls({"c": slow_host}, s, {}, True, TimingOptions(max_reps=20))
    assert result["timings"]["c"]["short_sleeps"] >= 1
    assert result["timings"]["c"]["median_ms"] < 0.3


def test_loaded_is_the_last_thing_before_each_timed_call():
    """The candidate job's checksums and free-memory scrub (scrub.py, S23) run in `loaded`: after the
    warm-up, every call follows its own `loaded`, never two calls on one."""
    log = []

    def call(inputs):
        log.append("call")
        return [inputs[0] * 2]

    s = sets(size=1024)
    time_calls({"c": call}, s, {}, True, TimingOptions(max_reps=10, warmup_ms=1),
               loaded=lambda k, buffers: log.append("loaded"))
    timed = log[log.index("loaded"):]
    assert timed == ["loaded", "call"] * (len(timed) // 2) and len(timed) >= 20
