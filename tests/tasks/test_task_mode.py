"""The mode a task is judged in (mtmc/tasks/task.py): as its constructor leaves the module (PyTorch's
training mode unless it calls eval(), as KernelBench's harness runs it), MTMC["mode"] overriding
that, dropout off in every mode; and the verifier's candidate built the same way."""

from __future__ import annotations

import types

import pytest
import torch

from mtmc.tasks import Task, TaskError
from mtmc.verify.case_io import candidate_model

SOURCE = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(3)
        self.drop = nn.Dropout(p=0.5)
        {constructor}

    def forward(self, x):
        return self.drop(self.bn(x))

def get_inputs():
    return [torch.randn(4, 3, 5, 5) * 3 + 2]

def get_init_inputs():
    return []

{meta}
'''


def task(constructor: str = "", meta: str = "") -> Task:
    return Task(name="bn_dropout", source=SOURCE.format(constructor=constructor, meta=meta))


def test_a_new_module_is_judged_in_training_mode_with_its_dropout_off():
    t = task()
    model = t.make_model(seed=0)
    assert model.training and model.bn.training and not model.drop.training
    (x,) = t.make_inputs(seed=1)
    with torch.no_grad():
        first, second = model(x), model(x)
    assert torch.equal(first, second)  # deterministic: no dropout mask
    batch_stats = torch.nn.functional.batch_norm(x, None, None, training=True)
    torch.testing.assert_close(first, batch_stats)  # the batch's statistics, not the running ones


def test_a_constructor_that_calls_eval_is_judged_in_eval_mode():
    model = task(constructor="self.eval()").make_model(seed=0)
    assert not model.training and not model.bn.training


@pytest.mark.parametrize("mode, training", [("eval", False), ("train", True)])
def test_mtmc_mode_overrides_the_constructor(mode, training):
    t = task(constructor="self.eval()" if training else "", meta=f'MTMC = {{"mode": "{mode}"}}')
    model = t.make_model(seed=0)
    assert t.mode == mode and model.bn.training is training and not model.drop.training


def test_an_unknown_mode_is_a_clear_error():
    with pytest.raises(TaskError, match="mode"):
        task(meta='MTMC = {"mode": "inference"}').make_model(seed=0)


def test_the_candidate_is_built_in_the_tasks_mode():
    class ModelNew(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = torch.nn.BatchNorm2d(3)
            self.drop = torch.nn.Dropout(p=0.5)

    module = types.SimpleNamespace(ModelNew=ModelNew)
    case = {"model_seed": 0, "init_inputs": [], "mode": "eval"}
    candidate = candidate_model(module, case, "cpu")
    assert not candidate.bn.training and not candidate.drop.training
    as_built = candidate_model(module, {**case, "mode": None}, "cpu")
    assert as_built.bn.training and not as_built.drop.training
