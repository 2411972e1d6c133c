"""Static shape rules: TL603 (a model output flattened before one comparison with targets, not another) and
TL604 (a view/reshape that moves a named dim)."""

import textwrap

import pytest
from conftest import codes_lines, codes_lines_after

MODEL = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x):
        return self.net(x)


def weighted_mse(pred, target, weight):
    return (weight * (pred - target) ** 2).mean()
"""

CASES = {
    "raw output against targets in a loss, a helper and a difference; flattened in evaluation": ("""
        def train(loader, val_loader):
            model = Regressor()
            criterion = nn.MSELoss()
            for x, y, w in loader:
                loss = criterion(model(x), y)
                loss = loss + weighted_mse(model(x), y, w) + ((model(x) - y) ** 2).mean()
            with torch.no_grad():
                for x, y, w in val_loader:
                    pred = model(x).view(-1).clamp(0.0, 5.0)
                    err = (pred - y).abs().mean()
        """, {("TL603", 5), ("TL603", 6)}),
    "flattened by a method of the evaluation and by F.l1_loss, compared raw in training": ("""
        class Trainer:
            def __init__(self):
                self.model = Regressor()
            def fit(self, loader):
                for x, y in loader:
                    loss = F.mse_loss(self.model(x), y)
            def evaluate(self, loader):
                return sum(F.l1_loss(self.model(x).squeeze(1), y) for x, y in loader)
        """, {("TL603", 6)}),
    "clean: flattened in both places, or the targets given the output's shape": ("""
        def train(loader, val_loader):
            model = Regressor()
            for x, y in loader:
                loss = F.mse_loss(model(x).squeeze(-1), y) + F.mse_loss(model(x), y.unsqueeze(1))
                loss = loss + F.mse_loss(model(x), y[:, None]) + F.mse_loss(model(x), y.view(-1, 1))
            with torch.no_grad():
                for x, y in val_loader:
                    err = (model(x).squeeze(-1) - y).abs().mean()
        """, set()),
    "clean: evaluation flattens the targets too, or no comparison flattens anything": ("""
        def train(loader, val_loader):
            model = Regressor()
            for x, y in loader:
                loss = F.mse_loss(model(x), y)
            with torch.no_grad():
                for x, y in val_loader:
                    err = (model(x).view(-1) - y.view(-1)).abs().mean()
        def other(loader):
            model = Regressor()
            for x, y in loader:
                loss = F.mse_loss(model(x), y) + (model(x) - 1.0).mean()
        """, set()),
    "clean: a raw output minus a constant, a squeeze without a dim, a reduction": ("""
        def train(loader, val_loader):
            model = Regressor()
            for x, y in loader:
                loss = (model(x) - 1.0).mean() + F.mse_loss(model(x).squeeze(), y) + F.mse_loss(model(x).mean(1), y)
            with torch.no_grad():
                for x, y in val_loader:
                    err = (model(x).squeeze(-1) - y).abs().mean()
        """, set()),
}


@pytest.mark.parametrize("name", list(CASES))
def test_shape_rule_case(name):
    body, expected = CASES[name]
    assert codes_lines_after(MODEL, body) == expected


RESHAPES = {
    "heads split by a reshape that moves T, a view that swaps dims, channels moved last by a view": ("""
        import torch
        import torch.nn as nn
        class Attention(nn.Module):
            def __init__(self, dim, heads):
                super().__init__()
                self.heads, self.d = heads, dim // heads
                self.qkv = nn.Linear(dim, 3 * dim)
            def split(self, t):
                B, T, _ = t.shape
                return t.reshape(B, self.heads, T, self.d)
            def forward(self, x):
                B, T, C = x.shape
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                q = q.view(B, self.heads, T, C // self.heads)
                return x.view(B, C, T)
        def to_tokens(feats):
            b, c, h, w = feats.size()
            return feats.view(b, h * w, c)
        """, {("TL604", 10), ("TL604", 14), ("TL604", 15), ("TL604", 18)}),
    "clean: splits and merges in order, then transpose; names reassigned; another tensor": ("""
        import torch
        import torch.nn as nn
        class Attention(nn.Module):
            def __init__(self, dim, heads):
                super().__init__()
                self.heads = heads
                self.qkv = nn.Linear(dim, 3 * dim)
                self.conv = nn.Conv1d(dim, dim, 3, padding=1)
            def forward(self, x):
                B, T, C = x.shape
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
                y = x.reshape(B * T, C).view(B, T, 1, C)
                h = self.conv(x.transpose(1, 2))
                h = h.view(B, C, T)
                x = x.transpose(1, 2)
                return x.reshape(B, C, T), y, h
        def to_tokens(feats):
            b, c, h, w = feats.size()
            return feats.permute(0, 2, 3, 1).reshape(b, h * w, c), feats.view(b, c, h * w)
        """, set()),
}


@pytest.mark.parametrize("name", list(RESHAPES))
def test_reshape_rule_case(name):
    body, expected = RESHAPES[name]
    assert {(code, line - 1) for code, line in codes_lines(textwrap.dedent(body))} == expected


def test_output_target_broadcast_in_a_script_without_functions():
    """Notebook-style code: the loop and the evaluation at module level."""
    source = textwrap.dedent("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
        opt = torch.optim.Adam(model.parameters())
        for x, y in train_batches:
            loss = F.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            errors = [(model(x).squeeze(1) - y).abs().mean() for x, y in val_batches]
        """)
    assert codes_lines(source) == {("TL603", 8)}
