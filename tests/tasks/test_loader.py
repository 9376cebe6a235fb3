"""Loading tasks from files, folders and names; one clear error per kind of bad input."""

import pickle
import textwrap

import pytest
import torch

from mtmc.tasks import BrokenTask, TaskError, load_suite, load_task, scan_suite, summarize, validate
from mtmc.verify.hardware import Peaks, roofline_ms

GOOD = """
import torch
import torch.nn as nn

M = 64
N = 32
K = 48

class Model(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(k, n))

    def forward(self, x):
        return torch.relu(x @ self.weight) * 2.0

def get_inputs():
    return [torch.randn(M, K)]

def get_init_inputs():
    return [K, N]

MTMC = {"split": "train", "cpu_sizes": [{"M": 5, "K": 7}, {"M": 3, "N": 11}], "gpu_sizes": [{"M": 61}]}
"""


def write(tmp_path, source, name="task.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def test_loads_file_and_reads_metadata(tmp_path):
    task = load_task(write(tmp_path, GOOD))
    assert task.name == "task"
    assert task.split == "train"
    assert task.sizes("cpu") == [{"M": 5, "K": 7}, {"M": 3, "N": 11}]
    assert task.sizes("cuda") == [{}, {"M": 61}]


def test_size_overrides_change_shapes_and_weights_follow_the_seed(tmp_path):
    task = load_task(write(tmp_path, GOOD))
    (x,) = task.make_inputs(seed=0, sizes={"M": 5, "K": 7})
    assert x.shape == (5, 7)
    assert task.make_model(seed=0, sizes={"M": 5, "K": 7}).weight.shape == (7, 32)
    w0, w0_again, w1 = (task.make_model(seed=s).weight for s in (0, 0, 1))
    assert torch.equal(w0, w0_again) and not torch.equal(w0, w1)


def test_summary_counts_matmul_flops_and_compulsory_bytes(tmp_path):
    summary = summarize(load_task(write(tmp_path, GOOD)))
    assert summary.matmul_flops == 2 * 64 * 32 * 48
    assert summary.bytes_min == 4 * (64 * 48 + 48 * 32 + 64 * 32)  # x, weight, output
    assert summary.op_names[:1] == ["mm"] and "relu" in summary.op_names
    assert summary.flops > summary.matmul_flops  # relu and mul add per-element work
    peaks = Peaks(bandwidth=1e9, bandwidth_max=1e9, flops_fp32=1e12, flops_fp16=1e12)
    floor = roofline_ms(summary.matmul_flops, summary.bytes_min, False, peaks)
    assert floor == pytest.approx(1e3 * summary.bytes_min / 1e9)


def test_task_pickles_as_source(tmp_path):
    task = load_task(write(tmp_path, GOOD))
    task.module()  # populate the module cache: it must not travel
    clone = pickle.loads(pickle.dumps(task))
    assert clone.source == task.source and clone._modules == {}
    assert clone.make_inputs(3)[0].shape == (64, 48)


def test_folder_is_a_suite(tmp_path):
    write(tmp_path, GOOD, "b.py")
    write(tmp_path, GOOD, "a.py")
    write(tmp_path, GOOD, "_helper.py")
    assert [t.name for t in load_suite(tmp_path)] == ["a", "b"]


def test_scan_keeps_broken_files_as_rows(tmp_path):
    write(tmp_path, GOOD, "a.py")
    write(tmp_path, "def oops(:\n", "b.py")
    seen = []
    good, broken = scan_suite(tmp_path, on_load=lambda i, n, entry: seen.append((i, n, entry.name)))
    assert good.name == "a" and seen == [(1, 2, "a"), (2, 2, "b")]
    assert broken == BrokenTask("b", str(tmp_path / "b.py"), f"{tmp_path / 'b.py'}: syntax error at line 1: "
                                "invalid syntax")
    with pytest.raises(TaskError, match=r"b\.py: syntax error"):
        load_suite(tmp_path)


def test_empty_folder(tmp_path):
    with pytest.raises(TaskError, match="holds no task files"):
        load_suite(tmp_path)


BAD = {
    "syntax error": ("class Model(nn.Module:\n    pass\n", r"bad\.py: syntax error at line 1"),
    "missing Model": (GOOD.replace("class Model", "class Other"), r"bad\.py: no `Model` defined"),
    "missing get_inputs": (GOOD.replace("def get_inputs", "def inputs"), r"no `get_inputs` defined"),
    "get_inputs raises": (GOOD.replace("return [torch.randn(M, K)]", "raise RuntimeError('boom')"),
                          r"bad\.py: get_inputs\(\) raised RuntimeError: boom"),
    "non-tensor output": (GOOD.replace("return torch.relu(x @ self.weight) * 2.0", "return 3.0"),
                          r"bad\.py: Model.forward must return a tensor .*got float"),
    "forward raises": (GOOD.replace("x @ self.weight", "x @ x"), r"bad\.py: Model.forward raised"),
    "list input": (GOOD.replace("return [torch.randn(M, K)]", "return [[1.0, 2.0]]"),
                   r"bad\.py: get_inputs\(\) returned a list at position 0; each input must be a tensor"),
    "number where a tensor is needed": (GOOD.replace("return [torch.randn(M, K)]", "return [3.0]"),
                                        r"bad\.py: Model.forward raised TypeError on get_inputs\(\)'s "
                                        r"non-tensor input\(s\) at \[0\]"),
    "import fails": ("import not_a_module\n" + GOOD,
                     r"bad\.py: importing the task raised ModuleNotFoundError"),
    "Model not a module": (GOOD.replace("class Model(nn.Module):", "class Model:"),
                           r"`Model` must be a torch.nn.Module subclass"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_task_file_gets_one_clear_line(tmp_path, case):
    source, pattern = BAD[case]
    with pytest.raises(TaskError, match=pattern) as info:
        load_task(write(tmp_path, source, "bad.py"))
    assert "\n" not in str(info.value)


def test_unknown_builtin_name():
    with pytest.raises(TaskError, match="not_a_task: not a task file and not a built-in task"):
        load_task("not_a_task")


def test_missing_file():
    with pytest.raises(TaskError, match="no such task file"):
        load_task("/nonexistent/task.py")


def test_unknown_size_override(tmp_path):
    task = load_task(write(tmp_path, GOOD))
    with pytest.raises(TaskError, match=r"unknown constants \['Q'\]"):
        task.make_inputs(0, {"Q": 3})


def test_unknown_split():
    with pytest.raises(TaskError, match="unknown split"):
        load_suite("builtin:test")


def test_a_constructor_that_reads_tensor_values_is_not_refused_by_the_meta_check(tmp_path):
    """KernelBench's Swin tasks call .item() in their constructors: meta tensors have no values, so
    the load check skips what it cannot run on meta rather than refusing a valid task."""
    path = tmp_path / "reads_values.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.depth = int(torch.linspace(0, 3, 4)[2].item())\n"
        "        self.lin = nn.Linear(4, 4)\n\n"
        "    def forward(self, x):\n"
        "        return self.lin(x) * self.depth\n\n"
        "def get_inputs():\n    return [torch.randn(2, 4)]\n\n"
        "def get_init_inputs():\n    return []\n")
    task = load_task(str(path))
    validate(task)
    assert task.make_model(seed=0).depth == 2
