"""Tasks: KernelBench-format reference operators, loaded from files, folders or built-in names."""

from mtmc.tasks.loader import BrokenTask, builtin_names, load_suite, load_task, scan_suite, validate
from mtmc.tasks.summary import TaskSummary, summarize
from mtmc.tasks.task import Task, TaskError

__all__ = ["BrokenTask", "Task", "TaskError", "TaskSummary", "builtin_names", "load_suite", "load_task",
           "scan_suite", "summarize", "validate"]
