# PATTERN: isolation: the candidate kills the fork-server worker that forked it (as nobody, it
# may not signal the root-owned processes above it; test_sandbox covers a worker killed from outside)
# TASK: softmax
# STATIC: off
# EXPECT: runtime_error
# MESSAGE: Operation not permitted
import os
import signal

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        os.kill(os.getppid(), signal.SIGKILL)
        while True:
            pass
