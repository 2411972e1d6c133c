"""Trace with torch.fx and run the graph on fake tensors whose batch-like dims are symbols.

No real memory is used: the model lives on the meta device and every activation is a FakeTensor
whose sizes are SymInts from a ShapeEnv. A shape error stops at the failing node (TL601); a guard
that pins a user's symbol to a constant is a silent specialisation (TL602). Both point at the
source line fx recorded for the node.
"""

from __future__ import annotations

import io
import logging
import os
import re
import sys
import traceback
from contextlib import contextmanager, redirect_stderr
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import torch
import torch.fx
from torch._dispatch.python import enable_python_dispatcher
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext
from torch.overrides import TorchFunctionMode

from torchlint.finding import Finding
from torchlint.graph.catalog import SHAPE_MISMATCH, SHAPE_SPECIALIZATION
from torchlint.graph.costs import CostMeter, NodeCost, is_attention, nbytes
from torchlint.graph.errors import TraceInputError, clip_words
from torchlint.graph.fx_tracer import FrameRecordingTracer
from torchlint.graph.inputs import InputSpec
from torchlint.graph.recurrent import recurrent_outputs
from torchlint.graph.repeat import export_repeated
from torchlint.graph.reuse import NodeMemo, input_keys, tensor_leaves
from torchlint.graph.symbols import Symbols
from torchlint.graph.target import Target
from torchlint.graph.unpacking import unpacked, unpacking_error
from torchlint.report.text import display_path
from torchlint.static.rules.tl203_inplace_on_saved_tensor import InplaceOnSavedTensor

INPLACE_ON_SAVED = InplaceOnSavedTensor.info

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
_HINTS = (8, 7, 11, 13, 17, 19, 23, 29)  # distinct example sizes so symbols are not merged


@dataclass
class Row:
    node: str
    module: str
    op: str
    shape: str
    dtype: str
    params: int
    file: str | None = None
    line: int | None = None
    flops: object = 0  # sympy expressions in the ShapeEnv's symbols (costs.py)
    saved: object = 0
    output_bytes: object = 0


@dataclass
class TraceReport:
    target: str
    inputs: list[InputSpec]
    notes: list[str] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    parameters: int = 0
    costs: object = None  # a costs.CostSummary
    symbols: object = None  # the ShapeEnv symbol -> user name map
    meter: object = None  # the costs.CostMeter that measured the rows
    reused: object = None  # the reuse.NodeMemo (None: every node ran)


def infer_inputs(model: torch.nn.Module) -> tuple[list[InputSpec], str]:
    """Guess the input from the first layer: Linear/Conv/Embedding/recurrent."""
    for name, layer in model.named_modules():
        where = name or type(model).__name__
        if isinstance(layer, torch.nn.Embedding):
            return [InputSpec("int64", ("B", "T"))], f"int64[B, T] (first layer {where} is an Embedding)"
        if isinstance(layer, torch.nn.Linear):
            spec = InputSpec("float32", ("B", layer.in_features))
            return [spec], f"{spec} (first layer {where}: Linear(in_features={layer.in_features}))"
        for conv, spatial in ((torch.nn.Conv1d, ("L",)), (torch.nn.Conv2d, ("H", "W")), (torch.nn.Conv3d, ("D", "H", "W"))):
            if isinstance(layer, conv):
                spec = InputSpec("float32", ("B", layer.in_channels, *spatial))
                return [spec], f"{spec} (first layer {where}: {conv.__name__}(in_channels={layer.in_channels}))"
        if isinstance(layer, (torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN)):
            dims = ("B", "T", layer.input_size) if layer.batch_first else ("T", "B", layer.input_size)
            spec = InputSpec("float32", dims)
            return [spec], f"{spec} (first layer {where}: {type(layer).__name__}(input_size={layer.input_size}))"
    raise TraceInputError("cannot infer the input from the model's first layer: pass --input 'float32[B, ...]'")


