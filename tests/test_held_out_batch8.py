"""Stop 42's held-out batch (the eighth, 16 public projects: tutorials people learn from, RL,
speech, detection, LLM and LoRA fine-tuning): each mechanism behind a wrong or noisy finding once
where a maintainer would close the report (no finding) and once where it is a bug (exact code and
line)."""

from __future__ import annotations

import json
import textwrap

import pytest
from conftest import codes_lines

from torchlint.api import check_source

# sd-scripts' Lumina inference: `ae.to(dtype)` casts a module it was handed (loaded from a
# checkpoint); it builds nothing, so seeding after it does not change any initial weight.
SEED_AFTER = """
    import torch
    import torch.nn as nn
    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
        def forward(self, x):
            return self.fc(x)
    def generate(ae, seed):
        {made}
        ae.eval()
        torch.manual_seed(seed)
        return ae(torch.randn(2, 4))
    generate(Decoder(), 0)
    """

PAIRS = {
    "clean: a seed after casting a module the function was handed": (
        SEED_AFTER.format(made="ae.to(torch.float16)"), set()),
    "a seed after building a module": (SEED_AFTER.format(made="ae = Decoder()"), {("TL505", 13)}),
}



# sd-scripts and p-christ's experience generator draw the seed itself from `random` (a run given no
# seed picks one, logs it, and is meant to differ): that draw is not an unseeded source of numbers.
SEED_PICKED = """
    import random
    import torch
    def main(seed=None):
        seed = seed if seed is not None else {draw}
        torch.manual_seed(seed)
        noise = torch.randn(4)
        return noise * {use}
    main()
    """

PAIRS.update({
    "clean: the seed itself drawn from random when none is given": (
        SEED_PICKED.format(draw="random.randint(0, 2**32 - 1)", use="1.0"), set()),
    "clean: a generator seeded with a drawn seed": (
        SEED_PICKED.format(draw="0", use="torch.manual_seed(random.randint(0, 99)).initial_seed()"), set()),
    "a draw from random that the results use": (
        SEED_PICKED.format(draw="0", use="random.random()"), {("TL501", 6)}),
    # Rainbow: torch's seed drawn from NumPy, which the file seeded first, is the same in every run
    "torch seeded with a draw from seeded NumPy, and random left unseeded": ("""
        import random
        import numpy as np
        import torch
        np.random.seed(123)
        torch.manual_seed(np.random.randint(1, 10000))
        noise = torch.randn(4) * random.random()
        """, {("TL501", 5)}),
    # p-christ's experience workers: a seed drawn afresh in each (so that they differ) seeds nothing
    "clean: torch seeded with a fresh draw, other draws from random": (
        SEED_PICKED.format(draw="random.randint(0, 2**32 - 1)", use="random.random()").replace(
            "seed if seed is not None else ", ""), set()),
})


# Real-Time-Voice-Cloning's speaker encoder: the loss function returns the loss and an equal error rate
# that scipy computes under `torch.no_grad()`; the visualiser keeps every step's rate.
EER = """
    import torch
    import torch.nn as nn
    from scipy.optimize import brentq
    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
        def forward(self, x):
            return self.fc(x)
        def loss(self, embeds):
            loss = embeds.pow(2).mean()
            {rate}
            return loss, eer
    class Visualizations:
        def __init__(self):
            self.eers = []
        def update(self, loss, eer):
            self.eers.append(eer)
    model = Encoder()
    optimizer = torch.optim.Adam(model.parameters())
    vis = Visualizations()
    for step in range(10):
        loss, eer = model.loss(model(torch.randn(8, 4)))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        vis.update(loss.item(), eer)
    """

PAIRS.update({
    "clean: a rate computed under no_grad, returned beside the loss and kept": (
        EER.format(rate="with torch.no_grad():\n                eer = brentq(lambda x: x - 0.5, 0., 1.)"), set()),
    "a differentiable term returned beside the loss and kept": (
        EER.format(rate="eer = embeds.abs().mean()"), {("TL402", 19), ("TL402", 28)}),
})


# LLMs-from-scratch: a model whose weights a project function then overwrites (pretrained GPT-2), a
# builder that seeds before it builds, and a block built only to count its parameters before the
# seeded model is built. The seed in each is for what comes after it.
GPT = """
    import torch
    import torch.nn as nn
    class GPTModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.out_head = nn.Linear(4, 4)
        def forward(self, x):
            return self.out_head(x)
    def load_weights_into_gpt(gpt, params):
        gpt.out_head.weight = nn.Parameter(torch.tensor(params["w"]))
    def instantiate_model():
        torch.manual_seed(123)
        return GPTModel()
    def main(params):
        {before}
        torch.manual_seed(123)
        {after}
        return model(torch.randn(1, 4))
    """

