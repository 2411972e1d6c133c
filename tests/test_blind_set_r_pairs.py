"""Blind set `r` (stop 41), the mechanisms behind its first measure's misses and false findings:
each once where a maintainer would close the report (no finding) and once where it is a bug
(exact code and line)."""

from __future__ import annotations

import textwrap

import pytest
from conftest import codes_lines

from torchlint.config import Settings

POOLING = """
    import torch
    import torch.nn as nn
    class SetRegressor(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.key = nn.Linear(d, d)
            self.query = nn.Parameter(torch.randn(1, 1, d))
        def forward(self, h, mask):
            k = self.key(h)
            scores = {scores}
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
            return scores.softmax(dim=-1)
    model = SetRegressor(8)
    for h, mask in [(torch.randn(2, 5, 8), torch.ones(2, 5, dtype=torch.bool))]:
        with torch.autocast("cuda", dtype=torch.float16):
            out = model(h, mask)
            scores = model.key(h) @ h.transpose(-2, -1)
            weights = scores.softmax(dim=-1)
    """

LOOP = """
    import torch
    import torch.nn as nn
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.{layer}(16, 16{extra})
        def forward(self, x):
            return self.layer(x{args})[0]
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in [torch.randn(4, 8, 16)]:
        optimizer.zero_grad()
        model(x).mean().backward()
        optimizer.step()
    """

LOSSES = """
    import torch
    def train_epoch(model, loader, optimizer):
        losses_list = []
        for batch in loader:
            optimizer.zero_grad()
            losses = model.calculate_loss(batch)
            loss = sum(losses) if isinstance(losses, tuple) else losses
            loss.backward()
            optimizer.step()
            losses_list.append({kept})
        return losses_list
    """

STEP_LOGS = """
    import torch
    import torch.nn as nn
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 1)
        def training_step(self, x, y):
            nll = ((self.fc(x) - y) ** 2).mean()
            return nll, {"nll": nll.item()}
    def fit(module, loader, opt):
        logs = []
        for x, y in loader:
            loss, log = module.training_step(x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            logs.append(log)
            logs.append(loss)
    """

PAIRS = {
    # r/24: under float16 autocast, softmax runs in float32; only a float16 product can already be inf.
    "clean: a masked, scaled dot product softmaxed under float16 autocast": (
        POOLING.format(scores="(k * self.query.to(k.dtype)).sum(-1) / h.shape[-1] ** 0.5"), {("TL107", 19)}),
    # r/31: a transformer trained with plain SGD and no clipping (attention does not explode through time)
    "clean: attention trained with SGD, unclipped": (
        LOOP.format(layer="MultiheadAttention", extra=", 4, batch_first=True", args=", x, x"), set()),
    "an LSTM trained with SGD, unclipped": (LOOP.format(layer="LSTM", extra=", batch_first=True", args=""),
                                             {("TL302", 12)}),
    # r/16 (RecBole): the loss is the sum of `losses`, so each kept tuple holds its graph.
    "the parts of the differentiated loss kept every step": (LOSSES.format(kept="losses"), {("TL402", 11)}),
    # k/23: what is unpacked beside the loss is not what the loss is built from.
    "only the loss kept, not the numbers returned beside it": (STEP_LOGS, {("TL402", 19)}),
    "clean: their numbers kept": (
        LOSSES.format(kept="tuple(part.item() for part in losses) if isinstance(losses, tuple) else losses.item()"),
        set()),
}


@pytest.mark.parametrize("name", list(PAIRS))
def test_blind_set_r_pair(name):
    source, expected = PAIRS[name]
    settings = Settings(extend_select=["TL302"])  # opt-in since stop 42; these pairs judge its evidence
    assert codes_lines(textwrap.dedent(source), settings=settings) == expected
