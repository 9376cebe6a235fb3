"""Reduction kernels: softmax, norms, losses, sums; anything whose body reduces one dim range.

The input is viewed as (outer, reduced, inner). With no inner dims (the usual case: the last dims
are reduced) each program owns one row and walks its columns; otherwise each program owns a block
of inner columns and walks the reduced rows (a column reduction). GroupNorm's rows are
(batch, group) pairs of an NC... tensor.

A row that fits in one BLOCK is loaded once and kept in registers (ONE_PASS). A longer row is
walked in chunks, once per dependent reduction (mean, then variance, ...) and once more to write
full-size outputs. A GroupNorm row writes its outputs channel by channel (BY_CHANNEL, see
reduce_passes._by_channel_last_pass).

With config ROWS > 1 (the port's for rows of at most 256 values, lower/configs.py; the `rows` step)
a one-pass program takes ROWS short rows as a [ROWS, BLOCK] tile, where one row would leave most of
its warp idle (a LayerNorm over 64 columns). Only the plain
row form takes it (no column reduction, GroupNorm, split or persistent kernel), and a row walked in
chunks keeps a program to itself: the launcher passes ROWS = 1 to the looped form.

The emitter is split by role; this module keeps the names the template coder imports:
- reduce_layout.py: the (outer, reduced, inner) view: index variables, masks, accumulators
- reduce_analysis.py: which reductions pair up, what varies along the reduced dims, which pass knows what
- reduce_body.py: the SSA body over a layout (loads, per-row divisions, stores)
- reduce_kernel.py: the kernel, one pass or looped
- reduce_passes.py: the looped form's passes; reduce_pairs.py: its online softmax and Welford pairs
- reduce_split.py: split reductions' partial and combine kernels
- reduce_norm_split.py: split normalizations' statistics and normalize kernels (full-size outputs)
- reduce_launch.py: the launcher and autotune space
"""

from __future__ import annotations

from coders.template.emit.reduce_analysis import (  # noqa: F401 - re-exported
    full_size_outputs,
    paired_reductions,
    writes_by_channel,
)
from coders.template.emit.reduce_kernel import emit_kernel  # noqa: F401
from coders.template.emit.reduce_launch import (  # noqa: F401
    ONE_PASS_FULL,
    emit_launcher,
    reduced_shape,
    row_blocks,
    tuning_space,
)
from coders.template.emit.reduce_layout import LANE_GROUP, ONLINE_CHUNK, Layout, chunk_of  # noqa: F401
from coders.template.emit.reduce_split import splittable  # noqa: F401
