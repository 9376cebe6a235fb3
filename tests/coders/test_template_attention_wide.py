"""Attention at head dims the flash kernel's tiles cannot hold (lower/attention.py): narrower tiles
where those fit, else the unfused chain (bmm, scale, [mask], softmax, bmm), in the CPU interpreter at
odd sizes against PyTorch; the flash kernel's port config where it already fit. The interpreter does
not limit shared memory, so the fit itself is checked against Triton's counts as a unit."""

from __future__ import annotations

import pytest
import torch

from coders.template import TemplateCoder
from coders.template.emit.common import SMEM_BYTES
from coders.template.ir import ProgramIR
from coders.template.lower.attention import flash_smem, port_config
from coders.template.lower.configs import ATTENTION_CONFIG, ATTENTION_CONFIG_16, ATTENTION_NARROW
from mtmc.program import Program
from mtmc.strategies import PORT, Strategy
from mtmc.tasks import Task, load_task
from mtmc.verify import InterpreterVerifier
from tests.coders.test_template import check, local_task

coder = TemplateCoder()

SDPA = '''import torch
import torch.nn as nn
import torch.nn.functional as F

B, H, SQ, SK, D, DV = {sizes}


class Model(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v{extra})


def get_inputs():
    return [torch.randn(B, H, SQ, D), torch.randn(B, H, SK, D), torch.randn(B, H, SK, DV)]


def get_init_inputs():
    return []


MTMC = {{"cpu_sizes": {cpu}}}
'''

MHA = '''import torch
import torch.nn as nn

L, N, E, HEADS = 11, 2, 600, 2


class Model(nn.Module):
    def __init__(self, embed, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(embed, heads)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


def get_inputs():
    return [torch.randn(L, N, E)]


def get_init_inputs():
    return [E, HEADS]


MTMC = {"cpu_sizes": [{"L": 9, "N": 2, "E": 514, "HEADS": 2}]}
'''


def sdpa_task(name: str, sizes: tuple, cpu: list[dict], extra: str = "") -> Task:
    return Task(name=name, source=SDPA.format(sizes=", ".join(map(str, sizes)), extra=extra, cpu=cpu))


def kernels(program: Program):
    return ProgramIR.from_dict(program.metadata["template_ir"]).kernels()


def test_flash_tiles_of_97_sdpa_do_not_fit_as_triton_counted():
    """KernelBench level-1 97_ (fp32, D = 1024): Triton asked an H100 for 1572864 bytes, 786432 at the
    verifier's D = 321; the estimate is those counts, and no config of the port's fits there."""
    assert flash_smem(ATTENTION_CONFIG, 1024, 1024, 4) == 1572864 > SMEM_BYTES
    assert flash_smem(ATTENTION_CONFIG, 321, 321, 4) == 786432 > SMEM_BYTES
    assert port_config(torch.float32, 1024, 1024) is None
    assert port_config(torch.float32, 257, 257) is None
    assert port_config(torch.float16, 1024, 1024) is None


def test_the_flash_config_stays_where_it_fits_and_narrows_before_it_gives_up():
    assert port_config(torch.float32, 64, 64) == ATTENTION_CONFIG
    assert port_config(torch.float32, 128, 128) == ATTENTION_CONFIG
    assert port_config(torch.bfloat16, 128, 128) == ATTENTION_CONFIG_16
    assert port_config(torch.float32, 200, 256) == {**ATTENTION_CONFIG, **ATTENTION_NARROW}
    assert port_config(torch.float16, 512, 512) == {**ATTENTION_CONFIG_16, **ATTENTION_NARROW}
    assert flash_smem(port_config(torch.float32, 256, 256), 256, 256, 4) <= SMEM_BYTES


@pytest.mark.parametrize("name", ["sdpa_causal", "attention_sdpa_bf16"])
def test_a_head_dim_that_fits_keeps_the_flash_kernel_and_its_config(name):
    task = local_task(name) if name == "sdpa_causal" else load_task(name)  # D = 64, 128
    [kernel] = kernels(coder.apply(task, None, PORT))
    half = name.endswith("bf16")
    assert kernel.kind == "attention" and kernel.config == (ATTENTION_CONFIG_16 if half else ATTENTION_CONFIG)


def test_a_head_dim_of_200_takes_narrow_flash_tiles_and_matches_pytorch(tmp_path):
    task = sdpa_task("sdpa_d200", (2, 3, 17, 17, 200, 200), [{"B": 2, "H": 3, "SQ": 17, "SK": 17, "D": 199,
                                                               "DV": 199}])
    program = coder.apply(task, None, PORT)
    [kernel] = kernels(program)
    assert kernel.kind == "attention" and kernel.config == {**ATTENTION_CONFIG, **ATTENTION_NARROW}
    check(task, program, tmp_path)


