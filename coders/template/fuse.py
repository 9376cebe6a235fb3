"""Fusion on the IR: merge a producer kernel with a consumer kernel, drop what is no longer needed.

Two kernels merge when the guest's space maps onto the host's: the same shape (an elementwise op
on a reduction's input or on a matmul's output), or the reduced shape of a reduction (an op on
its per-row results). Operands the guest read from the host's outputs become body values; other
operands are re-addressed in the host's space, which must be able to address them (checked by
the emitters). Outputs nobody reads any more are not stored.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from dataclasses import replace

from coders.template.emit import conv as conv_emit
from coders.template.emit import conv_transpose as conv_transpose_emit
from coders.template.emit import matmul as matmul_emit
from coders.template.emit import pool as pool_emit
from coders.template.emit import reduce as reduce_emit
from coders.template.emit import scan as scan_emit
from coders.template.emit.common import FusionError, check_operands, needed
from coders.template.ir import Kernel, Op, Operand, Output, ProgramIR, PyStep, step_outs, step_uses
from coders.template.lower import attention_kernel
from coders.template.scans import WALK_KINDS

# kernels computing a GEMM (explicit or implicit) on an fp32 accumulator tile: hosts of the
# elementwise epilogues after them, never guests of another kernel
GEMM_KINDS = ("matmul", "conv", "conv_transpose")
# elementwise ops that read their element's row and column (of the last two dims)
TRIANGLES = ("triu", "tril")


class NotFusable(ValueError):
    pass


# --------------------------------------------------------------------------------------------------
# queries
# --------------------------------------------------------------------------------------------------

def base_of(ir: ProgramIR, value: str) -> str:
    """Follow views that only add or drop size-1 dims back to the tensor they view."""
    while True:
        step = ir.producer(value)
        if isinstance(step, PyStep) and step.alias_of and len(step.outs) == 1:
            value = step.alias_of
        else:
            return value


def result_names(ir: ProgramIR) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", ir.result)) & set(ir.values)


def validate(kernel: Kernel) -> None:
    """Raise FusionError if the kernel kind cannot address one of its operands."""
    if kernel.kind == "pointwise":
        full = list(range(len(kernel.space["traced"])))
        if any(o.dims != full for o in kernel.outputs):
            raise FusionError("an elementwise kernel writes whole outputs only")
    if kernel.kind == "reduce":
        reduce_emit.Layout(kernel).check()
        if kernel.config.get("split_k", 1) > 1 and not reduce_emit.splittable(kernel):
            raise FusionError("the split reduction would need dependent passes")
    elif kernel.kind == "matmul":
        check_operands(kernel, matmul_emit.epilogue_axes(kernel))
    elif kernel.kind == "conv":
        conv_emit.check(kernel)
    elif kernel.kind == "conv_transpose":
        check_operands(kernel, conv_transpose_emit.epilogue_axes(kernel))
    elif kernel.kind == "pool":
        pool_emit.check(kernel)
    elif kernel.kind in WALK_KINDS:
        scan_emit.check(kernel)
    if kernel.kind not in ("pointwise", "matmul") and \
            any(op.op in TRIANGLES for op in kernel.body):
        raise FusionError("triu / tril read the row and column of a pointwise or matmul kernel only")
    if kernel.kind == "matmul" and any(op.op in TRIANGLES for op in kernel.body):
        matmul_emit.check_triangles(kernel)


def space_shape(ir: ProgramIR, kernel: Kernel) -> list[int]:
    return list(kernel.space["traced"])


class CachedUses:
    """step_uses of each step object, computed once. fuse_chains asks for them thousands of times
    on a large program, and a step in an IR is never edited once placed (merges copy on write); the
    cache holds the steps themselves, so an id is never reused while it is cached."""

    def __init__(self) -> None:
        self.cache: dict[int, tuple[Kernel | PyStep, list[str]]] = {}

    def __call__(self, step: Kernel | PyStep) -> list[str]:
        hit = self.cache.get(id(step))
        if hit is None or hit[0] is not step:
            hit = self.cache[id(step)] = (step, step_uses(step))
        return hit[1]


# --------------------------------------------------------------------------------------------------
# dead code and ordering
# --------------------------------------------------------------------------------------------------

def compact(kernel: Kernel) -> None:
    """Drop body ops no output needs and operands no op loads."""
    keep = needed(kernel.body, [o.src for o in kernel.outputs])
    loaded = sorted({op.args[0] for op in keep if op.op == "load"})
    remap = {old: new for new, old in enumerate(loaded)}
    kernel.operands = [kernel.operands[i] for i in loaded]
    kernel.body = [replace(op, args=[remap[op.args[0]]]) if op.op == "load" else op for op in keep]


def eliminate_dead(ir: ProgramIR, uses: Callable[[Kernel | PyStep], list[str]] = step_uses) -> None:
    """Drop steps and outputs nobody reads. Copy-on-write: a kernel that loses outputs is replaced
    by a copy in `ir.steps`, so an IR sharing its step objects with another one (merge) never
    changes the other."""
    while True:
        used = result_names(ir)
        for step in ir.steps:
            used.update(uses(step))
        kept: list[Kernel | PyStep] = []
        for step in ir.steps:
            if isinstance(step, PyStep):
                if set(step.outs) & used:
                    kept.append(step)
                continue
            live = [o for o in step.outputs if o.value in used]
            if len(live) == len(step.outputs):
                kept.append(step)
            elif live:
                trimmed = copy.copy(step)  # compact reassigns operands and body, never edits them
                trimmed.outputs = live
                compact(trimmed)
                kept.append(trimmed)
        if len(kept) == len(ir.steps) and all(a is b for a, b in zip(kept, ir.steps, strict=True)):
            return
        ir.steps = kept


def in_order(ir: ProgramIR, uses: Callable[[Kernel | PyStep], list[str]] = step_uses) -> bool:
    defined = set(ir.args)
    for step in ir.steps:
        if not defined.issuperset(uses(step)):
            return False
        defined |= set(step_outs(step))
    return True


# --------------------------------------------------------------------------------------------------
# merging two kernels
# --------------------------------------------------------------------------------------------------

def dim_map(ir: ProgramIR, host: Kernel, guest: Kernel) -> tuple[dict[int, int], bool] | None:
    """Guest space dim -> host space dim, and whether the guest runs on the host's reduced level."""
    h, g = space_shape(ir, host), space_shape(ir, guest)
    if host.kind in WALK_KINDS:
        # elementwise ops over a scan's or arg-reduction's input (a prologue), dim for dim
        same = guest.kind == "pointwise" and g == h
        return ({i: i for i in range(len(g))}, False) if same else None
    if host.kind == "pool":
        # elementwise ops over the pool's input (a prologue) or its output (an epilogue), dim for dim
        same = guest.kind == "pointwise" and g in (h, host.space["in_traced"])
        return ({i: i for i in range(len(g))}, False) if same else None
    if host.kind == "reduce":
        d0, d1 = host.space["red"]
        if guest.kind == "reduce":
            if g == h and guest.space["red"] == host.space["red"] and \
                    guest.space.get("groups") == host.space.get("groups"):
                return {i: i for i in range(len(g))}, False
            return None
        if g == h:
            return {i: i for i in range(len(g))}, False
        if host.space.get("groups"):
            return None
        kept = [d for d in range(len(h)) if not d0 <= d < d1]
        if g == [h[d] for d in kept]:
            return dict(enumerate(kept)), True
        keepdim = [1 if d0 <= d < d1 else h[d] for d in range(len(h))]
        if g == keepdim:
            return {i: i for i in kept}, True
        return None
    if guest.kind == "reduce":
        return None
    if g == h:
        return {i: i for i in range(len(g))}, False
    if host.kind == "pointwise" and guest.kind == "pointwise" and broadcasts(g, h):
        # the guest is a smaller elementwise computation (per-channel constants): inline it
        offset = len(h) - len(g)
        return {i: offset + i for i in range(len(g)) if g[i] == h[offset + i]}, False
    return None


