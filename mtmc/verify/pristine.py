"""Keyed checksums of the inputs each candidate call receives (docs/design.md, Verification step 3
and the S21 row): were they the reference's, bit for bit?

The candidate's child keeps pristine copies of the case inputs and the timing sets (case_io.py) and hands
each call its own copy; the timing loop restores its buffers from the sets. Those pristine copies live in
the candidate's own process and GPU context: a kernel that writes outside its buffers, or Python that
finds them, could change one (an answer precomputed into it, inputs that make a cheap output right, a
mutation mirrored so that its copy still compares equal, S7). So the child checks what every call
received, just before the call (each timed call's freshly restored buffers included), and a case's
inputs after each of its calls; the main process holds those values to the ones the reference job
computed on its own inputs with the same key. A changed copy shows at the next call that reads it,
wherever it waits (device or host) and however it was changed; one changed and put back between two
reads did nothing to any call.

The checksum: a tensor's bytes as int16 words, in chunks of WORDS; per chunk two sums of the words
times weights drawn in [0, 2^16) from the key (exact in int32 products and int64 sums: |word * weight|
< 2^31, a chunk's sum < 2^51; the same integers on any device), then the sequence of sums folded by a
polynomial hash mod 2^127 - 1 at a point drawn from the key. A change made without the key passes with
probability at most 2^-32 + (number of sums) / 2^127: in a chunk with a changed word j, each row's sum
stays the same for at most one of the 2^16 values of its weight at j; sums that differ make the
polynomials differ. A plain or fixed-weight sum would not do: a change and its compensation in another
word is free to make there.

The key is the reference's (trusted.py draws it; it never enters the inputs file). Its weights wait in
host memory; each check copies them to the GPU after a device-wide sync (no candidate kernel runs
during a check) and zeroes that copy, its product buffer and its sums, each block's too, before
returning (each block's were left until verifier 2.9: of words a candidate chose, a block of one word
each would show their weights; output_seals.py checks outputs, words the candidate chooses, with a
key of their own). The sums run in two stages of at most SPAN values an output into tensors of our
own, zeroed too (verifier 2.11): one reduction of 2^20 values an output split each over thread blocks,
whose partial sums PyTorch's CUDA reduction keeps in a workspace it frees unzeroed (from its launch
heuristics; not observed on a GPU). The weights are the key's SHAKE-256 stream (2.11; torch's MT19937
before, whose state ~1,250 outputs give away): ~22 ms of CPU per key, one key per InputCheck.

Cost (estimate, untimed): a check reads the tensor once (2 B a word) and writes and reads its int32
products once (8 B a word): about 9x the tensor's bytes of memory traffic, ~45 ms for a 16 GiB input set
on an H100 (3.35 TB/s), plus ~5 ms of Python folding its 16 Ki sums; a set of a few MB costs ~0.1 ms.
A verdict pays one check per call before it and one after each checked case's call: on KernelBench's
45_Average_Pooling_2D (one 16 GiB timed set) ~0.5 s over the checked calls, and each timing-loop rep
~45 ms more outside the timed region, so its 2 s budget holds fewer reps.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

import torch

PRIME = 2**127 - 1  # a Mersenne prime: the field of the polynomial hash
WORDS = 1 << 20  # int16 words a chunk: the weights' length (two rows of int32, 8 MiB)
BLOCK = 64  # chunks multiplied at once: 128 MiB of a tensor, a 512 MiB product buffer
SPAN = 1024  # values an output of either summing stage reduces (one thread block's, on a GPU)


def new_key() -> int:
    """A reference's secret checksum key (trusted.py)."""
    return secrets.randbits(63)


