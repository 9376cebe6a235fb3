"""The template coder: ports and every kind of step give programs that match the reference.

Runs on the CPU Triton interpreter (tests/conftest.py sets TRITON_INTERPRET=1). The small checker
below imports a program, builds `ModelNew` like the verifier does and compares it with the
reference at each of the task's CPU sizes; the verifier (mtmc/verify) will replace it.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
import torch

from coders.template import TemplateCoder, steps
from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from coders.template.scans import WALK_KINDS
from mtmc.program import Program
from mtmc.protocols import CoderError
from mtmc.strategies import KINDS, PORT, STOP, Strategy
from mtmc.tasks import Task, builtin_names, load_task

TASKS = Path(__file__).parent / "tasks"
SUPPORTED = sorted(p.stem for p in TASKS.glob("*.py") if not p.stem.startswith("unsupported"))
TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 2e-2}
# fp32 outputs of a program with TF32 dots (conv ports: they round their operands to TF32 as cuDNN
# does, also in the interpreter); what the verifier holds such tasks to (TF32_TOLERANCE)
TF32_TOL = 2e-3
ALLOWED_IMPORTS = {"torch", "torch.nn", "torch.nn.functional", "triton", "triton.language", "math"}
FORBIDDEN_CALLS = {"matmul", "mm", "bmm", "linear", "softmax", "log_softmax", "layer_norm", "conv2d_",
                   "scaled_dot_product_attention", "compile", "einsum", "baddbmm", "addmm"}

coder = TemplateCoder()


def local_task(name: str) -> Task:
    return load_task(TASKS / f"{name}.py")


def import_program(source: str, tmp_path: Path, tag: str):
    path = tmp_path / f"candidate_{tag}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"candidate_{tag}_{abs(hash(source))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check(task: Task, program: Program, tmp_path: Path, tag: str = "p") -> None:
    """The program's outputs match the reference's at every CPU size of the task."""
    check_module(task, import_program(program.source, tmp_path, tag), task.sizes("cpu"))


def check_module(task: Task, module, all_sizes: list[dict]) -> None:
    """An imported program's outputs match the reference's at each of the given sizes."""
    tf32 = 'input_precision="tf32"' in Path(module.__file__).read_text()
    for i, sizes in enumerate(all_sizes):
        for key, value in sizes.items():  # the verifier overrides the same constants in the candidate
            if hasattr(module, key):
                setattr(module, key, value)
        reference = task.make_model(seed=0, sizes=sizes)
        torch.manual_seed(0)
        candidate = module.ModelNew(*task.init_inputs(sizes))
        candidate.load_state_dict(reference.state_dict())
        inputs = task.make_inputs(seed=i + 1, sizes=sizes)
        with torch.no_grad():
            expected = reference(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
            got = candidate(*inputs)
        expected = expected if isinstance(expected, tuple | list) else [expected]
        got = got if isinstance(got, tuple | list) else [got]
        assert len(got) == len(expected)
        for e, g in zip(expected, got, strict=True):
            assert isinstance(g, torch.Tensor) and g.dtype == e.dtype and g.shape == e.shape
            tol = TF32_TOL if tf32 and e.dtype == torch.float32 else TOLERANCE.get(e.dtype, 1e-4)
            where = f"{task.name} {sizes}"
            torch.testing.assert_close(g, e, atol=tol, rtol=tol, msg=lambda m, where=where: f"{where}: {m}")


def sample(strategies: list[Strategy], per_kind: int = 1) -> list[Strategy]:
    """A few steps per kind (all fuse steps), to keep the interpreter time down."""
    picked, count = [], {}
    for s in strategies:
        if s.is_stop:
            continue
        if s.kind == "fuse" or count.get(s.kind, 0) < per_kind:
            picked.append(s)
            count[s.kind] = count.get(s.kind, 0) + 1
    return picked


@pytest.fixture(scope="module")
def ports() -> dict[str, Program]:
    return {name: coder.apply(local_task(name), None, PORT) for name in SUPPORTED}


# --------------------------------------------------------------------------------------------------
# correctness
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", SUPPORTED)
def test_port_matches_reference(name, ports, tmp_path):
    check(local_task(name), ports[name], tmp_path)


@pytest.mark.parametrize("name", SUPPORTED)
def test_legal_steps_match_reference(name, ports, tmp_path):
    task = local_task(name)
    legal = coder.legal_strategies(task, ports[name])
    for i, strategy in enumerate(sample(legal)):
        check(task, coder.apply(task, ports[name], strategy), tmp_path, tag=f"s{i}")


@pytest.mark.parametrize("name", SUPPORTED)
def test_fully_fused_program_with_tiny_blocks(name, ports, tmp_path):
    """Fuse until nothing is left, then force blocks smaller than a row: the looped paths run."""
    task = local_task(name)
    program = ports[name]
    while fusions := [s for s in coder.legal_strategies(task, program) if s.kind == "fuse"]:
        program = coder.apply(task, program, fusions[0])
    check(task, program, tmp_path, tag="fused")
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    for kernel in ir.kernels():
        kernel.config.pop("auto_block", None)  # as a `tile` step does: the row's block is the test's
        if kernel.kind == "pointwise" or "BLOCK" in kernel.config and kernel.kind in ("reduce", *WALK_KINDS):
            kernel.config["BLOCK"] = 16
        elif kernel.kind in ("reduce", *WALK_KINDS):
            kernel.config.update(BLOCK_M=4, BLOCK_N=16)
        elif kernel.kind == "matmul":
            kernel.config.update(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
        elif kernel.kind == "attention":
            kernel.config.update(BLOCK_M=16, BLOCK_N=16)
    check(task, Program(generate(task, ir)), tmp_path, tag="tiny")


@pytest.mark.parametrize("steps", [  # 16 tiles and K = 16384 traced: the port splits K in 4
    ["fuse epilogue", "split_k 2"],
    ["fuse epilogue", "split_k 1", "persistent", "group_m 8"],
    ["fuse epilogue", "split_k 1", "autotune"],
    ["fuse epilogue", "precision ieee", "tile BLOCK_M=32 BLOCK_N=64 BLOCK_K=32"],
])
def test_matmul_step_sequences(steps, tmp_path):
    task = local_task("matmul_large_k")
    program = coder.apply(task, None, PORT)
    for text in steps:
        assert Strategy.parse(text) in coder.legal_strategies(task, program), text
        program = coder.apply(task, program, Strategy.parse(text))
    check(task, program, tmp_path)


@pytest.mark.parametrize("steps", [["persistent", "num_warps 8"], ["autotune"], ["tile BLOCK=1024"]])
def test_row_reduction_step_sequences(steps, tmp_path):
    task = local_task("cross_entropy")
    program = coder.apply(task, None, PORT)
    for text in steps:
        program = coder.apply(task, program, Strategy.parse(text))
    check(task, program, tmp_path)


@pytest.mark.parametrize("steps", [
    ["fuse prologue", "fuse epilogue", "split_k 16"],
    ["fuse prologue", "fuse epilogue", "split_k 16", "split_k 64"],
])
def test_split_reductions(steps, tmp_path):
    """Few rows, long reductions: slices run in parallel and a second kernel combines them."""
    task = local_task("full_reduce")
    program = coder.apply(task, None, PORT)
    for text in steps:
        assert Strategy.parse(text) in coder.legal_strategies(task, program), text
        program = coder.apply(task, program, Strategy.parse(text))
    check(task, program, tmp_path)
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    assert any(k.config.get("split_k", 1) > 1 for k in ir.kernels())
    for kernel in ir.kernels():  # several chunks per slice: the slice bounds are exercised
        kernel.config.update({"BLOCK": 16} if "BLOCK" in kernel.config else {"BLOCK_M": 4, "BLOCK_N": 16})
    check(task, Program(generate(task, ir)), tmp_path, tag="tiny")


def test_attention_pattern_becomes_one_flash_kernel(ports, tmp_path):
    task = local_task("attention_manual")
    program = coder.apply(task, ports["attention_manual"], Strategy.parse("fuse attention"))
    kernels = [k for k in ProgramIR.from_dict(program.metadata["template_ir"]).kernels()]
    assert [k.kind for k in kernels] == ["attention"]
    check(task, program, tmp_path)


@pytest.mark.parametrize("name, before", [("scores_softmax", []), ("scores_softmax", ["fuse epilogue"]),
                                          ("bmm_softmax_fp16", []), ("bmm_softmax_fp16", ["fuse prologue"])])
def test_score_softmax_pattern_becomes_one_kernel_that_writes_the_probabilities(name, before, tmp_path):
    """matmul -> scale -> (+ bias) -> softmax: one kernel, the scores never stored (D=24, T=29:
    the masked key and head-dim paths); with tiny tiles several key blocks run in both passes."""
    task = local_task(name) if (TASKS / f"{name}.py").exists() else load_task(name)
    program = coder.apply(task, None, PORT)
    for text in before:
        program = coder.apply(task, program, Strategy.parse(text))
    assert Strategy.parse("fuse attention") not in coder.legal_strategies(task, program)
    program = coder.apply(task, program, Strategy.parse("fuse softmax"))
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    assert [k.kind for k in ir.kernels()] == ["attention"]
    check(task, program, tmp_path)
    ir.kernels()[0].config.update(BLOCK_M=16, BLOCK_N=16)
    check(task, Program(generate(task, ir)), tmp_path, tag="tiny")


def test_fp32_scores_are_not_fused_with_their_softmax():
    """Computing fp32 scores twice lost on the H200, with FMA and with tf32x3 dots (fuse/attention.py)."""
    task = load_task("baddbmm_softmax")
    program = coder.apply(task, None, PORT)
    for text in ["fuse epilogue", "precision tf32x3"]:
        assert Strategy.parse("fuse softmax") not in coder.legal_strategies(task, program)
        program = coder.apply(task, program, Strategy.parse(text))
    assert Strategy.parse("fuse softmax") not in coder.legal_strategies(task, program)


def test_precision_applies_to_every_fp32_dot_not_only_the_dominant_kernel():
    task = load_task("baddbmm_softmax")  # the softmax kernel dominates; the bmm is the only dot
    program = coder.apply(task, None, PORT)
    program = coder.apply(task, program, Strategy.parse("precision tf32x3"))
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    assert [k.config.get("precision") for k in ir.kernels() if k.kind == "matmul"] == ["tf32x3"]


def test_softmax_feeding_a_value_matmul_is_fused_as_attention_only(ports):
    legal = coder.legal_strategies(local_task("attention_manual"), ports["attention_manual"])
    assert Strategy.parse("fuse attention") in legal and Strategy.parse("fuse softmax") not in legal


def test_every_strategy_kind_is_offered_somewhere(ports):
    kinds = {"port"}
    for name in SUPPORTED:
        kinds |= {s.kind for s in coder.legal_strategies(local_task(name), ports[name])}
    expected = set(KINDS) - {"library", "fix"}
    assert expected <= kinds, f"never offered: {expected - kinds}"


# --------------------------------------------------------------------------------------------------
# the protocol
# --------------------------------------------------------------------------------------------------

def test_before_the_port_only_port_is_legal():
    assert coder.legal_strategies(local_task("softmax_rows"), None) == [PORT]


@pytest.mark.parametrize("name", SUPPORTED)
def test_legal_steps_round_trip_change_the_program_and_stay_small(name, ports):
    task = local_task(name)
    legal = coder.legal_strategies(task, ports[name])
    assert legal[-1] == STOP and legal.count(STOP) == 1
    assert len(legal) <= 40
    for strategy in legal:
        assert Strategy.parse(str(strategy)) == strategy
        if not strategy.is_stop:
            assert coder.apply(task, ports[name], strategy).source != ports[name].source, strategy


def test_stop_and_foreign_programs_are_refused(ports):
    task = local_task("softmax_rows")
    with pytest.raises(CoderError):
        coder.apply(task, ports["softmax_rows"], STOP)
    with pytest.raises(CoderError, match="template IR"):
        coder.apply(task, Program("class ModelNew: pass\n"), Strategy.parse("num_warps 8"))


def test_a_step_that_does_not_fit_is_refused(ports):
    task = local_task("softmax_rows")
    with pytest.raises(CoderError):
        coder.apply(task, ports["softmax_rows"], Strategy.parse("group_m 8"))
    with pytest.raises(CoderError):
        coder.apply(task, ports["softmax_rows"], Strategy.parse("tile BLOCK_M=64 BLOCK_N=64 BLOCK_K=32"))


def test_tiles_that_overflow_shared_memory_are_not_offered():
    # head_dim 128, bf16: 128x128 tiles with 4 stages of K and V need ~288 KiB (failed on an H100)
    task = load_task("attention_sdpa_bf16")
    program = coder.apply(task, None, PORT)
    program = coder.apply(task, program, Strategy.parse("tile BLOCK_M=128 BLOCK_N=128"))
    legal = [str(s) for s in coder.legal_strategies(task, program)]
    assert "num_stages 3" in legal and "num_stages 4" not in legal
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    for kernel in ir.kernels():
        assert 0 < steps.smem_bytes(ir, kernel) <= steps.SMEM_BYTES


def test_matmul_shared_memory_counts_every_stage_of_both_tiles():
    task = load_task("matmul_fp16")
    ir = ProgramIR.from_dict(coder.apply(task, None, PORT).metadata["template_ir"])
    kernel = steps.dominant(ir)
    cfg = kernel.config
    assert steps.smem_bytes(ir, kernel) == (cfg["num_stages"] * (cfg["BLOCK_M"] * cfg["BLOCK_K"] +
                                                                 cfg["BLOCK_K"] * cfg["BLOCK_N"]) * 2)


def test_unsupported_op_raises_coder_error():
    with pytest.raises(CoderError, match="not supported by the template coder: .*sort"):
        coder.apply(local_task("unsupported_sort"), None, PORT)


def test_conv_ports_to_triton_and_goes_back_to_the_vendor_call_only_where_allowed(ports, tmp_path):
    task = local_task("conv_bn_relu")
    ir = ProgramIR.from_dict(ports["conv_bn_relu"].metadata["template_ir"])
    assert "conv" in [k.kind for k in ir.kernels()]
    library = Strategy.parse("library conv2d")
    assert library in coder.legal_strategies(task, ports["conv_bn_relu"])
    vendor = coder.apply(task, ports["conv_bn_relu"], library)
    assert "torch.nn.functional.conv2d(" in vendor.source
    check(task, vendor, tmp_path)
    source = (TASKS / "conv_bn_relu.py").read_text().replace(', "library": ["conv2d"]', "")
    strict = Task(name="conv_no_library", source=source)
    program = coder.apply(strict, None, PORT)
    assert library not in coder.legal_strategies(strict, program)
    with pytest.raises(CoderError, match="conv2d"):
        coder.apply(strict, program, library)


def test_ir_travels_as_json_and_regenerates_the_same_source(ports):
    for name in ("linear_gelu", "groupnorm", "attention_manual"):
        program = ports[name]
        data = json.loads(json.dumps(program.metadata["template_ir"]))
        assert generate(local_task(name), ProgramIR.from_dict(data)) == program.source


def test_same_steps_give_the_same_program():
    task = local_task("layernorm")
    a = coder.apply(task, coder.apply(task, None, PORT), Strategy.parse("fuse epilogue"))
    b = coder.apply(task, coder.apply(task, None, PORT), Strategy.parse("fuse epilogue"))
    assert a.source == b.source and a.digest == b.digest


@pytest.mark.parametrize("name", SUPPORTED)
def test_source_passes_the_static_rules(name, ports):
    """Only allowed imports; no try/except; no library compute in forward; shapes never hard-coded."""
    tree = ast.parse(ports[name].source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert {a.name for a in node.names} <= ALLOWED_IMPORTS
        if isinstance(node, ast.ImportFrom):
            pytest.fail(f"from-import in generated code: {ast.unparse(node)}")
        assert not isinstance(node, ast.Try)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            assert node.func.attr not in FORBIDDEN_CALLS, ast.unparse(node)
    model = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew")
    forward = next(f for f in model.body if isinstance(f, ast.FunctionDef) and f.name == "forward")
    assert not any(isinstance(n, ast.Constant) and isinstance(n.value, int) and n.value > 16
                   for n in ast.walk(forward)), "a size is hard-coded in forward"


# --------------------------------------------------------------------------------------------------
# built-in tasks
# --------------------------------------------------------------------------------------------------

BUILTIN = builtin_names()
CPU_SAFE = {torch.float32, torch.float16}


def _cpu_checkable(task: Task) -> bool:
    """The interpreter cannot do bf16 arithmetic: such tasks declare fp16 CPU sizes or are skipped."""
    dtypes = {t.dtype for t in task.make_inputs(0, task.sizes("cpu")[0]) if isinstance(t, torch.Tensor)
              and t.dtype.is_floating_point}
    return dtypes <= CPU_SAFE


@pytest.mark.parametrize("name", BUILTIN)
def test_builtin_port_matches_reference(name, tmp_path):
    task = load_task(name)
    try:
        program = coder.apply(task, None, PORT)
    except CoderError as err:
        pytest.skip(str(err))
    if not _cpu_checkable(task):
        pytest.skip("bf16 arithmetic does not run in the interpreter")
    check(task, program, tmp_path)
    fused = program
    while fusions := [s for s in coder.legal_strategies(task, fused) if s.kind == "fuse"]:
        fused = coder.apply(task, fused, fusions[0])
    if fused is not program:
        check(task, fused, tmp_path, tag="fused")


@pytest.mark.skipif(len(BUILTIN) < 10, reason="the built-in suite is not written yet")
def test_most_builtin_tasks_port():
    ported = []
    for name in BUILTIN:
        try:
            coder.apply(load_task(name), None, PORT)
            ported.append(name)
        except CoderError:
            pass
    print(f"template coder ports {len(ported)}/{len(BUILTIN)} built-in tasks", file=sys.stderr)
    assert len(ported) >= 0.8 * len(BUILTIN)


# --------------------------------------------------------------------------------------------------
# looped reductions: rows longer than a block, walked chunk by chunk
# --------------------------------------------------------------------------------------------------

def fully_fused(task: Task) -> Program:
    program = coder.apply(task, None, PORT)
    while fusions := [s for s in coder.legal_strategies(task, program) if s.kind == "fuse"]:
        program = coder.apply(task, program, fusions[0])
    return program


def with_small_blocks(task: Task, program: Program, block: int, block_m: int) -> Program:
    """The same program with reduce blocks shorter than the task's rows: the looped form runs."""
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    for kernel in ir.kernels():
        if kernel.kind == "reduce":
            kernel.config.pop("auto_block", None)  # as a `tile` step does
            kernel.config.update({"BLOCK": block} if "BLOCK" in kernel.config else {"BLOCK_M": block_m})
    return Program(generate(task, ir))


