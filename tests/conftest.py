"""Test set-up: without a GPU, Triton runs in its interpreter (set before any kernel is defined),
with the same autotune seam the verifier's interpreter workers install."""

import os

import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"
    from mtmc.verify.interpreter import autotune_on_the_cpu

    autotune_on_the_cpu()
