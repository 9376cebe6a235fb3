"""The plain-text verdict table the CLI prints."""

from mtmc.verify import Status, Verdict, format_verdict_table


def test_table_shows_what_is_known_only():
    verdict = Verdict(Status.OK, "correct on 6 cases", max_abs_error=3e-8, rel_error=1e-7,
                      candidate_ms=0.5, eager_ms=1.0, compiled_ms=0.8, roofline_ms=0.4, triton_share=0.97,
                      triton_launches=12, flags=["excessive_speedup: 12x"], device="NVIDIA H100", wall_s=1.2)
    table = format_verdict_table(verdict)
    lines = table.splitlines()
    assert lines[0].split() == ["status", "ok"]
    rows = {line[:26].strip(): line[26:] for line in lines if line}
    assert rows["speedup vs eager"] == "2x" and rows["share of roofline"] == "0.8"
    assert "flag" in table and table.endswith("correct on 6 cases")
    bare = format_verdict_table(Verdict(Status.TIMEOUT, "ran past 20 s"))
    assert "candidate" not in bare and "ran past 20 s" in bare
