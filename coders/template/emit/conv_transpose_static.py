"""The transposed conv's live-tap loop with its geometry as constexprs (config "transpose_static": a probe
variant, off in the port until timed on a GPU).

With the key the kernel takes the group's input and output channels, and per spatial dim the kernel
extent, stride, padding, dilation and the live taps' step and inverse (emit/conv_transpose_loop.py's
tst, tinv) as constexprs: the same parameter names, annotated `tl.constexpr`, so the rest of the kernel
(its program decomposition, the phase's live-tap counts, the epilogue) is the code without the key,
folded by the compiler; one compile per conv shape, as the forward conv's `runs_static`. The loop
itself is rewritten (`live_tap_loop`):

  - no division per step: the live tap's coordinates u<j> are counters carried by the loop (the last
    dim's advances after the tap's last channel block, and carries into the one before), where the
    runtime loop divides the step by the channel blocks and by each dim's live-tap count;
  - a live tap's input pixel is i = ib - u * dq per dim (ib: each row's, through the phase's first live
    tap, set once per program; dq = dil / gcd(st, dil)), where the runtime loop divides by the stride
    per step: the rows' pointers are set once, and a step adds the tap's scalar offset to the channels;
  - no channel mask where the group's channels are whole channel blocks (a constexpr test).

Why, from compile-only counts (untimed): the port's kernel for KernelBench level-2 tasks at their full
sizes, ported with the template coder and its epilogue fused, compiled for sm_90 on the CPU with the
launch's specializations (ints equal to 1 constexpr, divisibility by 16 hinted) by Triton 3.6, the
GPU's version (3.9 gives other code: below). A K step of the 128 x 64 x 32 tile (4 warps) is 8
HGMMA.64x64x8.TF32 and 12 16-byte cp.asyncs (LDGSTS.128: 8 rows of a and 4 of b a thread); the rest
is scalar tap arithmetic (2-6 runtime divisions a step, ~25 SASS each) and each row's mask and
address. SASS instructions, runtime -> static:

  task (channels, kernel, stride)     a step     steps   setup + 2 steps' loads   epilogue   a program
  44 (64 -> 128, 3x3, 2, pad 1)       360 -> 163   4.5      1,390 -> 741          729 -> 616   3,739 -> 2,090
  11 (64 -> 128, 5x5, 1, pad 1)       305 -> 160   50       1,054 -> 665          658 -> 583   16,962 -> 9,248
  42 (64 -> 128, 3x3, 1)              305 -> 160   18       1,047 -> 653          658 -> 583   7,195 -> 4,116
  93 (64 -> 128, 4x4, 2)              359 -> -     8        1,396 -> -            2,900        7,168 -> 4,192
  5  (64 -> 64, 4x4, 2, pad 1)        360 -> -     8        1,390 -> -            1,576        5,846 -> 2,784
  3  (32 -> 64, 3x3x3, 2, pad 1)      477 -> 199   3.4      1,927 -> 1,093        777 -> 554   4,314 -> 2,319
  38 (32 -> 64, 3x3x3, 2, pad 1)      479 -> 199   3.4      1,928 -> 1,092        710 -> 488   4,255 -> 2,252

(steps: live taps x channel blocks a program, averaged over the phases; with a 4x4 kernel and stride
2 every phase has 4 live taps, so the static loop's trip count is a constant and it compiles
unrolled: 93's and 5's static rows are the whole kernel). What stays in a static step: the 8
HGMMAs and their descriptors (~40), the 12 cp.asyncs with a 64-bit address each, and a row's mask
(one unsigned test per dim, and the pipeline's own predicate). The transposed FMA loop (level-2 50,
3 -> 16, 3x3x3, stride 2, 256 x 16 tile): 366 -> 205 SASS a live tap for its 96 FFMAs a thread.
Triton 3.9 compiles the static steps alike (44 174, 11 171, 93 173, 3 219; runtime 379, 315, 378,
506), but the port's epilogue to 3,600-7,000 instructions with 100-400 register spills (its store
layout gives a thread 64 rows, each with its index chain) and `epilogue_t`'s to ~730: the reverse
of Triton 3.6, where `epilogue_t`'s is the long one (44: 3,528 against 729), as the GPU's 0.74x for
it showed (benchmarks/probes/2026-11-26-conv/README.md).
"""

from __future__ import annotations

from coders.template.emit import conv, conv_fma, conv_transpose_loop
from coders.template.emit.common import Writer, ptr
from coders.template.emit.conv_transpose_loop import input_values, row_major
from coders.template.ir import Kernel

# the kernel's parameters that become constexprs (the per-dim ones with the dim's index appended)
GROUP_SIZES = ("cin_g", "cout_g")
PER_DIM = ("ks", "st", "pad", "dil", "tst", "tinv")


