"""The loss probe (benchmarks/probes/2026-12-02-loss/run.py): which program and kernels a variant
configures."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from benchmarks.probes import harness
from coders.template.ir import ProgramIR
from mtmc.strategies import PORT
from tests.coders.test_template import coder
from tests.coders.test_template_port_split import task_of

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def probe():
    path = ROOT / "benchmarks" / "probes" / "2026-12-02-loss" / "run.py"
    spec = importlib.util.spec_from_file_location("loss_probe", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def programs_of(forward: str, shape: tuple) -> dict[str, ProgramIR]:
    task = task_of(forward, shape)
    return {"latest": harness.fused_ir(coder, task),
            "port": ProgramIR.from_dict(coder.apply(task, None, PORT).metadata["template_ir"])}


def test_a_variant_sets_the_split_kernels_of_the_program_it_names(probe):
    programs = programs_of("F.kl_div(torch.log(y), x.softmax(-1), reduction='batchmean')", (5, 40001))
    ir, configs = probe.configure(programs, {"fast_log": 1, "num_warps": 16, "BLOCK": 2048})
    assert [(c["fast_log"], c["num_warps"], c["BLOCK"], "auto_block" in c) for c in configs] == \
        [(1, 16, 2048, False)]
    # latest: the softmax and the split sum, the terms fused into it; only the split is configured
    assert [(k.kind, k.config.get("fast_log")) for k in ir.kernels()] == [("reduce", None), ("reduce", 1)]
    assert all("fast_log" not in k.config for k in programs["latest"].kernels())  # base left alone
    port, configs = probe.configure(programs, {"program": "port"})
    assert [k.kind for k in port.kernels()] == ["reduce", "pointwise", "reduce"] and len(configs) == 1
    with pytest.raises(ValueError, match="unknown keys"):
        probe.configure(programs, {"ROWS": 4})


def test_a_program_without_a_split_refuses_knobs(probe):
    programs = programs_of("x.sum(-1)", (300, 20000))
    with pytest.raises(ValueError, match="no split reduce kernel"):
        probe.configure(programs, {"num_warps": 8})
    assert probe.configure(programs, {})[1] == []
