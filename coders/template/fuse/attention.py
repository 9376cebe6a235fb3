"""Attention fusion: a matmul -> softmax [-> matmul] chain (lower/matmul.py's patterns) as one
flash kernel."""

from __future__ import annotations

import copy

import torch

from coders.template.fuse.dead_code import eliminate_dead, in_order
from coders.template.ir import Kernel, ProgramIR
from coders.template.lower import attention_kernel
from coders.template.lower.attention import port_config


def _fusable(kind: str, half: bool) -> bool:
    """A softmax-only flash kernel computes q k^T twice, so it pays only where the dots are cheap
    next to the output's bytes: 16-bit operands. On the H200 bmm_softmax_fp16 (128 x 2048 x 2048,
    D=64) ran 0.71 ms fused against 1.55 as a GEMM plus a softmax kernel; baddbmm_softmax (fp32,
    64 x 2048 x 2048, D=64) ran 1.91 ms fused with tf32x3 dots (2.62 with fp32 FMA dots) against
    1.49 ms unfused."""
    return kind == "attention" or half


def _flash_config(ir: ProgramIR, pattern: dict) -> dict | None:
    """The flash kernel's config as the port would choose it for an attention node of the chain's
    head dims (lower/attention.py): None where no tiles fit."""
    q, v = ir.values[pattern["q"]], ir.values[pattern["v"]]
    return port_config(getattr(torch, q["dtype"]), q["shape"][-1], v["shape"][-1])


def fuse_attention(ir: ProgramIR, kind: str = "attention") -> ProgramIR | None:
    """Replace a matmul -> softmax -> matmul chain (kind "attention"), or a matmul -> softmax chain
    whose probabilities are the output (kind "softmax"), by one flash kernel."""
    for pattern in ir.patterns:
        half = ir.values[pattern["q"]]["dtype"] in ("float16", "bfloat16")
        if pattern["kind"] != kind or not _fusable(kind, half):
            continue
        config = _flash_config(ir, pattern) if kind == "attention" else None
        if kind == "attention" and config is None:
            continue  # its tiles would not fit in shared memory at this head dim
        inner = set(pattern["inner"])
        kernels = []
        for k in ir.kernels():
            outs = {o.value for o in k.outputs}
            if outs & (inner | {pattern["out"]}):
                if not outs <= inner | {pattern["out"]}:
                    break
                kernels.append(k)
        else:
            if not kernels or any(k.kind == "attention" for k in kernels):
                continue
            new = copy.deepcopy(ir)
            # in place of the last kernel of the chain: a scale computed between them is ready there
            last = max(kernels, key=lambda k: new.steps.index(new.kernel(k.name)))
            name = "attention" if kind == "attention" else "scores_softmax"
            taken = {k.name for k in new.kernels()}
            while name in taken:
                name += "_2"
            fused = attention_kernel(name, pattern["q"], pattern["kt"], pattern["v"], pattern["out"],
                                     pattern["scale"], pattern["traced"], pattern.get("causal", False),
                                     half=half, bias=pattern.get("bias"))
            fused.config = config or fused.config
            precision = {k.config.get("precision") for k in kernels} - {None}
            if precision:
                fused.config["precision"] = sorted(precision)[0]
            gone = {k.name for k in kernels} - {last.name}
            new.steps = [fused if isinstance(s, Kernel) and s.name == last.name else s
                         for s in new.steps if not (isinstance(s, Kernel) and s.name in gone)]
            eliminate_dead(new)
            if in_order(new):
                return new
    return None
