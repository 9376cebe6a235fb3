"""The `variants` suite (mtmc/tasks/variants.py): deterministic, split by family, and every variant a
valid task: it loads, runs at its CPU sizes without being degenerate, fits a GPU at its own sizes, and the
template coder ports it; a sample also passes the real verifier on the CPU interpreter."""

from collections import Counter, defaultdict

import pytest
import torch

from mtmc.jobs.port_coverage import port_row
from mtmc.strategies import PORT
from mtmc.tasks import TaskError, load_suite, load_task, summarize
from mtmc.tasks.variant_specs import SPECS
from mtmc.tasks.variants import EVAL_FAMILIES, variant_names, variant_task
from tests.tasks.test_builtin import MAX_CPU_ELEMENTS, MAX_GPU_BYTES, differs, forward

NAMES = variant_names()


@pytest.fixture(scope="module")
def tasks():
    return {t.name: t for t in load_suite("variants")}


def test_about_a_hundred_variants_split_by_family(tasks):
    assert 90 <= len(tasks) <= 120
    sides = defaultdict(set)
    for t in tasks.values():
        sides[t.meta["family"]].add(t.split)
        assert t.split == ("eval" if t.meta["family"] in EVAL_FAMILIES else "train"), t.name
    assert all(len(s) == 1 for s in sides.values()), sides  # a family never straddles the split
    splits = Counter(t.split for t in tasks.values())
    assert 0.25 <= splits["eval"] / len(tasks) <= 0.45, splits
    evals = sorted(n for n, t in tasks.items() if t.split == "eval")
    assert [t.name for t in load_suite("variants:eval")] == evals


def test_generation_is_deterministic_and_each_variant_differs_from_its_builtin(tasks):
    for name in NAMES:
        assert variant_task(name).source == tasks[name].source
    for spec in SPECS:
        if not spec.constants:
            # a reduction-dim edit alone: the prompt's summary (mtmc/lm_policy.py) names no dims, so these
            # read as their built-in there; their programs differ (the reduced dim's stride)
            assert spec.replace and all(new in tasks[spec.name].source for _, new in spec.replace)
            continue
        variant, base = summarize(tasks[spec.name]), summarize(load_task(spec.base))
        # what the planner's prompt shows: sizes, dtypes, ops, FLOPs
        seen = (variant.inputs, variant.outputs, variant.ops, variant.flops)
        assert seen != (base.inputs, base.outputs, base.ops, base.flops), f"{spec.name} reads as {spec.base}"


def test_kinds_of_variant_are_all_there():
    dtypes = {str(s.constants["dtype"]) for s in SPECS if "dtype" in s.constants}
    assert dtypes == {"torch.float16", "torch.bfloat16", "torch.float32"}
    assert sum(bool(s.replace) for s in SPECS) >= 8  # reduction dims (and a 1x1 conv)
    assert {"small_m", "tall_skinny", "small_k"} <= {s.tag for s in SPECS}


def test_a_variant_loads_by_name_and_a_bad_name_says_so():
    task = load_task("matmul_fp16__small_m")
    assert task.module().M == 64 and task.meta["variant_of"] == "matmul_fp16"
    assert task.sizes("cuda") == [{}, {"M": 64, "N": 65533, "K": 16381}]
    with pytest.raises(TaskError, match="not a task file"):
        load_task("matmul_fp16__no_such_variant")


def test_bf16_variants_check_their_logic_in_fp16_on_the_cpu(tasks):
    bf16 = [t for t in tasks.values() if t.module().__dict__.get("dtype") == torch.bfloat16]
    assert bf16
    for t in bf16:
        assert all(s["dtype"] == torch.float16 for s in t.sizes("cpu")), t.name


def one_per_builtin() -> list[str]:
    return sorted({spec.base: spec.name for spec in reversed(SPECS)}.values())


@pytest.mark.parametrize("which", ["one_per_builtin", pytest.param("all", marks=pytest.mark.slow)])
def test_variants_run_at_their_cpu_sizes_and_depend_on_their_inputs(tasks, which):
    # all of them take ~10 s on two busy cores: the default run takes the first variant of each built-in
    for task in (tasks[n] for n in (one_per_builtin() if which != "all" else NAMES)):
        shapes = set()
        for sizes in task.sizes("cpu"):
            model, inputs, out = forward(task, 0, 0, sizes)
            shapes.add(tuple(tuple(x.shape) for x in inputs))
            tensors = [*inputs, *model.parameters(), *model.buffers()]
            assert all(t.dtype != torch.bfloat16 for t in tensors), (task.name, sizes)
            assert max(t.numel() for t in tensors) <= MAX_CPU_ELEMENTS, (task.name, sizes)
            assert isinstance(out, torch.Tensor) and torch.isfinite(out).all(), (task.name, sizes)
            assert differs(out, forward(task, 0, 1, sizes)[2]), f"{task.name} ignores its inputs at {sizes}"
        assert len(shapes) == len(task.sizes("cpu")), f"{task.name}: each CPU size must be another shape"


def test_every_variant_fits_a_gpu_at_its_sizes(tasks):
    for task in tasks.values():
        for sizes in task.sizes("cuda"):
            summary = summarize(task, sizes)
            assert summary.flops > 0 and summary.bytes_min > 0, task.name
            gb = summary.bytes_min / 1e9
            assert summary.bytes_min < MAX_GPU_BYTES, f"{task.name}: {gb:.1f} GB at {sizes}"


def test_the_template_coder_ports_every_variant(tasks):
    failed = [(row["task"], row["reason"]) for row in map(port_row, tasks.values()) if row["port"] != "ok"]
    assert not failed


# one of each kind of change: a reduction dim (in an eval family, and not), a dtype, small-M, tall-skinny,
# groups. Slow: starting the verifier's workers alone takes ~10 s on two busy cores.
SAMPLE = ["softmax_lastdim__dim0", "sum_lastdim__dim0", "leaky_relu_bf16__fp32", "matmul_fp32__small_m",
          "matmul_fp16__tall_skinny", "groupnorm__instance"]


@pytest.fixture(scope="module")
def verifier():
    from mtmc.verify import InterpreterVerifier

    with InterpreterVerifier(timeout_s=180.0, seeds=1) as v:
        yield v


@pytest.mark.slow
@pytest.mark.parametrize("name", SAMPLE)
def test_the_port_passes_the_interpreter_verifier(name, verifier):
    from coders.template import TemplateCoder

    task = load_task(name)
    verdict = verifier.verify(task, TemplateCoder().apply(task, None, PORT))
    assert verdict.ok, f"{name}: {verdict.status} {verdict.message[:300]}"
