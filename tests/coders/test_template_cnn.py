"""The template coder on whole CNNs (the KernelBench level-3 families): fusing the port of a
deep program fast and as the one-merge-at-a-time definition does, and the ops CNNs add, against
PyTorch on the CPU interpreter at small, odd sizes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from coders.template import TemplateCoder, fuse
from coders.template.emit.common import FusionError
from coders.template.emit.module import generate
from coders.template.fuse import chains
from coders.template.ir import ProgramIR
from coders.template.lower import lower
from coders.template.trace import trace
from mtmc.program import Program
from mtmc.strategies import PORT
from mtmc.tasks import Task, load_task
from tests.coders.test_template import check

TASKS = Path(__file__).parent / "tasks" / "cnn"
coder = TemplateCoder()


def cnn_task(name: str) -> Task:
    return load_task(TASKS / f"{name}.py")


def merge_one_at_a_time(ir: ProgramIR) -> ProgramIR:
    """fuse_chains by its definition: merge the first elementwise pair that merges (fuse.merge:
    the whole program checked), then look again from the start."""
    while True:
        for _, producer, consumer in fuse.pairs(ir):
            if producer.kind == consumer.kind == "pointwise":
                try:
                    ir = fuse.merge(ir, producer, consumer)
                    break
                except (fuse.NotFusable, FusionError):
                    continue
        else:
            return ir


def test_fused_chains_are_the_one_merge_at_a_time_grouping():
    task = cnn_task("residual_tower")
    sizes = {"DEPTH": 4}  # two downsample branches: pairs that must wait for other merges
    lowered = lower(trace(task, sizes))
    fused = fuse.fuse_chains(lowered)
    assert fused.to_dict() == merge_one_at_a_time(lower(trace(task, sizes))).to_dict()
    assert len(fused.kernels()) < len(lowered.kernels()) // 2
    assert lowered.to_dict() == lower(trace(task, sizes)).to_dict()  # the input is left as it was


def test_a_deep_program_tries_each_pair_a_bounded_number_of_times(monkeypatch):
    """ResNet-101 lowers to ~860 kernels; trying every pair again after each merge, copying the
    whole program per try, took over 13 minutes. Pairs refused for good are not tried again."""
    tries = []
    real = fuse.merged_kernel
    monkeypatch.setattr(chains, "merged_kernel", lambda ir, p, c: tries.append(1) or real(ir, p, c))
    lowered = lower(trace(cnn_task("residual_tower"), {"DEPTH": 24}))
    fused = fuse.fuse_chains(lowered)
    merges = len(lowered.kernels()) - len(fused.kernels())
    assert len(lowered.kernels()) > 200 and merges > len(lowered.kernels()) // 2
    assert len(tries) < 2 * merges


def test_residual_tower_matches_reference(tmp_path):
    task = cnn_task("residual_tower")
    check(task, coder.apply(task, None, PORT), tmp_path)


@pytest.mark.parametrize("name", ["batch_norm_batch_stats", "batch_norm_functional"])
def test_batch_norm_with_batch_statistics_matches_reference(name, tmp_path):
    task = cnn_task(name)
    program = coder.apply(task, None, PORT)
    assert "running_mean" not in program.source.split("class ModelNew")[1].split("def forward")[1]
    check(task, program, tmp_path)


def fuse_fully(task: Task) -> Program:
    """The port, then its fusion steps until none is offered (`fuse all` where two or more are left)."""
    program = coder.apply(task, None, PORT)
    while fusions := [s for s in coder.legal_strategies(task, program) if s.kind == "fuse"]:
        program = coder.apply(task, program, next((s for s in fusions if s.args.get("value") == "all"),
                                                  fusions[0]))
    return program


@pytest.mark.parametrize("offset", ["* 3 + 1", "* 0.1 + 100"])
def test_batch_statistics_take_one_pass_over_the_planes(offset, tmp_path):
    """Each plane's mean and variance in one reduce kernel, the channel's from them (the law of total
    variance), then the normalizing pass: four kernels with the conv, from the port on (fuse/statistics.py;
    `fuse all` made them before). A large common offset (100 with a spread of 0.1) would cancel in
    E[x^2] - mean^2; the planes' centred squares keep fp32's accuracy."""
    task = cnn_task("batch_norm_batch_stats")
    task = Task(name=task.name, source=task.source.replace("* 3 + 1", offset))
    fused = coder.apply(task, None, PORT)
    assert fused.source == fuse_fully(task).source
    kernels = ProgramIR.from_dict(fused.metadata["template_ir"]).kernels()
    stats = [k for k in kernels if k.kind == "reduce" and [o.op for o in k.body].count("mean") == 2]
    assert len(kernels) == 4 and len(stats) == 2, [k.name for k in kernels]
    check(task, fused, tmp_path)


def test_batch_norm_joins_the_reduction_after_it_through_per_channel_operands(tmp_path):
    """A global average pool after batch norm: its reduce kernel's rows are the (n, c) planes, and the
    normalizing pass's per-channel mean, scale and shift are read as element row % C (a row tail,
    emit/reduce_layout.py), so a `fuse` step puts the normalization in the pool's pass."""
    task = cnn_task("batch_norm_batch_stats")
    forward = "return torch.relu(self.bn(self.conv(x)) + 0.5)"
    task = Task(name=task.name, source=task.source.replace(forward, forward + ".mean(dim=(2, 3))"))
    fused = fuse_fully(task)
    kernels = ProgramIR.from_dict(fused.metadata["template_ir"]).kernels()
    assert [k.kind for k in kernels] == ["conv", "reduce", "reduce", "reduce"]
    assert "row % n_tail" in fused.source and "n_tail = " in fused.source
    check(task, fused, tmp_path)


