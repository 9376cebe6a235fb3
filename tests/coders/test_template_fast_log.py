"""The probe key `fast_log` (emit/reduce_body.py, off in every port): a reduce kernel's logs as
libdevice's fast_logf on a GPU, tl.log under the interpreter, which has no libdevice.

Odd sizes: the split KL divergence's slices end part-way through a chunk (5 x 40001 values, 12
slices); the row form's rows are shorter than a block (7 rows of 301).
"""

from __future__ import annotations

import pytest

from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from mtmc.strategies import PORT, Strategy
from mtmc.tasks import Task
from tests.coders.test_template import check_module, coder, import_program
from tests.coders.test_template_port_split import task_of

CASES = [
    # KernelBench 98_'s form: fuse prologue takes both logs into the split sum's first pass
    ("F.kl_div(torch.log(y), x.softmax(-1), reduction='batchmean')", (5, 40001)),
    # a row reduction of a log: its one-pass and looped branches
    ("torch.log(y).mean(-1)", (7, 301)),
]


def fused(task: Task):
    program = coder.apply(task, None, PORT)
    while fusions := [s for s in coder.legal_strategies(task, program) if s.kind == "fuse"]:
        program = coder.apply(task, program, fusions[0])
    return program


def with_fast_log(task: Task, program) -> str:
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    reduces = [k for k in ir.kernels() if k.kind == "reduce"]
    assert reduces
    for kernel in reduces:
        kernel.config["fast_log"] = 1
    return generate(task, ir)


@pytest.mark.parametrize("forward, shape", CASES, ids=["kl_split", "rows"])
def test_fast_log_takes_every_log_of_the_reduce_body_and_matches_pytorch(forward, shape, tmp_path):
    task = task_of(forward, shape)
    program = fused(task)
    source = with_fast_log(task, program)
    kernels = source[source.index("def _fast_log"):].split("\n@triton.jit", 1)[1]
    assert kernels.count("_fast_log(") == program.source.count("tl.log(") > 0
    assert "tl.log(" not in kernels
    assert "libdevice.fast_logf(x)" in source and "import os" in source
    check_module(task, import_program(source, tmp_path, "fast"), task.sizes("cpu"))


def test_fast_log_is_libdevice_off_the_interpreter(tmp_path, monkeypatch):
    task = task_of(*CASES[0])
    source = with_fast_log(task, fused(task))
    assert import_program(source, tmp_path, "interpreted")._FAST_LOG.value is False
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert import_program(source, tmp_path, "compiled")._FAST_LOG.value is True


def test_the_port_and_its_fusions_keep_tl_log():
    task = task_of(*CASES[0])
    for program in (coder.apply(task, None, PORT), fused(task)):
        assert "_fast_log" not in program.source and "libdevice" not in program.source
        assert "import os" not in program.source and "tl.log(" in program.source
    assert Strategy.parse("fuse prologue") in coder.legal_strategies(task, coder.apply(task, None, PORT))
