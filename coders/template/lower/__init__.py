"""Lower the canonical op graph to the IR: one kernel per op, Python steps for everything else (the
template coder's second pass).

`program.py` walks the graph (`lower`), `body.py` builds one kernel's operands and SSA ops, and the
kernel kinds lower in `pointwise.py` (with cat), `reduce.py` and `matmul.py` (with the flash kernel
`fuse attention` makes), an attention node in `attention.py` (the flash kernel, or where its tiles do
not fit in shared memory the chain of ops it stands for); `configs.py` holds the port's configs.
Families lower beside the passes, in coders/template/: conv_lower.py, conv_transpose_lower.py,
pooling.py, scans.py, recurrent.py.
"""

from coders.template.lower.body import Body, broadcast_dims
from coders.template.lower.configs import POINTWISE_CONFIG
from coders.template.lower.matmul import attention_kernel
from coders.template.lower.program import lower

__all__ = ["POINTWISE_CONFIG", "Body", "attention_kernel", "broadcast_dims", "lower"]
