"""The op table: every spelling of an op (an fx call target: F.relu, torch.relu, a `.relu` method, an
operator) -> its canonical name and parameter names, so handlers see one op with bound arguments.
Also the names graph values never take, and the ops that stay Python (views, shape arithmetic)."""

from __future__ import annotations

import operator
import re
from typing import Any

import torch
import torch.nn.functional as F

from coders.template import pooling
from coders.template.ops import UNARY
from coders.template.trace.graph import unsupported

# Tensor factories take no tensor argument, so fx cannot see a call whose sizes are traced values
# (`torch.ones(L, L)` with L = q.shape[-2]); while tracing they record themselves as graph nodes.
FACTORIES = ("ones", "zeros", "full", "empty", "arange", "eye")
# Factories that draw random numbers: a forward calling one has a random output (trace/core.py)
RANDOM_FACTORIES = ("rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
                    "normal", "bernoulli", "multinomial", "poisson")


# Python names and the names generated launchers and kernels use for themselves: graph values never
# take them, so a value can always be passed by its own name.
RESERVED = {"self", "torch", "nn", "F", "triton", "tl", "math", "min", "max", "sum", "abs", "len",
             "int", "float", "range", "input", "type", "list", "tuple", "pow", "round", "lambda", "None",
             "True", "False", "shape", "grid", "n", "M", "N", "K", "G", "CPG", "HW", "BLOCK", "BLOCK_M",
             "BLOCK_N", "BLOCK_K", "num_warps", "n_rows", "n_cols", "n_red", "n_inner", "n_outer",
             "n_batch", "qk_scale", "a2", "b2", "a3", "b3", "q3", "k3", "v3", "ws", "Sq", "Sk", "D", "Dv",
             "meta", "n_walk", "tri_rows", "tri_cols"}
GENERATED = re.compile(r"^(size|i|acc_)\d*$|_ptr$")

VIEWS = {"view", "reshape", "flatten", "unflatten", "squeeze", "unsqueeze", "transpose", "permute",
          "t", "expand", "expand_as", "getitem", "getattr", "size", "dim", "numel", "chunk", "split",
          "unbind", "narrow", "movedim", "swapaxes", "view_as", "reshape_as", "mT", "select"}
PURE_VIEWS = VIEWS
PY_ARITH = {"add", "sub", "mul", "div", "floordiv", "mod", "pow", "neg", "rsub", "gt", "lt", "ge",
             "le", "eq", "ne"}

SIGNATURES: dict[Any, tuple[str, list[str]]] = {}


def _reg(canonical: str, params: list[str], *keys: Any) -> None:
    for key in keys:
        SIGNATURES[key] = (canonical, params)


_X = ["input"]
for _name in UNARY:
    _keys: list[Any] = [f".{_name}"]
    for _ns in (torch, F, torch.special):
        if getattr(_ns, _name, None) is not None and callable(getattr(_ns, _name)):
            _keys.append(getattr(_ns, _name))
    _reg(_name, _X + ["inplace"], *_keys)
_reg("abs", _X, abs, operator.abs)
_reg("neg", _X, operator.neg, torch.negative, ".negative")
_reg("sigmoid", _X, torch.special.expit)
_reg("gelu", _X + ["approximate"], F.gelu, ".gelu")
_reg("leaky_relu", _X + ["negative_slope", "inplace"], F.leaky_relu, ".leaky_relu")
_reg("elu", _X + ["alpha", "inplace"], F.elu, ".elu")
_reg("celu", _X + ["alpha", "inplace"], F.celu, torch.celu, ".celu")
_reg("softplus", _X + ["beta", "threshold"], F.softplus, ".softplus")
_reg("hardtanh", _X + ["min_val", "max_val", "inplace"], F.hardtanh, ".hardtanh")
_reg("clamp", _X + ["min", "max"], torch.clamp, torch.clip, ".clamp", ".clip")
_reg("threshold", _X + ["threshold", "value", "inplace"], F.threshold, torch.threshold)
_reg("hardshrink", _X + ["lambd"], F.hardshrink, torch.hardshrink, ".hardshrink")
_reg("softshrink", _X + ["lambd"], F.softshrink, ".softshrink")
_reg("add", _X + ["other", "alpha"], torch.add, ".add", operator.add, operator.iadd)
_reg("sub", _X + ["other", "alpha"], torch.sub, torch.subtract, ".sub", operator.sub, operator.isub)
_reg("rsub", _X + ["other", "alpha"], torch.rsub)
_reg("mul", _X + ["other"], torch.mul, torch.multiply, ".mul", operator.mul, operator.imul)
_reg("div", _X + ["other", "rounding_mode"], torch.div, torch.divide, torch.true_divide, ".div",
     ".true_divide", operator.truediv, operator.itruediv)
