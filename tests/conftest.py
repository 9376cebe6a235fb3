"""Test set-up: without a GPU, Triton runs in its interpreter (set before any kernel is defined)."""

import os

import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"
