"""The matmul launcher: operand views and strides, output allocation, the grid (split-K, persistent,
autotuned), TMA descriptors and their autotuning hook."""

from __future__ import annotations

from coders.template.emit.common import Writer
from coders.template.emit.launch import Launcher, output_alloc, wrap_call
from coders.template.emit.matmul.layout import (
    b_block_keys,
    fp32_layout_copy,
    group_size,
    is_batched,
    is_grouped,
    k_padding,
    split_reduce_name,
    uses_tma,
)
from coders.template.ir import Kernel


def emit_launcher(w: Writer, kernel: Kernel, name: str, launcher: Launcher) -> None:
    cfg = kernel.config
    a = kernel.space["a"]
    batched = is_batched(kernel)
    launcher.begin(w)
    w.indent()
    launcher.contiguous(w, [o.value for o in kernel.operands])
    strides, a_arg, b_arg = _operand_views(w, kernel)
    for out in kernel.outputs:  # the matmul's own result and each fused op's that is read later
        w(f"{out.value} = {output_alloc(f'{a}.shape[:-1] + (N,)', out.dtype, f'{a}.device')}")
    split = cfg.get("split_k", 1)
    tiles = "triton.cdiv(M, {bm}) * triton.cdiv(N, {bn})"
    consts = {"BLOCK_M": cfg["BLOCK_M"], "BLOCK_N": cfg["BLOCK_N"], "BLOCK_K": cfg["BLOCK_K"]}
    if is_grouped(kernel):
        consts["GROUP_M"] = group_size(kernel)
    launch_kw = [f"num_warps={cfg['num_warps']}", f"num_stages={cfg['num_stages']}"]
    operands = [o.value for o in kernel.operands]
    outs = [o.value for o in kernel.outputs]
    if split > 1:
        grid = tiles.format(bm=cfg["BLOCK_M"], bn=cfg["BLOCK_N"])
        main_kw = [f"{k}={v}" for k, v in consts.items()] + [f"SPLIT_K={split}"] + launch_kw
        _split_k_launch(w, kernel, name, grid, [a_arg, b_arg, "ws", "M", "N", "K", *strides], main_kw)
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


def _operand_views(w: Writer, kernel: Kernel) -> tuple[list[str], str, str]:
    """A and B as the kernel reads them (3-D for a batched matmul, A's leading dims folded into M),
    with M, N, K; B copied into the order its dots read fastest where that pays. Returns the strides
    and the names of the two views."""
    a, b = kernel.space["a"], kernel.space["b"]
    form = kernel.space["form"]
    batched = is_batched(kernel)
    if batched:
        w(f"a3 = {a}.reshape(-1, {a}.shape[-2], {a}.shape[-1])")
        w(f"b3 = {b}.reshape(-1, {b}.shape[-2], {b}.shape[-1])")
        w("n_batch, M, K = a3.shape")
        w("N = b3.shape[-1]")
        if fp32_layout_copy(kernel):
            _layout_comment(w, kernel)
            _pad_k(w, kernel, "a3", "b3 = torch.nn.functional.pad(b3.transpose(1, 2), (0, K - b3.shape[1]))"
                   ".transpose(1, 2)", "b3 = b3.transpose(1, 2).contiguous().transpose(1, 2)")
        strides = ["a3.stride(0)", "a3.stride(1)", "a3.stride(2)", "b3.stride(0)", "b3.stride(1)",
                   "b3.stride(2)"]
        a_arg, b_arg = "a3", "b3"
    else:
        w(f"K = {a}.shape[-1]")
        w(f"a2 = {a}.reshape(-1, K)")
        w("M = a2.shape[0]")
        if fp32_layout_copy(kernel):
            _layout_comment(w, kernel)
            _pad_k(w, kernel, "a2", f"{b} = torch.nn.functional.pad({b}.t(), (0, K - {b}.shape[0])).t()",
                   f"{b} = {b}.t().contiguous().t()")
        elif form == "linear":  # the weight (N, K) is K-major as stored: padded only where rows misalign
            _pad_k(w, kernel, "a2", f"{b} = torch.nn.functional.pad({b}, (0, K - {b}.shape[1]))", None)
        if form == "linear":
            w(f"N = {b}.shape[0]")
            # B[k, n] = W[n, k]: walk the weight through its strides instead of transposing it
            strides = ["a2.stride(0)", "a2.stride(1)", f"{b}.stride(1)", f"{b}.stride(0)"]
        else:
            w(f"N = {b}.shape[1]")
            strides = ["a2.stride(0)", "a2.stride(1)", f"{b}.stride(0)", f"{b}.stride(1)"]
        a_arg, b_arg = "a2", b
    return strides, a_arg, b_arg


