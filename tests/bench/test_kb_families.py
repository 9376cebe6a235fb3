"""benchmarks/kb_families.py: families from task names; interrupts and harness errors are not verdicts."""

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "kb_families.py"
spec = importlib.util.spec_from_file_location("kb_families", SCRIPT)
kb_families = importlib.util.module_from_spec(spec)
spec.loader.exec_module(kb_families)


@pytest.mark.parametrize("name, family", [
    ("67_conv_standard_1D", "conv"), ("41_Max_Pooling_1D", "pooling"),
    ("64_conv_transposed_1D", "conv-transpose"),
    ("93_ConvTranspose2d_Add_Min_GELU_Multiply", "conv-transpose"),
    ("6_Conv3d_Softmax_MaxPool_MaxPool", "conv"), ("55_Matmul_MaxPool_Sum_Scale", "other"),
    ("17_Matmul_with_transposed_B", "other"),
])
def test_family_from_the_task_name(name, family):
    assert kb_families.family(name) == family


def row(task, status="ok", correct=True, eager=2.0, compiled=0.5, error=None):
    return {"task": task, "status": status, "correct": correct, "speedup_eager": eager,
            "speedup_compiled": compiled, "error": error}


def test_interrupted_and_harness_errors_are_neither_right_nor_wrong(tmp_path):
    rows = [row("1_conv_a"), row("2_conv_b", eager=8.0, compiled=2.0),
            row("3_conv_c", "error", False, None, None, "RunStopped: interrupted: stopped at step 0"),
            row("4_conv_d", "error", False, None, None, "VerifierError: x (harness_error the verifier's)"),
            row("5_conv_e", "incorrect", False, None, None)]
    (tmp_path / "results.json").write_text(json.dumps({"tasks": rows}))
    summary = kb_families.summarize(kb_families.rows_of(tmp_path))
    assert summary | {"eager": round(summary["eager"], 6), "compiled": round(summary["compiled"], 6)} == {
        "tasks": 5, "harness": 1, "judged": 3, "correct": 2, "eager": 4.0, "compiled": 1.0, "timed": 2}