def first_loop(source: str) -> list[str]:
    """The body of the first chunk loop of the first kernel (its first reduction pass)."""
    return loop_bodies(source)[0]


LOOPED_BUILTIN = ["cross_entropy", "cross_entropy_smooth_bf16", "groupnorm", "layernorm", "log_softmax_vocab",
                  "logsumexp_lastdim", "softmax_channels_fp16", "kl_div_rows", "rmsnorm_fp16"]


@pytest.mark.parametrize("name", LOOPED_BUILTIN)
def test_builtin_reductions_in_small_blocks_match_reference(name, tmp_path):
    """The CPU sizes fit one block; blocks of 64 (8 reduced rows for a column reduction) make the
    kernels walk their rows in chunks, the last one partly masked (no CPU size is a multiple)."""
    task = load_task(name)
    if not _cpu_checkable(task):
        pytest.skip("bf16 arithmetic does not run in the interpreter")
    check(task, with_small_blocks(task, fully_fused(task), block=64, block_m=8), tmp_path, tag="small")


@pytest.mark.parametrize("name", ["cross_entropy_smooth_bf16", "log_softmax_vocab", "logsumexp_lastdim",
                                  "kl_div_rows"])
def test_looped_online_softmax_over_rows_shares_a_max_per_group_of_neighbours(name):
    """A row kernel walks (BLOCK // 8, 8) tiles: the 8 neighbours of a group share one running max,
    so the loop reduces along the group axis only (never across threads' groups), runs one exp2 per
    element and online pair, and rescales each group's sum once per chunk."""
    task = load_task(name)
    loop = first_loop(with_small_blocks(task, fully_fused(task), block=64, block_m=8).source)
    assert loop[0] == "cols = start + tl.arange(0, BLOCK // 8)[:, None] * 8 + tl.arange(0, 8)[None, :]"
    pairs = [line for line in loop if line.startswith("new_")]
    per_element = [line for line in loop if line.startswith("e_") and "tl.exp2(lane_" in line]
    per_group = [line for line in loop if line.startswith("alpha_") and "tl.exp2(acc_" in line]
    assert pairs and len(per_element) == len(per_group) == len(pairs), loop
    assert sum(line.count("tl.exp") for line in loop) == 2 * len(pairs), loop
    reductions = re.findall(r"tl\.(?:max|sum)\([^\n]*", "\n".join(loop))
    assert reductions and all(r.endswith("axis=1)") or "axis=1)" in r for r in reductions), reductions


