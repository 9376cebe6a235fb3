"""Large tensors travel as raw files beside result.pt: round trips, the checks on what a child hands
back, and a whole interpreter verdict whose outputs take that path."""

import pytest
import torch
from corpus_index import HONEST, TASKS

from mtmc.program import Program
from mtmc.tasks import Task
from mtmc.verify import Status
from mtmc.verify import worker_pool as pool_module
from mtmc.verify.transport import MARKER, host_copy, offload, restore


def _result():
    big = torch.randn(301, 7)
    return {"cases": [{"outputs": [big, big.t()], "kind": "tuple"}],
            "flags": (torch.arange(3) < 2, torch.rand(40, 9).to(torch.bfloat16)),
            "small": torch.ones(3), "empty": torch.empty(0, 5), "name": "x", "count": 4}


def test_round_trip_keeps_values_dtypes_shapes_and_structure(tmp_path):
    result = _result()
    sent = offload(result, tmp_path, min_bytes=64)
    assert sent["cases"][0]["outputs"][0][MARKER] and isinstance(sent["flags"], tuple)
    assert isinstance(sent["small"], torch.Tensor)  # under the threshold: stays in result.pt
    back = restore(sent, tmp_path)
    for got, want in [(back["cases"][0]["outputs"][0], result["cases"][0]["outputs"][0]),
                      (back["cases"][0]["outputs"][1], result["cases"][0]["outputs"][1]),
                      (back["flags"][0], result["flags"][0]), (back["flags"][1], result["flags"][1]),
                      (back["empty"], result["empty"])]:
        assert got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want)
    assert back["name"] == "x" and back["count"] == 4 and back["cases"][0]["kind"] == "tuple"


def test_mapped_tensors_outlive_their_folder(tmp_path):
    folder = tmp_path / "job"
    folder.mkdir()
    x = torch.randn(1000)
    back = restore(offload({"x": x}, folder, min_bytes=1), folder)
    for f in folder.iterdir():
        f.unlink()
    folder.rmdir()
    assert torch.equal(back["x"], x)


@pytest.mark.parametrize("marker,error", [
    ({MARKER: "../secret.bin", "shape": [4], "dtype": "float32"}, "not a file"),
    ({MARKER: "/etc/passwd", "shape": [4], "dtype": "float32"}, "not a file"),
    ({MARKER: "tensor0.bin", "shape": [4], "dtype": "Tensor"}, "unknown dtype"),
    ({MARKER: "tensor0.bin", "shape": [5], "dtype": "float32"}, "bytes where"),
])
def test_markers_that_point_elsewhere_or_lie_about_size_are_refused(tmp_path, marker, error):
    offload({"x": torch.zeros(4)}, tmp_path, min_bytes=1)  # writes tensor0.bin, 16 bytes
    with pytest.raises(ValueError, match=error):
        restore({"out": marker}, tmp_path)


def test_links_are_neither_written_through_nor_read(tmp_path):
    elsewhere = tmp_path / "elsewhere.bin"
    elsewhere.write_bytes(b"\0" * 16)
    job = tmp_path / "job"
    job.mkdir()
    (job / "tensor0.bin").symlink_to(elsewhere)
    with pytest.raises(FileExistsError):
        offload({"x": torch.ones(4)}, job, min_bytes=1)
    assert elsewhere.read_bytes() == b"\0" * 16
    with pytest.raises(ValueError, match="not a plain file"):
        restore({"x": {MARKER: "tensor0.bin", "shape": [4], "dtype": "float32"}}, job)


def test_a_full_folder_fails_while_writing_not_later(tmp_path, monkeypatch):
    import errno
    import os

    from mtmc.verify import transport

    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(transport.os, "posix_fallocate", full)
    with pytest.raises(OSError, match="No space left"):
        offload({"x": torch.ones(4)}, tmp_path, min_bytes=1)


def test_scratch_parent_prefers_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("MTMC_VERIFY_TMPDIR", str(tmp_path))
    assert pool_module.scratch_parent() == str(tmp_path)
    monkeypatch.delenv("MTMC_VERIFY_TMPDIR")
    monkeypatch.setattr(pool_module, "SHM", tmp_path / "missing")
    assert pool_module.scratch_parent() is None


