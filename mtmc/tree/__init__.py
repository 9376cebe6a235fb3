"""The program tree (issue 26): every program within a few steps of each task's port, judged once and
kept in a JSONL file, so planners can be compared, replayed and trained offline.

    record_tree(tasks, coder, verifier, path, depth=2)   # recorder.py: `mtmc tree record`
    load_tree(path)                                      # index.py: the file as lookups
    ReplayVerifier(tree=path)                            # replay.py: `verifier=replay tree=<file>`
    TreeEnv(tree, tasks).reset(task) / .legal() / .step(s)  # env.py: the loop offline, for training
    retime_tree(tasks, coder, verifier, path, top=5)      # retime.py: `mtmc tree retime` (noise.py)

docs/design.md "The program tree" describes the file and the commands.
"""

from mtmc.tree.env import Episode, StepResult, TreeEnv, run_episode
from mtmc.tree.format import coder_fingerprint, read_rows, task_fingerprint, verdict_of
from mtmc.tree.index import Step, Tree, load_tree
from mtmc.tree.recorder import RecordSummary, record_tree
from mtmc.tree.replay import ReplayVerifier
from mtmc.tree.retime import RetimeSummary, retime_tree

__all__ = ["Episode", "RecordSummary", "ReplayVerifier", "RetimeSummary", "Step", "StepResult", "Tree",
           "TreeEnv", "coder_fingerprint", "load_tree", "read_rows", "record_tree", "retime_tree",
           "run_episode", "task_fingerprint", "verdict_of"]
