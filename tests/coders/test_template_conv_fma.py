"""The FMA K loop of convolutions and transposed convolutions with few input channels per group
(emit/conv_fma.py) against PyTorch on the CPU interpreter, at odd sizes and at fp32's tolerance:
the geometry (stride x padding x dilation x groups x bias, 1d / 2d / 3d), several tiles per output,
a fused epilogue, the port's choice and the menu."""

from __future__ import annotations

from pathlib import Path

import pytest

from coders.template import TemplateCoder
from coders.template.emit import conv as conv_emit
from coders.template.emit import conv_transpose as conv_transpose_emit
from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from mtmc.program import Program
from mtmc.strategies import PORT, Strategy
from mtmc.tasks import Task, load_task
from tests.coders.test_template import check, check_module, import_program
from tests.coders.test_template_conv import GEMM_GEOMETRIES, configured, geometry_task, kernels
from tests.coders.test_template_conv_transpose import CASES

coder = TemplateCoder()
TRANSPOSE_TASKS = Path(__file__).parent / "tasks" / "conv_transpose"
OUTER_PRODUCT = "acc += a[:, None] * b[None, :]"


@pytest.mark.parametrize("nd, kernel, args, sizes", GEMM_GEOMETRIES)
def test_fma_loop_matches_pytorch_at_odd_sizes(nd, kernel, args, sizes, tmp_path):
    """Every geometry, groups and 17-40 input channels included, with 16 x 16 tiles: several row and
    column tiles, wrapped rows and columns past the group's channels."""
    task = geometry_task(nd, kernel, args, sizes)
    program = configured(task, k_loop="fma", BLOCK_M=16, BLOCK_N=16)
    assert OUTER_PRODUCT in program.source and "tl.dot" not in program.source
    check(task, program, tmp_path)  # no TF32 in the source: fp32's tolerance


@pytest.mark.parametrize("nd, kernel, args, sizes", [GEMM_GEOMETRIES[i] for i in (0, 2, 7, 8)])
def test_unrolled_channel_loop_matches_pytorch(nd, kernel, args, sizes, tmp_path):
    """fma_unroll: the group's channels a constexpr, one compile per count (TWO_SIZES: 3 and 4)."""
    task = geometry_task(nd, kernel, args, sizes)
    program = configured(task, k_loop="fma", fma_unroll=True, BLOCK_M=16, BLOCK_N=16)
    assert "tl.static_range(CIG_U)" in program.source and "CIG_U=CIG" in program.source
    check(task, program, tmp_path)


def test_unrolled_autotuned_conv_matches_pytorch(tmp_path):
    task = geometry_task(2, 3, "padding=1", [{"B": 2, "C_IN": 3, "C_OUT": 5, "S": 9}])
    tuned = coder.apply(task, coder.apply(task, None, PORT), Strategy.parse("autotune"))
    ir = ProgramIR.from_dict(tuned.metadata["template_ir"])
    ir.kernels()[0].config["fma_unroll"] = True
    program = Program(generate(task, ir))
    assert "@triton.autotune" in program.source and "CIG_U=CIG" in program.source
    check(task, program, tmp_path)


def test_an_unpadded_conv_loads_without_masks_and_a_padded_one_masks_the_border():
    valid = configured(geometry_task(2, 3, "padding='valid', stride=(1, 3)", [{"B": 2, "C_IN": 3, "C_OUT": 5,
                                                                              "S": 9}]), k_loop="fma")
    padded = configured(geometry_task(2, 3, "padding=1", [{"B": 2, "C_IN": 3, "C_OUT": 5, "S": 9}]),
                        k_loop="fma")
    assert "mask=row_in" not in valid.source and "mask=row_in" in padded.source


def test_port_takes_the_fma_loop_for_few_channels_and_its_menu_has_no_dot_steps(tmp_path):
    task = geometry_task(3, 3, "padding=0", [{"B": 2, "C_IN": 3, "C_OUT": 5, "S": 9}])
    program = coder.apply(task, None, PORT)
    (conv,) = kernels(program)
    assert conv.config["k_loop"] == "fma" and conv.config["precision"] == "ieee"
    legal = coder.legal_strategies(task, program)
    assert not any(s.kind == "precision" for s in legal)  # FMAs in fp32: nothing to move
    tiles = [s for s in legal if s.kind == "tile"]
    assert tiles and all("BLOCK_K" not in dict(s.params) for s in tiles)
    tuned = coder.apply(task, program, Strategy.parse("autotune"))
    configs = conv_emit.tuning_space(kernels(tuned)[0])
    assert len(configs) >= 4 and all(c["BLOCK_K"] == conv.config["BLOCK_K"] for c in configs)
    check(task, coder.apply(task, program, tiles[0]), tmp_path, "tile")


