"""Matmul kernels (linear, mm, bmm) with the epilogue fused onto the fp32 accumulator tile.

Each program computes one BLOCK_M x BLOCK_N output tile; A and B are read through their strides,
so transposed views cost no copy (16-bit 2-D GEMMs load through TMA descriptors where rows are
16-byte aligned). Options the planner turns on: grouped tile order (GROUP_M),
split-K (partial tiles to an fp32 workspace, then a reduce kernel that runs the epilogue), a
persistent grid, and autotuning.
"""

from __future__ import annotations

from coders.template.emit.common import Axis, FusionError, Writer, check_operands, ptr, tile_epilogue, var
from coders.template.emit.launch import Launcher, autotune_configs, kernel_header, output_alloc, wrap_call
from coders.template.ir import Kernel


def _batched(kernel: Kernel) -> bool:
    return kernel.space["form"] == "bmm"


def epilogue_axes(kernel: Kernel) -> list[Axis]:
    rank = len(kernel.space["traced"])
    if _batched(kernel):
        return [Axis(list(range(rank - 2)), "pid_b", "n_batch", None),
                Axis([rank - 2], "rm", "M", "m_mask"), Axis([rank - 1], "rn", "N", "n_mask")]
    return [Axis(list(range(rank - 1)), "rm", "M", "m_mask"), Axis([rank - 1], "rn", "N", "n_mask")]


def triangle_outputs(kernel: Kernel) -> tuple[str, int] | None:
    """(kind, diagonal) when every output is triu / tril of the same diagonal: zero off the triangle
    whatever the product there (torch.triu(a @ b), KernelBench 14/15)."""
    ops = {op.out: op for op in kernel.body}
    found = set()
    for out in kernel.outputs:
        op = ops.get(out.src)
        if op is None or op.op not in ("triu", "tril"):
            return None
        found.add((op.op, int(op.attrs["diagonal"])))
    return found.pop() if len(found) == 1 else None


def check_triangles(kernel: Kernel) -> None:
    """triu / tril in the epilogue read the tile's row and column: rm is a row of the matrix only
    when no leading dims fold into M (a 2-D matmul, or a bmm whose batch is its own grid axis)."""
    if not _batched(kernel) and len(kernel.space["traced"]) != 2:
        raise FusionError("triu / tril after a matmul whose leading dims fold into its rows")


def _precision(kernel: Kernel) -> str:
    return kernel.config.get("precision", "ieee")


def uses_tma(kernel: Kernel) -> bool:
    """16-bit 2-D GEMMs load their tiles with TMA descriptors when the GPU and the operands allow
    it (pointer loads otherwise), from the port on. On the H200, autotuned, TMA loads ran the suite's
    linear/matmul shapes at 0.82-0.98x cuBLAS against 0.70-0.90x for pointer loads, and 0.82-1.00x
    persistent (BENCHMARKS.md). Tied to `persistent` alone, the planner never reached it: the
    pointer-load kernel's autotune was a coin toss against the port, and was rejected."""
    return kernel.config.get("split_k", 1) == 1 and not _batched(kernel) \
        and kernel.space.get("dtype") in ("float16", "bfloat16")


def _b_rows_are_n(kernel: Kernel) -> bool:
    """A linear's weight is [N, K]: its TMA tiles are [BLOCK_N, BLOCK_K], transposed in the dot."""
    return kernel.space["form"] == "linear"


def _fp32_layout_copy(kernel: Kernel) -> str | None:
    """fp32 dots want B in a particular memory order (measured on the H200, 4096^3): FMA (ieee) dots
    ran 3.05 ms with B N-major and 6.41 ms K-major; tf32x3 tensor-core dots 1.74 ms K-major and
    2.51 ms N-major. One copy of B into the faster order costs ~0.03 ms there. Returns the order B
    is copied into ("n" or "k"), or None when its order already fits or the dot is 16-bit."""
    if kernel.space.get("dtype") != "float32" or kernel.config.get("split_k", 1) > 1:
        return None
    k_major = _b_rows_are_n(kernel)
    tensor_cores = _precision(kernel) in ("tf32", "tf32x3")
    if tensor_cores and not k_major:
        return "k"
    if not tensor_cores and k_major:
        return "n"
    return None


def _operand_params(kernel: Kernel) -> list[str]:
    return [var(o.value) if o.scalar else ptr(o.value) for o in kernel.operands]


def _grouped(kernel: Kernel) -> bool:
    """Autotuned kernels always walk tiles in groups: on the H200 the persistent TMA GEMMs ran
    0.88-0.93x cuBLAS autotuned in row order and 0.94-1.02x with GROUP_M=8 (BENCHMARKS.md)."""
    return kernel.config.get("GROUP_M", 1) > 1 or bool(kernel.config.get("autotune"))


def _group_size(kernel: Kernel) -> int:
    return kernel.config["GROUP_M"] if kernel.config.get("GROUP_M", 1) > 1 else 8


