"""One module per `mtmc <job>`: each has `run(cfg)`, importable and callable from tests."""
