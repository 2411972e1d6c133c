"""The ShapeEnv's symbols in the user's names (s0 -> B), and the values of a trace as shape text."""

from __future__ import annotations

import operator
import re

import torch
import torch.fx

_MAX_ITEMS = 4  # items of a tuple shown in a message


class Symbols:
    """Map ShapeEnv symbols back to the user's names (s0 -> B)."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self._texts: dict[tuple[str, int], str] = {}  # every row of a repeated block names the same sizes

    def render(self, value) -> str:
        if isinstance(value, torch.SymInt):
            return self.text(str(value.node.expr)).replace("*", "·").replace("((", "(").replace("))", ")")
        return str(value)

    def text(self, message: str) -> str:
        """An error message with the ShapeEnv's symbols (s26) replaced by the user's names (B)."""
        key = (message, len(self.names))
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = self._renamed(message)
        return text

    def _renamed(self, message: str) -> str:
        for symbol, name in sorted(self.names.items(), key=lambda item: -len(item[0])):
            message = re.sub(rf"\b{symbol}\b", name, message)
        return message

    def shape(self, tensor: torch.Tensor) -> str:
        return self.dims(tensor.shape)

    def dims(self, sizes) -> str:
        return "[" + ", ".join(self.render(d) for d in sizes) + "]"

    def describe(self, value) -> str | None:
        """Any value a node made as text: a tensor's shape, `torch.Size([B, 64])` (``x.shape``), a size,
        a tuple of these; None for anything else."""
        if isinstance(value, torch.Tensor):
            return self.shape(value)
        if isinstance(value, torch.Size):
            return f"torch.Size({self.dims(value)})"
        if isinstance(value, (int, torch.SymInt)) and not isinstance(value, bool):
            return self.render(value)
        if isinstance(value, (tuple, list)):
            items = [self.describe(item) or "?" for item in value[:_MAX_ITEMS]]
            more = ", …" if len(value) > _MAX_ITEMS else ""
            return f"({', '.join(items)}{more})"
        return None

    def inputs(self, node: torch.fx.Node) -> list[str]:
        """The values a node took, as text; an index into one is shown: `torch.Size([B, 64])[2]`."""
        texts = [text for text in (self.describe(arg.meta.get("fake")) for arg in node.all_input_nodes)
                 if text is not None]
        index = node.args[1] if node.target is operator.getitem and len(node.args) == 2 else None
        if len(texts) == 1 and isinstance(index, int) and isinstance(node.args[0], torch.fx.Node):
            texts[0] += f"[{index}]"
        return texts
