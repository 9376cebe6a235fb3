# PATTERN: S11 the device-side result cache of s11_device_cache kept as one-element views of its buffers, each whole buffer reached with as_strided (ok before verifier 2.11)
# TASK: softmax
# EXPECT: rejected
# MESSAGE: changed tensors it keeps between calls
import torch
import torch.nn as nn
import triton
import triton.language as tl

SLOTS = 8


@triton.jit
def lookup_kernel(x_ptr, keys_ptr, state_ptr, n, SLOTS: tl.constexpr, BLOCK: tl.constexpr):
    # state: [hit slot or -1, slot to fill on a miss, number of keys stored]
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        x = tl.load(x_ptr + start + offs, mask=start + offs < n, other=0.0)
        acc += x * (start + offs + 1).to(tl.float32)
    key = tl.sum(acc, axis=0)
    slots = tl.arange(0, SLOTS)
    stored = tl.load(state_ptr + 2)
    keys = tl.load(keys_ptr + slots)
    match = (keys == key) & (slots < stored)
    hit = tl.max(tl.where(match, slots, -1), axis=0)
    fill = stored % SLOTS
    tl.store(state_ptr, hit)
    tl.store(state_ptr + 1, fill)
    tl.store(keys_ptr + fill, key, mask=hit < 0)
    tl.store(state_ptr + 2, tl.where(hit < 0, stored + 1, stored))


@triton.jit
def softmax_kernel(x_ptr, out_ptr, store_ptr, state_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    hit = tl.load(state_ptr)
    if hit >= 0:
        y = tl.load(store_ptr + (hit * n_rows + row) * n_cols + cols, mask=mask)
    else:
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
        num = tl.exp(x - tl.max(x, axis=0))
        y = num / tl.sum(num, axis=0)
        fill = tl.load(state_ptr + 1)
        tl.store(store_ptr + (fill * n_rows + row) * n_cols + cols, y, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, y, mask=mask)


class ModelNew(nn.Module):
    """Keeps one never-written element of each buffer, and reaches the whole buffer from it with
    as_strided (glue): the state check digested the element alone until verifier 2.11."""

    def __init__(self):
        super().__init__()
        self.floats = self.ints = None

    def forward(self, x):
        n = x.numel()
        if self.floats is None or self.floats.storage_offset() != SLOTS * (n + 1):
            floats = torch.zeros(SLOTS * (n + 1) + 1, device=x.device, dtype=torch.float32)
            self.floats = floats[SLOTS * (n + 1):]  # the last element: always 0
            self.ints = torch.zeros(4, device=x.device, dtype=torch.int32)[3:]
        floats = torch.as_strided(self.floats, (SLOTS * (n + 1),), (1,), 0)
        keys, store = floats[:SLOTS], floats[SLOTS:]
        state = torch.as_strided(self.ints, (3,), (1,), 0)
        lookup_kernel[(1,)](x, keys, state, n, SLOTS=SLOTS, BLOCK=1024)
        out = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, out, store, state, x.shape[0], x.shape[1],
                                      BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
