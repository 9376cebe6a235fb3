"""The template coder's transposed convolutions (emit/conv_transpose.py) against PyTorch.

CPU interpreter (tests/conftest.py), tiny odd sizes. The tasks in tasks/conv_transpose/ read their
geometry (stride, padding, output_padding, dilation, groups) from the module at run time, so one
ported program is checked over many geometries by overriding the task's constants.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from coders.template import TemplateCoder, conv_transpose_lower, steps
from coders.template.emit import conv_transpose as conv_transpose_emit
from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from mtmc.program import Program
from mtmc.protocols import CoderError
from mtmc.strategies import PORT, Strategy
from mtmc.tasks import Task, load_task
from mtmc.tasks.summary import summarize
from tests.coders.test_template import check, check_module, import_program
from tests.coders.test_template_conv import reference_and_candidate, tf32_nearest

TASKS = Path(__file__).parent / "tasks" / "conv_transpose"
coder = TemplateCoder()


def task_named(name: str) -> Task:
    return load_task(TASKS / f"{name}.py")


def kernels(program: Program) -> list:
    return ProgramIR.from_dict(program.metadata["template_ir"]).kernels()


@pytest.fixture(scope="module")
def modules(tmp_path_factory) -> dict:
    """name -> (task, port, imported port, imported plain gather form): each is imported once."""
    out = {}
    for name in ("conv_transpose_1d", "conv_transpose_2d", "conv_transpose_3d"):
        task = task_named(name)
        program = coder.apply(task, None, PORT)
        ir = ProgramIR.from_dict(program.metadata["template_ir"])
        ir.kernels()[0].config["phases"] = False
        folder = tmp_path_factory.mktemp(name)
        out[name] = (task, program, import_program(program.source, folder, name),
                     import_program(generate(task, ir), folder, f"{name}_plain"))
    return out


@pytest.fixture(scope="module")
def nc_modules(tmp_path_factory) -> dict:
    """name -> imported port read from NC* (config channels_last False: no copy, dots truncate)."""
    out = {}
    for name in ("conv_transpose_1d", "conv_transpose_2d", "conv_transpose_3d"):
        task = task_named(name)
        ir = ProgramIR.from_dict(coder.apply(task, None, PORT).metadata["template_ir"])
        ir.kernels()[0].config.update(channels_last=False, tf32_round=False)
        source = generate(task, ir)
        assert "_tf32_pack" not in source and "_x = " not in source
        out[name] = import_program(source, tmp_path_factory.mktemp(name), f"{name}_nc")
    return out


def geometry(kernel, stride, padding, output_padding, dilation, groups, **sizes) -> dict:
    return {"KERNEL": kernel, "STRIDE": stride, "PADDING": padding, "OUTPUT_PADDING": output_padding,
            "DILATION": dilation, "GROUPS": groups, **sizes}


# stride x padding x output_padding x dilation x groups, asymmetric kernels and inputs (bias: 2-D and 3-D
# tasks have one, the 1-D task has none)
CASES = {
    "conv_transpose_1d": [
        geometry(3, 1, 0, 0, 1, 1),
        geometry(4, 3, 2, 2, 1, 3, C_IN=6, C_OUT=9),
        geometry(3, 2, 1, 1, 2, 2, C_IN=4, C_OUT=6),
        geometry(5, 2, 0, 1, 3, 1, L=7),
    ],
    "conv_transpose_2d": [
        geometry((3, 2), (2, 1), (1, 0), (1, 0), (1, 2), 2),
        geometry((1, 1), 1, 0, 0, 1, 1),
        geometry((4, 3), (3, 2), (2, 1), (2, 1), 1, 1),
        geometry((3, 3), 2, (0, 2), (0, 1), (2, 3), 2, H=3, W=6),
    ],
    "conv_transpose_3d": [
        geometry((2, 3, 1), (2, 1, 3), (1, 0, 0), (1, 0, 2), (1, 2, 1), 1, D=2, H=3, W=2),
        geometry(2, 2, 1, 1, 1, 2, C_IN=4, C_OUT=2, D=2, H=2, W=3),
    ],
}


@pytest.mark.parametrize("name, case", [(n, c) for n, cases in CASES.items() for c in cases],
                         ids=lambda v: v if isinstance(v, str) else "-".join(map(str, v.values())))
def test_port_matches_pytorch_over_the_geometry(name, case, modules):
    """The port's stride-phase form: each program runs over one phase's pixels and live taps."""
    task, _, module, _ = modules[name]
    check_module(task, module, [{**task.sizes("cpu")[0], **case}])


@pytest.mark.parametrize("name, case", [(n, c) for n, cases in CASES.items() for c in cases],
                         ids=lambda v: v if isinstance(v, str) else "-".join(map(str, v.values())))
def test_the_nc_layout_form_matches_pytorch_over_the_geometry(name, case, nc_modules):
    """The input read where it lies (NC*, config channels_last False), as before the port's copy."""
    task = task_named(name)
    check_module(task, nc_modules[name], [{**task.sizes("cpu")[0], **case}])


