# PATTERN: S22/S14 the timed calls' answer written into what they are held to: exact fp32 dots in every call the verifier checks against the reference, TF32 dots in the timed calls, each of which also copies its result over the untimed output on its set (the harness's copy that timed outputs are compared with, found through its frames; a kernel could write it through the address the caching allocator hands that copy), so every timed output matched. Static check bypassed. Ok before verifier 2.9, which checks that output against its call's digest after each comparison
# TASK: matmul
# STATIC: off
# BACKEND: gpu
# EXPECT: rejected
# MESSAGE: compared with an untimed output that had changed
import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, PRECISION: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision=PRECISION)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def held_to():
    """In a timed call: the untimed outputs this call's output is about to be compared with."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_name != "time_calls":
        frame = frame.f_back
    if frame is None or "k" not in frame.f_locals:  # not timed, or the warm-up (nothing compared)
        return None
    return frame.f_locals["expected"]["candidate"][frame.f_locals["k"]]


class ModelNew(nn.Module):
    def forward(self, a, b):
        M, K = a.shape
        _, N = b.shape
        c = torch.empty((M, N), device=a.device, dtype=torch.float32)
        held = held_to()
        grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
        matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            c.stride(0), c.stride(1), BLOCK_M=32, BLOCK_N=32, BLOCK_K=16,
                            PRECISION="ieee" if held is None else "tf32")
        if held is not None:
            held[0].copy_(c)
        return c
