"""The matmul work a task's masks make unnecessary, found while its reference is traced on meta tensors.

FlopCounterMode counts every matmul in full. Causal attention masks about half of its scores: the
scores q @ k^T at the masked places are overwritten (`masked_fill` with -inf, `where`, or a -inf bias
added), so they need not be computed, and after the softmax those places are exactly zero, so their
share of `probabilities @ v` multiplies by zero and need not be done either. A flash kernel skips
both. The verifier's roofline floor (mtmc/verify/engine.py) must be a lower bound on time, so the
summary subtracts that work (mtmc/tasks/summary.py). `F.scaled_dot_product_attention(is_causal=True)`
is the same form under the trace: on the meta device torch 2.13 runs its math path, a -inf bias made
from `ones(L, S).tril()` added to the scores (no fused attention op reaches the dispatch).

Two things are followed through the trace:
- values: a meta tensor has no data, but a mask is made of constants (`ones`, `arange`, `tril`, `==`,
  slices of a `tril` buffer registered in the constructor). An op whose inputs all have values is
  replayed on the CPU, so masks get real values; random ops, parameters (data, whatever their
  initial value) and tensors over VALUE_LIMIT elements get none.
- facts: which matmul a tensor is the output of, element for element (`Product`), and the share of
  its elements that are -inf or zero whatever that matmul computed (`Fact`).

A matmul needs a multiply-add (i, k, j) only where a[i, k] and b[k, j] may be nonzero and out[i, j]
is kept, so it is counted at 1 - (zero share of a) - (zero share of b) - (masked share of out); the
zeros of a constant operand count too (a kernel may skip them as it skips a mask's).
Shares of masks are added, capped at 1: the union of two masks is at most their sum, so the count
is never above the least work (a floor must stay below it), exact for one mask (a causal triangle),
and looser where masks overlap (the same mask applied twice). A masked product that is also used
unmasked elsewhere is counted as masked: a looser floor, not a wrong verdict for an honest kernel.
Forms not recognised here are counted in full, as before.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes
from torch.utils.weak import WeakTensorKeyDictionary

NEG_INF = -1e4  # a score at or below this is masked: exp(-1e4) is 0 in every float dtype
VALUE_LIMIT = 1 << 26  # elements: masks up to 8192 x 8192 get values; a larger tensor is data, not a mask
# matmul ops -> index of the first of their two operands (addmm and baddbmm take the bias first)
MATMULS = {"mm": 0, "bmm": 0, "addmm": 1, "baddbmm": 1}
# ops whose output holds the same elements as their first input, reshaped, retyped or repeated
SAME_ELEMENTS = {"view", "_unsafe_view", "reshape", "expand", "permute", "transpose", "t", "unsqueeze",
                 "squeeze", "flatten", "unflatten", "clone", "contiguous", "_to_copy", "alias", "detach"}
ONE = Fraction(1)


@dataclass
class Product:
    """One matmul call: its FLOPs and the shares of its work no result needs."""

    flops: int
    zero_inputs: Fraction  # zero shares of its operands, added
    masked_outputs: Fraction = Fraction(0)  # the largest masked share of its output seen downstream

    def needed_flops(self) -> int:
        unneeded = min(ONE, self.zero_inputs + self.masked_outputs)
        return int(self.flops * (1 - unneeded))


@dataclass(frozen=True)
class Fact:
    """What is known of a tensor's elements beyond its shape."""

    product: Product | None = None  # the matmul this tensor is the output of, element for element
    neg_inf: Fraction = Fraction(0)  # share of elements that are -inf whatever `product` computed
    zero: Fraction = Fraction(0)  # share of elements that are 0 whatever `product` computed


NOTHING = Fact()


