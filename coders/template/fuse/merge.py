"""Merging two kernels: the guest's space mapped onto the host's, their bodies joined (an epilogue
after the host's, a prologue before), the merged kernel placed in the program."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace

from coders.template.emit import channel_reduce
from coders.template.emit import pool as pool_emit
from coders.template.emit.common import FusionError
from coders.template.fuse.channels import CHANNEL_HOSTS, channel_map
from coders.template.fuse.dead_code import compact, eliminate_dead, in_order
from coders.template.fuse.pooled import pool_space, refuse_mean, refuse_pool, takes_mean, takes_pool
from coders.template.fuse.queries import GEMM_KINDS, TRIANGLES, NotFusable, base_of, space_shape, validate
from coders.template.ir import Kernel, Op, Operand, Output, ProgramIR, PyStep, step_uses
from coders.template.scans import WALK_KINDS


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
    if host.kind in CHANNEL_HOSTS:
        return channel_map(ir, host, guest)  # a reduction over its channels too (fuse/channels.py)
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
    if "spatial_mean" in host.space:
        raise NotFusable("a conv meaning its output over the pixels takes nothing after it")
    pools, means = takes_pool(host, guest, prologue), takes_mean(host, guest, prologue)
    if pools:
        refuse_pool(ir, host, guest)  # a conv's non-overlapping pool (fuse/pooled.py)
    elif means:
        refuse_mean(ir, host, guest)  # a global average pool (fuse/pooled.py)
    elif guest.kind == "pool" or (host.kind == "pool" and space_shape(ir, guest) !=
                                  (host.space["in_traced"] if prologue else space_shape(ir, host))):
        raise NotFusable("a pool kernel takes elementwise ops on its input or its output only")
    same = {i: i for i in range(len(space_shape(ir, host)))}
    mapping = (same, False) if pools or means else dim_map(ir, host, guest)
    if mapping is None:
        raise NotFusable("the kernels iterate over different spaces")
    dims_of, reduced_level = mapping
    if any(op.op in TRIANGLES for op in guest.body) and space_shape(ir, guest) != space_shape(ir, host):
        raise NotFusable("triu / tril index the rows and columns of their own shape")
    if prologue and reduced_level:
        raise NotFusable("a prologue must produce the reduction's input")
    # _merge_bodies reads the two kernels and the IR and edits only its own copy of the host
    merged = _merge_bodies(ir, host, guest, dims_of, reduced_level, prologue)
    if means:
        merged.space["spatial_mean"] = True  # the tile's rows added into [N, C_out] (emit/conv_mean.py)
    elif host.kind in CHANNEL_HOSTS and guest.kind == "reduce":
        channel_reduce.fit_tile(merged)  # every output channel in one tile
    if pools:
        pool_space(merged, guest)  # it iterates over the pooled output now
    return merged, prologue


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


class _BodyMerge:
    """One merge of a guest's body into a copy of the host's: the merged kernel's op names (a guest op
    whose name the host already uses is renamed) and the guest's dims in the host's space."""

    def __init__(self, ir: ProgramIR, host: Kernel, dims_of: dict[int, int]) -> None:
        self.ir = ir
        self.merged = copy.deepcopy(host)
        self.names = {op.out for op in self.merged.body}
        self.dims_of = dims_of

    def fresh(self, name: str) -> str:
        base, i, out = name, 1, name
        while out in self.names:
            i += 1
            out = f"{base}_{i}"
        self.names.add(out)
        return out

    def mapped(self, dims: list[int]) -> list[int]:
        return sorted(self.dims_of[d] for d in dims if d in self.dims_of)

    def substitute(self, operand: Operand, dims: list[int], outputs: dict[str, Output],
                   body_names: dict[str, str] | None) -> str | None:
        """The body value for an operand that reads the other kernel's output, if it does."""
        base = base_of(self.ir, operand.value)
        if base not in outputs:
            return None
        out = outputs[base]
        written = self.mapped(out.dims) if body_names is not None else out.dims
        if written != dims:
            raise NotFusable(f"{operand.value} is read at other positions than it is written")
        return body_names[out.src] if body_names is not None else out.src