def _large_pointwise() -> Task:
    # 300_001 float32 outputs (1.2 MB): above the raw-file threshold, still quick in the interpreter;
    # a second, small size keeps the verifier from drawing a derived one (another large case)
    source = (TASKS / "pointwise.py").read_text().replace('[{"n": 1000}, {"n": 257}]',
                                                          '[{"n": 300_001}, {"n": 257}]')
    assert "300_001" in source
    return Task(name="pointwise_large", source=source)


def test_a_verdict_with_large_outputs_goes_through_raw_files(verifier, monkeypatch):
    markers = []

    def spy(value, folder):
        markers.append(str(value).count(MARKER))
        return restore(value, folder)

    monkeypatch.setattr(pool_module, "restore", spy)
    task = _large_pointwise()
    # 32k-element blocks: 10 programs a launch, where the interpreter ran 293 of 1024 (20 s on CI's CPU)
    honest = Program((HONEST / "pointwise.py").read_text().replace("BLOCK = 1024", "BLOCK = 32768"))
    assert "BLOCK = 32768" in honest.source
    verdict = verifier.verify(task, honest)
    assert verdict.status is Status.OK, verdict.message
    assert sum(markers) >= 6  # 3 expected outputs from the reference, 3 from the candidate
    wrong = Program(honest.source.replace("tl.sigmoid(x) * y + 2.0 * x", "tl.sigmoid(x) * y + 2.0 * y"))
    verdict = verifier.verify(task, wrong)
    assert verdict.status is Status.INCORRECT and "n=300001" in verdict.message, verdict.message


def test_a_host_copy_is_its_raw_file_and_offload_names_it_without_writing_again(tmp_path):
    """transport.host_copy (issue 25): a large output is copied once, into the file its marker
    names; the copy is the child's own (the source changing later does not change it)."""
    source = torch.randn(300, 1000)  # 1.2 MB: over RAW_MIN_BYTES
    copy = host_copy(source, tmp_path)
    source.zero_()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 1 and not torch.equal(copy, source)
    sent = offload({"outputs": [copy, copy[1:]]}, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(files + ["tensor0.bin"])  # only the view
    assert sent["outputs"][0][MARKER] == files[0]
    back = restore(sent, tmp_path)
    assert torch.equal(back["outputs"][0], copy) and torch.equal(back["outputs"][1], copy[1:])
    small = torch.ones(3)
    assert host_copy(small, tmp_path) is not small and len(list(tmp_path.iterdir())) == 2


def test_a_host_copy_never_writes_through_a_planted_link(tmp_path):
    """A candidate may plant its scratch folder with the names host copies take: refused, not followed."""
    from mtmc.verify import transport

    elsewhere = tmp_path / "elsewhere.bin"
    elsewhere.write_bytes(b"\0" * 16)
    job = tmp_path / "job"
    job.mkdir()
    for n in range(1000):  # every name the generator hands out next, whatever it reached
        (job / f"host{n}.bin").symlink_to(elsewhere)
    with pytest.raises(FileExistsError):
        transport.host_copy(torch.ones(1 << 19), job)
    assert elsewhere.read_bytes() == b"\0" * 16


def test_a_candidate_that_overwrites_every_raw_file_it_can_find_cannot_change_the_reference(
        unchecked_verifier):
    """The attack on the transfer path: a candidate (static checks off, so it may touch files) writes
    zeros into every raw tensor file it can reach, in /dev/shm and its pool folder, and returns zeros
    itself. Had it reached the reference's outputs, zeros against zeros would pass; the verdict must
    stay incorrect on the reference's true values. (Its zeros are +0.0 throughout: the zeros it writes
    over its own outputs' host copies then leave them as its calls returned them, which S22 checks.)"""
    task = _large_pointwise()
    source = (HONEST / "pointwise.py").read_text().replace("BLOCK = 1024", "BLOCK = 32768")
    source = source.replace("tl.sigmoid(x) * y + 2.0 * x", "0.0 * x + 0.0")
    source = source.replace("    def forward(self, x, y):\n", '''    def forward(self, x, y):
        import glob
        import os
        from pathlib import Path
        pool = str(Path.cwd().parent)
        found = glob.glob("/dev/shm/**/*.bin", recursive=True) + glob.glob(pool + "/**/*", recursive=True)
        for path in found:
            try:
                size = os.path.getsize(path)
                with open(path, "r+b") as f:
                    f.write(bytes(size))
            except OSError:
                pass
''')
    verdict = unchecked_verifier.verify(task, Program(source))
    assert verdict.status is Status.INCORRECT and "n=300001" in verdict.message, verdict.message
