"""Issue 12's false-positive mechanisms not paired elsewhere: each shape once where a reviewer would
close the report (no finding) and once where it is a bug (the finding, exact code and line)."""

from __future__ import annotations

import textwrap

import pytest
from conftest import codes_lines

PAIRS = {
    # A guard written as a conditional expression (explained variance in RL libraries).
    "clean: division guarded by a conditional expression on the divisor": ("""
        import numpy as np
        import torch
        def explained_variance(y_pred, y_true):
            var_y = np.var(y_true)
            return np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y
        """, set()),
    "the same division without the guard, of a batch statistic that can be 0": ("""
        import torch
        def normalise(x):
            spread = x.max() - x.min()
            return (x - x.min()) / spread
        """, {("TL106", 5)}),
    # Boxes: the box enclosing two boxes is at least as large as each (DETR's generalized IoU), while
    # the overlap of two boxes is clamped at 0 for every pair that does not touch.
    "clean: division by the area of the box enclosing two boxes": ("""
        import torch
        def giou(boxes1, boxes2, iou, union):
            lt = torch.min(boxes1[:, None, :2], boxes2[:, :2])
            rb = torch.max(boxes1[:, None, 2:], boxes2[:, 2:])
            wh = (rb - lt).clamp(min=0)
            area = wh[:, :, 0] * wh[:, :, 1]
            return iou - (area - union) / area
        """, set()),
    "division by the overlap of two boxes, 0 for boxes apart": ("""
        import torch
        def overlap_ratio(boxes1, boxes2, area1):
            lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])
            rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
            wh = (rb - lt).clamp(min=0)
            inter = wh[:, :, 0] * wh[:, :, 1]
            return area1[:, None] / inter
        """, {("TL106", 8)}),
    # Counts of labels: a few-shot episode's support labels are every class repeated (each bin is hit),
    # a batch's labels are whatever the sampler drew.
    "clean: class prototypes divided by counts of arange(n_way) repeated (a prototypical network)": ("""
        import torch
        def prototypes(support, n_way, n_support):
            labels = torch.arange(n_way).repeat_interleave(n_support)
            sums = torch.zeros(n_way, support.shape[-1]).index_add_(0, labels, support)
            counts = torch.bincount(labels, minlength=n_way).unsqueeze(1)
            return sums / counts
        """, set()),
    "class means divided by counts of a batch's labels, padded to every class": ("""
        import torch
        def class_means(features, labels, n_classes):
            sums = torch.zeros(n_classes, features.shape[-1]).index_add_(0, labels, features)
            counts = torch.bincount(labels, minlength=n_classes).unsqueeze(1)
            return sums / counts
        """, {("TL106", 6)}),
    # A norm of a difference of two points is 0 where they coincide.
    "a difference of two embeddings divided by its norm": ("""
        import torch.nn as nn
        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(64, 512)
            def forward(self, a, b):
                d = self.fc(a) - self.fc(b)
                return d / d.norm(p=2, dim=1, keepdim=True)
        """, {("TL106", 9)}),
    # A value whose range excludes 0: sigmoid of a clamped input cannot reach 0 in float32.
    "clean: sqrt of the sigmoid of an input clamped to [-10, 10]": ("""
        import torch
        class Gate(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(8, 8)
            def forward(self, x):
                z = self.proj(x).clamp(-10, 10)
                return torch.sqrt(z.sigmoid())
        """, set()),
    "sqrt of a ReLU output, which is exactly 0 for every negative input": ("""
        import torch
        class Gate(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(8, 8)
            def forward(self, x):
                return torch.sqrt(torch.relu(self.proj(x)))
        """, {("TL105", 8)}),
    # Why the code is written so: empty_cache to recover from an out-of-memory error.
    "clean: empty_cache in the out-of-memory handler of a training step": ("""
        import torch
        def train(model, loader, opt):
            for x in loader:
                try:
                    loss = model(x).mean()
                    loss.backward()
                    opt.step()
                    opt.zero_grad()
                except torch.cuda.OutOfMemoryError:
                    opt.zero_grad()
                    torch.cuda.empty_cache()
        """, set()),
    "empty_cache after every training step": ("""
        import torch
        def train(model, loader, opt):
            for x in loader:
                loss = model(x).mean()
                loss.backward()
                opt.step()
                opt.zero_grad()
                torch.cuda.empty_cache()
        """, {("TL401", 9)}),
    # Thresholds and taste stay out of the default set; unknown values stay unknown.
    "clean: Adam with lr=0.03 on a small model, and an optimizer configured from **kwargs": ("""
        import torch
        def make(model, cfg):
            a = torch.optim.Adam(model.parameters(), lr=0.03)
            b = torch.optim.AdamW(model.parameters(), **cfg)
            return a, b
        """, set()),
    "Adam's eps below float16's smallest subnormal for a model made float16": ("""
        import torch
        def make(model):
            model = model.half()
            return torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-8)
        """, {("TL110", 5)}),
}


@pytest.mark.parametrize("name", list(PAIRS))
def test_precision_pair(name):
    source, expected = PAIRS[name]
    assert codes_lines(textwrap.dedent(source)) == expected
