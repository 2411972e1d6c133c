"""Issue-3 rules (autograd, training loop, memory, reproducibility, security): exact findings."""

import pytest
from conftest import codes_lines

from torchlint.config import Settings

_UPDATER = """
        import torch
        class Updater:
            def __init__(self, model, clip_value, clip_norm):
                self.model, self.clip_value, self.clip_norm = model, clip_value, clip_norm
                self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            def step(self, *, grad_scaler=None):
                {first}
                if self.clip_value:
                    torch.nn.utils.clip_grad_value_(self.model.parameters(), self.clip_value)
                if self.clip_norm:
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip_norm)
                if self.measure:
                    self.norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), float("inf"))
                if grad_scaler is not None:
                    grad_scaler.step(self.optimizer)
                    grad_scaler.update()
                else:
                    self.optimizer.step()
        class Engine:
            def __init__(self, model, amp):
                self.model = model
                self.updater = Updater(model, 0.0, 5.0)
                self.scaler = torch.amp.GradScaler("cpu") if amp else None
            def train(self, loader, loss_fn):
                for x, y in loader:
                    loss = loss_fn(self.model(x), y)
                    if self.scaler is not None:
                        self.scaler.scale(loss).backward()
                    else:
                        loss.backward()
                    self.updater.step(grad_scaler=self.scaler)
                    self.updater.optimizer.zero_grad()
"""


_CLASSIFIER = """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Classifier(nn.Module):
            def __init__(self, encoder, dim, classes):
                super().__init__()
                self.encoder = encoder
                self.head = nn.Linear(dim, classes)
            def forward(self, x):
                return self.head(self.encoder(x))
"""