def _merge_bodies(ir: ProgramIR, host: Kernel, guest: Kernel, dims_of: dict[int, int],
                  reduced_level: bool, prologue: bool) -> Kernel:
    m = _BodyMerge(ir, host, dims_of)
    merged = m.merged
    guest_body_names, guest_ops = _guest_ops(m, guest, {o.value: o for o in host.outputs}, reduced_level,
                                             prologue)
    if prologue:
        _put_prologue(m, {o.value: o for o in guest.outputs}, guest_body_names, guest_ops)
    else:
        merged.body = merged.body + guest_ops
    for out in guest.outputs:
        dims = m.mapped(out.dims)
        # a reduce guest's outputs say themselves; a guest on the reduced level keeps the reduced
        # dims when its shape has them (size 1)
        keepdim = out.keepdim or reduced_level and len(space_shape(ir, guest)) == len(space_shape(ir, host))
        merged.outputs.append(Output(out.value, guest_body_names[out.src], dims, out.dtype, keepdim))
    merged.body = toposort(merged.body)
    first, second = (guest, host) if prologue and host.kind == "reduce" else (host, guest)
    merged.name = _merged_name(ir, first, second)
    compact(merged)
    _fix_space(ir, merged, host, guest)
    _fix_dtypes(ir, merged)
    return merged


def _guest_ops(m: _BodyMerge, guest: Kernel, host_outputs: dict[str, Output], reduced_level: bool,
               prologue: bool) -> tuple[dict[str, str], list[Op]]:
    """The guest's ops renamed into the merged body, and each guest value's name there. An epilogue's
    loads of the host's outputs become the host's values; other loads are re-addressed in the host's
    space (one load per operand)."""
    ir, merged = m.ir, m.merged
    guest_body_names: dict[str, str] = {}
    guest_ops: list[Op] = []
    for op in guest.body:
        if op.op == "load":
            operand = guest.operands[op.args[0]]
            dims = m.mapped(operand.dims)
            lost = [d for d in operand.dims if d not in m.dims_of]
            if not operand.scalar and lost and not reduced_level and \
                    any(space_shape(ir, guest)[d] != 1 for d in lost):
                raise NotFusable("operand dims do not map")
            if operand.scalar:
                dims = []
            src = None if prologue else m.substitute(operand, dims, host_outputs, None)
            if src is not None:
                guest_body_names[op.out] = src
                continue
            index = _operand_index(merged, Operand(operand.value, dims, operand.scalar, operand.integer))
            existing = next((o.out for o in merged.body + guest_ops
                             if o.op == "load" and o.args == [index]), None)
            if existing:
                guest_body_names[op.out] = existing
                continue
            new_op = Op(m.fresh(op.out), "load", [index])
        else:
            args = [guest_body_names.get(a, a) if isinstance(a, str) else a for a in op.args]
            new_op = Op(m.fresh(op.out), op.op, args, dict(op.attrs))
        guest_body_names[op.out] = new_op.out
        guest_ops.append(new_op)
    return guest_body_names, guest_ops


def _put_prologue(m: _BodyMerge, guest_outputs: dict[str, Output], guest_body_names: dict[str, str],
                  guest_ops: list[Op]) -> None:
    """A prologue: the guest's body goes first, and the host's loads of the guest's outputs read the
    guest's values instead."""
    merged = m.merged
    swap: dict[str, str] = {}
    kept: list[Op] = []
    for op in merged.body:
        if op.op == "load":
            operand = merged.operands[op.args[0]]
            src = m.substitute(operand, operand.dims, guest_outputs, guest_body_names)
            if src is not None:
                swap[op.out] = src
                continue
        kept.append(replace(op, args=[swap.get(a, a) if isinstance(a, str) else a for a in op.args]))
    merged.body = guest_ops + kept
    merged.outputs = [replace(o, src=swap.get(o.src, o.src)) for o in merged.outputs]


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
