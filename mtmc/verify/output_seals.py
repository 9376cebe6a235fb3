"""Keyed digests of the candidate's outputs, taken right after each call (docs/design.md, Verification
step 3 and the S22 row): are the outputs judged, and those later calls are held to, what the calls
returned?

Between two candidate calls the candidate's child holds outputs of earlier calls in the candidate's own
process: a case's first outputs, which its repeats were compared with (the candidate's own tensors,
which it can keep), their host copies for the main process, the untimed outputs on each timing set
(device clones that every timed call was compared with, at an address the caching allocator hands out
predictably) and their host copies, and the state check's snapshot of what the model keeps. A kernel
writing through a raw pointer, or Python that finds them, could change one after its call: a repeat's
cheap answer copied into the first call's outputs, a timed call's answer (TF32 dots, skipped work)
copied into the untimed output it is compared with, an answer computed late written into a host copy
the main process then judges, a result cache's new entry copied into the state check's snapshot.

So each call's outputs are digested right after it (pristine.py's keyed checksum, after a device-wide
sync, before any more candidate code runs), and every later use compares digests or checks one: a
repeat against its case's first call (no output is kept for it), the untimed output a timed call was
compared with (checked after each comparison: `hold`), the state check's kept tensors (child.py); and
the main process digests every output that reached it and holds it to the digest of the call it came
from (`outputs_problem`). Equal digests mean equal bytes: a repeat whose NaNs or zeros differ in sign
or payload differs, where the value comparison it replaces (bitwise.same) let it pass.

What this does not stop: code that reaches the harness's own objects (its frames, gc: refused
statically, S19) can read the key's weights and rewrite these records, as it can pristine.py's. The
digests hold against writes into tensor memory (device memory from a kernel; on the CPU interpreter a
kernel's raw pointers reach host tensors too), and against Python that changes the tensors it finds.

The key is derived from the reference's inputs' key (the main process's secret, trusted.py) through
SHA-256: outputs are words the candidate chooses, so were weights to leak through the reduction's
workspace (pristine.py), the inputs' key would stay unknown.

Cost (estimate, untimed; pristine.py's figures): 9x the digested bytes of memory traffic plus each
check's copy of at most 8 MiB of weights to the GPU. Per candidate job: one digest of each call's
outputs (checked calls, untimed calls; a repeat's replaces its comparison with the first call: 2x on
the device, or the first's host copy sent over PCIe for outputs past 256 MiB), two of the state check's
kept tensors (replacing a clone and a comparison), and one of the held untimed output per timed call,
outside the timed region (~0.2 ms for 64 MiB of outputs on an H100, ~6 ms for 2 GiB; plus the weights'
copy, ~1 ms where the outputs pass 2 MiB). In the main process, every output that came back once more
to its GPU and digested there (host memory to the GPU: ~0.1 s a GiB at pageable rates).
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

import torch

from mtmc.verify.pristine import InputCheck
from mtmc.verify.transport import host_copy

LARGE = 1 << 16  # elements; smaller outputs are digested on the host in the main process (well under 1 ms)


def output_key(check_key: int) -> int:
    """The outputs' key, from the reference's inputs' key: one never gives the other away."""
    seed = hashlib.sha256(f"mtmc-output-seal:{check_key}".encode()).digest()
    return int.from_bytes(seed[:8], "big") >> 1


