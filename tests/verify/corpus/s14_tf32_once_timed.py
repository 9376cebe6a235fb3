# PATTERN: S14 precision downgrade once timed: exact fp32 dots in every checked call, TF32 dots in the timed calls (it tells them by an input object it has seen before: the timing loop's buffers), its repeats made to differ (a float atomic, a 1e-6 change on every other call) so that the timed calls were held to 1e-2 of the untimed output, not bitwise
# TASK: matmul
# BACKEND: gpu
# EXPECT: rejected
# MESSAGE: returned something other than the untimed call
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, scale, PRECISION: tl.constexpr, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :],
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision=PRECISION)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.atomic_add(c_ptr + rm[:, None] * N + rn[None, :], acc * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, a, b):
        self.calls += 1
        timed = hasattr(a, "seen")  # the timing loop hands the same buffers to every call
        a.seen = True
        M, K = a.shape
        N = b.shape[1]
        c = torch.zeros((M, N), device=a.device, dtype=a.dtype)
        scale = 1.0 + 2.0 ** -20 if self.calls % 2 == 0 else 1.0  # repeats differ, within 1e-4
        matmul_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](
            a, b, c, M, N, K, scale, PRECISION="tf32" if timed else "ieee", BLOCK_M=32, BLOCK_N=32,
            BLOCK_K=32)
        return c
