"""Rules and facts added for shapes of reported bugs: hand-written entropy (TL116), an eps that is 0
in float16 (TL122), the log of a mixture of softmax outputs (TL102), a loss chosen by configuration
(TL111), and gradients followed through tuples, linear-algebra methods and callers that disagree
(TL105). Each case asserts the exact (code, line) findings."""

import textwrap
from pathlib import Path

import pytest
from conftest import codes_lines

from torchlint.api import check_paths

CASES = {
    # --- TL116 hand-written-entropy --------------------------------------------------------
    "p * log(p) of a softmax, both operand orders": ("""
        import torch
        def entropy(logits):
            p = torch.softmax(logits, -1)
            return -(p * torch.log(p)).sum(-1)
        def entropy2(logits):
            p = logits.softmax(-1)
            return -(p.log() * p).sum(-1)
        """, {("TL116", 5), ("TL116", 8)}),
    "exp(lp) * lp and softmax * log_softmax of logits a caller hands in": ("""
        import torch.nn.functional as F
        def entropy(logits):
            lp = F.log_softmax(logits, dim=-1)
            return -(lp.exp() * lp).sum(-1)
        def entropy2(logits):
            return -(F.softmax(logits, -1) * F.log_softmax(logits, -1)).sum(-1)
        """, {("TL116", 5), ("TL116", 7)}),
    "clean: xlogy, entr, a layer's finite logits, unknown p, two different tensors": ("""
        import torch
        import torch.nn.functional as F
        lin = torch.nn.Linear(4, 4)
        def a(logits):
            p = torch.softmax(logits, -1)
            return -torch.xlogy(p, p).sum(-1) + torch.special.entr(p).sum(-1)
        def b(x):
            lp = F.log_softmax(lin(x), dim=-1)
            return -(lp.exp() * lp).sum(-1)
        def c(p):
            return -(p * torch.log(p)).sum()
        def d(p, q):
            return (p * torch.log(q.clamp_min(1e-6))).sum()
        def e(scores):
            lp = F.log_softmax(scores, dim=-1)
            return -(lp * lp.exp()).nansum(-1), torch.nan_to_num(lp * lp.exp()).sum(-1)
        """, set()),
    # --- TL122 eps-vanishes-in-float16 ------------------------------------------------------
    "1e-8 guarding a division and a log under a float16 autocast": ("""
        import torch
        lin = torch.nn.Linear(4, 4)
        def step(x):
            with torch.autocast("cuda", dtype=torch.float16):
                s = lin(x)
                hi, lo = s.amax(1, keepdim=True), s.amin(1, keepdim=True)
                n = (s - lo) / (hi - lo + 1e-8)
                return torch.log(n + 1e-10)
        """, {("TL122", 8), ("TL122", 9)}),
    "a model made float16 with .half() in the file": ("""
        import torch
        EPS = 1e-15
        def safe_log(x):
            return torch.log(x + EPS)
        model = torch.nn.Linear(4, 1).half()
        """, {("TL122", 5)}),
    "clean: float32 code, eps float16 can hold, float32 reductions under autocast, bfloat16": ("""
        import torch
        lin = torch.nn.Linear(4, 4)
        def plain(x):
            return x / (x.sum() + 1e-12)
        def step(x):
            with torch.autocast("cuda", dtype=torch.float16):
                s = lin(x)
                a = s / (s.abs().amax() + 1e-4)
                b = s / (s.sum(-1, keepdim=True) + 1e-9)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                c = lin(x)
                d = c / (c.amax() - c.amin() + 1e-8)
            return a, b, d
        """, set()),
    # --- TL102 on a mixture -------------------------------------------------------------
    "log of a gated mixture of two softmax outputs": ("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class PointerGenerator(nn.Module):
            def __init__(self):
                super().__init__()
                self.gen, self.copy, self.gate = nn.Linear(8, 50), nn.Linear(8, 50), nn.Linear(8, 1)
            def forward(self, h):
                g = torch.sigmoid(self.gate(h))
                return g * F.softmax(self.gen(h), -1) + (1 - g) * F.softmax(self.copy(h), -1)
        model = PointerGenerator()
        def loss(h, target):
            return F.nll_loss(torch.log(model(h)), target)
        """, {("TL102", 14)}),
    "clean: mixing in log space": ("""
        import torch
        import torch.nn.functional as F
        def mix(g, a, b):
            lg = F.logsigmoid(g)
            return torch.logsumexp(torch.stack([lg + F.log_softmax(a, -1), F.logsigmoid(-g) + F.log_softmax(b, -1)]), 0)
        """, set()),
    # --- TL111 with a loss chosen by configuration -------------------------------------------
    "a sigmoid output into the BCEWithLogitsLoss a flag picks": ("""
        import torch
        import torch.nn as nn
        class Rec(nn.Module):
            def __init__(self, loss_type="CL"):
                super().__init__()
                self.fc = nn.Linear(8, 1)
                self.loss_type = loss_type
            def forward(self, x):
                return torch.sigmoid(self.fc(x).view(-1))
            def fit(self, loader):
                criterion = nn.BCEWithLogitsLoss() if self.loss_type == "CL" else nn.MSELoss()
                for x, y in loader:
                    loss = criterion(self.forward(x), y)
                    loss.backward()
        """, {("TL111", 14)}),
    "clean: the configured losses take probabilities": ("""
        import torch
        import torch.nn as nn
        class Rec(nn.Module):
            def __init__(self, loss_type="CL"):
                super().__init__()
                self.fc = nn.Linear(8, 1)
                self.loss_type = loss_type
            def forward(self, x):
                return torch.sigmoid(self.fc(x).view(-1))
            def fit(self, loader):
                criterion = nn.BCELoss() if self.loss_type == "CL" else nn.MSELoss()
                for x, y in loader:
                    loss = criterion(self.forward(x), y)
                    loss.backward()
        """, set()),
    # --- TL105 through tuples, det() and callers that pass targets too ------------------------
    "sqrt(clamp(0)) of a determinant of predictions passed in a tuple": ("""
        import torch
        import torch.nn as nn
        def to_gaussian(box):
            return box[..., :2], torch.diag_embed(box[..., 2:4])
        def distance(pred, target):
            (xy_p, sigma_p), (xy_t, sigma_t) = pred, target
            return (sigma_p.det() * sigma_t.det()).clamp(0).sqrt()
        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.reg = nn.Linear(8, 4)
            def loss(self, feats, target):
                return distance(to_gaussian(self.reg(feats)), to_gaussian(target))
        """, {("TL105", 8)}),
    "clean: the same helpers on data only": ("""
        import torch
        def to_gaussian(box):
            return box[..., :2], torch.diag_embed(box[..., 2:4])
        def distance(pred, target):
            (xy_p, sigma_p), (xy_t, sigma_t) = pred, target
            return (sigma_p.det() * sigma_t.det()).clamp(0).sqrt()
        def report(boxes, targets):
            return distance(to_gaussian(boxes), to_gaussian(targets))
        """, set()),
}


@pytest.mark.parametrize("name", list(CASES))
def test_case(name):
    source, expected = CASES[name]
    assert codes_lines(source) == expected


PYG_OPS = """
import torch

EPS = 1e-15


def safe_log(x):
    return torch.log(x + EPS)
"""

PYG_TRAIN = """
import torch

from ops import safe_log


def train(model, x):
    model = model.half()
    return -safe_log(torch.sigmoid(model(x))).mean()
"""


def test_the_module_that_makes_the_model_float16_is_an_importer(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.torchlint]\n")
    (tmp_path / "ops.py").write_text(textwrap.dedent(PYG_OPS))
    (tmp_path / "train.py").write_text(textwrap.dedent(PYG_TRAIN))
    findings = check_paths([tmp_path])
    assert sorted((Path(f.path).name, f.code, f.line) for f in findings) == [("ops.py", "TL122", 8)]
    # without the importer, nothing says the code runs in float16; a test that makes a model
    # float16 exercises a configuration and is not evidence of how the code trains
    (tmp_path / "train.py").unlink()
    assert check_paths([tmp_path]) == []
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_half.py").write_text(textwrap.dedent(PYG_TRAIN))
    assert check_paths([tmp_path]) == []
