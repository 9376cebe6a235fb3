"""A reduction over a conv's output channels merged into the conv kernel as an epilogue.

`x = conv(x) * s; x = torch.min(x, dim=1)[0]` (KernelBench level 2 reduces over channels right after
a conv in many tasks) is a conv kernel and a reduce kernel that reads the whole conv output back.
When one program's tile holds every output channel of its pixels (the implicit-GEMM form of a conv
or a transposed conv, groups == 1, C_out <= 256), the reduce kernel's body runs on the tile instead
(emit/channel_reduce.py) and only the reduced values are written. Elementwise ops on them then
merge on the conv's reduced level, as they do on a reduce kernel's.
"""

from __future__ import annotations

from coders.template.emit import channel_reduce
from coders.template.fuse.queries import NotFusable, space_shape
from coders.template.ir import Kernel, ProgramIR

# kernels whose epilogue can take a reduction over their output channels
CHANNEL_HOSTS = ("conv", "conv_transpose")


def channel_map(ir: ProgramIR, host: Kernel, guest: Kernel) -> tuple[dict[int, int], bool] | None:
    """merge.dim_map for a conv host: elementwise ops and channel reductions of its output (dim for
    dim), and, once it reduces its channels, elementwise ops of the reduced values (its reduced
    level: (N, 1, *spatial) or (N, *spatial)). Raises NotFusable for a reduction it cannot take."""
    h, g = space_shape(ir, host), space_shape(ir, guest)
    if guest.kind == "reduce":
        refuse_reduction(ir, host, guest)
        return {i: i for i in range(len(g))}, False
    if g == h:
        return {i: i for i in range(len(g))}, False
    if not channel_reduce.reduces_channels(host):
        return None
    kept = [0, *range(2, len(h))]
    if g == [h[d] for d in kept]:
        return dict(enumerate(kept)), True
    if g == [1 if d == 1 else h[d] for d in range(len(h))]:
        return {d: d for d in kept}, True
    return None


def refuse_reduction(ir: ProgramIR, host: Kernel, guest: Kernel) -> None:
    """Raise NotFusable, with the reason, unless `guest` reduces exactly the channels of the conv's
    output and one tile can hold them all."""
    h = space_shape(ir, host)
    if host.kind not in CHANNEL_HOSTS:
        raise NotFusable(f"a {host.kind} kernel takes elementwise epilogues only")
    if space_shape(ir, guest) != h:
        raise NotFusable("the reduction reads a tensor of another shape than the conv's output")
    if guest.space["red"] != [1, 2] or guest.space.get("groups"):
        raise NotFusable("a conv's epilogue reduces over exactly its output channels (dim 1), "
                         f"not dims {list(range(*guest.space['red']))}")
    if host.space.get("form", "gemm") != "gemm":
        raise NotFusable("a depthwise conv (the direct form) is not fused with a channel reduction: its "
                         "tile spans the channels of several groups")
    groups = traced_groups(ir, host)
    if groups != 1:
        raise NotFusable(f"a grouped conv (groups={groups}) is not fused with a channel reduction: a "
                         "program's tile holds the channels of one group")
    if h[1] > channel_reduce.MAX_CHANNELS:
        raise NotFusable(f"C_out={h[1]} is over {channel_reduce.MAX_CHANNELS}: one tile cannot hold "
                         "every output channel for the reduction")
    if any(op.op == "ridx" for op in guest.body):
        raise NotFusable("the reduction reads its element's channel index")


def traced_groups(ir: ProgramIR, kernel: Kernel) -> int:
    """A conv's groups at the traced sizes: C_in over the weight's dim 1 (C_in / groups), or for
    a transposed conv C_out over it (the weight is (C_in, C_out / groups, *kernel))."""
    channels = ir.shape(kernel.space["input"])[1] if kernel.kind == "conv" else kernel.space["traced"][1]
    return max(1, channels // max(1, ir.shape(kernel.space["weight"])[1]))