def _split_k_launch(w: Writer, kernel: Kernel, name: str, grid: str, args: list[str], kw: list[str]) -> None:
    """Split-K: partial tiles into an fp32 workspace, then the reduce kernel that runs the epilogue."""
    cfg, a, batched = kernel.config, kernel.space["a"], is_batched(kernel)
    split = cfg.get("split_k", 1)
    w(f"ws = torch.empty(({split},{' n_batch,' if batched else ''} M, N), device={a}.device, "
      "dtype=torch.float32)")
    w(f"grid = ({grid}, {'n_batch' if batched else '1'}, {split})")
    for line in wrap_call(f"{name}[grid]", args + kw, "", w.depth):
        w(line)
    w(f"grid = ({grid}, {'n_batch' if batched else '1'})")
    args = ["ws", *[o.value for o in kernel.operands], *[o.value for o in kernel.outputs], "M", "N"] + \
        (["n_batch"] if batched else [])
    kw = [f"SPLIT_K={split}", f"BLOCK_M={cfg['BLOCK_M']}", f"BLOCK_N={cfg['BLOCK_N']}"]
    for line in wrap_call(f"{split_reduce_name(name)}[grid]", args + kw, "", w.depth):
        w(line)


def _pad_k(w: Writer, kernel: Kernel, a: str, b_padded: str, b_copy: str | None) -> None:
    """B's K-major copy (`b_copy`), or where K is misaligned at run time copies of A and B zero-padded
    along K to a multiple of BLOCK_K (layout.py k_padding says why and when)."""
    padding = k_padding(kernel)
    if padding is None:
        if b_copy:
            w(b_copy)
        return
    multiple, test = padding
    w(f"if K % {test}:")
    w.indent()
    if test == multiple:
        w("# K is not a multiple of BLOCK_K: the copies zero-pad it to one (A's costs one more pass),")
    else:
        w("# rows of K fp32 values are not 16-byte aligned: zero-pad A and the weight along K to a")
        w("# multiple of BLOCK_K (a copy of the weight per call, paid only here),")
    w("# so rows are 16-byte aligned (vector loads, 16-byte cp.async) and the K loop runs unmasked")
    w("# (EVEN_K); the zeros add nothing to the dot")
    w(f"K = triton.cdiv(K, {multiple}) * {multiple}")
    w(f"{a} = torch.nn.functional.pad({a}, (0, K - {a}.shape[-1]))")
    w(b_padded)
    w.dedent()
    if b_copy:
        w("else:")
        w(f"    {b_copy}")


def _layout_comment(w: Writer, kernel: Kernel) -> None:
    if fp32_layout_copy(kernel) == "k":
        w("# tf32 tensor-core dots read B fastest K-major: one copy into that order pays for itself")
    else:
        w("# fp32 FMA dots read B fastest N-major: one copy into that order pays for itself")


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
        b_block = "[" + ", ".join(str(cfg[k]) for k in b_block_keys(kernel)) + "]"
    w(f"    a_desc = TensorDescriptor.from_tensor({a_arg}, {a_block})")
    w(f"    b_desc = TensorDescriptor.from_tensor({b_arg}, {b_block})")


def emit_config_hook(w: Writer, kernel: Kernel, name: str) -> str | None:
    """An autotuned TMA kernel's descriptors take the block shape of each config tried."""
    if not uses_tma(kernel):
        return None
    hook = name.removesuffix("_kernel") + "_tma_blocks"
    bn, bk = b_block_keys(kernel)
    w(f"def {hook}(nargs):")
    w('    """Give the TMA descriptors the block shape of the config being tried."""')
    w('    if nargs["a_desc"] is not None:')
    w('        nargs["a_desc"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_K"]]')
    w(f'        nargs["b_desc"].block_shape = [nargs["{bn}"], nargs["{bk}"]]')
    w()
    w()
    return hook
