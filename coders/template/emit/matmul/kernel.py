"""The matmul kernel: tile ids, the K loop, the epilogue on the fp32 accumulator tile, and split-K's
reduce kernel."""

from __future__ import annotations

from coders.template.emit.common import Writer, check_operands, ptr, tile_epilogue
from coders.template.emit.launch import kernel_header, wrap_call
from coders.template.emit.matmul.layout import (
    b_rows_are_n,
    dot_precision,
    epilogue_axes,
    is_batched,
    is_grouped,
    operand_params,
    split_reduce_name,
    triangle_outputs,
    uses_tma,
)
from coders.template.ir import Kernel


def _tile_ids(w: Writer, kernel: Kernel, tile: str) -> None:
    """pid_m, pid_n of a tile index; grouped so that GROUP_M rows of tiles share B in L2."""
    if is_grouped(kernel):
        w("# grouped order: GROUP_M rows of tiles run together and reuse the same B columns in L2")
        w("num_pid_in_group = GROUP_M * num_pid_n")
        w(f"first_pid_m = ({tile} // num_pid_in_group) * GROUP_M")
        w("group_size_m = min(num_pid_m - first_pid_m, GROUP_M)")
        w(f"pid_m = first_pid_m + ({tile} % num_pid_in_group) % group_size_m")
        w(f"pid_n = ({tile} % num_pid_in_group) // group_size_m")
    else:
        w(f"pid_m = {tile} // num_pid_n")
        w(f"pid_n = {tile} % num_pid_n")


def _k_loop(w: Writer, kernel: Kernel, split: bool) -> None:
    """acc = A[tile rows, k range] @ B[k range, tile cols] in fp32."""
    batched = is_batched(kernel)
    w("offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)")
    w("offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)")
    w("offs_k = tl.arange(0, BLOCK_K)")
    w("# rows/cols past the edge wrap around: loads stay in bounds, the store masks them out")
    w("a_rows = offs_m % M")
    w("b_cols = offs_n % N")
    if split:
        w("k_per_split = tl.cdiv(tl.cdiv(K, BLOCK_K), SPLIT_K) * BLOCK_K")
        w("k_lo = pid_k * k_per_split")
        w("k_hi = min(k_lo + k_per_split, K)")
    lo = "k_lo" if split else "0"
    hi = "k_hi" if split else "K"
    triangle = None if split else triangle_outputs(kernel)
    if triangle:
        kind, diagonal = triangle
        w(f"# every output is {kind} (diagonal {diagonal}) of the product: a tile wholly off the triangle")
        w("# is all zeros and skips its K loop")
        if kind == "triu":  # kept where col - row >= diagonal: the tile's largest col - row decides
            w(f"live = (pid_n * BLOCK_N + BLOCK_N - 1) - pid_m * BLOCK_M >= {diagonal}")
        else:  # tril: kept where col - row <= diagonal: the smallest col - row decides
            w(f"live = pid_n * BLOCK_N - (pid_m * BLOCK_M + BLOCK_M - 1) <= {diagonal}")
        w("k_end = tl.where(live, K, 0)")
        hi = "k_end"
    base_a = "a_ptr + pid_b * stride_ab" if batched else "a_ptr"
    base_b = "b_ptr + pid_b * stride_bb" if batched else "b_ptr"
    start = f"({lo} + offs_k)" if split else "offs_k"
    w(f"a_ptrs = {base_a} + a_rows[:, None] * stride_am + {start}[None, :] * stride_ak")
    w(f"b_ptrs = {base_b} + {start}[:, None] * stride_bk + b_cols[None, :] * stride_bn")
    w("acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)")
    w(f"for k in range({lo}, {hi}, BLOCK_K):")
    w.indent()
    if uses_tma(kernel):
        w("if TMA:  # descriptors copy whole tiles to shared memory, zero-filled past the edges")
        w("    a = a_desc.load([pid_m * BLOCK_M, k])")
        if b_rows_are_n(kernel):
            w("    b = b_desc.load([pid_n * BLOCK_N, k]).T")
        else:
            w("    b = b_desc.load([k, pid_n * BLOCK_N])")
    w(f"{'elif' if uses_tma(kernel) else 'if'} EVEN_K:  # K is a multiple of BLOCK_K: no masks, "
      "the loads pipeline best")
    w("    a = tl.load(a_ptrs)")
    w("    b = tl.load(b_ptrs)")
    w("else:")
    w("    k_mask = k + offs_k < K")
    w("    a = tl.load(a_ptrs, mask=k_mask[None, :], other=0.0)")
    w("    b = tl.load(b_ptrs, mask=k_mask[:, None], other=0.0)")
    w(f'acc = tl.dot(a, b, acc, input_precision="{dot_precision(kernel)}")')
    w("a_ptrs += BLOCK_K * stride_ak")
    w("b_ptrs += BLOCK_K * stride_bk")
    w.dedent()


def _epilogue(w: Writer, kernel: Kernel, out_value: str | None = None) -> None:
    """Apply the fused ops to the accumulator tile and store it."""
    axes = epilogue_axes(kernel)
    w("rm = offs_m[:, None]")
    w("rn = offs_n[None, :]")
    w("m_mask = rm < M")
    w("n_mask = rn < N")
    tile_epilogue(w, kernel, axes, row="rm", col="rn")


