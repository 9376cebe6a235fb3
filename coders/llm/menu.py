"""Which steps an LLM coder offers the planner: a Menu's (mtmc/protocols.py) where it follows the
task, else a generic menu.

The configured menu (the template coder's, coders/template/menu.py, in conf/coder/*.yaml) knows which
fusions exist and which block sizes make sense for the shapes. An LLM-written program has no
structure a menu can read, so the coder keeps a shadow: the menu's own record of the program,
advanced by the same steps the LLM applied, stored in the program's metadata under `template_menu`.
The planner then sees the menu for the program the LLM wrote. Tasks the menu cannot follow (or a
coder without one) get a generic menu by regime (matmul-heavy or not), minus the steps already
applied.
"""

from __future__ import annotations

from typing import Any

from mtmc.program import Program
from mtmc.protocols import Menu
from mtmc.strategies import PORT, Strategy, legal_menu
from mtmc.tasks import Task, summarize

MENU_KEY = "template_menu"  # the menu's record of the same steps (the template's kernel IR)
STEPS_KEY = "llm_steps"  # strategy texts applied so far, port first

_MATMUL_MENU = ("fuse epilogue", "tile BLOCK_M=128 BLOCK_N=128 BLOCK_K=32",
                "tile BLOCK_M=64 BLOCK_N=64 BLOCK_K=32", "group_m 8", "split_k 4", "num_stages 3",
                "num_stages 4", "num_warps 4", "num_warps 8", "persistent", "autotune")
_MEMORY_MENU = ("fuse epilogue", "tile BLOCK=1024", "tile BLOCK=4096", "vectorize", "num_warps 4",
                "num_warps 8", "persistent", "autotune")


def legal(menu: Menu | None, task: Task, program: Program | None) -> list[Strategy]:
    if program is None:
        return [PORT]
    shadow = program.metadata.get(MENU_KEY)
    if shadow is not None and menu is not None:
        return menu.legal_strategies(task, Program("", shadow))
    done = set(program.metadata.get(STEPS_KEY, []))
    return legal_menu([s for s in generic_menu(task) if str(s) not in done])


def advance(menu: Menu | None, task: Task, program: Program | None,
            strategy: Strategy) -> dict[str, Any] | None:
    """The shadow after `strategy`, or None once the menu can no longer follow."""
    if menu is None:
        return None
    if strategy.kind == "port":
        record = None
    else:
        shadow = program.metadata.get(MENU_KEY) if program else None
        if shadow is None:
            return None
        record = Program("", shadow)
    followed = menu.follow(task, record, strategy)
    return followed.metadata if followed is not None else None


def generic_menu(task: Task) -> list[Strategy]:
    summary = summarize(task)
    matmul_heavy = summary.matmul_flops > summary.flops / 2
    texts = _MATMUL_MENU if matmul_heavy else _MEMORY_MENU
    if len(summary.ops) < 2:
        texts = tuple(t for t in texts if not t.startswith("fuse"))  # one op: nothing to fuse
    return [Strategy.parse(text) for text in texts]
