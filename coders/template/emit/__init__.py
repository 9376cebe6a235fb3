"""Source generation: IR -> a standalone, readable Triton program defining `ModelNew`."""
