"""TL502 conflicting-determinism: settings that undo each other or cannot work."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule
from torchlint.static.interpret.scopes import Mark


def _is_true(node) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def env_names(ctx: FileContext) -> dict[str, list]:
    """Environment variables this file sets: os.environ[...] =, os.environ.setdefault(...), os.putenv(...)."""
    found: dict[str, list] = {}
    for entry in ctx.timeline:
        if isinstance(entry, Mark) and entry.kind == "env":
            found.setdefault(entry.name, []).append(entry)
        elif isinstance(entry, CallInfo) and entry.args and isinstance(entry.args[0], cst.SimpleString):
            target = ctx.shape(entry.node.func)
            if target in ("os.environ.setdefault", "os.putenv", "environ.setdefault"):
                found.setdefault(str(entry.args[0].evaluated_value), []).append(entry)
    return found


class ConflictingDeterminism(Rule):
    info = RuleInfo(
        "TL502", "conflicting-determinism", "warning",
        "cudnn.deterministic with cudnn.benchmark, or deterministic algorithms without CUBLAS_WORKSPACE_CONFIG.",
        tags=("reproducibility",),
    )

    def on_end(self, ctx: FileContext) -> None:
        settings = {m.name: m for m in ctx.timeline if isinstance(m, Mark) and m.kind == "setattr"
                    and _is_true(m.value)}
        deterministic = settings.get("torch.backends.cudnn.deterministic")
        benchmark = settings.get("torch.backends.cudnn.benchmark")
        if deterministic is not None and benchmark is not None:
            ctx.report(self.info, benchmark.node,
                       "cudnn.benchmark = True autotunes to the fastest (possibly non-deterministic) kernel per "
                       "shape, defeating cudnn.deterministic = True set in this file; set benchmark = False")
        if "CUBLAS_WORKSPACE_CONFIG" in env_names(ctx):
            return
        for call in ctx.calls.values():
            if call.qual == "torch.use_deterministic_algorithms" and call.args and _is_true(call.args[0]) \
                    and not _is_true(call.kwargs.get("warn_only")):
                ctx.report(self.info, call.node,
                           f"`{ctx.code(call.node)}` without CUBLAS_WORKSPACE_CONFIG: cuBLAS matmuls on CUDA "
                           "raise 'Deterministic behavior was enabled ... CUBLAS_WORKSPACE_CONFIG'. Export "
                           "CUBLAS_WORKSPACE_CONFIG=:4096:8 before CUDA starts")
