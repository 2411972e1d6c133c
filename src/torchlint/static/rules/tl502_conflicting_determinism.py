"""TL502 conflicting-determinism: settings that undo each other or cannot work."""

from __future__ import annotations

import re

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule
from torchlint.static.interpret.scopes import Mark
from torchlint.static.project_env import code_mentions, code_text, set_elsewhere
from torchlint.static.traverse import nodes_of

WORKSPACE = "CUBLAS_WORKSPACE_CONFIG"
LIGHTNING = ("lightning.", "pytorch_lightning.")
_DETERMINISTIC = re.compile(r"cudnn\s*\.\s*deterministic\s*=\s*True\b|use_deterministic_algorithms\s*\(\s*(mode\s*=\s*)?True\b")
# Evidence that a file may run on CUDA: `.cuda()`, torch.cuda.*, a "cuda" device string, device_map=.
_CUDA = re.compile(r"\.\s*cuda\s*\(|\btorch\s*\.\s*cuda\b|[\"']\s*cuda\b|\bdevice_map\b")

# Evidence that a script trains: without it (a demo or evaluation script setting both in its main),
# kernel choice moves outputs in their last bits, which no one reproducing a result would notice.
_TRAINS = re.compile(r"\.\s*(backward|fit|step|train)\s*\(|\bTrainer\s*\(|\boptim\b")


def _script_main(ctx: FileContext, scope) -> bool:
    """Code the file runs as a script: under its `if __name__ == "__main__":`, or in a function that
    block names (its `main`, called or handed to a launcher); not code a module runs when imported,
    nor a helper others call."""
    if scope.function is None:
        return any("__name__" in ctx.code(test) for test, _value in scope.gates)
    for statement in ctx.module.body:
        if isinstance(statement, cst.If) and "__name__" in ctx.code(statement.test) and any(
                name.value == scope.function for name in nodes_of(statement.body, (cst.Name,))):
            return True
    return False


def _exclusive(a, b) -> bool:
    """Two scopes on opposite arms of one `if` (`if deterministic: ... else: benchmark = True`)."""
    tests = {id(test): value for test, value in a.gates}
    return any(id(test) in tests and tests[id(test)] != value for test, value in b.gates)


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
        "cudnn.deterministic with cudnn.benchmark (also a Lightning Trainer's), or deterministic algorithms without CUBLAS_WORKSPACE_CONFIG.",
        tags=("reproducibility",),
    )

    def on_end(self, ctx: FileContext) -> None:
        settings: dict[str, list[Mark]] = {}
        for mark in ctx.timeline:
            if isinstance(mark, Mark) and mark.kind == "setattr" and _is_true(mark.value):
                settings.setdefault(mark.name, []).append(mark)
        # a benchmark = True that can run with a deterministic = True: not its `else:` arm
        benchmark = next((b for b in reversed(settings.get("torch.backends.cudnn.benchmark", ()))
                          if any(not _exclusive(b.scope, d.scope)
                                 for d in settings.get("torch.backends.cudnn.deterministic", ()))), None)
        if benchmark is not None and (not _script_main(ctx, benchmark.scope) or _TRAINS.search(ctx.source)):
            ctx.report(self.info, benchmark.node,
                       "cudnn.benchmark = True autotunes to the fastest (possibly non-deterministic) kernel per "
                       "shape, defeating cudnn.deterministic = True set in this file; set benchmark = False")
        self._trainer_benchmark(ctx)
        calls = [call for call in ctx.calls.values() if call.qual == "torch.use_deterministic_algorithms"
                 and _may_be_true(ctx, call.param(0, "mode")) and _may_be_false(call.kwargs.get("warn_only"))]
        if not calls or not _workspace_unset(ctx):
            return
        for call in calls:
            ctx.report(self.info, call.node,
                       f"`{ctx.code(call.node)}` without CUBLAS_WORKSPACE_CONFIG in this program: on CUDA >= 10.2 "
                       "the first cuBLAS matmul raises 'Deterministic behavior was enabled ... "
                       "CUBLAS_WORKSPACE_CONFIG'. Set os.environ['CUBLAS_WORKSPACE_CONFIG'] = ':4096:8' before "
                       "CUDA starts (or export it), or pass warn_only=True")


    def _trainer_benchmark(self, ctx: FileContext) -> None:
        """`Trainer(benchmark=True)` in a program that asks for deterministic runs: Lightning sets
        cudnn.benchmark = True when it builds the Trainer, after the script's own settings."""
        for call in ctx.calls.values():
            if call.name != "Trainer" or not (call.qual or "").startswith(LIGHTNING) \
                    or not _is_true(call.kwargs.get("benchmark")):
                continue
            asked = call.kwargs.get("deterministic")
            if _is_true(asked) or (isinstance(asked, cst.SimpleString) and asked.evaluated_value == "warn"):
                where = "`deterministic=` of the same Trainer"
            else:
                where = _determinism_asked(ctx)
                if where is None:
                    continue
            ctx.report(self.info, call.kwargs["benchmark"],
                       f"`benchmark=True` makes the Trainer set cudnn.benchmark = True, so cuDNN autotunes its "
                       f"convolution algorithms on every run and results differ between runs despite the "
                       f"{where}; pass benchmark=False (or leave it unset: deterministic=True then defaults "
                       f"it to False)")


def _determinism_asked(ctx: FileContext) -> str | None:
    """Where this program asks for deterministic cuDNN or algorithms: this file, or a project file
    that imports it or that it imports."""
    if _DETERMINISTIC.search(code_text(ctx.source)):
        return "deterministic setting in this file"
    if ctx.project is None or ctx.file is None:
        return None
    other = set_elsewhere(ctx.project, ctx.file, "deterministic", ctx.deps, accept=_DETERMINISTIC.search)
    if other is not None:
        return f"deterministic setting in {other.name}"
    return None


def _may_be_true(ctx: FileContext, mode) -> bool:
    """`True`, or a value that may be (a config flag); not `False`, `None` or a constant 0."""
    if mode is None or (isinstance(mode, cst.Name) and mode.value in ("False", "None")):
        return False
    return ctx.value(mode).const != 0


def _may_be_false(warn_only) -> bool:
    """warn_only=True turns the error into a warning; a flag given there is the author's choice."""
    return warn_only is None or (isinstance(warn_only, cst.Name) and warn_only.value == "False")


def _workspace_unset(ctx: FileContext) -> bool:
    """No CUBLAS_WORKSPACE_CONFIG anywhere the program could get it from, and the file may run on CUDA
    (on a CPU-only program the check never fires)."""
    if WORKSPACE in env_names(ctx) or code_mentions(ctx.source, WORKSPACE):
        return False
    if not _CUDA.search(code_text(ctx.source)):
        return False
    if ctx.project is not None and ctx.file is not None:
        return set_elsewhere(ctx.project, ctx.file, WORKSPACE, ctx.deps) is None
    return True
