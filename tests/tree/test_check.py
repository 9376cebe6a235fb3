"""`mtmc tree check`: the share of a tree's programs the coder still produces."""

from __future__ import annotations

from coders.template import TemplateCoder
from mtmc.program import Program
from mtmc.tree import load_tree, record_tree
from mtmc.tree.check import check_tree
from tests.tree.fakes import DigestVerifier, RefusingCoder, tiny_task


class CommentingCoder(TemplateCoder):
    """The template coder with one more line in every program: every digest changes."""

    def apply(self, task, program, strategy, feedback=None):
        child = super().apply(task, program, strategy, feedback)
        return Program(child.source + "# changed\n", child.metadata)


def test_the_same_coder_produces_all_of_its_tree_and_a_changed_one_less(tmp_path):
    task = tiny_task()
    path = tmp_path / "t.jsonl"
    record_tree([task], TemplateCoder(), DigestVerifier(), path, depth=2)
    tree = load_tree(path)
    same = check_tree(tree, [task], TemplateCoder())
    assert same["share"] == 1.0 and same["produced"] == len(tree.task_nodes(task.name)) > 10
    fewer = check_tree(tree, [task], RefusingCoder("vectorize"))
    assert 0 < fewer["produced"] < same["produced"]
    assert check_tree(tree, [task], CommentingCoder())["produced"] == 0