def broadcasts(small: list[int], big: list[int]) -> bool:
    """`small` broadcasts to `big` (and is not the same shape)."""
    if len(small) > len(big) or small == big:
        return False
    offset = len(big) - len(small)
    return all(s in (1, big[offset + i]) for i, s in enumerate(small))


def merge(ir: ProgramIR, producer: Kernel, consumer: Kernel) -> ProgramIR:
    """A new IR with the two kernels merged into one (raises NotFusable). `ir` is left as it was;
    the new IR shares the step objects it did not change with it."""
    merged, _ = merged_kernel(ir, producer, consumer)
    return place(ir, producer, consumer, merged)


def merged_kernel(ir: ProgramIR, producer: Kernel, consumer: Kernel) -> tuple[Kernel, bool]:
    """The kernel computing both, and whether the producer went in as a prologue. Raises
    NotFusable (or FusionError) for reasons that depend on the two kernels alone, never on the
    rest of the program: a pair refused here stays refused while neither kernel changes."""
    prologue = producer.kind == "pointwise" and (
        consumer.kind in ("reduce", "pool", *WALK_KINDS) or (consumer.kind == "pointwise" and broadcasts(
            space_shape(ir, producer), space_shape(ir, consumer))))
    host, guest = (consumer, producer) if prologue else (producer, consumer)
    if host.kind == "attention" or guest.kind in (*GEMM_KINDS, "attention"):
        raise NotFusable("attention, matmul and conv kernels only take elementwise epilogues")
    if "recurrent" in (host.kind, guest.kind):
        raise NotFusable("a recurrent layer's steps write its state for the next step, as it is")
    if "cat" in (host.kind, guest.kind):
        raise NotFusable("a concatenation copies its inputs as they are")
    if host.kind == "pointwise" and guest.kind == "reduce":
        raise NotFusable("a pointwise kernel cannot host a reduction")
    if guest.kind in WALK_KINDS or (host.kind in WALK_KINDS and not prologue):
        raise NotFusable("a scan or arg-reduction takes elementwise ops on its input only")
    if guest.kind == "pool" or (host.kind == "pool" and space_shape(ir, guest) !=
                                (host.space["in_traced"] if prologue else space_shape(ir, host))):
        raise NotFusable("a pool kernel takes elementwise ops on its input or its output only")
    mapping = dim_map(ir, host, guest)
    if mapping is None:
        raise NotFusable("the kernels iterate over different spaces")
    dims_of, reduced_level = mapping
    if any(op.op in TRIANGLES for op in guest.body) and space_shape(ir, guest) != space_shape(ir, host):
        raise NotFusable("triu / tril index the rows and columns of their own shape")
    if prologue and reduced_level:
        raise NotFusable("a prologue must produce the reduction's input")
    # _merge_bodies reads the two kernels and the IR and edits only its own copy of the host
    return _merge_bodies(ir, host, guest, dims_of, reduced_level, prologue), prologue


