"""Candidate pairs and the fusion passes over a whole program: the first legal fusion of a kind
(`fuse epilogue` / `prologue`), all of them (`fuse all`), and the port's merge of every elementwise
chain."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import replace

from coders.template.emit.common import FusionError
from coders.template.fuse.dead_code import compact
from coders.template.fuse.merge import broadcasts, merge, merged_kernel, place
from coders.template.fuse.queries import CachedUses, NotFusable, result_names, validate
from coders.template.ir import Kernel, ProgramIR, PyStep, step_outs, step_uses
from coders.template.scans import WALK_KINDS


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


def first_fusion(ir: ProgramIR, kinds: tuple[str, ...] = ("epilogue", "prologue")) -> ProgramIR | None:
    """The first legal merge of one of `kinds` in program order (what `fuse <kind>` takes), or None."""
    for k, producer, consumer in pairs(ir):
        if k in kinds:
            try:
                return merge(ir, producer, consumer)
            except (NotFusable, FusionError):
                continue
    return None


def fuse_all(ir: ProgramIR) -> tuple[ProgramIR, int]:
    """`fuse all`: epilogue and prologue merges, the first in program order each time, until none is
    left; and how many were made. A level-2 chain (conv, three pointwise ops, a pool, a reduction)
    needs four or five pairwise `fuse` steps, which a run of `max_steps=4` cannot spend."""
    merges = 0
    while (fused := first_fusion(ir)) is not None:  # each merge removes a kernel: it ends
        ir, merges = fused, merges + 1
    return ir, merges


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
