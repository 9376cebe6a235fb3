"""Jobs through a bounded thread pool: each starts as soon as a worker is free, the lowest key first,
and each comes back as soon as it ends (the tree recorder's verdicts, recorder.py).

    with JobStream(workers=4, stop=past_deadline) as stream:
        stream.put(level, job, verifier.verify_batch, task, programs)  # starts now if a worker is free
        for job, future in stream:      # in the order they end
            future.result()             # the job's value, or its exception
            stream.put(...)             # work that a result makes possible joins the queue

Why not ThreadPoolExecutor.submit for everything: its queue is first in, first out and cannot be held
back, while the recorder needs a job of a lower level to start before any job of a higher one put
earlier (a run cut off leaves levels whole, as breadth-first as the workers allow), no job to start
once `stop()` is true (its deadline), and the jobs left unstarted to stay unstarted. So at most
`workers` jobs are in the pool at once, and the rest wait here, in a heap.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from functools import partial
from typing import Any

Stop = Callable[[], bool]


class JobStream:
    def __init__(self, workers: int, stop: Stop | None = None) -> None:
        self.workers = max(1, workers)
        self._stop = stop or (lambda: False)
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="mtmc-stream")
        self._waiting: list[tuple[Any, int, Any, Callable[[], Any]]] = []  # (key, order put, job, call)
        self._running: dict[Future, tuple[int, Any]] = {}  # future -> (order put, job)
        self._order = itertools.count()  # ties of `key` start in the order they were put

    def put(self, key: Any, job: Any, fn: Callable[..., Any], *args: Any) -> None:
        """Queue `fn(*args)`, started at once if a worker is free; `job` comes back with its future."""
        heapq.heappush(self._waiting, (key, next(self._order), job, partial(fn, *args)))
        self._start()

    def drop(self, unwanted: Callable[[Any], bool]) -> None:
        """Forget the waiting jobs `unwanted(job)` is true of (jobs already running end as they will)."""
        self._waiting = [entry for entry in self._waiting if not unwanted(entry[2])]
        heapq.heapify(self._waiting)

    @property
    def waiting(self) -> int:
        """Jobs not started: queued, or held back by `stop`."""
        return len(self._waiting)

    @property
    def running(self) -> int:
        return len(self._running)

    def __iter__(self) -> Iterator[tuple[Any, Future]]:
        """(job, its future) for each job as it ends, until none is running and none may start."""
        while True:
            self._start()
            if not self._running:
                return
            done, _ = wait(self._running, return_when=FIRST_COMPLETED)
            ended = [(future, self._running.pop(future)) for future in done]
            # the freed workers take waiting jobs before the caller works on these: the recorder codes a
            # task's next level then (a few ms a step), and a worker left free meanwhile would idle
            self._start()
            for future, (_, job) in sorted(ended, key=lambda one: one[1][0]):  # ties: in the order put
                yield job, future

    def _start(self) -> None:
        """Fill the free workers, lowest key first, unless `stop()` says no more may start."""
        while self._waiting and len(self._running) < self.workers and not self._stop():
            _, order, job, call = heapq.heappop(self._waiting)
            self._running[self._pool.submit(call)] = (order, job)

    def close(self) -> None:
        # the running jobs end (a thread cannot be stopped); the waiting ones never start
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> JobStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
