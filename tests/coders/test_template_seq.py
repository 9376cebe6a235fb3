"""The template coder on sequence models (KernelBench level 3 beyond CNNs): recurrent layers (LSTM,
GRU, RNN), against PyTorch on the CPU interpreter at small, odd sizes (batch 3, hidden sizes that
are not a multiple of any block)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from coders.template import TemplateCoder
from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from mtmc.program import Program
from mtmc.protocols import CoderError
from mtmc.strategies import PORT, Strategy
from mtmc.tasks import Task, load_task
from mtmc.verify import InterpreterVerifier
from tests.coders.test_template import check, import_program, task_from_source

TASKS = Path(__file__).parent / "tasks" / "seq"
coder = TemplateCoder()


def seq_task(name: str) -> Task:
    return load_task(TASKS / f"{name}.py")


def kinds(program: Program) -> list[str]:
    return [k.kind for k in ProgramIR.from_dict(program.metadata["template_ir"]).kernels()]


def with_blocks(task: Task, program: Program, **blocks: int) -> Program:
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    for kernel in ir.kernels():
        if kernel.kind == "recurrent":
            kernel.config.update(blocks)
    return Program(generate(task, ir))


@pytest.mark.parametrize("name, layers", [("lstm_stack", 2), ("gru_stack", 3), ("gru_bidirectional", 2)])
def test_recurrent_layers_match_pytorch(name, layers, tmp_path):
    """Each layer is an input projection over all steps (a matmul) and one recurrent kernel; with
    16-wide blocks the hidden state spans two blocks and the product with W_hh two K steps."""
    task = seq_task(name)
    program = coder.apply(task, None, PORT)
    assert kinds(program).count("recurrent") == layers and kinds(program).count("matmul") >= layers
    check(task, program, tmp_path, tag="port")
    check(task, with_blocks(task, program, BLOCK=16, BLOCK_K=16), tmp_path, tag="small")


RNN_TASK = '''
"""A two-layer bidirectional ReLU RNN, batch first, returning its output and h_n."""
import torch
import torch.nn as nn

B, T, F, H = 4, 16, 8, 24


class Model(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.rnn = nn.RNN(features, hidden, 2, nonlinearity="relu", batch_first=True, bidirectional=True)

    def forward(self, x, h0):
        return self.rnn(x, h0)


def get_inputs():
    return [torch.randn(B, T, F), torch.randn(4, B, H)]


def get_init_inputs():
    return [F, H]


MTMC = {"cpu_sizes": [{"B": 3, "T": 5, "F": 7, "H": 17}]}
'''


def test_relu_rnn_matches_pytorch(tmp_path):
    task = task_from_source(tmp_path, "rnn_relu", RNN_TASK)
    check(task, coder.apply(task, None, PORT), tmp_path)


def test_recurrent_kernel_steps_keep_it_correct(tmp_path):
    """The recurrence dominates a long sequence: its menu holds hidden-state tiles of at least 16
    (a tl.dot) and warps, no autotune; fusion leaves it whole."""
    task = seq_task("gru_bidirectional")
    program = coder.apply(task, None, PORT)
    legal = [str(s) for s in coder.legal_strategies(task, program)]
    assert "tile BLOCK=16" in legal and "num_warps 4" in legal and "autotune" not in legal  # the port has 8
    assert not any(s.startswith("tile BLOCK=8") for s in legal)
    tiled = coder.apply(task, program, Strategy.parse("tile BLOCK=16"))
    check(task, tiled, tmp_path, tag="tiled")
    while fusions := [s for s in coder.legal_strategies(task, program) if s.kind == "fuse"]:
        program = coder.apply(task, program, fusions[0])
    assert kinds(program).count("recurrent") == 2
    check(task, program, tmp_path, tag="fused")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["lstm_stack", "gru_bidirectional"])
def test_recurrent_ports_are_accepted_by_the_verifier(name):
    """The real interpreter verifier (static rules, proof of work, seeds and a derived size): about
    20 s a task on two busy cores."""
    with InterpreterVerifier(timeout_s=300.0, seeds=2) as verifier:
        task = seq_task(name)
        verdict = verifier.verify(task, coder.apply(task, None, PORT))
    assert verdict.ok, verdict.message


# --------------------------------------------------------------------------------------------------
# attention modules and patches
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["mha", "encoder"])
def test_attention_modules_match_pytorch(name, tmp_path):
    """nn.MultiheadAttention (its head count changed by the CPU size: read at run time), and
    nn.TransformerEncoder / EncoderLayer (relu, gelu, norm_first, batch_first) after a patch
    embedding cut by Tensor.unfold: matmuls, one flash kernel per attention, layer norms."""
    task = seq_task(name)
    program = coder.apply(task, None, PORT)
    assert "attention" in kinds(program) and ".unfold(" not in program.source
    check(task, program, tmp_path)


MHA_WEIGHTS_TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 2)

    def forward(self, x):
        return self.attn(x, x, x)[1]


def get_inputs():
    return [torch.rand(5, 2, 16)]


def get_init_inputs():
    return []
'''


def test_attention_weights_are_refused_only_when_used(tmp_path):
    task = task_from_source(tmp_path, "mha_weights", MHA_WEIGHTS_TASK)
    with pytest.raises(CoderError, match="attention weights"):
        coder.apply(task, None, PORT)


# --------------------------------------------------------------------------------------------------
# tracing: buffers, device checks, module aliases
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["causal_buffer", "netvlad_like"])
def test_buffers_sliced_by_traced_sizes_and_device_checks_trace(name, tmp_path):
    """A mask buffer sliced by the traced sequence length is a graph value (minGPT); a device
    comparison before a raise is answered (NetVLAD, which also imports torch as `th`, a name the
    program's constructor gets as `torch`, and has a `mask=None` the forward keeps, refusing a mask)."""
    task = seq_task(name)
    program = coder.apply(task, None, PORT)
    assert "cluster.device" not in program.source  # the device check's raise is answered, not kept
    assert not re.search(r"\bth\.", program.source)  # th is torch
    check(task, program, tmp_path)


SIZE_BRANCH_TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        if x.shape[0] > 2:  # a branch on a traced size: the program holds one side only
            return x * 2
        return x


def get_inputs():
    return [torch.rand(4, 5)]


def get_init_inputs():
    return []
'''


def test_a_branch_on_a_traced_size_is_taken_and_pinned(tmp_path):
    """The trace answers the branch at the task's size (its only one) and pins that size: the program
    checks it on entry, so at another size it refuses rather than take the branch the trace took
    (trace/concrete.py; tests/coders/test_template_control.py has the rest)."""
    task = task_from_source(tmp_path, "size_branch", SIZE_BRANCH_TASK)
    program = coder.apply(task, None, PORT)
    assert ProgramIR.from_dict(program.metadata["template_ir"]).pins == [["x", 0, 4]]
    check(task, program, tmp_path)
    model = import_program(program.source, tmp_path, "other").ModelNew()
    with pytest.raises(ValueError, match=r"traced at x\.shape\[0\] == 4"):
        model(torch.rand(2, 5))


# --------------------------------------------------------------------------------------------------
# distances and the triplet loss (KernelBench level 1)
# --------------------------------------------------------------------------------------------------

def test_triplet_margin_loss_and_distances_match_pytorch(tmp_path):
    """p = 2 (a norm reduction), p = 1 with swap and no reduction, p = 3 with keepdim: PyTorch's
    eps inside the difference, once the difference is fused into its reduction too."""
    task = seq_task("triplet")
    program = coder.apply(task, None, PORT)
    check(task, program, tmp_path, tag="port")
    while fusions := [s for s in coder.legal_strategies(task, program) if s.kind == "fuse"]:
        program = coder.apply(task, program, fusions[0])
    check(task, program, tmp_path, tag="fused")


POWER_TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        y = x - 0.5  # negative bases: integer powers keep their sign
        return x.pow(1.5), x ** (1 / 3), torch.pow(y, 7), y ** 6, y.pow(-5)


def get_inputs():
    return [torch.rand(3, 37) + 0.1]


def get_init_inputs():
    return []
'''


def test_constant_non_integer_powers(tmp_path):
    """A constant exponent outside the integer fast path was read from the body's placeholder
    argument, 0: x ** 1.5 came out as 1; an integer one beyond 4 was NaN for a negative base."""
    task = task_from_source(tmp_path, "powers", POWER_TASK)
    check(task, coder.apply(task, None, PORT), tmp_path)


LEFT_OUT_TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, h0=None):
        if h0 is None:
            h0 = torch.zeros(x.size(0), x.size(1), device=x.device)
        return x * 2 + h0


def get_inputs():
    return [torch.rand(4, 5)]


def get_init_inputs():
    return []
'''


def test_a_left_out_argument_takes_its_default(tmp_path):
    """fx alone traces h0 as a tensor, so `h0 is None` took the other branch (KernelBench's 35_LSTM)
    and the replay failed: the trace now takes the default the reference takes, and the program keeps
    the parameter with its default, refusing any other value (it holds the default's branch only)."""
    task = task_from_source(tmp_path, "left_out", LEFT_OUT_TASK)
    program = coder.apply(task, None, PORT)
    assert "def forward(self, x, h0=None):" in program.source
    check(task, program, tmp_path)
    model = import_program(program.source, tmp_path, "given").ModelNew()
    with pytest.raises(ValueError, match="traced with h0=None"):
        model(torch.rand(4, 5), torch.rand(4, 5))
