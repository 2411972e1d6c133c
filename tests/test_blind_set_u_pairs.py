"""Blind set `u` (stop 44), the mechanisms behind its first measure: each once where a maintainer
would close the report (no finding) and once where it is a bug (exact code and line). TL121's
`torch.where` (`u/06`) is in test_rules.py."""

from __future__ import annotations

import textwrap

import pytest
from conftest import codes_lines

# u/08 (a masked-modelling transformer for spike counts) divides the masked loss by the number of
# masked time bins, drawn as `rand(b, t) < ratio`: over the whole batch, none is masked only by a
# draw that does not happen; per row (a few bins) it does.
RANDOM_MASK = """
    import torch
    import torch.nn.functional as F
    def masked_nll(log_rates, spikes, time_mask):
        nll = F.poisson_nll_loss(log_rates, spikes, log_input=True, reduction="none")
        return (nll * time_mask[..., None]).sum() / {count}
    def step(model, spikes, ratio):
        time_mask = torch.rand(spikes.shape[:2]) < ratio
        return masked_nll(model(spikes), spikes, time_mask)
    """


@pytest.mark.parametrize(("count", "expected"), [
    ("time_mask.sum()", set()),
    ("time_mask.sum(dim=1, keepdim=True)", {("TL106", 6)}),
])
def test_a_count_of_a_random_mask_over_the_whole_batch(count, expected):
    assert codes_lines(textwrap.dedent(RANDOM_MASK.format(count=count))) == expected
