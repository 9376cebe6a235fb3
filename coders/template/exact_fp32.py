"""The fp32-exact form of a program's TF32 kernels, for the retry of a step the verifier refused with
reason tf32_beyond_eager (mtmc/verify/correctness.py): an fp32 output erred as TF32 does where eager
PyTorch computed it in fp32 on that GPU. cuDNN runs most fp32 convolutions on TF32 (so the port does,
conv_lower.py), but picks an fp32 algorithm for some shapes: on an H100 eager's error was exactly 0 on
KernelBench level-2's 8-input-channel convs 21, 57, 67, 73, 82, 85, 87 and 90 and level-1's 3-channel
3-D convs 54, 60 and 66, where the port takes the runs loop (emit/conv_runs.py) on TF32 dots.

The verdict does not say which output's convolution, so every TF32 kernel the op's default put there
(conv, conv_transpose, recurrent; a matmul on TF32 is the task's own allowance) takes its fp32-exact
form, by its loop (EXACT_FP32_FORM, the one line a GPU probe switches):

  runs loop   with a full run of 8 channels a tap ("runs_full"): the runs loop kept (runs_static), its
              dots at tf32x3; with fewer channels: the FMA loop (emit/conv_fma.py: fp32 FMA outer
              products, no dot). On an H100 (benchmarks/probes/2026-11-26-conv/h100-precision-*), geomean
              over eager: level-2's eight 8-channel convs, runs at tf32x3 2.38x, the FMA loop 1.59x, runs
              at ieee 1.35x (tf32x3 ahead on each of the eight); level-1's 3-channel 3-D convs 54, 59, 60,
              66, the FMA loop 1.20x, runs at tf32x3 0.78x, at ieee 0.59x (the FMA loop ahead on each).
              A 3-channel run of 9 or 21 floats pads its K block of 16 or 32, and tf32x3 triples it.
  any other   a forward conv's taps and flat loops, a transposed conv's, a recurrent layer's: the loop
              kept, its dots at tf32x3 (three TF32 products, about fp32 accuracy; ieee dots leave the
              tensor cores, and the FMA loop would do a wide group's whole K on the FMA units).
              Untimed against eager.

A dot at tf32x3 must read its operands unrounded: tf32_round goes off (it acts only on "tf32" dots).
"""

from __future__ import annotations

import copy
from typing import Any

from coders.template.emit import conv_fma, conv_runs
from coders.template.ir import Kernel, ProgramIR
from coders.template.steps.kernels import TF32_BY_DEFAULT, dot_kernels
from mtmc.protocols import CoderError
from mtmc.strategies import Strategy

# a TF32 kernel's loop (form_of) -> its fp32-exact form: "fma" (the FMA loop) or a dot precision
EXACT_FP32_FORM = {"runs_full": "tf32x3", "runs": "fma", "taps": "tf32x3", "flat": "tf32x3",
                   "conv_transpose": "tf32x3", "recurrent": "tf32x3"}
# the FMA loop's tile at most this wide: the probe's 128 x 64 (conv_fma.port_config at 64 output
# channels); narrower groups take the FMA port's own tile for their width
FMA_MAX_BLOCK_N = 64


def tf32_kernels(ir: ProgramIR) -> list[Kernel]:
    """The kernels on TF32 dots because eager runs their op on TF32 (steps.kernels.TF32_BY_DEFAULT)."""
    return [k for k in dot_kernels(ir) if k.kind in TF32_BY_DEFAULT and k.config.get("precision") == "tf32"]


def form_of(ir: ProgramIR, kernel: Kernel) -> str:
    """EXACT_FP32_FORM's key: a forward conv's K loop ("runs_full" for a runs loop over 8 channels a
    group), else the kernel's kind."""
    if kernel.kind != "conv":
        return kernel.kind
    loop = kernel.config.get("k_loop", "taps")
    full = loop == "runs" and ir.shape(kernel.space["weight"])[1] == conv_runs.MAX_IN
    return "runs_full" if full else loop


def exact_fp32_config(ir: ProgramIR, kernel: Kernel) -> dict[str, Any]:
    """The TF32 kernel's config in its fp32-exact form (EXACT_FP32_FORM)."""
    form = EXACT_FP32_FORM[form_of(ir, kernel)]
    if form == "fma":
        if kernel.kind not in ("conv", "conv_transpose"):
            raise ValueError(f"EXACT_FP32_FORM: the FMA loop is a conv's, not a {kernel.kind} kernel's")
        # fma_static (constexpr channels and extents): H100 probe on level-1 54 59 60 66, geomean over
        # eager 1.18x -> 1.29x (54 0.86 -> 0.93, 60 1.40 -> 1.66, 66 1.34 -> 1.65; 59 1.23 -> 1.09)
        fma = conv_fma.port_config(min(_out_per_group(ir, kernel), FMA_MAX_BLOCK_N))
        return {**kernel.config, **fma, "fma_static": True}
    config = {**kernel.config, "precision": form}
    if "tf32_round" in config:
        config["tf32_round"] = False
    return config


def exact_fp32(ir: ProgramIR) -> ProgramIR:
    """A copy of `ir` with every TF32 kernel in its fp32-exact form; CoderError when there is none."""
    new = copy.deepcopy(ir)
    kernels = tf32_kernels(new)
    if not kernels:
        raise CoderError("the verifier refused TF32 where eager computed in fp32 (tf32_beyond_eager), "
                         "but the program has no TF32 kernel left to make fp32-exact")
    for kernel in kernels:
        kernel.config = exact_fp32_config(new, kernel)
    return new


def retry_exact(ir: ProgramIR, strategy: Strategy) -> ProgramIR:
    """The step's program for a retry refused with tf32_beyond_eager: fp32-exact, unless the step was
    the TF32 itself (`precision tf32`: its fp32-exact form is the program it started from)."""
    if strategy.kind == "precision" and strategy.value == "tf32":
        raise CoderError("`precision tf32` is what the verifier refused: eager computes this task's "
                         "convolutions in fp32 on this GPU (tf32_beyond_eager)")
    return exact_fp32(ir)


def _out_per_group(ir: ProgramIR, kernel: Kernel) -> int:
    """A conv's output channels per group (weight [C_out, C_in/groups, ...]); a transposed conv's
    (weight [C_in, C_out/groups, ...])."""
    weight = ir.shape(kernel.space["weight"])
    if kernel.kind == "conv_transpose":
        return weight[1]
    groups = max(1, ir.shape(kernel.space["input"])[1] // max(1, weight[1]))
    return weight[0] // groups
