"""The verifier's contract: typed verdicts, caching, hidden seeds, task errors raise loudly."""

import json

import pytest
from corpus_index import CORPUS, HONEST, TASKS

from mtmc.program import Program
from mtmc.tasks import Task, load_task
from mtmc.verify import Status, Verdict, VerifierError, make_verifier
from mtmc.verify import verifier as verifier_module
from mtmc.verify.cache import VerdictCache


def honest_softmax():
    return load_task(TASKS / "softmax.py"), Program((HONEST / "softmax.py").read_text())


def test_verdict_is_serializable(verifier):
    verdict = verifier.verify(*honest_softmax())
    data = json.loads(json.dumps(verdict.to_dict()))
    assert Verdict.from_dict(data) == verdict
    assert verdict.verifier_version == verifier_module.VERIFIER_VERSION and verdict.wall_s > 0


def test_a_verdict_says_where_the_reference_jobs_time_went(verifier):
    """Per stage of the task's reference job, summed over its cases (large tasks spend minutes there:
    BENCHMARKS.md, issue 25's verdict latency); "reference" is this verdict's own wait for it."""
    phases = verifier.verify(*honest_softmax()).phases_s
    stages = {k.removeprefix("reference_job.") for k in phases if k.startswith("reference_job.")}
    assert {"inputs", "forward", "eager_errors", "reference_errors", "to_host", "fingerprint",
            "save"} <= stages
    assert all(v >= 0 for v in phases.values()) and phases["reference_job.forward"] > 0


def test_verdicts_are_cached(verifier, tmp_path, monkeypatch):
    cache = VerdictCache(tmp_path / "verdicts.sqlite")
    monkeypatch.setattr(verifier.engine, "cache", cache)
    task, program = honest_softmax()
    first = verifier.verify(task, program)
    monkeypatch.setattr(verifier.engine, "pool", None)  # a cache hit must not touch the workers
    assert verifier.verify(task, program) == first and len(cache) == 1
    edited = Program(program.source + "\n# a comment is a different program\n")
    with pytest.raises(AttributeError):
        verifier.verify(task, edited)


def test_infrastructure_failures_are_not_cached(verifier, tmp_path, monkeypatch):
    cache = VerdictCache(tmp_path / "verdicts.sqlite")
    monkeypatch.setattr(verifier.engine, "cache", cache)
    monkeypatch.setattr(verifier.engine, "_judge",
                        lambda task, program: Verdict(Status.CRASH, "worker died",
                                                      flags=["infrastructure: x"]))
    verifier.verify(*honest_softmax())
    assert len(cache) == 0


def test_seeds_are_secret_per_verifier_unless_given(verifier):
    assert verifier.engine.settings.seed is None
    task, _ = honest_softmax()
    cases = verifier.engine.trusted.reference(task).cases
    assert len(cases) == 2 * 3  # two CPU sizes x three seeds
    assert len({c["model_seed"] for c in cases}) == 3
    assert all(c["input_seed"] != c["model_seed"] for c in cases)


def test_broken_task_raises(verifier):
    broken = Task(name="broken", source=(TASKS / "softmax.py").read_text().replace(
        "return torch.softmax(x, dim=-1)", "raise ValueError('the task itself is broken')"))
    with pytest.raises(VerifierError, match="the task itself is broken"):
        verifier.verify(broken, honest_softmax()[1])


def test_make_verifier_picks_backend_and_refuses_foreign_arguments(monkeypatch):
    made = {}

    class Fake:
        def __init__(self, seeds=3, timeout_s=1.0):
            made.update(seeds=seeds, timeout_s=timeout_s)

    monkeypatch.setattr(verifier_module, "InterpreterVerifier", Fake)
    monkeypatch.setattr(verifier_module.torch.cuda, "is_available", lambda: False)
    assert isinstance(make_verifier("auto", seeds=5), Fake)
    assert made == {"seeds": 5, "timeout_s": 1.0}
    made.clear()
    with pytest.raises(TypeError) as info:  # a GPU setting on the CPU backend: not silently dropped
        make_verifier("auto", seeds=5, triton_share_min=0.7, floor_margin=0.5)
    assert str(info.value) == ("make_verifier: the interpreter backend (Fake) takes no floor_margin, "
                               "triton_share_min; it takes seeds, timeout_s")
    assert not made
    with pytest.raises(ValueError, match="backend='gpu': choose auto, local, interpreter"):
        make_verifier("gpu")


