import pytest
import torch

from mtmc.verify.child import _host_copy


def test_host_copy_of_a_cpu_tensor_is_detached_from_it():
    out = torch.arange(7.0)
    copy = _host_copy(out)
    out.add_(100)  # the candidate keeps its tensor and changes it after returning it
    assert copy.data_ptr() != out.data_ptr()
    assert torch.equal(copy, torch.arange(7.0))


@pytest.mark.gpu
def test_host_copy_of_a_gpu_tensor_is_one_cpu_copy():
    out = torch.arange(7.0, device="cuda")
    copy = _host_copy(out)
    out.add_(100)
    assert copy.device.type == "cpu" and torch.equal(copy, torch.arange(7.0))
