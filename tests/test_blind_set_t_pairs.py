"""Blind set `t` (stop 43), the mechanisms behind its first measure's misses: each once where a
maintainer would close the report (no finding) and once where it is a bug (exact code and line).
TL511, drawn from `t/18`, has its own tests (`test_seed_zero_skipped.py`)."""

from __future__ import annotations

import textwrap

import pytest
from conftest import codes_lines

# t/16 (ULTRA's DLA): a method stores its loss on the object, backpropagates it and returns it; the
# loop sums what it returns. Read back in the same method, `self.loss` is the tensor just stored.
RETURNED_LOSS = """
    import torch
    import torch.nn as nn
    class Ranker:
        def __init__(self):
            self.model = nn.Linear(4, 1)
            self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        def train(self, x):
            self.loss = self.model(x).pow(2).mean()
            self.opt.zero_grad()
            self.loss.backward()
            self.opt.step()
            return {returned}
    ranker = Ranker()
    total = 0.0
    for step in range(100):
        total += ranker.train(torch.randn(8, 4))
    """

PAIRS = {
    "a loss stored on the object, returned and summed": (RETURNED_LOSS.format(returned="self.loss"),
                                                          {("TL402", 17)}),
    "clean: its number returned": (RETURNED_LOSS.format(returned="self.loss.item()"), set()),
}


# t/04 (Horovod's example): `Metric.update` adds what a project helper computes from its argument
# (`allreduce(val.cpu())`, a division): the training loss it is given keeps its graph on the object.
METRIC = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    WORLD_SIZE = 1
    def allreduce(tensor):
        return {reduced}
    class Metric:
        def __init__(self):
            self.sum = torch.tensor(0.0)
        def update(self, val):
            self.sum += allreduce(val.cpu())
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train_loss = Metric()
    for x, y in [(torch.randn(8, 4), torch.randint(0, 2, (8,)))] * 10:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        train_loss.update(loss)
    """

PAIRS.update({
    "a meter adding a helper's result computed from the loss": (
        METRIC.format(reduced="tensor / WORLD_SIZE"), {("TL402", 21)}),
    "clean: the helper returns a number": (METRIC.format(reduced="tensor.item() / WORLD_SIZE"), set()),
})


@pytest.mark.parametrize("name", list(PAIRS))
def test_blind_set_t_pair(name):
    source, expected = PAIRS[name]
    assert codes_lines(textwrap.dedent(source)) == expected
