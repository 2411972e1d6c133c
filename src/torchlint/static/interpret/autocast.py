"""The dtype an autocast context computes in, as written at its call."""

from __future__ import annotations

import libcst as cst

from torchlint.static.facts import ops
from torchlint.static.interpret.context import FileContext


def autocast_dtype(ctx: FileContext, call: cst.Call) -> str | None:
    """What `torch.autocast(...)` / `torch.cuda.amp.autocast()` computes in: "float16", "bfloat16",
    "default" (no dtype, device not written as a string: float16 on CUDA, bfloat16 on CPU),
    "unknown" (a dtype not shown to be float16: `dtype=self.amp_dtype`, bfloat16 or float32 by
    configuration), or None when it is not an enabled autocast."""
    qual = ctx.qualify(call.func) or ""
    if not qual.endswith("autocast") or not qual.startswith("torch."):
        return None
    dtype = None
    device = None
    for index, arg in enumerate(call.args):
        name = arg.keyword.value if arg.keyword is not None else ("device_type" if index == 0 else "")
        if name == "dtype":
            dtype = ctx.qualify(arg.value)
            if dtype is None:
                value = ctx.value(arg.value)
                dtype = "torch.float16" if value.kind == "dtype" and value.half else "unknown"
        elif name == "device_type" and isinstance(arg.value, cst.SimpleString):
            device = arg.value.evaluated_value
        elif name == "enabled" and isinstance(arg.value, cst.Name) and arg.value.value == "False":
            return None
    if dtype == "unknown":
        return dtype
    if dtype is not None:
        return "float16" if dtype in ops.FLOAT16_NAMES else "bfloat16"
    if qual == "torch.cuda.amp.autocast" or device == "cuda":
        return "float16"
    return "default" if device is None else "bfloat16"
