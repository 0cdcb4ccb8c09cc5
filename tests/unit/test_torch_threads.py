"""The fits' PyTorch thread count: auto is half the driver's cores, set only for the block."""

import torch

from spark_synth.engines import torch_threads as threads


def test_auto_is_half_the_cores_and_at_least_one(monkeypatch):
    for cores, expected in ((1, 1), (2, 1), (3, 1), (8, 4), (16, 8)):
        monkeypatch.setattr(threads, "driver_cores", lambda cores=cores: cores)
        assert threads.fit_threads(0) == expected
    assert threads.fit_threads(3) == 3  # an explicit count is kept


def test_the_count_is_set_inside_the_block_and_restored_after(monkeypatch):
    monkeypatch.setattr(threads, "driver_cores", lambda: 2)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with threads.torch_threads(0):
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
        with threads.torch_threads(3):
            assert torch.get_num_threads() == 3
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
