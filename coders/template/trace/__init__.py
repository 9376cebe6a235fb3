"""Trace a task's reference into a small graph of canonical ops (the template coder's first pass).

`torch.fx.symbolic_trace` keeps shapes symbolic (`x.size(0)` is a graph node), which is what the
generated program needs to run at any size; an fx interpreter over meta tensors at the task's sizes
adds each node's traced shape and dtype, used only for structural decisions. F.* calls, tensor
methods, torch.* functions and nn modules that mean the same op all map to one canonical node:

    input / param     forward arguments; parameters and buffers (by attribute path)
    py                shape arithmetic, views, tuple indexing, an allowed library call
                      or a 0-d constant `scalar=` (torch.tensor(0.5)), a literal in kernels
    pw                an elementwise op (canonical names in coders/template/ops.py)
    red               a reduction family op over contiguous dims `red=[d0, d1]` of its first arg
    matmul            linear / mm / bmm / matmul (+ bias)
    conv              conv1d / conv2d / conv3d (+ bias)
    conv_transpose    ConvTranspose1d/2d/3d (+ bias), geometry read at run time (conv_transpose_lower.py)
    pool              max / average pooling, fixed or adaptive windows (coders/template/pooling.py);
    pool_indices      its argmax positions (return_indices)
    attention         scaled dot-product attention (nn.MultiheadAttention and transformer encoder
                      layers trace to it with matmuls and norms: trace/transformer.py)
    recurrent         one LSTM / GRU / RNN layer over a sequence (coders/template/recurrent.py);
    recurrent_state   its h_n or c_n

The package, by role: `core.py` (`trace`: the fx trace and the meta replay), `fx_tracer.py` (the fx
tracer), `concrete.py` (Python control flow on sizes, answered at the traced sizes and pinned),
`pin_check.py` (whether the pins hold at the sizes the task is checked at), `einops_rearrange.py`
(`einops.rearrange` as views), `normalizer.py` (the walk over the fx graph), `signatures.py` (the op
table: spellings -> canonical op and parameters), `interface.py` (what a handler is and may do),
`registry.py` (canonical op -> handler) and the handlers by family: `elementwise.py`,
`reductions.py`, `norms.py`, `matmul.py` (with `einsum.py`, an einsum of several matmuls),
`spatial.py` (with F.pad), `walks.py`, `modules.py` (nn modules, and their table), `transformer.py`,
`metric_losses.py`, `patches.py`; `graph.py` (the nodes) and `render.py` (py nodes as Python).
Families that also lower (scans, recurrent layers, transposed convolutions) live beside the passes,
in coders/template/, and are imported when first called (they import this package).
"""

from coders.template.trace.core import trace
from coders.template.trace.graph import GNode, Graph, Ref, Uncomputable, unsupported
from coders.template.trace.matmul import einsum_form
from coders.template.trace.render import render

__all__ = ["GNode", "Graph", "Ref", "Uncomputable", "einsum_form", "render", "trace", "unsupported"]
