"""TL702 load-needs-weights-only-false: torch.load (weights_only=True by default since PyTorch 2.6) of
a checkpoint the program saved with objects the weights-only unpickler refuses."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.checkpoints import (
    LOADS, Reads, Refused, Saved, allow_listed, file_key, project_saves, reads, saves,
)
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule
from torchlint.static.torch_support import of_file

SAFE_GLOBALS = "torch.serialization.safe_globals"
# set in the process, it makes torch.load default to weights_only=False
FORCE_FULL_PICKLE = "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"


class LoadNeedsWeightsOnlyFalse(Rule):
    info = RuleInfo(
        "TL702", "load-needs-weights-only-false", "error",
        "torch.load without weights_only reads back a checkpoint the program saved with an object the "
        "weights-only unpickler refuses (an argparse.Namespace, a whole model, an optimizer object): "
        "since PyTorch 2.6 it raises UnpicklingError.",
        tags=("serialization", "compatibility"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.qual in LOADS and _default_weights_only(call):
            ctx.memo.setdefault("default_loads", []).append(call)

    def on_end(self, ctx: FileContext) -> None:
        loads = ctx.memo.get("default_loads")
        if not loads or _forced_full_pickle(ctx):
            return
        support = of_file(ctx)
        if support is not None and support.only_before(2, 6):
            return  # every PyTorch the project admits reads full pickles by default
        local = [s for s in saves(ctx) if s.refused]
        imported = project_saves(ctx)
        if not local and not imported:
            return
        allowed = allow_listed(ctx)
        if allowed is None:
            return  # a list of allow-listed classes the code builds: it may hold them all
        for load in loads:
            use = reads(ctx, load)
            if _handled(ctx, use):
                continue
            found = _checkpoint(ctx, load, use, local, imported)
            if found is None:
                continue
            saved, how = found
            missing = [r for r in saved.refused if r.type.rsplit(".", 1)[-1] not in allowed]
            if not missing:
                continue
            what = missing[0]
            where = f"`{ctx.code(saved.call.node)}` writes" if saved.call else f"saved at {saved.where}"
            related = ((saved.call.node, f"the checkpoint is saved here with {what.desc}"),) if saved.call else ()
            ctx.report(
                self.info, load.node,
                f"`{ctx.code(load.node)}` {how} the checkpoint {where}, which holds {what.desc}: since PyTorch 2.6 "
                f"torch.load defaults to weights_only=True and refuses it (UnpicklingError). {_fix(what)}",
                related=related,
            )


def _fix(what: Refused) -> str:
    trusted = "or pass weights_only=False if the file is always the program's own (full pickle: trusted files only)"
    if what.stateful:
        return f"Save the {what.stateful}'s state_dict() instead, {trusted}"
    return (f"Allow-list the class with torch.serialization.add_safe_globals([{what.type}]) or the "
            f"safe_globals context, {trusted}")


def _default_weights_only(call: CallInfo) -> bool:
    """No weights_only given, nothing that could give it (`**kwargs`), no pickle_module (which makes
    the default weights_only=False)."""
    if "weights_only" in call.kwargs or "pickle_module" in call.kwargs or len(call.args) > 2:
        return False
    return not any(arg.star for arg in call.node.args)


def _forced_full_pickle(ctx: FileContext) -> bool:
    return any(getattr(entry, "kind", None) == "env" and getattr(entry, "name", None) == FORCE_FULL_PICKLE
               for entry in ctx.timeline)


def _handled(ctx: FileContext, use: Reads) -> bool:
    """The load runs under `safe_globals(...)`, in a `try` whose handler loads again (the fallback
    for a refused file), or in a branch on the torch version / on weights_only support."""
    for node in use.enclosing:
        if isinstance(node, cst.With) and any(
                isinstance(item.item, cst.Call) and ctx.qualify(item.item.func) == SAFE_GLOBALS for item in node.items):
            return True
        if isinstance(node, (cst.Try, cst.TryStar)) and any(_loads_in(ctx, handler) for handler in node.handlers):
            return True
        if isinstance(node, (cst.If, cst.IfExp)):
            test = ctx.exact_code(node.test)
            if "version" in test.lower() or "weights_only" in test:
                return True
    return False


def _loads_in(ctx: FileContext, root: cst.CSTNode) -> bool:
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call) and (ctx.qualify(node.func) if isinstance(node.func, (cst.Name, cst.Attribute))
                                           else None) in LOADS:
            return True
        stack.extend(node.children)
    return False


def _checkpoint(ctx: FileContext, load: CallInfo, use: Reads, local: list[Saved], imported: list[Saved]
                ) -> tuple[Saved, str] | None:
    """The save whose file this load reads: the same path expression (unless the load's use says
    it is another file), or a key the code reads that holds a refused object."""
    path = file_key(ctx, load.param(0, "f"))
    for saved in local + [s for s in imported if s.literal]:
        if saved.path != path or use.state_dict or use.state_dict_keys & saved.keys.keys():
            continue
        if use.keys and (saved.whole or (saved.all_keys is not None and not use.keys <= saved.all_keys)):
            continue  # it reads keys that checkpoint does not have
        return saved, "reads"
    for saved in local + imported:
        hit = sorted(k for k in use.keys - use.state_dict_keys if k in saved.keys)
        if hit and not use.state_dict_keys & saved.keys.keys():
            return saved, f"reads key '{hit[0]}' of"
    return None
