"""Pointwise kernels whose operands broadcast (emit/pointwise.py), at sizes other than the traced one."""

from __future__ import annotations

from coders.template import TemplateCoder
from mtmc.strategies import PORT
from tests.coders.test_template import check_module, import_program, task_from_source

# KernelBench's HingeLoss in small: targets (batch,) broadcast against predictions (batch, batch)'s last
# dim. Traced at batch 37, targets span the last dim; at batch 1 they hold one value for every column.
HINGE_TASK = '''
import torch
import torch.nn as nn

batch_size = 37


class Model(nn.Module):
    def forward(self, predictions, targets):
        return torch.clamp(1 - predictions * targets, min=0)


def get_inputs():
    return [torch.randn(batch_size, 37), torch.randint(0, 2, (batch_size,)).float() * 2 - 1]


def get_init_inputs():
    return []
'''


def test_an_operand_of_one_value_broadcasts_at_a_smaller_size(tmp_path):
    task = task_from_source(tmp_path, "hinge_small", HINGE_TASK)
    program = TemplateCoder().apply(task, None, PORT)
    module = import_program(program.source, tmp_path, "hinge")
    # batch 1 read targets[i] for i < 37 from a tensor of one value (H100: 0.754 against 0.502)
    check_module(task, module, [{"batch_size": 37}, {"batch_size": 1}])