def test_the_port_reads_a_channels_last_copy_rounded_to_tf32_as_cudnn_does(modules, tmp_path):
    """fp32: input and weight are copied once per call, channels last and rounded to TF32 to nearest
    (emit/conv_pack.py), so the truncating dot computes the transposed conv of the rounded operands."""
    task, program, module, _ = modules["conv_transpose_2d"]
    assert program.source.count("= _tf32_pack(") == 2 and "+ 0x1000) & 0xFFFFE000" in program.source
    sizes = {**task.sizes("cpu")[0], **CASES["conv_transpose_2d"][0]}
    reference, candidate, x = reference_and_candidate(task, module, sizes)
    conv = next(m for m in reference.modules() if isinstance(m, torch.nn.ConvTranspose2d))
    with torch.no_grad():
        got = candidate(x).double()
        rounded = torch.nn.functional.conv_transpose2d(
            tf32_nearest(x).double(), tf32_nearest(conv.weight).double(),
            None if conv.bias is None else conv.bias.double(), conv.stride, conv.padding, conv.output_padding,
            conv.groups, conv.dilation)
        plain = reference(x).double()
    assert (got - rounded).abs().max() < 1e-5
    assert (got - plain).abs().max() > 1e-4  # the rounding happened


@pytest.mark.parametrize("name, case", [("conv_transpose_2d", c) for c in CASES["conv_transpose_2d"]] +
                         [("conv_transpose_3d", CASES["conv_transpose_3d"][0])],
                         ids=lambda v: v if isinstance(v, str) else "-".join(map(str, v.values())))
def test_plain_gather_form_matches_pytorch(name, case, modules):
    """The plain gather form (config phases=False): every tap, dead ones masked row by row."""
    task, _, _, module = modules[name]
    source = module.__file__ and Path(module.__file__).read_text()
    assert "if (e0 % st0 == 0)" not in source and "hit & (p0 >= 0)" in source
    check_module(task, module, [{**task.sizes("cpu")[0], **case}])


def test_one_kernel_per_transposed_conv_with_the_bias_in_its_epilogue(modules):
    _, program, _, _ = modules["conv_transpose_2d"]
    [kernel] = kernels(program)
    assert kernel.kind == "conv_transpose" and [op.op for op in kernel.body] == ["acc", "load", "add"]
    assert "for step in range(0, n_live * c_blocks):" in program.source  # the live taps of a stride phase
    assert "conv_transpose" not in program.source.split("class ModelNew")[1].replace("_conv_transpose", "")


def test_fp32_ports_on_tf32_as_eagers_cudnn_and_a_precision_step_moves_it(modules, tmp_path):
    """eager's cuDNN runs fp32 transposed convs on TF32 (cudnn.allow_tf32), so the port does too;
    ieee and tf32x3 stay legal steps for a user who wants fp32 accuracy."""
    task, program, _, _ = modules["conv_transpose_2d"]
    assert [k.config["precision"] for k in kernels(program)] == ["tf32"]
    legal = coder.legal_strategies(task, program)
    assert {Strategy.parse("precision ieee"), Strategy.parse("precision tf32x3")} <= set(legal)
    strict = coder.apply(task, program, Strategy.parse("precision ieee"))
    assert [k.config["precision"] for k in kernels(strict)] == ["ieee"]
    check(task, strict, tmp_path)


def test_functional_form_with_constant_geometry(tmp_path):
    task = task_named("conv_transpose_functional")
    program = coder.apply(task, None, PORT)
    assert [k.kind for k in kernels(program)] == ["conv_transpose", "pointwise"]
    check(task, program, tmp_path, "port")
    fused = coder.apply(task, program, Strategy.parse("fuse epilogue"))
    assert [k.kind for k in kernels(fused)] == ["conv_transpose"]
    check(task, fused, tmp_path, "fused")