def requested(kernel: Kernel) -> bool:
    """The config asks for it (emit/conv_transpose.py takes it with the live-tap loop only)."""
    return bool(kernel.config.get("transpose_static"))


def constexpr_params(params: list[str], dims: int) -> list[str]:
    """`params` with the group sizes and the geometry annotated `tl.constexpr` (the launch passes them
    where it did, positionally)."""
    names = set(GROUP_SIZES) | {f"{p}{j}" for p in PER_DIM for j in range(dims)}
    return [f"{p}: tl.constexpr" if p in names else p for p in params]


def live_tap_loop(w: Writer, kernel: Kernel, d: int) -> None:
    """emit/conv_transpose_loop.live_tap_loop with constexpr geometry (module docstring): the same
    steps in the same order, so the same products summed in the same order."""
    conv_transpose_loop.live_tap_counts(w, d)
    w("# each row's input pixel through the phase's first live tap (an exact division where the phase")
    w("# has live taps): the u-th live tap along dim j reads i = ib - u * dq, dq = dil / gcd")
    for j in range(d):
        w(f"ib{j} = q{j} + (r{j} + pad{j} - tfirst{j} * dil{j}) // st{j}")
        w(f"dq{j} = dil{j} // gcd{j}")
    w("ib0 = tl.where(m_in, ib0, -1)  # rows past the output: every tap's test below fails")
    pixel = row_major([f"ib{j}" for j in range(d)], [f"in{j}" for j in range(d)])
    channels_last = conv.transpose_channels_last(kernel)
    w(f"x_first = x_rows + ({pixel}) * C_in" if channels_last else f"x_first = x_rows + {pixel}")
    w("# the live tap's coordinates, carried by the loop: no division per step")
    for j in range(d):
        w(f"u{j} = 0")
    fma = conv_fma.uses_fma(kernel)
    if fma:
        w("for live in range(0, n_live):")
    else:
        w("c_blocks = tl.cdiv(cin_g, BLOCK_K)")
        w("for step in range(0, n_live * c_blocks):")
    w.indent()
    _tap(w, d, channels_last)
    if fma:
        w("a_rows = x_first - tap_shift")
        x, wt = input_values(kernel)
        conv_fma.channel_loop(w, kernel, ptr(x), ptr(wt), "1" if channels_last else "S_in")
        w("tap_next = 1")
    else:
        _channel_block(w, kernel, channels_last)
        w("tap_next = (step % c_blocks == c_blocks - 1).to(tl.int32)  # after the tap's last block")
    _advance(w, d)
    w.dedent()


def _tap(w: Writer, d: int, channels_last: bool) -> None:
    """The live tap (u<j>): its flat index `tap`, the rows' mask `hit` and the scalar `tap_shift`, its
    input offset from the first live tap's."""
    tests = []
    for j in range(d):
        w(f"sh{j} = u{j} * dq{j}")
        tests.append(f"((ib{j} - sh{j}).to(tl.uint32) < in{j})")
    w("# 0 <= i < in as one unsigned test per dim")
    w(f"hit = {' & '.join(tests)}")
    w(f"tap = {row_major([f'(tfirst{j} + tst{j} * u{j})' for j in range(d)], [f'ks{j}' for j in range(d)])}")
    shift = row_major([f"sh{j}" for j in range(d)], [f"in{j}" for j in range(d)])
    w(f"tap_shift = ({shift}) * C_in" if channels_last else f"tap_shift = {shift}")


def _channel_block(w: Writer, kernel: Kernel, channels_last: bool) -> None:
    """acc += the chunk of channels from c0 on through the tap (emit/conv_transpose_loop.py's, the
    tap's offset added to the channels' column, not to each row)."""
    x, wt = input_values(kernel)
    w("c0 = (step % c_blocks) * BLOCK_K")
    w("ci = c0 + offs_k")
    w("k_in = (ci < cin_g) | (cin_g % BLOCK_K == 0)  # whole channel blocks: no mask, folded")
    channel = "ci" if channels_last else "ci * S_in"
    w(f"a = tl.load({ptr(x)} + x_first[:, None] + ({channel} - tap_shift)[None, :],")
    w("            mask=hit[:, None] & k_in[None, :], other=0.0)")
    w(f"b = tl.load({ptr(wt)} + w_cols[:, None] + (tap * cin_g + ci)[None, :],")
    w("            mask=n_in[:, None] & k_in[None, :], other=0.0)")
    conv.dot(w, kernel)


def _advance(w: Writer, d: int) -> None:
    """The next live tap: the last dim's counter steps by tap_next and wraps into the one before."""
    for j in range(d - 1, 0, -1):
        w(f"u{j} += tap_next")
        w(f"tap_next = (u{j} == nt{j}).to(tl.int32)")
        w(f"u{j} = u{j} * (1 - tap_next)")
    w("u0 += tap_next")
