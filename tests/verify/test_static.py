"""Static checks: what they refuse (with the line), and the honest idioms they must leave alone."""

import textwrap

import pytest
from corpus_index import honest

from mtmc.verify.static import check_source

HEADER = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl
"""


def check(body: str, library=()):
    return check_source(HEADER + textwrap.dedent(body), library)


def model(forward_body: str, init_body: str = "") -> str:
    init = f"    def __init__(self):\n        super().__init__()\n{textwrap.indent(init_body, ' ' * 8)}\n" \
        if init_body else ""
    body = textwrap.indent(forward_body, " " * 8)
    return f"class ModelNew(nn.Module):\n{init}    def forward(self, x):\n{body}\n"


@pytest.mark.parametrize("name,task,program", honest(), ids=lambda x: x if isinstance(x, str) else "")
def test_honest_candidates_have_no_violations(name, task, program):
    assert check_source(program.source, task.library_ops).violations == []


HONEST_IDIOMS = {
    "finfo max": "return torch.full_like(x, torch.finfo(x.dtype).max)",
    "parameter named input": None,  # see test below
    "views and allocation": "y = x.view(-1).contiguous()\nreturn torch.empty_like(y).reshape(x.shape)",
    "device query": "sms = torch.cuda.get_device_properties(0).multi_processor_count\nreturn x",
    "dtype and shape": "assert x.dtype == torch.float32 and x.is_contiguous()\nreturn x.new_empty(x.shape)",
    "cat of outputs": "return torch.cat([x, x], dim=0)",
    "private attribute of self": "self._cache_key = x.shape\nreturn x",
    "item": "n = int(x.shape[0])\nreturn x",
}


@pytest.mark.parametrize("idiom", [k for k, v in HONEST_IDIOMS.items() if v], ids=str)
def test_honest_idioms_pass(idiom):
    report = check(model(HONEST_IDIOMS[idiom]))
    assert report.violations == [], [str(v) for v in report.violations]


def test_kernel_code_and_launch_helpers_pass():
    source = """
    from triton.tools.tensor_descriptor import TensorDescriptor


    @triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4)], key=["n"])
    @triton.jit
    def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        total = x.sum(axis=0) + tl.max(x, axis=0)
        tl.atomic_add(out_ptr, total.to(tl.float32))


    class ModelNew(nn.Module):
        def __init__(self, features):
            super().__init__()
            self.fc = nn.Linear(features, features)
            nn.init.zeros_(self.fc.bias)

        def forward(self, input):
            out = torch.zeros(1, device=input.device)
            kernel[lambda meta: (triton.cdiv(input.numel(), meta["BLOCK"]),)](input, out, input.numel())
            return out


    if __name__ == "__main__":
        print(ModelNew(4))
    """
    report = check(source)
    assert report.violations == [], [str(v) for v in report.violations]
    assert report.uses_atomics


REFUSED = [
    # (snippet placed in forward, rule, message fragment)
    ("return torch.softmax(x, -1)", "library", "torch.softmax"),
    ("return F.gelu(x)", "library", "torch.nn.functional.gelu"),
    ("return x.sum(-1)", "library", "`.sum()`"),
    ("return x @ x", "library", "`@`"),
    ("return torch.ops.aten.relu(x)", "torch", "torch.ops"),
    ("return torch._C._nn.gelu(x)", "torch", "private internals"),
    ("torch.cuda.synchronize()\nreturn x", "torch", "CUDA streams"),
    ("e = torch.cuda.Event(enable_timing=True)\nreturn x", "torch", "CUDA streams"),
    ("with torch.cuda.stream(torch.cuda.Stream()):\n    return x", "torch", "CUDA streams"),
    ("return torch.compile(lambda t: t)(x)", "torch", "torch.compile"),
    ("torch.backends.cudnn.allow_tf32 = True\nreturn x", "torch", "global PyTorch settings"),
    ("torch.set_float32_matmul_precision('high')\nreturn x", "torch", "global PyTorch settings"),
    ("torch.manual_seed(0)\nreturn x", "torch", "global PyTorch settings"),
    ("return getattr(torch, 'softmax')(x, -1)", "builtin", "getattr"),
    ("return eval('x')", "builtin", "eval"),
    ("return id(x)", "builtin", "id()"),
    ("return x.data_ptr()", "attribute", "data_ptr"),
    ("return x.tolist()", "attribute", "tolist"),
    ("return x.__class__", "dunder", "__class__"),
    ("return x._base", "private", "_base"),
    ("return torch.nn.functional.__dict__['relu'](x)", "torch", "private internals"),
    ("return (lambda t: t).__globals__", "dunder", "__globals__"),
    ("torch.cuda.Event.record = None\nreturn x", "patch", "monkey-patching"),
    ("tl.sum = None\nreturn x", "patch", "monkey-patching"),
    ("try:\n    return x\nexcept Exception:\n    return x", "try", "try/except"),
    ("global CACHE\nreturn x", "state", "global"),
    ("return triton.runtime.driver", "triton", "Triton internals"),
    ("return triton.testing.do_bench(lambda: x)", "triton", "Triton internals"),
    ("return triton.knobs", "triton", "Triton internals"),
    ("return __builtins__", "dunder", "__builtins__"),
]


@pytest.mark.parametrize("snippet,rule,fragment", REFUSED, ids=[r[0].splitlines()[0][:40] for r in REFUSED])
def test_refused_in_forward(snippet, rule, fragment):
    report = check(model(snippet))
    assert any(v.rule == rule and fragment in v.message for v in report.violations), \
        [f"{v.rule}: {v}" for v in report.violations]


@pytest.mark.parametrize("module", ["os", "sys", "inspect", "gc", "ctypes", "threading", "subprocess",
                                    "multiprocessing", "concurrent.futures", "asyncio", "socket", "importlib",
                                    "builtins", "time", "numpy", "torch.cuda", "torch.utils.cpp_extension",
                                    "triton.runtime"])
def test_imports_outside_the_allow_list(module):
    for line in (f"import {module}", f"from {module} import x as y"):
        report = check_source(f"{line}\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    pass\n")
        assert [v.rule for v in report.violations] == ["import"], line


def test_violation_names_its_line():
    report = check(model("return torch.softmax(x, -1)"))
    (violation,) = report.violations
    assert violation.line == 8 and str(violation).startswith("line 8: ")


def test_model_new_contract():
    assert "no top-level" in str(check_source("import torch\n").violations[0])
    subclass = check("class Model(nn.Module):\n    pass\n\n\nclass Middle(Model):\n    pass\n\n\n"
                     "class ModelNew(Middle):\n    pass\n")
    assert any("subclasses the reference Model" in v.message for v in subclass.violations)
    inherit_layer = check("class ModelNew(nn.Linear):\n    pass\n")
    assert any("inherits torch.nn.Linear" in v.message for v in inherit_layer.violations)
    tensor_sub = check("class Lazy(torch.Tensor):\n    pass\n\n\n" + model("return x"))
    assert any("tensor subclasses" in v.message for v in tensor_sub.violations)
    dunder = check(model("return x") + "\n    def __del__(self):\n        pass\n")
    assert any("`__del__`" in v.message for v in dunder.violations)


def test_layer_holders_are_free_but_calling_them_is_library_compute():
    holder = model("return self.fc.weight.sum_to_size(1) if False else x", "self.fc = nn.Linear(4, 4)")
    assert not [v for v in check(holder).violations if "nn.Linear" in v.message]
    called = model("return self.fc(x)", "self.fc = nn.Linear(4, 4)")
    assert any("calls nn.Linear (self.fc)" in v.message for v in check(called).violations)
    via_forward = model("return self.fc.forward(x)", "self.fc = nn.Linear(4, 4)")
    assert any("calls nn.Linear" in v.message for v in check(via_forward).violations)


def test_init_may_compute_parameters_but_not_reach_forbidden_apis():
    init = model("return x", "self.w = nn.Parameter(torch.randn(4, 4) @ torch.eye(4))")
    assert check(init).violations == []
    compiled = model("return x", "self.f = torch.compile(nn.Identity())")
    assert any("torch.compile" in v.message for v in check(compiled).violations)


def test_library_policy_allows_named_families_only():
    conv = model("return F.conv2d(x, self.w)", "self.w = nn.Parameter(torch.randn(4, 3, 3, 3))")
    assert any(v.rule == "library" for v in check(conv).violations)
    assert check(conv, library=["conv2d"]).violations == []
    matmul = model("return x @ x.t()")
    assert check(matmul, library=["matmul"]).violations == []
    assert any("allows only: conv2d" in v.message for v in check(matmul, library=["conv2d"]).violations)


def test_syntax_error_is_reported_not_raised():
    report = check_source("class ModelNew(:\n")
    assert report.syntax_error and report.violations[0].line == 1