CASES = {
    # TL201
    ".data write to an activation in forward": ("""
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
            def forward(self, x):
                h = self.fc(x)
                h.data.clamp_(min=0)
                return h.sigmoid()
        """, {("TL201", 9)}),
    "masking scores through .data with a moderate fill value": ("""
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def __init__(self):
                super().__init__()
                self.v = nn.Linear(8, 1)
            def forward(self, h, mask):
                scores = self.v(h).squeeze(-1)
                scores.data.masked_fill_(mask, 0.0)
                return F.softmax(scores, dim=1)
        """, {("TL201", 10)}),
    "clean: masking attention scores through .data with -inf before softmax (Tacotron 2)": ("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def __init__(self):
                super().__init__()
                self.v = nn.Linear(8, 1)
                self.score_mask_value = -float("inf")
            def forward(self, h, mask):
                alignment = self.v(torch.tanh(h)).squeeze(-1)
                alignment.data.masked_fill_(mask, self.score_mask_value)
                return F.softmax(alignment, dim=1)
        """, set()),
    "weight clipping between the forward pass and backward": ("""
        import torch
        import torch.nn as nn
        critic = nn.Linear(4, 1)
        opt = torch.optim.RMSprop(critic.parameters(), lr=5e-5)
        for real in range(10):
            score = critic(real)
            for p in critic.parameters():
                p.data.clamp_(-0.01, 0.01)
            loss = -score.mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """, {("TL201", 9)}),
    "clean: the same clipping after the step; init via apply; grad scaling; manual SGD; dtype cast; reads": ("""
        import torch
        import torch.nn as nn
        critic = nn.Linear(4, 1)
        opt = torch.optim.RMSprop(critic.parameters(), lr=5e-5)
        def weights_init(m):
            m.weight.data.normal_(0.0, 0.02)
        critic.apply(weights_init)
        for real in range(10):
            score = critic(real)
            loss = -score.mean()
            opt.zero_grad()
            loss.backward()
            for p in critic.parameters():
                p.grad.data.mul_(0.5)
            opt.step()
            for p in critic.parameters():
                p.data.clamp_(-0.01, 0.01)
        def sgd(model, lr):
            for p in model.parameters():
                p.data -= lr * p.grad.data
        def to_half(model):
            for p in model.parameters():
                p.data = p.data.half()
            return model.fc.weight.data
        """, set()),
    # TL202
    "in-place method on a nn.Parameter attribute in forward": ("""
        import torch
        import torch.nn as nn
        class Scale(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = nn.Parameter(torch.ones(1))
            def forward(self, x):
                self.scale.clamp_(min=0.1)
                return x * self.scale
        """, {("TL202", 9)}),
    "clean: optimizer-style update under a no_grad decorator, nn.init": ("""
        import torch
        import torch.nn as nn
        @torch.no_grad()
        def update(params, lr):
            for p in params:
                p.add_(p.grad, alpha=-lr)
        layer = nn.Linear(2, 2)
        nn.init.zeros_(layer.bias)
        """, set()),
    "in-place edit of a slice of a model's weight outside no_grad": ("""
        import torch
        def edit(model, rows, delta):
            model.eval()
            for i, row in enumerate(rows):
                model.encoder.layer[i].dense.weight[:, row] -= delta
                model.head.bias[row].add_(delta)
        """, {("TL202", 6), ("TL202", 7)}),
    "clean: slices edited under no_grad, through .data, or of a frozen weight": ("""
        import torch
        def edit(model, rows, delta):
            with torch.no_grad():
                model.encoder.dense.weight[:, rows] -= delta
            model.encoder.dense.weight.data[:, rows] += delta
            frozen = model.head.weight.requires_grad_(False)
            frozen[rows] *= 0.5
        class Counter(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.steps = torch.nn.Parameter(torch.zeros(1), requires_grad=False)
            def forward(self, x):
                self.steps.add_(1)
                return x
        """, set()),
    # TL203
    "in-place on a tanh module output in forward": ("""
        import torch.nn as nn
        class Gate(nn.Module):
            def __init__(self):
                super().__init__()
                self.act = nn.Tanh()
            def forward(self, x):
                y = self.act(x)
                y.mul_(3)
                return y
        """, {("TL203", 9)}),
    "in-place layers on outputs their op's backward reads, built in-place or switched later": ("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
                self.drop = nn.Dropout(0.1, True)
                self.act = nn.ReLU()
                self.leaky = nn.LeakyReLU(0.2)
                for m in self.modules():
                    if isinstance(m, nn.LeakyReLU):
                        m.inplace = True
            def forward(self, x):
                h = self.drop(torch.sigmoid(self.fc(x)))
                g = self.act(self.fc(x))
                g = self.leaky(g)
                return h + F.dropout(torch.tanh(g), 0.1, training=self.training, inplace=True)
        """, {("TL203", 16), ("TL203", 18), ("TL203", 19)}),
    "clean: in-place layers after conv/bn/linear, out-of-place layers, no_grad": ("""
        import torch
        import torch.nn as nn
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
                self.bn = nn.BatchNorm1d(4)
                self.relu = nn.ReLU(inplace=True)
                self.drop = nn.Dropout(0.1)
                for m in self.modules():
                    if isinstance(m, nn.ReLU):
                        m.inplace = True
            def forward(self, x):
                h = self.relu(self.bn(self.fc(x)))
                g = self.drop(torch.sigmoid(self.fc(x)))
                with torch.no_grad():
                    k = self.relu(torch.tanh(x))
                return h + g + k
        """, set()),
    "clean: a copy of a sigmoid output; optimizer-state math": ("""
        import torch
        def route(scores, idx):
            weights = torch.sigmoid(scores).gather(1, idx)
            weights *= 2.0
            return weights
        def adagrad_denominator(state_sum, eps):
            return state_sum.sqrt().add_(eps)
        """, set()),
    "clean: summing per-head losses inside one forward": ("""
        import torch.nn.functional as F
        def multi_loss(logits, labels):
            loss = 0
            for head_logits, head_labels in zip(logits, labels):
                loss += F.cross_entropy(head_logits, head_labels)
            return loss
        """, set()),
    "clean: out-of-place, in-place on a matmul output": ("""
        import torch
        def f(x, w):
            y = torch.sigmoid(x) * 2
            z = x @ w
            z += 1
            return y, z
        """, set()),
    # TL204
    "retain_graph on autograd.grad in a loop with nothing after": ("""
        import torch
        def penalties(model, batches):
            for x in batches:
                out = model(x)
                (g,) = torch.autograd.grad(out.sum(), x, retain_graph=True, create_graph=True)
                g.norm().backward()
        """, set()),
    "retain_graph on the only backward of a while loop": ("""
        import torch
        def train(model, batches, opt):
            while batches:
                opt.zero_grad()
                model(batches.pop()).sum().backward(retain_graph=True)
                opt.step()
        """, {("TL204", 6)}),
    "retain_graph in a loop that makes a new loss each iteration and does not drop it": ("""
        import torch
        def train(model, loader, opt):
            for x, y in loader:
                out = model(x)
                loss = (out - y).pow(2).mean()
                opt.zero_grad()
                loss.backward(retain_graph=True)
                opt.step()
                del out
        """, {("TL204", 8)}),
    "clean: the loop differentiates one graph made before it; a loss deleted each iteration; create_graph": ("""
        import torch
        from torch.autograd import grad
        def influence(model, src):
            x = src.clone().requires_grad_()
            out = model(x).sum(dim=-1)
            rows = []
            for j in range(src.size(0)):
                rows.append(grad([out[j]], [x], retain_graph=True)[0].abs().sum(dim=-1))
            return torch.stack(rows)
        def train(model, loader, opt):
            for x, y in loader:
                loss = (model(x) - y).pow(2).mean()
                opt.zero_grad()
                loss.backward(retain_graph=True)
                opt.step()
                del loss
        def solve(energy, y, steps):
            for _ in range(steps):
                val = energy(y)
                g = torch.autograd.grad(val, y, create_graph=True, retain_graph=True)[0]
                y = y - 0.1 * g
            return y
        """, set()),
    "clean: a function that retains for its caller": ("""
        import torch
        def vjp(out, x, v):
            return torch.autograd.grad(out, x, v, retain_graph=True)
        """, set()),
    # TL205
    "checkpoint through the module alias, of a detached input": ("""
        import torch.utils.checkpoint as cp
        def f(block, x):
            return cp.checkpoint(block, x.detach())
        """, {("TL205", 4)}),
    "reentrant checkpoint of features computed under no_grad (a frozen stem)": ("""
        import torch
        from torch.utils.checkpoint import checkpoint
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = torch.nn.Linear(8, 8)
                self.block = torch.nn.Linear(8, 8)
            def forward(self, x):
                with torch.no_grad():
                    h = self.stem(x)
                return checkpoint(self.block, h, use_reentrant=True)
        """, {("TL205", 12)}),
    "checkpoint_sequential of a new tensor": ("""
        import torch
        from torch.utils.checkpoint import checkpoint_sequential
        def run(blocks):
            return checkpoint_sequential(blocks, 2, torch.randn(4, 8))
        """, {("TL205", 5)}),
    "clean: an input of unknown history (a parameter) is only a deprecation warning": ("""
        from torch.utils.checkpoint import checkpoint
        def forward(blocks, x):
            for block in blocks:
                x = checkpoint(block, x)
            return x
        """, set()),
    "clean: one input with history is enough": ("""
        import torch
        from torch.utils.checkpoint import checkpoint
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = torch.nn.Linear(8, 8)
                self.block = torch.nn.Linear(8, 8)
            def forward(self, x):
                return checkpoint(self.block, self.stem(x), x.detach())
        """, set()),
    "clean: non-reentrant checkpoint of a detached input": ("""
        from torch.utils.checkpoint import checkpoint
        def f(block, x):
            return checkpoint(block, x.detach(), use_reentrant=False)
        """, set()),
    # TL301
    "zero_grad once before the epoch loop, never in it: reported where the call is": ("""
        import torch
        def train(model, loader, epochs, loss_fn):
            optimizer = torch.optim.Adam(model.parameters())
            optimizer.zero_grad()
            for epoch in range(epochs):
                for x, y in loader:
                    loss_fn(model(x), y).backward()
                    optimizer.step()
        """, {("TL301", 5)}),
    "two optimizers of two models, only one of them cleared in the loop": ("""
        import torch
        def train(E, D, loader, gan_loss):
            opt_E = torch.optim.Adam(E.parameters(), lr=1e-4)
            opt_D = torch.optim.Adam(D.parameters(), lr=1e-4)
            for x in loader:
                z = E(x)
                d_loss = gan_loss(D(x), D(z.detach()))
                d_loss.backward()
                opt_D.step()
                opt_E.zero_grad()
                e_loss = gan_loss(D(z), None)
                e_loss.backward()
                opt_E.step()
        """, {("TL301", 10)}),
    "clean: both optimizers cleared, a model's zero_grad, or optimizers over nested modules": ("""
        import torch
        def both(E, D, loader, gan_loss):
            opt_E = torch.optim.Adam(E.parameters(), lr=1e-4)
            opt_D = torch.optim.Adam(D.parameters(), lr=1e-4)
            for x in loader:
                opt_D.zero_grad()
                gan_loss(D(x), D(E(x).detach())).backward()
                opt_D.step()
                opt_E.zero_grad()
                gan_loss(D(E(x)), None).backward()
                opt_E.step()
        def whole_model(model, loader, loss_fn):
            opt_a = torch.optim.Adam(model.encoder.parameters(), lr=1e-4)
            opt_b = torch.optim.SGD(model.head.parameters(), lr=1e-2)
            for x, y in loader:
                model.zero_grad()
                loss_fn(model(x), y).backward()
                opt_a.step()
                opt_b.step()
        def nested(model, loader, loss_fn):
            opt_all = torch.optim.Adam(model.parameters(), lr=1e-4)
            opt_head = torch.optim.SGD(model.head.parameters(), lr=1e-2)
            for x, y in loader:
                opt_all.zero_grad()
                loss_fn(model(x), y).backward()
                opt_all.step()
                opt_head.step()
        """, set()),
    "while loop with scaler step and no zero_grad": ("""
        import torch
        def train(model, batches, optimizer, scaler):
            while batches:
                x, y = batches.pop()
                scaler.scale(((model(x) - y) ** 2).mean()).backward()
                scaler.step(optimizer)
                scaler.update()
        """, {("TL301", 4)}),
    "zero_grad only on the AMP branch: the plain branch accumulates": ("""
        import torch
        def train(model, loader, optimizer, scaler, args):
            for x, y in loader:
                loss = ((model(x) - y) ** 2).mean()
                if args.amp:
                    optimizer.zero_grad()
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                    scaler.update()
                else:
                    loss.backward()
                    optimizer.step()
        """, {("TL301", 4)}),
    "clean: zero_grad on both branches, before the if, or by a helper named for it": ("""
        import torch
        def both(model, loader, optimizer, scaler, args):
            for x, y in loader:
                loss = model(x).mean()
                if args.amp:
                    optimizer.zero_grad()
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                else:
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        def before(model, loader, optimizer, scaler, args):
            for x, y in loader:
                optimizer.zero_grad()
                loss = model(x).mean()
                if args.amp:
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                else:
                    loss.backward()
                    optimizer.step()
        def helper(model, loader, optimizer, trainer, args):
            for x, y in loader:
                trainer.zero_grad()
                loss = model(x).mean()
                if args.fp16:
                    optimizer.zero_grad()
                    (loss * 1024).backward()
                    optimizer.step()
                else:
                    loss.backward()
                    optimizer.step()
        """, set()),
    "clean: gradient accumulation; grad = None": ("""
        import torch
        def train(model, loader, optimizer, k=4):
            for i, (x, y) in enumerate(loader):
                ((model(x) - y) ** 2).mean().backward()
                if (i + 1) % k == 0:
                    optimizer.step()
                    optimizer.zero_grad()
        def train2(model, loader, opt):
            for x, y in loader:
                for p in model.parameters():
                    p.grad = None
                ((model(x) - y) ** 2).mean().backward()
                opt.step()
        """, set()),
    "clean: scheduler.step is not an optimizer step": ("""
        import torch
        def train(model, loader, optimizer, scheduler):
            for x, y in loader:
                ((model(x) - y) ** 2).mean().backward()
                scheduler.step()
        """, set()),
    # TL302
    "always mode without recurrent layers": ("""
        import torch
        def train(model, loader, optimizer):
            for x, y in loader:
                optimizer.zero_grad()
                ((model(x) - y) ** 2).mean().backward()
                optimizer.step()
        """, set(), ["TL302"]),
    "auto mode: a GRU defined in a class, loop in a method": ("""
        import torch
        import torch.nn as nn
        class Seq(nn.Module):
            def __init__(self):
                super().__init__()
                self.gru = nn.GRU(8, 8)
        class Runner:
            def __init__(self, model):
                self.model = model
                self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
            def run(self, loader):
                for x in loader:
                    self.opt.zero_grad()
                    self.model(x).sum().backward()
                    self.opt.step()
        """, {("TL302", 13)}, ["TL302"]),
    # TL305
    # four flags (the scaler's, tested in the loop and in the updater, is one): more than the three
    # judged one by one before
    "an updater clips scaled gradients: four flags, the scaler tested in the loop and in the updater": (
        _UPDATER.format(first="self.calls = getattr(self, 'calls', 0) + 1"), {("TL305", 10), ("TL305", 12), ("TL305", 14)}),
    "clean: the updater unscales when it is given the scaler; a helper called with None never steps it": (
        _UPDATER.format(first="if grad_scaler is not None: grad_scaler.unscale_(self.optimizer)") + """
        def run_epoch(model, loader, loss_fn, optimizer=None):
            for x, y in loader:
                loss = loss_fn(model(x), y)
                if optimizer is not None:
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        def fit(model, train_loader, val_loader, loss_fn, epochs):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)
            for epoch in range(epochs):
                run_epoch(model, train_loader, loss_fn, optimizer=optimizer)
                scheduler.step()
                run_epoch(model, val_loader, loss_fn, optimizer=None)
        """, set()),
    "clip_grad_value_ with a scaler held in an attribute": ("""
        import torch
        from torch.nn.utils import clip_grad_value_
        class Loop:
            def __init__(self, model, opt):
                self.model, self.opt = model, opt
                self.scaler = torch.cuda.amp.GradScaler()
            def fit(self, loader):
                for x in loader:
                    self.opt.zero_grad()
                    self.scaler.scale(self.model(x).mean()).backward()
                    clip_grad_value_(self.model.parameters(), 0.5)
                    self.scaler.step(self.opt)
                    self.scaler.update()
        """, {("TL305", 12)}),
    # TL502
    "deterministic algorithms without the cuBLAS workspace setting": ("""
        import torch
        from torch import use_deterministic_algorithms
        use_deterministic_algorithms(True)
        model = torch.nn.Linear(4, 4).cuda()
        """, {("TL502", 4)}),
    "deterministic algorithms from a config flag, on a CUDA device": ("""
        import torch
        def seed_everything(seed, deterministic):
            torch.manual_seed(seed)
            torch.cuda.manual_seed_all(seed)
            torch.use_deterministic_algorithms(deterministic)
            torch.use_deterministic_algorithms(mode=deterministic, warn_only=False)
        """, {("TL502", 6), ("TL502", 7)}),
    "Lightning Trainer with benchmark=True and deterministic runs asked for": ("""
        import lightning as L
        from pytorch_lightning import Trainer
        a = L.Trainer(deterministic=True, benchmark=True)
        b = Trainer(deterministic="warn", max_epochs=3,
                    benchmark=True)
        c = L.Trainer(benchmark=True)
        d = Trainer(deterministic=True, benchmark=False)
        e = Trainer(deterministic=args.deterministic, benchmark=not args.deterministic)
        """, {("TL502", 4), ("TL502", 6)}),
    "Lightning Trainer with benchmark=True where the script sets cudnn.deterministic": ("""
        import torch
        import pytorch_lightning as pl
        torch.backends.cudnn.deterministic = True
        trainer = pl.Trainer(max_epochs=5, benchmark=True)
        """, {("TL502", 5)}),
    "clean: deterministic algorithms off, warn_only from a flag, or a program that never touches CUDA": ("""
        import torch
        def setup(args):
            torch.use_deterministic_algorithms(False)
            torch.use_deterministic_algorithms(True, warn_only=args.warn_only)
        def cpu_only():
            # runs on CPU: CUBLAS_WORKSPACE_CONFIG is not read there ("cuda" in this comment is no evidence)
            torch.set_num_threads(2)
            torch.use_deterministic_algorithms(True)
            return torch.randn(3, 3) @ torch.randn(3, 3)
        """, set()),
    "clean: the workspace set through setdefault, or read back by the program": ("""
        import os
        import torch
        def seed(deterministic):
            if torch.cuda.is_available():
                os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
            torch.use_deterministic_algorithms(deterministic)
        def check():
            assert os.environ.get("CUBLAS_WORKSPACE_CONFIG"), "export CUBLAS_WORKSPACE_CONFIG=:4096:8"
            torch.use_deterministic_algorithms(True, warn_only=False)
            return torch.device("cuda")
        """, set()),
    "clean: warn_only, or the env var set in the file": ("""
        import os
        import torch
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":16:8"
        torch.use_deterministic_algorithms(True)
        torch.use_deterministic_algorithms(True, warn_only=True)
        """, set()),
    # TL210
    "a trainer's generator backward through the discriminator's forward from before its step": ("""
        import torch
        import torch.nn as nn
        class Trainer:
            def __init__(self):
                self.netG = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
                self.netD = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
                self.opt_g = torch.optim.Adam(self.netG.parameters())
                self.opt_d = torch.optim.Adam([{"params": self.netD.parameters(), "lr": 1e-4}])
            def step(self, real, z):
                fake = self.netG(z)
                d_fake = self.netD(fake)
                d_loss = d_fake.mean() - self.netD(real).mean()
                self.opt_d.zero_grad()
                d_loss.backward(retain_graph=True)
                self.opt_d.step()
                g_loss = -d_fake.mean()
                self.opt_g.zero_grad()
                g_loss.backward()
                self.opt_g.step()
        """, {("TL210", 19)}),
    "clean: both steps after both backwards; a step of another model; a forward again after the step": ("""
        import torch
        import torch.nn as nn
        G = nn.Linear(4, 4)
        D = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        opt_g = torch.optim.Adam(G.parameters())
        opt_d = torch.optim.Adam(D.parameters())
        for step in range(10):
            fake = G(torch.randn(2, 4))
            d_fake = D(fake)
            d_loss = d_fake.mean()
            g_loss = -d_fake.mean()
            opt_d.zero_grad()
            opt_g.zero_grad()
            d_loss.backward(retain_graph=True)
            g_loss.backward()
            opt_d.step()
            opt_g.step()
            fake = G(torch.randn(2, 4))
            g_loss = -D(fake).mean()
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
            d_loss = D(fake.detach()).mean()
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()
        """, set()),
    # TL209
    "REINFORCE with a learned baseline: the advantage keeps the critic's gradient": ("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Agent(nn.Module):
            def __init__(self):
                super().__init__()
                self.policy = nn.Linear(8, 4)
                self.value = nn.Linear(8, 1)
            def forward(self, obs):
                dist = torch.distributions.Categorical(logits=self.policy(obs))
                action = dist.sample()
                return action, dist.log_prob(action), self.value(obs).squeeze(-1)
        def train_step(agent: Agent, optimizer, obs, reward_fn):
            action, log_prob, value = agent(obs)
            reward = reward_fn(action)
            policy_loss = -((reward - value) * log_prob).mean()
            value_loss = F.mse_loss(value, reward)
            optimizer.zero_grad()
            (policy_loss + value_loss).backward()
            optimizer.step()
        """, {("TL209", 17)}),
    "clean: the baseline detached in the advantage, or an advantage of constants": ("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Agent(nn.Module):
            def __init__(self):
                super().__init__()
                self.policy = nn.Linear(8, 4)
                self.value = nn.Linear(8, 1)
            def forward(self, obs):
                dist = torch.distributions.Categorical(logits=self.policy(obs))
                action = dist.sample()
                return action, dist.log_prob(action), self.value(obs).squeeze(-1)
        def train_step(agent: Agent, optimizer, obs, reward_fn):
            action, log_prob, value = agent(obs)
            reward = reward_fn(action)
            baseline = value.detach()
            policy_loss = -((reward - baseline) * log_prob).mean()
            value_loss = F.mse_loss(value, reward)
            optimizer.zero_grad()
            (policy_loss + value_loss).backward()
            optimizer.step()
        def scaled(agent: Agent, optimizer, obs, reward, mean):
            action, log_prob, value = agent(obs)
            loss = ((reward - mean) * log_prob).mean() + F.mse_loss(reward, mean)
            loss.backward()
        """, set()),
    # TL313
    "an accumulation step gated by a bare remainder (PyTorch-YOLOv3)": ("""
        import torch
        def train(model, loader, optimizer, epochs, accumulate=1):
            for epoch in range(epochs):
                for i, (x, y) in enumerate(loader):
                    done = len(loader) * epoch + i
                    torch.nn.functional.cross_entropy(model(x), y).backward()
                    if done % accumulate:
                        optimizer.step()
                        optimizer.zero_grad()
        """, {("TL313", 8)}),
    "a step gated by a remainder compared with != 0": ("""
        import torch
        def train(model, loader, optimizer, k):
            for i, (x, y) in enumerate(loader):
                torch.nn.functional.cross_entropy(model(x), y).backward()
                if (i + 1) % k != 0:
                    optimizer.step()
                    optimizer.zero_grad()
        """, {("TL313", 6)}),
    "clean: accumulation gated by remainder == 0, and a log line on a bare remainder": ("""
        import torch
        def train(model, loader, optimizer, k):
            for i, (x, y) in enumerate(loader):
                loss = torch.nn.functional.cross_entropy(model(x), y)
                (loss / k).backward()
                if (i + 1) % k == 0:
                    optimizer.step()
                    optimizer.zero_grad()
                if not i % 100:
                    print(loss.item())
                if i % 100:
                    continue
        """, set()),
    # TL303
    "clearing every parameter's grad between backward and step": ("""
        import torch
        def train(model, loader, optimizer):
            for x, y in loader:
                loss = torch.nn.functional.cross_entropy(model(x), y)
                loss.backward()
                for p in model.parameters():
                    p.grad = None
                optimizer.step()
        """, {("TL303", 8)}),
    "clean: dropping the grads of some parameters is a freeze (swav's prototypes)": ("""
        import torch
        def train(model, loader, optimizer, freeze_iters):
            for it, (x, y) in enumerate(loader):
                optimizer.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(x), y)
                loss.backward()
                if it < freeze_iters:
                    for name, p in model.named_parameters():
                        if "prototypes" in name:
                            p.grad = None
                optimizer.step()
        """, set()),
    "a warm-up schedule counted in optimizer updates, stepped on every micro-batch": ("""
        import torch
        import torch.nn.functional as F
        def train(model, loader, epochs, accum_steps, warmup):
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
            total_updates = epochs * len(loader) // accum_steps
            scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda u: min(1.0, (u + 1) / warmup))
            for epoch in range(epochs):
                for i, (x, y) in enumerate(loader):
                    (F.cross_entropy(model(x), y) / accum_steps).backward()
                    if (i + 1) % accum_steps == 0:
                        optimizer.step()
                        optimizer.zero_grad()
                    scheduler.step()
        """, {("TL303", 14)}),
    "clean: stepped with the optimizer, or a schedule counted in batches": ("""
        import torch
        import torch.nn.functional as F
        def train(model, loader, epochs, accum_steps, warmup):
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
            total_updates = epochs * len(loader) // accum_steps
            scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda u: min(1.0, (u + 1) / warmup))
            for epoch in range(epochs):
                for i, (x, y) in enumerate(loader):
                    (F.cross_entropy(model(x), y) / accum_steps).backward()
                    if (i + 1) % accum_steps == 0:
                        optimizer.step()
                        optimizer.zero_grad()
                        scheduler.step()
        def per_batch(model, loader, epochs, every):
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
            scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, 1e-3, total_steps=epochs * len(loader))
            for epoch in range(epochs):
                for i, (x, y) in enumerate(loader):
                    (F.cross_entropy(model(x), y) / every).backward()
                    if (i + 1) % every == 0:
                        optimizer.step()
                        optimizer.zero_grad()
                    scheduler.step()
        """, set()),
    "step before backward through a helper": ("""
        import torch
        def update(optimizer):
            optimizer.step()
        def train(model, loader, optimizer):
            for x, y in loader:
                optimizer.zero_grad()
                update(optimizer)
                ((model(x) - y) ** 2).mean().backward()
        """, {("TL303", 4)}),
    "zero_grad between a backward and the step erases what the step needed": ("""
        import torch
        def train(model, loader, optimizer):
            for x, y in loader:
                loss = ((model(x) - y) ** 2).mean()
                loss.backward()
                optimizer.zero_grad()
                optimizer.step()
        """, {("TL303", 7)}),
    "clean: a closure step clears and recomputes gradients after a backward that only measured the loss": ("""
        import torch
        def check(weight, data, optimizer, plateau):
            def fn():
                optimizer.zero_grad()
                loss = (weight.mv(data) ** 2).sum()
                loss.backward()
                return loss
            start = fn().item()
            for _ in range(200):
                if plateau is not None:
                    plateau.step(fn())
                optimizer.step(fn)
            return fn().item() < start
        """, set()),
    "gradient accumulation undone: zero_grad every micro-batch, step every k-th": ("""
        import torch
        def train(model, loader, opt, accum_steps):
            for i, (x, y) in enumerate(loader):
                opt.zero_grad()
                loss = torch.nn.functional.mse_loss(model(x), y) / accum_steps
                loss.backward()
                if (i + 1) % accum_steps == 0:
                    opt.step()
        """, {("TL303", 5)}),
    "accumulation undone through helpers, a reset counter and an early continue": ("""
        import torch
        def clear(model):
            model.zero_grad(set_to_none=True)
        def update(scaler, opt):
            scaler.step(opt)
            scaler.update()
        def train(model, loader, opt, scaler, k):
            micro = 0
            for x in loader:
                loss = model(x).mean()
                scaler.scale(loss / k).backward()
                clear(model)
                micro += 1
                if micro < k:
                    continue
                update(scaler, opt)
                micro = 0
        """, {("TL303", 4)}),
    "accumulation undone: step once enough samples are accumulated, zero_grad every batch": ("""
        import torch
        def train(model, loader, optimizer, min_samples):
            seen = 0
            for x, y in loader:
                optimizer.zero_grad()
                keep = model(x).squeeze(1) < 0.999
                loss = ((model(x[keep]).squeeze(1) - y[keep]) ** 2).mean()
                loss.backward()
                seen += x[keep].shape[0]
                if seen >= min_samples:
                    optimizer.step()
                    seen = 0
        """, {("TL303", 6)}),
    "clean: samples accumulated until a threshold, cleared after the step": ("""
        import torch
        def train(model, loader, optimizer, min_samples):
            seen = 0
            for x, y in loader:
                loss = ((model(x).squeeze(1) - y) ** 2).mean()
                loss.backward()
                seen += len(y)
                if seen >= min_samples:
                    optimizer.step()
                    optimizer.zero_grad()
                    seen = 0
        """, set()),
    "accumulation undone: steps since the last update, zero_grad after the step": ("""
        import torch
        def train(model, loader, optimizer, accumulate):
            last_opt_step = -1
            for i, batch in enumerate(loader):
                model(batch).sum().backward()
                if i - last_opt_step >= accumulate:
                    optimizer.step()
                    last_opt_step = i
                optimizer.zero_grad()
        """, {("TL303", 10)}),
    "scheduler stepped before the optimizer in each iteration": ("""
        import torch
        def train(model, loader):
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
            scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, total_steps=100)
            for x, y in loader:
                optimizer.zero_grad()
                torch.nn.functional.mse_loss(model(x), y).backward()
                scheduler.step()
                optimizer.step()
        """, {("TL303", 9)}),
    "clean: scheduler after the step, a plateau scheduler given a metric, an epoch scheduler": ("""
        import torch
        def train(model, loader, optimizer, lr_scheduler, plateau, epochs):
            for epoch in range(epochs):
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = torch.nn.functional.mse_loss(model(x), y)
                    plateau.step(loss.item())
                    loss.backward()
                    optimizer.step()
                    lr_scheduler.step()
                lr_scheduler.step()
        """, set()),
    "clean: accumulation loops that clear with the step, at a window's start, or through a wrapper": ("""
        import torch
        def same_condition(model, loader, opt, k):
            for step, x in enumerate(loader):
                model(x).mean().backward()
                if step % k == 0:
                    opt.step()
                    opt.zero_grad()
        def window_start(model, loader, opt, k):
            for i, x in enumerate(loader):
                if i % k == 0:
                    opt.zero_grad()
                model(x).mean().backward()
                if (i + 1) % k == 0:
                    opt.step()
        class Accumulating:
            def __init__(self, optimizer, every):
                self.optimizer, self.every, self.calls = optimizer, every, 0
            def zero_grad(self):
                self.calls += 1
                if self.calls >= self.every:
                    self.calls = 0
                    self.optimizer.zero_grad()
            def step(self):
                self.optimizer.step()
        def wrapped(model, loader, optimizer, k):
            opt = Accumulating(optimizer, k)
            for i, x in enumerate(loader):
                opt.zero_grad()
                model(x).mean().backward()
                if (i + 1) % k == 0:
                    opt.step()
        """, set()),
    "clean: a step skipped by a non-iteration test, a warm-up, or a generator trained every n_critic": ("""
        import torch
        def skip_bad(model, loader, opt):
            for x in loader:
                opt.zero_grad()
                loss = model(x).mean()
                loss.backward()
                if loss is not None and torch.isfinite(loss):
                    opt.step()
        def warm_up(model, loader, opt, warmup):
            for it, x in enumerate(loader):
                opt.zero_grad()
                model(x).mean().backward()
                if it > warmup:
                    opt.step()
        def wgan(gen, critic, loader, opt_g, opt_d, n_critic):
            for i, x in enumerate(loader):
                opt_d.zero_grad()
                critic(gen(x)).mean().backward()
                opt_d.step()
                opt_g.zero_grad()
                if i % n_critic == 0:
                    (-critic(gen(x)).mean()).backward()
                    opt_g.step()
        """, set()),
    # TL304
    "set_detect_anomaly at module level and a Lightning Trainer": ("""
        import torch
        import lightning
        torch.autograd.set_detect_anomaly(True)
        trainer = lightning.Trainer(max_epochs=3, detect_anomaly=True)
        """, {("TL304", 4), ("TL304", 5)}),
    "clean: anomaly under a debug flag, or around one step": ("""
        import torch
        def step(model, x, args):
            if args.debug_nans:
                torch.autograd.set_detect_anomaly(True)
            with torch.autograd.detect_anomaly():
                model(x).sum().backward()
        """, set()),
    # TL306
    "sampling loop of a model put in eval mode through a chain (not frozen)": ("""
        import torch
        def ppl(sampler, metric, n):
            sampler.eval().to("cpu")
            dist = []
            for start in range(0, n, 8):
                dist.append(metric(sampler(torch.randn(8, 4))))
            return dist
        """, {("TL306", 6)}),
    "clean: a frozen model (requires_grad_(False)) records no graph (stylegan2-ada's PPL sampler)": ("""
        import torch
        def ppl(sampler, metric, n):
            sampler.eval().requires_grad_(False).to("cpu")
            dist = []
            for start in range(0, n, 8):
                dist.append(metric(sampler(torch.randn(8, 4))))
            return dist
        """, set()),
    "clean: a loop over the samples of one batch, to save images (PyTorch-GAN's sample_images)": ("""
        import torch
        def sample_images(generator, val_loader, z_dim):
            generator.eval()
            imgs = next(iter(val_loader))
            rows = []
            for a, b in zip(imgs["A"], imgs["B"]):
                fake = generator(a[None], torch.randn(1, z_dim))
                rows.append(torch.cat([a, fake.data[0]], -1))
            generator.train()
            return torch.cat(rows, -2)
        """, set()),
    "the same generator run over every batch of the validation loader": ("""
        import torch
        def sample_images(generator, val_loader, z_dim):
            generator.eval()
            rows = []
            for imgs in val_loader:
                fake = generator(imgs["A"], torch.randn(1, z_dim))
                rows.append(fake.data.cpu())
            generator.train()
            return torch.cat(rows, -2)
        """, {("TL306", 6)}),
    "evaluation over batches taken with next() in a while loop": ("""
        import torch
        def evaluate(model, val_loader):
            model.eval()
            it = iter(val_loader)
            correct = 0
            while True:
                x, y = next(it)
                correct += (model(x).argmax(-1) == y).sum().item()
        """, {("TL306", 7)}),
    "clean: a retry loop is not a loop over batches (open_clip's profiler)": ("""
        import torch
        def profile(model, x):
            model.eval()
            retries = 2
            while retries:
                retries -= 1
                try:
                    return model(x)
                except RuntimeError:
                    model = model.cpu()
        """, set()),
    "clean: a loading loop whose helper evaluates a call's result (yolov5's attempt_load)": ("""
        import torch
        def attempt_load(paths):
            models = []
            for w in paths:
                ckpt = torch.load(w, weights_only=True)
                models.append(ckpt.fuse().eval())
            return models
        def export(paths):
            for w in paths:
                ckpt = attempt_load([w])
                print(ckpt)
        """, set()),
    "a validation loop whose helper puts the model in eval mode and runs it with grad on": ("""
        import torch
        def validation_step(model, x):
            model.eval()
            return model(x)
        @torch.no_grad()
        def quiet_step(model, x):
            model.eval()
            return model(x)
        def run_validation(model, loader):
            preds = []
            for x, y in loader:
                preds.append(validation_step(model, x))
            return torch.cat(preds)
        def run_quietly(model, loader):
            return [quiet_step(model, x) for x, y in loader]
        def quiet_loop(model, loader):
            out = []
            for x, y in loader:
                out.append(quiet_step(model, x))
            return out
        """, {("TL306", 12)}),
    "validation loader loop calling a model instance": ("""
        import torch
        import torch.nn as nn
        model = nn.Linear(4, 2)
        def validate(val_loader):
            scores = []
            for x, _ in val_loader:
                scores.append(model(x).max().item())
            return scores
        """, {("TL306", 7)}),
    "clean: an adversarial attack in eval mode takes gradients of the input": ("""
        import torch
        import torch.nn.functional as F
        def pgd(model, x, y, eps=0.3, alpha=0.01, steps=10):
            model.eval()
            x_adv = x.clone()
            for _ in range(steps):
                x_adv.requires_grad_(True)
                grad, = torch.autograd.grad(F.cross_entropy(model(x_adv), y), x_adv)
                x_adv = (x_adv.detach() + alpha * grad.sign()).clamp(0, 1)
            return x_adv
        """, set()),
    # TL401
    "empty_cache every training step, in the loop or in the step function it calls": ("""
        import torch
        def train(model, loader, optimizer):
            for x, y in loader:
                optimizer.zero_grad()
                model(x).sum().backward()
                optimizer.step()
                torch.cuda.empty_cache()
        class Trainer:
            def step(self, batch):
                loss = self.model(batch).sum()
                torch.cuda.empty_cache()
                loss.backward()
            def fit(self, loader):
                while True:
                    for batch in loader:
                        self.step(batch)
                        self.optimizer.step()
                        self.optimizer.zero_grad()
        """, {("TL401", 8), ("TL401", 12)}),
    "clean: empty_cache once per epoch or phase, and in a loop that does not train": ("""
        import torch
        def fit(model, loader, optimizer, epochs, train_one_epoch):
            for epoch in range(epochs):
                for x, y in loader:
                    optimizer.zero_grad()
                    model(x).sum().backward()
                    optimizer.step()
                torch.cuda.empty_cache()
        def profile(ops, x):
            for op in ops:
                op(x).sum().backward()
                torch.cuda.empty_cache()
        """, set()),
    "clean: empty_cache in a sampling function the loop calls every k-th step": ("""
        import torch
        def train(model, loader, optimizer, sample_every, pipe):
            def generate_samples(step):
                for prompt in ("a", "b"):
                    torch.cuda.empty_cache()
                    pipe(prompt)
            for step, (x, y) in enumerate(loader):
                optimizer.zero_grad()
                model(x).sum().backward()
                optimizer.step()
                if (step + 1) % sample_every == 0:
                    generate_samples(step)
        """, set()),
    "clean: empty_cache between phases": ("""
        import torch
        def run(train, evaluate):
            train()
            torch.cuda.empty_cache()
            evaluate()
        """, set()),
    # TL402
    "append of a criterion output in an epoch loop": ("""
        import torch.nn as nn
        criterion = nn.MSELoss()
        def train(model, loader, optimizer):
            history = []
            for x, y in loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                history.append(loss)
            return history
        """, {("TL402", 11)}),
    "clip after the scaled backward is reported, the clip in the branch without AMP is not": ("""
        import torch
        def train(model, loader, optimizer, scaler, args):
            for x in loader:
                optimizer.zero_grad()
                if torch.cuda.is_available() and args.amp:
                    with torch.autocast("cuda"):
                        loss = model(x).sum()
                    scaler.scale(loss).backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    scaler.step(optimizer)
                    scaler.update()
                else:
                    loss = model(x).sum()
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    optimizer.step()
        """, {("TL305", 10)}),
    "an optimizer wrapper's step clips scaled gradients; its caller's loop is in another file": ("""
        import torch
        from torch.cuda.amp import GradScaler
        class Stepper:
            def __init__(self, params, lr, clip):
                self.params = list(params)
                self.optimizer = torch.optim.AdamW(self.params, lr=lr)
                self.scaler = GradScaler()
                self.clip = clip
            def step(self, loss):
                self.scaler.scale(loss).backward()
                torch.nn.utils.clip_grad_norm_(self.params, self.clip)
                self.scaler.step(self.optimizer)
                self.scaler.update()
                self.optimizer.zero_grad()
            def fixed_step(self, loss):
                self.scaler.scale(loss).backward()
                self.scaler.unscale_(self.optimizer)
                torch.nn.utils.clip_grad_norm_(self.params, self.clip)
                self.scaler.step(self.optimizer)
                self.scaler.update()
                self.optimizer.zero_grad()
            def clip_then_backward(self, loss):
                torch.nn.utils.clip_grad_norm_(self.params, self.clip)
                self.scaler.scale(loss).backward()
        """, {("TL305", 12)}),
    "a tracker method summing each item of the dict that holds the differentiated loss (SSA-SC)": ("""
        import torch.nn.functional as F
        class Tracker:
            def __init__(self, keys):
                self.losses = {key: 0 for key in keys}
            def update(self, loss):
                for key in loss:
                    self.losses[key] += loss[key]
        def train(net, optimizer, loader):
            tracker = Tracker(["total"])
            for x, y in loader:
                total = F.cross_entropy(net(x), y)
                loss = {"total": total, "aux": total * 0.5}
                optimizer.zero_grad()
                loss["total"].backward()
                optimizer.step()
                tracker.update(loss)
                tracker.update({key: value.item() for key, value in loss.items()})
        """, {("TL402", 17)}),
    "clean: a step's loss built from two terms with += before backward": ("""
        import torch.nn as nn
        criterion = nn.BCEWithLogitsLoss()
        def train(model, loader, optimizer):
            total = 0
            for x, pos, neg in loader:
                optimizer.zero_grad()
                loss = criterion(model(x), pos)
                loss += criterion(model(x), neg)
                loss.backward()
                optimizer.step()
                total += float(loss)
            return total
        """, set()),
    "TL402 on a step's returned loss tensor, not on an epoch's returned float": ("""
        import torch.nn.functional as F
        from utils import num_graphs
        def step(model, optimizer, x, y):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            return loss
        def epoch(model, optimizer, loader):
            total = 0
            for x, y in loader:
                optimizer.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                total += loss.item() * num_graphs(y)
                optimizer.step()
            return total / len(loader.dataset)
        def main(model, optimizer, loader, epochs):
            steps, epochs_seen = [], []
            for x, y in loader:
                loss = step(model, optimizer, x, y)
                steps.append(loss)
            for _ in range(epochs):
                loss = epoch(model, optimizer, loader)
                epochs_seen.append(loss)
            return steps, epochs_seen
        """, {("TL402", 23)}),
    "a running sum kept across steps with add_: a stats dict's tensor or one made before the loop": ("""
        import torch
        import torch.nn.functional as F
        def train(model, loader, optimizer, stats):
            running = torch.zeros(1)
            for x, y in loader:
                optimizer.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()
                stats["loss"].add_(loss)
                running.add_(loss)
        """, {("TL402", 11), ("TL402", 12)}),
    "clean: add_ of a detached loss, or into a tensor made in the iteration": ("""
        import torch
        import torch.nn.functional as F
        def train(model, loader, optimizer, stats):
            for x, y in loader:
                optimizer.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()
                stats["loss"].add_(loss.detach())
                step_total = torch.zeros(1)
                step_total.add_(loss)
        """, set()),
    "a step method the training loop calls keeps a dict of tensors with history on the object": ("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 1)
                self.step_outputs = []

            def forward(self, x):
                return self.fc(x).squeeze(-1)

            def training_step(self, x, y):
                pred = self(x)
                loss = F.mse_loss(pred, y)
                log = {"loss": loss, "mae": (pred - y).abs().mean()}
                self.step_outputs.append(log)
                self.step_outputs.append({"loss": loss.item(), "mae": (pred - y).abs().mean().item()})
                return log


        def fit(model, loader, epochs):
            opt = torch.optim.Adam(model.parameters())
            for _ in range(epochs):
                for x, y in loader:
                    log = model.training_step(x, y)
                    opt.zero_grad()
                    log["loss"].backward()
                    opt.step()
                model.step_outputs.clear()


        def main(loader):
            fit(Model(), loader, 3)
        """, {("TL402", 20)}),
    "clean: a step method keeps numbers or detached tensors": ("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 1)
                self.step_outputs = []

            def forward(self, x):
                return self.fc(x).squeeze(-1)

            def training_step(self, x, y):
                pred = self(x)
                loss = F.mse_loss(pred, y)
                log = {"loss": loss, "mae": (pred - y).abs().mean()}
                self.step_outputs.append({"loss": loss.item(), "mae": (pred - y).abs().mean().item()})
                self.step_outputs.append({key: value.detach() for key, value in log.items()})
                return log


        def fit(model, loader, epochs):
            opt = torch.optim.Adam(model.parameters())
            for _ in range(epochs):
                for x, y in loader:
                    log = model.training_step(x, y)
                    opt.zero_grad()
                    log["loss"].backward()
                    opt.step()
                model.step_outputs.clear()


        def main(loader):
            fit(Model(), loader, 3)
        """, set()),
    "predictions kept with their graph in a training loop": ("""
        import torch
        import torch.nn as nn
        model = nn.Linear(4, 2)
        def train(loader, optimizer):
            preds = []
            for x, y in loader:
                optimizer.zero_grad()
                out = model(x)
                ((out - y) ** 2).mean().backward()
                optimizer.step()
                preds.append(out)
        """, {("TL402", 12)}),
    "clean: item, detach, float, no_grad validation": ("""
        import torch
        import torch.nn.functional as F
        def train(model, loader, optimizer):
            a, b, c = [], 0.0, 0.0
            for x, y in loader:
                optimizer.zero_grad()
                loss = F.mse_loss(model(x), y)
                loss.backward()
                optimizer.step()
                a.append(loss.detach())
                b += loss.item()
                c += float(loss)
            with torch.no_grad():
                total = 0.0
                for x, y in loader:
                    total += F.mse_loss(model(x), y)
            return a, b, c, total
        """, set()),
    # TL403
    "enumerate over a DataLoader with explicit num_workers=0": ("""
        import torch
        from torch.utils.data import DataLoader
        def train(model, ds, optimizer):
            loader = DataLoader(ds, batch_size=8, num_workers=0)
            for i, (x, y) in enumerate(loader):
                optimizer.zero_grad()
                ((model(x) - y) ** 2).mean().backward()
                optimizer.step()
        """, {("TL403", 5)}, ["TL403"]),
    # TL404 / TL701
    "zero_grad to zeros on a model; torch.load weights_only False": ("""
        import torch
        def f(model, path):
            model.zero_grad(set_to_none=False)
            return torch.load(path, weights_only=False)
        """, {("TL404", 4), ("TL701", 5)}, ["TL404", "TL701"]),
    "weights_only=False on a file the module saved itself is fine, on a user-supplied one it is not": ("""
        import torch
        def cache(data, path):
            torch.save(data, path)
        def load(path):
            return torch.load(path, weights_only=False)
        def convert(in_path, out_path):
            torch.save(torch.load(in_path, weights_only=False)["model"], out_path)
        """, {("TL701", 8)}, ["TL701"]),
    "a file found by the name pattern the module writes is its own; another pattern is not": ("""
        import glob
        import torch
        def checkpoint(state, folder, step):
            path = folder + "/{step}--triples_kg.pt"
            torch.save(state, path.format(step=step))
            torch.save(state, f"{folder}/{step}-final_weights.pt")
        def resume(folder):
            found = glob.glob(folder + "/*--triples_kg.pt")
            last = torch.load(found[-1], weights_only=False)
            final = torch.load(glob.glob(f"{folder}/*-final_weights.pt")[0], weights_only=False)
            other = torch.load(glob.glob(f"{folder}/*-downloaded.pt")[0], weights_only=False)
            return last, final, other
        """, {("TL701", 12)}, ["TL701"]),
    "a file named by what the file passes a saving method's parameter (or its default) is its own": ("""
        import os
        import torch
        class Trainer:
            def __init__(self, model):
                self.model = model
            def save(self, folder, model_filename="wd_model.pt"):
                model_path = os.path.join(folder, model_filename)
                torch.save({"model": self.model}, model_path)
        def main(model):
            Trainer(model).save("out", model_filename="model_and_optimizer.pt")
            mine = torch.load(os.path.join("out", "model_and_optimizer.pt"), weights_only=False)
            default = torch.load("out/wd_model.pt", weights_only=False)
            other = torch.load(os.path.join("out", "downloaded_model.pt"), weights_only=False)
            return mine, default, other
        """, {("TL701", 14)}, ["TL701"]),
    "clean: default zero_grad and load": ("""
        import torch
        def f(model, path):
            model.zero_grad()
            return torch.load(path)
        """, set()),
    # TL702
    "numpy values in a saved history, built by appends in another method; Python numbers are fine": ("""
        import numpy as np
        import torch
        class Trainer:
            def __init__(self):
                self.losses = []
                self.accuracies = []
            def epoch(self, batch_losses, correct, total):
                self.losses.append(np.mean(batch_losses))
                self.accuracies.append(float(np.sum(correct)) / total)
            def _mean(self, values):
                if not values:
                    return None
                return np.array(values).mean()
            def save(self, path, other):
                torch.save({"loss": self.losses}, path)
                torch.save({"acc": self.accuracies, "best": np.max(self.accuracies).item()}, other)
                torch.save({"mean": self._mean(self.losses)}, path + ".mean")
            def load(self, path, other):
                history = torch.load(path)
                accuracy = torch.load(other)
                mean = torch.load(path + ".mean")
                return history, accuracy, mean
        """, {("TL702", 20), ("TL702", 22)}),
    "a Namespace stored under a key, read back through that key without weights_only": ("""
        import argparse
        import torch
        def save(model, path, args):
            state = {"state_dict": model.state_dict()}
            state["args"] = argparse.Namespace(**vars(args))
            torch.save(state, path)
        def load_args(checkpoint):
            return torch.load(checkpoint, map_location="cpu")["args"]
        def load_weights(model, checkpoint):
            state = torch.load(checkpoint)
            model.load_state_dict(state["state_dict"])
            return state.get("args")
        """, {("TL702", 9), ("TL702", 11)}),
    "parse_args() passed to the function that saves, the same path loaded; weights_only given is fine": ("""
        import argparse
        import torch
        def save_checkpoint(state, filename):
            torch.save(state, filename)
        def resume(filename):
            return torch.load(filename)
        def resume_trusted(filename):
            return torch.load(filename, weights_only=False)
        def main():
            parser = argparse.ArgumentParser()
            args, _ = parser.parse_known_args()
            save_checkpoint({"epoch": 1, "args": args}, "ckpt.pt")
        """, {("TL702", 7)}),
    "a whole model written through open() as f; another file opened as f is not that checkpoint": ("""
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def forward(self, x):
                return x
        def train(save_path, pretrained):
            model = Net()
            with open(save_path, "wb") as f:
                torch.save(model, f)
            with open(pretrained, "rb") as f:
                other = torch.load(f)
            with open(save_path, "rb") as f:
                best = torch.load(f)
            return other, best
        """, {("TL702", 14)}),
    "clean: options as a dict (vars), state_dicts, or an unknown object saved": ("""
        import argparse
        import torch
        def save(model, optimizer, path, extra):
            args = argparse.ArgumentParser().parse_args()
            torch.save({"args": vars(args), "model": model.state_dict(),
                        "optimizer": optimizer.state_dict()}, path)
            torch.save(extra, path + ".extra")
        def load(path):
            state = torch.load(path)
            return state["args"], torch.load(path + ".extra")
        """, set()),
    "clean: allow-listed Namespace, safe_globals context, pickle_module, **kwargs, state_dict load": ("""
        import argparse
        import pickle
        import torch
        from argparse import Namespace
        torch.serialization.add_safe_globals([Namespace])
        class Net(torch.nn.Module):
            def forward(self, x):
                return x
        def save(path):
            model = Net()
            torch.save({"args": argparse.Namespace(lr=0.1), "model": model.state_dict()}, path)
            torch.save(model, path + ".full")
        def load(path, model, **kwargs):
            args = torch.load(path)["args"]
            with torch.serialization.safe_globals([Net]):
                full = torch.load(path + ".full")
            again = torch.load(path + ".full", pickle_module=pickle)
            model.load_state_dict(torch.load(path + ".full"))
            return args, full, again, torch.load(path + ".full", **kwargs)
        """, set()),
    "clean: a retry with weights_only=False in the except handler; a branch on the torch version": ("""
        import pickle
        import torch
        from argparse import Namespace
        def save(path, model, args: Namespace):
            torch.save({"args": args, "model": model.state_dict()}, path)
        def load(path):
            try:
                return torch.load(path)
            except pickle.UnpicklingError:
                return torch.load(path, weights_only=False)
        def load_old(path):
            if torch.__version__ < "2.6":
                return torch.load(path)["args"]
            return torch.load(path, weights_only=False)["args"]
        """, set()),
    "a state_dict fed to load_state_dict is another file than the saved model; the args key is not": ("""
        import torch
        from argparse import Namespace
        class Net(torch.nn.Module):
            def forward(self, x):
                return x
        def save(path, args: Namespace):
            torch.save({"model": Net(), "args": args}, path)
        def finetune(path, net):
            state = torch.load(path)
            net.load_state_dict(state["model"])
        def restore(path):
            state = torch.load(path)
            return state["model"], state["args"]
        """, {("TL702", 13)}),
    "add_safe_globals of another class does not cover the saved model": ("""
        import argparse
        import torch
        import torch.nn as nn
        torch.serialization.add_safe_globals([argparse.Namespace])
        class Net(nn.Module):
            def forward(self, x):
                return x
        def export(path):
            torch.save(Net(), path)
        def restore(path):
            return torch.load(path)
        """, {("TL702", 12)}),
    # TL501 / TL502 / TL503
    "a model that seeds torch when given a seed, built without one (river-dl)": ("""
        import random
        import numpy as np
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self, dim, seed=None):
                if seed:
                    torch.manual_seed(seed)
                super().__init__()
                self.fc = nn.Linear(dim, 1)
        def main(seed):
            random.seed(seed)
            np.random.seed(seed)
            return Net(8)
        """, {("TL501", 13)}),
    "clean: the same model given the seed": ("""
        import random
        import numpy as np
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self, dim, seed=None):
                if seed:
                    torch.manual_seed(seed)
                super().__init__()
                self.fc = nn.Linear(dim, 1)
        def main(seed):
            random.seed(seed)
            np.random.seed(seed)
            return Net(8, seed=seed)
        """, set()),
    "numpy and random seeded, torch used unseeded": ("""
        import random
        import numpy as np
        import torch
        random.seed(1)
        np.random.seed(1)
        x = torch.randn(3)
        """, {("TL501", 5)}),
    "clean: every generator the file uses is seeded": ("""
        import random
        import torch
        random.seed(1)
        torch.manual_seed(1)
        x = torch.randn(3) + random.random()
        """, set()),
    "clean: a transform's draws run in the DataLoader workers, which PyTorch seeds from torch's seed": ("""
        import random
        import numpy as np
        import torch
        from torch.utils.data import DataLoader
        class Blur:
            def __call__(self, img):
                return img if random.random() < 0.5 else img * 0.5
        def main(dataset, seed, workers):
            torch.manual_seed(seed)
            np.random.seed(seed)
            return DataLoader(dataset, batch_size=8, num_workers=workers)
        """, set()),
    "a draw written into a name or label is not a draw the numbers depend on; one used as a number is": ("""
        import random
        import torch
        def unique_name(prefix):
            uid = "%06x" % random.randrange(16**6)
            return f"{prefix}_{uid}_{random.randint(0, 9)}" + str(random.random()) + "{}".format(random.random())
        def main(jitter):
            torch.manual_seed(0)
            name = unique_name("layer")
            return name, random.random() * jitter if jitter else name
        """, {("TL501", 8)}),
    "a test that seeds torch and draws from numpy; another test's draws are its own": ("""
        import numpy as np
        import torch
        def test_loader():
            torch.manual_seed(12345)
            x = torch.randn(4, 3) + torch.from_numpy(np.random.rand(4, 3))
            assert x.shape == (4, 3)
        def test_memmap(tmp_path):
            data = np.random.randn(100, 32)
            assert data.shape == (100, 32)
        """, {("TL501", 5)}),
    "clean: a test seeds torch; numpy is drawn only in another test": ("""
        import numpy as np
        import torch
        def test_loader():
            torch.manual_seed(12345)
            assert torch.randn(4, 3).shape == (4, 3)
        def test_memmap(tmp_path):
            data = np.random.randn(100, 32)
            assert data.shape == (100, 32)
        """, set()),
    "clean: the only draws make unique names": ("""
        import random
        import torch
        def unique_name(prefix):
            uid = "%06x" % random.randrange(16**6)
            return f"{prefix}_{uid}_{random.randint(0, 9)}" + str(random.random()) + "{}".format(random.random())
        def main():
            torch.manual_seed(0)
            return unique_name("layer")
        """, set()),
    "a transform's draws made in the main process: this file's loader has no workers": ("""
        import random
        import numpy as np
        import torch
        from torch.utils.data import DataLoader
        class Blur:
            def __call__(self, img):
                return img if random.random() < 0.5 else img * 0.5
        def main(dataset, seed):
            torch.manual_seed(seed)
            np.random.seed(seed)
            return DataLoader(dataset, batch_size=8)
        """, {("TL501", 10)}),
    "CUBLAS config set after CUDA work": ("""
        import os
        import torch
        x = torch.ones(3).cuda()
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
        torch.use_deterministic_algorithms(True)
        """, {("TL503", 5)}),
    "clean: gradients that never accumulate in .grad (distributed autograd, an optimizer given the loss)": ("""
        import torch
        import torch.distributed.autograd as dist_autograd
        import torch.nn.functional as F
        def rpc_train(model, opt, batches):
            for data, target in batches:
                with dist_autograd.context() as context_id:
                    loss = F.cross_entropy(model(data), target)
                    dist_autograd.backward(context_id, [loss])
                    opt.step(context_id)
        def unrolled(fmodel, diffopt, x, y):
            for _ in range(10):
                loss = F.cross_entropy(fmodel(x), y)
                diffopt.step(loss)
        """, set()),
    "float16 autocast without a GradScaler, in the loop or in a step function it calls": ("""
        import torch
        def train(model, loader, optimizer, device="cuda"):
            for x, y in loader:
                optimizer.zero_grad()
                with torch.autocast(device_type=device):
                    loss = model(x).sum()
                loss.backward()
                optimizer.step()
        def forward_step(model, x):
            with torch.cuda.amp.autocast():
                return model(x).sum()
        def fit(model, loader, optimizer):
            for x in loader:
                forward_step(model, x).backward()
                optimizer.step()
                optimizer.zero_grad()
        """, {("TL307", 6), ("TL307", 11)}),
    "clean: the plain backward runs only when autocast is off (ConvNeXt's loss_scaler branch)": ("""
        import torch
        def train(model, loader, optimizer, criterion, loss_scaler, use_amp):
            model.cuda()
            for x, y in loader:
                if use_amp:
                    with torch.cuda.amp.autocast():
                        loss = criterion(model(x), y)
                else:
                    loss = criterion(model(x), y)
                if use_amp:
                    loss_scaler(loss, optimizer)
                else:
                    loss.backward()
                    optimizer.step()
                optimizer.zero_grad()
        """, set()),
    "autocast enabled by a flag with the same plain backward either way": ("""
        import torch
        def train(model, loader, optimizer, criterion, use_amp):
            model.cuda()
            for x, y in loader:
                with torch.autocast("cuda", enabled=use_amp):
                    loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
        """, {("TL307", 6)}),
    "clean: bfloat16 autocast, a library's backward": ("""
        import torch
        def train(model, loader, optimizer, accelerator):
            for x, y in loader:
                optimizer.zero_grad()
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = model(x).sum()
                loss.backward()
                optimizer.step()
                with torch.autocast("cuda"):
                    loss = model(x).sum()
                accelerator.backward(loss)
                optimizer.step()
        """, set()),
    "autocast dtypes held in attributes: float16 reported, bfloat16-or-float32 by configuration not": ("""
        import torch
        class Trainer:
            def __init__(self, model, optimizer, bf16, fp16):
                self.model, self.optimizer = model, optimizer
                self.device = torch.device("cuda")
                self.amp_dtype = torch.bfloat16 if bf16 else torch.float32
                self.half_dtype = torch.float16 if fp16 else torch.float16
            def fit(self, loader):
                for x in loader:
                    with torch.autocast(device_type=self.device.type, dtype=self.amp_dtype):
                        loss = self.model(x).sum()
                    loss.backward()
                    self.optimizer.step()
                    self.optimizer.zero_grad()
            def fit_half(self, loader):
                for x in loader:
                    with torch.autocast(device_type=self.device.type, dtype=self.half_dtype):
                        loss = self.model(x).sum()
                    loss.backward()
                    self.optimizer.step()
                    self.optimizer.zero_grad()
        """, {("TL307", 18)}),
    "clean: autocast on a device from a parameter, in a file that never targets CUDA": ("""
        import torch
        def cpu(model, loader, optimizer, device):
            for x in loader:
                with torch.autocast(device_type=device):
                    loss = model(x).sum()
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
        """, set()),
    "clean: a GradScaler enabled by a flag": ("""
        import torch
        def train(model, loader, optimizer, use_amp):
            scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
            for x, y in loader:
                optimizer.zero_grad()
                with torch.autocast("cuda", enabled=use_amp):
                    loss = model(x).sum()
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
        """, set()),
    "clipping is missing for a recurrent model imported from the project; a closure optimizer is fine": ("""
        import torch
        import torch.nn as nn
        class Tagger(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = nn.LSTM(8, 8)
            def forward(self, x):
                return self.rnn(x)[0]
        def train(model, loader, opt):
            for x, y in loader:
                opt.zero_grad()
                loss = (model(x) - y).pow(2).sum()
                loss.backward()
                opt.step()
        def train_lbfgs(model, x, y):
            opt = torch.optim.LBFGS(model.parameters())
            for _ in range(15):
                def closure():
                    opt.zero_grad()
                    loss = (model(x) - y).pow(2).mean()
                    loss.backward()
                    return loss
                opt.step(closure)
        """, {("TL302", 11)}, ["TL302"]),
    "clipping evidence: SGD, 10x Adam's default lr, a summed loss module; none for Adam on a mean": ("""
        import torch
        import torch.nn as nn
        rnn = nn.GRU(8, 8)
        def sgd(loader):
            opt = torch.optim.SGD(rnn.parameters(), lr=1.0)
            for x, y in loader:
                opt.zero_grad()
                nn.functional.mse_loss(rnn(x)[0], y).backward()
                opt.step()
        """, {("TL302", 7)}, ["TL302"]),
    "adam at 10x its default lr with an LSTM": ("""
        import torch
        import torch.nn as nn
        rnn = nn.LSTM(8, 8)
        opt = torch.optim.Adam(rnn.parameters(), lr=0.01)
        for x, y in []:
            opt.zero_grad()
            nn.functional.mse_loss(rnn(x)[0], y).backward()
            opt.step()
        """, {("TL302", 6)}, ["TL302"]),
    "a summed CTC-free loss module": ("""
        import torch
        import torch.nn as nn
        rnn = nn.LSTM(8, 8)
        crit = nn.CrossEntropyLoss(reduction="sum")
        opt = torch.optim.Adam(rnn.parameters())
        for x, y in []:
            opt.zero_grad()
            crit(rnn(x)[0], y).backward()
            opt.step()
        """, {("TL302", 7)}, ["TL302"]),
    "clean: a short recurrence under Adam at its default lr on a mean loss": ("""
        import torch
        import torch.nn as nn
        rnn = nn.LSTM(8, 8)
        opt = torch.optim.Adam(rnn.parameters(), lr=1e-3)
        for x, y in []:
            opt.zero_grad()
            nn.functional.mse_loss(rnn(x)[0], y).backward()
            opt.step()
        """, set(), ["TL302"]),
    # TL206
    "a regulariser built from .data and a Dice term computed in NumPy: no gradient": ("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        def penalty(model):
            w = model.fc.weight.data
            return ((w @ w.t() - torch.eye(w.size(0))) ** 2).sum()
        def dice(logits, target):
            p = torch.sigmoid(logits).detach().cpu().numpy()
            t = target.cpu().numpy()
            return torch.tensor(1.0 - (2 * (p * t).sum() + 1) / (p.sum() + t.sum() + 1))
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
            def forward(self, x):
                return self.fc(x)
        def train(loader):
            model = Net()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                opt.zero_grad()
                out = model(x)
                loss = F.binary_cross_entropy_with_logits(out, y) + 0.1 * penalty(model) + dice(out, y)
                loss.backward()
                opt.step()
        """, {("TL206", 6), ("TL206", 9)}),
    "a gradient penalty and a PINN residual from autograd.grad without create_graph": ("""
        import torch
        import torch.nn as nn
        critic, net = nn.Linear(4, 1), nn.Linear(2, 1)
        def penalty(real):
            x = real.clone().requires_grad_(True)
            out = critic(x)
            g = torch.autograd.grad(out, x, torch.ones_like(out), retain_graph=True)[0]
            return ((g.norm(2, dim=1) - 1) ** 2).mean()
        def residual(x):
            x = x.clone().requires_grad_(True)
            u = net(x)
            u_x = torch.autograd.grad(u, x, torch.ones_like(u), create_graph=True)[0]
            u_xx = torch.autograd.grad(u_x, x, torch.ones_like(u_x))[0]
            return u_x - u_xx
        def train(loader, opt):
            for real in loader:
                opt.zero_grad()
                (critic(real).mean() + 10.0 * penalty(real)).backward()
                opt.step()
                opt.zero_grad()
                loss = (residual(real) ** 2).mean()
                loss.backward()
                opt.step()
        """, {("TL206", 8), ("TL206", 14)}),
    "distillation terms weighted by settings and detached where they are computed; clean: a constant one": ("""
        import torch
        def train_step(opt, loader, nets, optimizer, criterions):
            student, teacher = nets["student"], nets["teacher"]
            ce, at = criterions["ce"], criterions["at"]
            for img, target in loader:
                feats_s, out_s = student(img)
                feats_t, _ = teacher(img)
                at_loss = at(feats_s, feats_t).detach() * opt.beta
                total = ce(out_s, target) + at_loss + 0.5 * at(feats_s, feats_t).detach()
                optimizer.zero_grad()
                total.backward()
                optimizer.step()
        """, {("TL206", 9)}),
    "clean: create_graph where the derivative is in the loss; a gradient norm used as a constant weight": ("""
        import torch
        import torch.nn as nn
        critic, decoder = nn.Linear(4, 1), nn.Linear(4, 4)
        def penalty(real):
            x = real.clone().requires_grad_(True)
            out = critic(x)
            g = torch.autograd.grad(out, x, torch.ones_like(out), create_graph=True)[0]
            return ((g.norm(2, dim=1) - 1) ** 2).mean()
        def weight(nll, g_loss):
            a = torch.autograd.grad(nll, decoder.weight, retain_graph=True)[0]
            b = torch.autograd.grad(g_loss, decoder.weight, retain_graph=True)[0]
            return (a.norm() / (b.norm() + 1e-4)).clamp(0.0, 1e4).detach()
        def train(loader, opt):
            for real in loader:
                opt.zero_grad()
                (critic(real).mean() + 10.0 * penalty(real)).backward()
                opt.step()
                rec = decoder(real)
                nll, g_loss = (rec - real).abs().mean(), -critic(rec).mean()
                loss = nll + weight(nll, g_loss) * g_loss
                opt.zero_grad()
                loss.backward()
                opt.step()
        """, set()),
    "clean: the same terms with gradients; a detached target; a term computed without grad": ("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        def penalty(model):
            w = model.fc.weight
            return ((w @ w.t() - torch.eye(w.size(0))) ** 2).sum()
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
            def forward(self, x):
                return self.fc(x)
        def train(loader):
            model, teacher = Net(), Net()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                opt.zero_grad()
                out = model(x)
                target = teacher(x).detach()
                loss = F.mse_loss(out, target) + 0.1 * penalty(model)
                loss.backward()
                opt.step()
                print(loss.item() + out.detach().mean().item())
        """, set()),
    # TL405
    "a dataset normalises a view of its stored sample: from_numpy, indexing, a list element, a helper": ("""
        import numpy as np
        import torch
        from torch.utils.data import Dataset
        class Features(Dataset):
            def __init__(self, n):
                self.x = np.random.randn(n, 16).astype(np.float32)
            def __getitem__(self, idx):
                feats = torch.from_numpy(self.x[idx])
                feats.sub_(1.0).div_(2.0)
                return feats
        class Images(Dataset):
            def __init__(self, n):
                self.images = torch.rand(n, 3, 8, 8)
            def __getitem__(self, i):
                img = self.images[i]
                img /= 255.0
                return img
        class Crops(Dataset):
            def __init__(self, n):
                self.items = [np.random.rand(4, 4) for _ in range(n)]
            def __getitem__(self, index):
                arr = self.items[index]
                arr[arr < 0.1] = 0
                return torch.as_tensor(arr)
        class Loaded(Dataset):
            def __init__(self, path):
                self.inputs, self.labels = self.load(path)
            def prepare(self, im):
                for c in range(3):
                    im[c] = (im[c] - 0.5) / 0.25
                return im
            def __getitem__(self, index):
                im, label = self.inputs[index, ...], self.labels[index]
                return self.prepare(im), label
            def load(self, path):
                return np.load(path), []
        """, {("TL405", 10), ("TL405", 17), ("TL405", 24), ("TL405", 31)}),
    "a module function the dataset hands its stored sample to writes into it (first write reported)": ("""
        import numpy as np
        from torch.utils.data import Dataset
        def color_norm(im, mean, std):
            for i in range(im.shape[0]):
                im[i] = im[i] - mean[i]
                im[i] = im[i] / std[i]
            return im
        class Cifar(Dataset):
            def __init__(self, n):
                self.inputs = np.random.rand(n, 3, 8, 8)
            def prepare(self, im):
                return color_norm(im, [0.5] * 3, [0.25] * 3)
            def __getitem__(self, index):
                return self.prepare(self.inputs[index, ...]), 0
            def clean_item(self, index):
                return color_norm(self.inputs[index].copy(), [0.5] * 3, [0.25] * 3)
        """, {("TL405", 6)}),
    "clean: copies first, out-of-place ops, scalars of a 1-D array, a fancy index, a rebinding": ("""
        import numpy as np
        import torch
        from torch.utils.data import Dataset
        class Clean(Dataset):
            def __init__(self, n):
                self.x = np.random.randn(n, 16).astype(np.float32)
                self.images = torch.rand(n, 3, 8, 8)
                self.y = np.random.randint(0, 3, size=n)
            def prepare(self, im):
                im[0] = 0
                return im
            def __getitem__(self, idx):
                feats = torch.from_numpy(self.x[idx].copy())
                feats.sub_(1.0)
                img = self.images[idx].clone()
                img /= 255.0
                other = self.images[idx] / 255.0
                other.clamp_(0, 1)
                y = self.y[idx]
                y -= 1
                picked = self.x[[idx, idx]]
                picked -= 1
                view = self.images[idx]
                view = view.float() * 2
                view.mul_(0.5)
                return self.prepare(self.x[idx].copy()), feats, img, other, y, picked, view
        """, set()),
    # TL207
    "truncated BPTT: the cell state carried into the next window with its graph (only h is detached)": ("""
        import torch
        import torch.nn as nn
        class Forecaster(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(4, 32, batch_first=True)
                self.out = nn.Linear(32, 1)
            def forward(self, x, state=None):
                y, state = self.lstm(x, state)
                return self.out(y), state
        def train(series, targets, bptt):
            model = Forecaster()
            opt = torch.optim.Adam(model.parameters())
            h = c = None
            for start in range(0, series.size(1) - bptt, bptt):
                pred, (h, c) = model(series[:, start:start + bptt], None if h is None else (h, c))
                loss = nn.functional.mse_loss(pred, targets[:, start:start + bptt])
                opt.zero_grad()
                loss.backward()
                opt.step()
                h = h.detach()
        """, {("TL207", 17)}),
    "clean: the state detached each window, reset each window, or carried under no_grad": ("""
        import torch
        import torch.nn as nn
        def repackage(state):
            return tuple(s.detach() for s in state)
        def train(series, targets, bptt):
            lstm = nn.LSTM(4, 32, batch_first=True)
            opt = torch.optim.Adam(lstm.parameters())
            state = None
            for start in range(0, series.size(1) - bptt, bptt):
                out, state = lstm(series[:, start:start + bptt], state)
                loss = nn.functional.mse_loss(out[..., :1], targets[:, start:start + bptt])
                opt.zero_grad()
                loss.backward()
                opt.step()
                state = repackage(state)
        def fresh(series, targets, bptt):
            lstm = nn.LSTM(4, 32, batch_first=True)
            opt = torch.optim.Adam(lstm.parameters())
            for start in range(0, series.size(1) - bptt, bptt):
                state = None
                out, state = lstm(series[:, start:start + bptt], state)
                loss = nn.functional.mse_loss(out[..., :1], targets[:, start:start + bptt])
                opt.zero_grad()
                loss.backward()
                opt.step()
        """, set()),
    "a queue, a running statistic and a stored RNN state keep each step's graph": ("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Bank(nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = nn.Linear(32, 16)
                self.register_buffer("queue", torch.randn(16, 64))
                self.register_buffer("running", torch.zeros(16))
                self.rnn = nn.GRU(16, 16, batch_first=True)
                self.h = None
            def push(self, keys):
                self.queue[:, :keys.shape[0]] = keys.T
            def forward(self, x):
                k = F.normalize(self.enc(x), dim=1)
                self.running = 0.9 * self.running + 0.1 * k.mean(0)
                self.ema.mul_(0.9).add_(k.mean(0))
                out, self.h = self.rnn(k.unsqueeze(1), self.h)
                self.push(k)
                return k @ self.queue
        def train(model, loader, opt):
            for x, y in loader:
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """, {("TL207", 14), ("TL207", 17), ("TL207", 18), ("TL207", 19)}),
    "clean: no_grad updates, detached values, a state reset by the loop, a cache in an inference-only file": ("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Bank(nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = nn.Linear(32, 16)
                self.register_buffer("queue", torch.randn(16, 64))
                self.register_buffer("running", torch.zeros(16))
                self.rnn = nn.GRU(16, 16, batch_first=True)
                self.h = None
            @torch.no_grad()
            def push(self, keys):
                self.queue[:, :keys.shape[0]] = keys.T
            def forward(self, x):
                k = F.normalize(self.enc(x), dim=1)
                with torch.no_grad():
                    self.running = 0.9 * self.running + 0.1 * k.mean(0)
                self.ema.mul_(0.9).add_(k.mean(0).detach())
                out, self.h = self.rnn(k.unsqueeze(1), self.h)
                self.last = k
                self.push(k)
                return k @ self.queue
            def add_adapter(self, name):
                self.adapters[name] = nn.Parameter(torch.zeros(16))
        def train(model, loader, opt):
            for x, y in loader:
                model.h = None
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """, set()),
    # TL303: accumulation over an inner loop
    "zero_grad on every micro-batch of an inner accumulation loop, directly and in a trainer method": ("""
        import torch.nn.functional as F
        def nested(model, batches, opt, accum, steps):
            it = iter(batches)
            for step in range(steps):
                for _ in range(accum):
                    x, y = next(it)
                    opt.zero_grad()
                    (F.cross_entropy(model(x), y) / accum).backward()
                opt.step()
        class Trainer:
            def __init__(self, model, opt):
                self.model, self.opt = model, opt
            def micro_step(self, batch):
                self.opt.zero_grad(set_to_none=True)
                (F.cross_entropy(self.model(batch[0]), batch[1]) / 4).backward()
            def fit(self, batches, steps):
                for step in range(steps):
                    for batch in batches:
                        self.micro_step(batch)
                    self.opt.step()
        """, {("TL303", 8), ("TL303", 15)}),
    "clean: cleared after the step, before the inner loop, a NaN-skipping step": ("""
        import torch
        import torch.nn.functional as F
        def right(model, loader, opt, accum):
            for epoch in range(3):
                opt.zero_grad()
                for i, (x, y) in enumerate(loader):
                    loss = F.cross_entropy(model(x), y) / accum
                    loss.backward()
                    if (i + 1) % accum == 0:
                        opt.step()
                        opt.zero_grad()
        def right_nested(model, batches, opt, accum, steps):
            it = iter(batches)
            for step in range(steps):
                opt.zero_grad()
                for _ in range(accum):
                    x, y = next(it)
                    (F.cross_entropy(model(x), y) / accum).backward()
                opt.step()
        def skip_nan(model, loader, opt):
            for x, y in loader:
                opt.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                if torch.isfinite(loss):
                    opt.step()
        """, set()),
    # TL208
    "a TD target made by the trained network with gradients on: functional and module losses": ("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class QNet(nn.Module):
            def __init__(self, n_obs, n_actions):
                super().__init__()
                self.body = nn.Sequential(nn.Linear(n_obs, 64), nn.ReLU(), nn.Linear(64, n_actions))
            def forward(self, x):
                return self.body(x)
        class Agent:
            def __init__(self, n_obs, n_actions, gamma):
                self.q_net = QNet(n_obs, n_actions)
                self.gamma = gamma
                self.criterion = nn.MSELoss()
            def update(self, s, a, r, s2, done):
                q = self.q_net(s).gather(1, a.unsqueeze(1)).squeeze(1)
                next_q = self.q_net(s2).max(dim=1).values
                target = r + self.gamma * (1.0 - done) * next_q
                return F.smooth_l1_loss(q, target)
            def critic_loss(self, s, r, s2):
                return self.criterion(self.q_net(s).mean(-1), r + self.gamma * self.q_net(s2).mean(-1))
        """, {("TL208", 18), ("TL208", 22)}),
    "clean: target under no_grad, detached, from a target network, or a consistency loss": ("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        def dqn(s, a, r, s2, done, gamma):
            q_net = nn.Linear(4, 2)
            q = q_net(s).gather(1, a.unsqueeze(1)).squeeze(1)
            with torch.no_grad():
                next_q = q_net(s2).max(dim=1).values
            return F.mse_loss(q, r + gamma * (1 - done) * next_q)
        def detached(s, r, s2, gamma):
            q_net = nn.Linear(4, 2)
            v_next = q_net(s2).max(1)[0].detach()
            return F.mse_loss(q_net(s).max(1)[0], r + gamma * v_next)
        def target_network(s, r, s2, gamma):
            q_net, target_net = nn.Linear(4, 2), nn.Linear(4, 2)
            return F.smooth_l1_loss(q_net(s).max(1).values, r + gamma * target_net(s2).max(1).values)
        def consistency(x1, x2):
            model = nn.Linear(4, 4)
            return F.mse_loss(model(x1), model(x2))
        def regression(x, y):
            model = nn.Linear(4, 1)
            return F.mse_loss(model(x), 2.0 * y + 1.0)
        """, set()),
    # TL309
    "parameters unfrozen after the optimizer took the trainable ones; rebuilt or added elsewhere is fine": ("""
        import torch
        class FineTuner:
            def __init__(self, model, lr):
                self.model = model
                for p in model.backbone.parameters():
                    p.requires_grad = False
                self.opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
            def unfreeze(self):
                for p in self.model.backbone.parameters():
                    p.requires_grad = True
            def unfreeze_and_rebuild(self, lr):
                self.model.backbone.requires_grad_(True)
                self.opt = torch.optim.Adam(filter(lambda p: p.requires_grad, self.model.parameters()), lr=lr)
        def setup(model, lr):
            for p in model.parameters():
                p.requires_grad = True
            return torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=lr)
        def thaw(p): p.requires_grad = True
        def step(loss): loss.backward()
        """, {("TL309", 11), ("TL309", 19)}),
    "clean: the unfrozen parameters join the optimizer with add_param_group": ("""
        import torch
        class FineTuner:
            def __init__(self, model, lr):
                self.model = model
                for p in model.backbone.parameters():
                    p.requires_grad = False
                self.opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
            def unfreeze(self):
                for p in self.model.backbone.parameters():
                    p.requires_grad = True
                self.opt.add_param_group({"params": list(self.model.backbone.parameters())})
        """, set()),
    # TL310
    "a new head the optimizer is not given: a comprehension over the encoder only, and parameter groups": (_CLASSIFIER + """        def finetune(encoder, loader, lr):
            model = Classifier(encoder, 64, 10)
            trainable = [p for p in model.encoder.parameters() if p.requires_grad]
            optimizer = torch.optim.AdamW(trainable, lr=lr)
            for x, y in loader:
                loss = F.cross_entropy(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        """, {("TL310", 14)}),
    "clean: the whole model, the head in a group, a frozen head, or weights loaded": (_CLASSIFIER + """        def finetune(encoder, loader, lr):
            model = Classifier(encoder, 64, 10)
            optimizer = torch.optim.AdamW([{"params": model.encoder.parameters(), "lr": lr / 10},
                                           {"params": model.head.parameters()}], lr=lr)
            for x, y in loader:
                loss = F.cross_entropy(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        """, set()),
    "clean: the head frozen on purpose, and a pretrained model's weights loaded (a linear probe the other way)": (_CLASSIFIER + """        def finetune(encoder, loader, lr):
            model = Classifier(encoder, 64, 10)
            model.head.requires_grad_(False)
            optimizer = torch.optim.AdamW(model.encoder.parameters(), lr=lr)
            for x, y in loader:
                loss = F.cross_entropy(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        """, set()),
    # TL506
    "a data module draws the split in each loader, keeping the train part in one and the val part in the other": ("""
        import torch
        from torch.utils.data import DataLoader, random_split
        class DataModule:
            def __init__(self, dataset, val_size):
                self.dataset, self.val_size = dataset, val_size
            def train_dataloader(self):
                n = len(self.dataset)
                train, _ = random_split(self.dataset, [n - self.val_size, self.val_size])
                return DataLoader(train, batch_size=64, shuffle=True)
            def val_dataloader(self):
                n = len(self.dataset)
                _, val = random_split(self.dataset, [n - self.val_size, self.val_size])
                return DataLoader(val, batch_size=256)
        """, {("TL506", 13)}),
    "clean: seeded generators, one split kept, or the same part twice": ("""
        import torch
        from torch.utils.data import DataLoader, random_split
        class DataModule:
            def __init__(self, dataset, val_size, seed):
                self.dataset, self.val_size, self.seed = dataset, val_size, seed
            def train_dataloader(self):
                n = len(self.dataset)
                g = torch.Generator().manual_seed(self.seed)
                train, _ = random_split(self.dataset, [n - self.val_size, self.val_size], generator=g)
                return DataLoader(train, batch_size=64, shuffle=True)
            def val_dataloader(self):
                n = len(self.dataset)
                g = torch.Generator().manual_seed(self.seed)
                _, val = random_split(self.dataset, [n - self.val_size, self.val_size], generator=g)
                return DataLoader(val, batch_size=256)
        def once(dataset, n, k):
            train, val = random_split(dataset, [n - k, k])
            return train, val
        def subsample(dataset, n, k):
            first, _ = random_split(dataset, [n - k, k])
            second, _ = random_split(dataset, [n - k, k])
            return first, second
        """, set()),
    # TL507
    "ids numbered in the order of a set of words, of characters, and through a vocabulary class": ("""
        from collections import Counter
        import torch
        class Tokenizer:
            specials = ["[PAD]", "[UNK]"]
            def __init__(self, texts):
                words = {w for t in texts for w in t.split()}
                self.itos = self.specials + list(words)
                self.stoi = {w: i for i, w in enumerate(self.itos)}
        class Vocab:
            def __init__(self, tokens, bos="<s>"):
                self.index = {t: i for i, t in enumerate(tokens)}
        def char_vocab(lines, sep=""):
            flat = sep.join(lines)
            flat = list(flat.split(sep)) if sep else list(flat)
            tokens = list(set(flat))
            tokens = ["<s>", "</s>"] + [t for t in tokens if t]
            return Vocab(tokens)
        def label_ids(text):
            return {w: i for i, w in enumerate(set(text.lower().split()))}
        def frequent(texts, index, min_count):
            counts = Counter(w for t in texts for w in t.split())
            kept = {w for w, c in counts.items() if c >= min_count}
            for word in kept:
                index[word] = len(index)
        torch.manual_seed(0)
        """, {("TL507", 8), ("TL507", 16), ("TL507", 20), ("TL507", 24)}),
    "clean: sorted or first-seen order, sets of values not shown to be strings": ("""
        import torch
        def vocab(texts, labels, counts):
            words = {w for t in texts for w in t.split()}
            itos = ["[PAD]"] + sorted(words)
            stoi = {w: i for i, w in enumerate(itos)}
            ordered = list(dict.fromkeys(w for t in texts for w in t.split()))
            first_seen = {w: i for i, w in enumerate(ordered)}
            classes = list(set(labels))
            label_ids = {c: i for i, c in enumerate(classes)}
            kept = list(set(texts[0].split()))
            return stoi, first_seen, label_ids, {k: len(kept) for k in counts}
        torch.manual_seed(0)
        """, set()),
    "a split made by shuffling a list of a set of speaker names (a str field of a dataclass)": ("""
        import random
        from dataclasses import dataclass
        import torch
        @dataclass
        class Utterance:
            speaker: str
            label: int
        def speaker_split(utts, seed):
            speakers = list({u.speaker for u in utts})
            random.Random(seed).shuffle(speakers)
            return set(speakers[:2])
        def ordered_split(utts, seed):
            speakers = sorted({u.speaker for u in utts})
            random.Random(seed).shuffle(speakers)
            labels = list({u.label for u in utts})
            random.Random(seed).shuffle(labels)
            return set(speakers[:2]), labels
        torch.manual_seed(0)
        """, {("TL507", 10)}),
    # TL505
    "seeded after the model is built, directly and through a seeding helper": ("""
        import random
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
            def forward(self, x):
                return self.fc(x)
        def set_seed(seed):
            random.seed(seed)
            torch.manual_seed(seed)
        def main(seed):
            model = Net()
            set_seed(seed)
            return model
        def other(seed):
            layer = nn.Linear(4, 4)
            torch.manual_seed(seed)
            return layer
        """, {("TL505", 16), ("TL505", 20)}),
    "clean: seeded first; weights loaded after; a layer without weights; a pretrained model": ("""
        import torch
        import torch.nn as nn
        from transformers import AutoModel
        def first(seed):
            torch.manual_seed(seed)
            return nn.Linear(4, 4)
        def restored(seed, path):
            model = nn.Linear(4, 4)
            torch.manual_seed(seed)
            model.load_state_dict(torch.load(path))
            return model
        def no_weights(seed):
            act = nn.ReLU()
            torch.manual_seed(seed)
            return act
        def pretrained(seed):
            model = AutoModel.from_pretrained("bert-base-uncased")
            torch.manual_seed(seed)
            return model
        """, set()),
    "TL505 through a method, a base, an unknown call, a random parameter": ("""
        import torch
        import torch.nn as nn
        from somewhere import make_backbone
        class Head(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.proj = self._build(dim)
            def _build(self, dim):
                return nn.Sequential(nn.Linear(dim, dim), nn.ReLU())
            def forward(self, x):
                return self.proj(x)
        class Tower(Head):
            def forward(self, x):
                return x
        class Wrapped(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = make_backbone()
            def forward(self, x):
                return self.body(x)
        class Scaled(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.scale = nn.Parameter(torch.randn(dim))
            def forward(self, x):
                return x * self.scale
        def head(seed):
            a = Head(4)
            torch.manual_seed(seed)
            return a
        def tower(seed):
            b = Tower(4)
            torch.manual_seed(seed)
            return b
        def wrapped(seed):
            c = Wrapped()
            torch.manual_seed(seed)
            return c
        def scaled(seed):
            d = Scaled(4)
            torch.manual_seed(seed)
            return d
        """, {("TL505", 30), ("TL505", 34), ("TL505", 38), ("TL505", 42)}),
    "clean: TL505 after modules and transforms without weights to draw": ("""
        import warnings
        import torch
        import torch.nn as nn
        class DropPath(nn.Module):
            def __init__(self, drop_prob=0.0, scale_by_keep=True, **kwargs):
                super().__init__()
                if drop_prob < 0.0:
                    raise ValueError(f"bad drop_prob {drop_prob}")
                for key in kwargs:
                    warnings.warn(f"unknown argument {key}")
                self.drop_prob = float(drop_prob)
                self.scale_by_keep = scale_by_keep
                self.act = nn.ReLU()
                self.register_buffer("step", torch.zeros(()))
            def forward(self, x):
                keep = (torch.rand(x.shape[0], 1) > self.drop_prob).float()
                return self.act(x) * keep
        class Transform:
            def __init__(self, p=0.5):
                self.p = p
            def forward(self, data):
                return data if torch.rand(()) > self.p else -data
        def main(seed, x):
            drop = DropPath(0.1)
            torch.manual_seed(seed)
            y = drop(x)
            flip = Transform()
            torch.manual_seed(seed)
            return y, flip(x)
        """, set()),
    "clean: an evaluation loop after torch.set_grad_enabled(False) in the same function": ("""
        import torch
        def sample(model, loader):
            torch.set_grad_enabled(False)
            model.eval()
            outs = []
            for x in loader:
                outs.append(model(x).argmax(-1))
            return outs
        """, set()),
    # TL308
    "evaluation in the epoch loop leaves the model in eval mode (train() only before the loop)": ("""
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5))
            def forward(self, x):
                return self.body(x)
        @torch.no_grad()
        def evaluate(net, loader):
            net.eval()
            return sum(net(x).sum().item() for x in loader)
        def fit(loader, epochs):
            model = Net()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            model.train()
            for epoch in range(epochs):
                for x in loader:
                    opt.zero_grad()
                    model(x).pow(2).mean().backward()
                    opt.step()
                print(evaluate(model, loader))
        """, {("TL308", 23)}),
    "clean: evaluation in a context manager that restores each module's mode on exit": ("""
        from contextlib import contextmanager
        import torch
        import torch.nn as nn
        @contextmanager
        def evaluating(net):
            modes = [(m, m.training) for m in net.modules()]
            try:
                net.eval()
                yield net
            finally:
                for m, was_training in modes:
                    m.training = was_training
        def fit(loader, epochs):
            model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            model.train()
            for epoch in range(epochs):
                for x in loader:
                    opt.zero_grad()
                    model(x).pow(2).mean().backward()
                    opt.step()
                with evaluating(model), torch.no_grad():
                    print(sum(model(x).sum().item() for x in loader))
        """, set()),
    "evaluation every N steps inside the batch loop, through a trainer's methods": ("""
        import torch
        import torch.nn as nn
        class Trainer:
            def __init__(self, loader):
                self.model = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8))
                self.opt = torch.optim.Adam(self.model.parameters())
                self.loader = loader
            def validate(self):
                self.model.eval()
                with torch.no_grad():
                    return [self.model(x) for x in self.loader]
            def fit(self):
                self.model.train()
                for step, x in enumerate(self.loader):
                    self.opt.zero_grad()
                    self.model(x).mean().backward()
                    self.opt.step()
                    if step % 100 == 0:
                        self.validate()
        """, {("TL308", 20)}),
    "clean: train() each epoch, train() after the evaluation, a frozen teacher, a model without dropout": ("""
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5))
            def forward(self, x):
                return self.body(x)
        class Plain(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 8)
            def forward(self, x):
                return self.fc(x)
        @torch.no_grad()
        def evaluate(net, loader):
            net.eval()
            return sum(net(x).sum().item() for x in loader)
        def train_epoch(model, loader, opt):
            model.train()
            for x in loader:
                opt.zero_grad()
                model(x).pow(2).mean().backward()
                opt.step()
        def fit(loader, epochs):
            model, teacher, plain = Net(), Net(), Plain()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for epoch in range(epochs):
                train_epoch(model, loader, opt)
                evaluate(model, loader)
            model.train()
            teacher.eval()
            for step, x in enumerate(loader):
                opt.zero_grad()
                (model(x) - teacher(x)).pow(2).mean().backward()
                opt.step()
                if step % 10 == 0:
                    evaluate(model, loader)
                    model.train()
            plain.train()
            for x in loader:
                opt.zero_grad()
                plain(x).mean().backward()
                opt.step()
                evaluate(plain, loader)
        """, set()),
}


@pytest.mark.parametrize("name", list(CASES))
def test_training_rule_case(name):
    source, expected, *opt_in = CASES[name]
    settings = Settings(extend_select=opt_in[0]) if opt_in else None
    assert codes_lines(source, settings=settings) == expected


def test_missing_grad_clip_always_mode(tmp_path):
    from torchlint.config import settings_from_table

    settings = settings_from_table({"extend-select": ["TL302"], "TL302": {"mode": "always"}})
    source, *_ = CASES["always mode without recurrent layers"]
    assert codes_lines(source, settings=settings) == {("TL302", 4)}
    assert codes_lines(source, settings=settings_from_table({"extend-select": ["TL302"], "TL302": {"mode": "off"}})) == set()


def test_autograd_function_bodies_run_without_grad():
    source = """
        import torch
        class MaskedSoftmax(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, mask):
                out = torch.softmax(x, -1)
                out.masked_fill_(mask, 0)
                ctx.save_for_backward(out)
                return out
        class Router(torch.nn.Module):
            def forward(self, scores):
                weights = torch.softmax(scores, dim=-1)
                weights /= 2.0
                return weights
        """
    assert codes_lines(source) == {("TL203", 13)}


SEED_MODULE = """import torch


def seed_all(seed):
    torch.cuda.manual_seed_all(seed)
    torch.use_deterministic_algorithms(True)
"""


def _deterministic_project(root, extra: dict[str, str]):
    """A project whose pkg/seed.py enables deterministic algorithms, pkg/train.py imports it."""
    from pathlib import Path

    from torchlint.api import check_paths

    (root / "pyproject.toml").write_text("")
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "seed.py").write_text(SEED_MODULE)
    (root / "pkg" / "train.py").write_text("from pkg.seed import seed_all\n\nseed_all(0)\n")
    (root / "other.py").write_text(SEED_MODULE)
    for name, text in extra.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return sorted((Path(f.path).relative_to(root).as_posix(), f.line)
                  for f in check_paths([root], Settings()) if f.code == "TL502")


LAUNCHER = 'import os\n\nos.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"\nfrom pkg import train\n'


@pytest.mark.parametrize("extra, expected", [
    ({}, [("other.py", 6), ("pkg/seed.py", 6)]),
    ({"launch.py": LAUNCHER}, [("other.py", 6)]),  # a launcher sets it, then imports train -> seed
    ({"pkg/__init__.py": 'import os\nos.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":16:8")\n'},
     [("other.py", 6)]),  # the package's __init__ runs before seed.py
    ({"scripts/run.sh": "export CUBLAS_WORKSPACE_CONFIG=:4096:8\npython -m pkg.train\n"}, [("other.py", 6)]),
    ({"pkg/job.sh": "export CUBLAS_WORKSPACE_CONFIG=:4096:8\n"}, [("other.py", 6)]),  # the folder's own script
    ({"README.md": "CUBLAS_WORKSPACE_CONFIG=:16:8 python other.py\n"}, [("pkg/seed.py", 6)]),
    ({"docs/notes.md": "Deterministic runs need CUBLAS_WORKSPACE_CONFIG.\n",  # names no script
      "unrelated.py": '# os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"\n'},  # a comment sets nothing
     [("other.py", 6), ("pkg/seed.py", 6)]),
], ids=["nothing", "launcher", "package-init", "run-script", "folder-script", "readme", "unlinked"])
def test_cublas_workspace_set_elsewhere_in_the_project(tmp_path, extra, expected):
    assert _deterministic_project(tmp_path, extra) == expected


@pytest.mark.parametrize("seeding, expected", [
    ("torch.backends.cudnn.deterministic = True", [("pipeline.py", 6)]),
    ("torch.use_deterministic_algorithms(True)", [("pipeline.py", 6)]),
    ("torch.backends.cudnn.deterministic = False", []),
], ids=["cudnn-deterministic", "deterministic-algorithms", "not-asked"])
def test_trainer_benchmark_against_determinism_set_in_the_importing_script(tmp_path, seeding, expected):
    """main.py asks for deterministic runs, then runs pipeline.py's Trainer(benchmark=True)."""
    from pathlib import Path

    from torchlint.api import check_paths

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "pipeline.py").write_text(
        "from pytorch_lightning import Trainer\n\n\ndef make_trainer(epochs):\n"
        "    return Trainer(max_epochs=epochs,\n                   benchmark=True)\n")
    (tmp_path / "main.py").write_text(
        f"import torch\nfrom pipeline import make_trainer\n\n{seeding}\nmake_trainer(3).fit(None)\n")
    found = sorted((Path(f.path).relative_to(tmp_path).as_posix(), f.line)
                   for f in check_paths([tmp_path], Settings()) if f.code == "TL502")
    assert found == expected


def test_set_order_ids_only_where_the_program_seeds():
    """TL507 judges programs that ask for reproducible runs: without a seed, runs differ anyway."""
    source = CASES["ids numbered in the order of a set of words, of characters, and through a vocabulary class"][0]
    assert codes_lines(source.replace("torch.manual_seed(0)", "pass")) == set()
