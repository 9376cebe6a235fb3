"""`verifier=ray`: the verifier's warm workers as Ray actors, on one machine or a whole Ray cluster.

    with RayVerifier(address=None, actors=2, seeds=3) as verifier:   # address: null = a local instance
        verdict = verifier.verify(task, program)                      # thread-safe: one per free actor
        for index, verdict in verifier.verify_many(pairs): ...        # as they finish

Each actor holds a whole local verifier (`make_verifier(backend)`: LocalVerifier on the GPU Ray gave
it, `num_gpus=1` and CUDA_VISIBLE_DEVICES set by Ray; InterpreterVerifier on a CPU; or what a callable
`backend` builds, which is how the tests put in a cheap one), so a verdict is judged exactly as it is
on one machine: same protocol, same sandbox, same seal over the installed mtmc (every node needs the
same install). The driver (this process) only dispatches and caches:

- Dispatch: a queue of idle actors; `verify` takes one, waits for its verdict, gives it back. Any
  number of threads may call `verify`; as many verdicts run at once as there are actors.
- Crashes: an actor that dies mid-verdict (killed process, segfault, lost node) is restarted by Ray
  (`max_restarts`); the driver waits until it answers again, then retries the verdict once, on
  whichever actor is free. A second death makes the verdict a harness error (status crash, flag
  `infrastructure: ...`, never cached). One call, one verdict: a verdict is never lost or returned twice.
  An actor out of restarts leaves the pool; with none left, `verify` raises VerifierError.
- Cache: one VerdictCache (SQLite) in the driver, so the cluster shares it without a shared file
  system; the key is the one the actors' engines use (task, program digest, device, verifier
  version, settings), under each GPU model the actors report.

Ray is an optional extra (`pip install -e ".[ray]"`) and is imported only when a RayVerifier is made.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from mtmc.program import Program
from mtmc.tasks import Task
from mtmc.verify.cache import VerdictCache
from mtmc.verify.many import judge_concurrently
from mtmc.verify.verdict import Status, Verdict
from mtmc.verify.verifier import VerifierError, cacheable, make_verifier, verdict_key

log = logging.getLogger(__name__)

RETRIES = 1  # a verdict whose actor died is judged once more, then reported as a harness error
RESTART_POLL_S = 0.5  # how often a restarting actor is asked whether it is back
LOCAL_INIT = {"include_dashboard": False}  # ray.init defaults for a local instance (overridable)

# A backend name for make_verifier (auto, local, interpreter), or a callable that builds a verifier from the
# keywords in the actor's process; what it builds needs `verify`, `close` and an `engine` with `device`,
# `settings.fingerprint()` and `isolation` (the cache key's parts).
Backend = str | Callable[..., Any]


class VerifierActor:
    """One Ray actor: a whole local verifier, built in the actor's process (again after a restart)."""

    def __init__(self, backend: Backend, kwargs: dict[str, Any]) -> None:
        import os

        self.pid = os.getpid()
        build = backend if callable(backend) else partial(make_verifier, backend)
        self.verifier = build(**{**kwargs, "cache_path": None})  # the driver caches

    def identity(self) -> tuple[str, str, str, int]:
        """(device, settings fingerprint, isolation, process id): the cache key's parts, and a
        liveness probe."""
        engine = self.verifier.engine
        return engine.device, engine.settings.fingerprint(), engine.isolation, self.pid

    def verify(self, task: Task, program: Program) -> Verdict:
        if task.path and not Path(task.path).is_file():
            # another node: the source travelled with the task, the file (sealed when present) did not
            task = Task(task.name, task.source)
        return self.verifier.verify(task, program)

    def close(self) -> None:
        self.verifier.close()