_reg("floordiv", _X + ["other"], operator.floordiv)
_reg("mod", _X + ["other"], operator.mod)
_reg("pow", _X + ["exponent"], torch.pow, ".pow", operator.pow)
_reg("maximum", _X + ["other"], torch.maximum, ".maximum", torch.fmax)
_reg("minimum", _X + ["other"], torch.minimum, ".minimum", torch.fmin)
for _cmp, _op in (("gt", operator.gt), ("lt", operator.lt), ("ge", operator.ge), ("le", operator.le),
                  ("eq", operator.eq), ("ne", operator.ne)):
    _reg(_cmp, _X + ["other"], getattr(torch, _cmp), f".{_cmp}", _op)
_reg("where", ["condition", "input", "other"], torch.where, ".where")
_reg("masked_fill", _X + ["mask", "value"], torch.masked_fill, ".masked_fill")
_reg("logical_not", _X, torch.logical_not, ".logical_not")
_reg("bitwise_not", _X, operator.invert, torch.bitwise_not, ".bitwise_not")
_reg("lerp", _X + ["end", "weight"], torch.lerp, ".lerp")
_reg("addcmul", _X + ["tensor1", "tensor2", "value"], torch.addcmul, ".addcmul")
_reg("cast_float", _X, ".float")
_reg("cast_half", _X, ".half")
_reg("cast_bfloat16", _X, ".bfloat16")
_reg("to", _X + ["dtype"], ".to")
_reg("type_as", _X + ["other"], ".type_as")
_reg("dropout", _X + ["p", "training", "inplace"], F.dropout, torch.dropout, F.dropout1d,
     F.dropout2d, F.alpha_dropout)
_reg("cat", ["tensors", "dim"], torch.cat, torch.concat, torch.concatenate)
_reg("stack", ["tensors", "dim"], torch.stack)
_reg("pad", _X + ["pad", "mode", "value"], F.pad)
_reg("batch_norm", _X + ["running_mean", "running_var", "weight", "bias", "training", "momentum",
                         "eps"], F.batch_norm)
_reg("alias", _X, ".contiguous", ".clone", ".detach", torch.clone, torch.detach)
# reductions and row-wise families
_reg("sum", _X + ["dim", "keepdim", "dtype"], torch.sum, ".sum")
_reg("mean", _X + ["dim", "keepdim", "dtype"], torch.mean, ".mean")
_reg("amax", _X + ["dim", "keepdim"], torch.amax, ".amax")
_reg("amin", _X + ["dim", "keepdim"], torch.amin, ".amin")
_reg("max", _X + ["dim", "keepdim"], torch.max, ".max")
_reg("min", _X + ["dim", "keepdim"], torch.min, ".min")
_reg("var", _X + ["dim", "unbiased", "keepdim"], torch.var, ".var")
_reg("std", _X + ["dim", "unbiased", "keepdim"], torch.std, ".std")
_reg("logsumexp", _X + ["dim", "keepdim"], torch.logsumexp, ".logsumexp")
_reg("norm", _X + ["p", "dim", "keepdim", "dtype"], torch.norm, ".norm")
_reg("softmax", _X + ["dim", "_stacklevel", "dtype"], F.softmax)
_reg("softmax", _X + ["dim", "dtype"], torch.softmax, ".softmax")
_reg("log_softmax", _X + ["dim", "_stacklevel", "dtype"], F.log_softmax)
_reg("log_softmax", _X + ["dim", "dtype"], torch.log_softmax, ".log_softmax")
_reg("layer_norm", _X + ["normalized_shape", "weight", "bias", "eps"], F.layer_norm)
_reg("rms_norm", _X + ["normalized_shape", "weight", "eps"], F.rms_norm)
_reg("group_norm", _X + ["num_groups", "weight", "bias", "eps"], F.group_norm)
_reg("instance_norm", _X + ["running_mean", "running_var", "weight", "bias", "use_input_stats",
                            "momentum", "eps"], F.instance_norm)
_reg("normalize", _X + ["p", "dim", "eps"], F.normalize)
_reg("cosine_similarity", ["x1", "x2", "dim", "eps"], F.cosine_similarity, torch.cosine_similarity)
_reg("cross_entropy", _X + ["target", "weight", "size_average", "ignore_index", "reduce",
                            "reduction", "label_smoothing"], F.cross_entropy)
