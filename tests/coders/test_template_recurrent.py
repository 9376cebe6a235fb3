"""The template's recurrent kernels (coders/template/emit/recurrent.py) in both forms: the time loop
inside one launch per layer (time_loop="kernel", the default) and one launch per time step
("host"), against PyTorch on the CPU interpreter at odd sizes: batch 3, hidden 17 (with 16-wide
blocks two unit blocks and two K blocks, the second nearly empty), sequences of 1 and 5 steps, fp32
and one fp16 layer."""

from __future__ import annotations

import re

import pytest
import torch

from coders.template import TemplateCoder
from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from mtmc.program import Program
from mtmc.strategies import PORT, Strategy
from mtmc.tasks import Task
from tests.coders.test_template import check, import_program, task_from_source

coder = TemplateCoder()

TASK = '''
import torch
import torch.nn as nn

B, T, F, H = 4, 16, 8, 24
BATCH_FIRST = {batch_first}
DTYPE = torch.{dtype}


class Model(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.rnn = {module}.to(DTYPE)

    def forward(self, x{params}):
        out, {state} = self.rnn(x{call})
        return out, {returned}


def get_inputs():
    x = torch.rand(B, T, F, dtype=DTYPE) if BATCH_FIRST else torch.rand(T, B, F, dtype=DTYPE)
    return [x{inputs}]


def get_init_inputs():
    return [F, H]


MTMC = {{"cpu_sizes": [{{"B": 3, "T": 5, "F": 7, "H": 17}}, {{"B": 3, "T": 1, "F": 7, "H": 17}}]}}
'''

# name: (module, layers x directions, batch_first, initial states given[, dtype])
CASES = {
    "lstm_bidirectional_state": ("nn.LSTM(features, hidden, 2, batch_first=True, bidirectional=True)", 4,
                                 True, 2),
    "lstm_no_bias_no_state": ("nn.LSTM(features, hidden, 2, bias=False)", 2, False, 0),
    "gru_bidirectional_state": ("nn.GRU(features, hidden, 2, bidirectional=True)", 4, False, 1),
    "rnn_tanh_state": ("nn.RNN(features, hidden, 3, batch_first=True)", 3, True, 1),
    "rnn_relu_bidirectional": ('nn.RNN(features, hidden, nonlinearity="relu", bidirectional=True)', 2,
                               False, 0),
    "lstm_fp16_state": ("nn.LSTM(features, hidden, batch_first=True)", 1, True, 2, "float16"),
}


def case_task(tmp_path, name: str) -> Task:
    module, states, batch_first, given, *dtype = CASES[name]
    names = ["h0", "c0"][:given]
    params = "".join(f", {n}" for n in names)
    call = "" if not given else f", {names[0]}" if given == 1 else f", ({', '.join(names)})"
    inputs = "".join(f", torch.rand({states}, B, H, dtype=DTYPE)" for _ in names)
    lstm = module.startswith("nn.LSTM")
    state, returned = ("(h_n, c_n)", "h_n, c_n") if lstm else ("h_n", "h_n")
    source = TASK.format(module=module, batch_first=batch_first, params=params, call=call, inputs=inputs,
                         state=state, returned=returned, dtype=(dtype or ["float32"])[0])
    return task_from_source(tmp_path, name, source)


def configured(task: Task, program: Program, **config) -> Program:
    """The program with `config` on its recurrent kernels."""
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    for kernel in ir.kernels():
        if kernel.kind == "recurrent":
            kernel.config.update(config)
    return Program(generate(task, ir))


@pytest.mark.parametrize("name", list(CASES))
def test_both_forms_match_pytorch(name, tmp_path):
    """Each cell, layers, directions, batch first or not, states given or zeros, biases or not; the
    in-kernel loop at the port's blocks and at 16 (loops over unit and K blocks), the per-step
    form at 16."""
    task = case_task(tmp_path, name)
    program = coder.apply(task, None, PORT)
    assert "tl.debug_barrier()" in program.source and "for _step in range" not in program.source
    check(task, program, tmp_path, tag="kernel")
    # strict fp32 products, so the fp32 tolerance holds (the port's TF32 is checked at TF32's)
    check(task, configured(task, program, BLOCK=16, BLOCK_K=16, precision="ieee"), tmp_path, tag="kernel16")
    host = configured(task, program, BLOCK=16, BLOCK_K=16, time_loop="host", precision="ieee")
    assert "for _step in range" in host.source
    check(task, host, tmp_path, tag="host16")


class Counted:
    """A kernel whose launches (`kernel[grid]`) are counted."""

    def __init__(self, kernel) -> None:
        self.kernel, self.launches = kernel, 0

    def __getitem__(self, grid):
        self.launches += 1
        return self.kernel[grid]


def recurrent_launches(task: Task, program: Program, tmp_path, tag: str, steps: int) -> int:
    """Launches of the recurrent kernels in one forward pass over `steps` time steps."""
    module = import_program(program.source, tmp_path, tag)
    names = re.findall(r"def (\w+)\(gx_ptr, whh_ptr", program.source)
    assert names
    counted = [Counted(getattr(module, n)) for n in names]
    for name, kernel in zip(names, counted, strict=True):
        setattr(module, name, kernel)
    sizes = {"B": 3, "T": steps, "F": 7, "H": 17}
    module.T = steps
    model = module.ModelNew(*task.init_inputs(sizes))
    with torch.no_grad():
        model(*task.make_inputs(seed=1, sizes=sizes))
    return sum(k.launches for k in counted)


@pytest.mark.parametrize("name, layers", [("gru_bidirectional_state", 2), ("rnn_tanh_state", 3)])
def test_the_kernel_loop_launches_once_per_layer(name, layers, tmp_path):
    """Both directions in one launch, every step inside it: as many launches at 1 step as at 6; the
    per-step form launches once per layer and step."""
    task = case_task(tmp_path, name)
    program = coder.apply(task, None, PORT)
    host = configured(task, program, time_loop="host")
    for steps in (1, 6):
        assert recurrent_launches(task, program, tmp_path, f"k{steps}", steps) == layers
        assert recurrent_launches(task, host, tmp_path, f"h{steps}", steps) == layers * steps


def test_fp32_layers_start_on_tf32_as_eager_cudnn_does_and_take_the_precision_steps(tmp_path):
    """cuDNN runs fp32 RNNs on TF32 by default (steps.tf32_allowed), so the port's recurrent kernels
    do too, in the time loop inside one launch; the precision steps lead back to strict fp32."""
    task = case_task(tmp_path, "gru_bidirectional_state")
    assert "tf32" not in task.precisions
    program = coder.apply(task, None, PORT)
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    layers = [k for k in ir.kernels() if k.kind == "recurrent"]
    assert len(layers) == 2
    assert all((k.config["precision"], k.config["time_loop"]) == ("tf32", "kernel") for k in layers)
    assert 'input_precision="tf32"' in program.source
    legal = coder.legal_strategies(task, program)
    assert {Strategy.parse("precision ieee"), Strategy.parse("precision tf32x3")} <= set(legal)
    strict = coder.apply(task, program, Strategy.parse("precision ieee"))
    assert 'input_precision="ieee"' in strict.source and 'input_precision="tf32"' not in strict.source
    check(task, strict, tmp_path, tag="strict")
