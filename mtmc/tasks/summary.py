"""What a task computes, derived by tracing its reference on meta tensors (no memory, no compute).

The summary feeds planners (which ops, how much arithmetic per byte) and the verifier's roofline
floor: no program can move fewer bytes than its inputs, weights and outputs, nor do fewer FLOPs
than the reference's matmuls and convolutions need, less the work its masks make unnecessary
(causal attention's masked half: mtmc/tasks/masked_work.py).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode, flop_registry

from mtmc.tasks.masked_work import MaskedWork
from mtmc.tasks.task import Sizes, Task, on_meta

# aten ops that only re-describe memory: they cost no arithmetic and (fused) no traffic.
_VIEW_OPS = {"view", "_unsafe_view", "reshape", "expand", "permute", "transpose", "t", "unsqueeze",
             "squeeze", "detach", "alias", "slice", "select", "as_strided", "clone", "contiguous",
             "_to_copy", "copy_", "lift_fresh", "empty", "zeros", "ones", "full", "empty_like",
             "zeros_like", "ones_like", "new_empty", "new_zeros", "t_", "split", "split_with_sizes",
             "unbind", "chunk", "flatten", "unflatten"}


@dataclass
class TensorInfo:
    shape: list[int]
    dtype: str

    @classmethod
    def of(cls, t: torch.Tensor) -> TensorInfo:
        return cls(shape=list(t.shape), dtype=str(t.dtype).removeprefix("torch."))


@dataclass
class TaskSummary:
    name: str
    ops: dict[str, int]  # aten op -> times called, in first-call order
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    params: int  # parameter + buffer elements
    flops: int  # matmul_flops (exact) + one per element for other ops (estimate)
    matmul_flops: int  # what the matmuls and convolutions need: masked places (causal attention) left out
    bytes_min: int  # inputs + weights + outputs, each touched once: the compulsory traffic
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def intensity(self) -> float:
        """FLOPs per compulsory byte: low means memory-bound."""
        return self.flops / max(self.bytes_min, 1)

    @property
    def op_names(self) -> list[str]:
        return list(self.ops)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["intensity"] = self.intensity
        return data

    def one_line(self) -> str:
        ops = ", ".join(self.op_names) or "-"
        return (f"{_si(self.flops)}FLOP, {_si(self.bytes_min)}B, {self.intensity:.1f} FLOP/B, ops: {ops}")


class _OpRecorder(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()
        self.elementwise_flops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        if name not in _VIEW_OPS:
            self.calls[name] += 1
            # matmuls and convolutions are counted exactly by FlopCounterMode; everything else is
            # estimated at one FLOP per element of its largest operand.
            if func.overloadpacket not in flop_registry:
                self.elementwise_flops += _largest_numel(args, out)
        return out


def summarize(task: Task, sizes: Sizes | None = None) -> TaskSummary:
    """Trace the reference at `sizes` (the file's own sizes by default) on the meta device."""
    masks = MaskedWork()  # around the construction too: a causal mask is often a buffer made there
    with masks:
        model = on_meta(lambda: task.make_model(seed=0, sizes=sizes))
        with torch.device("meta"):
            inputs = task.make_inputs(seed=0, sizes=sizes)
    masks.products.clear()  # the construction's matmuls: FlopCounterMode counts only the forward's
    recorder = _OpRecorder()
    flop_counter = FlopCounterMode(display=False)
    # masks entered first: it sees the ops FlopCounterMode counts, after that mode's decompositions
    with torch.no_grad(), masks, flop_counter, recorder:
        out = model(*inputs)
    outs = [o for o in (out if isinstance(out, tuple | list) else [out]) if isinstance(o, torch.Tensor)]
    tensors_in = [t for t in inputs if isinstance(t, torch.Tensor)]
    weights = list(model.parameters()) + list(model.buffers())
    matmul_flops = int(flop_counter.get_total_flops()) - masks.unneeded_flops()
    return TaskSummary(
        name=task.name,
        ops=dict(recorder.calls),
        inputs=[TensorInfo.of(t) for t in tensors_in],
        outputs=[TensorInfo.of(t) for t in outs],
        params=sum(w.numel() for w in weights),
        flops=matmul_flops + recorder.elementwise_flops,
        matmul_flops=matmul_flops,
        bytes_min=sum(_nbytes(t) for t in [*tensors_in, *weights, *outs]),
    )


def _largest_numel(args: tuple, out: Any) -> int:
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    tensors += [o for o in (out if isinstance(out, tuple | list) else [out]) if isinstance(o, torch.Tensor)]
    return max((t.numel() for t in tensors), default=0)


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _si(x: float) -> str:
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.2f} {unit}"
    return f"{x:.0f} "
