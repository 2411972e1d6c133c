"""Per-file state shared by the walker and the rules."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.facts.values import NOTHING, Value
from torchlint.static.interpret.scopes import MODULE_SCOPE, Body, Scope
from torchlint.static.parsing import statement_memo
from torchlint.static.traverse import local_assignments


@dataclass
class PendingFix:
    message: str
    applicability: str  # "safe" | "unsafe"
    replacements: list[tuple[cst.CSTNode, str]]


@dataclass
class Pending:
    """A finding whose position is resolved after the walk (only files with findings pay)."""

    rule: RuleInfo
    node: cst.CSTNode
    message: str
    fix: PendingFix | None = None
    # (node, what happens there) in this file, or (node, what, path) in another project module
    related: tuple[tuple, ...] = ()


class CallInfo:
    """A call resolved to a canonical op: the form it was written in and its arguments."""

    __slots__ = ("node", "op", "qual", "form", "receiver", "args", "kwargs", "callee", "scope")

    def __init__(self, node: cst.Call) -> None:
        self.node = node
        self.op: str | None = None
        self.qual: str | None = None  # qualified name for function/class calls
        self.form = "unknown"  # "function" | "method" | "module" | "local" | "unknown"
        self.receiver: cst.BaseExpression | None = None  # `x` in `x.log()`
        self.args: list[cst.BaseExpression] = []
        self.kwargs: dict[str, cst.BaseExpression] = {}
        self.callee: Value = NOTHING
        self.scope: Scope = MODULE_SCOPE

    @property
    def name(self) -> str:
        """Last component of the called name: `step` for `opt.step()`, `load` for `torch.load`."""
        return (self.qual or "").rsplit(".", 1)[-1]

    @property
    def operand(self) -> cst.BaseExpression | None:
        """The tensor an op applies to: the receiver of a method, else the first argument."""
        if self.form == "method":
            return self.receiver
        return self.args[0] if self.args else None

    def param(self, position: int, name: str) -> cst.BaseExpression | None:
        """Argument by its position in the function form (method form shifts by one) or name."""
        if name in self.kwargs:
            return self.kwargs[name]
        if self.form == "method":
            position -= 1
        if 0 <= position < len(self.args):
            return self.args[position]
        return None


# The code of nodes written out for a document the language server checks, by node object: a node
# of a statement it reuses from one edit to the next is not written out again. Nodes are immutable;
# an entry keeps its node alive, so an id is never taken for another node's.
CODE_KEPT = 4096


@dataclass
class FileContext:
    path: str
    source: str
    module: cst.Module
    options: dict[str, dict[str, Any]]
    aliases: dict[str, str] = field(default_factory=dict)
    values: dict[int, Value] = field(default_factory=dict)
    calls: dict[int, CallInfo] = field(default_factory=dict)
    claimed: set[int] = field(default_factory=set)
    pending: list[Pending] = field(default_factory=list)
    module_body: Body | None = None
    loops: list[Body] = field(default_factory=list)
    item_writes: list[tuple[cst.Subscript, Scope]] = field(default_factory=list)  # `x[i] = v`, grad mode on
    scopes: dict[int, Scope] = field(default_factory=dict)  # for non-call events
    functions: list[Body] = field(default_factory=list)  # every function body, in file order
    enclosing: list[cst.FunctionDef] = field(default_factory=list)  # the functions being walked, innermost last
    classes: list[Any] = field(default_factory=list)  # frames.ClassInfo of the classes being walked, innermost last
    timeline: list[Any] = field(default_factory=list)  # every logged call and mark, in file order
    memo: dict[str, Any] = field(default_factory=dict)  # analyses several rules share, computed once
    statements: dict[int, tuple[cst.SimpleStatementLine, bool]] = field(default_factory=dict)
    project: Any = None  # static.project.Project: resolves imports of the project's own modules
    file: Any = None  # this file's Path, when it is on disk
    deps: dict[str, str] = field(default_factory=dict)  # project modules read: path -> content hash
    names: dict[str, Value] = field(default_factory=dict)  # module-level names after the walk
    call_sites: Any = None  # callsites.CallSites: arguments of the calls to the file's own functions
    param_facts: dict[int, dict[str, Value]] = field(default_factory=dict)  # from the previous walk
    grad_off_functions: frozenset[int] = frozenset()  # functions only ever called with grad off
    fp16_functions: frozenset[int] = frozenset()  # functions only ever called under a float16 autocast
    features: set[int] = field(default_factory=set)  # value nodes fed to a layer or concatenated into features
    as_text: set[int] = field(default_factory=set)  # expressions written straight into a string (f-string, %, str())
    # elementwise ops whose operands share a dim symbol at different positions: (node, left, right, symbol)
    misaligned: list[tuple[Any, Any, Any, str]] = field(default_factory=list)
    checked_expressions: bool = False  # a name the code checked holds an expression (frames.checked_key)
    # call id -> (its statement line, whether it is alone in its block): for fixes that remove a call

    # -- names -------------------------------------------------------------
    def qualify(self, node: cst.BaseExpression) -> str | None:
        """Qualified name of a dotted expression whose root is an import, e.g. F.log -> torch.nn.functional.log."""
        parts: list[str] = []
        while isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        if not isinstance(node, cst.Name):
            return None
        root = self.aliases.get(node.value)
        if root is None:
            return None
        parts.append(root)
        return ".".join(reversed(parts))

    def alias_for(self, qualified: str) -> str | None:
        """How this file spells a module, e.g. 'torch.nn.functional' -> 'F'."""
        best = None
        for local, target in self.aliases.items():
            if target == qualified:
                return local
            if qualified.startswith(target + ".") and (best is None or len(target) > len(best[1])):
                best = (local, target)
        if best is not None:
            return best[0] + qualified[len(best[1]):]
        return None

    def holders(self) -> dict[int, Body]:
        """id of each logged call -> the body of the innermost function whose code holds it (the
        module's body for top-level code); loops are part of their function."""
        found = self.memo.get("holders")
        if found is None:
            found = {}
            for body in [*([self.module_body] if self.module_body is not None else []), *self.functions]:
                for entry in body.walk(expand=False):
                    found[id(entry)] = body  # functions come after the module, inner after outer
            self.memo["holders"] = found
        return found

    def assignments(self, scope: cst.FunctionDef | cst.Module) -> dict[str, list]:
        """``traverse.local_assignments`` of a function (or the module), computed once per scope."""
        table = self.memo.setdefault("assignments", {})
        found = table.get(id(scope))
        if found is None:
            found = table[id(scope)] = local_assignments(scope)
        return found

    # -- values --------------------------------------------------------------
    def value(self, node: cst.CSTNode | None) -> Value:
        if node is None:
            return NOTHING
        return self.values.get(id(node), NOTHING)

    def call(self, node: cst.CSTNode | None) -> CallInfo | None:
        return self.calls.get(id(node)) if node is not None else None

    def code(self, node: cst.CSTNode, limit: int = 60) -> str:
        text = " ".join(self.exact_code(node).split())
        return text if len(text) <= limit else text[: limit - 1] + "…"

    def exact_code(self, node: cst.CSTNode) -> str:
        kept = statement_memo(self.module, "code")  # the language server's document: kept between edits
        if kept is None:
            return self.module.code_for_node(node)
        layout = (self.module.default_indent, self.module.default_newline)
        entry = kept.get(id(node))
        if entry is not None and entry[0] is node and entry[1] == layout:
            return entry[2]
        text = self.module.code_for_node(node)
        if len(kept) >= CODE_KEPT:
            kept.clear()
        kept[id(node)] = (node, layout, text)
        return text

    def shape(self, node: cst.CSTNode | None) -> str:
        """Source with whitespace and outer parentheses dropped, to compare two expressions."""
        return "".join(self.exact_code(node).split()).strip("()") if node is not None else ""

    # -- findings -------------------------------------------------------------
    def claim(self, node: cst.CSTNode) -> None:
        self.claimed.add(id(node))

    def is_claimed(self, node: cst.CSTNode) -> bool:
        return id(node) in self.claimed

    def scope_of(self, node: cst.CSTNode) -> Scope:
        return self.scopes.get(id(node), MODULE_SCOPE)

    def option(self, rule: RuleInfo, name: str) -> Any:
        return self.options.get(rule.code, {}).get(name, rule.options[name])

    def report(
        self, rule: RuleInfo, node: cst.CSTNode, message: str, fix: PendingFix | None = None,
        related: tuple[tuple, ...] = (),
    ) -> None:
        self.claim(node)
        self.pending.append(Pending(rule, node, message, fix, related))
