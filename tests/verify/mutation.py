"""Mutation run over mtmc/verify: is every check pinned by a test that fails when it goes?

Each mutant disables or loosens one check: every rule call site of the static checker (the call to
`_flag` made unreachable), and a hand-written list of compare conditions, rejections and
instruments. For each mutant, a scratch copy of the repository gets the change and runs
tests/verify/test_static.py, test_correctness.py, test_protocol.py, test_proof.py, test_child.py,
test_case_io.py, test_verifier.py, test_corpus.py, test_forkserver.py and test_sandbox.py, one file at
a time with -x, the files that mirror the mutated module first; the first failing test is the one
that caught it. A mutant no test catches survives.
Not part of the default test run (slow: minutes per runtime mutant on two cores):

    python tests/verify/mutation.py [--only SUBSTRING] [--out table.md]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ["tests/verify/test_static.py", "tests/verify/test_correctness.py",
         "tests/verify/test_tensor_compare.py", "tests/verify/test_protocol.py",
         "tests/verify/test_proof.py", "tests/verify/test_child.py", "tests/verify/test_case_io.py",
         "tests/verify/test_verifier.py", "tests/verify/test_tf32_follows_eager.py",
         "tests/verify/test_timed_match.py", "tests/verify/test_pristine.py",
         "tests/verify/test_output_seals.py", "tests/verify/test_corpus.py",
         "tests/verify/test_forkserver.py", "tests/verify/test_sandbox.py"]
STATIC, CORRECTNESS = "mtmc/verify/static.py", "mtmc/verify/correctness.py"
VERIFIER, PROOF = "mtmc/verify/verifier.py", "mtmc/verify/proof.py"
CHILD, PROTOCOL = "mtmc/verify/child.py", "mtmc/verify/protocol.py"
LAUNCH = "mtmc/verify/static_launch.py"
FORKSERVER, SANDBOX = "mtmc/verify/forkserver.py", "mtmc/verify/sandbox.py"
JUDGING, ENGINE = "mtmc/verify/judging.py", "mtmc/verify/engine.py"
SPARE, KEPT_STATE = "mtmc/verify/spare.py", "mtmc/verify/kept_state.py"
STATIC_RULES = "mtmc/verify/static_rules.py"
CASE_IO = "mtmc/verify/case_io.py"
TRUSTED = "mtmc/verify/trusted.py"
TENSOR_COMPARE = "mtmc/verify/tensor_compare.py"
TIMING = "mtmc/verify/timing.py"
PRISTINE = "mtmc/verify/pristine.py"
OUTPUT_SEALS = "mtmc/verify/output_seals.py"
STATIC_FILES = [STATIC, LAUNCH]
MIRROR = {STATIC: "tests/verify/test_static.py", LAUNCH: "tests/verify/test_static.py",
          CORRECTNESS: "tests/verify/test_correctness.py",
          TENSOR_COMPARE: ["tests/verify/test_tensor_compare.py", "tests/verify/test_correctness.py"],
          PROOF: "tests/verify/test_proof.py",
          PROTOCOL: "tests/verify/test_protocol.py", CHILD: "tests/verify/test_child.py",
          VERIFIER: "tests/verify/test_corpus.py", SANDBOX: "tests/verify/test_sandbox.py",
          FORKSERVER: ["tests/verify/test_forkserver.py", "tests/verify/test_sandbox.py"],
          JUDGING: ["tests/verify/test_corpus.py", "tests/verify/test_tf32_follows_eager.py"],
          ENGINE: "tests/verify/test_verifier.py",
          SPARE: ["tests/verify/test_forkserver.py", "tests/verify/test_sandbox.py"],
          KEPT_STATE: "tests/verify/test_child.py", STATIC_RULES: "tests/verify/test_static.py",
          CASE_IO: ["tests/verify/test_case_io.py", "tests/verify/test_child.py"],
          TRUSTED: "tests/verify/test_verifier.py", TIMING: "tests/verify/test_timed_match.py",
          PRISTINE: "tests/verify/test_pristine.py", OUTPUT_SEALS: "tests/verify/test_output_seals.py"}


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str
    old: str
    new: str
    line: int = 0  # for call-site mutants: the line whose call is disabled


# Hand-written mutants: (name, file, old text, new text). Each `old` occurs exactly once.
MANUAL = [
    ("compare: normalized error `or` -> `and`", TENSOR_COMPARE,
     "if second.bad > 0 or rel > max(atol, rtol):",
     "if second.bad > 0 and rel > max(atol, rtol):"),
    ("compare: elementwise tolerance x10", TENSOR_COMPARE,
     "allowed = atol * scale + rtol * r.abs()",
     "allowed = 10 * (atol * scale + rtol * r.abs())"),
    ("compare: fp32 tolerance 1e-3", "mtmc/verify/correctness.py",
     "torch.float32: (1e-4, 1e-4),", "torch.float32: (1e-3, 1e-3),"),
    ("compare: constant-output check off", TENSOR_COMPARE,
     "if first.count > 1 and first.out_constant and varies:", "if False and first.out_constant and varies:"),
    ("compare: NaN where ref has none", TENSOR_COMPARE, "if s.out_nan:", "if False:"),
    ("compare: eager's error margin x10", "mtmc/verify/correctness.py",
     "EAGER_ERROR_MARGIN = 3.0", "EAGER_ERROR_MARGIN = 30.0"),
    ("compare: float64 floor not applied", CORRECTNESS,
     "widened = EAGER_ERROR_MARGIN * max(eager_err, reference_err)",
     "widened = EAGER_ERROR_MARGIN * eager_err"),
    ("compare: float64 floor's margin x10", CORRECTNESS,
     "widened = EAGER_ERROR_MARGIN * max(eager_err, reference_err)",
     "widened = EAGER_ERROR_MARGIN * max(eager_err, 10 * reference_err)"),
    ("compare: float64 floor uncapped", CORRECTNESS,
     "return min(error, REFERENCE_ERROR_CAP) if scale > 0 else 0.0", "return error if scale > 0 else 0.0"),
    ("compare: float64 floor on an all-zero reference", CORRECTNESS,
     "return min(error, REFERENCE_ERROR_CAP) if scale > 0 else 0.0",
     "return min(error, REFERENCE_ERROR_CAP)"),
    ("compare: float64 floor on any dtype", CORRECTNESS,
     "    if ref.dtype != torch.float32:\n        return 0.0\n    error, scale",
     "    if False:\n        return 0.0\n    error, scale"),
    ("compare: constant check off wherever there is a floor", TENSOR_COMPARE,
     "varies = not first.ref_constant and not (floor > 0 and second.mean_within_floor)",
     "varies = not first.ref_constant and not floor > 0"),
    ("compare: reference_noise never flagged", CORRECTNESS,
     "        if noisy:\n            one.flags.append(REFERENCE_NOISE_FLAG)",
     "        if False:\n            one.flags.append(REFERENCE_NOISE_FLAG)"),
    ("compare: constant check relaxed by a floor below the tolerance", CORRECTNESS,
     'f"{label}, output {i}", floor if noisy else 0.0)', 'f"{label}, output {i}", floor)'),
    ("reference: float64 floor on a random forward", CHILD,
     "floors = reference_errors(model, inputs, outputs, floor_failures) if not seeded else",
     "floors = reference_errors(model, inputs, outputs, floor_failures) if True else"),
    ("reference: random draws not seen", CASE_IO,
     "self.seeded = self.seeded or torch.Tag.nondeterministic_seeded in func.tags", "self.seeded = False"),
    ("compare: numbers where ref has NaN", TENSOR_COMPARE, "if s.ref_nan:", "if False:"),
    ("compare: Inf mismatch", TENSOR_COMPARE, "if s.inf_mismatch:", "if False:"),
    ("compare: tf32_beyond_eager flagged, never refused", CORRECTNESS,
     "    if not refuse:\n", "    if True:\n"),
    ("judge: tf32_follows_eager ignored", JUDGING,
     'return tf32_follows_eager and "tf32" not in task.precisions', "return False"),
    ("judge: timing sets compared without eager's measurement", JUDGING,
     'measured.get("reference_errors"), bool(measured.get("eager_measured")),',
     'measured.get("reference_errors"), False,'),
    ("compare: second run without the TF32 rule", CORRECTNESS,
     "reference_errors,\n                            eager_measured, tf32_follows_eager)",
     "reference_errors,\n                            False, False)"),
    ("timing: differing repeats' timed outputs at 1e-2 of the largest value", TIMING,
     "    if tol is not None and out.is_floating_point():\n", "    if False:\n"),
    ("timing: held match without its normalized error", TIMING,
     "return diff_sq ** 0.5 <= max(atol, rtol) * max(exp_sq ** 0.5, 1e-30)", "return True"),
    ("judge: timed calls held to the TF32 allowance eager's measurement refuses", CORRECTNESS,
     "    if eager_measured and tf32_follows_eager and _tf32_unbacked(dtype, meta, eager_err):",
     "    if False:"),
    ("engine: no tolerances sent with the candidate", ENGINE,
     '"timed_tolerances": timed_tolerances(task, reference, self.settings.tf32_follows_eager),',
     '"timed_tolerances": None,'),
    ("child: untimed calls on the timing sets themselves", CHILD,
     "own.append([o.clone() for o in call(checked(k, fresh_copy(s, device)))])",
     "own.append([o.clone() for o in call(checked(k, s))])"),
    ("child: a call's inputs not checked before it (S21)", CHILD,
     'inputs = audit.before(case, fresh_copy(case["inputs"], device))',
     'inputs = fresh_copy(case["inputs"], device)'),
    ("child: the state check's second seed not checked (S21)", CHILD,
     'forward(model, audit.before(second, fresh_copy(second["inputs"], device)))',
     'forward(model, fresh_copy(second["inputs"], device))'),
    ("judge: the inputs calls received not held to the reference's (S21)", JUDGING,
     "if reference.input_checks is not None:  # the calls' inputs", "if False:  # the calls' inputs"),
    ("judge: inputs a call changed, by the pristine copy's say (S7)", JUDGING,
     'return {**got, "mutated_inputs": mutated_inputs(reference.input_checks[index], returned)}',
     'return {**got, "mutated_inputs": []}'),
    ("judge: outputs that came back not held to their calls' digests (S22)", JUDGING,
     "outputs_problem(reference.check_key, result, reference.timing_sets)", '""'),
    ("seals: a repeat is its first call whatever it returned (S22)", OUTPUT_SEALS,
     "return digest is not None and digest == self.firsts.get(index)", "return digest is not None"),
    ("seals: a timed call held to a changed untimed output not counted (S22)", OUTPUT_SEALS,
     "            self.changed += 1\n", "            pass\n"),
    ("pristine: unkeyed weights (a plain sum)", PRISTINE,
     "self._weights = key_weights(key)",
     "self._weights = torch.ones((2, WORDS), dtype=torch.int32)"),
    ("compare: shape", CORRECTNESS, "if out.shape != ref.shape:", "if False:"),
    ("compare: dtype", CORRECTNESS, "if out.dtype != ref.dtype:", "if False:"),
    ("compare: integer outputs", CORRECTNESS, "wrong = int((out != ref).sum())", "wrong = 0"),
    ("compare: type errors (S13)", CORRECTNESS, 'if got["type_errors"]:', "if False:"),
    ("compare: output kind/count", "mtmc/verify/correctness.py",
     'if got["kind"] != expected["kind"] or len(got["outputs"]) != len(expected["outputs"]):', "if False:"),
    ("compare: output device", CORRECTNESS, "if wrong_device:", "if False:"),
    ("compare: mutated inputs (S7)", CORRECTNESS, 'if got["mutated_inputs"]:', "if False:"),
    ("compare: runs differ without atomics", CORRECTNESS, "if not uses_atomics:", "if False:"),
    ("judge: case count", JUDGING,
     'if len(result["cases"]) != len(reference.cases):', "if False:"),
    ("judge: watched identities (T3)", JUDGING, 'if result["tampered"]:', "if False:"),
    ("judge: threads left running", JUDGING, 'if result["threads_started"] > 0:', "if False:"),
    ("judge: forged launch counts", JUDGING, 'if result.get("counter_forged"):', "if False:"),
    ("judge: threads started by the candidate", JUDGING,
     'if result.get("threads_spawned"):', "if False:"),
    ("judge: census popped", JUDGING, "    if broken:\n", "    if False:\n"),
    ("judge: decoy kernel (S2)", JUDGING, 'if 0 in got["launches"]:', "if False:"),
    ("judge: host reads (S11)", JUDGING, "    if reads:\n", "    if False:\n"),
    ("judge: numpy / host exits", JUDGING, "    if exits:\n", "    if False:\n"),
    ("judge: foreign aten ops", JUDGING, "    if foreign:\n", "    if False:\n"),
    ("judge: kept state changed", ENGINE, "if verdict.ok and changed:", "if False:"),
    ("judge: decoy in the calls after the cases", JUDGING, 'if others["without_launches"]:', "if False:"),
    ("judge: census of the calls after the cases", JUDGING,
     'foreign, exits = Counter(others["foreign_ops"]), Counter(others["host_exits"])',
     "foreign, exits = Counter(), Counter()"),
    ("cache: key without the isolation", ENGINE,
     "self.settings.fingerprint(), self.isolation)", 'self.settings.fingerprint(), "")'),
    ("sandbox: strays counted by the worker", FORKSERVER,
     "left = spare.namespace.live_processes() if spare.namespace is not None else 0", "left = 0"),
    ("sandbox: process cap", SPARE,
     'resource.setrlimit(resource.RLIMIT_NPROC, (job["nproc_limit"], job["nproc_limit"]))', "pass"),
    ("sandbox: spare keeps the worker's descriptors", SPARE,
     "            _close_inherited_fds(keep=read_fd)\n", "\n"),
    ("sandbox: worker socket inheritable by init", FORKSERVER,
     "    os.set_inheritable(fd, False)", "    pass"),
    ("judge: foreign device kernels (GPU)", ENGINE,
     "elif foreign and not task.library_ops:", "elif False:"),
    ("protocol: no repeats", PROTOCOL,
     "calls += [rng.randrange(cases) for _ in range(rng.randint(*EXTRA_CALLS))]", "pass"),
    ("protocol: no derived size", TRUSTED,
     "derived = derived_size(task, size_sets[0], self._size_rng) if len(size_sets) == 1 else None",
     "derived = None"),
    ("protocol: repeats not compared", CHILD,
     'and not seals.repeats_first(index, run["digest"]):  # the first that differs',
     "and False:  # the first that differs"),
    ("state: functions and instances not walked", KEPT_STATE,
     'elif getattr(value, "__module__", None) == home and not _triton_object(value):', "elif False:"),
    ("child: task source left in frames", CHILD, 'del data["task_source"]', "pass"),
    ("census: off for whole interpreter launches", PROOF,
     "self._counting(interpreter.InterpretedFunction.run, False)",
     "self._counting(interpreter.InterpretedFunction.run, True)"),
    ("census: aten op filter", PROOF, "if name not in self.allowed:", "if False:"),
    ("census: no host-exit guard", PROOF, "        self._guard_host_exits()\n", "\n"),
    ("census: no thread guard", PROOF, "        self._guard_threads()\n", "\n"),
    ("census: no dispatch-stack guard", PROOF, "        self._guard_dispatch_stack()\n", "\n"),
    ("census: pops not compared", PROOF, "if census.counter.pops != pops_before:", "if False:"),
    ("census: top mode not compared", PROOF,
     "if python_dispatch._get_current_dispatch_mode() is not census:", "if False:"),
    ("census: second tally", PROOF,
     "return sum(self.kernels.values()) == self._tally()", "return True"),
    ("gpu: foreign kernel filter", PROOF,
     "return [name for name in ranked if name not in ours and not any(m in name for m in GLUE_KERNEL_MARKERS)"
     "]",
     "return []"),
    ("static: chains into forbidden modules", STATIC_RULES,
     '    parts = dotted.split(".")\n    if parts[0] not in ALLOWED_MODULE_ROOTS:\n        return None',
     '    parts = dotted.split(".")\n    if True:\n        return None'),
    ("static: module names as attributes", STATIC_RULES,
     'for _name in FORBIDDEN_MODULES - {"numpy"}:', 'for _name in []:'),
]


def call_site_mutants() -> list[Mutant]:
    """Every rule of the static checker: the line that reports it, made unreachable (`0 and ...`)."""
    mutants = []
    for rel in STATIC_FILES:
        for number, line in enumerate((ROOT / rel).read_text().splitlines(), start=1):
            match = re.match(r"^(\s+)(self\._flag\(|self\.flag\()(.*)$", line)
            if match:
                rule = re.search(r'"(\w+)"', match.group(3))
                name = f"static rule `{rule.group(1) if rule else '?'}` at {Path(rel).name}:{number}"
                disabled = f"{match.group(1)}0 and {match.group(2)}{match.group(3)}"
                mutants.append(Mutant(name, rel, line, disabled, number))
    return mutants


def all_mutants() -> list[Mutant]:
    return call_site_mutants() + [Mutant(*m) for m in MANUAL]


def apply(mutant: Mutant, scratch: Path) -> None:
    path = scratch / mutant.path
    text = path.read_text()
    if mutant.line:
        lines = text.splitlines(keepends=True)
        assert lines[mutant.line - 1].rstrip("\n") == mutant.old, mutant.name
        lines[mutant.line - 1] = mutant.new + "\n"
        path.write_text("".join(lines))
        return
    assert text.count(mutant.old) == 1, f"{mutant.name}: {text.count(mutant.old)} matches"
    path.write_text(text.replace(mutant.old, mutant.new))


def run_tests(scratch: Path, first: str | list[str], timeout_s: float) -> str:
    """The first failing test's id, '' when every test passed (the mutant survived). The test files
    that mirror the mutated module run first, then the others, each with -x."""
    firsts = [first] if isinstance(first, str) else first
    order = [t for t in firsts if t in TESTS] + [t for t in TESTS if t not in firsts]
    env = {"PYTHONPATH": str(scratch), "PATH": "/usr/bin:/bin", "HOME": str(scratch)}
    deadline = time.monotonic() + timeout_s
    for test_file in order:
        if test_file in IN_PROCESS:
            failed = _pytest_here(scratch, test_file)
            if failed:
                return failed
            continue
        command = [sys.executable, "-m", "pytest", test_file, "-x", "-q", "-p", "no:cacheprovider"]
        try:
            done = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True,
                                  timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return "(timed out: counted as caught)"
        failed = re.search(r"^(?:FAILED|ERROR) (\S+)", done.stdout, re.MULTILINE)
        if failed:
            return failed.group(1)
        if done.returncode != 0:
            return f"(pytest exit {done.returncode} in {test_file})"
    return ""


# Test files that start no verifier workers run inside this process (torch is imported once):
# the mutated modules are imported afresh from the scratch copy for each mutant.
IN_PROCESS = {"tests/verify/test_static.py", "tests/verify/test_correctness.py",
              "tests/verify/test_tensor_compare.py", "tests/verify/test_protocol.py",
              "tests/verify/test_proof.py"}


class _FirstFailure:
    def __init__(self) -> None:
        self.nodeid = ""

    def pytest_runtest_logreport(self, report) -> None:  # pytest hook
        if report.failed and not self.nodeid:
            self.nodeid = report.nodeid


def _pytest_here(scratch: Path, test_file: str) -> str:
    import pytest

    for name in [m for m in sys.modules if m.split(".")[0] in ("mtmc", "conftest", "corpus_index")
                 or m.startswith("test_")]:
        del sys.modules[name]
    kept = [p for p in sys.path if "mtmc-mutation" not in p]
    sys.path[:] = [str(scratch), str(scratch / "tests" / "verify"), *kept]
    recorder = _FirstFailure()
    args = [str(scratch / test_file), "-x", "-q", "-p", "no:cacheprovider", "--rootdir", str(scratch)]
    with contextlib.redirect_stdout(io.StringIO()):
        code = pytest.main(args, plugins=[recorder])
    if recorder.nodeid:
        return recorder.nodeid.replace(str(scratch) + "/", "")
    return f"(pytest exit {int(code)} in {test_file})" if int(code) not in (0, 5) else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run the mutants whose name contains this (a|b: either)")
    parser.add_argument("--out", default="", help="also write the markdown table here")
    parser.add_argument("--timeout", type=int, default=900)
    args = parser.parse_args()
    rows = ["| mutant | caught by | seconds |", "|---|---|---|"]
    survivors = 0
    with tempfile.TemporaryDirectory(prefix="mtmc-mutation-") as tmp:
        wanted = args.only.split("|")  # alternatives: "census|state"
        for mutant in [m for m in all_mutants() if any(w in m.name for w in wanted)]:
            scratch = Path(tmp) / "repo"
            shutil.rmtree(scratch, ignore_errors=True)
            shutil.copytree(ROOT / "mtmc", scratch / "mtmc")
            shutil.copytree(ROOT / "tests", scratch / "tests")
            if (ROOT / "benchmarks" / "results").is_dir():  # archived out of the tree (BENCHMARKS.md)
                shutil.copytree(ROOT / "benchmarks" / "results", scratch / "benchmarks" / "results")
            for name in ("pyproject.toml", "README.md"):
                if (ROOT / name).exists():
                    shutil.copy(ROOT / name, scratch / name)
            apply(mutant, scratch)
            start = time.monotonic()
            caught = run_tests(scratch, MIRROR.get(mutant.path, TESTS[0]), args.timeout)
            survivors += not caught
            rows.append(f"| {mutant.name} | {caught or '**SURVIVED**'} | {time.monotonic() - start:.0f} |")
            print(rows[-1], flush=True)
    rows.append(f"\n{len(rows) - 2} mutants, {survivors} survived")
    print(rows[-1])
    if args.out:
        Path(args.out).write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