def test_port_leaves_the_fma_loop_from_64_output_channels():
    """From 64 output channels the runs loop's TF32 dots won on an H100 (conv_runs.MIN_OUT); below, the
    FMA tile follows the channels."""
    configs = {}
    for c_out in (16, 33, 64, 65):
        task = geometry_task(3, 3, "padding=0", [{"B": 2, "C_IN": 3, "C_OUT": c_out, "S": 9}])
        conv = kernels(coder.apply(task, None, PORT))[0].config
        configs[c_out] = (conv["k_loop"], conv["BLOCK_M"], conv["BLOCK_N"])
    assert configs == {16: ("fma", 256, 16), 33: ("fma", 128, 64),
                       64: ("runs", 128, 64), 65: ("runs", 128, 64)}


def test_fused_epilogue_runs_on_the_fma_tile(tmp_path):
    source = geometry_task(3, 3, "padding=1", [{"B": 2, "C_IN": 3, "C_OUT": 5, "S": 9}]).source
    source = source.replace("return self.conv(x)", "return torch.sigmoid(self.conv(x) * 0.5) + x.mean()")
    task = Task(name="conv3d_fma_epilogue", source=source)
    program = coder.apply(task, coder.apply(task, None, PORT), Strategy.parse("fuse epilogue"))
    assert OUTER_PRODUCT in program.source
    check(task, program, tmp_path)


def transpose_task(name: str, c_in: int) -> Task:
    """A transposed-conv task traced with `c_in` input channels (the port chooses by them)."""
    task = load_task(TRANSPOSE_TASKS / f"{name}.py")
    line = next(ln for ln in task.source.splitlines() if ln.startswith("B, C_IN, C_OUT"))
    names, values = line.split(" = ")
    values = values.split(", ")
    values[1] = str(c_in)
    return Task(name=task.name, source=task.source.replace(line, f"{names} = {', '.join(values)}"))


@pytest.fixture(scope="module")
def transpose_modules(tmp_path_factory) -> dict:
    """name -> (task, port's program, [imported stride-phase form, plain gather form, stride-phase form
    with the channel loop unrolled])."""
    out = {}
    for name in ("conv_transpose_1d", "conv_transpose_2d", "conv_transpose_3d"):
        task = transpose_task(name, 4)  # 2 per group where the task has 2 groups
        program = coder.apply(task, None, PORT)
        folder = tmp_path_factory.mktemp(name)
        imported = []
        for phases, unroll in ((True, False), (False, False), (True, True)):
            ir = ProgramIR.from_dict(program.metadata["template_ir"])
            ir.kernels()[0].config.update(phases=phases, fma_unroll=unroll, BLOCK_M=16, BLOCK_N=16)
            imported.append(import_program(generate(task, ir), folder, f"{name}_{phases}_{unroll}"))
        out[name] = (task, program, imported)
    return out


@pytest.mark.parametrize("name, case", [(n, c) for n, cases in CASES.items() for c in cases],
                         ids=lambda v: v if isinstance(v, str) else "-".join(map(str, v.values())))
def test_transposed_fma_loop_matches_pytorch_over_the_geometry(name, case, transpose_modules):
    """Both gather forms (stride phases, plain; and unrolled) with 16 x 16 tiles over the cases."""
    task, program, imported = transpose_modules[name]
    assert kernels(program)[0].config["k_loop"] == "fma" and "_tf32_pack" not in program.source
    for module in imported:
        source = Path(module.__file__).read_text()
        assert OUTER_PRODUCT in source and "tl.dot" not in source
        check_module(task, module, [{**task.sizes("cpu")[0], **case}])


def test_transposed_port_keeps_dots_for_wide_groups_and_fma_tiles_have_no_block_k(transpose_modules):
    wide = coder.apply(transpose_task("conv_transpose_2d", 32), None, PORT)  # 16 per group
    assert "k_loop" not in kernels(wide)[0].config and "tl.dot" in wide.source
    task, program, _ = transpose_modules["conv_transpose_2d"]
    tiles = [s for s in coder.legal_strategies(task, program) if s.kind == "tile"]
    assert tiles and all(set(dict(s.params)) == {"BLOCK_M", "BLOCK_N"} for s in tiles)
    configs = conv_transpose_emit.tuning_space(kernels(program)[0])
    assert len(configs) >= 4


def test_a_transposed_fma_tile_step_stays_correct(transpose_modules, tmp_path):
    task, program, _ = transpose_modules["conv_transpose_3d"]
    tile = next(s for s in coder.legal_strategies(task, program) if s.kind == "tile")
    stepped = coder.apply(task, program, tile)
    check(task, Program(stepped.source, metadata=stepped.metadata), tmp_path)
