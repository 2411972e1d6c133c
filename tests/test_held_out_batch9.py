"""Stop 43's held-out batch (the ninth, 14 public projects: RL and LLM-training libraries, trainer
examples, lecture notebooks, MRI reconstruction, differential privacy, semi-supervised learning,
detection): each mechanism behind a wrong or noisy finding once where a maintainer would close the
report (no finding) and once where it is a bug (exact code and line)."""

from __future__ import annotations

import textwrap

import pytest
from conftest import codes_lines
from test_held_out_batch8 import _notebook

from torchlint.api import check_source

# litgpt's tensor-parallel generation builds the model on the meta device and loads every weight
# from the checkpoint (in a loop over ranks) before it seeds for sampling.
SEED_AFTER = """
    import torch
    import torch.nn as nn
    def main(path, ranks):
        {build}
        for rank in range(ranks):
            if rank == 0:
                {load}
        torch.manual_seed(1234)
        return model(torch.randn(2, 4))
    """

PAIRS = {
    "clean: a model built on the meta device": (
        SEED_AFTER.format(build='with torch.device("meta"):\n            model = nn.Linear(4, 4)',
                          load="print(rank)"), set()),
    "clean: a model whose weights a loop loads before the seed": (
        SEED_AFTER.format(build="model = nn.Linear(4, 4)", load="model.load_state_dict(torch.load(path))"),
        set()),
    "a model built and drawn before the seed": (
        SEED_AFTER.format(build="model = nn.Linear(4, 4)", load="print(rank)"), {("TL505", 9)}),
}


# detectron2's `FrozenBatchNorm2d.convert_frozen_batchnorm`: `cls(...)` in a classmethod builds a
# module; it is not a forward pass, so copying weights into it through `.data` is construction.
CONVERT = """
    import torch.nn as nn
    class Frozen(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n))
        def forward(self, x):
            return x * self.weight
        {decorator}
        def convert(cls, module):
            res = module
            for name, child in module.named_children():
                res = cls(child.num_features)
                res.weight.data = child.weight.data.clone()
            return res
    """

PAIRS.update({
    "clean: `cls(...)` of a classmethod builds a module": (CONVERT.format(decorator="@classmethod"), set()),
    "`cls(...)` of a plain method is a forward pass": (CONVERT.format(decorator=""), {("TL201", 14)}),
})


# fastMRI's training loop turns anomaly detection on only under its `--nan_detection` flag.
ANOMALY = """
    import torch
    from torch import autograd
    def run(args, model, loader):
        {enable}
        for x in loader:
            model(x).sum().backward()
    """

PAIRS.update({
    "clean: anomaly detection under a setting": (
        ANOMALY.format(enable="if args.nan_detection:\n            autograd.set_detect_anomaly(True)"), set()),
    "anomaly detection always on": (ANOMALY.format(enable="autograd.set_detect_anomaly(True)"), {("TL304", 5)}),
})


# USB's FreeMatch hands `1 / hist` to its own `replace_inf_to_zero`, which sets the inf entries to 0.
INF_HANDLED = """
    import torch
    def replace_inf_to_zero(val):
        {handle}
        return val
    def loss(logits):
        hist = torch.bincount(logits.argmax(1), minlength=logits.shape[1]).float()
        scale = replace_inf_to_zero(1 / hist)
        return (logits.softmax(1).mean(0) * scale).sum()
    """

PAIRS.update({
    "clean: a quotient given to a function that zeroes its infinities": (
        INF_HANDLED.format(handle="val[val == float('inf')] = 0.0"), set()),
    "a quotient given to a function that keeps its infinities": (
        INF_HANDLED.format(handle="val = val * 2"), {("TL106", 8)}),
})


# trl's chunked SFT loss computes its logits itself (`h @ w.t()`, then rescaled or soft-capped): no
# -inf can be in them, unlike logits a caller hands in after top-k filtering or masking.
ENTROPY = """
    import torch
    import torch.nn.functional as F
    def chunk(h, w, cap, given):
        {logits}
        if cap is not None:
            logits = cap * torch.tanh(logits / cap)
        log_p = F.log_softmax(logits, dim=-1)
        return -(log_p.exp() * log_p).sum(-1)
    """

