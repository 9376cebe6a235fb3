"""Run one probe variant a few times at the task's size (for ncu): ncu_one.py TASK VARIANT_FILE"""

import importlib.util
import sys

import torch

from mtmc.tasks import load_task

task = load_task(sys.argv[1])
spec = importlib.util.spec_from_file_location("variant", sys.argv[2])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
reference = task.make_model(seed=0).cuda()
inputs = [v.cuda() if isinstance(v, torch.Tensor) else v for v in task.make_inputs(seed=1)]
candidate = module.ModelNew(*task.init_inputs()).cuda()
candidate.load_state_dict(reference.state_dict())
with torch.no_grad():
    for _ in range(3):
        candidate(*inputs)
torch.cuda.synchronize()
