"""Shared verifier pools for the verifier tests: starting a worker imports torch and triton (seconds),
so every CPU test module shares one checked and one unchecked (static checks off) pool."""

import os

import pytest

from mtmc.verify import InterpreterVerifier

# A fake secret in the test process: test_forkserver checks that it never reaches a candidate.
os.environ.setdefault("MTMC_FAKE_API_TOKEN", "not-a-real-token")

TIMEOUT_S = 20.0  # honest test candidates finish in about a second; the infinite loop must not cost more


@pytest.fixture(scope="session")
def verifier():
    with InterpreterVerifier(timeout_s=TIMEOUT_S, strict=True) as v:
        yield v


@pytest.fixture(scope="session")
def unchecked_verifier():
    """Static checks off (a test-only setting): exercises the isolation and runtime layers alone."""
    with InterpreterVerifier(timeout_s=TIMEOUT_S, static_checks=False, strict=True) as v:
        yield v
