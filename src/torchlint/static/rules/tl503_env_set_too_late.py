"""TL503 env-set-too-late: environment variables set after they are read."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.hash_order import set_iteration
from torchlint.static.parsing import statement_memo
from torchlint.static.rules.base import Rule
from torchlint.static.rules.tl502_conflicting_determinism import env_names
from torchlint.static.interpret.scopes import Mark

NOT_CUDA_WORK = frozenset({"manual_seed", "manual_seed_all", "is_available", "device_count", "seed", "seed_all"})


def is_cuda_work(ctx: FileContext, call: CallInfo) -> bool:
    qual = call.qual or ""
    if call.form == "function" and qual.startswith("torch.cuda.") and call.name not in NOT_CUDA_WORK:
        return True
    if call.form == "method" and call.name == "cuda":
        return True
    for argument in [*call.args, *call.kwargs.values()] if call.name in ("to", "tensor", "zeros", "ones",
                                                                         "randn", "rand", "empty") else []:
        if isinstance(argument, cst.SimpleString) and "cuda" in argument.value:
            return True
    return False


class EnvSetTooLate(Rule):
    info = RuleInfo(
        "TL503", "env-set-too-late", "warning",
        "PYTHONHASHSEED set inside the program, or CUBLAS_WORKSPACE_CONFIG set after CUDA work: no effect.",
        tags=("reproducibility",),
    )

    def on_end(self, ctx: FileContext) -> None:
        names = env_names(ctx)
        hashed = names.get("PYTHONHASHSEED", [])
        evidence = _hash_order_evidence(ctx) if hashed else None
        for entry in hashed if evidence is not None else ():
            ctx.report(self.info, entry.node,
                       "PYTHONHASHSEED is read once when the interpreter starts: setting it here changes "
                       "nothing for this process, and the program iterates over a set, whose order of strings "
                       "changes from run to run. Export it in the shell or launcher (PYTHONHASHSEED=0 python "
                       "...), or iterate in sorted order",
                       related=(evidence,))
        cublas = names.get("CUBLAS_WORKSPACE_CONFIG", [])
        if not cublas:
            return
        first_cuda = None
        for entry in ctx.timeline:
            if entry is cublas[0] or (isinstance(entry, CallInfo) and entry.node is cublas[0].node):
                break
            if isinstance(entry, CallInfo) and is_cuda_work(ctx, entry):
                first_cuda = entry
                break
        if first_cuda is not None:
            node = cublas[0].node
            ctx.report(self.info, node,
                       f"CUBLAS_WORKSPACE_CONFIG is set after CUDA work (`{ctx.code(first_cuda.node, 40)}`): "
                       "cuBLAS has already read it. Set it before the first CUDA call, or export it")


def _hash_order_evidence(ctx: FileContext) -> tuple | None:
    """Where the program iterates over a set: in this file, or in a project file importing it (the
    script whose seeding helper this is). None when nothing depends on the hash seed."""
    node = set_iteration(ctx.module, statement_memo(ctx.module, "set_iteration"))
    if node is not None:
        return (node, "a set is iterated here: its order depends on the hash seed")
    if ctx.project is None or ctx.file is None:
        return None
    found: list = []

    def iterates(summary) -> bool:
        where = set_iteration(summary.module) if summary.module is not None else None
        if where is not None:
            found.append(where)
        return where is not None

    importer = ctx.project.importer_where(ctx.file, ctx.deps, iterates)
    if importer is None:
        return None
    return (found[-1], "a set is iterated here: its order depends on the hash seed", str(importer))


__all__ = ["EnvSetTooLate", "Mark"]