def place(ir: ProgramIR, producer: Kernel, consumer: Kernel, merged: Kernel,
          uses: Callable[[Kernel | PyStep], list[str]] = step_uses) -> ProgramIR:
    """The IR with `merged` in place of the two kernels, at the consumer's position or else at the
    producer's, whichever keeps every step after the values it reads (raises NotFusable)."""
    p_index = next(i for i, s in enumerate(ir.steps) if s is producer)
    c_index = next(i for i, s in enumerate(ir.steps) if s is consumer)
    for position in (c_index, p_index):
        steps = [s for i, s in enumerate(ir.steps) if i not in (p_index, c_index)]
        before = sum(1 for i in range(position) if i not in (p_index, c_index))
        steps.insert(before, copy.deepcopy(merged))
        trial = replace(ir, steps=steps)  # shares the unchanged steps: eliminate_dead copies on write
        eliminate_dead(trial, uses)
        if in_order(trial, uses):
            try:
                validate(trial.kernel(merged.name))
            except FusionError as err:
                raise NotFusable(str(err)) from None
            return trial
    raise NotFusable("another step needs an intermediate between the two kernels")


def _merge_bodies(ir: ProgramIR, host: Kernel, guest: Kernel, dims_of: dict[int, int],
                  reduced_level: bool, prologue: bool) -> Kernel:
    merged = copy.deepcopy(host)
    names = {op.out for op in merged.body}
    rename: dict[str, str] = {}
    host_outputs = {o.value: o for o in host.outputs}
    guest_outputs = {o.value: o for o in guest.outputs}

    def fresh(name: str) -> str:
        base, i, out = name, 1, name
        while out in names:
            i += 1
            out = f"{base}_{i}"
        names.add(out)
        return out

    def mapped(dims: list[int]) -> list[int]:
        return sorted(dims_of[d] for d in dims if d in dims_of)

    def substitute(operand: Operand, dims: list[int], outputs: dict[str, Output],
                   body_names: dict[str, str] | None) -> str | None:
        """The body value for an operand that reads the other kernel's output, if it does."""
        base = base_of(ir, operand.value)
        if base not in outputs:
            return None
        out = outputs[base]
        written = mapped(out.dims) if body_names is not None else out.dims
        if written != dims:
            raise NotFusable(f"{operand.value} is read at other positions than it is written")
        return body_names[out.src] if body_names is not None else out.src

    # a prologue: the host's loads of the guest's outputs become the guest's values, so the
    # guest's body goes first
    guest_body_names: dict[str, str] = {}
    guest_ops: list[Op] = []
    for op in guest.body:
        if op.op == "load":
            operand = guest.operands[op.args[0]]
            dims = mapped(operand.dims)
            lost = [d for d in operand.dims if d not in dims_of]
            if not operand.scalar and lost and not reduced_level and \
                    any(space_shape(ir, guest)[d] != 1 for d in lost):
                raise NotFusable("operand dims do not map")
            if operand.scalar:
                dims = []
            src = None if prologue else substitute(operand, dims, host_outputs, None)
            if src is not None:
                guest_body_names[op.out] = src
                continue
            index = _operand_index(merged, Operand(operand.value, dims, operand.scalar, operand.integer))
            existing = next((o.out for o in merged.body + guest_ops
                             if o.op == "load" and o.args == [index]), None)
            if existing:
                guest_body_names[op.out] = existing
                continue
            new_op = Op(fresh(op.out), "load", [index])
        else:
            args = [guest_body_names.get(a, a) if isinstance(a, str) else a for a in op.args]
            new_op = Op(fresh(op.out), op.op, args, dict(op.attrs))
        guest_body_names[op.out] = new_op.out
        guest_ops.append(new_op)
        rename[op.out] = new_op.out
    if prologue:
        # host loads of the guest's outputs read the guest's values instead
        swap: dict[str, str] = {}
        kept: list[Op] = []
        for op in merged.body:
            if op.op == "load":
                operand = merged.operands[op.args[0]]
                src = substitute(operand, operand.dims, guest_outputs, guest_body_names)
                if src is not None:
                    swap[op.out] = src
                    continue
            kept.append(replace(op, args=[swap.get(a, a) if isinstance(a, str) else a for a in op.args]))
        merged.body = guest_ops + kept
        merged.outputs = [replace(o, src=swap.get(o.src, o.src)) for o in merged.outputs]
    else:
        merged.body = merged.body + guest_ops
    for out in guest.outputs:
        dims = mapped(out.dims)
        keepdim = reduced_level and len(space_shape(ir, guest)) == len(space_shape(ir, host))
        merged.outputs.append(Output(out.value, guest_body_names[out.src], dims, out.dtype, keepdim))
    merged.body = toposort(merged.body)
    first, second = (guest, host) if prologue and host.kind == "reduce" else (host, guest)
    merged.name = _merged_name(ir, first, second)
    compact(merged)
    _fix_space(ir, merged, host, guest)
    _fix_dtypes(ir, merged)
    return merged