PAIRS.update({
    "clean: a seed after a project function overwrote the model's weights": (GPT.format(
        before="model = GPTModel()\n        load_weights_into_gpt(model, params)", after="pass"), set()),
    "clean: a seed after a builder that seeds before it builds": (GPT.format(
        before="model = instantiate_model()", after="model.out_head = nn.Linear(4, 4)"), set()),
    "clean: a seed before the model, after a block built only to count its parameters": (GPT.format(
        before="block = GPTModel()\n        print(sum(p.numel() for p in block.parameters()))",
        after="model = GPTModel()"), set()),
    "a seed after the model the function goes on to use": (GPT.format(
        before="model = GPTModel()", after="pass"), {("TL505", 17)}),
})

# MorvanZhou's conditional GAN: D's step runs between the forward through D that G's loss was
# computed with and G's backward (the plain GAN next to it orders the two losses so that it does not).
GAN = """
    import torch
    import torch.nn as nn
    G = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 8))
    D = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1), nn.Sigmoid())
    opt_D = torch.optim.Adam(D.parameters(), lr=1e-4)
    opt_G = torch.optim.Adam(G.parameters(), lr=1e-4)
    for step in range(100):
        fake = G(torch.randn(4, 5))
        prob_real = D(torch.randn(4, 8))
        prob_fake = D({fake_for_d})
        D_loss = -torch.mean(torch.log(prob_real + 1e-4) + torch.log(1.0001 - prob_fake))
        {g_loss}
        opt_D.zero_grad()
        D_loss.backward(retain_graph=True)
        opt_D.step()
        {g_forward}
        opt_G.zero_grad()
        G_loss.backward()
        opt_G.step()
    """

PAIRS.update({
    "G's backward through D's forward from before D's step": (GAN.format(
        fake_for_d="fake", g_loss="G_loss = torch.mean(torch.log(1.0001 - prob_fake))", g_forward="pass"),
        {("TL210", 19)}),
    "clean: G's loss computed through D again after D's step": (GAN.format(
        fake_for_d="fake.detach()", g_loss="pass", g_forward="G_loss = torch.mean(torch.log(1.0001 - D(fake)))"),
        set()),
})


# nn-zero-to-hero's manual backprop lesson: the hand-computed gradient `dlogits` starts as a softmax
# output and is scaled in place, then only compared with autograd's; no later backward runs through it.
MANUAL_GRADIENT = """
    import torch
    import torch.nn.functional as F
    W = torch.randn(4, 3, requires_grad=True)
    x = torch.randn(8, 4)
    logits = x @ W
    loss = F.cross_entropy(logits, torch.zeros(8, dtype=torch.long))
    loss.backward()
    dlogits = F.softmax(logits, 1)
    dlogits /= 8
    {after}
    """

PAIRS.update({
    "clean: a softmax output scaled in place and only compared afterwards": (
        MANUAL_GRADIENT.format(after="print((dlogits - logits.grad).abs().max())"), set()),
    "a softmax output scaled in place and then backpropagated through": (
        MANUAL_GRADIENT.format(after="(dlogits * 2).sum().backward()"), {("TL203", 10)}),
})


@pytest.mark.parametrize("name", list(PAIRS))
def test_held_out_pair(name):
    source, expected = PAIRS[name]
    assert codes_lines(textwrap.dedent(source)) == expected


def _notebook(cells: list[str]) -> str:
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": cell}
        for cell in cells]})


# LLMs-from-scratch's chapter 4 notebook shows layer normalisation on a ReLU output without an eps,
# then builds the real LayerNorm with one; the notebook never differentiates anything.
LAYER_NORM_DEMO = [
    "import torch\nimport torch.nn as nn\nlayer = nn.Sequential(nn.Linear(5, 6), nn.ReLU())\n"
    "out = layer(torch.randn(2, 5))\n",
    "mean = out.mean(dim=-1, keepdim=True)\nvar = out.var(dim=-1, keepdim=True)\n"
    "normed = (out - mean) / torch.sqrt(var)\nprint(normed)\n",
]


@pytest.mark.parametrize(("extra", "expected"), [
    ([], []),
    (["normed.sum().backward()\n"], [("TL105", 2, 3)]),
])
def test_a_gradient_hazard_in_a_notebook_that_never_differentiates(extra, expected):
    found = check_source(_notebook(LAYER_NORM_DEMO + extra), "chapter.ipynb")
    assert [(f.code, f.cell, f.line) for f in found] == expected
