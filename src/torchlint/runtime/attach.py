"""`torchlint run` attaches to the training frameworks a script uses, when it imports them.

The process-wide watch already sees every step a framework runs (module and optimizer hooks). What
a framework adds is its set-up and its wrappers: where it hands the optimizer over (Hugging Face
`Trainer.train`, Lightning's fit start, `Accelerator.prepare`) the optimizer is checked against its
parameters (TL110), and `Accelerator.backward` is wrapped so that the loss and the line that computed
it are the user's. This is done by patching, while the run lasts, `transformers.Trainer.__init__`
(adds `TorchlintCallback`), Lightning's `Trainer.__init__` (appends its callback) and
`accelerate.Accelerator.backward`/`prepare`, as soon as their modules are imported: a finder on
`sys.meta_path` runs the patch right after the module's own code. Nothing else of the program
changes; everything is restored when the run ends.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import sys

from torchlint.runtime.reductions import installed
from torchlint.runtime.watch import Watch

TRAINER_MODULES = {
    "transformers.trainer": "transformers",
    "lightning.pytorch.trainer.trainer": "lightning",
    "pytorch_lightning.trainer.trainer": "pytorch_lightning",
    "accelerate.accelerator": "accelerate",
}


class _Patches:
    def __init__(self) -> None:
        self.saved: list[tuple[type, str, object]] = []

    def replace(self, owner: type, name: str, make) -> None:
        original = owner.__dict__[name]
        if getattr(original, "__torchlint_wrapped__", False):
            return
        wrapper = make(original)
        wrapper.__torchlint_wrapped__ = True
        wrapper.__wrapped__ = original
        wrapper.__name__, wrapper.__qualname__, wrapper.__doc__ = original.__name__, original.__qualname__, original.__doc__
        self.saved.append((owner, name, original))
        setattr(owner, name, wrapper)

    def apply(self, module_name: str, module) -> None:
        framework = TRAINER_MODULES[module_name]
        if framework == "transformers":
            self.replace(module.Trainer, "__init__", _hf_init)
        elif framework == "accelerate":
            self.replace(module.Accelerator, "backward", _accelerate_backward)
            self.replace(module.Accelerator, "prepare", _accelerate_prepare)
        else:
            self.replace(module.Trainer, "__init__", lambda original: _lightning_init(original, framework))

    def restore(self) -> None:
        for owner, name, original in reversed(self.saved):
            setattr(owner, name, original)
        self.saved.clear()


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for the trainer modules, wraps the real loader to patch after it ran."""

    def __init__(self, patches: _Patches) -> None:
        self.patches = patches

    def find_spec(self, fullname, path, target=None):
        if fullname not in TRAINER_MODULES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _PatchingLoader(spec.loader, lambda module: self.patches.apply(fullname, module))
        return spec


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader, after) -> None:
        self._loader, self._after = loader, after

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        self._after(module)

    def __getattr__(self, name):  # get_source, get_filename, ... of the real loader
        return getattr(self._loader, name)


@contextlib.contextmanager
def attached():
    """Attach to the frameworks imported now or while inside (`torchlint run` wraps the script in it)."""
    patches = _Patches()
    finder = _Finder(patches)
    for name in TRAINER_MODULES:
        if name in sys.modules:
            patches.apply(name, sys.modules[name])
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
        patches.restore()


def _hf_init(original):
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        from torchlint.integrations.common import user_site
        from torchlint.integrations.transformers import TorchlintCallback

        if Watch.process is not None and not any(isinstance(c, TorchlintCallback)
                                                 for c in self.callback_handler.callbacks):
            callback = TorchlintCallback()
            callback._site = user_site()
            self.add_callback(callback)

    return __init__


def _lightning_init(original, framework: str):
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        import importlib

        callback_class = importlib.import_module(f"torchlint.integrations.{framework}").TorchlintCallback
        if Watch.process is not None and not any(isinstance(c, callback_class) for c in self.callbacks):
            self.callbacks.append(callback_class())

    return __init__


def _accelerate_backward(original):
    def backward(self, loss, *args, **kwargs):
        from torchlint.integrations.accelerate import wrap_backward

        return wrap_backward(original.__get__(self), lambda: Watch.process)(loss, *args, **kwargs)

    return backward


def _accelerate_prepare(original):
    def prepare(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        watcher = Watch.process  # the user's own prepare(), not the Hugging Face Trainer's (its callback checks)
        if watcher is not None and not installed(sys._getframe(1).f_code.co_filename):
            import torch

            from torchlint.integrations.accelerate import FIX
            from torchlint.integrations.common import optimizer_events, user_site

            models = [a for a in args if isinstance(a, torch.nn.Module)]
            for optimizer in args:
                if isinstance(optimizer, torch.optim.Optimizer):
                    watcher.setup.extend(optimizer_events(optimizer, models[0] if models else None, FIX, user_site()))
        return result

    return prepare
