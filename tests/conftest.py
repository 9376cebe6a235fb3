"""Test set-up: without a GPU, Triton runs in its interpreter (set before any kernel is defined),
with the same autotune seam the verifier's interpreter workers install."""

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"
    from mtmc.verify.interpreter import autotune_on_the_cpu

    autotune_on_the_cpu()


@pytest.fixture(autouse=True)
def _restore_tf32_flags():
    """PyTorch's process-wide TF32 flags as each test found them: code under test sets them (the
    verifier's precise_reference, its baselines' defaults), and a test run in the same process after
    such a test (pytest-xdist mixes files) would see another precision (test_kb_eval's controls did)."""
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved
