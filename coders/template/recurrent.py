"""Recurrent layers (nn.LSTM, nn.GRU, nn.RNN): tracing and lowering.

A traced recurrent module unrolls over its layers (a structural constant of the module) into nodes
the rest of the coder already knows, plus one recurrent node per layer:

    input projection   one matmul over every time step, x_l @ W_ih^T + b_ih -> gx, (.., D*G*H)
                       (the two directions' weights concatenated by Triton copy kernels first)
    recurrence         a "recurrent" node: h_t = cell(gx_t + h_{t-1} @ W_hh^T + b_hh), the layer's
                       output sequence (.., D*H), with "recurrent_state" nodes for its h_n and c_n
    final state        h_n (and c_n) of all layers: a cat of the layers' (D, B, H) states

G is the gate count (LSTM 4: i, f, g, o; GRU 3: r, z, n; RNN 1) and D the direction count. The
recurrence lowers to one kernel of kind "recurrent" (emit/recurrent.py), launched once for all time
steps and both directions (config time_loop="kernel", the default) or once per time step
(time_loop="host", the earlier form); h_{t-1} is read back from the output sequence itself.

Its kernel keeps the IR's shape: operands (gx, W_hh, b_hh, h0, c0), a body of their loads feeding
one "recurrent" op whose results "y", "h_n", "c_n" are the outputs, so dead-output trimming and
compaction (fuse/dead_code.py) keep every operand while any output lives. `space["roles"]` names each operand.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn as nn

from coders.template.ir import Kernel, Op, Operand, Output, ProgramIR
from coders.template.trace import Ref, unsupported

GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
# a tl.dot needs blocks of at least 16: BLOCK_B covers the batch, BLOCK rows of the hidden state per
# product (per program in the "host" form), BLOCK_K the hidden state read per step of the product
# with W_hh. time_loop: "kernel" loops over the time steps inside one launch, "host" launches a
# kernel per step (emit/recurrent.py). fp32 products run on TF32 as eager's cuDNN RNN does by default
# (torch.backends.cudnn.allow_tf32; the verifier holds such a task to TF32's tolerance). On an H100,
# KernelBench 36_LSTMHn ran 83 ms with these (eager cuDNN 34 ms); the time loop in the kernel took
# 895 ms with strict fp32 products and 32-row blocks, the per-step launches 118 ms
# (benchmarks/probes/2026-11-26-rnn/h100-rnn.json).
RECURRENT_CONFIG = {"BLOCK_B": 16, "BLOCK": 64, "BLOCK_K": 32, "num_warps": 8, "precision": "tf32",
                    "time_loop": "kernel"}
ROLES = ("gx", "whh", "bhh", "h0", "c0")
OUTPUTS = ("y", "h_n", "c_n")


# --------------------------------------------------------------------------------------------------
# tracing (called from coders/template/trace/modules.py's module table)
# --------------------------------------------------------------------------------------------------

def trace_module(nz, n, module: nn.RNNBase, path: str, args: list, kwargs: dict, result: Any) -> Any:
    """The module's (output, h_n) or (output, (h_n, c_n)), as graph nodes."""
    mode = _mode(module)
    x = args[0]
    hx = args[1] if len(args) > 1 else kwargs.get("hx")
    h0, c0 = (hx if isinstance(hx, tuple | list) else (None, None)) if mode == "lstm" else (hx, None)
    if not nz.is_tensor(x) or len(nz.shape(x)) != 3:
        raise unsupported(f"{type(module).__name__} of an unbatched or packed input (only (T, B, F))")
    if any(v is not None and not nz.is_tensor(v) for v in (h0, c0)):
        raise unsupported(f"{type(module).__name__} with a computed initial state")
    output, state = (result[0], result[1])
    layers, dirs = module.num_layers, 2 if module.bidirectional else 1
    layer_input, h_parts, c_parts = x, [], []
    for layer in range(layers):
        step = _Layer(nz, n.name, module, path, layer, dirs)
        rec = step.recurrence(layer_input, step.initial(h0, "h0"), step.initial(c0, "c0"), output)
        h_parts.append(step.state(rec, "h_n", state[0] if mode == "lstm" else state))
        if mode == "lstm":
            c_parts.append(step.state(rec, "c_n", state[1]))
        layer_input = rec
    h_n = _stack(nz, f"{n.name}_h_n", h_parts, state[0] if mode == "lstm" else state)
    if mode != "lstm":
        return (layer_input, h_n)
    return (layer_input, (h_n, _stack(nz, f"{n.name}_c_n", c_parts, state[1])))


