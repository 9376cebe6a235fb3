"""Merging the tree files of a sharded recording (mtmc/tree/merge.py): the merged file loads as one
recording of the same rows does; a task recorded by another task source, coder or verifier is refused."""

from __future__ import annotations

import json

import pytest

from coders.template import TemplateCoder
from mtmc.tree import load_tree, read_rows, record_tree
from mtmc.tree.merge import MergeConflict, merge_trees
from mtmc.tree.report import headroom
from mtmc.tree.shard import shard_tasks
from planners.greedy import GreedyPlanner
from tests.tree.fakes import DigestVerifier, tiny_task

coder = TemplateCoder()
TASKS = [tiny_task(f"t{i}", scale=i + 2, split="train" if i % 2 else "eval") for i in range(4)]


def recorded(path, tasks, depth=2):
    record_tree(tasks, coder, DigestVerifier(), path, depth=depth)
    return path


def canonical(path):
    return sorted(json.dumps(row, sort_keys=True) for row in read_rows(path))


def index(path):
    tree = load_tree(path)
    return tree.nodes, dict(tree.out), tree.expanded, tree.task_sha, tree.retries, tree.formats


@pytest.fixture
def shards(tmp_path):
    """The four tasks recorded in one file, and in two shards' files."""
    parts = [recorded(tmp_path / f"shard{i}.jsonl", shard_tasks(TASKS, coder, 2, f"{i}/2")[0])
             for i in range(2)]
    return recorded(tmp_path / "single.jsonl", TASKS), parts


def test_a_merged_file_loads_as_one_recording_of_the_same_rows(tmp_path, shards):
    single, parts = shards
    summary = merge_trees(parts, tmp_path / "merged.jsonl")
    merged = tmp_path / "merged.jsonl"
    assert canonical(merged) == canonical(single) and summary.repeated == 0
    assert summary.tasks == sorted(t.name for t in TASKS) and summary.nodes == len(load_tree(single).nodes)
    assert index(merged) == index(single)
    planners = {"greedy": [GreedyPlanner()]}
    reports = [headroom(load_tree(p), TASKS, planners, max_steps=3) for p in (merged, single)]
    assert reports[0]["tasks"] == reports[1]["tasks"]
    # and the recorder finds nothing left to judge in it
    assert record_tree(TASKS, coder, DigestVerifier(), merged, depth=2).judged == 0


def test_parts_extended_from_one_copy_merge_without_repeats(tmp_path, shards):
    """tree_gpus.sh seeds every shard's file with the tree so far: its rows are in every part."""
    _, parts = shards
    base = merge_trees([parts[0]], tmp_path / "base.jsonl")
    grown = tmp_path / "grown.jsonl"
    grown.write_text((tmp_path / "base.jsonl").read_text())
    recorded(grown, [t for t in TASKS if t.name not in base.tasks])
    summary = merge_trees([tmp_path / "base.jsonl", grown], tmp_path / "merged.jsonl")
    assert summary.repeated == base.rows
    assert canonical(tmp_path / "merged.jsonl") == canonical(grown)


def test_a_program_reached_by_another_step_in_a_later_file_is_that_step_s_edge(tmp_path):
    rows = list(read_rows(recorded(tmp_path / "a.jsonl", TASKS[:1], depth=1)))
    child = next(r for r in rows if r["kind"] == "node" and r["depth"] == 1)
    other = {**child, "strategy": "a step recorded elsewhere", "rank": 99}
    (tmp_path / "b.jsonl").write_text(json.dumps(other) + "\n")
    merge_trees([tmp_path / "a.jsonl", tmp_path / "b.jsonl"], tmp_path / "m.jsonl")
    last = list(read_rows(tmp_path / "m.jsonl"))[-1]
    assert last["kind"] == "edge" and last["digest"] == child["digest"] and last["rank"] == 99
    tree = load_tree(tmp_path / "m.jsonl")
    assert tree.node(child["task"], child["digest"]) == child  # the first file's verdict


@pytest.mark.parametrize("field", ["coder", "verifier_version", "task_sha"])
def test_a_task_recorded_differently_in_two_files_is_refused(tmp_path, field):
    first = recorded(tmp_path / "a.jsonl", TASKS[:2], depth=1)
    rows = [{**r, field: "another"} if r["kind"] == "node" and r["task"] == "t1" else r
            for r in read_rows(first)]
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(MergeConflict, match="t1: recorded differently in .*a.jsonl and .*b.jsonl"):
        merge_trees([first, tmp_path / "b.jsonl"], tmp_path / "m.jsonl")
    assert not (tmp_path / "m.jsonl").exists()


def test_a_file_that_is_not_a_part_is_never_replaced(tmp_path, shards):
    _, parts = shards
    (tmp_path / "other.jsonl").write_text("kept\n")
    with pytest.raises(FileExistsError, match="not one of the parts"):
        merge_trees(parts, tmp_path / "other.jsonl")
    assert (tmp_path / "other.jsonl").read_text() == "kept\n"
    merge_trees([parts[0], parts[1]], parts[0])  # into one of the parts: read first, then replaced
    assert canonical(parts[0]) == canonical(shards[0])
