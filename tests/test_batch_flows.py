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