def toposort(body: list[Op]) -> list[Op]:
    """Body order with every op after its arguments, otherwise as given (loads move up as needed)."""
    names = {op.out for op in body}
    done: set[str] = set()
    out: list[Op] = []
    pending = list(body)
    while pending:
        for i, op in enumerate(pending):
            if all(a in done for a in op.args if isinstance(a, str) and a in names):
                out.append(pending.pop(i))
                done.add(op.out)
                break
        else:
            raise NotFusable("the merged body has a cycle")
    return out


def _operand_index(kernel: Kernel, operand: Operand) -> int:
    for i, o in enumerate(kernel.operands):
        if o.value == operand.value and o.dims == operand.dims and o.scalar == operand.scalar:
            return i
    kernel.operands.append(operand)
    return len(kernel.operands) - 1


def _merged_name(ir: ProgramIR, first: Kernel, second: Kernel) -> str:
    parts: list[str] = []
    for part in (first.name + "_" + second.name).split("_"):
        if part and not part.isdigit() and part not in parts:
            parts.append(part)
    name = "_".join(parts[:4]) or "fused"
    taken = {k.name for k in ir.kernels()} - {first.name, second.name}
    out, i = name, 1
    while out in taken:
        i += 1
        out = f"{name}{i}"
    return out


def _fix_space(ir: ProgramIR, merged: Kernel, host: Kernel, guest: Kernel) -> None:
    """The tensors the launcher sizes the kernel by must still be read by it."""
    full = list(range(len(merged.space["traced"])))
    reads = {o.value for o in merged.operands}
    candidates = [o.value for o in merged.operands if o.dims == full and not o.scalar]
    if merged.kind in ("reduce", *WALK_KINDS) and merged.space["input"] not in reads:
        if not candidates:
            raise NotFusable("no input of the merged kernel has the reduction's shape")
        merged.space["input"] = candidates[0]
    if merged.kind == "pool" and merged.space["input"] not in reads:
        # the launcher sizes the pool by a tensor of the input's shape that the window reads
        window = pool_emit.Regions(merged).per_tap_names
        taps = [o.value for i, o in enumerate(merged.operands) if o.dims == full and not o.scalar and
                any(op.op == "load" and op.args == [i] and op.out in window for op in merged.body)]
        if not taps:
            raise NotFusable("no input of the merged kernel has the pool input's shape")
        merged.space["input"] = taps[0]
    if merged.kind == "pointwise" and not set(merged.space["shape_of"]) <= reads:
        if not candidates:
            raise NotFusable("no input of the merged kernel has the output's shape")
        merged.space["shape_of"] = candidates[:1]


