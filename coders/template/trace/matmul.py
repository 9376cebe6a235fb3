"""Handlers of matmuls (linear, mm, bmm, addmm, einsum of one matmul) and scaled dot-product
attention."""

from __future__ import annotations

from typing import Any

from coders.template.trace.einsum import einsum_chain
from coders.template.trace.graph import Ref, unsupported
from coders.template.trace.interface import Builder


def matmul(nz: Builder, name: str, op: str, b: dict, result: Any) -> Ref:
    if op == "linear":
        x, w, bias = b["input"], b["weight"], b.get("bias")
        if len(nz.shape(w)) != 2:
            raise unsupported("linear with a non-2D weight")
        return nz.add(name, "matmul", "linear", [x, w, bias], {"form": "linear"}, like=result)
    if op in ("addmm", "baddbmm"):
        bias, a, m = b["input"], b["mat1"], b["mat2"]
        beta, alpha = b.get("beta", 1), b.get("alpha", 1)
        form = "mm" if op == "addmm" else "bmm"
        ref = nz.add(f"{name}_mm" if (alpha != 1 or beta != 0) else name, "matmul", form, [a, m, None],
                     {"form": form}, like=result)
        if alpha != 1:
            ref = nz.pw("mul", [ref, alpha], base=f"{name}_alpha" if beta != 0 else name)
        if beta == 0:
            return ref
        if beta != 1:
            bias = nz.pw("mul", [bias, beta], base=f"{name}_beta")
        return nz.pw("add", [ref, bias], base=f"{name}_bias")
    a, m = b["input"], b["other"]
    sa, sb = nz.shape(a), nz.shape(m)
    if len(sa) < 2 or len(sb) < 2:
        raise unsupported("matmul with a 1-D operand")
    if len(sb) == 2:
        form = "mm"  # (..., M, K) @ (K, N): leading dims of a fold into M
    else:
        form = "bmm"
        if len(sa) != len(sb):
            raise unsupported("matmul with operands of different ranks")
    return nz.add(name, "matmul", form, [a, m, None], {"form": form}, like=result)


def einsum(nz: Builder, name: str, op: str, b: dict, result: Any) -> Ref:
    """An einsum that is one matmul (einsum_form) becomes that matmul node; any other, a chain of
    matmuls and products (trace/einsum.py)."""
    args, kwargs = list(b["args"]), b["kwargs"]
    if not args or not isinstance(args[0], str) or kwargs:
        raise unsupported("einsum without a literal equation")
    equation, operands = args[0], args[1:]
    if len(operands) == 1 and isinstance(operands[0], list | tuple):
        operands = list(operands[0])
    if len(operands) < 2 or not all(nz.is_tensor(t) for t in operands):
        raise unsupported(f"einsum {equation!r} of fewer than two tensors")
    form = einsum_form(equation) if len(operands) == 2 else None
    if form is None:  # several matmuls and products, or one in another layout
        return einsum_chain(nz, name, equation, list(operands), result)
    return nz.add(name, "matmul", form, [operands[0], operands[1], None], {"form": form}, like=result)


def einsum_form(equation: str) -> str | None:
    """The matmul node form an einsum equation of two operands equals, or None:
    "...k,kn->...n" is "mm" (A's leading dims fold into M), "...k,nk->...n" is "linear" (B is (N, K)),
    "b..mk,b..kn->b..mn" is "bmm" (the same batch letters, in the same order, leading every term)."""
    text = equation.replace(" ", "")
    if "->" not in text or "." in text:
        return None
    lhs, out = text.split("->")
    terms = lhs.split(",")
    if len(terms) != 2 or any(len(set(t)) != len(t) or not t.isalpha() for t in terms + [out]):
        return None
    ta, tb = terms
    contracted = (set(ta) & set(tb)) - set(out)
    if len(contracted) != 1 or len(tb) < 2:
        return None
    c = contracted.pop()
    if len(tb) == 2 and len(ta) >= 2 and ta[-1] == c:
        n = tb.replace(c, "")
        if n not in ta and out == ta[:-1] + n:
            return "mm" if tb[0] == c else "linear"
        return None
    batch = ta[:-2]
    if len(ta) == len(tb) >= 3 and tb[:-2] == batch and ta[-1] == c == tb[-2] and \
            out == batch + ta[-2] + tb[-1] and ta[-2] != tb[-1]:
        return "bmm"
    return None


def sdpa(nz: Builder, name: str, op: str, b: dict, result: Any) -> Ref:
    if b.get("attn_mask") is not None or b.get("dropout_p", 0.0) or b.get("enable_gqa"):
        raise unsupported("scaled_dot_product_attention with a mask, dropout or GQA")
    q, k, v = b["query"], b["key"], b["value"]
    if not (nz.shape(q)[:-2] == nz.shape(k)[:-2] == nz.shape(v)[:-2]) or len(nz.shape(q)) < 3:
        raise unsupported("attention with broadcast batch dims")
    scale = b.get("scale")
    if isinstance(scale, Ref):
        raise unsupported("attention with a computed scale")
    return nz.add(name, "attention", "attention", [q, k, v],
                  {"causal": bool(b.get("is_causal", False)), "scale": scale}, like=result)