class RayVerifier:
    """The Verifier protocol over Ray actors; see the module docstring."""

    def __init__(self, address: str | None = None, actors: int | None = None,
                 gpus_per_actor: float | None = None, cpus_per_actor: float = 1.0, backend: Backend = "auto",
                 max_restarts: int = 3, start_timeout_s: float = 600.0, init: dict[str, Any] | None = None,
                 cache_path: str | None = None, **verifier: Any) -> None:
        self.ray = _import_ray()
        self._owns_ray = not self.ray.is_initialized()  # a job that started Ray itself keeps it
        if self._owns_ray:
            self.ray.init(address=address, **{**LOCAL_INIT, **(init or {})})
        cluster_gpus = self.ray.cluster_resources().get("GPU", 0.0)
        if gpus_per_actor is None:
            gpus_per_actor = 1.0 if cluster_gpus else 0.0
        if actors is None:  # one per GPU of the cluster; a CPU-only cluster gets one
            actors = int(cluster_gpus // gpus_per_actor) if gpus_per_actor else 1
        if actors < 1 or actors * gpus_per_actor > cluster_gpus + 1e-9:
            self.close()
            raise VerifierError(f"verifier=ray: {actors} actor(s) x {gpus_per_actor} GPU(s) do not fit the "
                                f"cluster's {cluster_gpus:g} GPU(s)")
        remote = self.ray.remote(VerifierActor).options(
            num_gpus=gpus_per_actor, num_cpus=cpus_per_actor, max_restarts=max_restarts, max_task_retries=0)
        self.actors = [remote.remote(backend, verifier) for _ in range(actors)]
        self.start_timeout_s = start_timeout_s
        try:
            identities = self.ray.get([a.identity.remote() for a in self.actors], timeout=start_timeout_s)
        except Exception:
            self.close()
            raise
        # (device, isolation) of each actor: a verdict is served only to the sandbox it was judged under
        self.judges = sorted({(device, isolation) for device, _, isolation, _ in identities})
        self.fingerprint = identities[0][1]  # the same keywords everywhere: the same settings
        self.cache = VerdictCache(cache_path) if cache_path else None
        self._idle: queue.Queue[Any] = queue.Queue()
        for actor in self.actors:
            self._idle.put(actor)
        self._lock = threading.Lock()
        self.restarts = 0  # actor deaths seen (each one restarted or, out of restarts, dropped)

    @property
    def concurrency(self) -> int:
        """Verdicts that can run at once: the live actors. The bench runs this many tasks at a time."""
        return len(self.actors)

    # --- the Verifier protocol --------------------------------------------------------------------
    def verify(self, task: Task, program: Program) -> Verdict:
        cached = self._cached(task, program)
        if cached is not None:
            return cached
        verdict = self._judge(task, program)
        if self.cache is not None and cacheable(verdict):
            key = verdict_key(task, program, verdict.device, self.fingerprint, verdict.isolation)
            self.cache.put(key, verdict, task.name, program.digest)
        return verdict

    def verify_many(self, pairs: Iterable[tuple[Task, Program]]) -> Iterator[tuple[int, Verdict]]:
        """(index into `pairs`, verdict) for every pair, in the order they finish, all actors busy; a
        VerifierError of some pairs comes after the others' verdicts, as many.BatchError."""
        return judge_concurrently(self.verify, pairs, self.concurrency)

    # --- dispatch ----------------------------------------------------------------------------------
    def _cached(self, task: Task, program: Program) -> Verdict | None:
        if self.cache is None:
            return None
        for device, isolation in self.judges:
            verdict = self.cache.get(verdict_key(task, program, device, self.fingerprint, isolation))
            if verdict is not None:
                return verdict
        return None

    def _judge(self, task: Task, program: Program) -> Verdict:
        deaths = []
        for _ in range(1 + RETRIES):
            actor = self._take()
            try:
                verdict = self.ray.get(actor.verify.remote(task, program))
            except self.ray.exceptions.RayActorError as err:  # the actor's process died, not the candidate's
                deaths.append(f"{type(err).__name__}: {str(err).splitlines()[0][:200]}")
                log.warning("verifier=ray: an actor died while judging %s (%s)", task.name, deaths[-1])
                self._recover(actor)
                continue
            except BaseException:  # the verifier raised (a broken task, a harness bug): the actor lives
                self._idle.put(actor)
                raise
            self._idle.put(actor)
            return verdict
        return Verdict(Status.CRASH, f"harness error: the verifier's Ray actor died {len(deaths)} times "
                       f"while judging this program ({'; '.join(deaths)})",
                       flags=["infrastructure: ray actor died"])

    def _take(self) -> Any:
        while True:
            with self._lock:
                if not self.actors:
                    raise VerifierError("verifier=ray: every actor died and is out of restarts "
                                        "(max_restarts)")
            try:
                return self._idle.get(timeout=1.0)  # wakes up to notice a pool that died meanwhile
            except queue.Empty:
                continue

    def _recover(self, actor: Any) -> None:
        """Back into the pool once Ray has restarted it; out of the pool if it cannot be restarted."""
        with self._lock:
            self.restarts += 1
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            try:
                self.ray.get(actor.identity.remote(), timeout=max(deadline - time.monotonic(), 1.0))
                break
            except self.ray.exceptions.ActorUnavailableError:  # "the actor is restarting": ask again
                if time.monotonic() < deadline:
                    time.sleep(RESTART_POLL_S)
                    continue
                err: Exception = TimeoutError(f"not back after {self.start_timeout_s:g} s")
            except Exception as error:  # out of restarts (ActorDiedError), or it never came back
                err = error
            log.warning("verifier=ray: an actor is gone for good (%s: %s)", type(err).__name__, err)
            with self._lock:
                self.actors.remove(actor)
            return
        self._idle.put(actor)

    # --- life cycle ----------------------------------------------------------------------------------
    def close(self) -> None:
        for actor in getattr(self, "actors", []):
            try:
                self.ray.get(actor.close.remote(), timeout=60)  # the fork-servers and their folders
            except Exception:  # a dead actor has nothing left to close
                pass
            self.ray.kill(actor)
        self.actors = []
        if self._owns_ray and self.ray.is_initialized():
            self.ray.shutdown()

    def __enter__(self) -> RayVerifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as err:
        raise VerifierError('verifier=ray needs Ray: pip install -e ".[ray]"') from err
    return ray
