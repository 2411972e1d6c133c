"""Runtime overhead on the models the issue names: a small GPT (nanoGPT's character-level
Shakespeare shape: 6 layers, 6 heads, 384 wide, 256-token context) and an MNIST CNN (the shape of
pytorch/examples' MNIST net), each on synthetic data, CPU.

Plain steps and steps under the process-wide watch `torchlint run` installs are timed in
interleaved rounds (the order rotates) in one process; each kind's best ms/step and the median of
the per-round ratios are printed. Target (issue 15): <= 1.03x.

    python bench/bench_models.py [--model gpt|mnist|both] [--steps 10] [--rounds 6] [--batch N]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from torchlint.runtime.watch import Watch


class Block(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)
        self.drop = nn.Dropout(0.2)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.2 if self.training else 0.0)
        x = x + self.drop(self.proj(y.transpose(1, 2).reshape(b, t, c)))
        return x + self.drop(self.down(F.gelu(self.up(self.norm2(x)))))


class SmallGpt(nn.Module):
    def __init__(self, vocab: int = 65, context: int = 256, width: int = 384, layers: int = 6, heads: int = 6):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, width), nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(width), nn.Linear(width, vocab, bias=False)
        self.head.weight = self.tokens.weight

    def forward(self, idx, targets):
        x = self.tokens(idx) + self.positions(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


class MnistNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 32, 3, 1), nn.Conv2d(32, 64, 3, 1)
        self.dropout1, self.dropout2 = nn.Dropout(0.25), nn.Dropout(0.5)
        self.fc1, self.fc2 = nn.Linear(9216, 128), nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
        x = self.fc2(self.dropout2(F.relu(self.fc1(torch.flatten(self.dropout1(x), 1)))))
        return F.log_softmax(x, dim=1)


def setups(which: str, batch: int | None):
    torch.manual_seed(0)
    if which == "gpt":
        model = SmallGpt()
        size = batch or 8
        idx = torch.randint(0, 65, (size, 256))
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

        def step():
            optimizer.zero_grad(set_to_none=True)
            model(idx, torch.roll(idx, -1, 1)).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        return f"small GPT (6 x 384, context 256, batch {size}, AdamW, clipping)", step
    model = MnistNet()
    size = batch or 64
    x, y = (torch.randn(size, 1, 28, 28) - 0.13) / 0.31, torch.randint(0, 10, (size,))
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)

    def step():
        optimizer.zero_grad()
        F.nll_loss(model(x), y).backward()
        optimizer.step()
    return f"MNIST CNN (batch {size}, Adadelta)", step


def measure(which: str, steps: int, rounds: int, batch: int | None) -> None:
    title, step = setups(which, batch)
    for _ in range(2):
        step()
    times: dict[str, list[float]] = {"plain": [], "watched": []}
    ratios = []
    for index in range(rounds):
        got = {}
        for kind in (("plain", "watched") if index % 2 == 0 else ("watched", "plain")):
            watch = Watch(None, None, stop_at_first=True) if kind == "watched" else None
            if watch is not None:
                watch.__enter__()
            step()  # not timed: a new watch's first step
            started = time.perf_counter()
            for _ in range(steps):
                step()
            got[kind] = (time.perf_counter() - started) / steps * 1000
            if watch is not None:
                assert not watch.events, [e.message for e in watch.events]
                watch.__exit__(None, None, None)
            times[kind].append(got[kind])
        ratios.append(got["watched"] / got["plain"])
    print(f"{title}, {steps} steps x {rounds} rounds, {torch.get_num_threads()} threads")
    for kind, values in times.items():
        print(f"  {kind:<8} best {min(values):9.2f} ms/step   median {statistics.median(values):9.2f}")
    print(f"  watched / plain: best/best {min(times['watched']) / min(times['plain']):.3f}x, median per-round "
          f"ratio {statistics.median(ratios):.3f}x (rounds: {', '.join(f'{r:.3f}' for r in ratios)})")
    assert all(math.isfinite(r) for r in ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("gpt", "mnist", "both"), default="both")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--batch", type=int)
    args = parser.parse_args()
    for which in (("gpt", "mnist") if args.model == "both" else (args.model,)):
        measure(which, args.steps, args.rounds, args.batch)


if __name__ == "__main__":
    main()
