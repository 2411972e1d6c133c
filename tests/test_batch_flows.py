"""What a batch holds, followed from where the data is made to where a loss divides by it: through a
`collate_fn`, a Dataset's arrays, a trainer's `fit`, `**batch`, static methods; and masks the code
alone fixes, whose counts are no evidence of a 0."""

import pytest
from conftest import codes_lines_after

HEAD = """
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
"""

CASES = {
    "a collate function's random mask, divided by in the loop": ("""
        def collate(rows):
            ids = torch.stack(rows)
            return {"ids": ids, "mask": torch.rand(ids.shape) < 0.15}

        def train(data, model):
            loader = DataLoader(data, batch_size=32, collate_fn=collate)
            for batch in loader:
                m = batch["mask"].float()
                loss = (model(batch["ids"]) * m).sum(dim=1) / m.sum(dim=1)
                loss.mean().backward()
        """, {("TL106", 9)}),
    "the same, guarded": ("""
        def collate(rows):
            ids = torch.stack(rows)
            return {"ids": ids, "mask": torch.rand(ids.shape) < 0.15}

        def train(data, model):
            loader = DataLoader(data, batch_size=32, collate_fn=collate)
            for batch in loader:
                m = batch["mask"].float()
                loss = (model(batch["ids"]) * m).sum(dim=1) / m.sum(dim=1).clamp(min=1)
                loss.mean().backward()
        """, set()),
    "a callable collator's mask, fed to a Lightning module by trainer.fit": ("""
        class Collator:
            def __call__(self, rows):
                ids = torch.stack(rows)
                return {"ids": ids, "mask": torch.rand(ids.shape) < 0.15}

        class LitModel(nn.Module):
            def masked_loss(self, batch):
                mask = batch["mask"].float()
                return ((batch["ids"] * mask).sum(dim=1) / mask.sum(dim=1)).mean()

            def training_step(self, batch, batch_idx):
                return self.masked_loss(batch)

        def main(trainer, rows):
            loader = DataLoader(rows, batch_size=64, collate_fn=Collator())
            trainer.fit(LitModel(), train_dataloaders=loader)
        """, {("TL106", 9)}),
    "a lambda collate: nothing known of its batches": ("""
        class LitModel(nn.Module):
            def training_step(self, batch, batch_idx):
                mask = batch["mask"].float()
                return ((batch["ids"] * mask).sum(dim=1) / mask.sum(dim=1)).mean()

        def main(trainer, rows):
            loader = DataLoader(rows, batch_size=64, collate_fn=lambda r: r)
            trainer.fit(LitModel(), loader)
        """, set()),
    "a Dataset's event indicator, made by comparing arrays, summed per batch": ("""
        def cohort(n, rng):
            t_event = rng.exponential(1.0, size=n)
            t_censor = rng.exponential(0.2, size=n)
            return rng.normal(size=(n, 4)).astype(np.float32), (t_event <= t_censor).astype(np.float32)

        class Cohort(Dataset):
            def __init__(self, x, event):
                self.x = torch.from_numpy(x)
                self.event = torch.from_numpy(event)

            def __len__(self):
                return len(self.x)

            def __getitem__(self, i):
                return self.x[i], self.event[i]

        def train(model, rng):
            for x, event in DataLoader(Cohort(*cohort(1000, rng)), batch_size=16, shuffle=True):
                risk = model(x).squeeze(1)
                loss = -(risk * event).sum() / event.sum()
                loss.backward()
        """, {("TL106", 20)}),
    "a model called with **batch, pooling in a static method": ("""
        def collate(rows):
            ids = torch.stack(rows)
            return {"input_ids": ids, "attention_mask": (ids != 0).long()}

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(100, 16)

            def forward(self, input_ids, attention_mask):
                return self.pool(self.emb(input_ids), attention_mask)

            @staticmethod
            def pool(hidden, attention_mask):
                m = attention_mask.unsqueeze(-1).to(hidden.dtype)
                return (hidden * m).sum(dim=1) / m.sum(dim=1)

        def train(data):
            model = Encoder()
            for batch in DataLoader(data, batch_size=8, collate_fn=collate):
                model(**batch).sum().backward()
        """, {("TL106", 16)}),
    "targets not marked ignored, counted over the whole batch: 0 only if every target is": ("""
        def token_accuracy(model, src, tgt):
            pred = model(src).argmax(-1)
            valid = tgt != -100
            return ((pred == tgt) & valid).sum().item() / valid.sum().item()
        """, set()),
    "a mask of a fixed coordinate grid: the same positive count on every call": ("""
        def center_mean(images):
            yy, xx = np.mgrid[0:16, 0:16] - 7.5
            center = torch.from_numpy((np.sqrt(yy ** 2 + xx ** 2) < 2).astype(np.float32))
            return (images * center).sum((1, 2)) / center.sum()
        """, set()),
    "a mask of the data itself: its count is 0 when nothing passes": ("""
        def center_mean(images, radius):
            center = (images.abs() < radius).float()
            return (images * center).sum((1, 2)) / center.sum()
        """, {("TL106", 3)}),
}