class MaskedWork(TorchDispatchMode):
    """Enter it around the model's construction (masks are often buffers) and its forward; then
    `unneeded_flops()` is the matmul work the masks make unnecessary."""

    def __init__(self) -> None:
        super().__init__()
        self.values = WeakTensorKeyDictionary()  # meta tensor -> its CPU value
        self.facts = WeakTensorKeyDictionary()  # meta tensor -> Fact
        self.products: list[Product] = []

    def unneeded_flops(self) -> int:
        return sum(p.flops - p.needed_flops() for p in self.products)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if not self._replay(func, args, kwargs, out) and isinstance(out, torch.Tensor):
            self._follow(func, args, kwargs, out)
        return out

    # --- values ---------------------------------------------------------------------------------
    def value_of(self, x: Any) -> torch.Tensor | None:
        # A parameter is data, whatever it was initialised to: the verifier may judge other weights.
        if not isinstance(x, torch.Tensor) or isinstance(x, torch.nn.Parameter) or x.numel() > VALUE_LIMIT:
            return None
        return self.values.get(x) if x.device.type == "meta" else x

    def number(self, x: Any) -> float | None:
        """A Python number, or a one-element tensor with a value, as a float; else None."""
        if isinstance(x, int | float) and not isinstance(x, bool):
            return float(x)
        value = self.value_of(x)
        return float(value) if value is not None and value.numel() == 1 else None

    def _replay(self, func, args: tuple, kwargs: dict, out: Any) -> bool:
        """Run `func` again on the CPU values of its inputs, if they all have one, to give `out` its
        values (True). An in-place op that cannot be replayed leaves its target without a value."""
        outs = [out] if isinstance(out, torch.Tensor) else [
            o for o in pytree.tree_leaves(out) if isinstance(o, torch.Tensor)]
        wanted = any(o.device.type == "meta" for o in outs) and all(o.numel() <= VALUE_LIMIT for o in outs)
        cpu_out = self._on_cpu(func, args, kwargs) if wanted else None
        if cpu_out is None:
            if func._schema.is_mutable and args and isinstance(args[0], torch.Tensor):
                self.values.pop(args[0], None)
            return False
        for meta, value in zip(pytree.tree_leaves(out), pytree.tree_leaves(cpu_out), strict=False):
            if isinstance(meta, torch.Tensor) and meta.device.type == "meta":
                self.values[meta] = value
        return True

    def _on_cpu(self, func, args: tuple, kwargs: dict) -> Any:
        """`func` on the CPU values of its inputs; None if one has no value or the CPU has no kernel."""
        if any(self.value_of(x) is None for x in args if isinstance(x, torch.Tensor)):
            return None  # most ops, at once: their first input is data, not a constant
        inputs = [x for x in pytree.tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor)]
        if any(self.value_of(x) is None for x in inputs) or _random(func):
            return None

        def on_cpu(x: Any) -> Any:
            if isinstance(x, torch.device):
                return torch.device("cpu")
            return self.value_of(x) if isinstance(x, torch.Tensor) else x

        cpu_args, cpu_kwargs = pytree.tree_map(on_cpu, (args, kwargs))
        try:
            with _disable_current_modes():
                return func(*cpu_args, **cpu_kwargs)
        except (RuntimeError, NotImplementedError, TypeError):  # no value, no harm
            return None

    # --- facts ----------------------------------------------------------------------------------
    def fact_of(self, x: Any) -> Fact:
        fact = self.facts.get(x) if isinstance(x, torch.Tensor) else None
        if fact is not None:
            return fact
        value = self.value_of(x)
        if value is None or value.is_complex():
            return NOTHING
        return Fact(neg_inf=_share(value <= NEG_INF), zero=_share(value == 0))

    def _follow(self, func, args: tuple, kwargs: dict, out: torch.Tensor) -> None:
        rule = RULES.get(func.overloadpacket.__name__)
        mutated = bool(func._schema.is_mutable and args and isinstance(args[0], torch.Tensor))
        if rule is None and not mutated:
            return
        known = rule is _matmul or any(self._known(x) for x in args if isinstance(x, torch.Tensor))
        fact = rule(self, func, args, kwargs, out) if rule is not None and known else NOTHING
        if mutated:
            self.facts.pop(args[0], None)  # changed in place: what was known of it no longer holds
        if fact.product is not None:
            masked = min(ONE, fact.neg_inf + fact.zero)
            fact.product.masked_outputs = max(fact.product.masked_outputs, masked)
        if fact != NOTHING:
            self.facts[out] = fact

    def _known(self, x: torch.Tensor) -> bool:
        return x in self.facts or self.value_of(x) is not None


# --- rules: the fact of an op's output from the facts of its inputs ------------------------------
def _matmul(work: MaskedWork, func, args: tuple, kwargs: dict, out: torch.Tensor) -> Fact:
    first = MATMULS[func.overloadpacket.__name__]
    a, b = args[first], args[first + 1]
    flops = 2 * out.numel() * a.shape[-1]  # a multiply and an add per output and step of k, as FlopCounter
    product = Product(flops, work.fact_of(a).zero + work.fact_of(b).zero)
    work.products.append(product)
    return Fact(product=product)