def _mode(module: nn.Module) -> str:
    kind = type(module).__name__
    if isinstance(module, nn.LSTM) and module.proj_size:
        raise unsupported("LSTM with proj_size")
    if module.dropout and module.training and module.num_layers > 1:
        raise unsupported(f"{kind} with dropout between layers in training mode (random)")
    if isinstance(module, nn.LSTM):
        return "lstm"
    if isinstance(module, nn.GRU):
        return "gru"
    return "rnn_tanh" if module.nonlinearity == "tanh" else "rnn_relu"


class _Layer:
    """The nodes of one layer: its weights (both directions side by side), input projection,
    recurrence and final states."""

    def __init__(self, nz, name: str, module: nn.RNNBase, path: str, layer: int, dirs: int) -> None:
        self.nz, self.module, self.path, self.layer, self.dirs = nz, module, path, layer, dirs
        self.name = f"{name}_l{layer}"
        self.mode = _mode(module)

    def weights(self, kind: str) -> Ref | None:
        """weight_ih / weight_hh / bias_ih / bias_hh of this layer, the directions concatenated."""
        if kind.startswith("bias") and not self.module.bias:
            return None
        suffixes = ["", "_reverse"][:self.dirs]
        parts = [self.nz.param(f"{self.path}.{kind}_l{self.layer}{s}") for s in suffixes]
        if len(parts) == 1:
            return parts[0]
        shape = list(self.nz.shape(parts[0]))
        shape[0] *= len(parts)
        like = torch.empty(shape, device="meta", dtype=self.nz.meta(parts[0]).dtype)
        return self.nz.add(f"{self.name}_{kind}", "cat", "cat", parts, {"dim": 0}, like=like)

    def initial(self, state: Ref | None, what: str) -> Ref | None:
        """This layer's rows of h0 / c0, (D, B, H)."""
        if state is None:
            return None
        rows = self.nz.shape(state)
        if len(rows) != 3:
            raise unsupported(f"{type(self.module).__name__} with an unbatched {what}")
        if rows[0] == self.dirs:
            return state
        lo, hi = self.layer * self.dirs, (self.layer + 1) * self.dirs
        like = torch.empty((self.dirs, *rows[1:]), device="meta", dtype=self.nz.meta(state).dtype)
        return self.nz.py(f"{self.name}_{what}", f"{state.name}[{lo}:{hi}]", like, args=[state])

    def recurrence(self, x: Ref, h0: Ref | None, c0: Ref | None, output: torch.Tensor) -> Ref:
        nz, dirs, hidden = self.nz, self.dirs, self.module.hidden_size
        gates = GATES[self.mode] * hidden * dirs
        gx_shape = (*nz.shape(x)[:2], gates)
        projection = [x, self.weights("weight_ih"), self.weights("bias_ih")]
        gx = nz.add(f"{self.name}_gx", "matmul", "linear", projection, {"form": "linear"},
                    like=torch.empty(gx_shape, device="meta", dtype=output.dtype))
        c0 = c0 if self.mode == "lstm" else None
        args = [gx, self.weights("weight_hh"), self.weights("bias_hh"), h0, c0]
        attrs = {"mode": self.mode, "dirs": dirs, "batch_first": bool(self.module.batch_first)}
        return nz.add(self.name, "recurrent", self.mode, args, attrs, like=output)

    def state(self, rec: Ref, which: str, like: torch.Tensor) -> Ref:
        meta = torch.empty((self.dirs, *like.shape[1:]), device="meta", dtype=like.dtype)
        node = self.nz.add(f"{self.name}_{which}", "recurrent_state", which, [rec], like=meta)
        self.nz.meta(rec).attrs[which] = node.name
        return node


