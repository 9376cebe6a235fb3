"""The free-memory scrub (scrub.py, S23): which bytes of a caching-allocator snapshot it overwrites (on
fake snapshots, on the CPU), that every candidate call site scrubs right before its call on CUDA and
never on the CPU, and on a GPU that a freed block's bytes and an active block's slack come back
overwritten while live bytes do not."""

import types

import pytest
import torch

from mtmc.verify import child, scrub
from mtmc.verify.output_seals import OutputSeals
from mtmc.verify.pristine import NO_AUDIT
from mtmc.verify.scrub import FreeMemoryScrub, Scrubbed, free_ranges


def block(size, state, requested=None, address=None):
    b = {"size": size, "state": state}
    if requested is not None:
        b["requested_size"] = requested
    if address is not None:
        b["address"] = address
    return b


def segment(address, blocks, device=0, total=None):
    return {"device": device, "address": address, "total_size": total or sum(b["size"] for b in blocks),
            "blocks": blocks}


def test_inactive_blocks_are_overwritten_whole():
    seg = segment(0x1000, [block(512, "inactive"), block(1024, "active_allocated", 1024),
                           block(2048, "inactive")])
    assert free_ranges([seg]) == [(0, 0x1000, 512), (0, 0x1000 + 1536, 2048)]


def test_an_active_blocks_slack_past_its_requested_size_is_overwritten_not_its_bytes():
    seg = segment(0x1000, [block(1024, "active_allocated", 1000), block(512, "active_allocated", 512)])
    assert free_ranges([seg]) == [(0, 0x1000 + 1000, 24)]


def test_an_active_block_without_a_requested_size_is_left_whole():
    seg = segment(0x1000, [block(1024, "active_allocated"), block(512, "active_allocated", 2048),
                           block(512, "active_allocated", -1)])
    assert free_ranges([seg]) == []


def test_a_free_waiting_on_another_stream_is_free_and_an_unknown_state_is_left():
    seg = segment(0, [block(512, "active_pending_free", 100), block(512, "active_awaiting_free"),
                      block(512, "something_new")])
    assert free_ranges([seg]) == [(0, 0, 1024)]


def test_slack_and_the_free_block_after_it_merge_and_segments_and_devices_stay_apart():
    a = segment(0x10000, [block(1024, "active_allocated", 1000), block(1024, "inactive")])
    b = segment(0x10000 + 2048, [block(512, "inactive")])  # adjacent in addresses: merged too (both free)
    c = segment(0x10000 + 2560, [block(512, "inactive")], device=1)  # another device: apart
    assert free_ranges([a, b, c]) == [(0, 0x10000 + 1000, 1560), (1, 0x10000 + 2560, 512)]


def test_block_addresses_are_used_when_given_and_ranges_stay_inside_their_segment():
    seg = segment(0x1000, [block(512, "active_allocated", 512, address=0x1000),
                           block(4096, "inactive", address=0x1200)], total=1024)
    assert free_ranges([seg]) == [(0, 0x1200, 512)]  # clipped at the segment's end
    outside = segment(0x1000, [block(512, "inactive", address=0x9000)], total=512)
    assert free_ranges([outside]) == []


def test_on_the_cpu_the_scrub_never_runs():
    seen = []
    cpu = FreeMemoryScrub("cpu", snapshot=lambda: seen.append("snapshot") or [],
                          fill=lambda r: seen.append(r), synchronize=lambda d: seen.append(d))
    cpu()
    assert seen == [] and cpu.calls == 0


def test_on_cuda_it_syncs_fills_every_range_and_syncs_again():
    seen = []
    segs = [segment(0x1000, [block(1024, "active_allocated", 1000), block(512, "inactive")]),
            segment(0x9000, [block(512, "inactive")], device=1)]
    gpu = FreeMemoryScrub("cuda", snapshot=lambda: segs, fill=lambda r: seen.append(("fill", r)),
                          synchronize=lambda d: seen.append(("sync", d)))
    gpu()
    assert seen == [("sync", 0), ("sync", 1), ("fill", (0, 0x1000 + 1000, 536)), ("fill", (1, 0x9000, 512)),
                    ("sync", 0), ("sync", 1)]
    assert gpu.calls == 1 and gpu.bytes == 1048


def test_the_scrubs_functions_are_held_from_import_and_watched():
    from mtmc.verify import proof

    assert scrub._snapshot is torch.cuda.memory_snapshot and scrub._fill is torch.Tensor.fill_
    for name in ("torch.cuda.memory_snapshot", "torch._C._construct_storage_from_data_pointer",
                 "torch.Tensor.fill_", "mtmc.verify.scrub.FreeMemoryScrub.__call__",
                 "mtmc.verify.scrub.Scrubbed.before"):
        assert name in proof.WATCHED


@pytest.mark.parametrize("call", ["torch.cuda.memory_snapshot()", "torch.cuda.empty_cache()",
                                  "torch.cuda.set_per_process_memory_fraction(0.1)",
                                  "torch._C._construct_storage_from_data_pointer(0, x.device, 1)"])
