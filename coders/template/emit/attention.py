"""Flash attention: softmax(q k^T * scale) v, one block of query rows per program.

The key/value loop keeps a running row max and normalizer (online softmax), so the score matrix
never reaches global memory. Scores use exp2 with the scale folded into log2(e).

Without v (a `fuse softmax` kernel) the output is the probabilities themselves, softmax(q k^T *
scale + bias): a first loop over the keys finds each row's max and normalizer, a second computes
the scores again and writes them normalized. Computing q k^T twice costs 4*D FLOPs per output
element, less than writing it at D=64 (bmm_softmax: the unfused form writes the scores, reads them
back and writes the probabilities: three passes over the largest tensor instead of one).
"""

from __future__ import annotations

from coders.template.emit.common import Writer
from coders.template.emit.launch import Launcher, autotune_configs, kernel_header, output_alloc, wrap_call
from coders.template.ir import Kernel
from coders.template.ops import LOG2E


def _precision(kernel: Kernel) -> str:
    return kernel.config.get("precision", "ieee")


def _probs_only(kernel: Kernel) -> bool:
    return kernel.space["v"] is None


def emit_kernel(w: Writer, kernel: Kernel, name: str) -> None:
    if _probs_only(kernel):
        _emit_probs_kernel(w, kernel, name)
        return
    block = name.removesuffix("_kernel") + "_block"
    _emit_block(w, kernel, block)
    causal = kernel.space["causal"]
    out = kernel.outputs[0].value
    params = ["q_ptr", "k_ptr", "v_ptr", f"{out}_ptr", "Sq", "Sk", "D", "Dv", "qk_scale",
              "stride_qb", "stride_qm", "stride_qd", "stride_kb", "stride_kn", "stride_kd",
              "stride_vb", "stride_vn", "stride_vd"]
    kernel_header(w, kernel, name, params,
                  ["BLOCK_M", "BLOCK_N", "BLOCK_D", "BLOCK_DV", "EVEN_N", "EVEN_D"],
                  key=["Sq", "Sk", "D"],
                  heuristics={"EVEN_N": 'args["Sk"] % args["BLOCK_N"] == 0',
                              "EVEN_D": 'args["D"] == args["BLOCK_D"] and args["Dv"] == args["BLOCK_DV"]'})
    w.indent()
    w("pid_m = tl.program_id(0)")
    w("pid_b = tl.program_id(1).to(tl.int64)")
    w("offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)")
    w("offs_d = tl.arange(0, BLOCK_D)")
    w("offs_dv = tl.arange(0, BLOCK_DV)")
    w("q = tl.load(q_ptr + pid_b * stride_qb + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd,")
    w("            mask=(offs_m[:, None] < Sq) & (offs_d[None, :] < D), other=0.0)")
    w("m_i = tl.full([BLOCK_M], float(\"-inf\"), tl.float32)")
    w("l_i = tl.zeros([BLOCK_M], dtype=tl.float32)")
    w("acc = tl.zeros([BLOCK_M, BLOCK_DV], dtype=tl.float32)")
    w("k_base = k_ptr + pid_b * stride_kb")
    w("v_base = v_ptr + pid_b * stride_vb")
    if causal:
        w("# causal: key blocks wholly before this query block are fully visible (no mask);")
        w("# the blocks on the diagonal are masked; later ones are never visible")
        w("diagonal = (pid_m * BLOCK_M // BLOCK_N) * BLOCK_N")
        _call_block(w, block, "0", "diagonal", "False")
        _call_block(w, block, "diagonal", "tl.minimum(Sk, (pid_m + 1) * BLOCK_M)", "True")
    else:
        _call_block(w, block, "0", "Sk", "False")
    w("acc = acc / l_i[:, None]")
    w(f"tl.store({out}_ptr + (pid_b * Sq + offs_m[:, None]) * Dv + offs_dv[None, :],")
    w(f"         acc.to({out}_ptr.dtype.element_ty), mask=(offs_m[:, None] < Sq) & (offs_dv[None, :] < Dv))")
    w.dedent()
    w()


def _call_block(w: Writer, block: str, lo: str, hi: str, causal: str) -> None:
    args = ["q", "acc", "l_i", "m_i", "k_base", "v_base", lo, hi, "offs_m", "offs_d", "offs_dv", "Sk", "D",
            "Dv", "qk_scale", "stride_kn", "stride_kd", "stride_vn", "stride_vd", "BLOCK_N", causal,
            "EVEN_N", "EVEN_D"]
    for line in wrap_call(f"acc, l_i, m_i = {block}", args, "", w.depth):
        w(line)


