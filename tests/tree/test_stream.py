"""JobStream (mtmc/tree/stream.py): at most `workers` jobs at once, the lowest key first, each handed
back as it ends; `stop` holds the rest back; `drop` forgets waiting ones."""

from __future__ import annotations

import threading

import pytest

from mtmc.tree.stream import JobStream


def test_a_lower_key_put_later_starts_before_a_higher_one_and_ties_go_in_the_order_put():
    started: list[str] = []
    busy = threading.Event()
    with JobStream(workers=1) as stream:
        stream.put(9, "first", busy.wait, 10)  # the one worker is free: it starts at once
        for name, key in [("b1", 1), ("c2", 2), ("b2", 1), ("a0", 0)]:
            stream.put(key, name, started.append, name)
        busy.set()
        ended = [job for job, future in stream if future.result() is None]
    assert started == ended == ["a0", "b1", "b2", "c2"]


def test_no_more_than_workers_jobs_run_at_once_and_each_comes_back_as_it_ends():
    gates = [threading.Event() for _ in range(4)]
    lock, running, peak = threading.Lock(), [0], [0]

    def job(number: int) -> int:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        assert gates[number].wait(timeout=10)
        with lock:
            running[0] -= 1
        return number

    with JobStream(workers=2) as stream:
        for number in range(4):
            stream.put(0, number, job, number)
        gates[1].set()  # the second job ends first, while the first still runs
        order = []
        for number, future in stream:
            order.append(future.result())
            if number == 1:
                for gate in gates:
                    gate.set()
    assert order[0] == 1 and sorted(order) == [0, 1, 2, 3] and peak[0] == 2


def test_stop_holds_the_waiting_jobs_back_and_drop_forgets_them():
    done: list[int] = []
    with JobStream(workers=1, stop=lambda: len(done) >= 2) as stream:
        for number in range(5):
            stream.put(0, number, done.append, number)  # 0 starts at once
        stream.drop(lambda number: number == 1)
        assert stream.waiting == 3
        assert [job for job, _ in stream] == [0, 2]
        assert stream.waiting == 2 and stream.running == 0


def test_a_jobs_exception_comes_back_on_its_future():
    def fail() -> None:
        raise ValueError("fake")

    with JobStream(workers=2) as stream:
        stream.put(0, "bad", fail)
        stream.put(0, "good", int, "7")
        results = {job: future for job, future in stream}
    assert results["good"].result() == 7
    with pytest.raises(ValueError, match="fake"):
        results["bad"].result()
