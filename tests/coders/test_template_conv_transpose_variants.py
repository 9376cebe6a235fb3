"""The transposed conv's program orders and store layouts (emit/conv_transpose.py) against PyTorch:
one program axis ordered channel block, (group, phase), pixel block (grouped_programs, the port's),
the three-axis grid before it (ungrouped), and the epilogue on the transposed tile (epilogue_t, a
probe variant off in the port).

CPU interpreter, tiny odd sizes, 16 x 16 x 16 tiles (several pixel, channel and input-channel blocks
per grid), the geometries of test_template_conv_transpose_live.py: stride, padding, output_padding,
dilation, groups, with and without bias.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from coders.template import TemplateCoder
from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from mtmc.strategies import PORT, Strategy
from tests.coders.test_template import check_module, import_program
from tests.coders.test_template_conv_transpose import task_named
from tests.coders.test_template_conv_transpose_live import CASES, SIZES, TILES, case_id, configured_programs

coder = TemplateCoder()
VARIANTS = {
    "ungrouped": {"grouped_programs": False},
    "epilogue-t": {"epilogue_t": True, "grouped_programs": False},
    "grouped": {"grouped_programs": True},
    "both": {"epilogue_t": True, "grouped_programs": True},
    "grouped-plain": {"grouped_programs": True, "phases": False},
    "both-fma": {"epilogue_t": True, "grouped_programs": True, "k_loop": "fma", "precision": "ieee",
                 "channels_last": False, "tf32_round": False},
}


@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> dict:
    """(task name, variant) -> (task, imported program)."""
    return configured_programs(tmp_path_factory, VARIANTS)


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("name, case", [(n, c) for n, cases in CASES.items() for c in cases], ids=case_id)
def test_variant_matches_pytorch_over_the_geometry(name, case, variant, programs):
    task, module = programs[name, variant]
    check_module(task, module, [{**SIZES[name], **case}])


def test_the_variants_read_as_intended(programs):
    sources = {v: Path(programs["conv_transpose_2d", v][1].__file__).read_text() for v in VARIANTS}
    port = generate(task_named("conv_transpose_2d"),
                    ProgramIR.from_dict(coder.apply(task_named("conv_transpose_2d"), None,
                                                    PORT).metadata["template_ir"]))
    assert "acc = tl.trans(acc)" not in port and "pid_gp" in port  # the port's programs are grouped
    assert "pid_gp" not in sources["ungrouped"] and "pid_n = tl.program_id(1)" in sources["ungrouped"]
    assert "acc = tl.trans(acc)" in sources["epilogue-t"] and "rs = spatial[None, :]" in sources["epilogue-t"]
    assert "pid_gp" not in sources["epilogue-t"]
    grouped = sources["grouped"]
    assert "n_gp = C_out // cout_g * st0 * st1" in grouped and "tl.program_id(1)" not in grouped
    assert "* _groups * _phases,)" in grouped and "acc = tl.trans(acc)" not in grouped
    assert "n_gp = C_out // cout_g\n" in sources["grouped-plain"]


def test_the_transposed_epilogue_runs_fused_ops_and_their_operands(tmp_path):
    """bias [C, 1, 1], clamp, scale, eval BatchNorm, tanh and a residual of the conv's own output,
    on the [BLOCK_N, BLOCK_M] tile, with the programs grouped."""
    task = task_named("conv_transpose_epilogue")
    program = coder.apply(task, coder.apply(task, None, PORT), Strategy.parse("fuse epilogue"))
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    [kernel] = ir.kernels()
    kernel.config.update(TILES, epilogue_t=True, grouped_programs=True)
    sizes = [{"B": 2, "C_IN": 35, "C_OUT": 19, "H": 3, "W": 2}]
    check_module(task, import_program(generate(task, ir), tmp_path, "tiny_t"), sizes)
