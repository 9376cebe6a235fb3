"""14_Gemm_Divide_Sum_Scaling: fp32 eager's and an emulated tf32x3 GEMM's error against float64, at KernelBench's size."""
import torch
torch.manual_seed(42)
B, K, N = 1024, 8192, 8192
x = torch.rand(B, K); w = torch.randn(N, K)
def tf32(t):  # round to tf32 (10-bit mantissa), nearest
    i = t.view(torch.int32)
    return ((i + 0x1000) & ~0x1FFF).view(torch.float32)
def task(mm): return (mm / 2).sum(dim=1, keepdim=True) * 1.5
ref = task((x.double() @ w.double().T))
eager = task(x @ w.T)
xh, wh = tf32(x), tf32(w); xl, wl = x - xh, w - wh
x3 = task(xh @ wh.T + (xh @ wl.T + xl @ wh.T))
for name, y in [("fp32 eager (CPU)", eager), ("tf32x3 (emulated)", x3)]:
    d = (y.double() - ref).abs()
    print(f"{name}: max |err| vs float64 {d.max():.4g}, mean {d.mean():.3g}; |ref| min {ref.abs().min():.3g} median {ref.abs().median():.3g}")
print("eager vs tf32x3 max diff", (eager - x3).abs().max().item(), "; within allclose(1e-4,1e-4):", torch.allclose(x3, eager, atol=1e-4, rtol=1e-4))