def test_blocks_built_by_nested_functions_match_reference(tmp_path):
    task = cnn_task("builder_functions")
    check(task, coder.apply(task, None, PORT), tmp_path)


def test_concatenations_match_reference(tmp_path):
    task = cnn_task("concat_branches")
    program = coder.apply(task, None, PORT)
    assert "torch.cat" not in program.source
    check(task, program, tmp_path)


def test_concatenation_stays_a_copy_through_fusions_and_its_knobs(tmp_path):
    task = cnn_task("concat_branches")
    program = coder.apply(task, None, PORT)
    while fusions := [s for s in coder.legal_strategies(task, program) if s.kind == "fuse"]:
        program = coder.apply(task, program, fusions[0])
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    assert [k.kind for k in ir.kernels()].count("cat") == 2
    for kernel in ir.kernels():
        if kernel.kind == "cat":
            kernel.config.update(BLOCK=16, num_warps=2)  # several blocks per input at the CPU size
    check(task, Program(generate(task, ir), program.metadata), tmp_path)


def test_constructor_helpers_are_copied_and_match_reference(tmp_path):
    task = cnn_task("constructor_helpers")
    check(task, coder.apply(task, None, PORT), tmp_path)


PORT_SOURCE = """
import sys
from coders.template import TemplateCoder
from mtmc.strategies import PORT
from mtmc.tasks import load_task
sys.stdout.write(TemplateCoder().apply(load_task(sys.argv[1]), None, PORT).source)
"""


def test_helpers_are_copied_in_the_tasks_order_whatever_the_hash_seed(tmp_path):
    """The program is the same in every process (the verifier's cache and `tree check` rely on it):
    its copied classes and constants stand in the task's order, not a set's (PYTHONHASHSEED)."""
    path = TASKS / "helper_order.py"
    sources = {subprocess.run([sys.executable, "-c", PORT_SOURCE, str(path)], check=True, capture_output=True,
                              text=True, env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout
               for seed in (0, 1, 2, 3)}
    assert len(sources) == 1
    source = sources.pop()
    order = [source.index(s) for s in ("GROWTH = 3", "LAYERS = 2", "class DenseBlock", "class Transition")]
    assert order == sorted(order)
    check(cnn_task("helper_order"), coder.apply(cnn_task("helper_order"), None, PORT), tmp_path)


def test_channel_shuffle_matches_reference(tmp_path):
    task = cnn_task("channel_shuffle")
    program = coder.apply(task, None, PORT)
    assert ".contiguous()" in program.source.split("def forward")[-1]  # the copy the view needs
    check(task, program, tmp_path)
