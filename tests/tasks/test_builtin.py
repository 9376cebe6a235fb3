"""Built-in suite: every task loads, runs at its CPU sizes, is not degenerate (docs/design.md S8, S9, S18)."""

from collections import Counter

import pytest
import torch

from mtmc.tasks import builtin_names, load_task, summarize

NAMES = builtin_names()
FAMILIES = {"pointwise", "activation", "reduction", "softmax", "norm", "loss", "matmul",
            "linear_epilogue", "bmm_softmax", "conv", "attention"}
MAX_CPU_ELEMENTS = 20_000  # the Triton interpreter runs ~1 ms per program: keep CPU tensors tiny
MAX_GPU_BYTES = 8e9


def forward(task, model_seed, input_seed, sizes):
    model = task.make_model(seed=model_seed, sizes=sizes)
    inputs = task.make_inputs(seed=input_seed, sizes=sizes)
    with torch.no_grad():
        out = model(*inputs)
    return model, inputs, out


def differs(a, b):
    return a.shape != b.shape or not torch.allclose(a.float(), b.float(), rtol=1e-3, atol=1e-6)


def test_suite_covers_every_family_in_both_splits():
    tasks = [load_task(name) for name in NAMES]
    assert len(tasks) >= 30
    splits = Counter(t.split for t in tasks)
    assert set(splits) == {"train", "eval"}
    assert 0.55 <= splits["train"] / len(tasks) <= 0.75, splits
    by_family = {}
    for t in tasks:
        by_family.setdefault(t.meta["family"], set()).add(t.split)
    assert set(by_family) == FAMILIES
    for family, family_splits in by_family.items():
        counts = sum(t.meta["family"] == family for t in tasks)
        if counts >= 2:
            assert family_splits == {"train", "eval"}, family


@pytest.mark.parametrize("name", NAMES)
def test_metadata(name):
    task = load_task(name)
    meta = task.meta
    assert task.split in ("train", "eval")
    assert meta["family"] in FAMILIES
    doc = task.module().__doc__
    assert doc and "\n" not in doc.strip()
    cpu_sizes = task.sizes("cpu")
    assert len(cpu_sizes) >= 2 and all(cpu_sizes)
    shapes = [[tuple(x.shape) for x in task.make_inputs(0, s)] for s in cpu_sizes]
    assert len(set(map(tuple, shapes))) == len(shapes), "each CPU size must be another shape"
    assert len(meta.get("gpu_sizes", [])) == 1
    if meta["family"] == "conv":
        assert task.library_ops == ("conv2d",)


@pytest.mark.parametrize("name", NAMES)
def test_reference_runs_on_cpu_and_depends_on_inputs_and_weights(name):
    task = load_task(name)
    for sizes in task.sizes("cpu"):
        model, inputs, out = forward(task, 0, 0, sizes)
        tensors = [*inputs, *model.parameters(), *model.buffers()]
        # the interpreter cannot do bf16 arithmetic, and is slow: small fp32/fp16 tensors only
        assert all(t.dtype != torch.bfloat16 for t in tensors), sizes
        assert max(t.numel() for t in tensors) <= MAX_CPU_ELEMENTS, sizes
        assert isinstance(out, torch.Tensor) and torch.isfinite(out).all(), sizes
        if out.numel() > 1:
            flat = out.double()
            assert flat.std() > 1e-6 * (1 + flat.mean().abs()), f"near-constant output at {sizes}"
        assert differs(out, forward(task, 0, 1, sizes)[2]), f"output ignores the inputs at {sizes}"
        if any(True for _ in model.parameters()):
            assert differs(out, forward(task, 1, 0, sizes)[2]), f"output ignores the weights at {sizes}"


@pytest.mark.parametrize("name", NAMES)
def test_summary_at_full_and_gpu_sizes(name):
    task = load_task(name)
    for sizes in task.sizes("cuda"):
        summary = summarize(task, sizes)
        assert summary.flops > 0 and summary.bytes_min > 0
        assert summary.bytes_min < MAX_GPU_BYTES, f"{summary.bytes_min / 1e9:.1f} GB at {sizes}"
