"""The verifier: judges a candidate `ModelNew` against a task and returns a typed Verdict.

Backends: `InterpreterVerifier` (CPU, Triton interpreter, correctness only) and `LocalVerifier`
(one warm fork-server per GPU: correctness, proof of work, timing). `make_verifier("auto")`
picks one. See verifier.py for the protocol and docs/design.md "Verification" for why.
`mtmc.verify.ray_backend.RayVerifier` (the `ray` extra) runs either one in Ray actors over a
cluster; it is not imported here, so the package stays Ray-free.
"""

from mtmc.verify.static import StaticReport, Violation, check_source
from mtmc.verify.table import format_verdict_table
from mtmc.verify.verdict import Status, Verdict
from mtmc.verify.verifier import (
    VERIFIER_VERSION,
    InterpreterVerifier,
    LocalVerifier,
    VerifierError,
    make_verifier,
)

__all__ = ["VERIFIER_VERSION", "InterpreterVerifier", "LocalVerifier", "Status", "StaticReport", "Verdict",
           "VerifierError", "Violation", "check_source", "format_verdict_table", "make_verifier"]
