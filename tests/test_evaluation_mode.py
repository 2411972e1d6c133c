"""TL312 evaluation-in-train-mode: an evaluation the training loop runs with the model in train mode."""

import pytest
from conftest import codes_lines

NET = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5))
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.body(x))


def test(net, loader):
    net.eval()
    with torch.no_grad():
        return sum((net(x).argmax(1) == y).sum().item() for x, y in loader)
"""
MAIN = """

def main(loader, val_loader):
    net = Net()
    train(net, loader, val_loader, torch.optim.SGD(net.parameters(), lr=0.1), 3)
    return test(net, val_loader)
"""

SOLVER = NET.split("\n\ndef test")[0] + """

class Solver:
    def __init__(self, test_loader):
        self.test_loader = test_loader

    def train(self, loader, model):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
{before}        return self.test(model)

    def test(self, model):
        correct = 0
        for x, y in self.test_loader:
            with torch.no_grad():
                correct += (model(x).argmax(1) == y).sum().item()
        return correct


def main(loader, test_loader):
    return Solver(test_loader).train(loader, Net())
"""

CASES = {
    "a final test after the training loop, in train mode, in a file with no eval() at all (VAAL)": (
        SOLVER.replace("{before}", ""), {("TL312", 27)}),
    "clean: eval() before the final test after the training loop": (
        SOLVER.replace("{before}", "        model.eval()\n"), set()),
    "validation under no_grad without eval(), called from the epoch loop after train()": (NET + """
def val(net, loader):
    correct = 0
    for x, y in loader:
        with torch.no_grad():
            correct += (net(x).argmax(1) == y).sum().item()
    return correct


def train(net, loader, val_loader, optimizer, epochs):
    for epoch in range(epochs):
        net.train()
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(net(x), y).backward()
            optimizer.step()
        print(val(net, val_loader))
""" + MAIN, {("TL312", 36)}),
    "an evaluation every k steps, decorated no_grad, of a model held by a trainer": (NET + """
class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    @torch.no_grad()
    def evaluate(self, loader):
        total = 0.0
        for x in loader:
            total += self.model(x).sum().item()
        return total

    def fit(self, loader, val_loader, every):
        self.model.train()
        for step, (x, y) in enumerate(loader):
            self.optimizer.zero_grad()
            nn.functional.cross_entropy(self.model(x), y).backward()
            self.optimizer.step()
            if step % every == 0:
                self.evaluate(val_loader)


def main(loader, val_loader):
    net = Net()
    Trainer(net, torch.optim.SGD(net.parameters(), lr=0.1)).fit(loader, val_loader, 100)
    return test(net, val_loader)
""", {("TL312", 40)}),
    "clean: eval() before the evaluation (in the loop or in the function), train() after": (NET + """
def val(net, loader):
    net.eval()
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (net(x).argmax(1) == y).sum().item()
    net.train()
    return correct


def val_plain(net, loader):
    with torch.no_grad():
        return [net(x) for x in loader] and sum(net(x).sum().item() for x in loader)


def train(net, loader, val_loader, optimizer, epochs):
    for epoch in range(epochs):
        net.train()
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(net(x), y).backward()
            optimizer.step()
        print(val(net, val_loader))
        net.eval()
        print(val_plain(net, val_loader))
""" + MAIN, set()),
    "clean: Monte Carlo dropout: the evaluation puts the model in train mode itself": (NET + """
def mc_predict(net, loader, samples):
    net.train()
    with torch.no_grad():
        for x, _ in loader:
            yield torch.stack([net(x) for _ in range(samples)]).mean(0)


def train(net, loader, val_loader, optimizer, epochs):
    for epoch in range(epochs):
        net.train()
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(net(x), y).backward()
            optimizer.step()
        print(list(mc_predict(net, val_loader, 8)))
""" + MAIN, set()),
    "clean: a no_grad forward inside the training step (pseudo-labels), not an evaluation loop": (NET + """
def train(net, loader, optimizer, threshold):
    net.train()
    for x_weak, x_strong in loader:
        with torch.no_grad():
            probs = net(x_weak).softmax(-1)
        conf, labels = probs.max(-1)
        loss = (nn.functional.cross_entropy(net(x_strong), labels, reduction="none") * (conf > threshold)).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main(loader):
    net = Net()
    train(net, loader, torch.optim.SGD(net.parameters(), lr=0.1), 0.9)
    return net
""", set()),
}


@pytest.mark.parametrize("name", CASES)
def test_evaluation_in_train_mode(name):
    source, expected = CASES[name]
    assert codes_lines(source) == expected