def _tile_ids(w: Writer, kernel: Kernel, tile: str) -> None:
    """pid_m, pid_n of a tile index; grouped so that GROUP_M rows of tiles share B in L2."""
    if _grouped(kernel):
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
    batched = _batched(kernel)
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
        if _b_rows_are_n(kernel):
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
    w(f'acc = tl.dot(a, b, acc, input_precision="{_precision(kernel)}")')
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
    batched = _batched(kernel)
    split = cfg.get("split_k", 1) > 1
    strides = ["stride_am", "stride_ak", "stride_bk", "stride_bn"]
    if batched:
        strides = ["stride_ab", *strides[:2], "stride_bb", *strides[2:]]
    persistent = cfg.get("persistent") and not split
    sizes = ["M", "N", "K"] + (["n_batch"] if batched and persistent else [])
    consts = ["BLOCK_M", "BLOCK_N", "BLOCK_K"] + (["GROUP_M"] if _grouped(kernel) else [])
    if split:
        consts.append("SPLIT_K")
        params = ["a_ptr", "b_ptr", "ws_ptr"] + sizes + strides
    else:
        descs = ["a_desc", "b_desc"] if uses_tma(kernel) else []
        params = ["a_ptr", "b_ptr", *descs] + _operand_params(kernel) + \
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


def _reduce_name(name: str) -> str:
    return name.removesuffix("_kernel") + "_splitk_reduce_kernel"


