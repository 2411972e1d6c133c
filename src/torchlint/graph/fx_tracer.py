"""A torch.fx tracer that records each node's user frames by walking the Python stack.

torch.fx's own ``record_stack_traces`` symbolises the stack through torch's profiler and filters
it with the export tracer's file list, and those two imports (torch._inductor, which pulls in
torch._dynamo, and torch.export) cost about 0.9 s of every first trace of a model that fx can
trace. The frames recorded here are those `shapes._source_of` reads: from the outermost
``forward`` inwards, without torch's own files, in the same ``File "...", line N, in name`` form.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.fx

_TORCH_ROOT = str(Path(torch.__file__).resolve().parent)
_TORCH_ROOT_AS_IMPORTED = str(Path(torch.__file__).parent)


def _in_torch(filename: str) -> bool:
    return filename.startswith((_TORCH_ROOT, _TORCH_ROOT_AS_IMPORTED))


class FrameRecordingTracer(torch.fx.Tracer):
    """``torch.fx.Tracer`` whose nodes carry the stack that made them in ``node.stack_trace``."""

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        if not node.stack_trace:
            frames = user_frames(sys._getframe(1))
            if frames:
                node.stack_trace = "\n".join(f'  File "{file}", line {line}, in {func}'
                                             for file, line, func in frames)
        return node


def user_frames(frame) -> list[tuple[str, int, str]]:
    """(file, line, function) from the outermost ``forward`` on, outermost first, torch's files left out."""
    stack = []
    while frame is not None:
        code = frame.f_code
        stack.append((code.co_filename, frame.f_lineno, code.co_name))
        frame = frame.f_back
    stack.reverse()
    first = next((i for i, (_, _, func) in enumerate(stack) if func == "forward"), None)
    if first is None:
        return []
    return [entry for entry in stack[first:] if not _in_torch(entry[0])]
