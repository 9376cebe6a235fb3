# PATTERN: isolation: the candidate kills the fork-server worker that forked it
# TASK: softmax
# STATIC: off
# EXPECT: crash
# MESSAGE: worker died
import os
import signal

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        os.kill(os.getppid(), signal.SIGKILL)
        while True:
            pass
