"""The static checker's rules as data (static.py applies them): the builtins, attributes, modules
and torch prefixes a candidate may not touch, each with the hack it closes (docs/design.md,
S1-S20, T1-T3), the Triton names it may use, and the lookups that resolve a dotted name on the
real, trusted modules."""

from __future__ import annotations

import ast
import importlib
import types
from typing import Any

# Builtins that read or rewrite the interpreter, the file system or the grader.
FORBIDDEN_BUILTINS = {
    "eval": "eval runs code the checker never saw",
    "exec": "exec runs code the checker never saw",
    "compile": "compile builds code the checker never saw",
    "__import__": "__import__ imports outside the allow-list",
    "open": "file access is not allowed (the harness and its data are off limits)",
    "globals": "globals() reaches the module namespace", "locals": "locals() reaches frames",
    "vars": "vars() reaches object namespaces",
    "getattr": "getattr with a computed name hides what is accessed",
    "setattr": "setattr can monkey-patch modules", "delattr": "delattr can monkey-patch modules",
    "id": "id() keys result caches on object identity (S11)",
    "hash": "hash() keys result caches on object identity (S11)",
    "memoryview": "memoryview reads raw memory", "input": "no interaction", "breakpoint": "no debugger",
    "exit": "the candidate may not end the process", "quit": "the candidate may not end the process",
    "help": "no interaction",
}

# Attribute names that are forbidden on any object: raw pointers/storage (caching by address,
# S11), host copies (compute outside kernels), stream/timer control (T1, T3), hooks (deferred work).
FORBIDDEN_ATTRIBUTES = {
    "data_ptr": "data_ptr() keys result caches on addresses (S11)",
    "untyped_storage": "raw storage access", "storage": "raw storage access",
    "tolist": "moving tensors to Python computes outside any kernel",
    "numpy": "moving tensors to numpy computes outside any kernel",
    "record_stream": "stream control belongs to the harness (T1)",
    "wait_stream": "stream control belongs to the harness (T1)",
    "synchronize": "synchronisation belongs to the harness (T1/T3)",
    "elapsed_time": "timers belong to the harness (T3)",
    "perf_counter": "timers belong to the harness (T3)",
    "perf_counter_ns": "timers belong to the harness (T3)",
    "register_forward_hook": "hooks can defer work outside the timed call",
    "register_forward_pre_hook": "hooks can defer work outside the timed call",
}
# Modules no candidate may reach, under any spelling: an attribute of this name on any object
# (`typing.sys`, `dataclasses.inspect`, `F.np`) is refused, and so is any chain that resolves to one.
FORBIDDEN_MODULES = frozenset({"sys", "os", "inspect", "gc", "ctypes", "operator", "builtins", "importlib",
                               "threading", "subprocess", "socket", "numpy", "np", "multiprocessing",
                               "signal", "types", "_thread", "concurrent", "asyncio", "io", "pickle",
                               "marshal", "weakref", "code", "codeop", "runpy", "pathlib", "shutil"})
for _name in FORBIDDEN_MODULES - {"numpy"}:
    FORBIDDEN_ATTRIBUTES[_name] = "reaches a module outside the import allow-list"
# Frame, code and traceback internals: reading the harness's frames (S19).
for _name in ("f_globals", "f_locals", "f_back", "f_builtins", "f_code", "gi_frame", "cr_frame", "ag_frame",
              "tb_frame", "tb_next", "gi_code", "co_consts", "co_code"):
    FORBIDDEN_ATTRIBUTES[_name] = "frame and code internals reach the harness (S19)"
# The roots a resolved chain may stay inside; a module object outside them is a forbidden reach.
ALLOWED_MODULE_ROOTS = frozenset({"torch", "triton", "math", "typing", "functools", "itertools",
                                  "dataclasses", "__future__"})

# Tensor methods that compute. Receivers are untyped in the AST, so this applies outside Triton
# kernels only; the runtime census (proof.py) is exact where this is a guess.
COMPUTE_METHODS = frozenset({
    "matmul", "mm", "bmm", "addmm", "baddbmm", "mv", "dot", "einsum", "softmax", "log_softmax",
    "sum", "mean", "prod", "exp", "exp2", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "sigmoid",
    "tanh", "relu", "gelu", "silu", "norm", "var", "std", "cumsum", "cumprod", "logsumexp", "amax",
    "amin", "max", "min", "argmax", "argmin", "topk", "sort", "clamp", "clip", "abs", "pow", "add",
    "sub", "mul", "div", "neg", "reciprocal", "maximum", "minimum", "where", "masked_fill",
    "layer_norm", "erf", "sin", "cos", "square", "lerp", "addcmul", "addcdiv",
    "conv1d", "conv2d", "conv3d", "linear",
})

