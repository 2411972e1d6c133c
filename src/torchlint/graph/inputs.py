"""`--input 'float32[B, 3, 224, 224]'`: dtype and dimensions, symbols for dynamic ones."""

from __future__ import annotations

import re
from dataclasses import dataclass

from torchlint.graph.errors import TraceInputError

DTYPES = {
    "float32": "float32", "float": "float32", "f32": "float32", "float16": "float16", "half": "float16",
    "f16": "float16", "bfloat16": "bfloat16", "bf16": "bfloat16", "float64": "float64", "double": "float64",
    "int64": "int64", "long": "int64", "int32": "int32", "int": "int32", "bool": "bool", "uint8": "uint8",
}
_SPEC = re.compile(r"^\s*(?P<dtype>[A-Za-z0-9_]+)?\s*\[(?P<dims>[^\]]*)\]\s*$")
_SYMBOL = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class InputSpec:
    dtype: str
    dims: tuple[int | str, ...]

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(str(d) for d in self.dims)}]"


def parse_input(text: str) -> InputSpec:
    match = _SPEC.match(text)
    if match is None:
        raise TraceInputError(f"cannot parse --input {text!r}: expected e.g. 'float32[B, 3, 224, 224]'")
    dtype_name = (match.group("dtype") or "float32").lower()
    if dtype_name not in DTYPES:
        raise TraceInputError(f"unknown dtype {dtype_name!r} in --input {text!r} (known: {', '.join(sorted(DTYPES))})")
    dims: list[int | str] = []
    for part in match.group("dims").split(","):
        part = part.strip()
        if not part:
            continue
        if part.isdigit():
            dims.append(int(part))
        elif _SYMBOL.match(part):
            dims.append(part)
        else:
            raise TraceInputError(f"bad dimension {part!r} in --input {text!r}: use an integer or a name like B")
    if not dims:
        raise TraceInputError(f"--input {text!r} has no dimensions")
    return InputSpec(DTYPES[dtype_name], tuple(dims))
