"""MTMC: Macro Thinking, Micro Coding. PyTorch operators to fast, verified Triton kernels."""

__version__ = "0.1.0"
