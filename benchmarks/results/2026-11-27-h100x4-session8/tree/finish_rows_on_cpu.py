"""Resume the recorder on the CPU with a verifier that judges nothing: tasks whose level 1 is complete get
their edge and expanded rows (the coder's menu), the others are left out (nothing is written for them)."""
import sys, logging
logging.basicConfig(level=logging.INFO)
from coders.template import TemplateCoder
from mtmc.tasks import load_task
from mtmc.tasks.loader import builtin_names
from mtmc.tree import record_tree
from mtmc.verify import VerifierError

class JudgesNothing:
    def verify(self, task, program):
        raise VerifierError("not judged here (CPU): only rows for programs already judged are written")

tasks = [load_task(n) for n in builtin_names()]
s = record_tree(tasks, TemplateCoder(), JudgesNothing(), sys.argv[1], depth=1)
print(s)
