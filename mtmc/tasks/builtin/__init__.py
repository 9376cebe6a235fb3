"""Built-in tasks: one KernelBench-format file per task; the file stem is the task's name."""
