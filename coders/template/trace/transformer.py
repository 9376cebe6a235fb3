"""nn.MultiheadAttention, nn.TransformerEncoderLayer and nn.TransformerEncoder: traced into the nodes
the coder already lowers (matmuls, views, flash attention, layer norms, elementwise ops).

    MultiheadAttention   q, k, v = linear(query | key | value, in_proj_weight.chunk(3)[i], bias...)
                         split into heads, (N, heads, L, head_dim), by a view; one attention node;
                         the heads merged back by a view; out_proj as a linear
    EncoderLayer         x = norm1(x + sa(x)); x = norm2(x + ff(x)), or the norm_first form, with
                         ff = linear2(activation(linear1(x))) (relu or gelu)
    Encoder              its layers in order, then its norm if it has one

Masks (attn_mask, key_padding_mask, is_causal), bias_k / bias_v, add_zero_attn, separate q/k/v
projection weights and dropout that is live (training mode with p > 0: random) are refused. The
averaged attention weights MultiheadAttention also returns are a value no kernel computes: a task
that uses them is refused when it does.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from coders.template.ir import self_path
from coders.template.trace.graph import Ref, Uncomputable, unsupported
from coders.template.trace.reductions import rowwise

MHA_PARAMS = ["query", "key", "value", "key_padding_mask", "need_weights", "attn_mask",
              "average_attn_weights", "is_causal"]


def trace_module(nz, n, module: nn.Module, path: str, args: list, kwargs: dict, result: Any) -> Any:
    handler = {nn.MultiheadAttention: trace_mha, nn.TransformerEncoder: trace_encoder,
               nn.TransformerEncoderLayer: trace_encoder_layer}[type(module)]
    return handler(nz, n, module, path, args, kwargs, result)


def _meta(nz, like: Ref, shape: tuple[int, ...]) -> torch.Tensor:
    return torch.empty(shape, device="meta", dtype=nz.meta(like).dtype)


def _linear(nz, name: str, x: Ref, weight: Ref, bias: Ref | None) -> Ref:
    shape = (*nz.shape(x)[:-1], nz.shape(weight)[0])
    return nz.add(name, "matmul", "linear", [x, weight, bias], {"form": "linear"}, like=_meta(nz, x, shape))


def _module_linear(nz, name: str, module: nn.Linear, path: str, x: Ref) -> Ref:
    bias = nz.param(f"{path}.bias") if module.bias is not None else None
    return _linear(nz, name, x, nz.param(f"{path}.weight"), bias)


def _live_dropout(module: nn.Module, *names: str) -> bool:
    return module.training and any(getattr(module, n).p > 0 for n in names)


# --------------------------------------------------------------------------------------------------
# nn.MultiheadAttention
# --------------------------------------------------------------------------------------------------

def trace_mha(nz, n, module: nn.MultiheadAttention, path: str, args: list, kwargs: dict,
              result: Any) -> tuple:
    bound = dict(zip(MHA_PARAMS, args, strict=False)) | dict(kwargs)
    for key in ("key_padding_mask", "attn_mask"):
        if bound.get(key) is not None:
            raise unsupported(f"MultiheadAttention with {key}")
    if bound.get("is_causal"):
        raise unsupported("MultiheadAttention with is_causal")
    out = attention_block(nz, n.name, module, path, bound["query"], bound["key"], bound["value"])
    if not bound.get("need_weights", True):
        return (out, None)
    return (out, Uncomputable("the averaged attention weights of nn.MultiheadAttention (need_weights)"))


def attention_block(nz, name: str, module: nn.MultiheadAttention, path: str, query: Ref, key: Ref,
                    value: Ref) -> Ref:
    """out_proj(attention(q, k, v) over heads), as matmul, view and attention nodes."""
    if not module._qkv_same_embed_dim or module.bias_k is not None or module.add_zero_attn:
        raise unsupported("MultiheadAttention with kdim/vdim, bias_k/bias_v or add_zero_attn")
    if module.training and module.dropout > 0:
        raise unsupported(f"MultiheadAttention(dropout={module.dropout}) in training mode (random)")
    if not all(nz.is_tensor(t) and len(nz.shape(t)) == 3 for t in (query, key, value)):
        raise unsupported("MultiheadAttention of unbatched inputs")
    weight = nz.param(f"{path}.in_proj_weight")
    bias = nz.param(f"{path}.in_proj_bias") if module.in_proj_bias is not None else None
    embed = nz.shape(weight)[1]
    heads = []
    for i, (role, x) in enumerate(zip("qkv", (query, key, value), strict=True)):
        w = nz.py(f"{name}_w{role}", f"{weight.name}.chunk(3)[{i}]", _meta(nz, weight, (embed, embed)),
                  args=[weight])
        b = None if bias is None else nz.py(f"{name}_b{role}", f"{bias.name}.chunk(3)[{i}]",
                                             _meta(nz, bias, (embed,)), args=[bias])
        heads.append(_split_heads(nz, f"{name}_{role}", _linear(nz, f"{name}_{role}_proj", x, w, b),
                                  module.num_heads, f"{self_path(path)}.num_heads", module.batch_first))
    q_heads, v_heads = nz.shape(heads[0]), nz.shape(heads[2])
    attn = nz.add(f"{name}_attn", "attention", "attention", heads, {"causal": False, "scale": None},
                  like=_meta(nz, heads[0], (*q_heads[:-1], v_heads[-1])))
    return _module_linear(nz, name, module.out_proj, f"{path}.out_proj",
                          _merge_heads(nz, f"{name}_merged", attn, module.batch_first))


def _split_heads(nz, name: str, x: Ref, heads: int, count: str, batch_first: bool) -> Ref:
    """(L, N, E) or (N, L, E) -> (N, heads, L, E / heads): a view (the attention launcher reads it
    through a reshape, a copy where the layout needs one). The head count is the module's, `count`,
    read at run time: a task's sizes may change it."""
    a, b, embed = nz.shape(x)
    seq, batch = (b, a) if batch_first else (a, b)
    order = "transpose(1, 2)" if batch_first else "permute(1, 2, 0, 3)"
    expr = f"{x.name}.view({x.name}.shape[0], {x.name}.shape[1], {count}, -1).{order}"
    return nz.py(name, expr, _meta(nz, x, (batch, heads, seq, embed // heads)), args=[x])


def _merge_heads(nz, name: str, x: Ref, batch_first: bool) -> Ref:
    """(N, heads, L, D) -> (N, L, heads * D) or (L, N, heads * D)."""
    batch, heads, seq, dim = nz.shape(x)
    if batch_first:
        expr, shape = f"{x.name}.transpose(1, 2).reshape({x.name}.shape[0], {x.name}.shape[2], -1)", \
            (batch, seq, heads * dim)
    else:
        expr, shape = f"{x.name}.permute(2, 0, 1, 3).reshape({x.name}.shape[2], {x.name}.shape[0], -1)", \
            (seq, batch, heads * dim)
    return nz.py(name, expr, _meta(nz, x, shape), args=[x])


# --------------------------------------------------------------------------------------------------
# nn.TransformerEncoderLayer, nn.TransformerEncoder
# --------------------------------------------------------------------------------------------------

def trace_encoder_layer(nz, n, module: nn.TransformerEncoderLayer, path: str, args: list, kwargs: dict,
                        result: Any) -> Ref:
    _refuse_masks("TransformerEncoderLayer", args[1:], kwargs)
    return encoder_layer(nz, n.name, module, path, args[0])


def trace_encoder(nz, n, module: nn.TransformerEncoder, path: str, args: list, kwargs: dict,
                  result: Any) -> Ref:
    _refuse_masks("TransformerEncoder", args[1:], kwargs)
    x = args[0]
    for i, layer in enumerate(module.layers):
        x = encoder_layer(nz, f"{n.name}_l{i}", layer, f"{path}.layers.{i}", x)
    if module.norm is not None:
        x = _norm(nz, f"{n.name}_norm", module.norm, f"{path}.norm", x)
    return x


def _refuse_masks(kind: str, args: list, kwargs: dict) -> None:
    if any(a is not None and a is not False for a in [*args, *kwargs.values()]):
        raise unsupported(f"{kind} with a mask or is_causal")


def encoder_layer(nz, name: str, module: nn.TransformerEncoderLayer, path: str, x: Ref) -> Ref:
    if _live_dropout(module, "dropout", "dropout1", "dropout2"):
        raise unsupported("TransformerEncoderLayer with dropout in training mode (random)")
    activation = _activation(module.activation)

    def sa(y: Ref) -> Ref:
        return attention_block(nz, f"{name}_sa", module.self_attn, f"{path}.self_attn", y, y, y)

    def ff(y: Ref) -> Ref:
        hidden = _module_linear(nz, f"{name}_ff1", module.linear1, f"{path}.linear1", y)
        hidden = nz.pw(activation[0], [hidden], base=f"{name}_{activation[0]}", attrs=activation[1])
        return _module_linear(nz, f"{name}_ff2", module.linear2, f"{path}.linear2", hidden)

    def norm(which: str, y: Ref) -> Ref:
        return _norm(nz, f"{name}_{which}", getattr(module, which), f"{path}.{which}", y)

    if module.norm_first:
        x = nz.pw("add", [x, sa(norm("norm1", x))], base=f"{name}_sa_residual")
        return nz.pw("add", [x, ff(norm("norm2", x))], base=name)
    x = norm("norm1", nz.pw("add", [x, sa(x)], base=f"{name}_sa_residual"))
    return norm("norm2", nz.pw("add", [x, ff(x)], base=f"{name}_ff_residual"))


def _activation(fn: Any) -> tuple[str, dict[str, Any]]:
    """The feed-forward activation as a pointwise op and its attributes."""
    if fn is F.relu or isinstance(fn, nn.ReLU):
        return "relu", {}
    if fn is F.gelu:
        return "gelu", {"approximate": "none"}
    if isinstance(fn, nn.GELU):
        return "gelu", {"approximate": fn.approximate}
    raise unsupported(f"TransformerEncoderLayer with activation {getattr(fn, '__name__', type(fn).__name__)}")


def _norm(nz, name: str, module: nn.LayerNorm, path: str, x: Ref) -> Ref:
    if not isinstance(module, nn.LayerNorm):
        raise unsupported(f"a transformer norm of type {type(module).__name__}")
    weight = nz.param(f"{path}.weight") if module.weight is not None else None
    bias = nz.param(f"{path}.bias") if module.bias is not None else None
    b = {"input": x, "normalized_shape": module.normalized_shape, "weight": weight, "bias": bias,
         "eps": module.eps}
    return rowwise(nz, name, "layer_norm", b, _meta(nz, x, nz.shape(x)))
