"""TL703 load-pickles-on-old-torch: torch.load without weights_only in a project that supports
PyTorch < 2.6, where the default unpickles arbitrary objects."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.checkpoints import LOADS, file_key, name_tails, saves
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule
from torchlint.static.torch_support import of_file

SAFE_DEFAULT = (2, 6)  # torch.load defaults to weights_only=True from this version on


class LoadPicklesOnOldTorch(Rule):
    info = RuleInfo(
        "TL703", "load-pickles-on-old-torch", "warning",
        "torch.load without weights_only in a project that supports PyTorch < 2.6: there the default "
        "unpickles arbitrary objects, so a crafted checkpoint runs code.",
        tags=("security", "compatibility"), default_enabled=False,
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.qual in LOADS and "weights_only" not in call.kwargs and "pickle_module" not in call.kwargs \
                and not any(arg.star for arg in call.node.args):
            ctx.memo.setdefault("tl703.loads", []).append(call)

    def on_end(self, ctx: FileContext) -> None:
        loads = ctx.memo.get("tl703.loads")
        if not loads:
            return
        support = of_file(ctx)
        if support is None or not support.before(*SAFE_DEFAULT):
            return
        written = {saved.path for saved in saves(ctx)}
        written |= _attribute_sources(ctx, written)
        tails = {t for saved in saves(ctx) if saved.call is not None
                 for t in name_tails(ctx, saved.call, saved.call.param(1, "f"))}
        where = support.source if support.source.startswith("[") else f"read from {Path(support.source).name}"
        for call in loads:
            path = call.param(0, "f")
            if file_key(ctx, path) in written or tails & name_tails(ctx, call, path):
                continue  # the program reads back what it wrote itself
            ctx.report(
                self.info, call.node,
                f"`{ctx.code(call.node)}` has no weights_only, and the project supports PyTorch {support.shown} "
                f"({where}): before PyTorch 2.6 torch.load unpickles arbitrary objects by default, so a "
                "crafted checkpoint runs code when loaded. Pass weights_only=True (allow-list extra types with "
                "torch.serialization.add_safe_globals), or weights_only=False only for files you trust",
            )




def _attribute_sources(ctx: FileContext, written: set[str]) -> set[str]:
    """`self.snapshot_path = snapshot_path` for a save to `self.snapshot_path`: a load of
    `snapshot_path` reads the same file."""
    wanted = {key for key in written if key.startswith("self.") and key.count(".") == 1}
    if not wanted:
        return set()
    found: set[str] = set()
    stack = [ctx.module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name):
            for target in node.targets:
                if ctx.shape(target.target) in wanted:
                    found.add(node.value.value)
        stack.extend(node.children)
    return found