class InputCheck:
    """The keyed checksum of a list of inputs (module docstring)."""

    def __init__(self, key: int) -> None:
        self._weights = key_weights(key)
        seed = hashlib.sha256(f"mtmc-input-check:{key}".encode()).digest()
        self._point = int.from_bytes(seed, "big") % PRIME

    def values(self, inputs: list[Any]) -> list[Any]:
        """Per input: [shape, dtype, checksum] of a tensor, the repr of anything else (a Python list
        is handed to the candidate as it is: a change made in it in place shows here too)."""
        return [self.tensor(v) if isinstance(v, torch.Tensor) else repr(v) for v in inputs]

    def tensor(self, tensor: torch.Tensor, device: torch.device | None = None) -> list[Any]:
        """[shape, dtype, checksum]; the sums are made on `device` (default: the tensor's), a host
        tensor's blocks moved there one at a time (the main process checks GB-sized outputs on its GPU:
        output_seals.py)."""
        words, tail = _words(tensor)
        sums = self._sums(words, device or words.device) if words.numel() else []
        return [list(tensor.shape), str(tensor.dtype), _fold(sums + tail, self._point)]

    def _sums(self, words: torch.Tensor, device: torch.device) -> list[int]:
        """Two weighted sums per chunk of `words`, in order."""
        if words.device.type == "cuda":
            torch.cuda.synchronize(words.device)  # device-wide: every kernel the candidate launched is done
        weights = self._weights[:, :min(WORDS, words.numel())].to(device)
        buffer = torch.empty(2 * min(words.numel(), BLOCK * WORDS), dtype=torch.int32, device=device)
        sums = [_weighted(rows.to(device), weights, buffer) for rows in _blocks(words)]
        values = torch.cat(sums)
        out = values.tolist()
        for part in (values, buffer, *sums):  # each block's sums too (module docstring)
            part.zero_()
        if device.type != "cpu":
            weights.zero_()  # a device copy (on the CPU the slice is the kept weights themselves)
        return out


def key_weights(key: int) -> torch.Tensor:
    """[2, WORDS] int32 weights in [0, 2^16): the key's SHAKE-256 stream read as 16-bit words. A
    cryptographic stream: weights a candidate reads (a few at positions it chose, say) tell it
    nothing of the others. Until verifier 2.11 torch's generator (MT19937) drew them, whose whole
    state, so every weight, follows from ~1,250 of its outputs. ~22 ms of CPU per key (4 MiB;
    MT19937 took ~5)."""
    stream = hashlib.shake_256(f"mtmc-input-check-weights:{key}".encode()).digest(4 * WORDS)
    words = torch.frombuffer(bytearray(stream), dtype=torch.int16).to(torch.int32)
    return words.bitwise_and_(0xFFFF).view(2, WORDS)


def _words(tensor: torch.Tensor) -> tuple[torch.Tensor, list[int]]:
    """The tensor's bytes as int16 words, and the odd last byte (if any) as a value of its own."""
    data = tensor.detach().resolve_conj().resolve_neg()
    raw = (data if data.is_contiguous() else data.contiguous()).reshape(-1).view(torch.uint8)
    if raw.storage_offset() % 2:
        raw = raw.clone()  # int16 words need an even byte offset (a slice of a byte tensor)
    even = raw.numel() - raw.numel() % 2
    return raw[:even].view(torch.int16), raw[even:].tolist()


def _blocks(words: torch.Tensor) -> list[torch.Tensor]:
    """`words` as [chunks, 1, WORDS] blocks of at most BLOCK chunks, the last partial chunk [1, 1, n]."""
    whole = words.numel() // WORDS
    blocks = [words[start * WORDS:min(whole, start + BLOCK) * WORDS].view(-1, 1, WORDS)
              for start in range(0, whole, BLOCK)]
    if words.numel() % WORDS:
        blocks.append(words[whole * WORDS:].view(1, 1, -1))
    return blocks