@pytest.mark.parametrize("name", CASES)
def test_batch_flows(name):
    body, expected = CASES[name]
    assert codes_lines_after(HEAD, body) == expected


TRAINER = """
        class Trainer:
            def __init__(self, model, optimizer):
                self.model, self.optimizer = model, optimizer

            def step(self, x, ys):
                self.optimizer.zero_grad()
                out = self.model(x)
                cls_loss, box_loss = 0.0, 0.0
                for y in ys:
                    cls_loss = cls_loss + torch.nn.functional.cross_entropy(out, y)
                    box_loss = box_loss + torch.nn.functional.smooth_l1_loss(out, y.float())
                losses = [cls_loss / len(ys), box_loss / len(ys)]
                losses = losses + [sum(losses)]
                losses[-1].backward()
                self.optimizer.step()
                return losses
"""

MORE = {
    "a mask written into a zeros buffer per frame, kept in a list, divided by per clip": ("""
        class Clips(Dataset):
            def __init__(self, n, rng):
                self.masks = []
                for _ in range(n):
                    msk = np.zeros((4, 8, 8), np.float32)
                    for f in range(4):
                        msk[f] = (rng.rand(8, 8) > 0.9).astype(np.float32)
                    self.masks.append(msk)

            def __len__(self):
                return len(self.masks)

            def __getitem__(self, i):
                return {"masks": torch.from_numpy(self.masks[i])}

        def train(model, rng):
            for batch in DataLoader(Clips(100, rng), batch_size=4):
                masks = batch["masks"]
                loss = (model(masks) * masks).sum([1, 2, 3]) / masks.sum([1, 2, 3])
                loss.mean().backward()
        """, {("TL106", 19)}),
    "per-term losses summed in a loop, returned in a list with their sum, the sum accumulated": (TRAINER + """
        def fit(trainer, loader):
            total_loss = 0
            for x, ys in loader:
                cls, box, total = trainer.step(x, ys)
                total_loss += total
            return total_loss

        def main(loader):
            model = nn.Linear(8, 3)
            fit(Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1)), loader)
        """, {("TL402", 22)}),
    "the same with the number kept": (TRAINER + """
        def fit(trainer, loader):
            total_loss = 0
            for x, ys in loader:
                cls, box, total = trainer.step(x, ys)
                total_loss += total.item()
            return total_loss

        def main(loader):
            model = nn.Linear(8, 3)
            fit(Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1)), loader)
        """, set()),
    "a ReLU output's border zeroed in place in forward": ("""
        class Attention(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(1, 1, 3, padding=1)
                self.relu = nn.ReLU()

            def forward(self, x):
                att = self.relu(self.conv(x.sum(1, keepdim=True)))
                att[:, :, :, 0] = 0
                att[:, :, :, -1] = 0
                return x + att * x
        """, {("TL203", 9)}),
    "the same on a copy": ("""
        class Attention(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(1, 1, 3, padding=1)
                self.relu = nn.ReLU()

            def forward(self, x):
                att = self.relu(self.conv(x.sum(1, keepdim=True))).clone()
                att[:, :, :, 0] = 0
                return x + att * x
        """, set()),
    "a coupling layer's helper scales the tanh of a chunk in place": ("""
        class Coupling(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.net = nn.Sequential(nn.Linear(dim, 64), nn.ReLU(), nn.Linear(64, 2 * dim))
                self.scale = nn.Parameter(torch.ones(dim))

            def _scale_shift(self, x):
                s, t = self.net(x).chunk(2, dim=1)
                s = torch.tanh(s)
                s *= self.scale
                return s, t

            def forward(self, x):
                s, t = self._scale_shift(x)
                return x * torch.exp(s) + t, s.sum(dim=1)
        """, {("TL203", 10)}),
    "the same, scaled out of place": ("""
        class Coupling(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.net = nn.Sequential(nn.Linear(dim, 64), nn.ReLU(), nn.Linear(64, 2 * dim))
                self.scale = nn.Parameter(torch.ones(dim))

            def _scale_shift(self, x):
                s, t = self.net(x).chunk(2, dim=1)
                s = torch.tanh(s) * self.scale
                return s, t

            def forward(self, x):
                s, t = self._scale_shift(x)
                return x * torch.exp(s) + t, s.sum(dim=1)
        """, set()),
    "data preprocessing: a root of degrees patched in place, nothing recorded": ("""
        def normalised(adjacency):
            degree = torch.sqrt(1 / adjacency.sum(dim=1))
            degree[degree == float("inf")] = 0
            return torch.diag(degree) @ adjacency @ torch.diag(degree)
        """, set()),
}


@pytest.mark.parametrize("name", MORE)
def test_values_through_containers_and_writes(name):
    body, expected = MORE[name]
    assert codes_lines_after(HEAD, body) == expected