def _emit_block(w: Writer, kernel: Kernel, block: str) -> None:
    """The key/value loop over [lo, hi), shared by the unmasked and the diagonal ranges."""
    p = _precision(kernel)
    w("@triton.jit")
    params = ["q", "acc", "l_i", "m_i", "k_base", "v_base", "lo", "hi", "offs_m", "offs_d", "offs_dv",
              "Sk", "D", "Dv", "qk_scale", "stride_kn", "stride_kd", "stride_vn", "stride_vd",
              "BLOCK_N: tl.constexpr", "CAUSAL: tl.constexpr", "EVEN_N: tl.constexpr",
              "EVEN_D: tl.constexpr"]
    for line in wrap_call(f"def {block}", params, ":", w.depth):
        w(line)
    w.indent()
    w("for start in range(lo, hi, BLOCK_N):")
    w.indent()
    w("offs_n = start + tl.arange(0, BLOCK_N)")
    w("kt_ptrs = k_base + offs_d[:, None] * stride_kd + offs_n[None, :] * stride_kn")
    w("v_ptrs = v_base + offs_n[:, None] * stride_vn + offs_dv[None, :] * stride_vd")
    w("if EVEN_N and EVEN_D:")
    w("    kt = tl.load(kt_ptrs)")
    w("    v = tl.load(v_ptrs)")
    w("else:")
    w("    kt = tl.load(kt_ptrs, mask=(offs_d[:, None] < D) & (offs_n[None, :] < Sk), other=0.0)")
    w("    v = tl.load(v_ptrs, mask=(offs_n[:, None] < Sk) & (offs_dv[None, :] < Dv), other=0.0)")
    w(f'scores = tl.dot(q, kt, input_precision="{p}") * qk_scale')
    w("if CAUSAL:")
    w("    scores = tl.where(offs_n[None, :] <= offs_m[:, None], scores, float(\"-inf\"))")
    w("if not EVEN_N:")
    w("    scores = tl.where(offs_n[None, :] < Sk, scores, float(\"-inf\"))")
    w("m_new = tl.maximum(m_i, tl.max(scores, axis=1))")
    w("probs = tl.exp2(scores - m_new[:, None])")
    w("# rescale what was accumulated under the old row max")
    w("alpha = tl.exp2(m_i - m_new)")
    w("l_i = l_i * alpha + tl.sum(probs, axis=1)")
    w(f'acc = acc * alpha[:, None] + tl.dot(probs.to(v.dtype), v, input_precision="{p}")')
    w("m_i = m_new")
    w.dedent()
    w("return acc, l_i, m_i")
    w.dedent()
    w()
    w()


def _scores_args(bias: bool) -> list[str]:
    return ["q", "k_base"] + (["bias_base"] if bias else []) + [
        "offs_m", "offs_n", "offs_d", "Sq", "Sk", "D", "qk_scale", "stride_kn", "stride_kd"] + (
        ["stride_bm", "stride_bn"] if bias else []) + ["EVEN_N", "EVEN_D"]


def _emit_scores(w: Writer, kernel: Kernel, fn: str) -> None:
    """One [BLOCK_M, BLOCK_N] tile of scores in log2 units, -inf past the last key."""
    bias = kernel.space.get("bias") is not None
    w("@triton.jit")
    params = _scores_args(bias)[:-2] + ["EVEN_N: tl.constexpr", "EVEN_D: tl.constexpr"]
    for line in wrap_call(f"def {fn}", params, ":", w.depth):
        w(line)
    w.indent()
    w("kt_ptrs = k_base + offs_d[:, None] * stride_kd + offs_n[None, :] * stride_kn")
    w("if EVEN_N and EVEN_D:")
    w("    kt = tl.load(kt_ptrs)")
    w("else:")
    w("    kt = tl.load(kt_ptrs, mask=(offs_d[:, None] < D) & (offs_n[None, :] < Sk), other=0.0)")
    w(f'scores = tl.dot(q, kt, input_precision="{_precision(kernel)}") * qk_scale')
    if bias:
        w("bias = tl.load(bias_base + offs_m[:, None] * stride_bm + offs_n[None, :] * stride_bn,")
        w("               mask=(offs_m[:, None] < Sq) & (offs_n[None, :] < Sk), other=0.0)")
        w(f"scores += bias.to(tl.float32) * {LOG2E}  # log2(e), like qk_scale")
    w("if not EVEN_N:")
    w("    scores = tl.where(offs_n[None, :] < Sk, scores, float(\"-inf\"))")
    w("return scores")
    w.dedent()
    w()
    w()