_reg("nll_loss", _X + ["target", "weight", "size_average", "ignore_index", "reduce", "reduction"],
     F.nll_loss)
_reg("mse_loss", _X + ["target", "size_average", "reduce", "reduction"], F.mse_loss)
_reg("l1_loss", _X + ["target", "size_average", "reduce", "reduction"], F.l1_loss)
_reg("smooth_l1_loss", _X + ["target", "size_average", "reduce", "reduction", "beta"],
     F.smooth_l1_loss)
_reg("huber_loss", _X + ["target", "reduction", "delta"], F.huber_loss)
_reg("kl_div", _X + ["target", "size_average", "reduce", "reduction", "log_target"], F.kl_div)
_reg("binary_cross_entropy", _X + ["target", "weight", "size_average", "reduce", "reduction"],
     F.binary_cross_entropy)
_reg("binary_cross_entropy_with_logits", _X + ["target", "weight", "size_average", "reduce",
                                                "reduction", "pos_weight"],
     F.binary_cross_entropy_with_logits)
# matmuls and attention
_reg("linear", _X + ["weight", "bias"], F.linear)
_reg("matmul", _X + ["other"], torch.matmul, ".matmul", operator.matmul, torch.mm, ".mm",
     torch.bmm, ".bmm")
_reg("addmm", _X + ["mat1", "mat2", "beta", "alpha"], torch.addmm, ".addmm")
_reg("baddbmm", _X + ["mat1", "mat2", "beta", "alpha"], torch.baddbmm, ".baddbmm")
_reg("sdpa", ["query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"],
     F.scaled_dot_product_attention)
for _conv in ("conv1d", "conv2d", "conv3d"):
    _reg(_conv, _X + ["weight", "bias", "stride", "padding", "dilation", "groups"],
         getattr(F, _conv), getattr(torch, _conv))
for _conv in ("conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
    _reg(_conv, _X + ["weight", "bias", "stride", "padding", "output_padding", "groups", "dilation"],
         getattr(F, _conv), getattr(torch, _conv))
for _pool, _params, _keys in pooling.FUNCTIONS:
    _reg(_pool, _params, *_keys)
# views and shape queries: emitted as Python
for _view in ("view", "reshape", "flatten", "unflatten", "squeeze", "unsqueeze", "transpose",
              "permute", "t", "expand", "expand_as", "size", "dim", "numel", "chunk", "split",
              "unbind", "narrow", "movedim", "swapaxes", "view_as", "reshape_as", "select"):
    _keys = [f".{_view}"] + ([getattr(torch, _view)] if hasattr(torch, _view) else [])
    _reg(_view, ["*"], *_keys)
_reg("getitem", ["*"], operator.getitem)
for _factory in FACTORIES:
    _reg("factory", ["*"], getattr(torch, _factory))
_reg("tensor", ["*"], torch.tensor, torch.as_tensor, torch.scalar_tensor)
_reg("triu", ["*"], torch.triu, ".triu")
_reg("tril", ["*"], torch.tril, ".tril")
_reg("getattr", ["*"], getattr)
# scans and arg-reductions (coders/template/scans.py)
_reg("cumsum", _X + ["dim", "dtype"], torch.cumsum, ".cumsum")
_reg("cumprod", _X + ["dim", "dtype"], torch.cumprod, ".cumprod")
_reg("flip", _X + ["dims"], torch.flip, ".flip")
_reg("zeros_like", _X + ["dtype", "layout", "device", "requires_grad", "memory_format"], torch.zeros_like)
_reg("argmax", _X + ["dim", "keepdim"], torch.argmax, ".argmax")
_reg("argmin", _X + ["dim", "keepdim"], torch.argmin, ".argmin")
_reg("einsum", ["*"], torch.einsum)
# the families traced in their own modules (trace/patches.py, trace/metric_losses.py)
_reg("unfold", ["*"], ".unfold")
_reg("pairwise_distance", ["*"], F.pairwise_distance, torch.pairwise_distance)
_reg("triplet_margin_loss", ["*"], F.triplet_margin_loss)


def bind(canonical: str, params: list[str], args: list, kwargs: dict) -> dict[str, Any]:
    if params == ["*"]:
        return {"args": args, "kwargs": kwargs}
    if len(args) > len(params):
        raise unsupported(f"{canonical} with {len(args)} positional arguments")
    bound = dict(zip(params, args, strict=False))
    for key, value in kwargs.items():
        bound[key] = value
    return bound