class OutputSeals:
    """The candidate job's record of each call's outputs, digested right after the call."""

    def __init__(self, check_key: int) -> None:
        self.check = InputCheck(output_key(check_key))
        self.firsts: dict[int, list[Any] | None] = {}  # case index -> its first call's digest
        self.seconds: dict[int, list[Any] | None] = {}  # case index -> the repeat that differed (it travels)
        self.untimed: dict[int, list[Any] | None] = {}  # timing set -> its untimed call's digest
        self.changed = 0  # timed calls compared with an untimed output that was no longer the call's

    def digest(self, outputs: list[Any]) -> list[Any] | None:
        return digest(self.check, outputs)

    def first(self, index: int, digest: list[Any] | None) -> None:
        self.firsts[index] = digest

    def repeats_first(self, index: int, digest: list[Any] | None) -> bool:
        """Whether a repeat of case `index` returned its first call's outputs, bit for bit."""
        return digest is not None and digest == self.firsts.get(index)

    def second(self, index: int, digest: list[Any] | None) -> None:
        self.seconds[index] = digest

    def untimed_call(self, k: int, outputs: list[Any]) -> None:
        self.untimed[k] = self.digest(outputs)

    def unless_first(self, k: int, index: int, outputs: list[torch.Tensor]) -> list[torch.Tensor] | None:
        """Set k's untimed outputs on the host, or None when their digest is case `index`'s first call's
        (set k holds its inputs): that case's check covers them. By digests: both calls' outputs were
        in the candidate's reach since."""
        digest = self.untimed.get(k)
        if digest is not None and digest == self.firsts.get(index):
            return None
        return [host_copy(o) for o in outputs]

    def hold(self, k: int, outputs: list[Any]) -> None:
        """After a timed call was compared with `outputs`, set k's untimed output: was it still that?"""
        if self.digest(outputs) != self.untimed.get(k):
            self.changed += 1

    def report(self) -> dict[str, Any]:
        return {"firsts": self.firsts, "seconds": self.seconds, "untimed": self.untimed,
                "changed": self.changed}


# ------------------------------------------------------------------------------------------------
# the main process's judgement: every output that came back, against its call's digest
# ------------------------------------------------------------------------------------------------
def outputs_problem(check_key: int, result: dict[str, Any], timing_sets: list[int] | None) -> str:
    """'' when every output that came back is what its call returned and no timed call was compared
    with a changed untimed output, else which was not (S22)."""
    seen = result.get("outputs_seen")
    if not isinstance(seen, dict):
        return "the candidate's process reported no output digests: tampering (T3/S19)"
    check = _main_check(output_key(check_key))
    for index, got in enumerate(result["cases"]):
        if got["type_errors"]:
            continue  # nothing travelled; the case fails on its types (S13)
        if digest(check, got["outputs"], True) != seen["firsts"].get(index):
            return _changed(f"case {index}: its outputs")
        second = got.get("second_outputs")
        if second is not None and digest(check, second, True) != seen["seconds"].get(index):
            return _changed(f"case {index}: the outputs of a repeat that differed")
    for k, (index, outputs) in enumerate(zip(timing_sets or [], result.get("timing_outputs") or [],
                                             strict=False)):
        # None: the untimed outputs were the case's first call's and did not travel
        judged = seen["firsts"].get(index) if outputs is None else digest(check, outputs, True)
        if judged != seen["untimed"].get(k):
            return _changed(f"timing input set {k}: its untimed outputs")
    if seen["changed"]:
        return (f"{seen['changed']} timed call(s) were compared with an untimed output that had changed "
                "since its call returned: the timed calls' answer written into what they are held to, in "
                "the candidate's process (S22)")
    return ""


def _changed(what: str) -> str:
    return (f"{what} that came back are not those its call returned: changed after the call, in the "
            "candidate's process (an earlier call's outputs rewritten by a later one, S22)")


@functools.lru_cache(maxsize=4)
def _main_check(key: int) -> InputCheck:
    return InputCheck(key)  # its weights stay in the main process, one set per reference


def digest(check: InputCheck, outputs: list[Any], large_on_gpu: bool = False) -> list[Any] | None:
    """[shape, dtype, checksum] per output; None unless each is exactly a torch.Tensor (a subclass's
    methods are the candidate's code, and the type check refuses it anyway). `large_on_gpu` (the main
    process): GB-sized host outputs summed on the GPU, one block at a time."""
    if not all(type(o) is torch.Tensor for o in outputs):
        return None
    return [check.tensor(o, _device(o) if large_on_gpu else None) for o in outputs]


def _device(tensor: torch.Tensor) -> torch.device | None:
    if tensor.numel() >= LARGE and torch.cuda.is_available():
        return torch.device("cuda")
    return None
