"""TL509 seed-before-spawn: a seed set before torch.multiprocessing.spawn that the workers never set."""

import pytest
from conftest import codes_lines_after

HEAD = """
import random

import numpy as np
import torch
import torch.multiprocessing as mp


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
"""

CASES = {
    "seeded in main, workers unseeded": ("""
        def worker(rank, cfg):
            model = torch.nn.Linear(8, 2)
            return model

        def main(cfg):
            set_seed(cfg["seed"])
            mp.spawn(worker, nprocs=2, args=(cfg,))
        """, {("TL509", 6)}),
    "the worker seeds itself through a helper": ("""
        def setup(rank, cfg):
            set_seed(cfg["seed"] + rank)

        def worker(rank, cfg):
            setup(rank, cfg)
            return torch.nn.Linear(8, 2)

        def main(cfg):
            set_seed(cfg["seed"])
            mp.spawn(worker, nprocs=2, args=(cfg,))
        """, set()),
    "torch seeded directly, start_processes with fork": ("""
        def worker(rank):
            return torch.randn(3)

        def main():
            torch.manual_seed(0)
            mp.start_processes(worker, nprocs=2, start_method="fork")
        """, set()),
    "seeded after the spawn returns": ("""
        def worker(rank):
            return torch.randn(3)

        def main():
            mp.spawn(worker, nprocs=2)
            torch.manual_seed(0)
        """, set()),
}


@pytest.mark.parametrize("name", CASES)
def test_seed_before_spawn(name):
    body, expected = CASES[name]
    assert codes_lines_after(HEAD, body) == expected
