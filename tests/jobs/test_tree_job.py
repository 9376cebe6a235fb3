"""`mtmc tree record` / `check` / `retime`: the job on a folder suite, in process with a fake verifier
(and once from the command line with the interpreter, under -m slow)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from omegaconf import OmegaConf

from mtmc.cli import _action_as_override
from mtmc.jobs.tree import run
from mtmc.tree import load_tree, read_rows
from tests.test_conf import composed
from tests.tree.fakes import TASK_SOURCE


def suite(tmp_path):
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "relu_a.py").write_text(TASK_SOURCE.format(scale=2, split="train"))
    (folder / "relu_b.py").write_text(TASK_SOURCE.format(scale=3, split="eval"))
    return folder


def test_the_word_after_tree_is_its_action():
    assert _action_as_override(["record", "depth=1"]) == ["action=record", "depth=1"]
    assert _action_as_override(["depth=1"]) == ["depth=1"]


def test_record_a_split_of_a_folder_then_run_again(tmp_path, capsys):
    path = tmp_path / "tree.jsonl"
    cfg = composed("tree", ["action=record", f"suite={suite(tmp_path)}", f"tree={path}", "depth=1",
                            "split=eval"])
    cfg.verifier = OmegaConf.create({"_target_": "tests.tree.fakes.DigestVerifier"})
    summary = run(cfg)
    assert summary.complete and summary.judged > 1
    assert load_tree(path).tasks == ["relu_b"]
    assert "complete" in capsys.readouterr().out
    rows = path.read_text()
    assert run(cfg).judged == 0 and path.read_text() == rows


def test_check_says_what_share_today_s_coder_still_writes(tmp_path, capsys):
    path = tmp_path / "tree.jsonl"
    folder = suite(tmp_path)
    cfg = composed("tree", ["action=record", f"suite={folder}", f"tree={path}", "depth=1"])
    cfg.verifier = OmegaConf.create({"_target_": "tests.tree.fakes.DigestVerifier"})
    recorded = run(cfg).judged
    result = run(composed("tree", ["action=check", f"suite={folder}", f"tree={path}"]))
    assert result["share"] == 1.0 and result["recorded"] == recorded
    assert f"{recorded} of {recorded} programs of 2 tasks (100.0%)" in capsys.readouterr().out


def test_retime_judges_the_ports_again_and_writes_the_noise_report(tmp_path, capsys):
    path, folder, out = tmp_path / "tree.jsonl", suite(tmp_path), tmp_path / "out"
    cfg = composed("tree", ["action=record", f"suite={folder}", f"tree={path}", "depth=0"])
    cfg.verifier = OmegaConf.create({"_target_": "tests.tree.fakes.DigestVerifier"})
    run(cfg)
    cfg = composed("tree", ["action=retime", f"suite={folder}", f"tree={path}", "repeats=2", f"out={out}"])
    cfg.verifier = OmegaConf.create({"_target_": "tests.tree.fakes.JitterVerifier", "factors": [1.02, 1.1]})
    result = run(cfg)
    assert result["summary"]["retimed_tasks"] == 2 and result["summary"]["share_within_limit"] == 0.0
    assert result["summary"]["max_spread"] == pytest.approx(1.1) and result["meta"]["run"]["judged"] == 4
    assert json.loads((out / "retime_report.json").read_text())["summary"] == result["summary"]
    assert "- spread <= 1.05: 0 (0.0%)" in (out / "retime_report.md").read_text()
    assert "4 verdicts judged now, 0 already in the file, 2 programs of 2 tasks" in capsys.readouterr().out


def test_retime_refuses_a_verifier_with_a_verdict_cache_before_starting_it(tmp_path):
    path = tmp_path / "tree.jsonl"
    cfg = composed("tree", ["action=retime", f"tree={path}"])
    # DigestVerifier takes no cache_path: instantiated, it would raise TypeError, not this
    cfg.verifier = OmegaConf.create({"_target_": "tests.tree.fakes.DigestVerifier", "cache_path": "v.sqlite"})
    with pytest.raises(SystemExit, match="verifier.cache_path=null"):
        run(cfg)


def test_an_unknown_action_is_one_sentence(tmp_path):
    cfg = composed("tree", ["action=prune", f"tree={tmp_path / 't.jsonl'}"])
    with pytest.raises(SystemExit, match="unknown action 'prune'"):
        run(cfg)


@pytest.mark.slow  # a subprocess and the interpreter's workers
def test_mtmc_tree_record_from_the_command_line(tmp_path):
    path = tmp_path / "tree.jsonl"
    done = subprocess.run([sys.executable, "-m", "mtmc.cli", "tree", "record", f"suite={suite(tmp_path)}",
                           f"tree={path}", "depth=0", "verifier=interpreter", "verifier.seeds=1",
                           f"hydra.run.dir={tmp_path / 'run'}"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [r["status"] for r in read_rows(path)] == ["ok", "ok"]
    assert "2 programs judged now" in done.stdout


def test_record_takes_the_variants_suite(tmp_path):
    path = tmp_path / "tree.jsonl"
    names = ["softmax_lastdim__dim0", "sum_lastdim__narrow"]
    cfg = composed("tree", ["action=record", "suite=variants", f"tasks=[{','.join(names)}]", f"tree={path}",
                            "depth=1", "split=eval"])
    cfg.verifier = OmegaConf.create({"_target_": "tests.tree.fakes.DigestVerifier"})
    assert run(cfg).judged > 1
    assert load_tree(path).tasks == ["softmax_lastdim__dim0"]  # sum_lastdim's family is on the train side


def test_trusted_batches_are_for_the_template_coder_only(tmp_path):
    cfg = composed("tree", ["action=record", f"suite={suite(tmp_path)}", f"tree={tmp_path / 't.jsonl'}",
                            "depth=0", "judge=batch"])
    cfg.verifier = OmegaConf.create({"_target_": "tests.tree.fakes.DigestVerifier"})
    cfg.coder = OmegaConf.create({"_target_": "tests.tree.fakes.RefusingCoder"})
    with pytest.raises(SystemExit, match="judge=batch .* template coder only"):
        run(cfg)


def test_two_shards_recorded_apart_then_merged_hold_the_one_run_s_rows(tmp_path, capsys):
    folder, fake = suite(tmp_path), OmegaConf.create({"_target_": "tests.tree.fakes.DigestVerifier"})

    def record(tree, *extra):
        cfg = composed("tree", ["action=record", f"suite={folder}", f"tree={tree}", "depth=1", *extra])
        cfg.verifier = fake
        return run(cfg)

    record(tmp_path / "one.jsonl")
    for i in range(2):
        record(tmp_path / f"shard{i}.jsonl", f"shard={i}/2")
    out = capsys.readouterr().out
    assert "shard 0/2: 1 of 2 tasks" in out and "shard 1/2: 1 of 2 tasks" in out
    parts = f"parts=[{tmp_path / 'shard0.jsonl'},{tmp_path / 'shard1.jsonl'}]"
    summary = run(composed("tree", ["action=merge", f"tree={tmp_path / 'merged.jsonl'}", parts]))
    assert summary.tasks == ["relu_a", "relu_b"] and summary.repeated == 0
    line = f"{summary.rows} rows ({summary.nodes} programs of 2 tasks) from 2 files"
    assert line in capsys.readouterr().out
    rows = [sorted(map(json.dumps, read_rows(tmp_path / f))) for f in ("one.jsonl", "merged.jsonl")]
    assert rows[0] == rows[1]


def test_merge_and_shard_errors_are_one_sentence(tmp_path):
    with pytest.raises(SystemExit, match="give the shards' files as parts="):
        run(composed("tree", ["action=merge", f"tree={tmp_path / 'm.jsonl'}"]))
    with pytest.raises(SystemExit, match="mtmc tree merge: no tree file: .*absent.jsonl"):
        run(composed("tree", ["action=merge", f"tree={tmp_path / 'm.jsonl'}",
                              f"parts=[{tmp_path}/absent.jsonl]"]))
    cfg = composed("tree", ["action=record", f"suite={suite(tmp_path)}", f"tree={tmp_path / 't.jsonl'}",
                            "shard=2/2"])
    cfg.verifier = OmegaConf.create({"_target_": "tests.tree.fakes.DigestVerifier"})
    with pytest.raises(SystemExit, match="shard='2/2': give I/N with 0 <= I < N"):
        run(cfg)
