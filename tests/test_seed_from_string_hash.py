"""TL510 seed-from-string-hash: a generator seeded with hash() of a string."""

import pytest
from conftest import codes_lines_after

HEAD = """
import random
import zlib
from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class Stage:
    name: str
    size: int
"""

CASES = {
    "a stage seed from hash() of a str field, through a helper": ("""
        def stage_seed(base_seed, stage):
            return hash((base_seed, stage.name)) % (2 ** 31)

        def data(stage, seed):
            return np.random.default_rng(stage_seed(seed, stage)).normal(size=stage.size)
        """, {("TL510", 2)}),
    "a generator seeded with hash() of an f-string": ("""
        def task_generator(task, seed):
            return torch.Generator().manual_seed(hash(f"{task}-{seed}") % 2**31)
        """, {("TL510", 2)}),
    "a stable hash of the same text": ("""
        def stage_seed(base_seed, stage):
            return zlib.crc32(f"{base_seed}-{stage.name}".encode())

        def data(stage, seed):
            return np.random.default_rng(stage_seed(seed, stage)).normal(size=stage.size)
        """, set()),
    "hash() of numbers only: stable": ("""
        def stage_seed(base_seed, stage):
            return hash((base_seed, stage.size)) % (2 ** 31)

        def data(stage, seed):
            random.seed(stage_seed(seed, stage))
        """, set()),
}


@pytest.mark.parametrize("name", CASES)
def test_seed_from_string_hash(name):
    body, expected = CASES[name]
    assert codes_lines_after(HEAD, body) == expected
