"""TL503 env-set-too-late: environment variables set after they are read."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
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
        for entry in names.get("PYTHONHASHSEED", []):
            ctx.report(self.info, entry.node,
                       "PYTHONHASHSEED is read once when the interpreter starts: setting it here changes "
                       "nothing for this process. Export it in the shell or launcher (PYTHONHASHSEED=0 python ...)")
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


__all__ = ["EnvSetTooLate", "Mark"]
