"""Identity snapshots (T3): replacing any watched function is seen, restoring it is not."""

import torch

from mtmc.verify import proof


def test_replaced_timer_is_detected(monkeypatch):
    before = proof.snapshot_identities()
    assert proof.changed_identities(before) == []
    monkeypatch.setattr(torch.cuda.Event, "elapsed_time", lambda self, end: 0.0)
    monkeypatch.setattr(torch, "equal", lambda a, b: True)
    assert proof.changed_identities(before) == ["torch.cuda.Event.elapsed_time", "torch.equal"]
    monkeypatch.undo()
    assert proof.changed_identities(before) == []


def test_every_watched_name_resolves():
    import triton.runtime.interpreter  # noqa: F401  (present in every triton 3.x)

    missing = [name for name in proof.WATCHED if proof._resolve(name) is None]
    if not torch.backends.cuda.is_built():  # a CPU-only torch has no CUDA bindings to watch
        missing = [name for name in missing if name not in proof.CUDA_BUILD_ONLY]
    assert missing == []
    assert set(proof.CUDA_BUILD_ONLY) <= set(proof.WATCHED)


def test_forged_launch_counts_are_seen():
    counter = proof.LaunchCounter("candidate.py")
    counter._count("kernel")  # what the launch wrapper does
    assert counter.consistent() and counter.launches == 1
    counter.kernels["kernel"] += 1  # what a forger reaching the counter through gc does
    assert not counter.consistent()


def test_only_the_candidates_kernels_and_glue_may_run_on_the_device():
    by_name = {"softmax_kernel": 50.0, "Memcpy DtoD (Device -> Device)": 3.0, "Memset (Device)": 1.0,
               "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>()": 1.0,
               "void at::native::elementwise_kernel<128, 2, direct_copy_kernel_cuda>()": 2.0,
               "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float>()": 1.0}
    assert proof.foreign_kernels(by_name, {"softmax_kernel"}) == []
    cheats = {**by_name, "busy_kernel": 70.0, "void cunn_SoftMaxForward<4, float>()": 9.0,
              "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n": 30.0, "softmax_kernel_v2": 1.0}
    assert proof.foreign_kernels(cheats, {"softmax_kernel", "busy_kernel"}) == [
        "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n", "void cunn_SoftMaxForward<4, float>()", "softmax_kernel_v2"]


def test_census_must_stay_the_active_mode_with_no_pops():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Liar(TorchDispatchMode):  # a mode pushed over the census could answer the harness's ops
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    counter = proof.LaunchCounter("candidate.py")
    census = proof.OpCensus(counter, frozenset())
    with census:
        assert proof.census_intact(census, counter.pops) == ""
        with Liar():
            assert "no longer the active dispatch mode" in proof.census_intact(census, counter.pops)
        counter.pops += 1  # what the guard on torch's pop functions records
        assert "a dispatch mode was popped" in proof.census_intact(census, counter.pops - 1)
