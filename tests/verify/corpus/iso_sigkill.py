# PATTERN: isolation: SIGKILL, as the kernel's OOM killer would send
# TASK: softmax
# STATIC: off
# EXPECT: crash
# MESSAGE: SIGKILL
import os
import signal

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        os.kill(os.getpid(), signal.SIGKILL)
