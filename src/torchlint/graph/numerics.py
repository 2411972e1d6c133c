"""The numerical rules on the traced graph, with the static checker's value semantics.

fx, fake-tensor and aten spellings are canonicalised to the same op names the static checker
uses (`torch.log`, `x.log()`, `nn.Sigmoid` module -> `log`/`sigmoid`), so one set of predicates
judges both depths. The graph knows things the source does not: every tensor's real dtype
(TL107 through dtype propagation, `.half()` models included) and the code of library submodules
that fx inlines.
"""

from __future__ import annotations

import importlib
import operator
from collections.abc import Callable

import torch
import torch.fx

from torchlint.finding import Finding
from torchlint.rule import RuleInfo
from torchlint.static.facts import ops, semantics
from torchlint.static.facts.arith import arith
from torchlint.static.facts.semantics import apply_op
from torchlint.static.facts.values import NOTHING, Value, constant
from torchlint.static.rules.tl101_unguarded_log import UnguardedLog, log_hazard
from torchlint.static.rules.tl102_log_of_probability import LogOfProbability
from torchlint.static.rules.tl103_bce_on_probabilities import BceOnProbabilities
from torchlint.static.rules.tl105_unguarded_sqrt import UnguardedSqrt, sqrt_problem
from torchlint.static.rules.tl106_unguarded_division import UnguardedDivision, zero_divisor
from torchlint.static.rules.tl107_half_precision_softmax import HalfPrecisionSoftmax
from torchlint.static.rules.tl108_unstable_exp import UnstableExp, overflows
from torchlint.static.rules.tl203_inplace_on_saved_tensor import SAVES_OUTPUT

__all__ = ["GraphNumerics", "SAVES_OUTPUT"]

OPERATORS = {
    operator.add: "Add", operator.iadd: "Add", operator.sub: "Subtract", operator.isub: "Subtract",
    operator.mul: "Multiply", operator.imul: "Multiply", operator.truediv: "Divide",
    operator.itruediv: "Divide", operator.pow: "Power", operator.matmul: "MatrixMultiply",
}


def _resolve(qualified: str):
    module_name, _, attribute = qualified.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError):
        return None


def _function_table() -> dict[Callable, str]:
    table = {}
    for qualified, op in ops.FUNCTION_OPS.items():
        if qualified.startswith("torch."):
            function = _resolve(qualified)
            if function is not None:
                try:
                    table[function] = op
                except TypeError:
                    pass
    return table


FUNCTIONS = _function_table()


# aten spellings (torch.export graphs) that differ from the method names
ATEN = {"_softmax": "softmax", "_log_softmax": "log_softmax", "mm": "matmul", "bmm": "matmul", "addmm": "matmul",
        "linear": "matmul", "div": "divide", "linalg_vector_norm": "norm", "binary_cross_entropy": "bce"}
ATEN_OPERATORS = {"add": "Add", "add_": "Add", "sub": "Subtract", "rsub": None, "mul": "Multiply", "pow": "Power"}


def _aten_name(node: torch.fx.Node) -> str | None:
    if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
        return node.target.overloadpacket.__name__
    return None


def _canonical(node: torch.fx.Node, modules) -> str | None:
    if node.op == "call_function":
        aten = _aten_name(node)
        if aten is not None:
            return ATEN.get(aten, ops.METHOD_OPS.get(aten))
        return FUNCTIONS.get(node.target)
    if node.op == "call_method":
        return ops.METHOD_OPS.get(str(node.target))
    if node.op == "call_module":
        layer = modules.get(str(node.target))
        if layer is not None:
            return ops.MODULE_OPS.get(f"torch.nn.{type(layer).__name__}")
    return None


