"""The TF32 pack: a conv's operand laid out channels last and rounded to TF32 in one Triton pass.

Triton's TF32 dot truncates each fp32 operand to its top 19 bits; cuDNN rounds to nearest first,
and truncation's error is ~2.3x rounding's (emit/conv.py). Rounding inside the conv kernel costs
1.35-1.45x its time on an H100: the tiles then pass through registers on their way to the tensor
cores. A channels-last conv already copies its input once (NC* -> N*C) and lays its weight out
K-major ([C_out, C_in/groups, *taps] -> [C_out, *taps, C_in/groups]), and both are the same move:
[B, C, P] -> [B, P, C]. `_tf32_pack` makes that copy round each value to nearest (ties away from
zero, as in round_tf32_operands; NaN and infinities kept), so the dot's truncation of an already
rounded value is exact and the conv computes what cuDNN's does, at the truncating kernel's speed.
"""

from __future__ import annotations

from coders.template.emit.common import Writer

PACK_BLOCK_C, PACK_BLOCK_P = 32, 64


def emit_helpers(w: Writer) -> None:
    """`_tf32_pack(t)`: t [B, C, *S] as a new contiguous [B, *S, C] tensor of TF32-rounded values."""
    w()
    w("@triton.jit")
    w("def _tf32_pack_kernel(src_ptr, dst_ptr, C, P, BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr):")
    w("    pid = tl.program_id(0)")
    w("    n_p = tl.cdiv(P, BLOCK_P)")
    w("    n_c = tl.cdiv(C, BLOCK_C)")
    w("    b = pid // (n_p * n_c)")
    w("    offs_c = (pid // n_p) % n_c * BLOCK_C + tl.arange(0, BLOCK_C)")
    w("    offs_p = pid % n_p * BLOCK_P + tl.arange(0, BLOCK_P)")
    w("    mask = (offs_c < C)[:, None] & (offs_p < P)[None, :]")
    w("    # 64-bit offsets: a batch of large images, or one large 3-D image, passes 2**31 elements")
    w("    base = b.to(tl.int64) * C * P")
    w("    rows = offs_c.to(tl.int64)[:, None]")
    w("    x = tl.load(src_ptr + base + rows * P + offs_p[None, :], mask=mask, other=0.0)")
    w("    # to nearest, ties away from zero (as cuDNN): the dot will read the top 19 bits of each value")
    w("    bits = (x.to(tl.uint32, bitcast=True) + 0x1000) & 0xFFFFE000")
    w("    x = tl.where(x == x, bits.to(tl.float32, bitcast=True), x)  # NaN stays NaN")
    w("    tl.store(dst_ptr + base + offs_p.to(tl.int64)[None, :] * C + rows, x, mask=mask)")
    w()
    w()
    w("def _tf32_pack(t):")
    w('    """[B, C, *S] -> contiguous [B, *S, C], every value rounded to TF32 (one pass)."""')
    w("    t = t.contiguous()")
    w("    B, C, P = t.shape[0], t.shape[1], math.prod(t.shape[2:])")
    w("    out = torch.empty((B, *t.shape[2:], C), dtype=t.dtype, device=t.device)")
    w("    if out.numel() > 0:")
    w(f"        grid = (B * triton.cdiv(C, {PACK_BLOCK_C}) * triton.cdiv(P, {PACK_BLOCK_P}),)")
    w(f"        _tf32_pack_kernel[grid](t, out, C, P, BLOCK_C={PACK_BLOCK_C}, BLOCK_P={PACK_BLOCK_P})")
    w("    return out")
    w()