def _emit_probs_kernel(w: Writer, kernel: Kernel, name: str) -> None:
    fn = name.removesuffix("_kernel") + "_tile"
    _emit_scores(w, kernel, fn)
    bias = kernel.space.get("bias") is not None
    out = kernel.outputs[0].value
    params = ["q_ptr", "k_ptr"] + (["bias_ptr"] if bias else []) + [
        f"{out}_ptr", "Sq", "Sk", "D", "qk_scale", "stride_qb", "stride_qm", "stride_qd", "stride_kb",
        "stride_kn", "stride_kd"] + (["stride_bb", "stride_bm", "stride_bn"] if bias else [])
    kernel_header(w, kernel, name, params, ["BLOCK_M", "BLOCK_N", "BLOCK_D", "EVEN_N", "EVEN_D"],
                  key=["Sq", "Sk", "D"],
                  heuristics={"EVEN_N": 'args["Sk"] % args["BLOCK_N"] == 0',
                              "EVEN_D": 'args["D"] == args["BLOCK_D"]'})
    w.indent()
    w("pid_m = tl.program_id(0)")
    w("pid_b = tl.program_id(1).to(tl.int64)")
    w("offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)")
    w("offs_d = tl.arange(0, BLOCK_D)")
    w("q = tl.load(q_ptr + pid_b * stride_qb + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd,")
    w("            mask=(offs_m[:, None] < Sq) & (offs_d[None, :] < D), other=0.0)")
    w("k_base = k_ptr + pid_b * stride_kb")
    if bias:
        w("bias_base = bias_ptr + pid_b * stride_bb")
    call = wrap_call(f"scores = {fn}", _scores_args(bias), "", w.depth + 1)
    w("# pass 1: each row's max and sum of exponentials, kept online")
    w("m_i = tl.full([BLOCK_M], float(\"-inf\"), tl.float32)")
    w("l_i = tl.zeros([BLOCK_M], dtype=tl.float32)")
    w("for start in range(0, Sk, BLOCK_N):")
    w.indent()
    w("offs_n = start + tl.arange(0, BLOCK_N)")
    for line in call:
        w(line)
    w("m_new = tl.maximum(m_i, tl.max(scores, axis=1))")
    w("l_i = l_i * tl.exp2(m_i - m_new) + tl.sum(tl.exp2(scores - m_new[:, None]), axis=1)")
    w("m_i = m_new")
    w.dedent()
    w("# pass 2: the same scores again, written normalized")
    w("inv_l = 1.0 / l_i")
    w("for start in range(0, Sk, BLOCK_N):")
    w.indent()
    w("offs_n = start + tl.arange(0, BLOCK_N)")
    for line in call:
        w(line)
    w("probs = tl.exp2(scores - m_i[:, None]) * inv_l[:, None]")
    w(f"tl.store({out}_ptr + (pid_b * Sq + offs_m[:, None]) * Sk + offs_n[None, :],")
    w(f"         probs.to({out}_ptr.dtype.element_ty), mask=(offs_m[:, None] < Sq) & (offs_n[None, :] < Sk))")
    w.dedent()
    w.dedent()
    w()


def _emit_probs_launcher(w: Writer, kernel: Kernel, name: str, launcher: Launcher) -> None:
    sp = kernel.space
    q, k, bias = sp["q"], sp["k"], sp.get("bias")
    out = kernel.outputs[0]
    launcher.begin(w)
    w.indent()
    w(f"q3 = {q}.reshape(-1, {q}.shape[-2], {q}.shape[-1])")
    w(f"k3 = {k}.reshape(-1, {k}.shape[-2], {k}.shape[-1])")
    w("Sq, D = q3.shape[1], q3.shape[2]")
    w("# k arrives transposed, (..., D, Sk): read it through its strides")
    w("Sk = k3.shape[2]")
    w(f"{out.value} = {output_alloc(f'{q}.shape[:-1] + (Sk,)', out.dtype, f'{q}.device')}")
    _emit_qk_scale(w, sp["scale"])
    args = ["q3", "k3"] + (["b3"] if bias else []) + [out.value, "Sq", "Sk", "D", "qk_scale",
                                                     "q3.stride(0)", "q3.stride(1)", "q3.stride(2)",
                                                     "k3.stride(0)", "k3.stride(2)", "k3.stride(1)"]
    if bias:
        w("# the bias broadcasts over the batch: expanded, its batch stride is 0 (no copy)")
        w(f"b3 = {bias}.expand({out.value}.shape).reshape(-1, Sq, Sk)")
        args += ["b3.stride(0)", "b3.stride(1)", "b3.stride(2)"]
    w("# tl.dot needs every block dim >= 16")
    consts = ["BLOCK_D=max(16, triton.next_power_of_2(D))"]
    _launch(w, kernel, name, args, consts, launcher)