def _fix_dtypes(ir: ProgramIR, merged: Kernel) -> None:
    """`like:<v>` dtypes must name a tensor the launcher still receives."""
    available = set(step_uses(merged))
    for out in merged.outputs:
        spec = out.dtype
        seen = 0
        while spec.startswith("like:") and spec[5:] not in available and seen < 50:
            seen += 1
            value = base_of(ir, spec[5:])
            step = ir.producer(value)
            if isinstance(step, Kernel):
                spec = next(o.dtype for o in step.outputs if o.value == value)
            else:
                spec = ir.values[value]["dtype"]
        if spec.startswith("like:") and spec[5:] not in available:
            spec = ir.values[spec[5:]]["dtype"]
        out.dtype = spec


# --------------------------------------------------------------------------------------------------
# candidate pairs
# --------------------------------------------------------------------------------------------------

def pairs(ir: ProgramIR, uses: Callable[[Kernel | PyStep], list[str]] = step_uses
          ) -> list[tuple[str, Kernel, Kernel]]:
    """(kind, producer, consumer) for every kernel that reads another kernel's output."""
    producer_of: dict[str, Kernel | PyStep] = {}  # ir.producer for every value, in one pass
    for step in ir.steps:
        for value in step_outs(step):
            producer_of.setdefault(value, step)
    return [pair for consumer in ir.kernels() for pair in _pairs_of(consumer, producer_of, uses)]


