"""The template coder's kernel IR: what each strategy edits before the source is regenerated.

A program is a list of steps run in order by `ModelNew.forward`: Python steps (views, shape
arithmetic, a vendor-library call the task allows) and Triton kernels. Values are named wrapper
variables; the traced shape of each is kept for *structural* decisions only (which dims an operand
broadcasts over) and never appears in generated code: every size is read from tensors at run time.

A kernel iterates over a *space*, the shape of one reference value (its output for pointwise and
matmul kernels, its main input for reductions). Each operand and output names the dims of that
space it spans; the kernel kind groups the dims into axes (rows/cols, M/N, ...) and addresses an
operand by the axes it spans. The body is SSA over those operands, computed in fp32.

Kernel kinds and their `space` dict:
    pointwise  {"shape_of": value}                        elementwise over value's shape
    reduce     {"input": value, "red": [d0, d1]}           reduce dims d0..d1-1 (contiguous); dims
                                                          before form the rows, dims after (if any)
                                                          make it a column reduction
               + {"groups": G} for GroupNorm               rows are (batch, group)
    matmul     {"a", "b", "form", "out"}                  form: "linear" (b is (N, K)), "mm" / "bmm"
                                                          (b is (..., K, N)); the epilogue body
                                                          starts from the accumulator op "acc"
    attention  {"q", "k", "v", "causal", "scale"}         flash attention, no epilogue
    conv       {"input", "weight", "op", "form", "stride",  conv1d/2d/3d forward (coders/template/
                "padding", "dilation"}                    conv_lower.py); epilogue as for matmul
               + {"pool": {"op", "kernel", "conv_traced"},  a fused pool (fuse/pooled.py): "traced" is
                  "params"}                               the pooled shape
    conv_transpose {"input", "weight", "geometry", "dims"} transposed conv over its output
                                                          (N, C_out, *spatial); epilogue from "acc"
    pool       {"input", "params", "pool", "nd", ...}      max / avg pooling of input's last nd dims;
                                                          the space is the output's; params names the
                                                          parameter tuple read at run time ("fixed":
                                                          its traced values, or None)
                                                          (coders/template/pooling.py, emit/pool.py)
    scan       {"input", "dim", "reverse", "exclusive"}    cumsum / cumprod along dim (the body's last
                                                          op; elementwise ops before it: a prologue)
    argreduce  {"input", "dim"}                            argmax / argmin along dim, int64 output
                                                          (coders/template/scans.py, emit/scan.py)
    cat        {"dim": d}                                  torch.cat of the operands along dim d, one
                                                          copy launch per operand (emit/cat.py); no body
    recurrent  {"mode", "dirs", "batch_first", "roles"}    one LSTM / GRU / RNN layer over a sequence,
                                                          one launch per time step; operands named by
                                                          role (gx, whh, bhh, h0, c0), outputs y, h_n,
                                                          c_n (coders/template/recurrent.py)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

IR_VERSION = 1


@dataclass
class Operand:
    value: str  # the wrapper variable read by the kernel
    dims: list[int]  # dims of the kernel's space it spans; [] = one element for every program
    scalar: bool = False  # a Python number passed by value, not a tensor
    integer: bool = False  # integer or bool data: loaded without a float cast


@dataclass
class Op:
    out: str
    op: str  # "load", "acc", "ridx", a pointwise op, or a reduction ("sum", "max", "min", "mean")
    args: list[Any] = field(default_factory=list)  # body value names, operand indices (load), numbers
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Output:
    value: str  # the wrapper variable the kernel allocates and writes
    src: str  # the body value stored
    dims: list[int]  # dims of the space it spans (all of them, or the non-reduced ones)
    dtype: str  # "like:<value>" (that value's dtype at run time) or a torch dtype name
    keepdim: bool = False  # reduced outputs: keep the reduced dims as size 1


@dataclass
class Kernel:
    name: str
    kind: str  # pointwise | reduce | matmul | conv | conv_transpose | attention | pool | scan | argreduce
    #            | cat | recurrent
    space: dict[str, Any]
    operands: list[Operand]
    body: list[Op]
    outputs: list[Output]
    config: dict[str, Any] = field(default_factory=dict)

    def op_names(self) -> list[str]:
        return [op.op for op in self.body if op.op not in ("load", "acc", "ridx", "const")]


@dataclass
class PyStep:
    outs: list[str]  # wrapper variables it defines
    expr: str  # Python expression over wrapper variables (one value, or a tuple for several outs)
    uses: list[str]  # wrapper variables it reads
    alias_of: str | None = None  # a view that only adds/drops size-1 dims of this value
    library: bool = False  # a vendor-library call the task allows (conv)


@dataclass
class ProgramIR:
    task: str
    args: list[str]  # forward's parameters
    values: dict[str, dict[str, Any]]  # name -> {"shape": [...], "dtype": "float32"} (traced)
    steps: list[Kernel | PyStep]
    result: str  # the forward's return expression
    patterns: list[dict[str, Any]] = field(default_factory=list)  # fusable multi-kernel patterns
    # [input, dim, size]: a traced size the program assumes (dim None: the whole shape, size a list);
    # the forward checks them on entry (trace/concrete.py)
    pins: list[list[Any]] = field(default_factory=list)

    # --- serialization (travels in Program.metadata["template_ir"]) -------------------------------
    def to_dict(self) -> dict[str, Any]:
        steps = [{"step": "kernel", **asdict(s)} if isinstance(s, Kernel) else {"step": "py", **asdict(s)}
                 for s in self.steps]
        return {"version": IR_VERSION, "task": self.task, "args": list(self.args),
                "values": self.values, "steps": steps, "result": self.result,
                "patterns": self.patterns, "pins": self.pins}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProgramIR:
        steps: list[Kernel | PyStep] = []
        for raw in data["steps"]:
            raw = dict(raw)
            if raw.pop("step") == "kernel":
                steps.append(Kernel(
                    name=raw["name"], kind=raw["kind"], space=dict(raw["space"]),
                    operands=[Operand(**o) for o in raw["operands"]],
                    body=[Op(**o) for o in raw["body"]],
                    outputs=[Output(**o) for o in raw["outputs"]],
                    config=dict(raw["config"])))
            else:
                steps.append(PyStep(**raw))
        return cls(task=data["task"], args=list(data["args"]), values=dict(data["values"]),
                   steps=steps, result=data["result"], patterns=list(data.get("patterns", [])),
                   pins=[list(p) for p in data.get("pins", [])])

    # --- queries ----------------------------------------------------------------------------------
    def kernels(self) -> list[Kernel]:
        return [s for s in self.steps if isinstance(s, Kernel)]

    def kernel(self, name: str) -> Kernel:
        for k in self.kernels():
            if k.name == name:
                return k
        raise KeyError(name)

    def shape(self, value: str) -> list[int]:
        return list(self.values[value]["shape"])

    def producer(self, value: str) -> Kernel | PyStep | None:
        for step in self.steps:
            outs = [o.value for o in step.outputs] if isinstance(step, Kernel) else step.outs
            if value in outs:
                return step
        return None


def step_outs(step: Kernel | PyStep) -> list[str]:
    return [o.value for o in step.outputs] if isinstance(step, Kernel) else list(step.outs)


def self_path(path: str) -> str:
    """`self.<path>` as Python: children of nn.Sequential and nn.ModuleList are indexed
    (`self.features.0.weight` -> `self.features[0].weight`)."""
    return "self" + "".join(f"[{part}]" if part.isdigit() else f".{part}" for part in path.split("."))


SPACE_VALUES = ("input", "a", "b", "q", "k", "v", "bias", "weight", "geometry")


def step_uses(step: Kernel | PyStep) -> list[str]:
    """Wrapper variables a step reads: a kernel's operands and the tensors its space is built on."""
    if isinstance(step, Kernel):
        keys = SPACE_VALUES + ("groups", "scale", "params")
        uses = [step.space[key] for key in keys if isinstance(step.space.get(key), str)]
        uses += [v for v in step.space.get("shape_of", []) if isinstance(step.space.get("shape_of"), list)]
        uses += [o.value for o in step.operands]
        return list(dict.fromkeys(uses))
    return list(step.uses)
