"""The template coder's trace of forwards that fx alone cannot trace (KernelBench level 3's RNN,
LSTM, Swin and Mamba2 tasks): Python control flow on sizes answered at the traced sizes and pinned
(trace/concrete.py, pin_check.py), module state the forward overwrites, forward arguments the inputs
leave out, random forwards, and einops.rearrange; against PyTorch on the CPU interpreter at small,
odd sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from coders.template import TemplateCoder
from coders.template.ir import ProgramIR
from mtmc.protocols import CoderError
from mtmc.strategies import PORT
from mtmc.tasks import Task, load_task
from tests.coders.test_template import check, import_program, sample, task_from_source

TASKS = Path(__file__).parent / "tasks" / "seq"
coder = TemplateCoder()


def seq_task(name: str) -> Task:
    return load_task(TASKS / f"{name}.py")


def pins(program) -> list:
    return ProgramIR.from_dict(program.metadata["template_ir"]).pins


@pytest.mark.parametrize("name", ["rnn_cell_state", "gru_default_state"])
def test_state_and_left_out_arguments_port_unpinned(name, tmp_path):
    """KernelBench 33 (a state attribute the forward overwrites) and 35's pattern without its random
    state (h0=None left out): no Python control flow on sizes, so no pins, and every size checks."""
    task = seq_task(name)
    program = coder.apply(task, None, PORT)
    assert pins(program) == []
    check(task, program, tmp_path)


@pytest.mark.parametrize("forward", [
    "self.total = self.total + x\n        return self.total * 2",  # read into the new state
    "old = self.total\n        self.total = x * 2\n        return old, self.total",  # returned as it was
])
def test_state_read_before_it_is_overwritten_is_refused(forward, tmp_path):
    source = STATE_TASK.format(forward=forward)
    with pytest.raises(CoderError, match="self.total as the forward finds it.*previous call"):
        coder.apply(task_from_source(tmp_path, "running_total", source), None, PORT)


def test_loop_over_a_length_the_model_fixes_is_pinned_and_checked_on_entry(tmp_path):
    """KernelBench 34's Python loop over the sequence, with the length a constructor argument: the
    loop is unrolled at the traced length, the assert on the width pins nothing, and the program
    refuses another length rather than compute a shorter loop."""
    task = seq_task("rnn_loop")
    program = coder.apply(task, None, PORT)
    assert pins(program) == [["x", 0, 3]]
    check(task, program, tmp_path)
    module = import_program(program.source, tmp_path, "other_length")
    model = module.ModelNew(*task.init_inputs())
    with pytest.raises(ValueError, match=r"traced at x\.shape\[0\] == 3"):
        model(torch.rand(4, 2, 12), torch.rand(2, 20))


def test_loop_over_a_length_the_sizes_change_is_refused(tmp_path):
    """KernelBench 34 itself: the sequence length is only get_inputs', so the verifier checks a
    derived size with another length, where a program traced at one length would refuse."""
    source = (TASKS / "rnn_loop.py").read_text().replace("return [T, F, H, OUT]", "return [9, F, H, OUT]")
    source = source.replace("B, T, F, H, OUT = 4, 3,", "B, T, F, H, OUT = 4, 9,")
    with pytest.raises(CoderError, match=r"reads x\.shape\[0\] \(9 as traced, \d+ at"):
        coder.apply(task_from_source(tmp_path, "free_length", source), None, PORT)


def test_sizes_read_by_asserts_and_int_port_at_every_size(tmp_path):
    """An assert on a traced size pins nothing; `int()` of a size pins the dims it reads, here a dim
    every size set keeps; a size torch's argument parser asks about and then traces pins nothing."""
    task = task_from_source(tmp_path, "asserted_rows", SIZE_TASK)
    program = coder.apply(task, None, PORT)
    assert pins(program) == [["x", 1, 6]]
    check(task, program, tmp_path)


def test_a_random_forward_is_refused(tmp_path):
    """KernelBench 35 draws its left-out h0 and c0 with torch.randn in the forward."""
    source = STATE_TASK.format(forward="return x + torch.randn(x.shape, device=x.device)")
    with pytest.raises(CoderError, match="torch.randn in the forward: its output is random"):
        coder.apply(task_from_source(tmp_path, "random", source), None, PORT)


def test_einops_rearrange_traces_as_views(tmp_path):
    """Mamba2's rearranges: split a composite axis (with `...`), permute, merge; the block count
    follows the sequence length at run time, and the program imports no einops."""
    pytest.importorskip("einops")
    task = seq_task("einops_blocks")
    program = coder.apply(task, None, PORT)
    assert "rearrange" not in program.source and "import einops" not in program.source
    assert pins(program) == []
    check(task, program, tmp_path)


