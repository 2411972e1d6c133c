"""Blind set `v` (stop 45), the mechanisms behind its misses: each once where the code is right (no
finding) and once where it is the bug (exact code and line). TL211 (`v/14`) is in test_rules.py."""

from __future__ import annotations

import textwrap

import pytest
from conftest import codes_lines

# v/02 (a HuBERT-style encoder): the positional convolution takes `x.transpose(1, 2)`, saving that
# view of `x` for its weight's gradient, and `x += x_conv` then bumps the version backward checks.
POS_CONV = """
    import torch
    import torch.nn as nn
    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(16, 32)
            self.pos_conv = nn.Sequential(nn.Conv1d(32, 32, 3, padding=1), nn.GELU())
        def forward(self, source):
            x = self.proj(source)
            x_conv = self.pos_conv(x.transpose(1, 2)).transpose(1, 2)
            {add}
            return x
    """


@pytest.mark.parametrize(("add", "expected"), [
    ("x = x + x_conv", set()),
    ("x = self.proj(source)\n            x += x_conv", set()),  # a new tensor: the conv saved the old one
    ("x += x_conv", {("TL203", 12)}),
    ("x.add_(x_conv)", {("TL203", 12)}),
])
def test_an_in_place_add_to_what_a_layer_saved(add, expected):
    source = textwrap.dedent(POS_CONV.format(add=add))
    line = 13 if "proj(source)\n" in add else 12
    assert codes_lines(source) == {(code, line) for code, _ in expected}


# v/04 (active domain randomisation): the DDPG agent, a plain class, builds its actor and critic in
# __init__; the script seeds torch only after building it.
AGENT = """
    import torch
    import torch.nn as nn
    class Actor(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = nn.Linear(2, 64)
    class DDPG:
        def __init__(self):
            self.actor = Actor()
            {load}
            self.opt = torch.optim.Adam(self.actor.parameters())
    agent = DDPG()
    torch.manual_seed(0)
    print(agent.actor.l1.weight.sum())
    """


@pytest.mark.parametrize(("load", "expected"), [
    ("pass", {("TL505", 14)}),
    ("self.actor.load_state_dict(torch.load('actor.pt'))", set()),  # the drawn weights are replaced
])
def test_seed_after_an_agent_that_builds_its_networks(load, expected):
    assert codes_lines(textwrap.dedent(AGENT.format(load=load))) == expected


# v/01 (Zero-DCE's colour-constancy loss): the root of a sum of fourth powers of channel-mean
# differences is 0 for a grey frame, where sqrt's gradient is inf.
COLOR = """
    import torch
    def color_loss(x):
        mean_rgb = torch.mean(x, [2, 3], keepdim=True)
        mr, mg, mb = torch.split(mean_rgb, 1, dim=1)
        drg, drb, dgb = torch.pow(mr - mg, 2), torch.pow(mr - mb, 2), torch.pow(mb - mg, 2)
        return torch.pow(torch.pow(drg, 2) + torch.pow(drb, 2) + torch.pow(dgb, 2){eps}, 0.5)
    w = torch.nn.Parameter(torch.rand(2, 3, 8, 8))
    color_loss(w).mean().backward()
    """


@pytest.mark.parametrize(("eps", "expected"), [
    (" + 1e-5", set()),
    ("", {("TL119", 7)}),
])
def test_the_root_of_fourth_powers_of_differences(eps, expected):
    assert codes_lines(textwrap.dedent(COLOR.format(eps=eps))) == expected


# Time-Series-Library's PatchEmbed adds a project positional embedding in place: that module returns
# a slice of its buffer and saves nothing of `x` (Linear's own output is not saved either).
def test_an_in_place_add_after_a_project_module_that_saves_nothing():
    source = textwrap.dedent("""
        import torch
        import torch.nn as nn
        class PositionalEmbedding(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.register_buffer("pe", torch.zeros(1, 512, d))
            def forward(self, x):
                return self.pe[:, :x.size(1)]
        class PatchEmbed(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(8, 16)
                self.pe = PositionalEmbedding(16)
            def forward(self, x):
                x = self.proj(x)
                x += self.pe(x)
                return x
        """)
    assert codes_lines(source) == set()
