"""Program assembly (coders/template/emit/module.py): a kernel whose definition repeats an earlier one's,
up to names, is emitted once and launched by both layers' launchers, so it compiles once."""

from __future__ import annotations

import re

from coders.template import TemplateCoder
from coders.template.emit.module import canonical_kernel
from mtmc.strategies import PORT
from mtmc.tasks import Task
from tests.coders.test_template import check

REPEATED_SOURCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """Three convs (two of one shape), ReLU twice and a sigmoid, as a CNN's blocks."""

    def __init__(self):
        super().__init__()
        self.first = nn.Conv2d(3, 3, 3, padding=1)
        self.second = nn.Conv2d(3, 3, 3, padding=1)
        self.third = nn.Conv2d(3, 5, 3, padding=1)  # padded too: an unpadded FMA conv drops its masks

    def forward(self, x):
        x = torch.relu(self.first(x))
        x = torch.relu(self.second(x))
        return torch.sigmoid(self.third(x))


def get_inputs():
    return [torch.randn(2, 3, 9, 7)]


def get_init_inputs():
    return []
'''

KERNEL = '''
@triton.jit
def {name}(a_ptr, {out}_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    {local} = tl.load(a_ptr + offs, mask=offs < n)
    tl.store({out}_ptr + offs, {expr}, mask=offs < n)
'''


def kernel(name="_k", out="y", local="v", expr="tl.maximum(v, 0.0)", block="BLOCK") -> str:
    text = KERNEL.format(name=name, out=out, local=local, expr=expr.replace("v", local))
    return text.replace("BLOCK", block)


def test_kernels_equal_up_to_names_share_a_canonical_form_and_others_do_not():
    same = canonical_kernel(kernel(), "_k")
    assert canonical_kernel(kernel(name="_other", out="z", local="w"), "_other") == same
    assert canonical_kernel(kernel(expr="tl.sigmoid(v)"), "_k") != same  # another computation
    assert canonical_kernel(kernel(block="TILE"), "_k") != same  # constexprs are passed by keyword


def test_repeated_layers_launch_one_kernel_and_stay_correct(tmp_path):
    task = Task(name="repeated_convs", source=REPEATED_SOURCE)
    program = TemplateCoder().apply(task, None, PORT)
    defined = re.findall(r"^def (_\w+_kernel)\(", program.source, flags=re.M)
    launched = re.findall(r"(_\w+_kernel)\[grid\]", program.source)
    # the three convs run one conv kernel (sizes are read at run time), the two ReLUs one kernel
    assert launched.count("_first_kernel") == 3 and launched.count("_relu_kernel") == 2
    assert sorted(defined) == sorted(set(launched))  # every kernel defined is launched, once defined
    check(task, program, tmp_path)