def test_looped_online_column_softmax_keeps_lanes_apart():
    """A column softmax that loops keeps a running max and sum per lane: one exp2 per element, no
    reduction across lanes inside the loop; the lanes merge once, after it."""
    task = load_task("softmax_channels_fp16")
    loop = first_loop(with_small_blocks(task, fully_fused(task), block=64, block_m=8).source)
    pairs = [line for line in loop if line.startswith("d_") and " = lane_" in line]
    exps = [part for line in loop for part in line.split("tl.exp2(")[1:]]
    assert pairs and len(exps) == len(pairs), loop
    assert not [line for line in loop if "tl.max(" in line or "tl.sum(" in line], loop


@pytest.mark.parametrize("name", ["groupnorm", "layernorm"])
def test_looped_welford_divides_per_chunk_only(name):
    """Mean and M2 merge once per chunk (Chan): the loop divides by chunk counts alone."""
    loop = first_loop(fully_fused(load_task(name)).source)
    divisions = [line for line in loop if " / " in line]
    assert divisions and all(re.search(r" / \(?count_\w+ \+ chunk_count_\w+\)?$| / chunk_count_\w+$", line)
                             for line in divisions), divisions


GROUP_NORM_TASK = '''
"""GroupNorm then SiLU, with channels longer than half a chunk of 16 and channels shorter."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B, C, G, H, W = 3, 8, 2, 5, 7


class Model(nn.Module):
    def __init__(self, groups, channels):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels)
        nn.init.normal_(self.norm.weight)
        nn.init.normal_(self.norm.bias)

    def forward(self, x):
        return F.silu(self.norm(x))


def get_inputs():
    return [torch.randn(B, C, H, W) * 2 + 1]


def get_init_inputs():
    return [G, C]


MTMC = {"cpu_sizes": [{"B": 3, "C": 8, "G": 2, "H": 5, "W": 7}, {"B": 2, "C": 12, "G": 2, "H": 1, "W": 5}]}
'''