def test_a_head_dim_of_300_lowers_unfused_at_tf32x3_and_matches_pytorch(tmp_path):
    """2 x 3 heads of 17 queries, D = 300: scores (bmm), times 1/sqrt(D) of the run-time D, softmax,
    bmm; checked at D = 300 and at 257 (the factor follows the size)."""
    task = sdpa_task("sdpa_d300", (2, 3, 17, 17, 300, 300),
                     [{"B": 2, "H": 3, "SQ": 17, "SK": 17, "D": 300, "DV": 300},
                      {"B": 1, "H": 2, "SQ": 9, "SK": 9, "D": 257, "DV": 257}])
    program = coder.apply(task, None, PORT)
    assert [k.kind for k in kernels(program)] == ["matmul", "pointwise", "reduce", "matmul"]
    assert 'input_precision="tf32x3"' in program.source and "math.sqrt(q.shape[-1])" in program.source
    check(task, program, tmp_path)
    for step in [s for s in coder.legal_strategies(task, program) if s.kind == "fuse"]:
        check(task, coder.apply(task, program, step), tmp_path, tag=str(step).replace(" ", "_"))


def test_a_wide_causal_attention_with_a_scale_and_other_value_dims_matches_pytorch(tmp_path):
    """is_causal (top-left: more keys than queries), an explicit scale, Dv != D, half-size tiles past
    the edges: the mask is the normaliser's constant triangle, -inf above the diagonal."""
    task = sdpa_task("sdpa_causal_wide", (2, 2, 13, 19, 272, 300),
                     [{"B": 2, "H": 2, "SQ": 13, "SK": 19, "D": 272, "DV": 300}],
                     extra=", is_causal=True, scale=0.05")
    program = coder.apply(task, None, PORT)
    assert "attention" not in [k.kind for k in kernels(program)] and "_triangle(" in program.source
    check(task, program, tmp_path)


def test_a_wide_causal_port_is_accepted_by_the_verifier():
    """The real interpreter verifier (static rules on the chain's glue: the mask's torch.ones, the
    run-time 1/sqrt(D); proof of work; seeds and a derived size): about 5 s."""
    task = sdpa_task("sdpa_causal_wide", (2, 2, 13, 19, 272, 300),
                     [{"B": 2, "H": 2, "SQ": 13, "SK": 19, "D": 272, "DV": 300}], extra=", is_causal=True")
    with InterpreterVerifier(timeout_s=600.0, seeds=2) as verifier:
        verdict = verifier.verify(task, coder.apply(task, None, PORT))
    assert verdict.ok, verdict.message


def test_multihead_attention_with_a_wide_head_dim_lowers_unfused(tmp_path):
    task = Task(name="mha_wide", source=MHA)  # 2 heads of 300
    program = coder.apply(task, None, PORT)
    assert "attention" not in [k.kind for k in kernels(program)]
    check(task, program, tmp_path)


CHAIN = '''import torch
import torch.nn as nn

B, H, S, D = 2, 3, 17, {d}


class Model(nn.Module):
    def forward(self, q, k, v):
        scores = torch.matmul(q, k.transpose(-2, -1)) * 0.0625
        return torch.matmul(torch.softmax(scores, dim=-1), v)


def get_inputs():
    return [torch.randn(B, H, S, D), torch.randn(B, H, S, D), torch.randn(B, H, S, D)]


def get_init_inputs():
    return []


MTMC = {{"cpu_sizes": [{{"B": 2, "H": 3, "S": 17, "D": {d}}}]}}
'''


def test_fuse_attention_takes_the_ports_flash_config_and_is_not_offered_where_none_fits(tmp_path):
    """A written-out chain at D = 200 fuses with the narrow tiles; at D = 300 (as the port of a wide
    SDPA, which is that chain) `fuse attention` would give a kernel that cannot launch."""
    narrow = Task(name="chain_d200", source=CHAIN.format(d=200))
    program = coder.apply(narrow, coder.apply(narrow, None, PORT), Strategy.parse("fuse attention"))
    [kernel] = kernels(program)
    assert kernel.kind == "attention" and kernel.config == {**ATTENTION_CONFIG, **ATTENTION_NARROW}
    check(narrow, program, tmp_path)
    for task in (Task(name="chain_d300", source=CHAIN.format(d=300)),
                 sdpa_task("sdpa_d300", (2, 3, 17, 17, 300, 300), [])):
        legal = coder.legal_strategies(task, coder.apply(task, None, PORT))
        assert Strategy.parse("fuse attention") not in legal
