"""What each way of handing a 1 GiB float32 tensor from a verifier child to the main process costs on
the host: python benchmarks/probes/2026-11-27-transfer/formats.py [GiB]. Wall seconds, best of 3,
in /dev/shm; issue 25's transfer latency. With a GPU, also a GPU tensor's way to the host: `.cpu()`
then offload (verifier 2.4) against transport.host_copy then offload (2.5), the values checked equal."""

import os
import sys
import tempfile
import time
from pathlib import Path

import torch

from mtmc.verify.transport import host_copy, offload, restore


def best(fn, reps=3):
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(gib: float) -> None:
    n = int(gib * 2**30) // 4
    src = torch.randn(n)
    folder = Path(tempfile.mkdtemp(dir="/dev/shm"))

    def clear():
        for f in folder.iterdir():
            f.unlink()

    def fresh_memory():  # the host side of .cpu(): a copy into freshly allocated, untouched pages
        torch.empty(n).copy_(src)

    def offload_after_copy():  # before: a host copy, then offload writes it again into its raw file
        clear()
        offload({"x": src.clone()}, folder)

    def host_copy_then_offload():  # now: the host copy is the raw file; offload names it
        clear()
        offload({"x": host_copy(src, folder)}, folder)

    def torch_save_load():
        clear()
        torch.save({"x": src}, folder / "r.pt")
        torch.load(folder / "r.pt", weights_only=True)["x"].sum()

    sent = {}

    def restore_and_read():  # the main process maps the file and reads every page once
        if not sent:
            clear()
            sent.update(offload({"x": src}, folder))
        restore(sent, folder)["x"].sum()

    print(f"{gib:g} GiB float32, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}")
    for name, fn in [("copy into fresh memory (host side of .cpu())", fresh_memory),
                     ("clone + offload (a second copy into the file)", offload_after_copy),
                     ("host_copy into the file + offload (names it)", host_copy_then_offload),
                     ("torch.save + torch.load", torch_save_load),
                     ("restore (map) + read every element", restore_and_read)]:
        seconds = best(fn)
        print(f"{name:50s} {seconds:7.3f} s  {gib / seconds:6.2f} GiB/s")
    if torch.cuda.is_available():
        gpu = src.cuda()
        kept = {}

        def cpu_then_offload():
            clear()
            kept["x"] = restore(offload({"x": gpu.cpu()}, folder), folder)["x"]

        def staged_then_offload():
            clear()
            kept["x"] = restore(offload({"x": host_copy(gpu, folder)}, folder), folder)["x"]

        for name, fn in [("GPU: .cpu() + offload (2.4)", cpu_then_offload),
                         ("GPU: host_copy + offload (2.5)", staged_then_offload)]:
            seconds = best(fn)
            assert torch.equal(kept["x"], src), name
            print(f"{name:50s} {seconds:7.3f} s  {gib / seconds:6.2f} GiB/s  (values equal)")
    clear()
    folder.rmdir()


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
