"""What a candidate may use: the one place that says which imports, torch calls and aten ops are fair.

A candidate's forward must do its arithmetic in Triton kernels. PyTorch is allowed for glue only:
allocating outputs, reshaping views, copies and casts, concatenation. Vendor-library compute
(cuBLAS matmul, cuDNN convolution, SDPA ...) is allowed only where the task's `MTMC["library"]`
names its family, so a coder can fuse Triton around a convolution it cannot beat.

The static checker (static.py) reads the torch-API side of this policy; the runtime op census in
the candidate's process (proof.py) reads the aten side. The two are deliberately the same policy
seen from two levels: the AST gives early feedback with line numbers, the aten census catches
what the AST cannot see (tensor arithmetic operators, aliases, helper layers).
"""

from __future__ import annotations

# Modules a candidate may import, and why each is harmless. numpy is left out on purpose: it
# runs on the host, where it can only be a way to compute the answer outside any kernel.
ALLOWED_IMPORTS = frozenset({
    "__future__",
    "torch", "torch.nn", "torch.nn.functional",  # tensors, parameter holders, glue
    "triton", "triton.language",  # kernels
    "triton.language.extra", "triton.language.extra.libdevice", "triton.language.extra.cuda",
    "triton.tools.tensor_descriptor",  # TMA descriptors (host side)
    "math", "typing", "functools", "itertools", "dataclasses",  # pure-Python helpers
})

# torch functions that only allocate, describe or move memory (the rest of torch.* is compute).
GLUE_TORCH_FUNCTIONS = frozenset({
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
    "full_like", "arange", "tensor", "as_tensor", "cat", "concat", "concatenate", "stack",
    "is_tensor", "is_floating_point", "is_complex", "numel", "get_default_dtype", "finfo", "iinfo",
    "no_grad", "inference_mode", "promote_types", "result_type", "broadcast_shapes", "reshape",
    "flatten", "unflatten", "permute", "transpose", "t", "squeeze", "unsqueeze", "narrow", "split",
    "chunk", "unbind", "as_strided", "device", "dtype", "Size", "Tensor", "Generator",
    # torch.nn / torch.nn.functional / torch.nn.init glue
    "Parameter", "Buffer", "pad", "kaiming_uniform_", "uniform_", "normal_", "zeros_", "ones_",
    "constant_", "xavier_uniform_", "xavier_normal_", "kaiming_normal_", "trunc_normal_",
    # device queries (persistent kernels size their grid by the SM count)
    "get_device_properties", "current_device", "get_device_name", "get_device_capability",
    "device_count", "is_available",
})

# nn containers hold submodules; calling them runs their children, which the census then sees.
NN_CONTAINERS = frozenset({"Module", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
                           "Sequential", "Identity"})

# aten ops (overload packet names) that are glue: allocation, views, copies, casts, concatenation.
GLUE_ATEN_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
    "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "scalar_tensor",
    "arange", "lift_fresh", "lift_fresh_copy", "fill_", "zero_", "copy_", "clone", "contiguous",
    "_to_copy", "to", "_copy_from", "_copy_from_and_resize", "view", "_unsafe_view", "reshape",
    "_reshape_alias", "view_as", "expand", "expand_as", "permute", "transpose", "t", "unsqueeze",
    "squeeze", "flatten", "unflatten", "detach", "alias", "slice", "select", "as_strided", "narrow",
    "split", "split_with_sizes", "unbind", "chunk", "cat", "stack", "constant_pad_nd",
    "resize_", "empty_permuted",
})

# aten ops that read a tensor's values into Python (`.item()`, `float(t)`, `int(t)`, `bool(t)`,
# `if t:`). Not glue: a forward that branches on its data on the host can key a result cache on the
# input's contents (a checksum kernel, then a dict lookup: S11), which fresh pointers do not defeat.
# A task whose output size depends on its data may allow them by name in MTMC["library"].
HOST_READ_ATEN_OPS = frozenset({"_local_scalar_dense", "is_nonzero"})

# Vendor-library families a task may allow (MTMC["library"]): the torch API names (functions and
# nn layer classes) and the aten ops they reach. A name not listed here stands for itself.
LIBRARY_FAMILIES: dict[str, dict[str, frozenset[str]]] = {
    "matmul": {"api": frozenset({"matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "mv", "dot",
                                 "einsum", "linear", "Linear", "@"}),
               "aten": frozenset({"mm", "bmm", "addmm", "baddbmm", "addbmm", "mv", "dot", "matmul",
                                  "linear", "einsum"})},
    "linear": {"api": frozenset({"linear", "Linear"}),
               "aten": frozenset({"addmm", "mm", "linear", "matmul", "bmm"})},
    "bmm": {"api": frozenset({"bmm", "baddbmm", "matmul", "@"}),
            "aten": frozenset({"bmm", "baddbmm", "matmul"})},
    "sdpa": {"api": frozenset({"scaled_dot_product_attention"}),
             "aten": frozenset({"scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
                                "_scaled_dot_product_efficient_attention",
                                "_scaled_dot_product_cudnn_attention",
                                "_scaled_dot_product_flash_attention_for_cpu"})},
}
for _dims in ("1d", "2d", "3d"):
    LIBRARY_FAMILIES[f"conv{_dims}"] = {
        "api": frozenset({f"conv{_dims}", f"Conv{_dims}"}),
        "aten": frozenset({"convolution", "_convolution", "cudnn_convolution", "mkldnn_convolution",
                           "_slow_conv2d_forward", "slow_conv3d_forward", "_nnpack_spatial_convolution",
                           "_conv_depthwise2d", "conv_depthwise3d", "convolution_overrideable"}),
    }
    LIBRARY_FAMILIES[f"conv_transpose{_dims}"] = {
        "api": frozenset({f"conv_transpose{_dims}", f"ConvTranspose{_dims}"}),
        "aten": frozenset({"convolution", "_convolution", "cudnn_convolution_transpose",
                           "slow_conv_transpose2d", "slow_conv_transpose3d", "mkldnn_convolution",
                           "convolution_overrideable"}),
    }
LIBRARY_FAMILIES["scaled_dot_product_attention"] = LIBRARY_FAMILIES["sdpa"]


def allowed_api(library_ops: tuple[str, ...] | list[str]) -> frozenset[str]:
    """torch API names (function or layer class names, and "@") the task's library policy allows."""
    names: set[str] = set()
    for op in library_ops:
        family = LIBRARY_FAMILIES.get(op)
        names |= family["api"] if family else {op}
    return frozenset(names)


def allowed_aten(library_ops: tuple[str, ...] | list[str]) -> frozenset[str]:
    """aten ops a candidate's forward may run: glue plus the task's library families."""
    names: set[str] = set(GLUE_ATEN_OPS)
    for op in library_ops:
        family = LIBRARY_FAMILIES.get(op)
        names |= family["aten"] if family else {op}
    return frozenset(names)
