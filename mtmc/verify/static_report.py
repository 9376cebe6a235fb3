"""What the static checks (static.py) report: each rule violation with its line, and whether the
source uses float atomics (which make bitwise determinism too strict: correctness.py)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Violation:
    line: int
    rule: str  # short id: syntax, import, builtin, try, torch, triton, library, patch, class, ...
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass
class StaticReport:
    violations: list[Violation] = field(default_factory=list)
    uses_atomics: bool = False  # float atomics make bitwise determinism too strict (correctness.py)

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def syntax_error(self) -> bool:
        return any(v.rule == "syntax" for v in self.violations)