def _weighted(rows: torch.Tensor, weights: torch.Tensor, buffer: torch.Tensor) -> torch.Tensor:
    """Each chunk's two weighted sums, [chunks * 2]: the int32 products land in `buffer` (zeroed by
    the caller: with the inputs known they would give the weights away). Summed in two stages of at
    most SPAN values an output, into tensors of our own that are zeroed here: one long reduction
    splits each output over thread blocks, and PyTorch's CUDA reduction then keeps their partial
    sums in a workspace of the caching allocator's that it frees unzeroed (verifier 2.11)."""
    chunks, _, length = rows.shape
    products = buffer[:chunks * 2 * length].view(chunks, 2, length)
    torch.mul(rows, weights[:, :length], out=products)
    whole = length - length % SPAN
    partial = products.new_empty((chunks, 2, whole // SPAN), dtype=torch.int64)
    torch.sum(products[..., :whole].view(chunks, 2, -1, SPAN), dim=3, dtype=torch.int64, out=partial)
    tail = products[..., whole:].sum(dim=2, dtype=torch.int64)  # fewer than SPAN values
    sums = partial.sum(dim=2)
    sums += tail  # in place: no unzeroed temporary of the sums
    partial.zero_()
    tail.zero_()
    return sums.reshape(-1)


def _fold(values: list[int], point: int) -> int:
    """The polynomial hash of `values` (their count first) at `point`, mod PRIME."""
    acc = len(values)
    for value in values:
        acc = (acc * point + value) % PRIME
    return acc


# ------------------------------------------------------------------------------------------------
# the candidate job's record, and the main process's judgement of it
# ------------------------------------------------------------------------------------------------
class CallInputs:
    """What the candidate's calls received (before each call) and left (after each checked call), by
    case index: the candidate job reports it, the main process holds it to the reference's values."""

    def __init__(self, key: int, cases: list[dict[str, Any]]) -> None:
        self.check = InputCheck(key)
        self._index = {id(case): i for i, case in enumerate(cases)}
        self.received: dict[int, list[Any]] = {}
        self.returned: dict[int, list[Any]] = {}

    def before(self, case: dict[str, Any], inputs: list[Any]) -> list[Any]:
        """Records what a call of `case` is about to receive; returns `inputs`."""
        _add(self.received, self._index[id(case)], self.check.values(inputs))
        return inputs

    def after(self, case: dict[str, Any], inputs: list[Any]) -> None:
        _add(self.returned, self._index[id(case)], self.check.values(inputs))

    def report(self) -> dict[str, Any]:
        return {"received": self.received, "returned": self.returned}


class _Unchecked:
    """No record: for the child's helpers called alone (tests); the candidate job always keeps one."""

    def before(self, case: dict[str, Any], inputs: list[Any]) -> list[Any]:
        return inputs

    def after(self, case: dict[str, Any], inputs: list[Any]) -> None:
        pass


NO_AUDIT: Any = _Unchecked()


def _add(seen: dict[int, list[Any]], index: int, values: list[Any]) -> None:
    """Distinct values only: every honest call of a case gives the same."""
    kept = seen.setdefault(index, [])
    if values not in kept:
        kept.append(values)


def received_problem(expected: list[list[Any]], seen: dict[str, Any] | None) -> str:
    """'' when every call received its case's inputs as the reference job made them, else which case
    did not (the pristine copy it was copied from had changed)."""
    received, returned = (seen or {}).get("received") or {}, (seen or {}).get("returned") or {}
    missing = [i for i in range(len(expected)) if i not in received or i not in returned]
    if missing:
        return f"the candidate's process reported no input checks for case(s) {missing}: tampering (T3/S19)"
    for index, values in sorted(received.items()):
        if any(v != expected[index] for v in values):
            return (f"case {index}: a call received inputs other than the reference's. The verifier's own "
                    "copy of them (a case's pristine inputs or a timing set, kept in the candidate's "
                    "process) was changed while the candidate ran: tampering with the harness (S21)")
    return ""


def mutated_inputs(expected: list[Any], returned: list[list[Any]]) -> list[int]:
    """The inputs a case's calls left other than the reference made them (S7), by position."""
    if any(len(after) != len(expected) for after in returned):
        return list(range(len(expected)))
    return sorted({i for after in returned for i, (a, b) in enumerate(zip(after, expected, strict=True))
                   if a != b})