# Prefixes of torch that a candidate never needs, with the reason it is refused.
TORCH_STREAM = "CUDA streams, events and synchronisation belong to the harness (T1/T3)"
TORCH_GLOBAL = "global PyTorch settings (precision, threads, seeds) are not the candidate's to change"
FORBIDDEN_TORCH = {
    "torch.compile": "torch.compile generates the kernels for you (S1)",
    "torch.compiler": "torch.compile generates the kernels for you (S1)",
    "torch.jit": "TorchScript is not Triton", "torch.ops": "torch.ops reaches vendor kernels directly (S1)",
    "torch.library": "custom op registration is not allowed",
    "torch.utils": "torch.utils reaches compilers, hooks and C++ extensions",
    "torch.cuda.Stream": TORCH_STREAM, "torch.cuda.stream": TORCH_STREAM,
    "torch.cuda.ExternalStream": TORCH_STREAM, "torch.cuda.Event": TORCH_STREAM,
    "torch.cuda.synchronize": TORCH_STREAM, "torch.cuda.set_stream": TORCH_STREAM,
    "torch.cuda.current_stream": TORCH_STREAM, "torch.cuda.default_stream": TORCH_STREAM,
    "torch.cuda.graph": TORCH_STREAM, "torch.cuda.graphs": TORCH_STREAM,
    "torch.cuda.CUDAGraph": TORCH_STREAM, "torch.cuda.make_graphed_callables": TORCH_STREAM,
    "torch.cuda.nvtx": TORCH_STREAM, "torch.cuda.profiler": TORCH_STREAM,
    "torch.cuda.cudart": TORCH_STREAM, "torch.cuda.jiterator": "jiterator compiles kernels outside Triton",
    "torch.Stream": TORCH_STREAM, "torch.Event": TORCH_STREAM, "torch.accelerator": TORCH_STREAM,
    "torch.cpu": TORCH_STREAM, "torch.backends": TORCH_GLOBAL, "torch.manual_seed": TORCH_GLOBAL,
    "torch.seed": TORCH_GLOBAL, "torch.random": TORCH_GLOBAL,
    "torch.use_deterministic_algorithms": TORCH_GLOBAL,
    "torch.profiler": "the profiler belongs to the harness", "torch.autograd": "autograd internals",
    "torch.distributed": "no distributed work", "torch.multiprocessing": "no processes",
    "torch.hub": "no downloads", "torch.load": "no file access", "torch.save": "no file access",
    "torch.from_file": "no file access", "torch.classes": "no custom classes", "torch.fx": "no tracing",
    "torch.export": "no tracing", "torch.overrides": "no dispatch overrides", "torch.func": "no transforms",
    "torch.testing": "the grader's tools are off limits", "torch.package": "no packaging",
}
# The caching allocator's map and raw blocks: memory_snapshot() lists the address and size of every block,
# the verifier's own copies of the inputs among them (S21: what a kernel writing outside its buffers needs
# to find them); refused in __init__ too, where other calls are free. Giving the allocator's free segments
# back to the driver (empty_cache, or a memory fraction small enough that its own release-and-retry runs)
# takes a freed block's bytes out of the memory scrub.py overwrites before each call (S23).
TORCH_ALLOCATOR = "the caching allocator's map and raw blocks belong to the harness (S21/S23)"
FORBIDDEN_TORCH |= {f"torch.cuda.{name}": TORCH_ALLOCATOR for name in (
    "memory", "memory_snapshot", "memory_stats", "memory_stats_as_dict", "memory_summary",
    "caching_allocator_alloc", "caching_allocator_delete", "MemPool", "use_mem_pool",
    "change_current_allocator", "empty_cache", "set_per_process_memory_fraction", "ipc_collect")}

# Triton: kernels and their launch helpers only; the runtime, compiler, knobs, testing and
# profiler modules are where the launch hooks and timers live.
ALLOWED_TRITON = {"jit", "autotune", "heuristics", "Config", "cdiv", "next_power_of_2", "language",
                  "constexpr", "constexpr_function", "must_use_result", "tools"}
FORBIDDEN_FUNCTOOLS = {"lru_cache": "result caching (S11)", "cache": "result caching (S11)"}


def is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in {"self", "cls"}


def forbidden_reach(dotted: str) -> str | None:
    """The first module outside the allowed roots that a chain passes through, or None."""
    parts = dotted.split(".")
    if parts[0] not in ALLOWED_MODULE_ROOTS:
        return None  # an import outside the allow-list: flagged where it is imported
    for i in range(2, len(parts) + 1):
        obj = lookup(".".join(parts[:i]))
        if isinstance(obj, types.ModuleType) and obj.__name__.split(".")[0] not in ALLOWED_MODULE_ROOTS:
            return obj.__name__
        if callable(obj) and getattr(obj, "__module__", None) == "builtins" \
                and getattr(obj, "__name__", "") in FORBIDDEN_BUILTINS:
            return f"builtins ({obj.__name__})"
    return None


def lookup(dotted: str) -> Any:
    """The real object a dotted name means, from trusted modules only; None when unknown."""
    parts = dotted.split(".")
    if parts[0] not in {"torch", "triton", "math", "typing", "functools", "itertools", "dataclasses"}:
        return None
    try:
        obj: Any = importlib.import_module(parts[0])
    except ImportError:
        return None
    for i, part in enumerate(parts[1:], start=1):
        try:
            obj = getattr(obj, part)
            continue
        except Exception:  # absent, or a property that fails here (triton.runtime.driver.active)
            pass
        try:  # a submodule not imported yet (torch.nn.init)
            obj = importlib.import_module(".".join(parts[: i + 1]))
        except ImportError:
            return None
    return obj
