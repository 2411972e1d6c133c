"""TL508 overlapping-split: a prefix and a suffix of one array given to two datasets, overlapping."""

import pytest
from conftest import codes_lines_after

HEAD = """
import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset


class Rows(Dataset):
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]
"""

CASES = {
    "a suffix that starts where the prefix should end, counted from the other side": ("""
        def loaders(data):
            train = Rows(data[0][:-100], data[1][:-100])
            val = Rows(data[0][100:], data[1][100:])
            return DataLoader(train, 32, shuffle=True), DataLoader(val, 32)
        """, {("TL508", 3)}),
    "the same cut on both sides": ("""
        def loaders(data):
            train = Rows(data[0][:-100], data[1][:-100])
            val = Rows(data[0][-100:], data[1][-100:])
            return DataLoader(train, 32, shuffle=True), DataLoader(val, 32)
        """, set()),
    "literal bounds from the start that overlap": ("""
        def split(x, y):
            return TensorDataset(x[:800], y[:800]), TensorDataset(x[700:], y[700:])
        """, {("TL508", 2)}),
    "literal bounds from the end that overlap": ("""
        def split(x, y):
            return TensorDataset(x[:-100], y[:-100]), TensorDataset(x[-200:], y[-200:])
        """, {("TL508", 2)}),
    "a split at a name's value": ("""
        def split(x, y, n):
            return TensorDataset(x[:n], y[:n]), TensorDataset(x[n:], y[n:])
        """, set()),
    "inputs and targets shifted by one in one dataset": ("""
        def windows(series):
            return TensorDataset(series[:-1], series[1:])
        """, set()),
    "sliding windows cut in a loop": ("""
        def windows(series, size):
            parts = []
            for start in range(0, 10):
                parts.append(TensorDataset(series[:size + start], series[start:]))
            return parts
        """, set()),
}


@pytest.mark.parametrize("name", CASES)
def test_overlapping_split(name):
    body, expected = CASES[name]
    assert codes_lines_after(HEAD, body) == expected
