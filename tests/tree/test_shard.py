"""Shards of a recording (mtmc/tree/shard.py): each task in exactly one shard, the same split from every
recorder, balanced by the programs each task's tree holds."""

from __future__ import annotations

import pytest

from coders.template import TemplateCoder
from mtmc.tree import read_rows, record_tree
from mtmc.tree.shard import parse_shard, program_counts, shard_tasks, split
from tests.tree.fakes import DigestVerifier, tiny_task

# programs within 2 steps of some of the built-ins, as the coder enumerated them at dde9c8c
COUNTS = {"matmul_large_k_fp16": 218, "swiglu_fp16": 183, "linear_gelu_bf16": 183, "matmul_fp32": 160,
          "cross_entropy": 93, "groupnorm": 83, "layernorm": 52, "softmax_lastdim": 59, "gelu_tanh": 37,
          "hardswish": 37, "silu_fp16": 37, "softplus": 37, "attention_sdpa_bf16": 33}


def test_shard_is_i_of_n():
    assert parse_shard("0/4") == (0, 4) and parse_shard(" 3 / 4 ") == (3, 4)
    for bad in ("4/4", "-1/2", "1", "a/b", "0/0"):
        with pytest.raises(ValueError, match="I/N"):
            parse_shard(bad)


@pytest.mark.parametrize("shards", [1, 2, 3, 4, 20])
def test_every_task_is_in_exactly_one_shard(shards):
    parts = split(COUNTS, shards)
    assert len(parts) == shards
    assert sorted(name for part in parts for name in part) == sorted(COUNTS)


@pytest.mark.parametrize("shards", [2, 3, 4])
def test_the_shards_end_within_one_task_of_each_other(shards):
    loads = [sum(COUNTS[n] for n in part) for part in split(COUNTS, shards)]
    # greedy, largest first: the fullest shard's last task went to the least full, so no shard is
    # fuller than the least full by more than one task's count
    assert max(loads) - min(loads) <= max(COUNTS.values())
    assert max(loads) <= sum(COUNTS.values()) / shards + max(COUNTS.values())
    naive = [sum(COUNTS[n] for n in sorted(COUNTS)[i::shards]) for i in range(shards)]
    assert max(loads) <= max(naive)


def test_the_split_depends_on_the_counts_alone():
    reordered = dict(reversed(list(COUNTS.items())))
    assert split(reordered, 4) == split(COUNTS, 4)
    assert split({"b": 5, "a": 5, "c": 5}, 2) == [["a", "c"], ["b"]]  # ties by name, onto the lower shard


def test_the_count_is_the_programs_an_all_ok_recording_judges(tmp_path):
    coder, task = TemplateCoder(), tiny_task()
    record_tree([task], coder, DigestVerifier(failing=""), tmp_path / "t.jsonl", depth=2)
    nodes = [r for r in read_rows(tmp_path / "t.jsonl") if r["kind"] == "node"]
    assert program_counts([task], coder, depth=2) == {task.name: len(nodes)}
    assert program_counts([task], coder, depth=0) == {task.name: 1}


def test_each_recorder_takes_its_share_in_the_suite_s_order():
    coder = TemplateCoder()
    tasks = [tiny_task(f"t{i}", scale=i + 2) for i in range(5)]
    shares = [shard_tasks(tasks, coder, 1, f"{i}/2") for i in range(2)]
    names = [[t.name for t in share] for share, _ in shares]
    assert sorted(names[0] + names[1]) == [t.name for t in tasks]
    assert all(share == sorted(share) for share in names)
    line = shares[1][1]
    assert line.startswith(f"shard 1/2: {len(names[1])} of 5 tasks") and line.endswith(",".join(names[1]))