def _stack(nz, name: str, parts: list[Ref], like: torch.Tensor) -> Ref:
    """The layers' (D, B, H) states as the module's (L * D, B, H) one."""
    if len(parts) == 1:
        return parts[0]
    return nz.add(name, "cat", "cat", parts, {"dim": 0}, like=like)


# --------------------------------------------------------------------------------------------------
# lowering (called from coders/template/lower/program.py)
# --------------------------------------------------------------------------------------------------

def lower_recurrent(graph, node, used: set[str]) -> Kernel:
    """One "recurrent" kernel: operands by role, outputs for the sequence and the used states."""
    operands, roles, loads = [], {}, []
    for role, arg in zip(ROLES, node.args, strict=True):
        if isinstance(arg, Ref):
            roles[role] = arg.name
            operands.append(Operand(arg.name, list(range(len(graph.node(arg.name).shape)))))
            loads.append(Op(f"{role}_in", "load", [len(operands) - 1]))
    body = [*loads, Op("cell", "recurrent", [op.out for op in loads])]
    body += [Op(out, f"recurrent_{out}", ["cell"]) for out in OUTPUTS]
    outputs = [Output(node.name, "y", list(range(len(node.shape))), f"like:{roles['gx']}")]
    for which in ("h_n", "c_n"):
        state = node.attrs.get(which)
        if state is not None and state in used:
            outputs.append(Output(state, which, [0, 1, 2], f"like:{roles['gx']}"))
    space = {"mode": node.attrs["mode"], "dirs": node.attrs["dirs"], "batch_first": node.attrs["batch_first"],
             "roles": roles, "traced": list(node.shape), "dtype": str(node.dtype).removeprefix("torch.")}
    return Kernel(name=node.name, kind="recurrent", space=space, operands=operands, body=body,
                  outputs=outputs, config=dict(RECURRENT_CONFIG))


# --------------------------------------------------------------------------------------------------
# cost (called from coders/template/steps/kernels.py)
# --------------------------------------------------------------------------------------------------

def sizes(kernel: Kernel) -> tuple[int, int, int, int]:
    """(time steps, batch, hidden, directions) at the traced sizes."""
    traced, dirs = kernel.space["traced"], kernel.space["dirs"]
    steps, batch = (traced[1], traced[0]) if kernel.space["batch_first"] else (traced[0], traced[1])
    return steps, batch, traced[2] // dirs, dirs


def flops(kernel: Kernel) -> int:
    steps, batch, hidden, dirs = sizes(kernel)
    return 2 * steps * dirs * batch * GATES[kernel.space["mode"]] * hidden * hidden


def moved(ir: ProgramIR, kernel: Kernel) -> int:
    """Every step reads all of W_hh again (from L2 at best): the recurrence's traffic."""
    steps, _, _, _ = sizes(kernel)
    whh = ir.values[kernel.space["roles"]["whh"]]
    itemsize = torch.empty((), dtype=getattr(torch, whh["dtype"])).element_size()
    return steps * math.prod(whh["shape"]) * itemsize


def programs(kernel: Kernel) -> int:
    """A launch's programs: the "kernel" form's own all hidden units of their rows."""
    _, batch, hidden, dirs = sizes(kernel)
    cfg = kernel.config
    units = 1 if cfg.get("time_loop", "kernel") == "kernel" else -(-hidden // cfg["BLOCK"])
    return -(-batch // cfg["BLOCK_B"]) * units * dirs
