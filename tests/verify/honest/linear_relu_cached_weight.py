# TASK: linear_relu
# As linear_relu.py, with state kept between calls that does not depend on the inputs: the weight's
# transpose is made once, on the first call, and reused (the state check must let this pass).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_relu_kernel(x_ptr, wt_ptr, b_ptr, out_ptr, M, N, K, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        x = tl.load(x_ptr + rm[:, None] * K + (k + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        w = tl.load(wt_ptr + (k + rk)[:, None] * N + rn[None, :],
                    mask=(rn[None, :] < N) & ((k + rk)[:, None] < K), other=0.0)
        acc += tl.dot(x, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    acc = tl.maximum(acc, 0.0)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.weight_t = None

    def forward(self, x):
        if self.weight_t is None or self.weight_t.device != x.device:
            self.weight_t = self.fc.weight.t().contiguous()  # [K, N], made once
        x = x.contiguous()
        M, K = x.shape
        N = self.fc.weight.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
        linear_relu_kernel[grid](x, self.weight_t, self.fc.bias, out, M, N, K,
                                 BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
        return out
