"""Fusion on the IR (the template coder's third pass): merge a producer kernel with a consumer kernel,
drop what is no longer needed.

Two kernels merge when the guest's space maps onto the host's: the same shape (an elementwise op
on a reduction's input or on a matmul's output), or the reduced shape of a reduction (an op on
its per-row results). Operands the guest read from the host's outputs become body values; other
operands are re-addressed in the host's space, which must be able to address them (checked by
the emitters). Outputs nobody reads any more are not stored. A conv takes a reduction over its
output channels (dim 1) as an epilogue, its tile holding every channel, and elementwise ops on the
reduced values after it (`channels.py`). A conv also takes a max or average pool whose windows tile
its output (stride == kernel size, no padding): its rows become pooled pixels, one conv tile per
window position, and ops after the pool merge onto the pooled output (`pooled.py`).

`queries.py` (what fusion asks of a program), `dead_code.py` (dead code and order), `merge.py` (two
kernels into one), `chains.py` (candidate pairs, the first fusion of a kind, all of them, the port's chains),
`attention.py` (a score chain into one flash kernel), `channels.py` (a conv's channel reductions),
`pooled.py` (a conv's pool) and `statistics.py` (the port's merge of a variance with its mean).
"""

from coders.template.fuse.attention import fuse_attention
from coders.template.fuse.chains import first_fusion, fuse_all, fuse_chains, pairs
from coders.template.fuse.merge import merge, merged_kernel
from coders.template.fuse.queries import GEMM_KINDS, TRIANGLES, NotFusable
from coders.template.fuse.statistics import fuse_statistics

__all__ = ["GEMM_KINDS", "TRIANGLES", "NotFusable", "first_fusion", "fuse_all", "fuse_attention",
           "fuse_chains", "fuse_statistics", "merge", "merged_kernel", "pairs"]
