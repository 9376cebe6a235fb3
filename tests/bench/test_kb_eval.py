"""benchmarks/kb_eval.py's summary of KernelBench's verdicts beside ours (issue 25 Show 6): agreement
on correctness, each harness's geomean speedup, and the speed gaps that need a reason."""

import math

import pytest

from benchmarks.kb_eval import line, summarize


def row(task, correct=True, kb_correct=True, ours=(2.0, 1.0), kb=(2.0, 1.0)):
    """ours / kb: (eager or reference ms, program ms)."""
    return {"task": task, "correct": correct, "kb_correct": kb_correct, "eager_ms": ours[0],
            "candidate_ms": ours[1], "kb_ref_ms": kb[0], "kb_ms": kb[1]}


def test_agreement_geomeans_and_gaps():
    rows = [row("a"), row("b", kb=(2.0, 1.5)), row("c", kb_correct=False),
            {"task": "d", "skipped": "time limit", "correct": True}]
    s = summarize(rows)
    assert s["judged"] == 3 and s["agree"] == 2 and s["disagree"] == ["c"]
    assert s["timed_by_both"] == 2
    assert s["geomean_ours_vs_eager"] == pytest.approx(2.0)
    assert s["geomean_kb_vs_eager"] == pytest.approx(round(math.sqrt(2.0 * 2.0 / 1.5), 4))
    assert s["speed_gaps_kb_over_ours"] == {"b": pytest.approx(0.667, abs=1e-3)}  # 1.33x against 2x


def test_a_gap_within_ten_percent_is_not_listed_and_no_rows_summarize_to_nothing():
    assert summarize([row("a", kb=(2.0, 1.09))])["speed_gaps_kb_over_ours"] == {}
    empty = summarize([])
    assert empty["judged"] == 0 and empty["geomean_ours_vs_eager"] is None



def test_a_printed_row_says_disagree_only_where_kernelbench_judged():
    assert line(row("a", kb_correct=False)).endswith("DISAGREE")
    assert not line(row("a")).endswith("DISAGREE")
    skipped = line({"task": "d", "skipped": "time limit", "correct": True})
    assert "DISAGREE" not in skipped and skipped.endswith("not judged (time limit)")

# --- the run: --tasks, --shard, --resume, --merge and --control, with KernelBench's eval faked ---

import importlib.util  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import types  # noqa: E402

import torch  # noqa: E402

from benchmarks import kb_eval  # noqa: E402

TASK = '''import torch

class Model(torch.nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.fc = torch.nn.Linear(n_in, n_out)

    def forward(self, x):  # 100 more while cuDNN may use TF32: shows which flags a forward ran under
        return self.fc(x) + (100.0 if torch.backends.cudnn.allow_tf32 else 0.0)

def get_inputs():
    return [torch.rand(2, 4)]

def get_init_inputs():
    return [4, 3]
'''
PROGRAM = """
class ModelNew(Model):
    def forward(self, x):
        return super().forward(x) + {offset}
"""
NAMES = ["11_e", "1_a", "2_b", "3_c", "4_d"]  # sorted as the bench folder lists them