def test_the_scrubs_functions_and_the_allocators_release_are_refused_to_candidates(call):
    from mtmc.verify.static import check_source

    source = ("import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
              f"    def forward(self, x):\n        y = {call}\n        return x\n")
    assert check_source(source).violations, call


# ---------------------------------------------------------------------------------------------------
# every call site: the scrub runs right before each candidate call


class Events:
    def __init__(self):
        self.log = []

    def scrub(self):
        self.log.append("scrub")

    def pairs_ok(self, calls):
        """Every forward right after a scrub."""
        return self.log == ["scrub", "forward"] * calls


def recording_model(events):
    class Model(torch.nn.Module):
        def forward(self, x):
            events.log.append("forward")
            return x * 2

    return Model


def cases(n=2):
    return [{"sizes": {"n": 4}, "model_seed": 0, "init_inputs": [], "inputs": [torch.randn(4, 3)],
             "out_meta": [[[4, 3], "torch.float32"]]} for _ in range(n)]


def test_each_checked_call_and_repeat_is_scrubbed_right_before_it():
    from mtmc.verify import proof

    events = Events()
    module = types.SimpleNamespace(ModelNew=recording_model(events))
    counter = proof.LaunchCounter("candidate.py")  # not installed: no launches to count here
    child._run_schedule(module, cases(), [1, 0, 1, 0, 0], "cpu", counter, frozenset({"mul"}),
                        Scrubbed(NO_AUDIT, events.scrub))
    assert events.pairs_ok(5), events.log


def test_the_state_checks_two_calls_are_scrubbed_right_before_them():
    events = Events()
    module = types.SimpleNamespace(ModelNew=recording_model(events))
    child._state_changes(module, cases(), "cpu", lambda model, inputs: model(*inputs),
                         Scrubbed(NO_AUDIT, events.scrub))
    assert events.pairs_ok(2), events.log


def test_the_profile_the_untimed_and_the_timed_calls_are_scrubbed_before_them(monkeypatch):
    """The timing stage's wiring, with its CUDA pieces faked on the CPU: the profile is scrubbed once
    before its three calls, each untimed call and each timed call (`loaded`, the last thing before it
    in timing.time_calls: test_timing.py checks that on a GPU) right before it."""
    events = Events()
    model_class = recording_model(events)
    sets = [[torch.randn(4, 3)] for _ in range(3)]
    data = {"cases": cases(3), "timing": {"case": 0, "sets": [0, 1, 2]}}

    def fake_profile(first, names):
        for _ in range(3):
            first()
        return {}

    def fake_time_calls(calls, input_sets, expected, exact, options, tolerances, loaded, held):
        buffers = [t.clone() for t in input_sets[0]]
        for rep in range(5):
            loaded(rep % 3, buffers)
            calls["candidate"](buffers)
            held(rep % 3)
        return {"timings": {}}

    monkeypatch.setattr(torch.cuda, "current_stream", lambda: types.SimpleNamespace(cuda_stream=0))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(child, "candidate_model", lambda module, case, device: model_class())
    monkeypatch.setattr(child, "timing_sets", lambda data, device: sets)
    monkeypatch.setattr(child, "fresh_copy", lambda inputs, device: [t.clone() for t in inputs])
    monkeypatch.setattr(child.proof, "triton_share", fake_profile)
    monkeypatch.setattr(child, "time_calls", fake_time_calls)
    class Forward:  # CallAudit's face: the census is not what this test is about
        counter = types.SimpleNamespace(streams=set(), kernels={})

        def __call__(self, model, inputs):
            return model(*inputs)

    forward = Forward()
    result = {"cases": [{"deterministic": True}]}
    child._gpu_measurements(result, None, data, forward, True, {}, True, child.PhaseClock(), None, None,
                            Scrubbed(NO_AUDIT, events.scrub), OutputSeals(0))
    assert events.log == ["scrub"] + ["forward"] * 3 + ["scrub", "forward"] * (3 + 5), events.log


# ---------------------------------------------------------------------------------------------------
# on a GPU


def bytes_at(address, length):
    storage = torch._C._construct_storage_from_data_pointer(address, torch.device("cuda", 0), length)
    return torch.empty(0, dtype=torch.uint8, device="cuda").set_(storage, 0, (length,), (1,))


@pytest.mark.gpu
def test_a_freed_blocks_bytes_and_a_live_blocks_slack_come_back_overwritten():
    keep = torch.full((1000,), 7, dtype=torch.uint8, device="cuda")  # a 1024-byte block: 24 bytes of slack
    bytes_at(keep.data_ptr() + 1000, 24).fill_(3)
    freed = torch.full((1 << 20,), 1.5, device="cuda")
    address = freed.data_ptr()
    del freed
    done = FreeMemoryScrub("cuda")
    done()
    again = torch.empty(1 << 20, device="cuda")  # in a fresh process the same block (best fit)
    assert bool(again.isnan().all()), f"same block: {again.data_ptr() == address}"
    assert bool((keep == 7).all()) and bool((bytes_at(keep.data_ptr() + 1000, 24) == 0xFF).all())
    assert done.calls == 1 and done.bytes >= 24 + (4 << 20)