def test_looped_group_norm_writes_channel_by_channel_backwards(tmp_path):
    """Channels of at least half a chunk are written one by one, last chunk first: a per-channel
    weight is one scalar load, with no division by HW per element; shorter channels keep the flat
    walk. In blocks of 16, the 35-value channels end in a partial chunk (by channel) and the
    5-value ones do not fill half a chunk (flat): both match the reference."""
    task = task_from_source(tmp_path, "group_norm_silu", GROUP_NORM_TASK)
    looped = with_small_blocks(task, fully_fused(task), block=16, block_m=4)
    by_channel = looped.source.split("if BY_CHANNEL:")[1].split("else:")[0]
    assert "cols = (n_chunks - 1 - chunk) * BLOCK + tl.arange(0, BLOCK)" in by_channel
    assert "// HW" not in by_channel and by_channel.count("CPG + chan).to(tl.float32)") == 2, by_channel
    assert "BY_CHANNEL=2 * HW >= BLOCK" in looped.source
    check(task, looped, tmp_path)


NEG_INF_TASK = '''
"""Softmax-like reductions over rows holding -inf: all -inf rows, and rows whose first chunks are."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B, N, R = 6, 45, 19


class Model(nn.Module):
    def forward(self, x, y, target, z):
        return (torch.logsumexp(x, dim=-1), torch.softmax(y, dim=-1),
                F.cross_entropy(y, target, reduction="none"), torch.softmax(z, dim=1))


def get_inputs():
    x = torch.randn(B, N)
    x[0] = float("-inf")  # all -inf: the logsumexp is -inf, never NaN
    x[1, :N - 3] = float("-inf")  # only the last, partly masked chunk is finite
    y = torch.randn(B, N)
    y[0, :2 * N // 3] = float("-inf")  # the first chunks are all -inf, the later ones are not
    y[1, ::2] = float("-inf")
    z = torch.randn(B, R, 7)
    z[:, :R - 2, 0] = float("-inf")  # a column reduction: one column -inf but for its last rows
    return [x, y, torch.full((B,), N - 1), z]


def get_init_inputs():
    return []


MTMC = {"cpu_sizes": [{"B": 6, "N": 45, "R": 19}]}
'''