class FakeKB:
    """eval_kernel_against_ref's protocol on the CPU: the custom source imported from a file, Model and
    ModelNew each built from get_init_inputs() after seeding, compared on get_inputs() at 1e-4. It
    records what it judged (a task's program, or a control kind) and how many rows --out held then."""

    def __init__(self, tmp, out):
        self.tmp, self.out, self.calls, self.rows_written = tmp, out, [], []

    def __call__(self, original_model_src, custom_model_src, seed_num, num_correct_trials,
                 num_perf_trials, measure_performance, backend, device):
        task = original_model_src.splitlines()[0].removeprefix("# ")
        kind = next((k for k in kb_eval.CONTROLS if f"--control {k}:" in custom_model_src), "program")
        self.calls.append((task, kind))
        self.rows_written.append(len(json.loads(self.out.read_text())["rows"]) if self.out.exists() else 0)
        context = {}
        exec(original_model_src, context)
        path = self.tmp / f"custom_{len(self.calls)}.py"
        path.write_text(custom_model_src)
        spec = importlib.util.spec_from_file_location("custom", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        torch.manual_seed(seed_num)
        init = context["get_init_inputs"]()
        reference = context["Model"](*init)
        torch.manual_seed(seed_num)
        custom = module.ModelNew(*init)
        diffs = []
        for _ in range(num_correct_trials):
            x = context["get_inputs"]()
            with torch.no_grad():
                new = custom(*x)  # the reference after it: it must find PyTorch's flags restored
                diffs.append(float((new - reference(*x)).abs().max()))
        correct = max(diffs) <= 1e-4
        metadata = {"max_difference": str([f"{d:.6f}" for d in diffs])} if not correct else {}
        return types.SimpleNamespace(compiled=True, correctness=correct, metadata=metadata,
                                     runtime=1.0 if correct and measure_performance else -1.0,
                                     ref_runtime=2.0 if measure_performance else -1.0)


@pytest.fixture
def bench(tmp_path, monkeypatch):
    """Tasks NAMES (task files and a bench folder); 2_b's program is 1e-3 off, the others are exact."""
    tasks, folder = tmp_path / "tasks", tmp_path / "bench"
    tasks.mkdir()
    for name in NAMES:
        (tasks / f"{name}.py").write_text(f"# {name}\n{TASK}")
        (folder / name).mkdir(parents=True)
        offset = 1e-3 if name == "2_b" else 0.0
        (folder / name / "kernel.py").write_text(TASK + PROGRAM.format(offset=offset))
        (folder / name / "bench.json").write_text(json.dumps(
            {"row": {"correct": True, "candidate_ms": 1.0, "eager_ms": 2.0, "status": "ok"}}))
    (folder / "no_program").mkdir()
    compiled = []
    monkeypatch.setattr(torch, "compile", lambda module: compiled.append(module) or module)
    fakes = []

    def run(out, *argv):
        fake = FakeKB(tmp_path, tmp_path / out)
        fakes.append(fake)
        package = types.ModuleType("kernelbench")
        package.eval = types.SimpleNamespace(eval_kernel_against_ref=fake)
        monkeypatch.setitem(sys.modules, "kernelbench", package)
        monkeypatch.setitem(sys.modules, "kernelbench.eval", package.eval)
        kb_eval.main(["--tasks-dir", str(tasks), "--bench", str(folder), "--out", str(tmp_path / out),
                      *[str(tmp_path / a) if a.endswith(".json") else a for a in argv]])
        return fake, json.loads((tmp_path / out).read_text())

    run.tmp, run.compiled = tmp_path, compiled
    return run


def test_a_run_judges_every_program_and_writes_after_each(bench):
    fake, report = bench("all.json")
    assert fake.calls == [(n, "program") for n in NAMES]
    assert fake.rows_written == [0, 1, 2, 3, 4]  # a killed run keeps every row judged before
    assert [r["task"] for r in report["rows"]] == NAMES
    s = report["summary"]
    assert s["judged"] == 5 and s["disagree"] == ["2_b"] and s["controls"] == {}
    bad = next(r for r in report["rows"] if r["task"] == "2_b")
    assert bad["kb_correct"] is False
    assert kb_eval._largest(bad["kb_meta"]["max_difference"]) == pytest.approx(1e-3, rel=0.01)



def test_no_timing_judges_correctness_alone_and_times_nothing(bench):
    fake, report = bench("untimed.json", "--no-timing")
    assert [r["kb_correct"] for r in report["rows"]] == [True, True, False, True, True]
    assert all(r["kb_ms"] is None and r["kb_ref_ms"] is None for r in report["rows"])
    s = report["summary"]
    assert s["judged"] == 5 and s["disagree"] == ["2_b"] and s["timed_by_both"] == 0

def test_tasks_are_name_prefixes(bench):
    fake, report = bench("one.json", "--tasks", "1_", "4_")
    assert fake.calls == [("1_a", "program"), ("4_d", "program")]  # 1_ is not 11_


def test_resume_carries_judged_rows_and_shards_split_the_rest(bench):
    previous = {"rows": [{"task": "1_a", "correct": True, "kb_correct": True, "kb_ms": 7.0},
                         {"task": "2_b", "correct": True, "skipped": "time limit"},
                         {"task": "3_c", "correct": True, "kb_error": "eval returned None"}]}
    (bench.tmp / "prev.json").write_text(json.dumps(previous))
    first, out0 = bench("s0.json", "--resume", "prev.json", "--shard", "0/2")
    second, out1 = bench("s1.json", "--resume", "prev.json", "--shard", "1/2")
    # left to judge: 11_e, 2_b, 3_c, 4_d (a kb_error row is not a verdict); every other one per shard
    assert first.calls == [("11_e", "program"), ("3_c", "program")]
    assert second.calls == [("2_b", "program"), ("4_d", "program")]
    for out in (out0, out1):
        assert next(r for r in out["rows"] if r["task"] == "1_a")["kb_ms"] == 7.0  # carried, not rerun
        assert out["summary"]["rows"] == 3
    kb_eval.main(["--merge", str(bench.tmp / "s0.json"), str(bench.tmp / "s1.json"),
                  "--out", str(bench.tmp / "merged.json")])
    merged = json.loads((bench.tmp / "merged.json").read_text())
    assert sorted(r["task"] for r in merged["rows"]) == sorted(NAMES)
    assert merged["summary"]["judged"] == 5 and merged["summary"]["not_judged"] == 0
    assert merged["summary"]["disagree"] == ["2_b"]


def test_past_the_time_limit_rows_are_skipped_and_a_resume_judges_them(bench):
    fake, report = bench("late.json", "--time-limit", "-1")
    assert fake.calls == [] and all(r["skipped"] == "time limit" for r in report["rows"])
    assert report["summary"]["not_judged"] == 5
    fake, report = bench("again.json", "--resume", "late.json")
    assert len(fake.calls) == 5 and report["summary"]["judged"] == 5


def test_controls_run_kernelbench_on_the_tasks_own_model_where_it_rejected_ours(bench):
    flags = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    fake, report = bench("c.json", "--control", "compile", "eager-ieee")
    assert fake.calls == [(n, "program") for n in NAMES[:3]] + [("2_b", "compile"), ("2_b", "eager-ieee")] \
        + [(n, "program") for n in NAMES[3:]]
    assert (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32) == flags
    assert len(bench.compiled) == 1 and type(bench.compiled[0]).__name__ == "Model"
    control = next(r for r in report["rows"] if r["task"] == "2_b")["control"]
    # torch.compile's Model (the identity here) is the reference exactly: same seed, same weights
    assert control["compile"]["kb_correct"] is True and control["compile"]["max_difference"] is None
    # the eager control ran with TF32 off (the task's marker: 100 less than the reference)
    assert control["eager-ieee"]["kb_correct"] is False
    assert control["eager-ieee"]["max_difference"] == pytest.approx(100.0)
    s = report["summary"]["controls"]
    assert s["compile"] == {"judged": 1, "kb_rejects": [], "disagree_kb_rejects_control_too": [],
                            "disagree_kb_accepts_control": ["2_b"], "disagree_without_control": []}
    assert s["eager-ieee"]["disagree_kb_rejects_control_too"] == ["2_b"]


def test_controls_of_resumed_rejections_run_once_over_the_shards_and_merge(bench):
    bench("p.json")  # 2_b rejected, no controls
    first, out0 = bench("c0.json", "--resume", "p.json", "--shard", "0/2", "--control", "eager-ieee")
    second, out1 = bench("c1.json", "--resume", "p.json", "--shard", "1/2", "--control", "eager-ieee")
    assert first.calls + second.calls == [("2_b", "eager-ieee")]  # no program judged again
    kb_eval.main(["--merge", str(bench.tmp / "c1.json"), str(bench.tmp / "c0.json"),
                  "--out", str(bench.tmp / "m.json")])
    merged = json.loads((bench.tmp / "m.json").read_text())
    assert merged["summary"]["controls"]["eager-ieee"]["judged"] == 1
    fake, _ = bench("c2.json", "--resume", "m.json", "--control", "eager-ieee")
    assert fake.calls == []  # done: a resume of the merge has nothing left


def test_control_all_runs_the_controls_on_the_named_tasks_even_where_kernelbench_agreed(bench):
    fake, report = bench("n.json", "--tasks", "1_", "--control", "eager-ieee", "--control-all")
    assert fake.calls == [("1_a", "program"), ("1_a", "eager-ieee")]


def test_merge_keeps_a_judged_row_over_a_skipped_one_and_pools_controls():
    judged = {"task": "t", "kb_correct": False, "control": {"compile": {"kb_correct": False}}}
    rows = kb_eval.merge_rows([judged], [{**judged, "control": {"compile": {"skipped": "time limit"},
                                                                "eager-ieee": {"kb_correct": False}}}],
                              [{"task": "t", "skipped": "time limit"}])
    assert rows == [{"task": "t", "kb_correct": False,
                     "control": {"compile": {"kb_correct": False}, "eager-ieee": {"kb_correct": False}}}]


def test_a_bad_shard_is_refused():
    with pytest.raises(SystemExit):
        kb_eval.parse(["--tasks-dir", "t", "--bench", "b", "--out", "o", "--shard", "2/2"])
