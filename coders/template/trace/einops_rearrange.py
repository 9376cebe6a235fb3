"""`einops.rearrange` of a traced tensor, as the views it stands for.

einops dispatches on the tensor's type, and an fx Proxy is none it knows, so a task that rearranges
(KernelBench's Mamba2) fails to trace. While tracing, `rearrange` of a Proxy is replaced by what it
does: a reshape that splits the input's composite axes, a permute, a reshape that merges the output's
groups, written with the traced sizes (`x.shape[1] // 64`), so the program stays size-generic and
needs no einops. Patterns of names, `(...)` groups and one `...` are taken; anything else (anonymous
axes, a list of tensors) raises. A call on real tensors (the meta replay) goes to einops itself.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from typing import Any

import torch.fx as fx
import torch.nn as nn

from coders.template.trace.graph import unsupported

_TOKEN = re.compile(r"\.\.\.|\(|\)|[A-Za-z_]\w*|\S+")


@contextlib.contextmanager
def traced_rearrange(model: nn.Module) -> Iterator[None]:
    """`einops.rearrange`, wherever the model's forwards can reach it, traced as above."""
    einops = sys.modules.get("einops")
    if einops is None:  # the task does not use einops
        yield
        return
    original = einops.rearrange

    def rearrange(tensor: Any, pattern: str, **lengths: int) -> Any:
        if isinstance(tensor, fx.Proxy):
            return rearrange_proxy(tensor, pattern, lengths)
        return original(tensor, pattern, **lengths)

    spaces = [vars(einops)] + [getattr(type(m).forward, "__globals__", {}) for m in model.modules()]
    patched = {id(space): space for space in spaces if space.get("rearrange") is original}
    try:
        for space in patched.values():
            space["rearrange"] = rearrange
        yield
    finally:
        for space in patched.values():
            space["rearrange"] = original


def rearrange_proxy(x: fx.Proxy, pattern: str, lengths: dict[str, int]) -> fx.Proxy:
    left_text, arrow, right_text = pattern.partition("->")
    if not arrow:
        raise unsupported(f"einops pattern {pattern!r} without '->'")
    rank = int(x.dim())  # a rank pins nothing (trace/concrete.py)
    left, right = parse(left_text, pattern), parse(right_text, pattern)
    covered = rank - (len(left) - 1) if ["..."] in left else 0  # the dims `...` stands for
    left, right = expand_ellipsis(left, covered, pattern), expand_ellipsis(right, covered, pattern)
    if len(left) != rank:
        raise unsupported(f"einops pattern {pattern!r} for a tensor of rank {rank}")
    sizes = axis_sizes(x, left, lengths, pattern)
    axes = [axis for group in left for axis in group]
    order = [axis for group in right for axis in group]
    if sorted(axes) != sorted(order):
        raise unsupported(f"einops pattern {pattern!r}: rearrange keeps every axis")
    if any(len(group) != 1 for group in left):
        x = x.reshape(*[sizes[axis] for axis in axes])
    perm = [axes.index(axis) for axis in order]
    if perm != list(range(len(perm))):
        x = x.permute(*perm)
    if any(len(group) != 1 for group in right):
        x = x.reshape(*[_product([sizes[axis] for axis in group]) for group in right])
    return x


def _product(values: list[Any]) -> Any:
    """The product of sizes, traced ones among them (math.prod would be traced as a call)."""
    out = values[0] if values else 1
    for value in values[1:]:
        out = out * value
    return out


def parse(side: str, pattern: str) -> list[list[str]]:
    """One side of a pattern as groups of axis names; `...` is the group ["..."]."""
    groups: list[list[str]] = []
    current: list[str] | None = None
    for token in _TOKEN.findall(side):
        if token == "(" and current is None:
            current = []
        elif token == ")" and current is not None:
            groups.append(current)
            current = None
        elif token == "..." and current is None:
            groups.append(["..."])
        elif token.isidentifier() and current is not None:
            current.append(token)
        elif token.isidentifier():
            groups.append([token])
        else:
            raise unsupported(f"einops pattern {pattern!r} (only names, (groups) and ... are taken)")
    if current is not None:
        raise unsupported(f"einops pattern {pattern!r} with an unclosed group")
    return groups


def expand_ellipsis(groups: list[list[str]], covered: int, pattern: str) -> list[list[str]]:
    """`...` as `covered` axes, one per dim, named alike on both sides."""
    marks = [i for i, group in enumerate(groups) if group == ["..."]]
    if not marks:
        return groups
    if len(marks) > 1:
        raise unsupported(f"einops pattern {pattern!r} with more than one ...")
    return groups[:marks[0]] + [[f"...{i}"] for i in range(covered)] + groups[marks[0] + 1:]


def axis_sizes(x: fx.Proxy, left: list[list[str]], lengths: dict[str, int], pattern: str) -> dict[str, Any]:
    """Each elementary axis's size: given, the input dim's (traced), or what its group leaves."""
    sizes: dict[str, Any] = {}
    for dim, group in enumerate(left):
        unknown = [axis for axis in group if axis not in lengths]
        if len(unknown) > 1:
            raise unsupported(f"einops pattern {pattern!r}: group {group} has more than one unknown axis")
        known = _product([lengths[axis] for axis in group if axis in lengths])
        sizes.update({axis: lengths[axis] for axis in group if axis in lengths})
        if unknown:
            sizes[unknown[0]] = x.shape[dim] if len(group) == 1 else x.shape[dim] // known
    return sizes