VARIANCE_TASK = '''
"""Variances over rows and over a leading dim, with and without Bessel's correction, off-centre."""
import torch
import torch.nn as nn

B, N, R = 5, 45, 19


class Model(nn.Module):
    def forward(self, x, z):
        return x.var(dim=-1), x.var(dim=-1, unbiased=False), torch.var(z, dim=1), z.std(dim=1, correction=0)


def get_inputs():
    return [torch.randn(B, N) * 3 + 10, torch.randn(B, R, 7) + 5]


def get_init_inputs():
    return []


MTMC = {"cpu_sizes": [{"B": 5, "N": 45, "R": 19}]}
'''


def task_from_source(tmp_path: Path, name: str, source: str) -> Task:
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return load_task(path)


def test_looped_softmax_over_rows_of_minus_infinity(tmp_path):
    task = task_from_source(tmp_path, "neg_inf_rows", NEG_INF_TASK)
    # looped only: the one-pass form shifts an all -inf row by its max, -inf, and gives NaN
    check(task, with_small_blocks(task, fully_fused(task), block=16, block_m=4), tmp_path)


def test_looped_variance_with_and_without_correction(tmp_path):
    task = task_from_source(tmp_path, "variances", VARIANCE_TASK)
    program = fully_fused(task)
    check(task, program, tmp_path, tag="one_pass")
    looped = with_small_blocks(task, program, block=16, block_m=4)
    assert looped.source.count("Chan's merge") == 4
    check(task, looped, tmp_path, tag="looped")


