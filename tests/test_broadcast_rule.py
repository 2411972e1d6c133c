"""TL605 misaligned-broadcast: shapes followed through datasets, loaders, models and helpers."""

import pytest
from conftest import codes_lines_after

DATA = """
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, TensorDataset


class Table(Dataset):
    def __init__(self, features, targets):
        self.x = torch.tensor(features, dtype=torch.float32)
        self.y = torch.tensor(targets, dtype=torch.float32)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, idx):
        return self.x[idx], self.y[idx]


class Net(nn.Module):
    def __init__(self, d_in):
        super().__init__()
        self.hidden = nn.Linear(d_in, 64)
        self.act = nn.ReLU()
        self.head = nn.Linear(64, 1)

    def forward(self, x):
        return self.head(self.act(self.hidden(x)))
"""

CASES = {
    "a loader over a TensorDataset: the output against 1-D targets in a loss, a difference, an accuracy": ("""
        X = torch.randn(1000, 8)
        y = X.sum(dim=1)
        loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True)
        model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
        for xb, yb in loader:
            pred = model(xb)
            loss = F.mse_loss(pred, yb) + ((pred - yb) ** 2).mean()
            acc = ((torch.sigmoid(pred) > 0.5).float() == yb).float().mean()
        """, {("TL605", 7), ("TL605", 8)}),
    "a Dataset class, a model class and a loss module, in functions called from main": ("""
        def train(model, loader):
            criterion = nn.MSELoss()
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
            for xb, yb in loader:
                opt.zero_grad()
                loss = criterion(model(xb), yb)
                loss.backward()
                opt.step()

        def main():
            rng = np.random.default_rng(0)
            X = rng.normal(size=(512, 10)).astype(np.float32)
            y = X.sum(axis=1)
            train(Net(10), DataLoader(Table(X, y), batch_size=32, shuffle=True))
        """, {("TL605", 6)}),
    "sizes named in the code: a sum without keepdim, a per-row weight": ("""
        def normalise(n, d):
            x = torch.rand(n, d)
            w = torch.rand(n)
            return x / x.sum(dim=1), x * w
        """, {("TL605", 4)}),
    "dict samples, an embedding model, sizes read from a batch; a model called on two kinds of batch": ("""
        class Seqs(Dataset):
            def __init__(self, n, T):
                self.tokens = torch.randint(0, 100, (n, T))
                self.labels = torch.rand(n)
            def __len__(self):
                return len(self.labels)
            def __getitem__(self, i):
                return {"tokens": self.tokens[i], "label": self.labels[i]}

        class Scorer(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(100, 32)
                self.out = nn.Linear(32, 1)
            def forward(self, tokens):
                return torch.sigmoid(self.out(self.emb(tokens).mean(dim=1)))

        def run(loader, model, tokens, labels, n_eval):
            for batch in loader:
                p = model(batch["tokens"])
                loss = F.binary_cross_entropy(p.squeeze(-1), batch["label"])
                err = (p - batch["label"]).abs().mean()
                w = torch.ones(batch["tokens"].shape[0])
                z = (p.view(-1) * w).sum()
            perm = torch.randperm(len(labels))
            idx = perm[:n_eval]
            held_out = (model(tokens[idx]) - labels[idx]).abs()

        run(DataLoader(Seqs(256, 12), batch_size=16), Scorer(), torch.randint(0, 100, (64, 12)), torch.rand(64), 32)
        """, {("TL605", 22), ("TL605", 27)}),
    "a Lightning module: its training_step gets the batches of its own train_dataloader": ("""
        class LitRegressor(nn.Module):
            def __init__(self, n_features=8):
                super().__init__()
                self.net = nn.Sequential(nn.Linear(n_features, 32), nn.ReLU(), nn.Linear(32, 1))
                self.x = torch.randn(1000, n_features)
                self.y = self.x.sum(dim=1)
            def forward(self, x):
                return self.net(x)
            def training_step(self, batch, batch_idx):
                x, y = batch
                return F.mse_loss(self(x), y)
            def validation_step(self, batch, batch_idx):
                x, y = batch
                return F.mse_loss(self(x).squeeze(-1), y)
            def train_dataloader(self):
                return DataLoader(TensorDataset(self.x, self.y), batch_size=64, shuffle=True)
            def val_dataloader(self):
                return DataLoader(TensorDataset(self.x, self.y), batch_size=64)
        """, {("TL605", 11)}),
    "clean: flattened output, reshaped targets, targets with the output's shape": ("""
        X = torch.randn(1000, 8)
        y = X.sum(dim=1)
        Y2 = torch.randn(1000, 1)
        loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True)
        loader2 = DataLoader(TensorDataset(X, Y2), batch_size=64)
        model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
        for xb, yb in loader:
            a = F.mse_loss(model(xb).squeeze(-1), yb)
            b = F.mse_loss(model(xb), yb.unsqueeze(1))
            c = F.mse_loss(model(xb).view(-1), yb) + F.mse_loss(model(xb), yb.view(-1, 1))
            d = (model(xb)[:, 0] - yb).abs().mean()
        for xb, yb in loader2:
            e = F.mse_loss(model(xb), yb)
        """, set()),
    "batches through enumerate(tqdm(loader)) and next(iter(loader)); a collate_fn of the program's own": ("""
        from tqdm import tqdm
        X = torch.randn(100, 8)
        ds = TensorDataset(X, X.sum(dim=1))
        model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
        loader = DataLoader(ds, batch_size=16, shuffle=True)
        for step, (xb, yb) in enumerate(tqdm(loader)):
            a = (model(xb) - yb) ** 2
        xb, yb = next(iter(loader))
        b = (model(xb) - yb) ** 2
        for xb, yb in DataLoader(ds, batch_size=16, collate_fn=lambda items: items):
            c = (model(xb) - yb) ** 2
        """, {("TL605", 7), ("TL605", 9)}),
    "arrays built by appends in a loop, selected by a mask, paired by a dataset; labels as one-element lists": ("""
        def make(n_classes, per_class, dim, seed):
            rng = np.random.RandomState(seed)
            centers = rng.randn(n_classes, dim)
            xs = []
            for c in range(n_classes):
                xs.append(centers[c] + 0.1 * rng.randn(per_class, dim))
            return np.concatenate(xs).astype(np.float32)

        class Pairs(Dataset):
            def __init__(self, x, n_pairs):
                self.x, self.pairs = torch.from_numpy(x), [(k % 7, k % 5, k % 2) for k in range(n_pairs)]
            def __len__(self):
                return len(self.pairs)
            def __getitem__(self, k):
                i, j, same = self.pairs[k]
                return self.x[i], self.x[j], torch.tensor([float(same)])

        def contrastive(e1, e2, label, margin=1.0):
            d = F.pairwise_distance(e1, e2)
            return (label * d.pow(2) + (1 - label) * F.relu(margin - d).pow(2)).mean()

        def main(dim):
            x = make(10, 20, dim, 0)
            keep = np.arange(len(x)) % 4 > 0
            for a, b, same in DataLoader(Pairs(x[keep], 500), batch_size=32):
                loss = contrastive(a, b, same)
        """, {("TL605", 20)}),
    "clean: sizes named alike in two functions are not the same size in their caller": ("""
        def column(n):
            return torch.randn(n, 1)
        def row(n):
            length = n + 1
            return torch.randn(n), torch.zeros(length)
        def combine(a, b):
            first, second = row(b)
            return column(a) - first, column(a)[:, 0] * second
        """, set()),
    "clean: one sample per batch (the default batch_size, batch_size=None), a squeezed batch of one": ("""
        X = torch.randn(100, 8)
        y = X.sum(dim=1)
        model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
        for xb, yb in DataLoader(TensorDataset(X, y)):
            a = (model(xb) - yb) ** 2
        for xb, yb in DataLoader(TensorDataset(X, y), batch_size=None):
            b = (model(xb) - yb) ** 2
        for xb, yb in DataLoader(TensorDataset(X, y), batch_size=16):
            c = model(xb.squeeze(0)).softmax(dim=0)
        """, set()),
    "clean: pairwise on purpose, keepdim, a column mean, a square matrix, unknown shapes": ("""
        def stats(n, d, unknown):
            x = torch.rand(n, d)
            dist = x[:, None, :] - x[None, :, :]
            rows = x / x.sum(dim=1, keepdim=True)
            centred = x - x.mean(0)
            gram = torch.rand(n, n)
            v = torch.rand(n)
            scaled = gram * v
            other = unknown - x.sum(dim=1)
            return dist, rows, centred, scaled, other
        """, set()),
}


@pytest.mark.parametrize("name", list(CASES))
def test_misaligned_broadcast_case(name):
    body, expected = CASES[name]
    assert codes_lines_after(DATA, body) == expected
