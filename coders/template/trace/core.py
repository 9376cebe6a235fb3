"""`trace`: a task's reference as a graph of canonical nodes. torch.fx traces it symbolically (sizes
stay symbolic), an fx interpreter over meta tensors records each node's traced shape, and the
normaliser (trace/normalizer.py) turns the fx graph into canonical nodes."""

from __future__ import annotations

import contextlib
from typing import Any

import torch
import torch.fx as fx

from coders.template.trace.einops_rearrange import traced_rearrange
from coders.template.trace.fx_tracer import symbolic_trace
from coders.template.trace.graph import Graph, flat, unsupported
from coders.template.trace.normalizer import Normalizer
from coders.template.trace.pin_check import check_pins
from coders.template.trace.signatures import FACTORIES, RANDOM_FACTORIES
from mtmc.protocols import CoderError
from mtmc.tasks import Task
from mtmc.tasks.task import on_meta


def trace(task: Task, sizes: dict | None = None) -> Graph:
    """The canonical op graph of `task` at `sizes` (the file's own sizes by default)."""
    model = on_meta(lambda: task.make_model(seed=0, sizes=sizes))
    with torch.device("meta"):
        inputs = task.make_inputs(seed=0, sizes=sizes)
    before = set(vars(model))
    try:
        with _traceable_factories(), traced_rearrange(model):
            gm = symbolic_trace(model, inputs)
    except CoderError:
        raise
    except Exception as err:  # data-dependent control flow, unsupported Python on proxies, ...
        raise unsupported(f"tracing the reference failed ({type(err).__name__}: {err})") from None
    # fx keeps a tensor it meets while tracing (`torch.tensor(self.value)`) as a new attribute of the
    # model, `_tensor_constant0`: ModelNew, built by the reference's constructor, has none of them
    made_by_trace = set(vars(model)) - before
    for attr in sorted(made_by_trace):
        value = getattr(model, attr)
        if isinstance(value, torch.Tensor) and value.dim() != 0:
            raise unsupported(f"a {value.dim()}-D tensor constant of the forward (torch.tensor of a list, "
                              f"a global tensor; the trace kept it as self.{attr}): only a 0-d one is "
                              "taken, as a literal")
    results: dict[str, Any] = {}

    class _Recorder(fx.Interpreter):
        def run_node(self, n: fx.Node) -> Any:
            out = super().run_node(n)
            results[n.name] = out
            return out

    try:
        with torch.no_grad():
            _Recorder(gm).run(*inputs)
    except NotImplementedError as err:
        raise unsupported(f"an op with no meta kernel ({err})") from None
    except Exception as err:  # the graph fx recorded does not run on the task's own inputs
        raise unsupported(_replay_failure(gm, inputs, err)) from None
    graph = Normalizer(task, gm, results, made_by_trace, gm.meta["rebound"]).run()
    check_pins(task, graph)
    return graph


def _replay_failure(gm: fx.GraphModule, inputs: list, err: Exception) -> str:
    """Why the traced graph failed on the task's inputs, naming the forward parameters the task
    leaves out: fx traced them as tensors, so a `param is None` branch went the other way."""
    first = str(err).splitlines()[0] if str(err) else ""
    names = [n.target for n in gm.graph.nodes if n.op == "placeholder"][len(inputs):]
    left_out = f"; get_inputs leaves out {', '.join(names)}, traced as tensors" if names else ""
    return f"the traced forward failed on the task's inputs ({type(err).__name__}: {first}{left_out})"


_PYTHON_DTYPES = {bool: torch.bool, int: torch.int64, float: torch.float64, complex: torch.complex128}


@contextlib.contextmanager
def _traceable_factories():
    """Factories record themselves (signatures.FACTORIES); random ones refuse (RANDOM_FACTORIES)."""
    originals = {name: getattr(torch, name) for name in FACTORIES + RANDOM_FACTORIES}

    def recording(fn):
        def factory(*args, **kwargs):
            proxies = [a for a in flat([list(args), list(kwargs.values())]) if isinstance(a, fx.Proxy)]
            if proxies:
                if isinstance(kwargs.get("dtype"), type):  # `dtype=bool`: torch's dtype for it
                    kwargs["dtype"] = _PYTHON_DTYPES[kwargs["dtype"]]
                return proxies[0].tracer.create_proxy("call_function", fn, args, kwargs)
            return fn(*args, **kwargs)
        return factory

    def refusing(name):
        def factory(*args, **kwargs):
            raise unsupported(f"torch.{name} in the forward: its output is random, and the verifier "
                              "does not seed the reference's and the program's forward calls alike "
                              "(nor could a program's kernels draw PyTorch's numbers)")
        return factory

    try:
        for name, fn in originals.items():
            setattr(torch, name, recording(fn) if name in FACTORIES else refusing(name))
        yield
    finally:
        for name, fn in originals.items():
            setattr(torch, name, fn)
