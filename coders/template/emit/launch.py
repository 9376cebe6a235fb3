"""Host-side pieces: kernel signatures (with optional autotune), launcher functions, allocations."""

from __future__ import annotations

from typing import Any

from coders.template.emit.common import Writer
from coders.template.ir import Kernel, ProgramIR, step_uses

LINE = 100


def wrap_call(head: str, items: list[str], tail: str, indent: int) -> list[str]:
    """`head(items...)tail` on one line when it fits, else continuation lines aligned after `(`."""
    one = f"{head}({', '.join(items)}){tail}"
    if len(one) + 4 * indent <= LINE:
        return [one]
    lines, current = [], f"{head}("
    pad = " " * len(current)
    for i, item in enumerate(items):
        piece = item + ("," if i < len(items) - 1 else f"){tail}")
        if len(current) + len(piece) + 1 + 4 * indent > LINE and current.strip() not in ("", f"{head}("):
            lines.append(current.rstrip())
            current = pad
        current += piece + " "
    lines.append(current.rstrip())
    return lines


def kernel_header(w: Writer, kernel: Kernel, name: str, params: list[str], constexprs: list[str],
                  key: list[str] | None = None, heuristics: dict[str, str] | None = None) -> None:
    """Decorators and signature; `heuristics` maps a constexpr to a lambda over the launch args."""
    if kernel.config.get("autotune"):
        w(f"@triton.autotune(configs={configs_name(name)}, key={key or []!r})")
    if heuristics:
        w("@triton.heuristics({")
        for const, rule in heuristics.items():
            w(f'    "{const}": lambda args: {rule},')
        w("})")
    w("@triton.jit")
    items = params + [f"{c}: tl.constexpr" for c in constexprs]
    for line in wrap_call(f"def {name}", items, ":", w.depth):
        w(line)


def configs_name(kernel_name: str) -> str:
    return kernel_name.strip("_").upper() + "_CONFIGS"


def emit_configs(w: Writer, kernel_name: str, configs: list[dict[str, Any]],
                 pre_hook: str | None = None) -> None:
    """The autotune candidates (the verifier's interpreter workers run each once to check it)."""
    w(f"{configs_name(kernel_name)} = [")
    for cfg in configs:
        meta = {k: v for k, v in cfg.items() if k not in ("num_warps", "num_stages")}
        extra = "".join(f", {k}={cfg[k]}" for k in ("num_warps", "num_stages") if k in cfg)
        extra += f", pre_hook={pre_hook}" if pre_hook else ""
        w(f"    triton.Config({meta!r}{extra}),")
    w("]")
    w()


def autotune_configs(menu: list[dict[str, Any]], meta_keys: list[str]) -> list[dict[str, Any]]:
    seen, out = set(), []
    for cfg in menu:
        key = tuple(sorted(cfg.items()))
        if key not in seen:
            seen.add(key)
            out.append(dict(cfg))
    return out


def output_alloc(shape: str, dtype: str, device: str) -> str:
    torch_dtype = f"{dtype.removeprefix('like:')}.dtype" if dtype.startswith("like:") else f"torch.{dtype}"
    return f"torch.empty({shape}, device={device}, dtype={torch_dtype})"


class Launcher:
    """The Python function that prepares arguments, allocates outputs and launches one kernel."""

    def __init__(self, ir: ProgramIR, kernel: Kernel, name: str) -> None:
        self.ir = ir
        self.kernel = kernel
        self.name = name
        self.inputs = step_uses(kernel)

    def is_tensor(self, value: str) -> bool:
        return self.ir.values.get(value, {}).get("shape") is not None

    def begin(self, w: Writer) -> None:
        for line in wrap_call(f"def {self.name}", self.inputs, ":", w.depth):
            w(line)

    def contiguous(self, w: Writer, values: list[str] | None = None) -> None:
        """Kernels index operands as dense row-major tensors."""
        for v in values if values is not None else self.inputs:
            if self.is_tensor(v):
                w(f"{v} = {v}.contiguous()")

    def device(self) -> str:
        tensors = [v for v in self.inputs if self.is_tensor(v)]
        return f"{tensors[0]}.device"

    def finish(self, w: Writer) -> None:
        outs = [o.value for o in self.kernel.outputs]
        w(f"return {', '.join(outs)}")