def _same_elements(work: MaskedWork, func, args: tuple, kwargs: dict, out: torch.Tensor) -> Fact:
    # Reshaping and repeating keep every share; only a one-to-one copy keeps the matmul's places.
    fact = work.fact_of(args[0])
    return fact if out.numel() == args[0].numel() else replace(fact, product=None)


def _to_zero(work: MaskedWork, func, args: tuple, kwargs: dict, out: torch.Tensor) -> Fact:
    # exp(-inf) and relu(-inf) are exactly 0: the masked places of the scores are the zero places of
    # the probabilities.
    return Fact(zero=work.fact_of(args[0]).neg_inf)


def _masked_fill(work: MaskedWork, func, args: tuple, kwargs: dict, out: torch.Tensor) -> Fact:
    target, mask, fill = args[:3]
    fact = work.fact_of(target)
    mask_value, fill_value = work.value_of(mask), work.number(fill)
    if mask_value is None or fill_value is None:
        return fact  # places unknown: the fill is left out, the product's places stay
    masked = _share(mask_value)  # a mask broadcast over the target keeps its share
    if fill_value <= NEG_INF:
        return replace(fact, neg_inf=min(ONE, fact.neg_inf + masked))
    if fill_value == 0:
        return replace(fact, zero=min(ONE, fact.zero + masked))
    return fact


def _where(work: MaskedWork, func, args: tuple, kwargs: dict, out: torch.Tensor) -> Fact:
    condition, a, b = args[:3]
    chosen = work.value_of(condition)
    product = _product_of(work, out, a, b)
    if chosen is None:
        return Fact(product=product)
    fa, fb = work.fact_of(a), work.fact_of(b)
    # a's -inf places count only where `a` is chosen, b's only where it is not
    taken = _share(chosen.bool())
    neg_inf = min(fa.neg_inf, taken) + min(fb.neg_inf, 1 - taken)
    zero = min(fa.zero, taken) + min(fb.zero, 1 - taken)
    return Fact(product, min(ONE, neg_inf), min(ONE, zero))


def _added(work: MaskedWork, func, args: tuple, kwargs: dict, out: torch.Tensor) -> Fact:
    # -inf plus anything finite is -inf; minus -inf is +inf, so a subtrahend's places do not count.
    neg_inf = work.fact_of(args[0]).neg_inf
    if func.overloadpacket.__name__ in ("add", "add_") and kwargs.get("alpha", 1) > 0:
        neg_inf += work.fact_of(args[1]).neg_inf
    return Fact(_product_of(work, out, *args[:2]), min(ONE, neg_inf))


def _scaled(work: MaskedWork, func, args: tuple, kwargs: dict, out: torch.Tensor) -> Fact:
    # 0 times anything finite is 0; -inf stays -inf only under a positive scale.
    fa, fb = work.fact_of(args[0]), work.fact_of(args[1])
    zero = fa.zero + (fb.zero if func.overloadpacket.__name__ in ("mul", "mul_") else 0)
    scale = work.number(args[1])
    neg_inf = fa.neg_inf if scale is not None and scale > 0 else Fraction(0)
    return Fact(_product_of(work, out, *args[:2]), neg_inf, min(ONE, zero))


def _product_of(work: MaskedWork, out: torch.Tensor, *operands: Any) -> Product | None:
    """The product of an elementwise op's operand of the output's shape: only such an operand maps
    one to one onto the output's places."""
    for x in operands:
        if isinstance(x, torch.Tensor) and x.shape == out.shape and work.fact_of(x).product is not None:
            return work.fact_of(x).product
    return None


def _share(mask: torch.Tensor) -> Fraction:
    return Fraction(int(mask.sum()), mask.numel()) if mask.numel() else Fraction(0)


def _random(func) -> bool:
    return torch.Tag.nondeterministic_seeded in func.tags


RULES = {
    **dict.fromkeys(MATMULS, _matmul),
    **dict.fromkeys(SAME_ELEMENTS, _same_elements),
    **dict.fromkeys(("_softmax", "_safe_softmax", "exp", "relu"), _to_zero),
    **dict.fromkeys(("masked_fill", "masked_fill_"), _masked_fill),
    "where": _where,
    **dict.fromkeys(("add", "add_", "sub", "sub_"), _added),
    **dict.fromkeys(("mul", "mul_", "div", "div_"), _scaled),
}
