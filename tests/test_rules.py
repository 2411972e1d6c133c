"""Each rule: failing and passing examples with the exact (code, line) findings.

The cases exercise the mechanisms rather than one spelling: import aliases, method forms,
values flowing through variables, branches, class attributes and function return values.
"""

import pytest
from conftest import codes_lines

from torchlint.config import Settings

CASES = {
    # --- TL101 unguarded-log -------------------------------------------------------------
    "log of a probability zeroed at ignored positions (masked after the log: the gradient is still NaN)": ("""
        import torch
        import torch.nn.functional as F
        class FocalLoss(torch.nn.Module):
            def __init__(self, ignore_index=-100):
                super().__init__()
                self.ignore_index = ignore_index
            def _pt(self, onehot, logits, mask):
                p = (F.softmax(logits, dim=-1) * onehot).sum(dim=-1)
                return p * ~mask
            def forward(self, logits, target, onehot):
                mask = target == self.ignore_index
                pt = self._pt(onehot, logits, mask)
                nll = -torch.log(pt)
                return nll.masked_fill(mask, 0).mean()
        def kept(logits, target, onehot, ignore_index=-100):
            keep = target != ignore_index
            p = (F.softmax(logits, dim=-1) * onehot).sum(dim=-1)
            return -torch.log(p[keep]).mean()
        """, {("TL101", 14)}),
    "log of relu through a variable": ("""
        import torch
        def f(x):
            h = torch.relu(x)
            return torch.log(h)
        """, {("TL101", 5)}),
    "log method form of relu method": ("""
        import torch
        def f(x):
            return x.relu().log()
        """, {("TL101", 4)}),
    "log of a shift by the minimum": ("""
        import torch as T
        def f(x):
            return T.log(x - x.min())
        """, {("TL101", 4)}),
    "tiny eps on a value that is routinely 0": ("""
        import torch
        def f(x):
            return torch.log(x - x.detach().min() + 1e-9)
        """, {("TL101", 4)}),
    "clean: a tiny eps where the zeros carry no gradient: a ReLU's, uniform samples' (deep-person-reid)": ("""
        import torch
        import torch.nn.functional as F
        EPS = 1e-12
        def gumbel(logits):
            u = torch.rand_like(logits)
            return logits - torch.log(-torch.log(u + EPS) + EPS)
        def log_weights(w):
            return torch.log(F.relu(w) + EPS)
        """, set()),
    "log of 1 - p, p a probability": ("""
        from torch import log, sigmoid
        def f(z):
            p = sigmoid(z)
            return log(1 - p)
        """, {("TL101", 5)}),
    "numpy log of a count": ("""
        import numpy as np
        def idf(docs, vocab):
            df = np.bincount(docs, minlength=vocab)
            return np.log(df)
        """, {("TL101", 5)}),
    "gumbel noise from uniform samples": ("""
        import torch
        def gumbel(logits):
            u = torch.rand_like(logits)
            return -torch.log(-torch.log(u))
        """, {("TL101", 5)}),
    "log of a ReLU module attribute output": ("""
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.act = nn.ReLU()
            def forward(self, x):
                return torch.log(self.act(x))
        """, {("TL101", 9)}),
    "clean: guarded by clamp, eps, softplus, exp": ("""
        import torch
        import torch.nn.functional as F
        def f(x, eps=1e-6):
            a = torch.log(x.relu().clamp(min=1e-6))
            b = torch.log(torch.relu(x) + 1e-6)
            c = torch.log(F.softplus(x))
            d = torch.log(torch.exp(x) + x.abs())
            e = torch.log(x.clamp_min(eps))
            return a, b, c, d, e
        """, set()),
    "clean: unknown values are not reported": ("""
        import torch
        def f(x, scale):
            return torch.log(x) + torch.log(scale * 2) + torch.log(x - scale)
        """, set()),
    "clean: logging calls named log": ("""
        import torch
        def training_step(self, batch):
            loss = torch.relu(batch).mean()
            self.log("train_loss", loss)
            return loss
        """, set()),
    "clean: branch guards the value": ("""
        import torch
        def f(x, use_eps):
            h = torch.relu(x)
            if use_eps:
                h = h + 1e-3
            else:
                h = h.clamp(min=1e-3)
            return torch.log(h)
        """, set()),
    "clean: checked by an if before use": ("""
        import torch
        def f(x):
            d = torch.relu(x).sum()
            if d > 0:
                return torch.log(d)
            return d
        """, set()),
    "log(1 - p), p a sigmoid clamped to 1 - 1e-8 (1.0 in float32); log of a float16 clamp at 1e-8": ("""
        import torch
        def f(z, x):
            p = torch.sigmoid(z).clamp(1e-8, 1 - 1e-8)
            h = x.half().clamp(min=1e-8)
            a = torch.log(1 - p)
            return a, torch.log(h)
        """, {("TL101", 6), ("TL101", 7)}),
    "clean: a sigmoid clamped to [self.eps, 1 - self.eps]: bounds the code names are guards": ("""
        import torch
        class Loss(torch.nn.Module):
            def __init__(self, eps=1e-8):
                super().__init__()
                self.eps = eps
            def forward(self, z, y):
                p = torch.sigmoid(z).clamp(self.eps, 1 - self.eps)
                return -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean(), torch.log(1 - p)
        """, set()),
    "clean: log(1 - p) with p clamped to 1 - 1e-7 or 1 - 1e-6; a float32 clamp at 1e-8": ("""
        import torch
        def f(z, x):
            p = torch.sigmoid(z).clamp(1e-7, 1 - 1e-7)
            q = torch.sigmoid(z).clamp(max=1 - 1e-6)
            return torch.log(1 - p), torch.log(1 - q), torch.log(x.clamp(min=1e-8))
        """, set()),
    # --- TL102 log-of-probability ----------------------------------------------------------
    "log softmax direct": ("""
        import torch
        import torch.nn.functional as F
        def f(x):
            return torch.log(F.softmax(x, dim=-1))
        """, {("TL102", 5)}),
    "log sigmoid through variable": ("""
        import torch
        def f(z):
            p = torch.sigmoid(z)
            return torch.log(p)
        """, {("TL102", 5)}),
    "log of a softmax module output, indexed": ("""
        import torch
        import torch.nn as nn
        softmax = nn.Softmax(dim=1)
        def f(x, target):
            probs = softmax(x)
            return -torch.log(probs[range(len(target)), target]).mean()
        """, {("TL102", 7)}),
    "method chain softmax log": ("""
        import torch
        def f(x):
            return x.softmax(-1).log()
        """, {("TL102", 4)}),
    "clean: log_softmax, logsigmoid, guarded prob": ("""
        import torch
        import torch.nn.functional as F
        def f(x):
            p = torch.softmax(x, -1)
            return F.log_softmax(x, -1), F.logsigmoid(x), torch.log(p + 1e-8)
        """, set()),
    # --- TL103 bce-on-probabilities --------------------------------------------------------
    "bce on sigmoid variable": ("""
        import torch
        import torch.nn.functional as F
        def f(z, y):
            p = torch.sigmoid(z)
            return F.binary_cross_entropy(p, y)
        """, {("TL103", 6)}),
    "BCELoss attribute on a model ending in Sigmoid (Sequential), mode always": ("""
        import torch.nn as nn
        class Trainer:
            def __init__(self):
                self.model = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())
                self.criterion = nn.BCELoss()
            def step(self, x, y):
                return self.criterion(self.model(x), y)
        """, {("TL103", 8)}, [], {"TL103": {"mode": "always"}}),
    "clean by default: BCELoss on a GAN discriminator ending in Sigmoid (Sequential), called in the step": ("""
        import torch
        import torch.nn as nn
        D = nn.Sequential(nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1), nn.Sigmoid())
        criterion = nn.BCELoss()
        def d_step(real, fake, d_optimizer):
            outputs = D(real)
            d_loss_real = criterion(outputs, torch.ones(real.size(0), 1))
            d_loss_fake = criterion(D(fake.detach()), torch.zeros(fake.size(0), 1))
            d_optimizer.zero_grad()
            (d_loss_real + d_loss_fake).backward()
            d_optimizer.step()
        """, set()),
    "clean by default: bce on the output of another function returning sigmoid": ("""
        import torch
        from torch.nn.functional import binary_cross_entropy
        def predict(w, x):
            return torch.sigmoid(x @ w)
        def loss(w, x, y):
            return binary_cross_entropy(predict(w, x), y)
        """, set()),
    "clean: bce with logits, clamped probabilities, unknown input": ("""
        import torch
        import torch.nn.functional as F
        def f(z, y, probs):
            a = F.binary_cross_entropy_with_logits(z, y)
            b = F.binary_cross_entropy(torch.sigmoid(z).clamp(1e-6, 1 - 1e-6), y)
            c = F.binary_cross_entropy(probs, y)
            return a + b + c
        """, set()),
    # --- TL104 hand-written-bce -------------------------------------------------------------
    "hand written bce, method logs and mean": ("""
        import torch
        def f(p, y):
            loss = -(y * p.log() + (1 - y) * (1 - p).log())
            return loss.mean()
        """, {("TL104", 4)}),
    "hand written bce in numpy": ("""
        import numpy as np
        def f(p, y):
            return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))
        """, {("TL104", 4)}),
    "clean: eps-guarded hand-written bce is deliberate": ("""
        import torch
        def f(z, y):
            p = torch.sigmoid(z).clamp(1e-7, 1 - 1e-7)
            return -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()
        """, set()),
    "hand written bce clamped to 1 - 1e-8: the bound is 1.0 in float32 (eps a parameter default)": ("""
        import torch
        def f(y_pred, y, eps=1e-8):
            y_pred = torch.clamp(y_pred, eps, 1 - eps)
            return -(y * torch.log(y_pred) + (1 - y) * torch.log(1 - y_pred)).mean()
        def g(p, y):
            return f(p, y)
        """, {("TL104", 5)}),
    "hand written bce on a sigmoid clamped only from below: 1 - p still reaches 0": ("""
        import torch
        def f(z, y):
            p = torch.sigmoid(z).clamp(min=1e-7)
            return -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()
        """, {("TL104", 5)}),
    "clean: clamps whose upper bound stays below 1 in float32, or a default every call overrides": ("""
        import torch
        def f(p, y, eps=1e-8):
            a = p.clamp(1e-7, 1 - 1e-7)
            b = p.clamp(1e-6, 1.0 - 1e-6)
            c = p.clamp(eps, 1 - eps)
            loss_a = y * torch.log(a) + (1 - y) * torch.log(1 - a)
            loss_b = y * torch.log(b) + (1 - y) * torch.log(1 - b)
            return loss_a, loss_b, y * torch.log(c) + (1 - y) * torch.log(1 - c)
        def g(p, y):
            return f(p, y, eps=1e-6)
        """, set()),
    "hand written bce written with subtractions: both logs enter with the same sign": ("""
        import torch
        def f(p, y):
            return (-y * torch.log(p) - (1 - y) * torch.log(1 - p)).mean()
        """, {("TL104", 4)}),
    "clean: log(u) - log(1 - u) is the log-odds of u (logistic noise for a concrete relaxation)": ("""
        import torch
        def sample(logits, temperature, bias):
            u = (1 - 2 * bias) * torch.rand_like(logits) + bias
            return (u.log() - (1 - u).log() + logits) / temperature
        def gate(x, beta):
            u = torch.empty_like(x).uniform_(1e-6, 1.0 - 1e-6)
            return torch.sigmoid((torch.log(u) - torch.log(1 - u) + x) / beta)
        """, set()),
    # --- TL105 unguarded-sqrt ----------------------------------------------------------------
    "clean: an RMSE loss over every element of the batch (0 only where every prediction is exact)": ("""
        import torch
        def rmse(pred, obs):
            return torch.sqrt(torch.mean((pred - obs) ** 2))
        def train(model, x, y, opt):
            loss = rmse(model(x), y)
            loss.backward()
            opt.step()
        """, set()),
    "a per-sample root-mean-square of differences, differentiated: a distance per sample (TL119)": ("""
        import torch
        def per_sample_rmse(pred, obs):
            return torch.sqrt(torch.mean((pred - obs) ** 2, dim=1))
        def train(model, x, y, opt):
            loss = per_sample_rmse(model(x), y).mean()
            loss.backward()
            opt.step()
        """, {("TL119", 4)}),
    "sqrt of a variance of a layer output": ("""
        import torch
        import torch.nn as nn
        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(8, 8)
            def forward(self, h):
                var = self.proj(h).var(dim=0)
                return torch.sqrt(var)
        """, {("TL105", 10)}),
    "a variance patched where it is exactly 0 is guarded; patched where another value is 0 is not": ("""
        import torch
        import torch.nn as nn
        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(8, 8)
            def forward(self, h):
                var = self.proj(h).var(dim=0)
                zero = (var == 0).float()
                other = (h.sum() == 0).float()
                guarded = torch.sqrt(var + zero * 1e-16)
                return guarded, torch.sqrt(var + other * 1e-16)
        """, {("TL105", 13)}),
    "power one half of the variance of an embedding": ("""
        import torch
        class Spread(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = torch.nn.Embedding(100, 16)
            def forward(self, i):
                return self.embed(i).var(dim=0) ** 0.5
        """, {("TL105", 8)}),
    "sqrt of a clamp at zero of a parameter expression": ("""
        import torch
        class Scale(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.raw = torch.nn.Parameter(torch.zeros(4))
            def forward(self, x):
                return x * self.raw.clamp(min=0).sqrt()
        """, {("TL105", 8)}),
    "the root of a one-pass variance, E[x^2] - E[x]^2, in a layer and from running sums": ("""
        import numpy as np
        import torch
        class Norm(torch.nn.Module):
            def forward(self, x):
                mean = x.mean(dim=-1, keepdim=True)
                var = x.pow(2).mean(dim=-1, keepdim=True) - mean.pow(2)
                return (x - mean) / torch.sqrt(var + 1e-5)
        def stats(sum_sq, total, count):
            return np.sqrt(sum_sq / count - np.multiply(total / count, total / count))
        def spread(values):
            return ((values ** 2).mean() - values.mean() ** 2) ** 0.5
        """, {("TL105", 8), ("TL105", 10), ("TL105", 12)}),
    "clean: variances that subtract the mean first, or are clamped at 0, or differ in what they average": ("""
        import numpy as np
        import torch
        def stds(x, y, sum_sq, total, count):
            mean = x.mean(dim=-1, keepdim=True)
            a = torch.sqrt((x - mean).pow(2).mean(dim=-1) + 1e-5)
            b = torch.sqrt((x.pow(2).mean(dim=-1, keepdim=True) - mean.pow(2)).clamp(min=0) + 1e-5)
            c = x.var(dim=-1).sqrt()
            d = np.sqrt(np.maximum(sum_sq / count - (total / count) ** 2, 0.0))
            e = torch.sqrt(y.pow(2).mean() - x.mean() ** 2)
            return a, b, c, d, e
        """, set()),
    "the root of a spread in the backward; clean: the same root only printed through .item()": ("""
        import torch
        class Spread(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = torch.nn.Embedding(100, 16)
            def step(self, i):
                spread = self.embed(i).var()
                std = spread.sqrt()
                std.backward()
                print("std", spread.sqrt().item(), [v for v in spread.sqrt().tolist()])
        """, {("TL105", 9)}),
    "clean: the same sqrt with no gradient (no_grad, numpy, .item(), unknown inputs)": ("""
        import numpy as np
        import torch
        class Siamese(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = torch.nn.Embedding(100, 16)
            @torch.no_grad()
            def distance(self, i, j):
                a, b = self.embed(i), self.embed(j)
                return ((a - b) ** 2).sum(-1) ** 0.5
            def report(self, i, j):
                with torch.inference_mode():
                    d = torch.sqrt(((self.embed(i) - self.embed(j)) ** 2).sum(-1))
                var = self.embed(i).var().item()
                return d, np.sqrt(var), np.sqrt(np.var(np.asarray([1.0, 2.0])))
        def rms(pred):
            return torch.sqrt((pred ** 2).mean())
        """, set()),
    "clean: eps inside sqrt; unknown values; checked value; where-masked": ("""
        import torch
        def f(a, b, var):
            d = ((a - b) ** 2).sum(-1)
            x = torch.sqrt(d + 1e-12)
            y = torch.sqrt(var) + (a ** 2 + b ** 2) ** 0.5
            z = torch.where(d > 0, torch.sqrt(d), torch.zeros_like(d))
            return x, y, z
        """, set()),
    # --- TL119 hand-written-norm ---------------------------------------------------------------
    "a root-mean-square over every element is a loss or a metric; a per-row distance of a model output is not": ("""
        import torch
        class Regressor:
            def __init__(self, model):
                self.model = model
            @torch.no_grad()
            def predict(self, x):
                return self.model(x) * 2.0
            def rmse(self, x, y):
                return torch.sqrt(((self.predict(x) - y) ** 2).mean()).item()
            def rmse_loss(self, x, y):
                return torch.sqrt(torch.mean((self.model(x) - y) ** 2)) + ((self.model(x) - y) ** 2).mean().sqrt()
            def spread(self, x, y):
                return torch.sqrt(((self.model(x) - y) ** 2).sum(dim=-1))
        """, {("TL119", 14)}),
    "pairwise distances from a Gram matrix, |a|^2 - 2ab + |b|^2, under sqrt (batch-hard triplet loss)": ("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        net = nn.Linear(8, 4)
        def pairwise(emb):
            dot = emb @ emb.t()
            sq = dot.diagonal()
            return (sq.unsqueeze(0) - 2.0 * dot + sq.unsqueeze(1)).sqrt()
        def guarded(emb):
            g = torch.mm(emb, emb.t())
            sq = torch.diagonal(g)
            return torch.sqrt(sq[:, None] + sq[None, :] - 2 * g + 1e-12)
        def loss(x, y):
            emb = F.normalize(net(x), dim=-1)
            return pairwise(emb).mean() + guarded(emb).mean()
        """, {("TL119", 9)}),
    "power one half of a sum of squared differences of embeddings": ("""
        import torch
        class Siamese(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = torch.nn.Embedding(100, 16)
            def forward(self, i, j):
                a, b = self.embed(i), self.embed(j)
                return ((a - b) ** 2).sum(-1) ** 0.5
        """, {("TL119", 9)}),
    "distance helpers of unknown tensors: sum, square method, pow, added coordinates; not an rmse": ("""
        import torch
        from torch import sqrt
        def pair_distance(a, b):
            return torch.sqrt(torch.sum((a - b) ** 2, dim=1))
        def rmse(pred, target):
            d = pred - target
            return (d * d).mean().sqrt()
        def edge_length(x1, y1, x2, y2):
            dx, dy = x2 - x1, y2 - y1
            return sqrt(dx.square() + dy.square())
        def spread(p, q):
            return torch.sqrt((p - q).pow(2).sum(-1, keepdim=True) * 0.5)
        """, {("TL119", 5), ("TL119", 11), ("TL119", 13)}),  # rmse (line 8): 0 only where every element is exact
    "division by a hand-written distance": ("""
        import torch
        def direction(p, q):
            n = torch.sqrt(((q - p) ** 2).sum(-1, keepdim=True))
            return (q - p) / n
        """, {("TL119", 4), ("TL106", 5)}),
    "clean: guarded, no grad, numpy, vector_norm, centred, not differences, features": ("""
        import math
        import numpy as np
        import torch
        import torch.nn as nn
        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.mlp = nn.Linear(7, 16)
            def forward(self, pos_i, pos_j):
                diff = pos_j - pos_i
                dist = torch.sqrt((diff * diff).sum(1, keepdim=True))
                return self.mlp(torch.cat([pos_i, pos_j, dist], dim=1))
        def f(a, b, x, y):
            guarded = torch.sqrt(((a - b) ** 2).sum(-1) + 1e-8)
            clamped = torch.sqrt(((a - b) ** 2).sum(-1).clamp(min=1e-12))
            norm = torch.linalg.vector_norm(a - b, dim=-1)
            std = torch.sqrt(((x - x.mean()) ** 2).mean())
            length = torch.sqrt((x ** 2).sum(-1))
            power = (((a - b) ** 2).sum(-1)) ** 0.5
            with torch.no_grad():
                metric = torch.sqrt(((a - b) ** 2).sum(-1))
            return guarded, clamped, norm, std, length, power, metric
        def numeric(a, b, x1, x2):
            return np.sqrt(((a - b) ** 2).sum(axis=1)), math.sqrt((x2 - x1) ** 2), (x2 - x1).detach().pow(2).sqrt()
        """, set()),
    "clean: a distance of unknown points fed to a layer of the file, and the unit vector along it": ("""
        import torch
        import torch.nn as nn
        class Basis(nn.Module):
            def forward(self, d):
                return torch.exp(-d)
        class Interaction(nn.Module):
            def __init__(self):
                super().__init__()
                self.basis = Basis()
            def forward(self, pos, i, j):
                dist = (pos[i] - pos[j]).pow(2).sum(dim=-1).sqrt()
                unit = (pos[i] - pos[j]) / dist.view(-1, 1)
                return self.basis(dist), unit
        """, set()),
    "clean: a distance of grid coordinates only compared (a mask); reported once it is also used": ("""
        import torch
        def ring(cx, cy, r, size):
            yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
            dx, dy = xx - cx, yy - cy
            d = (dx ** 2 + dy ** 2).sqrt()
            return (d < r * 1.1) & (d > r * 0.6)
        def falloff(px, py, qx, qy):
            d = ((px - qx) ** 2 + (py - qy) ** 2).sqrt()
            return (d < 1.0) * d
        """, {("TL119", 9)}),
    "a distance of embeddings fed to a layer is still reported; so is the division by it": ("""
        import torch
        import torch.nn as nn
        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(10, 4)
                self.out = nn.Linear(1, 1)
            def forward(self, i, j):
                d = self.embed(i) - self.embed(j)
                dist = torch.sqrt((d * d).sum(-1, keepdim=True))
                return self.out(dist), d / dist
        """, {("TL119", 11), ("TL106", 12)}),
    # --- TL123 unclamped-acos ---------------------------------------------------------------
    "acos of a cosine similarity, written out, by F.cosine_similarity and by a matrix product": ("""
        import torch
        import torch.nn.functional as F
        def angular_error(pred, gt):
            pred = F.normalize(pred, dim=1)
            gt = F.normalize(gt, dim=1)
            cos = (pred * gt).sum(dim=1)
            return torch.acos(cos)
        def angles(a, b):
            return torch.acos(F.cosine_similarity(a, b, dim=-1))
        def all_angles(a, b):
            a, b = F.normalize(a, dim=-1), F.normalize(b, dim=-1)
            return (a @ b.T).arccos()
        """, {("TL123", 8), ("TL123", 10), ("TL123", 13)}),
    "clean: the cosine clamped inside (-1, 1), and acos of a value not known to be a cosine": ("""
        import torch
        import torch.nn.functional as F
        def angles(a, b, eps=1e-7):
            cos = F.cosine_similarity(a, b, dim=-1).clamp(-1 + eps, 1 - eps)
            return torch.acos(cos)
        def phase(c):
            return torch.acos(c)
        """, set()),
    # --- TL106 unguarded-division ---------------------------------------------------------
    "a direction towards a random point is never 0; between two points of unknown origin it can be": ("""
        import torch
        def rays(origins, n):
            target = 0.3 * torch.randn(n, 3)
            dirs = target - origins
            return dirs / dirs.norm(dim=-1, keepdim=True)
        def pull(a, b):
            d = a - b
            return d / d.norm(dim=-1, keepdim=True)
        """, {("TL106", 9)}),
    "a quotient clamped, then its NaN (0 / 0) replaced; the same quotient used plainly": ("""
        import torch
        def edge_norm(samples, num_edges, edge_idx, node_count, row):
            edge_count = torch.zeros(num_edges)
            for edges in samples:
                edge_count[edges] += 1
            t = torch.empty_like(edge_count).scatter_(0, edge_idx, node_count[row])
            norm = (t / edge_count).clamp_(0, 1e4)
            norm[torch.isnan(norm)] = 0.1
            return norm, t / edge_count
        """, {("TL106", 10)}),
    "a per-class IoU whose NaN for absent classes is expected (nanmean); the same division used plainly": ("""
        import torch
        def miou(pred, mask, num_classes):
            inter = torch.zeros(num_classes)
            union = torch.zeros(num_classes)
            for c in range(num_classes):
                p, t = pred == c, mask == c
                inter[c] += (p & t).sum()
                union[c] += (p | t).sum()
            iou = inter / union
            return torch.nanmean(iou).item(), iou.tolist()
        def mean_iou(pred, mask, num_classes):
            inter = torch.zeros(num_classes)
            union = torch.zeros(num_classes)
            for c in range(num_classes):
                p, t = pred == c, mask == c
                inter[c] += (p & t).sum()
                union[c] += (p | t).sum()
            return (inter / union).mean()
        """, {("TL106", 19)}),
    "clean: a metric over a whole evaluation set divides by a running total of counts": ("""
        import torch
        @torch.no_grad()
        def token_accuracy(model, loader):
            correct, count = 0, 0
            for ids, tags in loader:
                valid = tags != -100
                correct += (model(ids).argmax(-1)[valid] == tags[valid]).sum().item()
                count += valid.sum().item()
            return correct / count
        def train_epoch(model, loader, pad):
            total, n_tok = 0.0, 0
            for src, tgt in loader:
                k = (tgt != pad).sum().item()
                total, n_tok = total + model(src).item() * k, n_tok + k
            return total / n_tok
        """, set()),
    "a dict entry counted up before the division is not its literal 0; divided before, it is": ("""
        import torch
        def epoch(xs):
            stats = {"loss": 0.0, "n": 0}
            early = torch.tensor(stats["loss"]) / stats["n"]
            for x in xs:
                stats["loss"] += float(x)
                stats["n"] += 1
            return {k: v / stats["n"] for k, v in stats.items() if k != "n"}, early
        """, {("TL106", 5)}),
    "bincount padded with minlength as a divisor; without it, a bin is 0 only for a missing value": ("""
        import torch
        def pool(x, batch, labels, classes):
            per_graph = torch.bincount(batch)
            mean = x.sum(0) / per_graph
            weights = 1.0 / torch.bincount(labels, minlength=classes)
            inverse = per_graph.max() / per_graph
            return mean, weights, inverse
        """, {("TL106", 6)}),
    "a padding mask's count over the whole batch is not routinely 0; a class mask's count is": ("""
        import torch
        def masked_mean(frame, lens, labels):
            mask = (torch.arange(frame.shape[1])[None] < lens[:, None]).float()
            overall = (frame * mask).sum() / mask.sum()
            hits = (labels == 3).float()
            per_class = (frame.mean(1) * hits).sum() / hits.sum()
            return overall, per_class
        """, {("TL106", 7)}),
    "the tokens up to the first end-of-sequence mark are never none; tokens after it can be": ("""
        import torch
        def masked_nll(nll, target, eos):
            upto = torch.cumsum((target == eos).long(), dim=1) <= 1
            after = torch.cumsum((target == eos).long(), dim=1) > 1
            kept = (nll * upto.float()).sum() / upto.sum()
            dropped = (nll * after.float()).sum() / after.sum()
            return kept, dropped
        """, {("TL106", 7)}),
    "clean: a bincount indexed by the values it counted is at least 1": ("""
        import numpy as np
        import torch
        def weights(users, n_users):
            counts = np.bincount(users, minlength=n_users)
            return torch.from_numpy(1.0 / np.sqrt(counts[users]))
        """, set()),
    "division by the norm of a difference": ("""
        import torch
        def f(x, y):
            d = x - y
            return d / d.norm(dim=-1, keepdim=True)
        """, {("TL106", 5)}),
    "clean: division by the norm of an unknown embedding": ("""
        import torch
        def f(x):
            return x / x.norm(dim=-1, keepdim=True)
        """, set()),
    "in-place division of an activation by its std": ("""
        import torch
        import torch.nn as nn
        proj = nn.Linear(4, 4)
        def f(x):
            h = proj(x)
            h /= torch.std(h)
            return h
        """, {("TL106", 7)}),
    "division of data by its std: data varies in practice": ("""
        import torch
        def f(x):
            x /= torch.std(x)
            return x
        """, set()),
    "division of a ReLU output by its std": ("""
        import torch
        def f(x):
            h = torch.relu(x)
            return h / h.std()
        """, {("TL106", 5)}),
    "numpy division by a literal array containing zero": ("""
        import numpy as np
        data = np.array([1.0, 2.0, 0.0])
        scaled = 1.0 / data
        """, {("TL106", 4)}),
    "division by a masked count": ("""
        import torch
        def f(loss, mask):
            n = (mask > 0).sum()
            return (loss * mask).sum() / n
        """, {("TL106", 5)}),
    "torch.div by a range": ("""
        import torch
        def f(x):
            return torch.div(x - x.min(), x.max() - x.min())
        """, {("TL106", 4)}),
    "clean: eps, clamp, where-masked, python counters": ("""
        import numpy as np
        import torch
        class Meter:
            def __init__(self):
                self.total = 0.0
                self.count = 0
            def mean(self):
                return self.total / self.count
        def f(x, counts):
            a = x / (x.norm(dim=-1, keepdim=True) + 1e-8)
            b = x / x.std().clamp_min(1e-6)
            c = np.where(counts == 0, 0.0, 1.0 / counts)
            d = x / x.sum()
            return a, b, c, d
        """, set()),
    # --- TL107 half-precision-softmax ------------------------------------------------------
    "softmax of a half model's output": ("""
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 8)
            def forward(self, x):
                return self.fc(x)
        model = Net().half()
        def f(x):
            return torch.softmax(model(x), dim=-1)
        """, {("TL107", 12)}),
    "exp of .to(float16)": ("""
        import torch
        def f(x):
            y = x.to(torch.float16)
            return y.exp()
        """, {("TL107", 5)}),
    "softmax under cuda amp autocast of a matmul": ("""
        import torch
        def f(q, k):
            with torch.cuda.amp.autocast():
                return torch.softmax(q @ k.T, dim=-1)
        """, {("TL107", 5)}),
    "softmax in a function decorated with float16 autocast": ("""
        import torch
        @torch.autocast(device_type="cuda", dtype=torch.float16)
        def f(q, k):
            return torch.matmul(q, k).softmax(-1)
        """, {("TL107", 5)}),
    "clean: bfloat16, cpu autocast, disabled autocast, upcast dtype": ("""
        import torch
        def f(q, k):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                a = torch.softmax(q @ k.T, dim=-1)
            with torch.autocast("cpu"):
                b = torch.softmax(q @ k.T, dim=-1)
            with torch.autocast("cuda", enabled=False):
                c = torch.softmax(q @ k.T, dim=-1)
            d = torch.softmax(q.half() @ k.half().T, dim=-1, dtype=torch.float32)
            return a, b, c, d
        """, set()),
    # --- TL121 fill-overflows-float16 -----------------------------------------------------------
    "mask fill beyond float16 in a module trained with fp16 autocast in the same file": ("""
        import torch
        class Scores(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.q = torch.nn.Linear(8, 8)
            def forward(self, x, mask):
                energy = torch.matmul(self.q(x), x.transpose(1, 2)) / 3.0
                energy = energy.masked_fill(mask == 0, -1e10)
                return energy.softmax(-1)
        def step(model, x, mask):
            with torch.cuda.amp.autocast():
                return model(x, mask)
        def half_step(x, w):
            with torch.autocast("cuda", dtype=torch.float16):
                s = x @ w
                s.masked_fill_(s < 0, float("-1e20"))
                return s
        """, {("TL121", 9), ("TL121", 17)}),
    "clean: fills that fit float16, bfloat16 autocast, no float16 anywhere, -inf, masks": ("""
        import torch
        def fits(x, w, mask):
            with torch.autocast("cuda", dtype=torch.float16):
                s = (x @ w).masked_fill(mask, -1e4)
                t = (x @ w).masked_fill(mask, torch.finfo(torch.float16).min)
                u = (x @ w).masked_fill(mask, float("-inf"))
                return s, t, u
        """, set()),
    "torch.where with a constant beyond float16 under fp16 autocast (lerobot#710), either side": ("""
        import torch
        def attend(q, k, mask):
            with torch.autocast("cuda", dtype=torch.float16):
                big_neg = -2.3819763e38
                s = torch.where(mask, q @ k.T, big_neg)
                t = torch.where(mask, -1e9, q @ k.T)
                u = torch.where(mask, q @ k.T, -1e4)
                return s.softmax(-1), t.softmax(-1), u.softmax(-1)
        """, {("TL121", 6), ("TL121", 7)}),
    "clean: bfloat16 autocast": ("""
        import torch
        def brain_float(x, w, mask):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                return (x @ w).masked_fill(mask, -1e9)
        """, set()),
    "clean: float32 code with a large fill, and a large fill of a mask": ("""
        import torch
        def attend(q, k, mask):
            scores = q @ k.transpose(-2, -1)
            bias = mask.float().masked_fill(mask, -1e9)
            return scores.masked_fill(mask, -1e9).softmax(-1) + bias
        """, set()),
    "in-place layer after a layer whose backward reads its output, in a Sequential": ("""
        import torch.nn as nn
        head = nn.Sequential(
            nn.Linear(8, 8),
            nn.ReLU(),
            nn.Dropout(0.5, inplace=True),
            nn.Sigmoid(),
            nn.ReLU(True),
        )
        """, {("TL203", 6), ("TL203", 8)}),
    "residual += on the output of a Sequential that ends in a ReLU (pytorch#5687)": ("""
        import torch.nn as nn
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.left = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(inplace=True))
                self.plain = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8))
            def forward(self, x):
                out = self.left(x)
                out += x
                other = self.plain(x)
                other += x
                return out + other
        """, {("TL203", 10)}),
    "in-place multiply of a product, whose backward reads it (prod, cumprod) in forward": ("""
        import torch
        class Jastrow(torch.nn.Module):
            def forward(self, x, sign):
                p = x.prod(-1)
                p *= sign
                c = torch.cumprod(x, dim=1)
                c /= 2
                q = x.prod(-1) * sign
                return p + c.sum(1) + q
        """, {("TL203", 6), ("TL203", 8)}),
    "a module writes into its input after the caller gave it to a layer": ("""
        import torch
        import torch.nn as nn
        class Shuffle(nn.Module):
            def forward(self, x):
                h = x.size(2) // 2
                out = x
                out[:, :, :h] = x[:, :, h:].flip(2)
                out[:, :, h:] = 0
                return out
        class Scale(nn.Module):
            def forward(self, x, w):
                x.mul_(w)
                return x
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(8, 8, 3, padding=1)
                self.shuffle = Shuffle()
                self.scale = Scale()
            def forward(self, x, w):
                return self.conv(x) + self.shuffle(x) + self.scale(x, w)
        """, {("TL203", 8), ("TL203", 13)}),
    "clean: writes into a copy, into a list, after an activation, or into a rebound name": ("""
        import torch
        import torch.nn as nn
        class Shuffle(nn.Module):
            def forward(self, x):
                h = x.size(2) // 2
                out = x.clone()
                out[:, :, :h] = 0
                return out
        class Heads(nn.Module):
            def forward(self, x):
                x[0] = x[0] * 2
                return x
        class Fill(nn.Module):
            def forward(self, x):
                x[:, 0] = 0
                return x
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(8, 8, 3, padding=1)
                self.act = nn.ReLU()
                self.shuffle, self.heads, self.fill = Shuffle(), Heads(), Fill()
            def forward(self, x, feats):
                a = self.conv(x) + self.shuffle(x)
                b = self.conv(feats[0]) + self.heads(feats)[0]
                return a + b
            def activated(self, x):
                y = self.act(x)
                return y + self.fill(x)
            def rebuilt(self, x):
                a = self.conv(x)
                x = torch.zeros_like(a)
                return self.fill(x)
        """, set()),
    "a sigmoid stored in a state dict by one method, logged by another": ("""
        import torch
        class Pointer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.gate = torch.nn.Linear(8, 1)
            def step(self, x, state):
                state["gate"] = torch.sigmoid(self.gate(x))
                state["hidden"] = x
                return state
            def mix(self, gate):
                return gate.log()
            def forward(self, x, state):
                state = self.step(x, state)
                return self.mix(state["gate"])
        """, {("TL102", 12)}),
    "clean: a stored sigmoid replaced by a clamped one, or by a key the code computes": ("""
        import torch
        class Pointer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.gate = torch.nn.Linear(8, 1)
            def step(self, x, state, name):
                state["gate"] = torch.sigmoid(self.gate(x))
                state["gate"] = state["gate"].clamp(min=1e-6)
                return state
            def other(self, x, state, name):
                state["gate"] = torch.sigmoid(self.gate(x))
                state[name] = x
                return state
            def mix(self, gate):
                return gate.log()
            def blend(self, gate):
                return gate.log()
            def forward(self, x, state, name):
                return self.mix(self.step(x, state, name)["gate"]) + self.blend(self.other(x, state, name)["gate"])
        """, set()),
    "in-place op in a helper whose input carries a parameter's gradient history": ("""
        import torch
        class Pade(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = torch.nn.Parameter(torch.ones(1))
            def kernel(self, r):
                return r / (1.0 + self.weight * r)
            def mixed(self, k, sign):
                x = k.prod(-1)
                x *= sign
                return x
            def energy(self, r, sign):
                return self.mixed(self.kernel(r), sign)
        """, {("TL203", 11)}),
    "clean: the same helper fed detached values, numpy arrays, or called under no_grad": ("""
        import numpy as np
        import torch
        class Pade(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = torch.nn.Parameter(torch.ones(1))
            def kernel(self, r):
                return r / (1.0 + self.weight * r)
            def mixed(self, k, sign):
                x = k.prod(-1)
                x *= sign
                return x
            def report(self, r, sign):
                return self.mixed(self.kernel(r).detach(), sign)
            def table(self, r, sign):
                return self.mixed(np.exp(r), sign)
        def stats(model, r, sign):
            with torch.no_grad():
                return model.mixed(model.kernel(r), sign)
        """, set()),
    "clean: in-place ReLU after BatchNorm, out-of-place Dropout after ReLU, in a Sequential": ("""
        import torch.nn as nn
        block = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
        head = nn.Sequential(nn.Linear(8, 8), nn.ReLU(inplace=True), nn.Dropout(0.5), nn.Linear(8, 2))
        """, set()),
    # --- TL108 unstable-exp ------------------------------------------------------------------
    "exp of a linear layer output, scaled": ("""
        import torch
        import torch.nn as nn
        head = nn.Linear(4, 4)
        def f(x, temperature):
            return torch.exp(head(x) / temperature)
        """, {("TL108", 6)}, ["TL108"]),
    "exp of an einsum": ("""
        import torch
        def f(q, k):
            return torch.einsum("bd,cd->bc", q, k).exp()
        """, {("TL108", 4)}, ["TL108"]),
    "clean: exp of shifted logits, of a parameter, of unknown": ("""
        import torch
        import torch.nn as nn
        head = nn.Linear(4, 4)
        log_std = nn.Parameter(torch.zeros(4))
        def f(x, y):
            z = head(x)
            return torch.exp(z - z.max(dim=-1, keepdim=True).values), torch.exp(log_std), torch.exp(y)
        """, set(), ["TL108"]),
    # --- TL109 large-init ---------------------------------------------------------------------
    "nn.init.uniform_ with a large bound": ("""
        import torch.nn as nn
        layer = nn.Linear(4, 4)
        nn.init.uniform_(layer.weight, -5.0, 5.0)
        """, {("TL109", 4)}),
    "fill_ on a weight through .data": ("""
        import torch.nn as nn
        layer = nn.Linear(4, 4)
        layer.weight.data.fill_(10.0)
        """, {("TL109", 4)}),
    "clean: a large constant bias (a focal-loss prior) is added, not multiplied": ("""
        import torch.nn as nn
        head = nn.Conv2d(64, 1, 1)
        nn.init.constant_(head.bias, -2.19)
        head.bias.data.fill_(-4.6)
        """, set()),
    "normal_ over named_parameters": ("""
        import torch.nn as nn
        model = nn.Linear(4, 4)
        for name, p in model.named_parameters():
            p.data.normal_(0, 1.5)
        """, {("TL109", 5)}),
    "clean: small init, forget-gate bias 1, data tensors": ("""
        import torch
        import torch.nn as nn
        layer = nn.Linear(4, 4)
        nn.init.uniform_(layer.weight, -0.1, 0.1)
        with torch.no_grad():
            layer.bias.fill_(1.0)
        noise = torch.empty(10).uniform_(-5, 5)
        nn.init.normal_(layer.weight, std=0.02)
        """, set()),
    # --- TL110 risky-optimizer-config ---------------------------------------------------------
    "adamw with eps=0": ("""
        import torch
        from torch.optim import AdamW
        model = torch.nn.Linear(2, 2)
        opt = AdamW(model.parameters(), lr=1e-3, eps=0.0)
        """, {("TL110", 5)}),
    "adamw default eps on a model loaded in float16 (one path of a dtype choice), filtered params": ("""
        import torch
        from transformers import AutoModelForCausalLM
        def build(path, bf16=False):
            dtype = torch.bfloat16 if bf16 else torch.float16
            model = AutoModelForCausalLM.from_pretrained(path, torch_dtype=dtype).to("cuda")
            return torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
        """, {("TL110", 7)}),
    "clean: bfloat16 model, float16 model with eps 1e-4, a float16 model wrapped by peft": ("""
        import torch
        from peft import get_peft_model
        from transformers import AutoModelForCausalLM
        def build(path, config):
            a = AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.bfloat16)
            b = AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float16)
            c = get_peft_model(AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float16), config)
            return (torch.optim.AdamW(a.parameters()), torch.optim.AdamW(b.parameters(), eps=1e-4),
                    torch.optim.AdamW(c.parameters()))
        """, set()),
    "hf trainer subclass: float16 model and the default adam_epsilon": ("""
        import torch
        from transformers import AutoModel, Trainer, TrainingArguments
        class RewardTrainer(Trainer):
            def __init__(self, path, data, bf16=False):
                args = TrainingArguments(
                    output_dir="out", bf16=bf16,
                )
                self.dtype = torch.bfloat16 if bf16 else torch.float16
                self.base = AutoModel.from_pretrained(path, torch_dtype=self.dtype)
                super().__init__(model=self.base, args=args, train_dataset=data)
        def plain(path, data):
            model = AutoModel.from_pretrained(path, torch_dtype=torch.float16)
            return Trainer(model=model, args=TrainingArguments(output_dir="o"), train_dataset=data)
        def fixed(path, data):
            model = AutoModel.from_pretrained(path, torch_dtype=torch.float16)
            return Trainer(model=model, args=TrainingArguments(output_dir="o", adam_epsilon=1e-4))
        def other_optimizer(path, data):
            model = AutoModel.from_pretrained(path, torch_dtype=torch.float16)
            return Trainer(model=model, args=TrainingArguments(output_dir="o", optim="adafactor"))
        def float32_model(path, data):
            model = AutoModel.from_pretrained(path)
            return Trainer(model=model, args=TrainingArguments(output_dir="o"))
        """, {("TL110", 6), ("TL110", 14)}),
    "lightning 16-true with the module's default Adam eps; 16-mixed and eps=1e-4 are fine": ("""
        import lightning as L
        import torch
        class Net(L.LightningModule):
            def configure_optimizers(self):
                return torch.optim.Adam(self.parameters(), lr=1e-3)
        class Tuned(L.LightningModule):
            def configure_optimizers(self):
                return torch.optim.Adam(self.parameters(), lr=1e-3, eps=1e-4)
        def main(data):
            trainer = L.Trainer(precision="16-true", max_epochs=3)
            trainer.fit(Net(), data)
        def mixed(data):
            L.Trainer(precision="16-mixed").fit(Net(), data)
        def tuned(data):
            trainer = L.Trainer(precision="16-true")
            trainer.fit(Tuned(), data)
        """, {("TL110", 11)}),
    "sgd with a huge lr (opt-in TL120)": ("""
        import torch
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=50)
        """, {("TL120", 4)}, ["TL120"]),
    "clean by default: the same lr without the opt-in rule": ("""
        import torch
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=50)
        """, set()),
    "clean: usual settings": ("""
        import torch
        model = torch.nn.Linear(2, 2)
        a = torch.optim.Adam(model.parameters(), lr=3e-4, eps=1e-8)
        b = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        c = torch.optim.Adam(model.parameters(), lr=0.01)
        """, set()),
    # --- TL111 softmax-before-cross-entropy ---------------------------------------------------
    "CrossEntropyLoss on a model ending in softmax": ("""
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 3)
            def forward(self, x):
                return torch.softmax(self.fc(x), dim=1)
        model = Net()
        criterion = nn.CrossEntropyLoss()
        def step(x, y):
            return criterion(model(x), y)
        """, {("TL111", 13)}),
    "cross_entropy on log_softmax": ("""
        import torch.nn.functional as F
        def f(x, y):
            return F.cross_entropy(F.log_softmax(x, dim=1), y)
        """, {("TL111", 4)}),
    "kl_div given probabilities as its input (the distillation arguments swapped)": ("""
        import torch.nn as nn
        import torch.nn.functional as F
        def distill(student_logits, teacher_logits, T=4.0):
            return F.kl_div(F.softmax(student_logits / T, dim=1), F.log_softmax(teacher_logits / T, dim=1),
                            reduction="batchmean")
        def distill_module(s, t):
            return nn.KLDivLoss(reduction="batchmean")(F.softmax(s, dim=-1), F.softmax(t, dim=-1))
        """, {("TL111", 5), ("TL111", 8)}),
    "clean: kl_div of log-probabilities, with a log target": ("""
        import torch.nn.functional as F
        def distill(s, t, T=4.0):
            return F.kl_div(F.log_softmax(s / T, dim=1), F.log_softmax(t / T, dim=1), reduction="batchmean",
                            log_target=True)
        """, set()),
    "clean: cross_entropy on logits, nll on log_softmax": ("""
        import torch.nn.functional as F
        def f(x, y):
            return F.cross_entropy(x, y) + F.nll_loss(F.log_softmax(x, dim=1), y)
        """, set()),
    "BCEWithLogitsLoss on a Sequential ending in Sigmoid, stored on self": ("""
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Sequential(nn.Linear(8, 4), nn.Sigmoid())
                self.bce = nn.BCEWithLogitsLoss()
            def forward(self, x, y):
                pred = self.fc(x)
                return self.bce(pred, y)
        """, {("TL111", 10)}),
    "binary_cross_entropy_with_logits on a sigmoid; clean on the logits": ("""
        import torch
        import torch.nn.functional as F
        def f(z, y):
            a = F.binary_cross_entropy_with_logits(torch.sigmoid(z), y)
            b = F.binary_cross_entropy_with_logits(z, y)
            return a + b
        """, {("TL111", 5)}),
    "nll_loss on a sigmoid": ("""
        import torch
        import torch.nn.functional as F
        def f(z, y):
            return F.nll_loss(torch.sigmoid(z), y)
        """, {("TL111", 5)}),
    # --- TL124 positive-infinity-mask -------------------------------------------------------
    "a causal mask filled with -float('-inf'), which is +inf, under a flag, before softmax": ("""
        import torch
        def attend(q, k, mask, causal):
            dots = torch.einsum("bhid,bhjd->bhij", q, k)
            if causal:
                dots.masked_fill_(mask, -float('-inf'))
            return dots.softmax(dim=-1)
        """, {("TL124", 6)}),
    "scores masked with float('inf') before torch.softmax": ("""
        import torch
        def attend(q, k, mask):
            scores = q @ k.transpose(-1, -2)
            scores = scores.masked_fill(mask, float("inf"))
            return torch.softmax(scores, dim=-1)
        """, {("TL124", 5)}),
    "clean: -inf masks before softmax, and +inf distances before min()": ("""
        import torch
        def attend(q, k, mask):
            scores = (q @ k.transpose(-1, -2)).masked_fill(mask, float("-inf"))
            return scores.softmax(dim=-1)
        def nearest(d, mask):
            d = d.masked_fill(mask, float("inf"))
            return d.min(dim=-1)
        """, set()),
    # --- TL115 hand-written-softmax ----------------------------------------------------------
    "clean: a Gaussian kernel, exp of a non-positive argument, normalised by its sum (SimCLR's blur)": ("""
        import numpy as np
        def kernel(r, sigma):
            x = np.arange(-r, r + 1)
            x = np.exp(-x ** 2 / (2 * sigma ** 2))
            return x / x.sum()
        """, set()),
    "clean: the same kernel with a width drawn from np.random.uniform(0.1, 2.0)": ("""
        import numpy as np
        def kernel(r):
            sigma = np.random.uniform(0.1, 2.0)
            x = np.arange(-r, r + 1)
            x = np.exp(-np.power(x, 2) / (2 * sigma * sigma))
            return x / x.sum()
        """, set()),
    "clean: a 2-D Gaussian kernel over a width of unknown size, 2 * std * std (latent-diffusion's BSRGAN)": ("""
        import numpy as np
        def fspecial_gaussian(size, std):
            x, y = np.meshgrid(np.arange(size), np.arange(size))
            arg = -(x * x + y * y) / (2 * std * std)
            h = np.exp(arg)
            return h / h.sum()
        """, set()),
    "exp of scores divided by a width, normalised by its sum": ("""
        import numpy as np
        def weights(scores, sigma):
            x = np.exp(scores / (2 * sigma ** 2))
            return x / x.sum()
        """, {("TL115", 4)}),
    "a zero buffer filled with exps of raw scores in a loop, then normalised": ("""
        import torch
        import torch.nn as nn
        fc = nn.Linear(8, 1)
        def pick(x, groups):
            scores = fc(x)
            probs = torch.zeros(len(groups))
            for i, idx in enumerate(groups):
                if idx:
                    probs[i] = torch.exp(torch.max(scores[idx]))
            probs /= torch.sum(probs)
            return probs
        def shifted(x, groups):
            scores = fc(x)
            probs = torch.zeros(len(groups))
            top = scores.max()
            for i, idx in enumerate(groups):
                probs[i] = torch.exp(torch.max(scores[idx]) - top)
            probs /= torch.sum(probs)
            return probs
        """, {("TL115", 11)}),
    "a masked exp divided by its own sum (attention pooling over padded tokens)": ("""
        import torch
        import torch.nn as nn
        class Pool(nn.Module):
            def __init__(self):
                super().__init__()
                self.score = nn.Linear(8, 1)
            def forward(self, h, mask):
                w = torch.exp(self.score(h)) * mask
                return w / w.sum(dim=1, keepdim=True)
        class Classifier(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(100, 8)
                self.pool = Pool()
            def forward(self, ids):
                return self.pool(self.embed(ids), (ids != 0).float())
        """, {("TL115", 9)}),
    "exp divided by its own sum": ("""
        import torch
        def weights(scores):
            e = scores.exp()
            return e / e.sum(dim=-1, keepdim=True)
        """, {("TL115", 4)}),
    "segment softmax through a helper and an index": ("""
        import torch
        def scatter_sum(src, index, n):
            return src.new_zeros((n,) + src.shape[1:]).index_add_(0, index, src)
        def softmax(src, index, n):
            out = torch.exp(src)
            total = scatter_sum(out, index, n)
            return out / (total[index] + 1e-16)
        """, {("TL115", 6)}),
    "clean: exp of a nonnegative map divided by its own max (at most 1), alone or plus an eps literal or setting": ("""
        import torch
        import torch.nn.functional as F
        class SoftDetection(torch.nn.Module):
            def __init__(self, eps=1e-8):
                super().__init__()
                self.eps = eps
            def forward(self, feats):
                feats = F.relu(feats)
                top = feats.view(feats.size(0), -1).max(dim=1)[0].view(-1, 1, 1, 1)
                a = torch.exp(feats / top)
                b = torch.exp(feats / (top + 1e-8))
                c = torch.exp(feats / (top + self.eps))
                return a / a.sum() + b / b.sum() + c / c.sum()
        """, set()),
    "a signed map over the max of its positive part, or over its max minus something, is not bounded": ("""
        import torch
        class SoftDetection(torch.nn.Module):
            def __init__(self, eps=1e-8):
                super().__init__()
                self.eps = eps
            def forward(self, feats):
                top = torch.relu(feats).amax()
                a = torch.exp(feats / (top + self.eps))
                b = torch.exp(torch.relu(feats) / (torch.relu(feats).amax() - 1.0))
                return a / a.sum(), b / b.sum()
        """, {("TL115", 9), ("TL115", 10)}),
    "clean: max-shifted exp, bounded scores, exp divided by something else": ("""
        import torch
        def a(scores):
            e = (scores - scores.max(dim=-1, keepdim=True).values).exp()
            return e / e.sum(dim=-1, keepdim=True)
        def b(x):
            e = torch.tanh(x).exp()
            return e / e.sum()
        def c(logvar, n):
            return logvar.exp() / n
        """, set()),
    # --- TL117 relu-on-logits -----------------------------------------------------------------
    "CrossEntropyLoss on a Sequential ending in ReLU": ("""
        import torch.nn as nn
        model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10), nn.ReLU())
        loss_fn = nn.CrossEntropyLoss()
        def step(x, y):
            return loss_fn(model(x), y)
        """, {("TL117", 6)}),
    "relu before binary_cross_entropy_with_logits": ("""
        import torch
        import torch.nn.functional as F
        def f(z, y):
            return F.binary_cross_entropy_with_logits(torch.relu(z), y)
        """, {("TL117", 5)}),
    "clean: ReLU inside the model, Linear at the end": ("""
        import torch.nn as nn
        model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
        loss_fn = nn.CrossEntropyLoss()
        def step(x, y):
            return loss_fn(model(x), y)
        """, set()),
    # --- TL118 logits-into-probability-loss ---------------------------------------------------
    "NLLLoss on a model whose forward ends in a Linear": ("""
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(1, 8, 3)
                self.fc = nn.Linear(8, 10)
            def forward(self, x):
                out = self.conv(x).mean((2, 3))
                return self.fc(out)
        model = Net()
        criterion = nn.NLLLoss()
        def step(x, y):
            return criterion(model(x), y)
        """, {("TL118", 14)}),
    "binary_cross_entropy on a Linear output": ("""
        import torch.nn as nn
        import torch.nn.functional as F
        head = nn.Linear(16, 1)
        def step(h, y):
            return F.binary_cross_entropy(head(h), y)
        """, {("TL118", 6)}),
    "clean: NLLLoss after log_softmax, BCELoss after sigmoid": ("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        head = nn.Linear(16, 10)
        def step(h, y, t):
            a = nn.NLLLoss()(F.log_softmax(head(h), dim=1), y)
            b = nn.BCELoss()(torch.sigmoid(head(h)), t)
            return a + b
        """, {("TL103", 8)}),
    # --- TL504 rng-shared-by-workers -------------------------------------------------------------
    "dataset draws from a generator made in __init__; loader with workers": ("""
        import numpy as np
        import torch
        from torch.utils.data import DataLoader, Dataset
        class Noisy(Dataset):
            def __init__(self, data, seed=0):
                self.data = data
                self.rng = np.random.default_rng(seed)
            def __len__(self):
                return len(self.data)
            def __getitem__(self, idx):
                return torch.as_tensor(self.data[idx] + self.rng.normal(0.0, 0.1))
        loader = DataLoader(Noisy(np.zeros(8)), batch_size=4, num_workers=4)
        """, {("TL504", 8)}),
    "torch.Generator passed as generator=, workers from the command line": ("""
        import torch
        from torch.utils.data import DataLoader, Dataset
        class Masked(Dataset):
            def __init__(self, tokens):
                self.tokens = tokens
                self.g = torch.Generator().manual_seed(1234)
            def __getitem__(self, idx):
                mask = torch.rand(self.tokens[idx].shape, generator=self.g) < 0.15
                return self.tokens[idx].masked_fill(mask, 0)
        def make_loader(tokens, args):
            return DataLoader(Masked(tokens), batch_size=32, num_workers=args.workers)
        """, {("TL504", 7)}),
    "transforms the dataset holds: their own generator, one passed in, one inside a Compose list": ("""
        import random
        import numpy as np
        from torch.utils.data import DataLoader, Dataset
        class Crop:
            def __init__(self, size, seed=0):
                self.size = size
                self.random = random.Random(seed)
            def __call__(self, image):
                top = self.random.randint(0, 8)
                return image[top:top + self.size]
        class Flip:
            def __init__(self, rng):
                self.rng = rng
            def __call__(self, image):
                return image[::-1] if self.rng.uniform() < 0.5 else image
        class Compose:
            def __init__(self, transforms):
                self.transforms = transforms
            def __call__(self, x):
                for t in self.transforms:
                    x = t(x)
                return x
        class Images(Dataset):
            def __init__(self, images):
                self.images = images
                self.crop = Crop(32)
                self.flip = Compose([Flip(np.random.RandomState(0))])
            def __getitem__(self, idx):
                return self.flip(self.crop(self.images[idx]))
        loader = DataLoader(Images([]), batch_size=4, num_workers=2, shuffle=True)
        """, {("TL504", 8), ("TL504", 28)}),
    "inherited generator set up through super().__init__; module-level generator; IterableDataset": ("""
        import numpy as np
        from torch.utils.data import DataLoader, IterableDataset
        RNG = np.random.default_rng(0)
        class Seeded:
            def __init__(self, seed=None):
                self.reseed(seed)
            def reseed(self, seed):
                self.generator = np.random.default_rng(seed)
        class Stream(IterableDataset, Seeded):
            def __init__(self, n, seed=0):
                super().__init__(seed=seed)
                self.n = n
            def sample(self):
                return self.generator.integers(0, 10)
            def __iter__(self):
                for _ in range(self.n):
                    yield self.sample(), RNG.random()
        loader = DataLoader(Stream(10), batch_size=4, num_workers=2)
        """, {("TL504", 4), ("TL504", 9)}),
    "one worker, not persistent: every epoch starts from the same copy": ("""
        import random
        from torch.utils.data import DataLoader, Dataset
        class Jitter(Dataset):
            def __init__(self, items):
                self.items = items
                self.random = random.Random(0)
            def __getitem__(self, idx):
                return self.items[idx] + self.random.random()
        loader = DataLoader(Jitter([1.0]), num_workers=1)
        """, {("TL504", 7)}),
    "generator remade in every worker from the clock in seconds; loader settings spread from a dict": ("""
        import time
        import numpy as np
        import torch
        from torch.utils.data import DataLoader, IterableDataset, get_worker_info
        class Masker:
            def __init__(self):
                self.rng = np.random.default_rng(int(time.time()))
            def reset(self):
                self.rng = np.random.default_rng(int(time.time()))
            def __call__(self, x):
                return x[self.rng.uniform(size=len(x)) < 0.5]
        class Stream(IterableDataset):
            def __init__(self, items):
                self.items, self.masker = items, Masker()
            def shard(self):
                info = get_worker_info()
                return self.items if info is None else self.items[info.id::info.num_workers]
            def __iter__(self):
                self.masker.reset()
                for item in self.shard():
                    g = torch.Generator().manual_seed(int(item.sum()))
                    yield self.masker(item + torch.rand(item.shape, generator=g))
        params = {"batch_size": None, "num_workers": 8}
        loader = DataLoader(Stream([]), **params)
        """, {("TL504", 10)}),
    "a generator of the item's own does not reseed the one the dataset holds": ("""
        import numpy as np
        import torch
        from torch.utils.data import DataLoader, Dataset
        class Noisy(Dataset):
            def __init__(self, data):
                self.data = data
                self.rng = np.random.default_rng(0)
            def __getitem__(self, idx):
                g = torch.Generator().manual_seed(idx)
                return self.data[idx] + self.rng.normal() + torch.rand(1, generator=g)
        loader = DataLoader(Noisy(np.zeros(8)), num_workers=4)
        """, {("TL504", 8)}),
    "clean: the clock divided by the worker id, a single worker, or settings the dict does not give": ("""
        import time
        import numpy as np
        from torch.utils.data import DataLoader, IterableDataset, get_worker_info
        class Stream(IterableDataset):
            def __init__(self, items):
                self.items = items
            def seed(self):
                info = get_worker_info()
                return int(time.time() / (info.id + 1 if info is not None else 1))
            def __iter__(self):
                rng = np.random.default_rng(self.seed())
                for item in self.items:
                    yield item * rng.random()
        class Clocked(Stream):
            def __iter__(self):
                rng = np.random.default_rng(int(time.time()))
                for item in self.items:
                    yield item * rng.random()
        DataLoader(Stream([]), num_workers=8)
        DataLoader(Clocked([]), num_workers=1)
        DataLoader(Clocked([]), **{"batch_size": 4})
        """, set()),
    "worker_init_fn reseeding with a seed every worker shares (through partial, through a local)": ("""
        import random
        from functools import partial
        import numpy as np
        import torch
        from torch.utils.data import DataLoader, TensorDataset
        def init_worker(worker_id, rank, seed):
            worker_seed = rank + seed
            random.seed(worker_seed)
            np.random.seed(worker_seed)
        def fixed(worker_id):
            torch.manual_seed(1234)
        ds = TensorDataset(torch.zeros(8))
        a = DataLoader(ds, num_workers=4, worker_init_fn=partial(init_worker, rank=0, seed=11))
        b = DataLoader(ds, num_workers=2, worker_init_fn=fixed)
        """, {("TL504", 10), ("TL504", 12)}),
    "clean: worker_init_fn seeded from the worker id, torch.initial_seed() or the worker info": ("""
        import random
        import numpy as np
        import torch
        from torch.utils.data import DataLoader, TensorDataset, get_worker_info
        def by_id(worker_id, base=7):
            np.random.seed(base + worker_id)
        def by_initial(worker_id):
            seed = torch.initial_seed() % 2**32
            np.random.seed(seed)
            random.seed(seed)
        def by_info(worker_id):
            np.random.seed(get_worker_info().seed % 2**32)
        def fixed(worker_id):
            np.random.seed(0)
        ds = TensorDataset(torch.zeros(8))
        DataLoader(ds, num_workers=4, worker_init_fn=by_id)
        DataLoader(ds, num_workers=4, worker_init_fn=by_initial)
        DataLoader(ds, num_workers=4, worker_init_fn=by_info)
        DataLoader(ds, num_workers=0, worker_init_fn=fixed)
        """, set()),
    "clean: no workers, worker_init_fn, one persistent worker, no DataLoader for it": ("""
        import numpy as np
        from torch.utils.data import DataLoader, Dataset, get_worker_info
        class Noisy(Dataset):
            def __init__(self, data):
                self.data = data
                self.rng = np.random.default_rng(0)
            def __getitem__(self, idx):
                return self.data[idx] + self.rng.normal()
        class Unused(Noisy):
            pass
        def reseed(worker_id):
            info = get_worker_info()
            info.dataset.rng = np.random.default_rng(info.seed)
        a = DataLoader(Noisy(np.zeros(8)), batch_size=4)
        b = DataLoader(Noisy(np.zeros(8)), batch_size=4, num_workers=0)
        c = DataLoader(Noisy(np.zeros(8)), batch_size=4, num_workers=4, worker_init_fn=reseed)
        d = DataLoader(Noisy(np.zeros(8)), batch_size=4, num_workers=1, persistent_workers=True)
        """, set()),
    "clean: generators made or reseeded per item, drawn only while building, worker seeds, a sampler's": ("""
        import random
        import numpy as np
        import torch
        from torch.utils.data import DataLoader, Dataset, Sampler
        class PerItem(Dataset):
            def __init__(self, data, seed=0):
                self.data, self.seed = data, seed
                self.split = np.random.default_rng(seed).permutation(len(data))
                self.fixed = random.Random(seed)
                self.crops = [self.fixed.randint(0, 10) for _ in data]
            def __getitem__(self, idx):
                rng = np.random.default_rng((self.seed, idx))
                return self.data[self.split[idx]] + rng.normal() + np.random.rand() + self.crops[idx]
        class Reseeded(Dataset):
            def __init__(self, data):
                self.data = data
                self.rng = np.random.RandomState(0)
            def __getitem__(self, idx):
                self.rng.seed(idx)
                return self.data[idx] * self.rng.rand()
        class Lazy(Dataset):
            def __init__(self, data):
                self.data, self.g = data, None
            def gen(self):
                if self.g is None:
                    self.g = torch.Generator().manual_seed(torch.initial_seed())
                return self.g
            def __getitem__(self, idx):
                return self.data[idx] * torch.rand(1, generator=self.gen())
        class Shuffler(Sampler):
            def __init__(self, n):
                self.n = n
                self.generator = torch.Generator().manual_seed(0)
            def __iter__(self):
                return iter(torch.randperm(self.n, generator=self.generator).tolist())
        data = np.zeros(10)
        DataLoader(PerItem(data), num_workers=4, sampler=Shuffler(10))
        DataLoader(Reseeded(data), num_workers=4)
        DataLoader(Lazy(data), num_workers=4)
        """, set()),
    # --- TL112 / TL113 / TL114 ------------------------------------------------------------------
    "log(x + 1), numpy": ("""
        import numpy as np
        def f(x):
            return np.log(x + 1)
        """, {("TL112", 4)}, ["TL112"]),
    "exp - 1 as a method": ("""
        import torch
        def f(x):
            return x.exp() - 1
        """, {("TL113", 4)}, ["TL113"]),
    "logsumexp through a variable": ("""
        import torch
        def f(x):
            total = torch.sum(torch.exp(x), dim=-1)
            return total.log()
        """, {("TL114", 5)}),
    "clean: integer-valued log(1 + n); a few literal-shaped uniform samples": ("""
        import torch
        def buckets(positions, width):
            return torch.log(1 + torch.floor(positions / width)), torch.rand(3, 3).log()
        """, set()),
    # --- TL703 load-pickles-on-old-torch (the supported versions come from the project) -----------
    "default torch.load in a project that supports PyTorch 1.8": ("""
        import torch
        def restore(model, path, out):
            model.load_state_dict(torch.load(path, map_location="cpu"))
            torch.save(model.state_dict(), out)
            return torch.load(out)
        """, {("TL703", 4)}, ["TL703"], {"project": {"torch-version": ">=1.8"}}),
    "clean: the same loads in a project that needs PyTorch 2.6, or with weights_only": ("""
        import torch
        def restore(model, path):
            model.load_state_dict(torch.load(path, map_location="cpu"))
        def explicit(path):
            return torch.load(path, weights_only=True)
        """, set(), ["TL703"], {"project": {"torch-version": ">=2.6"}}),
    "clean: log1p, expm1, logsumexp, log(2 + x), exp(x) - 2": ("""
        import torch
        def f(x):
            return torch.log1p(x), torch.expm1(x), torch.logsumexp(x, -1), torch.log(2 + x), torch.exp(x) - 2
        """, set()),
    "TL211 in-place ops on the views of split/chunk/unbind of a tensor that requires grad": ("""
        import math
        import torch
        import torch.nn as nn
        class Capsules(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 6)
            @staticmethod
            def transform(pose):
                scale, theta, shift = torch.split(pose, 2, -1)
                scale = torch.sigmoid(scale)
                scale *= 2
                theta *= 2. * math.pi
                return torch.cat([scale, theta, shift], -1)
            def forward(self, x):
                h = self.fc(x)
                parts = h.chunk(3, dim=-1)
                parts[0].clamp_(min=0)
                for row in h.unbind(0):
                    row[0] = 1.0
                return self.transform(h) + parts[1].sum()
        """, {("TL211", 14), ("TL211", 19), ("TL211", 21)}),
    "TL211 passing: rebound, out of place, cloned, under no_grad, or of data that needs no grad": ("""
        import torch
        import torch.nn as nn
        class Boxes(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 6)
            def forward(self, x, boxes):
                h = self.fc(x)
                a, b, c = h.chunk(3, dim=-1)
                b = b * 2
                c = c.clone()
                c.clamp_(min=0)
                with torch.no_grad():
                    d, e = h.detach().chunk(2, -1)
                    e.mul_(2)
                x1, y1, x2, y2 = torch.ones(8, 4).unbind(-1)
                x1 *= 4
                return a + b + c
        """, set()),
    "TL314 dropout that model.eval() does not reach: F.dropout without training=, a Dropout built in forward": ("""
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.nn.functional import dropout
        class Net(nn.Module):
            def __init__(self, p=0.3):
                super().__init__()
                self.fc = nn.Linear(8, 8)
                self.p = p
            def head(self, x):
                return dropout(x, self.p)
            def forward(self, x):
                x = F.dropout(self.fc(x), p=self.p)
                x = nn.Dropout(p=0.5)(x)
                return self.head(x)
        """, {("TL314", 11), ("TL314", 13), ("TL314", 14)}),
    "TL314 passing: training= given, p=0, only while training, layers from __init__, plain functions": ("""
        import torch.nn as nn
        import torch.nn.functional as F
        class Net(nn.Module):
            def __init__(self, p=0.3):
                super().__init__()
                self.fc = nn.Linear(8, 8)
                self.drop = nn.Dropout(p)
                self.p = p
            def forward(self, x):
                x = F.dropout(self.fc(x), p=self.p, training=self.training)
                x = F.dropout(x, self.p, self.training)
                x = F.dropout(x, p=0.0)
                if self.training and self.p > 0:
                    x = F.dropout(x, self.p)
                    x = nn.Dropout(0.1)(x)
                return self.drop(x)
            def sample(self, x, noise_dropout=0.):
                return F.dropout(x, p=noise_dropout)
        def noisy(x):
            return F.dropout(x, 0.5)
        """, set()),
}


