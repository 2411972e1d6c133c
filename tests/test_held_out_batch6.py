"""Stop 41's held-out batches (the sixth, 20 public projects: sequence models, time series, speech,
RL in notebooks, tabular, diffusion fine-tuning; one mechanism of the seventh): each mechanism behind
a wrong or noisy finding once where a maintainer would close the report (no finding) and once where
it is a bug (exact code and line)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from conftest import codes_lines

from torchlint.api import check_paths

CATEGORICAL_DQN = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 8)
        def forward(self, x):
            return F.softmax(self.fc(x).view(-1, 2, 4), dim=-1)
    model = Net()
    opt = torch.optim.Adam(model.parameters())
    for step in range(10):
        dist = model(torch.randn(3, 4))
        dist = dist.gather(1, torch.zeros(3, 1, 4, dtype=torch.long)).squeeze(1)
        dist.data.clamp_({low}, 0.99)
        loss = -(torch.rand(3, 4) * dist.log()).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    """

SIGMOID_HEAD = """
    import torch
    import torch.nn as nn
    class TCN(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(4, 8)
            self.sig = nn.Sigmoid()
        def forward(self, x):
            output = self.linear(x){cast}
            return self.sig(output)
    model = TCN()
    def nll(x, y):
        output = model(x)
        return -(y * torch.log(output)).sum()
    """

RUNNING_LOSS = """
    import torch
    import torch.nn.functional as F
    def train(model, loader, optimizer, log_interval):
        train_loss = 0
        for batch_idx, (data, target) in enumerate(loader):
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            optimizer.step()
            train_loss += loss
            if batch_idx % log_interval == 0:
                print(train_loss.item() / log_interval)
                {reset}
    """

ACCUMULATED = """
    import torch
    import torch.nn.functional as F
    def train(model, loader, optimizer):
        total = 0
        for i, (x, y) in enumerate(loader):
            loss = F.cross_entropy(model(x), y)
            total += loss
            if i % 4 == 3:
                optimizer.zero_grad()
                total.backward()
                optimizer.step()
                {reset}
    """

MIN_MAX = """
    import numpy as np
    import torch
    def to_unit(image):
        image = np.asarray(image, dtype=np.float32)
        return (image - np.min(image)) / (np.max(image) - np.min(image))
    def structure_loss(features, weights):
        vals = torch.linalg.eigvalsh(features @ features.t())
        lo, hi = torch.min(vals), torch.max(vals)
        return torch.sum(weights * (vals - lo) / (hi - lo))
    """

TO_RGB = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    class Autoencoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.colorize = torch.randn(3, 8, 1, 1)
        {decorator}
        def log_images(self, batch):
            return self.to_rgb(batch)
        def to_rgb(self, x):
            x = F.conv2d(x, weight=self.colorize)
            return 2. * (x - x.min()) / (x.max() - x.min()) - 1.
    """

PAIRS = {
    # RL-Adventure's categorical DQN: the clamp keeps a probability off 0 for its log, and the
    # gradient is meant to pass straight through it.
    "clean: a probability clamped through .data before its log": (
        CATEGORICAL_DQN.format(low="0.01"), set()),
    "a probability clamped through .data to 0 before its log": (
        CATEGORICAL_DQN.format(low="0.0"), {("TL201", 16), ("TL101", 17)}),
    # TCN's polyphonic music model casts to float64 before the sigmoid: it underflows past -745 only.
    "clean: log of a float64 sigmoid output": (SIGMOID_HEAD.format(cast=".double()"), set()),
    "log of a float32 sigmoid output": (SIGMOID_HEAD.format(cast=""), {("TL102", 15)}),
    # TCN's sequential MNIST: the running sum is reset every log interval, after backward freed each
    # graph's saved tensors.
    "clean: a loss summed after its backward, reset every log interval": (
        RUNNING_LOSS.format(reset="train_loss = 0"), set()),
    "a loss summed over the whole epoch": (RUNNING_LOSS.format(reset="pass"), {("TL402", 11)}),
    "clean: gradient accumulation that differentiates the sum and resets it": (
        ACCUMULATED.format(reset="total = 0"), set()),
    "an accumulated sum that is differentiated but never reset": (
        ACCUMULATED.format(reset="pass"), {("TL402", 8)}),
    # U-2-Net and diffusion_policy min-max normalise images and dataset statistics (NumPy); a loss
    # term's min-max (GDPP's eigenvalues) puts the NaN of a constant input into every weight.
    "only the min-max range of a differentiated value": (MIN_MAX, {("TL106", 10)}),
    # latent-diffusion colours segmentation maps for logging under `@torch.no_grad()`.
    "clean: a min-max range computed with gradients off": (TO_RGB.format(decorator="@torch.no_grad()"), set()),
    "a min-max range of a model output with gradients on": (TO_RGB.format(decorator=""), {("TL106", 14)}),
}


@pytest.mark.parametrize("name", list(PAIRS))
def test_held_out_pair(name):
    source, expected = PAIRS[name]
    assert codes_lines(textwrap.dedent(source)) == expected


SAVED_MODEL = """
import torch
import torch.nn as nn

