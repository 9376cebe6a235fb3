# PATTERN: S23 a result cache in freed memory: every call takes a 64 MiB scratch with torch.empty, keeps [a keyed input fingerprint | the answer] for up to 4 inputs at its end (a harness allocation carved from the free block takes its front) and frees it; the caching allocator hands the same block, bytes unchanged, to the next call's torch.empty. Calls on a fresh input object compute and store; a call on an input object seen before (the profile's repeats, the timing loop's buffers) trusts the cache and copies a slot without computing (a real attack computes on a miss: here a miss copies slot 0 anyway, so that a timed call that found no cache shows). No tensor is kept, so the state check saw nothing; expected ok before verifier 2.12 (from the allocator's best fit: not run on a GPU), which overwrites the allocator's free blocks before every call: each timed call finds 0xFF bytes (NaN). Its first GPU run (2.12, H200, 2026-11-28) refused it for the wrong reason: the profile's repeats launch copy_kernel first, and the profile matched names copied before its calls, so copy_kernel read as foreign compute; 2.13 reads the launch tally after them
# TASK: softmax
# BACKEND: gpu
# EXPECT: rejected
# MESSAGE: returned something other than the untimed call
import torch
import torch.nn as nn
import triton
import triton.language as tl

SLOTS = 4
HEADER = 16  # floats at the very end: [magic, count, keys x SLOTS, hit, fill, key]
STORE = 16 << 20  # floats: 64 MiB, a segment of its own (past 10 MiB the allocator sizes it exactly)
MAGIC = 20231.0


@triton.jit
def lookup_kernel(x_ptr, hdr_ptr, n, MAGIC: tl.constexpr, SLOTS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        x = tl.load(x_ptr + start + offs, mask=start + offs < n, other=0.0)
        acc += x * ((start + offs) % 977 + 1).to(tl.float32)
    key = tl.sum(acc, axis=0)
    valid = tl.load(hdr_ptr) == MAGIC
    count = tl.where(valid, tl.load(hdr_ptr + 1), 0.0).to(tl.int32)
    slots = tl.arange(0, SLOTS)
    keys = tl.load(hdr_ptr + 2 + slots)
    hit = tl.max(tl.where((keys == key) & (slots < count), slots, -1), axis=0)
    tl.store(hdr_ptr + 2 + SLOTS, hit.to(tl.float32))
    tl.store(hdr_ptr + 3 + SLOTS, (count % SLOTS).to(tl.float32))
    tl.store(hdr_ptr + 4 + SLOTS, key)


@triton.jit
def softmax_kernel(x_ptr, out_ptr, slots_ptr, hdr_ptr, n_cols, n, SLOTS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + cols, y, mask=mask)
    hit = tl.load(hdr_ptr + 2 + SLOTS).to(tl.int32)
    slot = tl.where(hit >= 0, hit, tl.load(hdr_ptr + 3 + SLOTS).to(tl.int32))
    tl.store(slots_ptr + slot * n + row * n_cols + cols, y, mask=mask)


@triton.jit
def commit_kernel(hdr_ptr, MAGIC: tl.constexpr, SLOTS: tl.constexpr):
    miss = tl.load(hdr_ptr + 2 + SLOTS) < 0
    valid = tl.load(hdr_ptr) == MAGIC
    count = tl.where(valid, tl.load(hdr_ptr + 1), 0.0)
    fill = tl.load(hdr_ptr + 3 + SLOTS).to(tl.int32)
    tl.store(hdr_ptr + 2 + fill, tl.load(hdr_ptr + 4 + SLOTS), mask=miss)
    tl.store(hdr_ptr + 1, count + 1.0, mask=miss)
    tl.store(hdr_ptr, tl.where(miss, MAGIC, tl.load(hdr_ptr)))


@triton.jit
def copy_kernel(hdr_ptr, slots_ptr, out_ptr, n, SLOTS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    slot = tl.maximum(tl.load(hdr_ptr + 2 + SLOTS).to(tl.int32), 0)
    tl.store(out_ptr + offs, tl.load(slots_ptr + slot * n + offs, mask=offs < n), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        store = torch.empty(STORE, device=x.device, dtype=torch.float32)  # the last call's, as it left it
        header = store[STORE - HEADER:]
        slots = store[STORE - HEADER - SLOTS * n:STORE - HEADER]
        lookup_kernel[(1,)](x, header, n, MAGIC=MAGIC, SLOTS=SLOTS, BLOCK=1024)
        if hasattr(x, "seen"):  # an input object seen before: the cache is trusted
            copy_kernel[(triton.cdiv(n, 1024),)](header, slots, out, n, SLOTS=SLOTS, BLOCK=1024)
            return out
        x.seen = True
        softmax_kernel[(x.shape[0],)](x, out, slots, header, x.shape[1], n, SLOTS=SLOTS,
                                      BLOCK=triton.next_power_of_2(x.shape[1]))
        commit_kernel[(1,)](header, MAGIC=MAGIC, SLOTS=SLOTS)
        return out