def test_gpu_rule_refuses_foreign_device_kernels_unless_the_task_allows_a_library():
    engine = object.__new__(verifier_module.Engine)  # the judging step alone: no pool, no device
    engine.settings = verifier_module.Settings()
    profile = {"share": {"share": 0.9, "foreign_kernels": ["void cunn_SoftMaxForward<4, float>()"]}}
    verdict = Verdict(Status.OK)
    engine._judge_gpu(load_task(TASKS / "softmax.py"), None, profile, verdict)
    assert verdict.status == Status.REJECTED and "cunn_SoftMaxForward" in verdict.message
    library = Verdict(Status.OK)
    engine._judge_gpu(load_task(TASKS / "conv_relu.py"), None, profile, library)
    assert library.status == Status.OK


def test_judge_refuses_results_for_fewer_cases_than_the_reference():
    from mtmc.verify.static import StaticReport

    engine = object.__new__(verifier_module.Engine)  # the judging step alone: no pool
    engine.settings = verifier_module.Settings()
    case = {"sizes": {}, "model_seed": 0}
    reference = verifier_module.Reference([case, case], [{}, {}], None, "")
    result = {"launches": {"kernel": 2}, "cases": [{"launches": [1, 1]}], "tampered": [],
              "threads_started": 0}
    verdict = engine._judge_run(load_task(TASKS / "softmax.py"), StaticReport(), reference, result)
    assert verdict.status == Status.REJECTED and "results for 1 of 2 cases" in verdict.message


def test_local_verifier_hands_its_resident_share_to_every_worker(monkeypatch):
    """`resident_share` reaches each GPU worker's environment, where case_io.resident_budget reads it;
    a share outside 0..1 is refused before any GPU is looked for."""
    pools = []

    class FakePool:
        def __init__(self, device, envs, *args):
            pools.append(envs)

    two_gpus = ([("0", None), ("1", None)], "")
    monkeypatch.setattr(verifier_module, "_gpu_layout", lambda gpus, per_gpu, timing, lock: two_gpus)
    monkeypatch.setattr(verifier_module, "WorkerPool", FakePool)
    monkeypatch.setattr(verifier_module, "Engine", lambda pool, settings, device, cache: None)
    monkeypatch.setenv("MTMC_GPU_LOCK", "1")  # left by someone: not inherited outside one-GPU mode
    verifier_module.LocalVerifier(resident_share=0.5)
    assert [env["MTMC_RESIDENT_SHARE"] for env in pools[0]] == ["0.5", "0.5"]
    assert "MTMC_GPU_LOCK" not in pools[0][0]
    verifier_module.LocalVerifier()
    assert pools[1][0]["MTMC_RESIDENT_SHARE"] == "0.125"  # case_io.RESIDENT_SHARE by default
    verifier_module.LocalVerifier(gpu_lock=True, workers_per_gpu=12)  # case_io.one_gpu_mode reads it
    assert [env["MTMC_GPU_LOCK"] for env in pools[2]] == ["1", "1"]
    with pytest.raises(ValueError, match="resident_share=1.5"):
        verifier_module.LocalVerifier(resident_share=1.5)


@pytest.fixture(scope="module")
def large_plan_verifier():
    """A 2000-byte budget: the test tasks' first CPU sizes (3200-4000 bytes a side) take the
    large-case plan (trusted.py)."""
    with make_verifier("interpreter", seeds=2, timeout_s=60.0, strict=True, large_case_bytes=2000) as v:
        yield v


def test_the_verdict_names_the_large_case_plan_and_a_shape_specialised_kernel_still_fails(
        large_plan_verifier):
    """With a small byte budget, pointwise's cases take the large-case plan (trusted.py): the verdict
    says so, and a candidate right only at the declared sizes fails at the drawn small size."""
    task = load_task(TASKS / "pointwise.py")
    honest = (HONEST / "pointwise.py").read_text()
    specialised = honest.replace("n = x.numel()", "n = x.numel() if x.numel() >= 257 else 1")
    ok = large_plan_verifier.verify(task, Program(honest))
    bad = large_plan_verifier.verify(task, Program(specialised))
    assert ok.ok and "large-case plan: 1 seed at the declared size" in ok.message, ok.message
    assert any(f.startswith("large_case_plan") for f in ok.flags)
    assert bad.status == Status.INCORRECT, bad.message


def test_the_large_case_plan_still_checks_kept_state_at_the_small_size(large_plan_verifier):
    """The declared size has one seed on the large-case plan, so the state check (two seeds of one
    size: child._state_pair) runs on the small size's: a result cache kept on the device (S11), whose
    repeats on the same inputs all agree, is still refused. Verifier 2.5 skipped the check there."""
    task = load_task(TASKS / "softmax.py")
    verdict = large_plan_verifier.verify(task, Program((CORPUS / "s11_device_cache.py").read_text()))
    assert any(f.startswith("large_case_plan") for f in verdict.flags), verdict.flags
    assert verdict.status == Status.REJECTED and "keeps between calls" in verdict.message, verdict.message