@pytest.mark.parametrize("name", list(CASES))
def test_rule_case(name):
    source, expected, *opt_in = CASES[name]
    options = opt_in[1] if len(opt_in) > 1 else {}  # project settings: {"project": {"torch-version": ...}}
    settings = Settings(extend_select=opt_in[0], options=options) if opt_in else None
    assert codes_lines(source, settings=settings) == expected


def test_every_rule_has_failing_and_passing_cases():
    from test_batch_flows import CASES as FLOW_CASES
    from test_batch_flows import MORE as CONTAINER_CASES
    from test_broadcast_rule import CASES as MISALIGNED_CASES
    from test_evaluation_mode import CASES as EVALUATION_MODE_CASES
    from test_input_gradients import CASES as INPUT_GRADIENT_CASES
    from test_overlapping_split import CASES as SPLIT_CASES
    from test_rules_real_bug_shapes import CASES as SHAPE_CASES
    from test_seed_before_spawn import CASES as SPAWN_CASES
    from test_seed_from_string_hash import CASES as HASH_SEED_CASES
    from test_seed_zero_skipped import CASES as ZERO_SEED_CASES
    from test_shape_rules import CASES as BROADCAST_CASES
    from test_shape_rules import RESHAPES
    from test_training_rules import CASES as TRAINING_CASES

    from torchlint.static.rules import STATIC_RULES

    cases = [*CASES.values(), *TRAINING_CASES.values(), *SHAPE_CASES.values(), *BROADCAST_CASES.values(),
             *RESHAPES.values(), *MISALIGNED_CASES.values(), *FLOW_CASES.values(), *CONTAINER_CASES.values(),
             *INPUT_GRADIENT_CASES.values(), *SPLIT_CASES.values(), *SPAWN_CASES.values(),
             *HASH_SEED_CASES.values(), *ZERO_SEED_CASES.values(), *EVALUATION_MODE_CASES.values()]
    failing = {code for _, expected, *_ in cases for code, _ in expected}
    assert {rule.info.code for rule in STATIC_RULES} <= failing
    assert any(not expected for _, expected, *_ in CASES.values())


def test_large_init_std_one_is_large_only_for_weight_matrices():
    source = """
        import torch
        import torch.nn as nn
        class QFormer(nn.Module):
            def __init__(self):
                super().__init__()
                self.query = nn.Parameter(torch.zeros(1, 32, 768))
                self.proj = nn.Linear(768, 768)
                self.query.data.normal_(mean=0.0, std=1.0)
                nn.init.normal_(self.proj.weight, 0.0, 1.0)
                nn.init.normal_(self.query, 0.0, 1.5)
        """
    assert codes_lines(source) == {("TL109", 10), ("TL109", 11)}
