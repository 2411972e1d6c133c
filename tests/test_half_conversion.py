"""Modules converted to float16 in place: `model.half()`, `.data = .data.half()` through `apply`,
project helpers and methods that do it, also on one configuration path only."""

from __future__ import annotations

import textwrap

from torchlint import check_source
from torchlint.config import Settings

NET = """
import torch
import torch.nn as nn
import torch.nn.functional as F


def convert_module_to_f16(layer):
    if isinstance(layer, (nn.Conv2d, nn.Linear)):
        layer.weight.data = layer.weight.data.half()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.torso = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        self.head = nn.Linear(4, 3)

    def convert_to_fp16(self):
        self.torso.apply(convert_module_to_f16)

    def forward(self, x):
        h = self.torso(x.half()).float()
        return self.head(h)
"""


def found(text: str, select: str = "TL110,TL107") -> list[tuple[str, int]]:
    findings = check_source(textwrap.dedent(text), settings=Settings(select=select.split(",")))
    return sorted((f.code, f.line) for f in findings)


def test_half_on_one_configuration_path_then_adam_default_eps():
    assert found("""
    import torch
    import torch.nn as nn

    def train(use_fp16, loader):
        model = nn.Linear(4, 4)
        if use_fp16:
            model.half()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        return opt
    """) == [("TL110", 9)]


def test_a_method_that_applies_a_data_converting_function():
    script = NET + """

def build(use_fp16=False):
    model = Net()
    if use_fp16:
        model.convert_to_fp16()
    return model


def train(loader, use_fp16):
    model = build(use_fp16=use_fp16)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
    for x, y in loader:
        F.log_softmax(model(x), dim=-1)
"""
    # the optimizer gets float16 parameters; the output is float32 again (no TL107)
    assert found(script) == [("TL110", 35)]


def test_clean_eps_master_copies_and_float32_models():
    script = NET + """

def train(loader):
    model = Net()
    model.convert_to_fp16()
    ok = torch.optim.Adam(model.parameters(), eps=1e-4)
    master = [p.detach().clone().float() for p in model.parameters()]
    also_ok = torch.optim.Adam(master)
    plain = torch.optim.Adam(Net().parameters())
    return ok, also_ok, plain
"""
    assert found(script) == []


def test_a_whole_model_made_half_computes_in_half():
    assert found("""
    import torch.nn as nn
    import torch.nn.functional as F

    def predict(x):
        model = nn.Linear(4, 4)
        model.half()
        return F.softmax(model(x), dim=-1)
    """, "TL107") == [("TL107", 8)]