model = nn.Linear(4, 2)
torch.save(model, "model.pt")
model = torch.load("model.pt")
"""


@pytest.mark.parametrize(("pin", "expected"), [
    ("torch==1.0\n", []),
    ("torch>=1.4,<2.5\n", []),
    ("torch>=1.0\n", [("train.py", "TL702", 7)]),
    ("numpy\n", [("train.py", "TL702", 7)]),
])
def test_weights_only_default_needs_a_torch_the_project_admits(tmp_path: Path, pin, expected):
    """WaveGlow pins torch 1.0: torch.load's weights_only=True default (2.6) never applies there."""
    (tmp_path / "requirements.txt").write_text(pin)
    (tmp_path / "train.py").write_text(SAVED_MODEL)
    assert sorted((Path(f.path).name, f.code, f.line) for f in check_paths([tmp_path])) == expected


FLOW_LOSS = """
    import torch
    def sequence_loss(pred, gt, valid):
        loss = (pred - gt).abs().mean()
        epe = torch.sqrt(torch.mean((pred - gt) ** 2, dim=1))
        epe = epe.view(-1)[valid.view(-1)]
        metrics = {{"epe": epe.mean().item(), "1px": (epe < 1).float().mean().item()}}
        return {returned}, metrics
    def train(model, x, y, valid, opt):
        loss, metrics = sequence_loss(model(x), y, valid)
        loss.backward()
        opt.step()
    """


@pytest.mark.parametrize(("returned", "expected"), [
    ("loss", set()),
    ("loss + epe.mean()", {("TL119", 5)}),
])
def test_a_distance_only_read_out_as_numbers_is_a_metric(returned, expected):
    """Batch 7, RAFT's `sequence_loss`: the end-point error is logged through `.item()`, never differentiated."""
    assert codes_lines(textwrap.dedent(FLOW_LOSS.format(returned=returned))) == expected


SPECTROGRAM = """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader
    class Audio2Mel(nn.Module):
        def __init__(self, n_fft=1024, hop_length=256):
            super().__init__()
            window = torch.hann_window(n_fft).float()
            self.register_buffer("window", window)
            self.n_fft = n_fft
            self.hop_length = hop_length
            {layer}
        def forward(self, audio):
            return torch.stft(audio, self.n_fft, self.hop_length, window=self.window).abs()
    def dump(test_set):
        fft = Audio2Mel()
        test_loader = DataLoader(test_set, batch_size=1)
        voc = []
        for x_t in test_loader:
            voc.append(fft(x_t).detach())
        return voc
    """


@pytest.mark.parametrize(("layer", "expected"), [
    ("pass", set()),
    ("self.proj = nn.Conv1d(1, 1, 3)", {("TL306", 19)}),
])
def test_a_module_without_parameters_builds_no_graph(layer, expected):
    """Batch 7, MelGAN: test clips turned into spectrograms by a module with only a buffer."""
    assert codes_lines(textwrap.dedent(SPECTROGRAM.format(layer=layer))) == expected
