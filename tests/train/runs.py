"""Recorded runs for training tests: run folders in the format `mtmc optimize` writes them.

    write_run(folder, "scale_bias_rows", [("port", ["ok"]), ("vectorize", ["incorrect", "ok"]),
                                          ("autotune", ["compile_error"])], stop_reason="planner_stop")

Each step is (strategy, outcomes of its attempts); every attempt but the last is a retry, and the
last is accepted when it is "ok". Records carry the keys mtmc/graph/nodes.py `_attempt_record` writes
that training reads; tests/train/test_data.py checks the reading against a real `run_optimize` too.
"""

from __future__ import annotations

import json
from pathlib import Path

from mtmc.reward import RewardConfig, step_reward
from mtmc.verify.verdict import Status, Verdict

Step = tuple[str, list[str]]


def write_run(folder: Path, task: str, steps: list[Step], *, max_steps: int = 12,
              stop_reason: str | None = "planner_stop") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    records = []
    for index, (strategy, outcomes) in enumerate(steps):
        for attempt, status in enumerate(outcomes):
            verdict = Verdict(Status(status), device="interpreter (cpu)")
            last = attempt == len(outcomes) - 1
            outcome = ("accepted" if verdict.ok else "rejected") if last else "retry"
            records.append({"step": index, "attempt": attempt, "strategy": strategy, "outcome": outcome,
                            "status": status, "message": "", "speedup_eager": None,
                            "speedup_vs_previous": None, "reward": step_reward(verdict, None, RewardConfig()),
                            "wall_s": 0.1, "usage": None, "digest": "0" * 16, "diff": "",
                            "verdict": verdict.to_dict()})
    (folder / "trajectory.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    result = {"task": task, "stop_reason": stop_reason, "steps": len(steps),
              "budgets": {"max_steps": max_steps, "max_retries": 1, "time_limit_s": 3600}}
    (folder / "result.json").write_text(json.dumps(result))
    return folder