def loop_bodies(source: str) -> list[list[str]]:
    """The body of every chunk loop in the source."""
    lines, bodies = source.splitlines(), []
    for head, line in enumerate(lines):
        if line.strip().startswith("for start in range("):
            depth = len(line) - len(line.lstrip())
            body = []
            for inner in lines[head + 1:]:
                if inner.strip() and len(inner) - len(inner.lstrip()) <= depth:
                    break
                body.append(inner.strip())
            bodies.append(body)
    return bodies


@pytest.mark.parametrize("name", ["softmax_expectations", "kl_div_rows"])
def test_softmax_weighted_sums_and_picked_columns_read_each_row_once(name, tmp_path):
    """KL divergence, soft-target cross-entropy and entropy are sums weighted by a softmax: looped,
    each is kept next to the softmax's running sum, so no kernel walks its rows twice. A hard
    target's logit is loaded, not found by comparing every column with the target."""
    task = local_task(name) if (TASKS / f"{name}.py").exists() else load_task(name)
    looped = with_small_blocks(task, fully_fused(task), block=16, block_m=4)
    assert "pass 2 of" not in looped.source and "last pass" not in looped.source
    assert looped.source.count("softmax-weighted sum") == (3 if name == "softmax_expectations" else 1)
    assert not [line for body in loop_bodies(looped.source) for line in body if "== target" in line]
    assert ("one column is picked" in looped.source) == (name == "softmax_expectations")
    check(task, looped, tmp_path)