def _pairs_in_order(ir: ProgramIR, uses: Callable[[Kernel | PyStep], list[str]]
                    ) -> Iterator[tuple[str, Kernel, Kernel]]:
    """pairs(ir) of a program in order, one at a time: the producers of a kernel's values are all
    known when it is reached, so a caller that stops early does not pay for the rest."""
    producer_of: dict[str, Kernel | PyStep] = {}
    for step in ir.steps:
        if isinstance(step, Kernel):
            yield from _pairs_of(step, producer_of, uses)
        for value in step_outs(step):
            producer_of.setdefault(value, step)


def _pairs_of(consumer: Kernel, producer_of: dict[str, Kernel | PyStep],
              uses: Callable[[Kernel | PyStep], list[str]]) -> list[tuple[str, Kernel, Kernel]]:
    def base(value: str) -> str:  # base_of over the index
        while True:
            step = producer_of.get(value)
            if isinstance(step, PyStep) and step.alias_of and len(step.outs) == 1:
                value = step.alias_of
            else:
                return value

    producers: list[Kernel] = []
    for value in uses(consumer):
        step = producer_of.get(base(value))
        if isinstance(step, Kernel) and step is not consumer and not any(step is p for p in producers):
            producers.append(step)
    out = []
    for producer in producers:
        inline = producer.kind == "pointwise" and consumer.kind == "pointwise" and \
            broadcasts(list(producer.space["traced"]), list(consumer.space["traced"]))
        hosts_prologues = consumer.kind in ("reduce", "pool", *WALK_KINDS)
        kind = "prologue" if producer.kind == "pointwise" and hosts_prologues or inline else "epilogue"
        out.append((kind, producer, consumer))
    return out


def fusions(ir: ProgramIR, kind: str) -> list[ProgramIR]:
    """Every legal single merge of this kind, in program order."""
    results = []
    for k, producer, consumer in pairs(ir):
        if k != kind:
            continue
        try:
            results.append(merge(ir, producer, consumer))
        except (NotFusable, FusionError):
            continue
    return results


def fuse_chains(ir: ProgramIR) -> ProgramIR:
    """The port's grouping: maximal chains of elementwise ops become one kernel.

    Merges the first pair in program order that merges, then looks again from the start, which is
    what makes the grouping what it is. Large programs (ResNet-101 lowers to ~860 kernels) stay
    cheap: a pair the two kernels alone refuse (merged_kernel) is remembered and not tried again
    while neither kernel changes, and once a merge has left the program clean (in order, no dead
    step), a merge is placed by looking at the two kernels' neighbourhood only (place_local)."""
    refused: dict[tuple[int, int], tuple[Kernel, Kernel]] = {}  # the pair itself keeps its ids taken
    blocked: dict[tuple, list[Kernel | PyStep]] = {}  # pairs refused in a context, with its steps
    uses = CachedUses()
    readers: Readers | None = None  # set once the program is clean
    while True:
        position = {id(s): i for i, s in enumerate(ir.steps)}
        candidates = pairs(ir, uses) if readers is None else _pairs_in_order(ir, uses)
        for _, producer, consumer in candidates:
            if not producer.kind == consumer.kind == "pointwise":
                continue
            key = (id(producer), id(consumer))
            if key in refused:
                continue
            context = None
            if readers is not None:
                window = ir.steps[position[id(producer)]:position[id(consumer)] + 1]
                context = _context(window, uses, readers)
                if context in blocked:
                    continue
            try:
                merged, _ = merged_kernel(ir, producer, consumer)
            except (NotFusable, FusionError):
                refused[key] = (producer, consumer)
                continue
            try:
                if readers is None:
                    ir = place(ir, producer, consumer, merged, uses)
                    readers = Readers(ir, uses)  # place leaves the program clean
                else:
                    ir = place_local(ir, producer, consumer, merged, uses, readers)
                break
            except (NotFusable, FusionError):
                # the rest of the program is in the way: it may not be after another merge
                if context is not None:
                    blocked[context] = window
        else:
            return ir


def _context(window: list[Kernel | PyStep], uses: Callable[[Kernel | PyStep], list[str]],
             readers: Readers) -> tuple:
    """What place_local's verdict on a pair depends on besides the two kernels: the steps from the
    producer to the consumer and how many steps read each value they read or write."""
    values = [v for s in window for v in (*uses(s), *step_outs(s))]
    return tuple(id(s) for s in window), tuple(readers.count.get(v, 0) for v in values)


