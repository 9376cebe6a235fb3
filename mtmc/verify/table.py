"""A verdict as a plain-text table, for the CLI and for logs."""

from __future__ import annotations

from mtmc.verify.verdict import Verdict


def format_verdict_table(verdict: Verdict) -> str:
    rows = [("status", str(verdict.status)), ("device", verdict.device)]
    if verdict.isolation:
        rows.append(("isolation", verdict.isolation))
    rows += [(name, _num(value, unit)) for name, value, unit in (
        ("max abs error", verdict.max_abs_error, ""),
        ("normalized error", verdict.rel_error, ""),
        ("candidate", verdict.candidate_ms, " ms"),
        ("candidate median", verdict.candidate_median_ms, " ms"),
        ("eager", verdict.eager_ms, " ms"),
        ("torch.compile", verdict.compiled_ms, " ms"),
        ("roofline floor", verdict.roofline_ms, " ms"),
        ("speedup vs eager", verdict.speedup_eager, "x"),
        ("speedup vs compile", verdict.speedup_compiled, "x"),
        ("share of roofline", verdict.roofline_fraction, ""),
        ("Triton share of GPU time", verdict.triton_share, ""),
        ("Triton launches", verdict.triton_launches, ""),
        ("verify wall time", verdict.wall_s, " s"),
    ) if value is not None]
    if verdict.phases_s:
        rows.append(("phases", ", ".join(f"{k} {v:.2f} s" for k, v in verdict.phases_s.items())))
    rows += [("flag", flag) for flag in verdict.flags]
    width = max(len(name) for name, _ in rows)
    lines = [f"{name.ljust(width)}  {value}" for name, value in rows]
    message = verdict.message.strip()
    if message:
        lines += ["", *message.splitlines()]
    return "\n".join(lines)


def _num(value: float | int, unit: str) -> str:
    if isinstance(value, int):
        return f"{value}{unit}"
    if value != value or abs(value) >= 1e4 or (value and abs(value) < 1e-3):
        return f"{value:.3g}{unit}"
    return f"{value:.4g}{unit}"