def test_row_blocks_follow_the_kernel_form_until_a_tile_step():
    """A full-size output keeps a row of up to 32768 values in registers (read once, not twice); an
    online softmax walks a longer row in chunks of 1024 (its per-lane state stays small); a plain sum
    keeps chunks of 8192; a `tile` step sets both to its BLOCK. A column softmax holds up to 128
    reduced rows."""
    port = coder.apply(load_task("log_softmax_vocab"), None, PORT)
    assert "BLOCK = triton.next_power_of_2(n_cols) if n_cols <= 32768 else 1024" in port.source
    tiled = coder.apply(load_task("log_softmax_vocab"), port, Strategy.parse("tile BLOCK=2048"))
    assert "BLOCK = min(triton.next_power_of_2(n_cols), 2048)" in tiled.source
    ce = coder.apply(load_task("cross_entropy_smooth_bf16"), None, PORT)
    assert "BLOCK = triton.next_power_of_2(n_cols) if n_cols <= 8192 else 1024" in ce.source
    sums = coder.apply(load_task("sum_lastdim"), None, PORT)
    assert "BLOCK = min(triton.next_power_of_2(n_cols), 8192)" in sums.source
    channels = coder.apply(load_task("softmax_channels_fp16"), None, PORT)
    assert "BLOCK_M = min(triton.next_power_of_2(n_red), 128)" in channels.source


# --------------------------------------------------------------------------------------------------
# instance norm and torch.tensor constants (own small tasks: odd sizes, a second size where the
# program reads a size-dependent value at run time)
# --------------------------------------------------------------------------------------------------

INSTANCE_NORM_SOURCE = '''
import torch
import torch.nn as nn
import torch.nn.functional as F

B, C, S = 2, 3, 5


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.InstanceNorm{nd}d(channels, {args})
        if self.norm.affine:
            nn.init.normal_(self.norm.weight)
            nn.init.normal_(self.norm.bias)
        if self.norm.track_running_stats:
            self.norm.running_mean.normal_(0.0, 0.5)
            self.norm.running_var.uniform_(0.25, 2.0)

    def forward(self, x):
        return {forward}


def get_inputs():
    return [torch.randn(B, C, {spatial}) * 3 + 1]


def get_init_inputs():
    return [C]


MTMC = {{"cpu_sizes": [{{"B": 2, "C": 3, "S": 5}}, {{"B": 1, "C": 4, "S": 6}}]}}
'''
INSTANCE_SPATIAL = {1: "S + 2", 2: "S, S + 2", 3: "S - 2, S, S - 1"}


def instance_norm_task(nd: int, args: str = "", forward: str = "F.silu(self.norm(x)) * 0.5") -> Task:
    source = INSTANCE_NORM_SOURCE.format(nd=nd, args=args, forward=forward, spatial=INSTANCE_SPATIAL[nd])
    return Task(name=f"instance_norm{nd}d", source=source)


@pytest.mark.parametrize("nd, args, mode", [
    (1, "", None), (2, "affine=True, eps=1e-3", None), (3, "affine=True", None),
    (2, "affine=True, track_running_stats=True", None), (2, "affine=True, track_running_stats=True", "eval")])
def test_instance_norm_matches_pytorch(nd, args, mode, tmp_path):
    """Per-sample per-channel statistics are GroupNorm with one group per channel (one reduce kernel,
    the SiLU fused into it), also in training mode with running statistics (their update is a side
    effect no output reads); in eval mode with running statistics it is elementwise."""
    task = instance_norm_task(nd, args)
    if mode:
        task = Task(name=task.name, source=task.source + f'\nMTMC["mode"] = "{mode}"\n')
    program = fully_fused(task)
    kinds = [k.kind for k in ProgramIR.from_dict(program.metadata["template_ir"]).kernels()]
    assert kinds == (["pointwise"] if mode == "eval" else ["reduce"])
    check(task, program, tmp_path)
    if nd == 3:  # rows longer than a block: the looped passes
        check(task, with_small_blocks(task, program, block=16, block_m=4), tmp_path, tag="looped")


def test_instance_norm_of_a_reshaped_row_reads_its_channel_count_at_run_time(tmp_path):
    """KernelBench level 2's 28_BMM_InstanceNorm: InstanceNorm2d(F) of a (B, 1, 1, F) tensor. With no
    affine weights num_features is not checked: the statistics are over the one channel's F values."""
    row = "x.flatten(1)"
    task = instance_norm_task(2, forward=f"self.norm({row}.unsqueeze(1).unsqueeze(1)).flatten(1) + {row}")
    check(task, coder.apply(task, None, PORT), tmp_path)