class GraphNumerics:
    """Walk the executed nodes in order, compute values, report at the nodes' source lines."""

    def __init__(self, gm: torch.fx.GraphModule, locate: Callable[[torch.fx.Node], tuple[str, int]]) -> None:
        self.gm = gm
        self.modules = dict(gm.named_modules())
        self.locate = locate
        self.values: dict[torch.fx.Node, Value] = {}
        self.findings: list[Finding] = []

    def value(self, argument) -> Value:
        if isinstance(argument, torch.fx.Node):
            return self.values.get(argument, NOTHING)
        if isinstance(argument, (int, float)) and not isinstance(argument, bool):
            return constant(float(argument))
        return NOTHING

    def run(self) -> list[Finding]:
        for node in self.gm.graph.nodes:
            if "fake" not in node.meta and node.op != "placeholder":
                break  # propagation stopped here (a shape error)
            value = self._evaluate(node)
            fake = node.meta.get("fake")
            if isinstance(fake, torch.Tensor):
                value = value.but(half=fake.dtype == torch.float16)
            self.values[node] = value
            self._check(node, value)
        return self.findings

    def _evaluate(self, node: torch.fx.Node) -> Value:
        if node.op == "placeholder":
            return Value(tracked=False)  # the model's input: data, no gradient of its own
        if node.op == "get_attr":
            return Value(tracked=True)  # a parameter or buffer
        args = list(node.args)
        operator_name = OPERATORS.get(node.target) if node.op == "call_function" and not _aten_name(node) else \
            ATEN_OPERATORS.get(_aten_name(node) or "")
        if operator_name is not None and len(args) == 2:
            return arith(operator_name, self.value(args[0]), self.value(args[1]), None, None, node, False)
        op = _canonical(node, self.modules)
        x = self.value(args[0]) if args else NOTHING
        if op is None:
            name = str(node.target) if node.op == "call_method" else ""
            if name in ops.TRANSPARENT_METHODS or node.target is operator.getitem:
                return x
            return Value(tracked=True) if node.op == "call_module" else NOTHING
        if op in ("clamp", "clamp_min"):
            low = node.kwargs.get("min", args[1] if len(args) > 1 else None)
            high = node.kwargs.get("max", args[2] if len(args) > 2 and op == "clamp" else None)
            return semantics.clamp(x, self.value(low) if low is not None else None,
                                   self.value(high) if high is not None else None, node)
        if op in ("matmul", "einsum", "linear"):
            return Value(op="matmul", unbounded=True, desc="a matmul output", tracked=True, node=node)
        if op == "divide" and len(args) > 1:
            return arith("Divide", x, self.value(args[1]), None, None, node, False)
        if op in ("identity", "sequential"):
            return x
        return apply_op(op, x, node, [self.value(a) for a in args[1:]])

    def _report(self, rule: RuleInfo, node: torch.fx.Node, message: str) -> None:
        file, line = self.locate(node)
        self.findings.append(Finding(code=rule.code, name=rule.name, severity=rule.severity, message=message,
                                     path=file, line=line, column=1, end_line=line, end_column=1,
                                     help=rule.summary, depths=("graph",)))

    def _check(self, node: torch.fx.Node, value: Value) -> None:
        op = _canonical(node, self.modules)
        args = list(node.args)
        where = f"node {node.name}"
        if node.op == "call_function" and (node.target in (operator.truediv, operator.itruediv)
                                           or _aten_name(node) == "div") and len(args) == 2:
            op = "divide"
        x = self.value(args[0]) if args else NOTHING
        x_node = args[0].name if args and isinstance(args[0], torch.fx.Node) else "?"
        if op in ops.LOG_OPS:
            if x.op in ("sigmoid", "softmax") and op == "log":
                self._report(LogOfProbability.info, node, f"{where}: log of {x.desc} ({x_node}); use log_softmax / logsigmoid")
            elif log_hazard(x):
                self._report(UnguardedLog.info, node, f"{where}: log of {x.desc or x_node}, which can be 0")
        elif op == "bce":
            prediction = x if node.op == "call_function" else self.value(args[0])
            if prediction.op == "sigmoid":
                self._report(BceOnProbabilities.info, node, f"{where}: binary cross-entropy on a sigmoid output "
                             f"({x_node}); use the with-logits form on the logits")
        elif op in ("sqrt", "rsqrt") and sqrt_problem(x, op) is not None:
            self._report(UnguardedSqrt.info, node, f"{where}: {op} of {x.desc or x_node}, which can be 0"
                         f"{sqrt_problem(x, op)}")
        elif op == "divide" and len(args) > 1:
            divisor = self.value(args[1])
            if zero_divisor(divisor):
                name = args[1].name if isinstance(args[1], torch.fx.Node) else "?"
                self._report(UnguardedDivision.info, node, f"{where}: divides by {divisor.desc or name} ({name}), "
                             "which can be 0")
        elif op in ("softmax", "log_softmax", "exp") and args and isinstance(args[0], torch.fx.Node):
            fake = args[0].meta.get("fake")
            upcast = node.kwargs.get("dtype") in (torch.float32, torch.float64)
            if isinstance(fake, torch.Tensor) and fake.dtype == torch.float16 and not upcast:
                self._report(HalfPrecisionSoftmax.info, node, f"{where}: {op} of float16 {x_node}: exp overflows "
                             "above ~11 and inputs above 65504 are inf; upcast or use bfloat16")
            elif op == "exp" and overflows(x):
                self._report(UnstableExp.info, node, f"{where}: exp of {x.desc or x_node} with no upper bound: "
                             "overflows above 88.7 in float32")