class Readers:
    """How many steps of a clean program read each value (the result counts as one reader), and
    which step makes it: what place_local needs to see which values lose their last reader."""

    def __init__(self, ir: ProgramIR, uses: Callable[[Kernel | PyStep], list[str]]) -> None:
        self.count: dict[str, int] = dict.fromkeys(result_names(ir), 1)
        self.maker: dict[str, Kernel | PyStep] = {}
        for step in ir.steps:
            for value in uses(step):
                self.count[value] = self.count.get(value, 0) + 1
            for value in step_outs(step):
                self.maker.setdefault(value, step)


def place_local(ir: ProgramIR, producer: Kernel, consumer: Kernel, merged: Kernel,
                uses: Callable[[Kernel | PyStep], list[str]], readers: Readers) -> ProgramIR:
    """place() for a clean program (in order, every step and output read): the same result, found
    from the two kernels' neighbourhood. Counting readers finds the outputs that die (the
    producer's values only the consumer read, and upstream what only they needed); only the steps
    between the two kernels can end up before a value they read. Updates `readers` on success."""
    p_index = next(i for i, s in enumerate(ir.steps) if s is producer)
    c_index = next(i for i, s in enumerate(ir.steps) if s is consumer)
    for at_consumer in (True, False):
        dead = _DeadCode(readers, uses, producer, consumer, copy.deepcopy(merged))
        placed = dead.now[id(dead.merged)]
        assert placed is not None, "the consumer's outputs are read after it"
        between = [dead.now.get(id(s), s) for s in ir.steps[p_index + 1:c_index]]
        window = [s for s in (between + [placed] if at_consumer else [placed] + between) if s is not None]
        if not _window_in_order(window, uses):
            continue
        try:
            validate(placed)
        except FusionError as err:
            raise NotFusable(str(err)) from None
        position = c_index if at_consumer else p_index
        steps: list[Kernel | PyStep] = []
        for i, s in enumerate(ir.steps):
            if i == position:
                steps.append(placed)
            s = dead.now.get(id(s), s)
            if s is not None:
                steps.append(s)
        _commit(readers, dead, ir.steps, placed)
        return replace(ir, steps=steps)
    raise NotFusable("another step needs an intermediate between the two kernels")


class _DeadCode:
    """The two kernels replaced by `merged`, and what that leaves unread dropped: `now` maps the id
    of every step that changed to its new version (None: gone), `count` the changed reader counts."""

    def __init__(self, readers: Readers, uses: Callable[[Kernel | PyStep], list[str]],
                 producer: Kernel, consumer: Kernel, merged: Kernel) -> None:
        self.readers, self.uses, self.merged = readers, uses, merged
        self.count: dict[str, int] = {}
        self.now: dict[int, Kernel | PyStep | None] = {id(producer): None, id(consumer): None,
                                                       id(merged): merged}
        self.made_by = dict.fromkeys(step_outs(merged), merged)
        for value in [*uses(producer), *uses(consumer)]:
            self.read(value, -1)
        for value in uses(merged):
            self.read(value, +1)
        self.settle(merged)
        for value in [*uses(producer), *uses(consumer)]:
            self.settle_maker(value)

    def readers_of(self, value: str) -> int:
        return self.count.get(value, self.readers.count.get(value, 0))

    def read(self, value: str, change: int) -> None:
        self.count[value] = self.readers_of(value) + change

    def settle_maker(self, value: str) -> None:
        maker = self.made_by.get(value) or self.readers.maker.get(value)
        if maker is not None and self.readers_of(value) <= 0:
            self.settle(maker)

    def settle(self, original: Kernel | PyStep) -> None:
        """Drop what nobody reads any more from one step, then from the steps it read."""
        step = self.now.get(id(original), original)
        if step is None:
            return
        dead = [v for v in step_outs(step) if self.readers_of(v) <= 0]
        if not dead:
            return
        left: list[str] = []
        if isinstance(step, PyStep) or len(dead) == len(step_outs(step)):
            self.now[id(original)] = None
        else:
            trimmed = copy.copy(step)  # compact reassigns operands and body, never edits them
            trimmed.outputs = [o for o in step.outputs if o.value not in dead]
            compact(trimmed)
            self.now[id(original)], left = trimmed, self.uses(trimmed)
        for value in set(self.uses(step)) - set(left):
            self.read(value, -1)
            self.settle_maker(value)


