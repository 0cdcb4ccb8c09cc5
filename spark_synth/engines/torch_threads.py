"""PyTorch on the driver for FPT's and SPLICE's fits: the device (``device`` option) and the CPU
threads, set for the fit's duration only."""

from __future__ import annotations

import os
from contextlib import contextmanager


def driver_cores() -> int:
    """CPU cores this process may run on (its affinity where the OS reports one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def fit_threads(requested: int) -> int:
    """``requested`` threads, or for 0 (auto) half the driver's cores, at least 1. Half, because the
    fit's tensors are small enough that a busy core stalls every parallel step: on a 2-core machine
    with other work running, two threads made FPT's fit 6 × slower than one (benchmarks/RESULTS.md)."""
    return requested if requested > 0 else max(1, driver_cores() // 2)


@contextmanager
def torch_threads(requested: int):
    """Run the block with :func:`fit_threads` (``requested``) PyTorch intra-op threads, then restore."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(fit_threads(requested))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def fit_device(choice: str):
    """The torch device of a fit's ``device`` option: ``cuda`` when asked for, or for ``auto`` when a GPU
    is there; else the CPU."""
    import torch

    return torch.device("cuda" if choice == "cuda" or (choice == "auto" and torch.cuda.is_available()) else "cpu")
