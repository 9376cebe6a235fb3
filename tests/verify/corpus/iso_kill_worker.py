# PATTERN: isolation: the candidate kills the fork-server worker that forked it. In its PID
# namespace its parent is pid 0, so it only kills its own process group (and as nobody it may not
# signal root's processes anyway); test_sandbox covers a worker killed from outside
# TASK: softmax
# STATIC: off
# EXPECT: crash
# MESSAGE: died by SIGKILL
import os
import signal

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        os.kill(os.getppid(), signal.SIGKILL)
        while True:
            pass