def _emit_qk_scale(w: Writer, scale: float | str | None) -> None:
    """The scores' factor: a constant, a wrapper variable, or 1/sqrt(D) (SDPA's default)."""
    if isinstance(scale, str):
        text = scale
    else:
        text = repr(float(scale)) if scale is not None else "1.0 / math.sqrt(D)"
    w(f"qk_scale = {text} * {LOG2E}  # log2(e): the kernel uses exp2")


def _launch(w: Writer, kernel: Kernel, name: str, args: list[str], consts: list[str],
            launcher: Launcher) -> None:
    """One program per BLOCK_M query rows of each batch entry; return the output."""
    cfg = kernel.config
    if cfg.get("autotune"):
        w("grid = lambda meta: (triton.cdiv(Sq, meta['BLOCK_M']), q3.shape[0])")
        kw = consts
    else:
        w(f"grid = (triton.cdiv(Sq, {cfg['BLOCK_M']}), q3.shape[0])")
        kw = [f"BLOCK_M={cfg['BLOCK_M']}", f"BLOCK_N={cfg['BLOCK_N']}", *consts,
              f"num_warps={cfg['num_warps']}", f"num_stages={cfg['num_stages']}"]
    for line in wrap_call(f"{name}[grid]", args + kw, "", w.depth):
        w(line)
    launcher.finish(w)
    w.dedent()
    w()


def emit_launcher(w: Writer, kernel: Kernel, name: str, launcher: Launcher) -> None:
    if _probs_only(kernel):
        _emit_probs_launcher(w, kernel, name, launcher)
        return
    sp = kernel.space
    q, k, v = sp["q"], sp["k"], sp["v"]
    out = kernel.outputs[0]
    launcher.begin(w)
    w.indent()
    w(f"q3 = {q}.reshape(-1, {q}.shape[-2], {q}.shape[-1])")
    w(f"k3 = {k}.reshape(-1, {k}.shape[-2], {k}.shape[-1])")
    w(f"v3 = {v}.reshape(-1, {v}.shape[-2], {v}.shape[-1])")
    w("Sq, D = q3.shape[1], q3.shape[2]")
    if sp["k_transposed"]:
        w("# k arrives transposed, (..., D, Sk): read it through its strides")
        w("Sk = k3.shape[2]")
        k_strides = ["k3.stride(0)", "k3.stride(2)", "k3.stride(1)"]
    else:
        w("Sk = k3.shape[1]")
        k_strides = ["k3.stride(0)", "k3.stride(1)", "k3.stride(2)"]
    w("Dv = v3.shape[2]")
    w(f"{out.value} = {output_alloc(f'{q}.shape[:-1] + (Dv,)', out.dtype, f'{q}.device')}")
    _emit_qk_scale(w, sp["scale"])
    args = ["q3", "k3", "v3", out.value, "Sq", "Sk", "D", "Dv", "qk_scale",
            "q3.stride(0)", "q3.stride(1)", "q3.stride(2)", *k_strides,
            "v3.stride(0)", "v3.stride(1)", "v3.stride(2)"]
    w("# tl.dot needs every block dim >= 16")
    consts = ["BLOCK_D=max(16, triton.next_power_of_2(D))", "BLOCK_DV=max(16, triton.next_power_of_2(Dv))"]
    _launch(w, kernel, name, args, consts, launcher)


def tuning_space(kernel: Kernel) -> list[dict]:
    cfg = kernel.config
    keys = ["BLOCK_M", "BLOCK_N", "num_warps", "num_stages"]
    current = {k: cfg[k] for k in keys}
    if _probs_only(kernel):  # no v tile to hold: wider key blocks make wider stores
        candidates = ((128, 128, 8, 3), (128, 64, 8, 3), (64, 128, 4, 3), (128, 128, 4, 2), (64, 256, 8, 3),
                      (64, 64, 4, 3))
    else:
        candidates = ((128, 64, 8, 3), (128, 64, 4, 3), (128, 128, 8, 2), (64, 64, 4, 3), (128, 32, 4, 3),
                      (64, 32, 4, 2))
    menu = [current] + [dict(zip(keys, c, strict=True)) for c in candidates]
    return autotune_configs(menu, keys)
