"""The fx tracer of the template coder: torch.fx's, with two answers it cannot give by itself.

- Buffers are proxied like parameters (`proxy_buffer_attributes`): a causal mask registered in
  the constructor and sliced by the traced sequence length (`self.bias[:, :, :T, :T]`, minGPT) is
  a graph value, where fx would index the real tensor with a Proxy and fail.
- A device comparison (`if x.device != self.clusters.device: raise ...`, NetVLAD) is answered:
  the verifier runs a model and its inputs on one device, so two tensors' devices are equal. Any
  other use of a traced value in control flow still fails as in fx.
"""

from __future__ import annotations

import operator

import torch.fx as fx
import torch.nn as nn


class TemplateTracer(fx.Tracer):
    proxy_buffer_attributes = True

    def to_bool(self, obj: fx.Proxy) -> bool:
        node = obj.node
        if node.op == "call_function" and node.target in (operator.eq, operator.ne) and \
                len(node.args) == 2 and all(_is_device(a) for a in node.args):
            return node.target is operator.eq
        return super().to_bool(obj)


def _is_device(arg: object) -> bool:
    """`t.device` of a traced tensor: fx records the attribute read as a getattr call."""
    return isinstance(arg, fx.Node) and arg.op == "call_function" and arg.target is getattr and \
        len(arg.args) == 2 and arg.args[1] == "device"


def symbolic_trace(model: nn.Module) -> fx.GraphModule:
    tracer = TemplateTracer()
    graph = tracer.trace(model)
    return fx.GraphModule(tracer.root, graph, type(model).__name__)