def _window_in_order(window: list[Kernel | PyStep], uses: Callable[[Kernel | PyStep], list[str]]) -> bool:
    """No step of the window reads a value the window defines later (what is defined outside it
    comes before it in a program that was in order)."""
    later = {v for s in window for v in step_outs(s)}
    for step in window:
        if any(v in later for v in uses(step)):
            return False
        later.difference_update(step_outs(step))
    return True


def _commit(readers: Readers, dead: _DeadCode, steps: list[Kernel | PyStep], placed: Kernel) -> None:
    """Carry a merge's changed reader counts and makers over to `readers`."""
    readers.count.update(dead.count)
    for step in steps:
        if id(step) in dead.now:
            for value in step_outs(step):
                if readers.maker.get(value) is step:
                    del readers.maker[value]
            new = dead.now[id(step)]
            if new is not None:
                readers.maker.update(dict.fromkeys(step_outs(new), new))
    readers.maker.update(dict.fromkeys(step_outs(placed), placed))


# --------------------------------------------------------------------------------------------------
# attention
# --------------------------------------------------------------------------------------------------

def _fusable(kind: str, half: bool) -> bool:
    """A softmax-only flash kernel computes q k^T twice, so it pays only where the dots are cheap
    next to the output's bytes: 16-bit operands. On the H200 bmm_softmax_fp16 (128 x 2048 x 2048,
    D=64) ran 0.71 ms fused against 1.55 as a GEMM plus a softmax kernel; baddbmm_softmax (fp32,
    64 x 2048 x 2048, D=64) ran 1.91 ms fused with tf32x3 dots (2.62 with fp32 FMA dots) against
    1.49 ms unfused."""
    return kind == "attention" or half


def fuse_attention(ir: ProgramIR, kind: str = "attention") -> ProgramIR | None:
    """Replace a matmul -> softmax -> matmul chain (kind "attention"), or a matmul -> softmax chain
    whose probabilities are the output (kind "softmax"), by one flash kernel."""
    for pattern in ir.patterns:
        half = ir.values[pattern["q"]]["dtype"] in ("float16", "bfloat16")
        if pattern["kind"] != kind or not _fusable(kind, half):
            continue
        inner = set(pattern["inner"])
        kernels = []
        for k in ir.kernels():
            outs = {o.value for o in k.outputs}
            if outs & (inner | {pattern["out"]}):
                if not outs <= inner | {pattern["out"]}:
                    break
                kernels.append(k)
        else:
            if not kernels or any(k.kind == "attention" for k in kernels):
                continue
            new = copy.deepcopy(ir)
            # in place of the last kernel of the chain: a scale computed between them is ready there
            last = max(kernels, key=lambda k: new.steps.index(new.kernel(k.name)))
            name = "attention" if kind == "attention" else "scores_softmax"
            taken = {k.name for k in new.kernels()}
            while name in taken:
                name += "_2"
            fused = attention_kernel(name, pattern["q"], pattern["kt"], pattern["v"], pattern["out"],
                                     pattern["scale"], pattern["traced"], pattern.get("causal", False),
                                     half=half, bias=pattern.get("bias"))
            precision = {k.config.get("precision") for k in kernels} - {None}
            if precision:
                fused.config["precision"] = sorted(precision)[0]
            gone = {k.name for k in kernels} - {last.name}
            new.steps = [fused if isinstance(s, Kernel) and s.name == last.name else s
                         for s in new.steps if not (isinstance(s, Kernel) and s.name in gone)]
            eliminate_dead(new)
            if in_order(new):
                return new
    return None