def trace(target: Target, inputs: list[InputSpec] | None = None, repeat: bool = True) -> torch.fx.GraphModule:
    """torch.fx first; if it cannot trace (Python control flow on shapes, say), non-strict
    torch.export (``repeat``: of two alike blocks, repeated, see repeat.py); if both fail, one line
    naming the user's frame where tracing stopped."""
    tracer = FrameRecordingTracer()
    tracer.proxy_buffer_attributes = True  # `self.cos[:t]` with a traced t
    try:
        graph = tracer.trace(target.model)
    except Exception as error:
        where = _user_frame_of_traceback(error, target.source)
        reason = clip_words(str(error), 200) or type(error).__name__
        if inputs:
            try:
                with _quiet():
                    repeated = export_repeated(target.model, lambda: _export(target, inputs)) if repeat else None
                    gm = repeated[0] if repeated is not None else _export(target, inputs)
            except Exception as export_error:
                export_reason = clip_words(" ".join(str(export_error).split()).split(" (unhinted")[0], 200)
                raise TraceInputError(f"{target.name} does not trace with torch.fx{where}: {reason}; "
                                      f"torch.export failed too: {export_reason}") from None
            target.notes.append(f"torch.fx could not trace {target.name}{where}; traced with torch.export "
                                "(non-strict) instead")
            if repeated is not None:
                target.notes.append(repeated[1])
            return gm
        raise TraceInputError(f"{target.name} does not trace with torch.fx{where}: {reason}") from None
    return torch.fx.GraphModule(tracer.root, graph)


def _export(target: Target, inputs: list[InputSpec]) -> torch.fx.GraphModule:
    hints = _hints(inputs)
    examples = tuple(torch.empty([hints.get(d, d) for d in spec.dims], dtype=getattr(torch, spec.dtype),
                                 device=target.device) for spec in inputs)
    dynamic = tuple({i: torch.export.Dim.AUTO for i, d in enumerate(spec.dims) if isinstance(d, str)}
                    for spec in inputs)
    program = torch.export.export(target.model, examples, dynamic_shapes=dynamic, strict=False)
    gm = program.module()
    for node in list(gm.graph.nodes):  # the exported input checks would re-guard our symbolic inputs
        if node.op == "call_module" and str(node.target).startswith("_guards_fn") and not node.users:
            gm.graph.erase_node(node)
    gm.recompile()
    return gm


@contextmanager
def _quiet():
    """torch's internal logging (graphs, guard warnings, meta-kernel tracebacks) is not for our users."""
    logging.disable(logging.CRITICAL)
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)  # some of it is printed straight to stderr, not logged
    try:
        with redirect_stderr(io.StringIO()):
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
        logging.disable(logging.NOTSET)


class _SymbolicMatmul(TorchFunctionMode):
    """matmul, and the calls that reach it (linear, attention; nn.MultiheadAttention's function, since a
    mode sees no call nested in another), through torch's Python decomposition, which keeps sizes
    symbolic. torch 2.11's C++ matmul reads the concrete sizes of inputs of 3 or more dims: that pinned
    B and T to the example sizes 8 and 7, or failed when nothing required grad. Only these: under the
    Python dispatcher other ops save other tensors on the meta device (std, dropout)."""

    _OPS = frozenset({torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.Tensor.__rmatmul__,
                      torch.nn.functional.linear, torch.nn.functional.scaled_dot_product_attention,
                      torch.nn.functional.multi_head_attention_forward,
                      torch.ops.aten.matmul.default, torch.ops.aten.linear.default,
                      torch.ops.aten.scaled_dot_product_attention.default})

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in self._OPS:
            with enable_python_dispatcher():
                return func(*args, **(kwargs or {}))
        return func(*args, **(kwargs or {}))


