"""TL311 input-gradient-in-update, and TL303 not taking such a backward for the loss's."""

import pytest
from conftest import codes_lines_after

HEAD = """
import torch
import torch.nn.functional as F
"""

LANGEVIN = """
    def langevin(energy, x, steps):
        for _ in range(steps):
            x.requires_grad_(True)
            energy(x).sum().backward()
            with torch.no_grad():
                x = x - 0.1 * x.grad + 0.01 * torch.randn_like(x)
        return x.detach()
"""

CASES = {
    "Langevin samples drawn after zero_grad": (LANGEVIN + """
    def train(model, data, optimizer):
        for x_pos in data:
            optimizer.zero_grad()
            x_neg = langevin(model, torch.rand_like(x_pos), 20)
            loss = model(x_pos).mean() - model(x_neg).mean()
            loss.backward()
            optimizer.step()
    """, {("TL311", 11)}),
    "Langevin samples drawn before zero_grad": (LANGEVIN + """
    def train(model, data, optimizer):
        for x_pos in data:
            x_neg = langevin(model, torch.rand_like(x_pos), 20)
            optimizer.zero_grad()
            loss = model(x_pos).mean() - model(x_neg).mean()
            loss.backward()
            optimizer.step()
    """, set()),
    "zero_grad at the end of the iteration: the next attack's gradients are applied": ("""
    def fgsm(model, x, y, eps):
        delta = torch.zeros_like(x, requires_grad=True)
        F.cross_entropy(model(x + delta), y).backward()
        return (x + eps * delta.grad.sign()).detach()

    def train(model, loader, optimizer):
        for x, y in loader:
            x_adv = fgsm(model, x, y, 8 / 255)
            F.cross_entropy(model(x_adv), y).backward()
            optimizer.step()
            optimizer.zero_grad()
    """, {("TL311", 11)}),
    "an attack through autograd.grad leaves the parameters alone": ("""
    def fgsm(model, x, y, eps):
        delta = torch.zeros_like(x, requires_grad=True)
        grad, = torch.autograd.grad(F.cross_entropy(model(x + delta), y), delta)
        return (x + eps * grad.sign()).detach()

    def train(model, loader, optimizer):
        for x, y in loader:
            optimizer.zero_grad()
            x_adv = fgsm(model, x, y, 8 / 255)
            F.cross_entropy(model(x_adv), y).backward()
            optimizer.step()
    """, set()),
    "two losses accumulated on purpose (a discriminator's real and fake terms)": ("""
    def train(disc, gen, loader, optimizer):
        for real in loader:
            optimizer.zero_grad()
            F.softplus(-disc(real)).mean().backward()
            F.softplus(disc(gen(torch.randn(8, 4)).detach())).mean().backward()
            optimizer.step()
    """, set()),
    "gradients read per parameter in a loop: parameters, not an input": ("""
    def probe(model, x):
        for p in model.parameters():
            p.requires_grad_(True)
        model(x).sum().backward()
        return [p.grad.norm() for p in model.parameters()]

    def train(model, loader, optimizer):
        for x in loader:
            optimizer.zero_grad()
            norms = probe(model, x)
            model(x).pow(2).mean().backward()
            optimizer.step()
    """, set()),
}


@pytest.mark.parametrize("name", CASES)
def test_input_gradient_in_update(name):
    body, expected = CASES[name]
    assert codes_lines_after(HEAD, body) == expected