PAIRS.update({
    "clean: an entropy of logits computed in the function": (ENTROPY.format(logits="logits = h @ w.t()"), set()),
    "an entropy of logits masked with -inf in the function": (
        ENTROPY.format(logits='logits = (h @ w.t()).masked_fill(given, float("-inf"))'), {("TL116", 9)}),
})


# d2l's naive Bayes counts with Laplace smoothing: counters start at `torch.ones` and grow with
# `count[y] += 1` in a loop, so `xcount / ycount` is no longer the constant 1 of the first lines.
COUNTS = """
    import torch
    xcount = torch.ones((784, 10))
    ycount = torch.ones(10)
    for data, label in loader:
        y = int(label)
        {update}
    px = xcount / ycount.reshape(1, 10)
    logpxneg = torch.log(1 - px)
    """

PAIRS.update({
    "clean: counters updated element by element in a loop": (
        COUNTS.format(update="ycount[y] += 1\n        xcount[:, y] += data.reshape(784)"), set()),
    "counters never updated: 1 - px is 0": (COUNTS.format(update="print(y)"), {("TL101", 9)}),
})


# WZMIAOMIAO's YOLOv3-SPP loss (batch 8): under a float16 autocast `exp` runs in float32, and
# `torch.cat` of a float16 and a float32 tensor is float32, so the IoU's 1e-16 guard survives.
AUTOCAST_IOU = """
    import torch
    def bbox_iou(box1, box2):
        cw = torch.max(box1[2], box2[2]) - torch.min(box1[0], box2[0])
        c_area = cw * cw + 1e-16
        return 1 / c_area
    def compute_loss(p, tbox, anchors):
        ps = p[0]
        pxy = ps[:, :2].sigmoid()
        pwh = ps[:, 2:4].{size} * anchors
        pbox = torch.cat((pxy, pwh), 1)
        return bbox_iou(pbox.t(), tbox)
    def train(model, loader, anchors):
        for imgs, tbox in loader:
            with torch.cuda.amp.autocast():
                loss = compute_loss(model(imgs), tbox, anchors)
            loss.backward()
    """

PAIRS.update({
    "clean: boxes made float32 by autocast's exp and torch.cat": (
        AUTOCAST_IOU.format(size="exp().clamp(max=1e3)"), set()),
    "boxes that stay float16 under autocast": (AUTOCAST_IOU.format(size="sigmoid()"), {("TL122", 5)}),
})


# A 0-dim float32 tensor does not promote a float16 one: attention scores scaled by
# `torch.sqrt(torch.tensor(d).to(torch.float32))` under a float16 autocast are still float16.
SCALED_SCORES = """
    import torch
    import torch.nn as nn
    class Attention(nn.Module):
        def forward(self, q, k, mask):
            attn = torch.bmm(q, k.permute(0, 2, 1))
            attn = attn / torch.sqrt(torch.tensor(k.shape[-1]).to(torch.float32))
            return attn.masked_fill(mask, {fill}).softmax(-1)
    def train(model, loader):
        for q, k, mask in loader:
            with torch.autocast(device_type="cuda", dtype=torch.float16):
                loss = model(q, k, mask).sum()
            loss.backward()
    """

PAIRS.update({
    "scores divided by a float32 scalar tensor stay float16": (SCALED_SCORES.format(fill="-1e9"), {("TL121", 8)}),
    "clean: a fill float16 can hold": (SCALED_SCORES.format(fill="-1e4"), set()),
})


@pytest.mark.parametrize("name", list(PAIRS))
def test_held_out_pair(name):
    source, expected = PAIRS[name]
    assert codes_lines(textwrap.dedent(source)) == expected


# d2l's parameter-management notebook shows a constant-42 initialisation on a model it only prints.
INIT_DEMO = [
    "import torch\nimport torch.nn as nn\nmodel = nn.Sequential(nn.Linear(2, 5), nn.Linear(5, 5))\n",
    "def init_42(m):\n    if type(m) == nn.Linear:\n        torch.nn.init.constant_(m.weight, 42)\n"
    "model.apply(init_42)\nprint(model.state_dict())\n",
]


@pytest.mark.parametrize(("extra", "expected"), [
    ([], []),
    (["model(torch.randn(3, 2)).sum().backward()\n"], [("TL109", 2, 3)]),
])
def test_a_large_init_in_a_notebook_that_never_trains(extra, expected):
    found = check_source(_notebook(INIT_DEMO + extra), "parameters.ipynb")
    assert [(f.code, f.cell, f.line) for f in found] == expected
