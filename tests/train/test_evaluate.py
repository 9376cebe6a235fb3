from mtmc.train.evaluate import table_markdown, table_row


def aggregates(eager, compiled):
    return {"tasks": 2, "correct": 2, "correct_rate": 1.0, "fast_p": {"eager": {"1.0": 0.5}},
            "geomean_speedup_eager": eager, "geomean_speedup_compiled": compiled, "steps": 6,
            "verifier_calls": 7, "wall_s": 12.0}


def test_eval_table_puts_speedups_over_eager_and_torch_compile_side_by_side():
    rows = [{"return": 0.5}, {"return": 1.5}]
    table = [table_row("lm", rows, aggregates(1.8, 1.12)), table_row("random", rows, aggregates(1.1, 0.7))]
    assert table[0]["mean_return"] == 1.0
    md = table_markdown(table, ["a", "b"])
    assert "| lm | 2/2 | 50.0% | 1.80x | 1.12x | +1.000 | 6 | 7 | 12.0 |" in md
    assert "| random | 2/2 | 50.0% | 1.10x | 0.70x |" in md
    assert "No timings" not in md
