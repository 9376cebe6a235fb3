"""The template coder's scans (cumsum, cumprod, their reverse and exclusive forms), arg-reductions
(argmax, argmin) and matmul shapes (einsum, triangular results, matrix-vector), in the CPU
interpreter. Their tasks live in tests/coders/tasks/, so tests/coders/test_template.py also checks
each port, a sample of legal steps and tiny blocks; here: the forms KernelBench spells, edge values,
and the real verifier on each kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from coders.template import TemplateCoder
from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from coders.template.trace import einsum_form
from mtmc.program import Program
from mtmc.strategies import PORT, Strategy
from mtmc.tasks import load_task
from mtmc.verify import InterpreterVerifier
from tests.coders.test_template import check, local_task, task_from_source

coder = TemplateCoder()


def kernels(program: Program):
    return ProgramIR.from_dict(program.metadata["template_ir"]).kernels()


def test_kernelbench_reverse_and_exclusive_spellings_are_one_scan_each():
    """flip -> cumsum -> flip and cat(zeros, cumsum(narrow(...))) trace to scans that read backwards
    or shifted: no flip, zeros or cat is left to compute."""
    program = coder.apply(local_task("scan_forms"), None, PORT)
    scans = kernels(program)
    assert [(k.kind, k.space["dim"], k.space["reverse"], k.space["exclusive"]) for k in scans] == [
        ("scan", 1, True, False), ("scan", 2, False, True), ("scan", 2, True, False)]
    assert ".flip(" not in program.source and "torch.cat(" not in program.source


def test_masked_cumsum_takes_its_mask_as_a_prologue(tmp_path):
    task = local_task("scan_masked")
    program = coder.apply(task, coder.apply(task, None, PORT), Strategy.parse("fuse prologue"))
    assert [k.kind for k in kernels(program)] == ["scan"]
    check(task, program, tmp_path)




NAN_TASK = '''
"""argmax / argmin with NaN and infinities: PyTorch takes NaN as both the largest and the smallest."""
import torch
import torch.nn as nn

B, N = 4, 37


class Model(nn.Module):
    def forward(self, x):
        return torch.argmax(x, dim=1), torch.argmin(x, dim=1), torch.argmax(x, dim=0), torch.argmin(x, 0)


def get_inputs():
    x = torch.randint(0, 3, (B, N)).float()
    x[1, N - 3] = float("nan")  # the first NaN of a row wins, in its last, partly masked chunk
    x[1, N - 1] = float("nan")
    x[2, 3] = float("nan")
    x[3, :] = float("-inf")
    x[0, 30] = float("inf")
    return [x]


def get_init_inputs():
    return []


MTMC = {"cpu_sizes": [{"B": 4, "N": 37}]}
'''


@pytest.mark.parametrize("name", ["argreduce_edges", "nan"])
def test_arg_reductions_take_the_first_index_with_ties_nan_and_infinities(name, tmp_path):
    """In chunks of 16 (4 rows of a column walk) the best value sits in a later chunk than an equal
    one, NaN in the last, partly masked chunk. (NaN and +inf beside -inf are checked here, not by the
    verifier: its check that get_inputs is deterministic compares float64 sums, which are NaN then.)"""
    task = local_task(name) if name != "nan" else task_from_source(tmp_path, "arg_nan", NAN_TASK)
    program = coder.apply(task, None, PORT)
    check(task, program, tmp_path, tag="port")
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    for kernel in ir.kernels():
        kernel.config.update({"BLOCK": 16} if "BLOCK" in kernel.config else {"BLOCK_M": 4, "BLOCK_N": 16})
    check(task, Program(generate(task, ir)), tmp_path, tag="tiny")


@pytest.mark.parametrize("equation, form", [
    ("bijl,lk->bijk", "mm"), ("ik,kn->in", "mm"), ("ml,kl->mk", "linear"), ("bmk, bkn -> bmn", "bmm"),
    ("xbmk,xbkn->xbmn", "bmm"), ("ik,kn->ni", None), ("ij,jk->ijk", None), ("ii,ik->ik", None),
    ("bmk,bnk->bmn", None), ("...k,kn->...n", None), ("ik,kn,nj->ij", None), ("k,kn->n", None),
])
def test_einsum_equations_that_are_one_matmul(equation, form):
    assert einsum_form(equation) == form


def test_a_fused_matmul_writes_its_own_result_when_it_is_read_later(tmp_path):
    """triu(a @ b) and a @ b are both returned: once the triu is fused, one kernel writes both (the
    launcher allocated its first output only, and the program failed with a NameError)."""
    task = local_task("matmul_triangles")
    program = coder.apply(task, coder.apply(task, None, PORT), Strategy.parse("fuse epilogue"))
    fused = [k for k in kernels(program) if len(k.outputs) == 2]
    assert fused and [o.value for o in fused[0].outputs] == ["matmul", "triu"]
    check(task, program, tmp_path)


def test_a_triangular_product_skips_the_tiles_off_its_triangle(tmp_path):
    """tril(bmm(x, y), diagonal=-2) fused: in 16 x 16 tiles of a 37 x 41 product, the tiles above
    the diagonal run no K loop and are stored as zeros; the product returned beside its triu keeps
    every tile."""
    task = local_task("matmul_triangles")
    program = coder.apply(task, coder.apply(task, None, PORT), Strategy.parse("fuse epilogue"))
    program = coder.apply(task, program, Strategy.parse("fuse epilogue"))
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    for kernel in ir.kernels():
        kernel.config.update(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    source = generate(task, ir)
    assert source.count("skips its K loop") == 1 and "<= -2" in source
    check(task, Program(source), tmp_path)


def test_a_matrix_vector_product_is_a_row_reduction():
    """x @ (K, 1) vector: one program per row streams the matrix once (a GEMM tile would waste all but
    one of its columns); the einsums stay matmuls."""
    program = coder.apply(local_task("einsum_matvec"), None, PORT)
    assert [k.kind for k in kernels(program)] == ["matmul", "matmul", "matmul", "reduce"]
    vector = kernels(program)[-1]
    assert [op.op for op in vector.body] == ["load", "load", "mul", "sum"] and vector.outputs[0].keepdim


FOLDED_ROWS_TASK = '''
"""triu after a matmul whose leading dims fold into its rows: the triangle is of each matrix."""
import torch
import torch.nn as nn

B, M, K, N = 2, 9, 7, 11


class Model(nn.Module):
    def forward(self, a, b):
        return torch.triu(a @ b, diagonal=1)


def get_inputs():
    return [torch.randn(B, M, K), torch.randn(K, N)]


def get_init_inputs():
    return []


MTMC = {"cpu_sizes": [{"B": 2, "M": 9, "K": 7, "N": 11}]}
'''


def test_a_triangle_stays_its_own_kernel_where_matmul_rows_are_not_matrix_rows(tmp_path):
    task = task_from_source(tmp_path, "folded_rows", FOLDED_ROWS_TASK)
    program = coder.apply(task, None, PORT)
    assert Strategy.parse("fuse epilogue") not in coder.legal_strategies(task, program)
    check(task, program, tmp_path)


# --------------------------------------------------------------------------------------------------
# the real verifier
# --------------------------------------------------------------------------------------------------

TASKS = Path(__file__).parent / "tasks"
VERIFIED = ["scan_masked", "scan_forms", "scan_cumprod", "argreduce", "argreduce_edges", "matmul_triangles",
            "einsum_matvec"]


@pytest.fixture(scope="module")
def verifier():
    with InterpreterVerifier(timeout_s=180.0, seeds=2) as v:
        yield v


@pytest.mark.parametrize("name, steps", [
    ("scan_masked", ["fuse prologue"]),
    ("argreduce_edges", []),
    ("matmul_triangles", ["fuse epilogue"]),
    ("einsum_matvec", []),
])
def test_each_kind_is_accepted_by_the_verifier(name, steps, verifier, tmp_path):
    task = local_task(name)
    program = coder.apply(task, None, PORT)
    for text in steps:
        program = coder.apply(task, program, Strategy.parse(text))
    verdict = verifier.verify(task, program)
    assert verdict.ok, f"{verdict.status} {verdict.message[:300]}"


@pytest.mark.slow
@pytest.mark.parametrize("name", VERIFIED)
def test_port_and_every_legal_step_are_accepted(name, verifier):
    """As tests/coders/test_template_verified.py does for the built-in tasks (~1 to 3 minutes each)."""
    task = load_task(TASKS / f"{name}.py")
    port = coder.apply(task, None, PORT)
    rejected = []
    for strategy in [None] + [s for s in coder.legal_strategies(task, port) if not s.is_stop]:
        program = port if strategy is None else coder.apply(task, port, strategy)
        verdict = verifier.verify(task, program)
        if not verdict.ok:
            rejected.append(f"{strategy or 'port'}: {verdict.status} {verdict.message[:300]}")
    assert not rejected, "\n".join(rejected)