def test_level2_epilogue_fuses_into_the_conv_kernel(tmp_path):
    """bias [C, 1, 1], clamp, scale, eval BatchNorm, tanh and a residual add: one kernel."""
    task = task_named("conv_transpose_epilogue")
    program = coder.apply(task, None, PORT)
    assert len(kernels(program)) == 2
    program = coder.apply(task, program, Strategy.parse("fuse epilogue"))
    [kernel] = kernels(program)
    assert kernel.kind == "conv_transpose"
    assert {"clamp", "tanh", "rsqrt"} <= set(kernel.op_names())
    assert not [s for s in coder.legal_strategies(task, program) if s.kind == "fuse"]
    check(task, program, tmp_path, "fused")
    # tiny tiles: several row, channel and input-channel blocks per program grid
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    ir.kernels()[0].config.update(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    sizes = [{"B": 2, "C_IN": 35, "C_OUT": 19, "H": 3, "W": 2}]
    check_module(task, import_program(generate(task, ir), tmp_path, "tiny"), sizes)


def test_a_fused_kernel_stores_its_own_result_when_it_is_read_later(tmp_path):
    task = task_named("conv_transpose_two_outputs")
    program = coder.apply(task, coder.apply(task, None, PORT), Strategy.parse("fuse epilogue"))
    conv = kernels(program)[0]
    assert conv.kind == "conv_transpose" and len(conv.outputs) == 2
    check(task, program, tmp_path, "fused")


def test_a_sample_of_legal_steps_stays_correct(modules, tmp_path):
    task, program, _, _ = modules["conv_transpose_2d"]
    legal = [str(s) for s in coder.legal_strategies(task, program)]
    for kind in ("tile", "num_warps", "num_stages", "autotune", "precision"):
        assert any(s.startswith(kind) for s in legal), kind
    tiles = [s for s in legal if s.startswith("tile") and "BLOCK_K=16" in s]
    for i, text in enumerate([tiles[-1], "num_warps 8", "num_stages 2", "precision tf32x3"]):
        assert text in legal, text
        check(task, coder.apply(task, program, Strategy.parse(text)), tmp_path, f"s{i}")


def test_autotune_configs_are_valid_and_the_tuned_program_is_correct(modules, tmp_path):
    task, program, _, _ = modules["conv_transpose_1d"]
    tuned = coder.apply(task, program, Strategy.parse("autotune"))
    [kernel] = kernels(tuned)
    configs = conv_transpose_emit.tuning_space(kernel)
    assert configs[0] == {k: kernel.config[k] for k in configs[0]}  # the current config first
    assert len({tuple(sorted(c.items())) for c in configs}) == len(configs) > 1
    for cfg in configs:
        assert {"BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages"} == set(cfg)
        assert min(cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]) >= 16  # tl.dot's minimum
    assert "@triton.autotune" in tuned.source
    assert not [s for s in coder.legal_strategies(task, tuned) if s.kind in ("tile", "num_warps")]
    check(task, tuned, tmp_path, "tuned")


def test_flops_match_pytorchs_count_and_drive_the_cost_model():
    for name in ("conv_transpose_1d", "conv_transpose_2d", "conv_transpose_3d"):
        task = task_named(name)
        ir = ProgramIR.from_dict(coder.apply(task, None, PORT).metadata["template_ir"])
        [kernel] = ir.kernels()
        flops = conv_transpose_lower.flops(ir, kernel)
        assert flops == summarize(task).matmul_flops > 0, name
        assert steps.cost(ir, kernel) >= flops / steps.PEAK_FLOPS["float32"]


def test_ops_before_the_conv_are_not_fused_into_it():
    """The kernel gathers its input pixels: an elementwise op on them stays its own kernel."""
    source = (TASKS / "conv_transpose_1d.py").read_text().replace("return self.up(x)",
                                                                 "return self.up(torch.relu(x))")
    task = Task(name="conv_transpose_after_relu", source=source)
    program = coder.apply(task, None, PORT)
    assert [k.kind for k in kernels(program)] == ["pointwise", "conv_transpose"]
    assert not [s for s in coder.legal_strategies(task, program) if s.kind == "fuse"]


def test_output_size_in_forward_is_refused_clearly():
    source = (TASKS / "conv_transpose_1d.py").read_text().replace(
        "return self.up(x)", "return self.up(x, output_size=[x.shape[-1] * 2])")
    task = Task(name="conv_transpose_output_size", source=source)
    with pytest.raises(CoderError, match="output_size"):
        coder.apply(task, None, PORT)


def test_fp16_inputs_accumulate_in_fp32(tmp_path):
    source = (TASKS / "conv_transpose_2d.py").read_text()
    source = source.replace("groups=groups)", "groups=groups).half()")
    source = source.replace("torch.randn(B, C_IN, H, W)", "torch.randn(B, C_IN, H, W).half()")
    task = Task(name="conv_transpose_fp16", source=source)
    program = coder.apply(task, None, PORT)
    [kernel] = kernels(program)
    assert kernel.space["dtype"] == "float16" and "acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)" \
        in program.source
    sizes = task.sizes("cpu")[0]
    reference = task.make_model(sizes=sizes).float()
    x = task.make_inputs(seed=1, sizes=sizes)[0]
    module = import_program(program.source, tmp_path, "fp16")
    candidate = module.ModelNew(*task.init_inputs(sizes))
    candidate.load_state_dict(task.make_model(sizes=sizes).state_dict())
    got = candidate(x)
    assert got.dtype == torch.float16
    torch.testing.assert_close(got.float(), reference(x.float()), atol=2e-2, rtol=2e-2)
