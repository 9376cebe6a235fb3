"""The conv K loops on a GPU (Triton compiled, not interpreted) at small odd KernelBench-like shapes:
the FMA loop (plain, unrolled) and the runs loop against PyTorch, so the next GPU session sees a
compile or layout failure before it times them. Run on the GPU machine:
`pytest -m gpu tests/coders/test_gpu_conv_loops.py`."""

import pytest
import torch

from tests.coders.test_template import import_program
from tests.coders.test_template_conv import configured, geometry_task

pytestmark = pytest.mark.gpu

CASES = [  # (spatial dims, kernel, constructor arguments, sizes): level 2's small-channel shapes
    (2, 3, "padding=1", {"B": 4, "C_IN": 8, "C_OUT": 64, "S": 37}),
    (3, 3, "padding=0", {"B": 3, "C_IN": 3, "C_OUT": 16, "S": 21}),
    (3, 3, "padding=0", {"B": 2, "C_IN": 8, "C_OUT": 32, "S": 19}),
]
LOOPS = {
    "fma": {"k_loop": "fma", "precision": "ieee", "channels_last": False, "tf32_round": False},
    "fma_unroll": {"k_loop": "fma", "fma_unroll": True, "channels_last": False, "tf32_round": False},
    "runs_ieee": {"k_loop": "runs", "precision": "ieee", "tf32_round": False, "BLOCK_K": 16},
    "runs_tf32": {"k_loop": "runs", "precision": "tf32", "tf32_round": True, "BLOCK_K": 32,
                  "BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 4, "num_stages": 3},
}


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("nd, kernel, args, sizes", CASES)
def test_conv_loops_match_pytorch_on_the_gpu(nd, kernel, args, sizes, loop, tmp_path, monkeypatch):
    task = geometry_task(nd, kernel, args, [sizes])
    module = import_program(configured(task, **LOOPS[loop]).source, tmp_path, loop)
    for key, value in sizes.items():
        setattr(module, key, value)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)  # the reference in fp32
    reference = task.make_model(seed=0, sizes=sizes).cuda()
    candidate = module.ModelNew(*task.init_inputs(sizes)).cuda()
    candidate.load_state_dict(reference.state_dict())
    (x,) = task.make_inputs(seed=1, sizes=sizes)
    with torch.no_grad():
        expected, got = reference(x.cuda()), candidate(x.cuda())
    tol = 3e-3 if LOOPS[loop].get("precision") == "tf32" else 1e-4  # TF32: 10 mantissa bits
    torch.testing.assert_close(got, expected, atol=tol, rtol=tol)
