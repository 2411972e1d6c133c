"""Stop 40's held-out batch (23 public training projects): each mechanism behind a wrong or noisy
finding once where a maintainer would close the report (no finding) and once where it is a bug
(the finding, exact code and line)."""

from __future__ import annotations

import textwrap

import pytest
from conftest import codes_lines

from torchlint.config import Settings

PAIRS = {
    # modded-nanogpt: `23 * sigmoid((logits + 5) / 7.5)` caps logits in [0, 23]; they are not probabilities.
    "clean: a sigmoid scaled past 1 is a soft cap on logits": ("""
        import torch
        import torch.nn.functional as F
        def loss(x, t):
            logits = 23 * torch.sigmoid((x + 5) / 7.5)
            return F.cross_entropy(logits.float(), t)
        """, set()),
    "sigmoid probabilities into cross_entropy": ("""
        import torch
        import torch.nn.functional as F
        def loss(x, t):
            probs = torch.sigmoid(x)
            return F.cross_entropy(probs.float(), t)
        """, {("TL111", 6)}),
    # modded-nanogpt: an optimizer frozen for a while drops its gradients on one branch and steps on
    # the other; the two branches of any `if`/`else` are exclusive, whatever the test.
    "clean: zero_grad on the frozen branch, step on the other (a test that is a comparison)": ("""
        import torch
        class Trainer:
            def __init__(self, model, optimizers):
                self.model, self.optimizers = model, optimizers
            def step_optimizers(self):
                for opt in self.optimizers:
                    if opt.freeze_timer > 0:
                        opt.freeze_timer -= 1
                        opt.zero_grad(set_to_none=True)
                    else:
                        opt.step()
                        opt.zero_grad(set_to_none=True)
            def train(self, loader):
                for x in loader:
                    self.model(x).mean().backward()
                    self.step_optimizers()
        """, set()),
    "zero_grad between backward and step on every path": ("""
        import torch
        class Trainer:
            def __init__(self, model, opt):
                self.model, self.opt = model, opt
            def step_optimizer(self):
                if self.opt.param_groups[0]["lr"] > 0:
                    self.opt.zero_grad(set_to_none=True)
                self.opt.step()
            def train(self, loader):
                for x in loader:
                    self.model(x).mean().backward()
                    self.step_optimizer()
        """, {("TL303", 8)}),
    # DeepLabV3+, mixup-cifar10: PyTorch seeds `random`, torch and (since 1.9) NumPy in each worker.
    "clean: a seeded script with numpy draws and a DataLoader with workers": ("""
        import numpy as np
        import torch
        from torch.utils.data import DataLoader
        def mix(x, y):
            lam = np.random.beta(1.0, 1.0)
            return lam * x + (1 - lam) * y
        torch.manual_seed(0)
        np.random.seed(0)
        def make(dataset):
            return DataLoader(dataset, batch_size=4, shuffle=True, num_workers=4)
        """, set()),
    "a seeded script that draws from numpy in the main process unseeded": ("""
        import numpy as np
        import torch
        torch.manual_seed(0)
        def mix(x, y):
            lam = np.random.beta(1.0, 1.0)
            return lam * x + (1 - lam) * y
        """, {("TL501", 4)}),
    # SSD's L2Norm: a learned per-channel gain starts at 20 and is applied once.
    "clean: a large constant for a standalone learned scale": ("""
        import torch
        import torch.nn as nn
        class L2Norm(nn.Module):
            def __init__(self):
                super().__init__()
                self.rescale_factors = nn.Parameter(torch.FloatTensor(1, 512, 1, 1))
                nn.init.constant_(self.rescale_factors, 20)
                self.gain = nn.Parameter(torch.ones(1))
                self.gain.data.fill_(10.0)
        """, set()),
    "a large constant for a layer's weight matrix": ("""
        import torch.nn as nn
        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)
                nn.init.constant_(self.proj.weight, 20)
        """, {("TL109", 7)}),
    # DDIM: a slerp between two fresh noise vectors; their cosine is near 0 and carries no gradient.
    "clean: acos of the cosine of two random latents": ("""
        import torch
        def slerp(z1, z2, alpha):
            theta = torch.acos(torch.sum(z1 * z2) / (torch.norm(z1) * torch.norm(z2)))
            return torch.sin((1 - alpha) * theta) / torch.sin(theta) * z1 + torch.sin(alpha * theta) * z2
        def interpolate(shape):
            z1, z2 = torch.randn(shape), torch.randn(shape)
            return [slerp(z1, z2, a) for a in (0.1, 0.5)]
        """, set()),
    "acos of the cosine between a prediction and its target": ("""
        import torch
        def angle_loss(pred, target):
            return torch.acos(torch.sum(pred * target) / (torch.norm(pred) * torch.norm(target)))
        """, {("TL123", 4)}),
    # deep-text-recognition: `Averager.add(cost)` keeps `v.data.sum()`, not the tensor with its graph.
    "clean: a meter that rebinds its argument to its .data before keeping it": ("""
        import torch
        class Averager:
            def __init__(self):
                self.sum, self.n = 0, 0
            def add(self, v):
                count = v.data.numel()
                v = v.data.sum()
                self.n += count
                self.sum += v
        def train(model, loader, opt):
            meter = Averager()
            for x in loader:
                cost = model(x).mean()
                cost.backward()
                opt.step()
                opt.zero_grad()
                meter.add(cost)
        """, set()),
    "a meter that keeps its argument": ("""
        import torch
        class Averager:
            def __init__(self):
                self.sum = 0
            def add(self, v):
                self.sum += v
        def train(model, loader, opt):
            meter = Averager()
            for x in loader:
                cost = model(x).mean()
                cost.backward()
                opt.step()
                opt.zero_grad()
                meter.add(cost)
        """, {("TL402", 15)}),
    # mixup-cifar10 (written for PyTorch 0.3: `loss.data[0]`) against pytorch-fcn (a trainer on no_grad).
    "clean: volatile inputs in a file written for PyTorch 0.3": ("""
        import torch
        from torch.autograd import Variable
        def test(net, loader, criterion):
            net.eval()
            total = 0
            for inputs, targets in loader:
                inputs = Variable(inputs, volatile=True)
                loss = criterion(net(inputs), Variable(targets))
                total += loss.data[0]
            return total
        """, set()),
    "volatile inputs in a file that uses .item(): volatile does nothing there": ("""
        import torch
        from torch.autograd import Variable
        def test(net, loader, criterion):
            net.eval()
            total = 0
            for inputs, targets in loader:
                inputs = Variable(inputs, volatile=True)
                loss = criterion(net(inputs), targets)
                total += loss.item()
            return total
        """, {("TL306", 7)}),
    # DomainBed's RSC: the gradient only picks a mask (`g.lt(t)`); no gradient flows back through it.
    "clean: a gradient without create_graph used only through a comparison": ("""
        import numpy as np
        import torch
        import torch.nn.functional as F
        def step(featurizer, classifier, x, y):
            f = featurizer(x)
            g = torch.autograd.grad(classifier(f).sum(), f)[0]
            cut = torch.Tensor(np.percentile(g.cpu(), 33, axis=1))
            mask = g.lt(cut.unsqueeze(1)).float()
            return F.cross_entropy(classifier(f * mask), y)
        def train(featurizer, classifier, loader, opt):
            for x, y in loader:
                loss = step(featurizer, classifier, x, y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """, set()),
    "a gradient without create_graph added to the loss": ("""
        import torch
        def residual(model, x):
            x = x.clone().requires_grad_(True)
            u = model(x)
            u_x = torch.autograd.grad(u.sum(), x)[0]
            return u + u_x
        def train(model, loader, opt):
            for x in loader:
                loss = residual(model, x).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
        """, {("TL206", 6)}),
    # minimalRL: the log of the probability of an action drawn from that same policy.
    "clean: log of the policy's probability of the actions it sampled": ("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.distributions import Categorical
        class Policy(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)
            def pi(self, x, dim=0):
                return F.softmax(self.fc(x), dim=dim)
        model = Policy()
        def act(s):
            prob = model.pi(s)
            return Categorical(prob).sample().item()
        def loss(s, a, advantage):
            pi = model.pi(s, dim=1)
            pi_a = pi.gather(1, a)
            return -(torch.log(pi_a) * advantage).mean()
        """, set()),
    "log of a softmax picked at labels the model never drew": ("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)
            def probs(self, x):
                return F.softmax(self.fc(x), dim=1)
        model = Net()
        def loss(x, labels):
            p = model.probs(x)
            picked = p.gather(1, labels[:, None])
            return -torch.log(picked).mean()
        """, {("TL102", 15)}),
    # deep-text-recognition's demo.py: benchmark next to deterministic in a script that trains nothing.
    "clean: benchmark and deterministic at the top of an inference script": ("""
        import torch
        import torch.backends.cudnn as cudnn
        from model import Model
        if __name__ == "__main__":
            cudnn.benchmark = True
            cudnn.deterministic = True
            model = Model().cuda().eval()
            with torch.no_grad():
                print(model(torch.zeros(1, 3, 32, 100).cuda()))
        """, set()),
    "benchmark and deterministic in a seeding helper (training code calls it)": ("""
        import torch
        def set_reproducible(seed):
            torch.manual_seed(seed)
            torch.cuda.manual_seed_all(seed)
            torch.backends.cudnn.deterministic = True
            torch.backends.cudnn.benchmark = True
        """, {("TL502", 7)}),
    "benchmark and deterministic in a training script": ("""
        import torch
        import torch.backends.cudnn as cudnn
        def train(model, loader, opt):
            cudnn.benchmark = True
            cudnn.deterministic = True
            for x in loader:
                model(x).mean().backward()
                opt.step()
                opt.zero_grad()
        """, {("TL502", 5)}),
    # Stop 40's fifth batch. I-JEPA: `mask_token.repeat(...)` is a new tensor, not the parameter.
    "clean: in-place add to a parameter repeated into a new tensor": ("""
        import torch
        import torch.nn as nn
        class Predictor(nn.Module):
            def __init__(self):
                super().__init__()
                self.mask_token = nn.Parameter(torch.zeros(1, 1, 8))
            def forward(self, x, pos):
                tokens = self.mask_token.repeat(x.size(0), pos.size(1), 1)
                tokens += pos
                return torch.cat([x, tokens], dim=1)
        """, set()),
    "in-place add to the parameter itself": ("""
        import torch
        import torch.nn as nn
        class Predictor(nn.Module):
            def __init__(self):
                super().__init__()
                self.mask_token = nn.Parameter(torch.zeros(1, 1, 8))
            def forward(self, x, pos):
                self.mask_token += pos.mean()
                return x + self.mask_token
        """, {("TL202", 9)}),
    # YOLOv7's detection head decodes boxes in place on its inference branch only.
    "clean: writing into a sigmoid's output under `if not self.training:`": ("""
        import torch
        import torch.nn as nn
        class Detect(nn.Module):
            def __init__(self):
                super().__init__()
                self.m = nn.Conv2d(8, 16, 1)
            def forward(self, x):
                x = self.m(x)
                if not self.training:
                    y = x.sigmoid()
                    y[..., 0:2] = y[..., 0:2] * 2.0 - 0.5
                    return y
                return x
        """, set()),
    "writing into a sigmoid's output on the training branch": ("""
        import torch
        import torch.nn as nn
        class Detect(nn.Module):
            def __init__(self):
                super().__init__()
                self.m = nn.Conv2d(8, 16, 1)
            def forward(self, x):
                x = self.m(x)
                if self.training:
                    y = x.sigmoid()
                    y[..., 0:2] = y[..., 0:2] * 2.0 - 0.5
                    return y
                return x
        """, {("TL203", 12)}),
    # YOLOv7's test.py: a loop over weight files calling a test() whose forward passes run under
    # no_grad, except one warm-up call.
    "clean: a loop over weight files calling an evaluation with one warm-up forward": ("""
        import torch
        def test(weights, loader):
            model = torch.load(weights)
            model.eval()
            model(torch.zeros(1, 3, 64, 64))
            outputs = []
            for x in loader:
                with torch.no_grad():
                    outputs.append(model(x))
            return outputs
        def study(all_weights, loader):
            for w in all_weights:
                test(w, loader)
        """, set()),
    "a loop over a validation loader calling a helper that evaluates the model": ("""
        import torch
        def predict(model, x):
            model.eval()
            return model(x)
        def validate(model, val_loader):
            for x in val_loader:
                predict(model, x)
        """, {("TL306", 7)}),
    # Blind set q (MVTN): the view selector's parameters are clipped after the classifier's step and
    # before their own optimizer's.
    "clean: clipping between the steps of two optimizers, before the clipped one's": ("""
        import torch
        def train(model, selector, loader, opt, selector_opt):
            for x, y in loader:
                opt.zero_grad()
                selector_opt.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(selector(x)), y)
                loss.backward()
                opt.step()
                torch.nn.utils.clip_grad_norm_(selector.parameters(), 1.0)
                selector_opt.step()
        """, set()),
    "clipping after the only step": ("""
        import torch
        def train(model, loader, opt):
            for x, y in loader:
                opt.zero_grad()
                torch.nn.functional.cross_entropy(model(x), y).backward()
                opt.step()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        """, {("TL303", 8)}),
    # Blind set q (PCGrad): per-task gradients are read after each backward and combined before the step.
    "clean: clearing between backward passes whose gradients are read (PCGrad)": ("""
        import torch
        def pc_backward(optimizer, params, losses):
            grads = []
            for i, loss in enumerate(losses):
                optimizer.zero_grad(set_to_none=True)
                loss.backward(retain_graph=i < len(losses) - 1)
                grads.append(torch.cat([p.grad.flatten() for p in params]))
            merged = torch.stack(grads).sum(0)
            for p in params:
                p.grad = merged[:p.numel()].view_as(p).clone()
        def train(model, loader, optimizer):
            for x, y in loader:
                a, b = model(x)
                pc_backward(optimizer, list(model.parameters()), [a.mean(), b.mean()])
                optimizer.step()
        """, set()),
    "clearing between micro-batch backward passes before one step": ("""
        import torch
        def accumulate(optimizer, model, chunks):
            for x in chunks:
                optimizer.zero_grad(set_to_none=True)
                model(x).mean().backward()
        def train(model, loader, optimizer):
            for batch in loader:
                accumulate(optimizer, model, batch.chunk(4))
                optimizer.step()
        """, {("TL303", 5)}),
}


@pytest.mark.parametrize("name", list(PAIRS))
def test_held_out_pair(name):
    source, expected = PAIRS[name]
    assert codes_lines(textwrap.dedent(source)) == expected


def test_expm1_is_opt_in():
    source = "import torch\n\ndef f(x):\n    return torch.exp(x) - 1\n"
    assert codes_lines(source) == set()
    assert codes_lines(source, settings=Settings(select=["TL113"])) == {("TL113", 4)}