def _hints(inputs: list[InputSpec]) -> dict[str, int]:
    """Distinct example sizes for the symbolic dims (distinct, so the ShapeEnv does not merge them)."""
    hints: dict[str, int] = {}
    for spec in inputs:
        for dim in spec.dims:
            if isinstance(dim, str) and dim not in hints:
                count = len(hints)
                hints[dim] = _HINTS[count % len(_HINTS)] + 8 * (count // len(_HINTS))
    return hints


def _user_frame_of_traceback(error: BaseException, source: Path | None) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    torch_root = str(Path(torch.__file__).parent)
    for frame in reversed(frames):
        if (source is not None and Path(frame.filename).resolve() == source) or \
                not frame.filename.startswith(torch_root) and "torchlint" not in frame.filename:
            return f" (at {Path(frame.filename).name}:{frame.lineno}: {(frame.line or '').strip()})"
    return ""


def _source_of(node: torch.fx.Node, source: Path | None) -> tuple[str | None, int | None]:
    """The innermost frame of the op's stack in the target's own file, else the innermost outside
    torch (the library line inside the block that made the op, not the top-level forward)."""
    trace_text = node.stack_trace or ""
    own = other = None
    for match in _FRAME.finditer(trace_text):
        path = Path(match.group("file"))
        if source is not None and _resolved(match.group("file")) == source:
            own = (str(path), int(match.group("line")))
        elif not match.group("file").startswith(_TORCH_ROOT) and "site-packages/torch/" not in match.group("file"):
            other = (str(path), int(match.group("line")))
    found = own or other
    return found if found is not None else (None, None)


_TORCH_ROOT = str(Path(torch.__file__).resolve().parent)


@lru_cache(maxsize=1024)
def _resolved(file: str) -> Path:
    """A frame's file, resolved once (every node's stack names the same few files)."""
    return Path(file).resolve()


def propagate(target: Target, gm: torch.fx.GraphModule, inputs: list[InputSpec], reuse: bool = True) -> TraceReport:
    """Run the graph on fake tensors; ``reuse``: repeated blocks' nodes take the first one's result (reuse.py)."""
    shape_env = ShapeEnv()
    mode = FakeTensorMode(shape_env=shape_env, allow_non_fake_inputs=True)
    symbols = Symbols()
    hints = _hints(inputs)
    fakes = []
    for spec in inputs:
        sizes = [hints[dim] if isinstance(dim, str) else dim for dim in spec.dims]
        real = torch.empty(sizes, dtype=getattr(torch, spec.dtype), device="meta")
        context = StatelessSymbolicContext(
            dynamic_sizes=[DimDynamic.DYNAMIC if isinstance(d, str) else DimDynamic.STATIC for d in spec.dims],
            constraint_sizes=[None] * len(spec.dims),
        )
        fake = mode.from_tensor(real, symbolic_context=context)
        for dim, size in zip(spec.dims, fake.shape, strict=True):
            if isinstance(dim, str) and isinstance(size, torch.SymInt):
                symbols.names.setdefault(str(size.node.expr), dim)
        fakes.append(fake)

    report = TraceReport(target.name, inputs, list(target.notes),
                         parameters=sum(p.numel() for p in target.model.parameters()), symbols=symbols)
    report.meter = meter = CostMeter()
    meter.exclude(mode, [*gm.buffers(), *(p for p in gm.parameters() if not p.requires_grad)])
    modules = dict(gm.named_modules())
    owners = _Owners(target.model, modules)
    inplace = [n for n in gm.graph.nodes if n.op == "call_method" and str(n.target).endswith("_")
               and not str(n.target).startswith("_")]
    memo = None if inplace or not reuse else NodeMemo(meter)  # the backward check needs the real graph
    report.reused = memo
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(fakes):
        raise TraceInputError(f"{target.name}.forward takes {len(placeholders)} input(s) but {len(fakes)} "
                              f"--input given")

    class Runner(torch.fx.Interpreter):
        def call_module(self, target, args, kwargs):
            layer = self.fetch_attr(target)
            if isinstance(layer, torch.nn.RNNBase) and args and isinstance(args[0], torch.Tensor):
                return recurrent_outputs(layer, args[0])
            return super().call_module(target, args, kwargs)

        def run_node(self, node: torch.fx.Node):
            cost = NodeCost()
            key = translate = None
            if memo is not None:
                args, kwargs = self.fetch_args_kwargs_from_env(node)
                in_keys = input_keys(node)
                layer = self.fetch_attr(node.target) if node.op == "call_module" else None
                key = memo.key(node, layer, args, kwargs)
            if key is not None and key in memo.entries:
                result, out_keys = memo.replay(key, in_keys, cost)
            else:
                if memo is not None:  # inputs may be objects a reused node handed out: their own storages
                    with mode:
                        args, kwargs, translate = memo.distinct(args, kwargs, in_keys)
                else:
                    args, kwargs = self.fetch_args_kwargs_from_env(node)
                result = self._run(node, args, kwargs, cost, translate)
                out_keys = meter.leaf_keys(tensor_leaves(result), translate)
                if key is not None:
                    memo.remember(key, args, kwargs, in_keys, result, out_keys, cost)
            if isinstance(result, torch.Size) and unpacked(node):
                error = unpacking_error(result, *_source_of(node, target.source))
                if error is not None:
                    raise _NodeFailure(node, error)
            node.meta["fake"] = result
            node.meta["keys"] = out_keys
            row = _row(node, result, modules, symbols, target.source, owners)
            row.flops, row.saved = cost.flops, cost.saved
            node.meta["cost"] = cost
            node.meta["storages"] = [k for k in out_keys if k is not None]
            tensor = _first_tensor(result)
            if tensor is not None:
                row.output_bytes = nbytes(tensor)
            report.rows.append(row)
            return result

        def _run(self, node: torch.fx.Node, args, kwargs, cost: NodeCost, translate: dict | None):
            pinned_before = _pinned(shape_env, symbols)
            guards_before = len(shape_env.guards)
            attention = list(args[:3]) if is_attention(node) else None
            if attention is not None and not all(isinstance(a, torch.Tensor) for a in attention):
                attention = None
            try:
                with mode, meter.node(cost, attention, translate), self._set_current_node(node):
                    result = getattr(self, node.op)(node.target, args, kwargs)
                    meter.output = result
            except Exception as error:
                raise _NodeFailure(node, error) from None
            for symbol, value in _pinned(shape_env, symbols).items():
                if symbol not in pinned_before:
                    guards = [symbols.text(str(g.expr)) for g in shape_env.guards[guards_before:]]
                    report.findings.append(_specialization(node, symbol, value, target, modules, guards))
            return result

    output = None
    try:
        with _quiet(), meter.saving(), _SymbolicMatmul():  # a failing meta kernel's logged traceback is TL601 instead
            output = Runner(gm).run(*fakes)
    except _NodeFailure as failure:
        report.findings.append(_mismatch(failure.node, failure.error, target, modules, symbols, Runner))
    from torchlint.graph.numerics import SAVES_OUTPUT, GraphNumerics

    numerics = GraphNumerics(gm, lambda node: _location(node, target))
    report.findings.extend(numerics.run())
    inplace = [n for n in inplace if "fake" in n.meta]
    if output is not None and inplace:
        error = _backward_error(output, mode)
        if error is not None:
            culprit = next((n for n in inplace if n.args and numerics.values.get(n.args[0]) is not None
                            and numerics.values[n.args[0]].op in SAVES_OUTPUT), inplace[0])
            file, line = _location(culprit, target)
            saved = culprit.args[0].name if culprit.args and isinstance(culprit.args[0], torch.fx.Node) else "?"
            report.findings.append(_finding(
                INPLACE_ON_SAVED, f"node {culprit.name}: `.{culprit.target}()` overwrites {saved}, which backward "
                f"needs; a backward pass on fake tensors fails with: {symbols.text(error)}", file, line))
    report.findings.sort(key=lambda f: (f.path, f.line, f.code))
    return report


def _backward_error(output, mode: FakeTensorMode) -> str | None:
    """Run backward through the fake graph; autograd's own version check finds in-place damage."""
    tensors = [t for t in (output if isinstance(output, (tuple, list)) else [output])
               if isinstance(t, torch.Tensor) and t.requires_grad]
    if not tensors:
        return None
    try:
        with mode:
            sum(t.float().sum() for t in tensors).backward()
    except RuntimeError as error:
        text = " ".join(str(error).split())
        if "modified by an inplace operation" in text:
            return text.split(" Hint:")[0][:220]
    return None


class _NodeFailure(Exception):
    def __init__(self, node: torch.fx.Node, error: Exception) -> None:
        super().__init__(str(error))
        self.node = node
        self.error = error


def _pinned(shape_env: ShapeEnv, symbols: Symbols) -> dict[str, int]:
    """The user's symbols that the guards so far have replaced by a constant."""
    pinned = {}
    for symbol, value in shape_env.replacements.items():
        name = symbols.names.get(str(symbol))
        if name is not None and getattr(value, "is_Integer", False):
            pinned[name] = int(value)
    return pinned


def _module_of(node: torch.fx.Node, modules) -> tuple[str, str]:
    if node.op == "call_module":
        layer = modules.get(str(node.target))
        return str(node.target), type(layer).__name__ if layer is not None else "module"
    if node.op == "call_function":
        owner = _export_module_path(node)
        if isinstance(node.target, torch._ops.OpOverload):
            return owner, f"aten.{node.target.overloadpacket.__name__}"
        return owner, getattr(node.target, "__name__", str(node.target))
    if node.op == "call_method":
        return _export_module_path(node), f".{node.target}()"
    return "-", {"placeholder": "input", "output": "output", "get_attr": "attribute"}.get(node.op, node.op)


def _export_module_path(node: torch.fx.Node) -> str:
    """The innermost module an op ran in (`transformer.h.0.attn.c_attn`, recorded by torch.fx and
    torch.export alike), '-' for the root."""
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return "-"
    path = str(list(stack.values())[-1][0])
    return path if path and not path.startswith("_") else "-"


def _first_tensor(result) -> torch.Tensor | None:
    """The tensor a node made, or the first of the tuple it made."""
    if isinstance(result, torch.Tensor):
        return result
    if isinstance(result, (tuple, list)) and result and isinstance(result[0], torch.Tensor):
        return result[0]
    return None


class _Owners:
    """Which row shows which parameters: a called module's row shows all of its parameters, and the
    first op that ran inside a module (a torch.export graph, or a module torch.fx traced through)
    shows the parameters that module holds itself. Each parameter is shown once (a tied weight at
    its first use), so the rows add up to the model's count."""

    def __init__(self, model: torch.nn.Module, modules) -> None:
        self.model = dict(model.named_modules())
        self.modules = modules
        self.shown: set[int] = set()

    def params(self, node, module: str) -> int:
        if node.op == "call_module" and module in self.modules:
            held = self.modules[module].parameters()
        elif node.op in ("call_function", "call_method") and module in self.model:
            held = self.model[module].parameters(recurse=False)
        else:
            return 0
        count = 0
        for parameter in held:
            if id(parameter) not in self.shown:
                self.shown.add(id(parameter))
                count += parameter.numel()
        return count


def _row(node, result, modules, symbols: Symbols, source, owners: _Owners) -> Row:
    module, op = _module_of(node, modules)
    tensor = _first_tensor(result)
    shape = symbols.shape(tensor) if tensor is not None else "-"
    dtype = str(tensor.dtype).replace("torch.", "") if tensor is not None else "-"
    file, line = _source_of(node, source)
    return Row(node.name, module, op, shape, dtype, owners.params(node, module), file, line)


def _location(node, target: Target) -> tuple[str, int]:
    file, line = _source_of(node, target.source)
    if file is None:
        file, line = (str(target.source) if target.source else target.name), 1
    return display_path(file), line


def _finding(rule, message: str, file: str, line: int) -> Finding:
    return Finding(code=rule.code, name=rule.name, severity=rule.severity, message=message, path=file,
                   line=line, column=1, end_line=line, end_column=1, help=rule.summary, depths=("graph",))


def _mismatch(node, error: Exception, target: Target, modules, symbols: Symbols, runner) -> Finding:
    module, op = _module_of(node, modules)
    shapes = symbols.inputs(node)
    detail = symbols.text(" ".join(str(error).split()).split(" While executing")[0][:200])
    layer = modules.get(module)
    if isinstance(layer, torch.nn.Linear) and shapes:
        what = f"{shapes[0]} × [{layer.in_features}, {layer.out_features}]"
    else:
        what = ", ".join(shapes) if shapes else "its inputs"
    label = f"{module} ({op})" if module != "-" else op
    file, line = _location(node, target)
    return _finding(SHAPE_MISMATCH, f"{label}: {what}: {detail}", file, line)


def _specialization(node, symbol: str, value: int, target: Target, modules, guards: list[str]) -> Finding:
    module, op = _module_of(node, modules)
    label = f"{module} ({op})" if module != "-" else op
    file, line = _location(node, target)
    guard = f" (guard: {guards[0]})" if guards else ""
    return _finding(SHAPE_SPECIALIZATION,
                    f"{label} only works for {symbol} = {value}{guard}: this node pins the symbolic dimension "
                    f"{symbol} to a constant, so any other {symbol} fails at run time", file, line)
