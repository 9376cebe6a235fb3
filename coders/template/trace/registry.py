"""The function handler table: canonical op (trace/signatures.py) -> its handler, a
`FunctionHandler` (trace/interface.py). Elementwise ops of one argument share `unary`."""

from __future__ import annotations

from coders.template import pooling
from coders.template.ops import UNARY
from coders.template.trace import (
    elementwise,
    matmul,
    metric_losses,
    norms,
    patches,
    reductions,
    spatial,
    walks,
)
from coders.template.trace.graph import unsupported
from coders.template.trace.interface import FunctionHandler

HANDLERS: dict[str, FunctionHandler] = {
    "unary": elementwise.unary,
    **{op: elementwise.pointwise for op in ("gelu", "leaky_relu", "elu", "celu", "softplus", "hardtanh",
                                            "clamp", "threshold", "hardshrink", "softshrink", "add", "sub",
                                            "rsub", "mul", "div", "floordiv", "mod", "pow", "maximum",
                                            "minimum", "gt", "lt", "ge", "le", "eq", "ne", "where",
                                            "masked_fill", "logical_not", "lerp", "addcmul")},
    **{op: elementwise.cast for op in ("cast_float", "cast_half", "cast_bfloat16", "to", "type_as")},
    "dropout": elementwise.dropout,
    "bitwise_not": elementwise.bitwise_not,
    "alias": elementwise.alias,
    **{op: reductions.reduce for op in ("sum", "mean", "amax", "amin", "max", "min", "var", "std",
                                        "logsumexp", "norm")},
    **{op: reductions.rowwise for op in ("softmax", "log_softmax", "layer_norm", "rms_norm", "group_norm",
                                         "normalize")},
    "instance_norm": norms.instance_norm,
    "batch_norm": norms.batch_norm,
    "cosine_similarity": reductions.cosine,
    **{op: reductions.loss for op in ("cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss",
                                      "huber_loss", "kl_div", "binary_cross_entropy",
                                      "binary_cross_entropy_with_logits")},
    **{op: matmul.matmul for op in ("linear", "matmul", "addmm", "baddbmm")},
    "sdpa": matmul.sdpa,
    "einsum": matmul.einsum,
    **{op: walks.walk for op in ("cumsum", "cumprod", "flip", "zeros_like", "argmax", "argmin")},
    "cat": walks.cat,
    "stack": walks.stack,
    "pad": spatial.pad,
    **{op: spatial.conv for op in ("conv1d", "conv2d", "conv3d")},
    **{op: spatial.conv_transpose for op in ("conv_transpose1d", "conv_transpose2d", "conv_transpose3d")},
    **{op: spatial.pool for op in pooling.CANONICAL},
    "unfold": patches.trace_unfold,
    "pairwise_distance": metric_losses.trace_function,
    "triplet_margin_loss": metric_losses.trace_function,
}


def handler_key(canonical: str) -> str:
    if canonical in HANDLERS:
        return canonical
    if canonical in UNARY:
        return "unary"
    raise unsupported(f"op {canonical}")