def test_functional_instance_norm_matches_pytorch(tmp_path):
    task = instance_norm_task(2, "affine=True", forward="F.instance_norm(x, weight=self.norm.weight, "
                              "bias=self.norm.bias, eps=1e-4)")
    check(task, coder.apply(task, None, PORT), tmp_path)


@pytest.mark.parametrize("args, forward, match", [
    ("", "self.norm(x[0])", "unbatched"),
    ("track_running_stats=True", "F.instance_norm(x, self.norm.running_mean, self.norm.running_var)",
     "updating running statistics"),
])
def test_instance_norm_refusals_are_clear(args, forward, match):
    with pytest.raises(CoderError, match=match):
        coder.apply(instance_norm_task(2, args, forward), None, PORT)


CONV_INSTANCE_NORM = '''
import torch
import torch.nn as nn

B, C_IN, C_OUT, D, H, W = 2, 3, 5, 5, 7, 6


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv3d(c_in, c_out, 3, padding=1)
        self.multiplier = nn.Parameter(torch.randn(c_out, 1, 1, 1))
        self.norm = nn.InstanceNorm3d(c_out, affine=True)
        nn.init.normal_(self.norm.weight)

    def forward(self, x):
        x = self.norm(self.conv(x) * self.multiplier)
        return torch.clamp(x, -1.0, 1.0) * self.multiplier


def get_inputs():
    return [torch.randn(B, C_IN, D, H, W)]


def get_init_inputs():
    return [C_IN, C_OUT]


MTMC = {"cpu_sizes": [{"B": 2, "C_IN": 3, "C_OUT": 5, "D": 5, "H": 7, "W": 6}]}
'''


def test_instance_norm_after_a_conv_takes_its_producer_and_consumer_in_two_kernels(tmp_path):
    """As KernelBench level 2's 79_Conv3d_Multiply_InstanceNorm: the multiply fuses into the conv's
    epilogue, the clamp and the second multiply into the norm."""
    task = Task(name="conv3d_instance_norm", source=CONV_INSTANCE_NORM)
    program = fully_fused(task)
    assert [k.kind for k in ProgramIR.from_dict(program.metadata["template_ir"]).kernels()] == \
        ["conv", "reduce"]
    check(task, program, tmp_path)


SCALAR_TENSOR_SOURCE = '''
import torch
import torch.nn as nn

B, C_IN, C_OUT, S = 2, 3, 5, 7


class Model(nn.Module):
    def __init__(self, c_in, c_out, constant):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3)
        self.constant = constant

    def forward(self, x):
        x = self.conv(x)
        {body}
        return x


def get_inputs():
    return [torch.randn(B, C_IN, S, S + 2)]


def get_init_inputs():
    return [C_IN, C_OUT, 0.25]


MTMC = {{"cpu_sizes": [{{"B": 2, "C_IN": 3, "C_OUT": 5, "S": 7}}, {{"B": 1, "C_IN": 2, "C_OUT": 3, "S": 6}}]}}
'''


def scalar_tensor_task(body: str) -> Task:
    return Task(name="conv_scalar_tensor", source=SCALAR_TENSOR_SOURCE.format(body=body))


@pytest.mark.parametrize("body", [
    "x = torch.min(x, torch.tensor(0.0, device=x.device))",  # a traced call (83, 93 of level 2)
    "x = torch.min(x, torch.tensor(self.constant)) * torch.tensor(3)",  # fx constants (31 of level 2)
    "x = torch.where(x > torch.tensor(self.constant), x, torch.tensor(-1.5, dtype=torch.float64))",
])
def test_torch_tensor_of_a_number_is_a_literal_in_the_fused_epilogue(body, tmp_path):
    """torch.tensor(number) in forward: kernels take the value as a literal, the program builds no
    tensor for it and reads no attribute fx made while tracing (`self._tensor_constant0`)."""
    task = scalar_tensor_task(body)
    port = coder.apply(task, None, PORT)
    check(task, port, tmp_path, tag="port")
    program = fully_fused(task)
    assert [k.kind for k in ProgramIR.from_dict(program.metadata["template_ir"]).kernels()] == ["conv"]
    forward = program.source[program.source.index("class ModelNew"):]
    assert "tensor(" not in forward and "_tensor_constant" not in program.source
    check(task, program, tmp_path, tag="fused")


@pytest.mark.parametrize("body, match", [
    ("x = x + torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])", "1-D tensor constant"),
    ("x = x * torch.tensor(1 + 2j, device=x.device)", "other than a Python number"),
    ("x = x + torch.tensor(2.0, device=x.device) * 3", "constants only"),
    ("x = x.sum() + torch.tensor(1.0, device=x.device).view(1)", "used by a py"),
])
def test_torch_tensor_refusals_are_clear(body, match):
    with pytest.raises(CoderError, match=match):
        coder.apply(scalar_tensor_task(body), None, PORT)