def emit_kernel(w: Writer, kernel: Kernel, name: str) -> None:
    check_operands(kernel, epilogue_axes(kernel))
    cfg = kernel.config
    batched = is_batched(kernel)
    split = cfg.get("split_k", 1) > 1
    strides = ["stride_am", "stride_ak", "stride_bk", "stride_bn"]
    if batched:
        strides = ["stride_ab", *strides[:2], "stride_bb", *strides[2:]]
    persistent = cfg.get("persistent") and not split
    sizes = ["M", "N", "K"] + (["n_batch"] if batched and persistent else [])
    consts = ["BLOCK_M", "BLOCK_N", "BLOCK_K"] + (["GROUP_M"] if is_grouped(kernel) else [])
    if split:
        consts.append("SPLIT_K")
        params = ["a_ptr", "b_ptr", "ws_ptr"] + sizes + strides
    else:
        descs = ["a_desc", "b_desc"] if uses_tma(kernel) else []
        params = ["a_ptr", "b_ptr", *descs] + operand_params(kernel) + \
            [ptr(o.value) for o in kernel.outputs] + sizes + strides
    heuristics = {"EVEN_K": 'args["K"] % args["BLOCK_K"] == 0'}
    if uses_tma(kernel):
        consts.append("TMA")
        heuristics["TMA"] = 'args["a_desc"] is not None'
    kernel_header(w, kernel, name, params, consts + ["EVEN_K"], key=["M", "N", "K"],
                  heuristics=heuristics)
    w.indent()
    w("num_pid_m = tl.cdiv(M, BLOCK_M)")
    w("num_pid_n = tl.cdiv(N, BLOCK_N)")
    _program_tiles(w, kernel, batched, split, persistent)
    _k_loop(w, kernel, split)
    if split:
        w("rm = offs_m[:, None]")
        w("rn = offs_n[None, :]")
        slot = "(pid_k * tl.num_programs(1) + pid_b)" if batched else "pid_k"
        w("# partial sums go to the fp32 workspace; the reduce kernel adds them and runs the epilogue")
        w(f"tl.store(ws_ptr + ({slot} * M + rm) * N + rn, acc, mask=(rm < M) & (rn < N))")
    else:
        _epilogue(w, kernel)
    if persistent:
        w.dedent()
    w.dedent()
    w()
    if split:
        _emit_split_reduce(w, kernel, name)


def _program_tiles(w: Writer, kernel: Kernel, batched: bool, split: bool, persistent: bool) -> None:
    """The tile (and batch, and K slice) each program computes; a persistent program opens its loop
    over tiles here."""
    if persistent:
        w("# persistent: one program per SM strides over the output tiles")
        total = "num_pid_m * num_pid_n" + (" * n_batch" if batched else "")
        if uses_tma(kernel):  # flatten: the next tile's loads are pipelined under this tile's epilogue
            w(f"for tile_id in tl.range(tl.program_id(0), {total}, tl.num_programs(0), flatten=True):")
        else:
            w(f"for tile_id in range(tl.program_id(0), {total}, tl.num_programs(0)):")
        w.indent()
        if batched:
            w("pid_b = (tile_id // (num_pid_m * num_pid_n)).to(tl.int64)")
            w("tile = tile_id % (num_pid_m * num_pid_n)")
        _tile_ids(w, kernel, "tile" if batched else "tile_id")
    else:
        w("pid = tl.program_id(0)")
        if batched:
            w("pid_b = tl.program_id(1).to(tl.int64)")
        if split:
            w("pid_k = tl.program_id(2)")
        _tile_ids(w, kernel, "pid")


def _emit_split_reduce(w: Writer, kernel: Kernel, name: str) -> None:
    batched = is_batched(kernel)
    params = ["ws_ptr"] + operand_params(kernel) + [ptr(o.value) for o in kernel.outputs] + \
        ["M", "N"] + (["n_batch"] if batched else [])
    w("@triton.jit")
    for line in wrap_call(f"def {split_reduce_name(name)}",
                          params + [f"{c}: tl.constexpr" for c in ("SPLIT_K", "BLOCK_M", "BLOCK_N")],
                          ":", w.depth):
        w(line)
    w.indent()
    w("pid = tl.program_id(0)")
    if batched:
        w("pid_b = tl.program_id(1).to(tl.int64)")
    w("num_pid_n = tl.cdiv(N, BLOCK_N)")
    w("offs_m = (pid // num_pid_n) * BLOCK_M + tl.arange(0, BLOCK_M)")
    w("offs_n = (pid % num_pid_n) * BLOCK_N + tl.arange(0, BLOCK_N)")
    w("tile_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)")
    w("acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)")
    w("for s in tl.static_range(SPLIT_K):")
    slot = "(s * n_batch + pid_b)" if batched else "s"
    w(f"    acc += tl.load(ws_ptr + ({slot} * M + offs_m[:, None]) * N + offs_n[None, :], "
      "mask=tile_mask, other=0.0)")
    _epilogue(w, kernel)
    w.dedent()
    w()
