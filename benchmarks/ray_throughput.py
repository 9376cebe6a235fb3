"""verifier=ray throughput on the CPU: verdicts per minute with 1, 2 and 4 actors (interpreter verifier).

    python benchmarks/ray_throughput.py [--actors 1,2,4] [--tasks gelu_tanh,softplus,...] [--steps 3]
        [--out ray_throughput.json]

The suite: each task's template port and the first `--steps - 1` tuning steps of its menu, every
program distinct (no verdict cache). Each configuration gets a fresh local Ray instance with that many
fake GPUs and actors, so every actor starts cold (its workers, then each task's reference on first use);
the start-up is timed apart from the suite. The one-process InterpreterVerifier, without Ray, is the
baseline. Every verdict of every configuration must agree with the baseline's status.
"""

from __future__ import annotations

import argparse
import json
import time

from coders.template import TemplateCoder
from mtmc.strategies import Strategy
from mtmc.tasks import load_task
from mtmc.verify import InterpreterVerifier

DEFAULT_TASKS = "gelu_tanh,softplus,hardswish,sum_lastdim,softmax_lastdim,layernorm"


def suite(names: list[str], steps: int) -> list[tuple]:
    """(task, program) pairs: the port, then the first tuning steps of the menu, each on the port."""
    coder = TemplateCoder()
    pairs = []
    for name in names:
        task = load_task(name)
        port = coder.apply(task, None, Strategy.parse("port"))
        pairs.append((task, port))
        tuning = [s for s in coder.legal_strategies(task, port) if not s.is_stop]
        pairs += [(task, coder.apply(task, port, s)) for s in tuning[: steps - 1]]
    return pairs


def one_process(pairs: list[tuple], seeds: int) -> dict:
    started = time.monotonic()
    with InterpreterVerifier(seeds=seeds, seed=0) as verifier:
        up = time.monotonic()
        statuses = [str(verifier.verify(task, program).status) for task, program in pairs]
        done = time.monotonic()
    return row("one process (no Ray)", 1, up - started, done - up, statuses)


def with_ray(pairs: list[tuple], actors: int, seeds: int) -> dict:
    import ray

    from mtmc.verify.ray_backend import RayVerifier

    started = time.monotonic()
    ray.init(num_cpus=actors, num_gpus=actors, include_dashboard=False, log_to_driver=False)
    try:
        with RayVerifier(actors=actors, gpus_per_actor=1, seeds=seeds, seed=0) as verifier:
            up = time.monotonic()
            statuses = [""] * len(pairs)
            for index, verdict in verifier.verify_many(pairs):
                statuses[index] = str(verdict.status)
            done = time.monotonic()
    finally:
        ray.shutdown()
    return row(f"ray, {actors} actor(s)", actors, up - started, done - up, statuses)


def row(name: str, actors: int, startup_s: float, suite_s: float, statuses: list[str]) -> dict:
    return {"config": name, "actors": actors, "startup_s": round(startup_s, 1), "suite_s": round(suite_s, 1),
            "verdicts": len(statuses), "verdicts_per_min": round(60 * len(statuses) / suite_s, 1),
            "statuses": statuses}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actors", default="1,2,4")
    parser.add_argument("--tasks", default=DEFAULT_TASKS)
    parser.add_argument("--steps", type=int, default=3, help="programs per task: the port and steps - 1 more")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", default="ray_throughput.json")
    args = parser.parse_args()
    pairs = suite(args.tasks.split(","), args.steps)
    print(f"{len(pairs)} programs over {len(args.tasks.split(','))} tasks", flush=True)
    rows = [one_process(pairs, args.seeds)]
    print(json.dumps({k: v for k, v in rows[-1].items() if k != "statuses"}), flush=True)
    for actors in [int(n) for n in args.actors.split(",")]:
        rows.append(with_ray(pairs, actors, args.seeds))
        print(json.dumps({k: v for k, v in rows[-1].items() if k != "statuses"}), flush=True)
        if rows[-1]["statuses"] != rows[0]["statuses"]:
            raise SystemExit(f"{rows[-1]['config']}: verdicts differ from the one-process run")
    with open(args.out, "w") as f:
        json.dump({"pairs": [f"{t.name}: {p.digest[:12]}" for t, p in pairs], "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
