"""TL511 seed-zero-skipped: seeding gated by the seed's truth value, so seed 0 seeds nothing."""

import pytest
from conftest import codes_lines_after

HEAD = """
import random

import numpy as np
import torch

CONFIG = {"seed": 0}
"""

CASES = {
    "a generator seeded only when the seed is truthy (a conditional expression)": ("""
        def split(dataset, seed=None):
            generator = torch.Generator().manual_seed(seed) if seed else None
            return torch.randperm(len(dataset), generator=generator)
        """, {("TL511", 2)}),
    "global seeding under `if args.seed:`": ("""
        def setup(args):
            if args.seed:
                torch.manual_seed(args.seed)
                np.random.seed(args.seed)
        """, {("TL511", 2)}),
    "a config item tested and then seeded": ("""
        def setup(cfg):
            if cfg["seed"]:
                random.seed(cfg["seed"])
        """, {("TL511", 2)}),
    "`is not None` keeps seed 0": ("""
        def split(dataset, seed=None):
            generator = torch.Generator().manual_seed(seed) if seed is not None else None
            return torch.randperm(len(dataset), generator=generator)
        """, set()),
    "a flag of its own decides, not the seed": ("""
        def setup(args):
            if args.deterministic:
                torch.manual_seed(args.seed)
        """, set()),
    "the seed tested, another value seeded": ("""
        def setup(args, fallback):
            if args.seed:
                torch.manual_seed(fallback)
        """, set()),
    "the seeding in the else branch": ("""
        def setup(args):
            if args.seed:
                print("seeded elsewhere")
            else:
                torch.manual_seed(args.seed)
        """, set()),
}


@pytest.mark.parametrize("name", CASES)
def test_seed_zero_skipped(name):
    body, expected = CASES[name]
    assert codes_lines_after(HEAD, body) == expected


SETUP = """
def setup(args):
    if args.seed:
        torch.manual_seed(args.seed)
"""


@pytest.mark.parametrize(("given", "expected"), [
    ('CONFIG = {"seed": 42}', set()),  # no seed of 0 anywhere: the test matters to no configured run
    ('CONFIG = {"seed": 0}', {("TL511", 2)}),
    ('parser.add_argument("--seed", type=int, default=0)', {("TL511", 2)}),
    ("def main(seed=0):\n    pass", {("TL511", 2)}),
])
def test_a_seed_of_zero_must_be_given_somewhere(given, expected):
    head = "import argparse\nimport torch\nparser = argparse.ArgumentParser()\n" + given + "\n"
    assert codes_lines_after(head, SETUP) == expected