def _emit_split_reduce(w: Writer, kernel: Kernel, name: str) -> None:
    batched = _batched(kernel)
    params = ["ws_ptr"] + _operand_params(kernel) + [ptr(o.value) for o in kernel.outputs] + \
        ["M", "N"] + (["n_batch"] if batched else [])
    w("@triton.jit")
    for line in wrap_call(f"def {_reduce_name(name)}",
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


def emit_launcher(w: Writer, kernel: Kernel, name: str, launcher: Launcher) -> None:
    cfg = kernel.config
    sp = kernel.space
    a, b = sp["a"], sp["b"]
    form = sp["form"]
    batched = _batched(kernel)
    launcher.begin(w)
    w.indent()
    launcher.contiguous(w, [o.value for o in kernel.operands])
    if batched:
        w(f"a3 = {a}.reshape(-1, {a}.shape[-2], {a}.shape[-1])")
        w(f"b3 = {b}.reshape(-1, {b}.shape[-2], {b}.shape[-1])")
        w("n_batch, M, K = a3.shape")
        w("N = b3.shape[-1]")
        if _fp32_layout_copy(kernel):
            _layout_comment(w, kernel)
            w("b3 = b3.transpose(1, 2).contiguous().transpose(1, 2)")
        strides = ["a3.stride(0)", "a3.stride(1)", "a3.stride(2)", "b3.stride(0)", "b3.stride(1)",
                   "b3.stride(2)"]
        a_arg, b_arg = "a3", "b3"
    else:
        w(f"K = {a}.shape[-1]")
        w(f"a2 = {a}.reshape(-1, K)")
        w("M = a2.shape[0]")
        if _fp32_layout_copy(kernel):
            _layout_comment(w, kernel)
            w(f"{b} = {b}.t().contiguous().t()")
        if form == "linear":
            w(f"N = {b}.shape[0]")
            # B[k, n] = W[n, k]: walk the weight through its strides instead of transposing it
            strides = ["a2.stride(0)", "a2.stride(1)", f"{b}.stride(1)", f"{b}.stride(0)"]
        else:
            w(f"N = {b}.shape[1]")
            strides = ["a2.stride(0)", "a2.stride(1)", f"{b}.stride(0)", f"{b}.stride(1)"]
        a_arg, b_arg = "a2", b
    for out in kernel.outputs:  # the matmul's own result and each fused op's that is read later
        w(f"{out.value} = {output_alloc(f'{a}.shape[:-1] + (N,)', out.dtype, f'{a}.device')}")
    split = cfg.get("split_k", 1)
    tiles = "triton.cdiv(M, {bm}) * triton.cdiv(N, {bn})"
    consts = {"BLOCK_M": cfg["BLOCK_M"], "BLOCK_N": cfg["BLOCK_N"], "BLOCK_K": cfg["BLOCK_K"]}
    if _grouped(kernel):
        consts["GROUP_M"] = _group_size(kernel)
    launch_kw = [f"num_warps={cfg['num_warps']}", f"num_stages={cfg['num_stages']}"]
    operands = [o.value for o in kernel.operands]
    outs = [o.value for o in kernel.outputs]
    if split > 1:
        w(f"ws = torch.empty(({split},{' n_batch,' if batched else ''} M, N), device={a}.device, "
          "dtype=torch.float32)")
        grid = tiles.format(bm=cfg["BLOCK_M"], bn=cfg["BLOCK_N"])
        w(f"grid = ({grid}, {'n_batch' if batched else '1'}, {split})")
        args = [a_arg, b_arg, "ws", "M", "N", "K", *strides]
        kw = [f"{k}={v}" for k, v in consts.items()] + [f"SPLIT_K={split}"] + launch_kw
        for line in wrap_call(f"{name}[grid]", args + kw, "", w.depth):
            w(line)
        w(f"grid = ({grid}, {'n_batch' if batched else '1'})")
        args = ["ws", *operands, *outs, "M", "N"] + (["n_batch"] if batched else [])
        kw = [f"SPLIT_K={split}", f"BLOCK_M={cfg['BLOCK_M']}", f"BLOCK_N={cfg['BLOCK_N']}"]
        for line in wrap_call(f"{_reduce_name(name)}[grid]", args + kw, "", w.depth):
            w(line)
    else:
        persistent = cfg.get("persistent")
        if uses_tma(kernel):
            _tma_descriptors(w, kernel, a_arg, b_arg)
        descs = ["a_desc", "b_desc"] if uses_tma(kernel) else []
        args = [a_arg, b_arg, *descs, *operands, *outs, "M", "N", "K"] + \
            (["n_batch"] if batched and persistent else []) + strides
        if cfg.get("autotune"):
            tiles_meta = "triton.cdiv(M, meta['BLOCK_M']) * triton.cdiv(N, meta['BLOCK_N'])"
            if persistent:
                total = f"{tiles_meta}" + (" * n_batch" if batched else "")
                w(f"grid = lambda meta: (min({total}, _num_programs({a}.device)),)")
            else:
                w(f"grid = lambda meta: ({tiles_meta}, {'n_batch' if batched else '1'})")
            kw = []
        else:
            grid = tiles.format(bm=cfg["BLOCK_M"], bn=cfg["BLOCK_N"])
            if persistent:
                total = grid + (" * n_batch" if batched else "")
                w(f"grid = (min({total}, _num_programs({a}.device)),)")
            else:
                w(f"grid = ({grid}, {'n_batch' if batched else '1'})")
            kw = [f"{k}={v}" for k, v in consts.items()] + launch_kw
        for line in wrap_call(f"{name}[grid]", args + kw, "", w.depth):
            w(line)
    launcher.finish(w)
    w.dedent()
    w()


def _layout_comment(w: Writer, kernel: Kernel) -> None:
    if _fp32_layout_copy(kernel) == "k":
        w("# tf32 tensor-core dots read B fastest K-major: one copy into that order pays for itself")
    else:
        w("# fp32 FMA dots read B fastest N-major: one copy into that order pays for itself")


def _b_block(kernel: Kernel) -> tuple[str, str]:
    return ("BLOCK_N", "BLOCK_K") if _b_rows_are_n(kernel) else ("BLOCK_K", "BLOCK_N")


def _tma_descriptors(w: Writer, kernel: Kernel, a_arg: str, b_arg: str) -> None:
    """Descriptors when TMA is usable; None selects the kernel's pointer loads."""
    cfg = kernel.config
    w("a_desc = b_desc = None")
    w(f"if _tma_ready({a_arg}, {b_arg}):")
    if cfg.get("autotune"):
        w("    # block shapes are set per config by the autotuner's pre_hook")
        a_block, b_block = "[1, 1]", "[1, 1]"
    else:
        a_block = f"[{cfg['BLOCK_M']}, {cfg['BLOCK_K']}]"
        b_block = "[" + ", ".join(str(cfg[k]) for k in _b_block(kernel)) + "]"
    w(f"    a_desc = TensorDescriptor.from_tensor({a_arg}, {a_block})")
    w(f"    b_desc = TensorDescriptor.from_tensor({b_arg}, {b_block})")


def emit_config_hook(w: Writer, kernel: Kernel, name: str) -> str | None:
    """An autotuned TMA kernel's descriptors take the block shape of each config tried."""
    if not uses_tma(kernel):
        return None
    hook = name.removesuffix("_kernel") + "_tma_blocks"
    bn, bk = _b_block(kernel)
    w(f"def {hook}(nargs):")
    w('    """Give the TMA descriptors the block shape of the config being tried."""')
    w('    if nargs["a_desc"] is not None:')
    w('        nargs["a_desc"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_K"]]')
    w(f'        nargs["b_desc"].block_shape = [nargs["{bn}"], nargs["{bk}"]]')
    w()
    w()
    return hook


def tuning_space(kernel: Kernel) -> list[dict]:
    cfg = kernel.config
    keys = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages"]
    current = {k: cfg[k] for k in keys}
    group = {"GROUP_M": _group_size(kernel)} if _grouped(kernel) else {}
    if kernel.space.get("dtype") in ("float16", "bfloat16"):
        candidates = ((128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 8, 4), (128, 128, 64, 4, 4),
                      (128, 64, 64, 4, 4), (64, 128, 64, 4, 4), (64, 64, 64, 4, 4))
    else:
        candidates = ((128, 128, 32, 8, 3), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (64, 64, 32, 4, 4),
                      (128, 128, 16, 8, 4), (32, 64, 32, 4, 3))
    menu = [current] + [dict(zip(keys, c, strict=True)) for c in candidates]
    return autotune_configs([{**m, **group} for m in menu], keys)