def test_chunked_state_space_model_ports(tmp_path):
    """Mamba2's ops (KernelBench 48, 49) on a task of our own: einsums of three and four operands in
    layouts no single matmul has (a chain of bmms and products), a segment sum's causal mask (~ of
    a bool tril), zeros_like and cat, F.pad; at two sizes with other chunk counts and widths."""
    pytest.importorskip("einops")
    task = seq_task("ssd_chunks")
    program = coder.apply(task, None, PORT)
    assert pins(program) == [] and "torch.einsum" not in program.source
    check(task, program, tmp_path)


@pytest.mark.parametrize("name", ["ssd_chunks", "rnn_loop", "rnn_cell_state"])
def test_steps_and_full_fusion_keep_matching(name, tmp_path):
    """The new views (the einsum chain's permute / reshape, the loop's slices, pad) under the steps
    that rewrite kernels around them."""
    if name == "ssd_chunks":
        pytest.importorskip("einops")
    task = seq_task(name)
    program = coder.apply(task, None, PORT)
    for i, strategy in enumerate(sample(coder.legal_strategies(task, program))):
        check(task, coder.apply(task, program, strategy), tmp_path, tag=f"s{i}")
    while fusions := [s for s in coder.legal_strategies(task, program) if s.kind == "fuse"]:
        program = coder.apply(task, program, fusions[0])
    check(task, program, tmp_path, tag="fused")


def test_pins_hold_where_the_reference_refuses_other_sizes(tmp_path):
    """Swin's pattern: the model fixes its image size and asserts it, so the verifier's derived size
    (another image and batch size) fails in the reference and is not checked; the batch pinned by
    `int()` of a computed value's size then holds at every size that is."""
    task = task_from_source(tmp_path, "fixed_image", FIXED_IMAGE_TASK)
    program = coder.apply(task, None, PORT)
    assert pins(program) == [["x", None, [6, 2, 8]]]
    check(task, program, tmp_path)


@pytest.mark.parametrize("forward, match", [
    ("return torch.nn.functional.pad(x, (1, 1), mode='reflect')", "F.pad mode='reflect'"),
    ("return torch.einsum('bi,bj->b', x, x)", "summing letters of one operand"),
    ("return torch.einsum('...i,...i->...', x, x)", "with an ellipsis"),
])
def test_pad_and_einsum_refusals_are_clear(forward, match, tmp_path):
    source = STATE_TASK.format(forward=forward)
    with pytest.raises(CoderError, match=match):
        coder.apply(task_from_source(tmp_path, "refused_op", source), None, PORT)


STATE_TASK = '''
import torch
import torch.nn as nn

B, F = 3, 5


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.total = torch.zeros(B, features)

    def forward(self, x):
        {forward}


def get_inputs():
    return [torch.rand(B, F)]


def get_init_inputs():
    return [F]
'''

SIZE_TASK = '''
import torch
import torch.nn as nn

B, ROWS, W = 4, 6, 8


class Model(nn.Module):
    def __init__(self, rows, width):
        super().__init__()
        self.rows, self.width = rows, width
        self.fc = nn.Linear(width, 3)

    def forward(self, x):
        batch, rows, width = x.shape
        assert width == self.width and rows % 2 == 0, "wrong input"
        pairs = int(x.shape[1] / 2)
        # torch's argument parser asks the index of `batch` too, then traces it: no pin for it
        rows = torch.reshape(x, (batch, pairs, 2 * width)).sum(-1, keepdim=True)
        y = rows * x.view(batch, pairs, 2, width)[:, :, 0]
        return self.fc(y)


def get_inputs():
    return [torch.rand(B, ROWS, W)]


def get_init_inputs():
    return [ROWS, W]


MTMC = {"cpu_sizes": [{"B": 3, "W": 5}, {"B": 5, "W": 8}]}
'''

FIXED_IMAGE_TASK = '''
import torch
import torch.nn as nn

B, C, IMAGE = 6, 2, 8


class Model(nn.Module):
    def __init__(self, image=8):
        super().__init__()
        self.image = image
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        assert x.shape[-1] == self.image, "wrong image size"
        y = (x * 2).view(-1, 4)
        batch = int(y.shape[0] / (x.shape[1] * self.image // 2))  # the batch, read off a computed value
        return self.fc(y).view(batch, -1)


def get_inputs():
    return [torch.rand(B, C, IMAGE)]


def get_init_inputs():
    return []
'''
