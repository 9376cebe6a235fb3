"""`fuse all` (fuse/chains.py): every epilogue and prologue pair merged in one step, offered where two
or more pairs fuse, the same program the pairwise steps reach."""

from __future__ import annotations

import pytest

from mtmc.protocols import CoderError
from mtmc.strategies import Strategy
from tests.coders.conv_fusion import coder, fused, ieee_port, kernels
from tests.coders.test_template import check
from tests.coders.test_template_conv_pool import assert_one_pooling_conv, pool_task

FUSE_ALL = Strategy.parse("fuse all")


def test_fuse_all_takes_a_level_2_chain_to_one_kernel_in_one_step(tmp_path):
    task = pool_task(2, "Max", "2", "tanh", body="return torch.nn.functional.mish(self.pool(x))")
    port = ieee_port(task)
    assert len(kernels(port)) == 4 and FUSE_ALL in coder.legal_strategies(task, port)
    program = coder.apply(task, port, FUSE_ALL)
    assert_one_pooling_conv(program, "max", "mish")
    assert program.source == fused(task, port).source  # what three `fuse epilogue` steps reach
    check(task, program, tmp_path)


def test_fuse_all_is_offered_for_two_or_more_pairs_only():
    task = pool_task(2, "Max", "2", "tanh", body="return torch.sigmoid(self.pool(x))")
    port = ieee_port(task)
    two_left = coder.apply(task, port, Strategy.parse("fuse epilogue"))
    assert FUSE_ALL in coder.legal_strategies(task, two_left)
    one_left = coder.apply(task, two_left, Strategy.parse("fuse epilogue"))
    assert FUSE_ALL not in coder.legal_strategies(task, one_left)
    assert Strategy.parse("fuse epilogue") in coder.legal_strategies(task, one_left)
    with pytest.raises(CoderError, match="found 1 fusion"):
        coder.apply(task, one_left, FUSE_ALL)
