"""Seeds computed with Python's `hash()` of a string: `str` hashes are salted per process (unless
PYTHONHASHSEED is fixed before the interpreter starts), so such a seed differs in every run."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.scopes import Body
from torchlint.static.interpret.set_order_ids import str_fields
from torchlint.static.traverse import nodes_of

SEEDED_BY_ARGUMENT = frozenset({
    "numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.seed", "random.seed", "random.Random",
    "torch.manual_seed", "torch.random.manual_seed", "torch.cuda.manual_seed", "torch.cuda.manual_seed_all",
})
SEEDING_METHODS = frozenset({"manual_seed", "seed"})


@dataclass(frozen=True)
class StringHashSeed:
    hashed: cst.Call  # the `hash(...)` call
    seeding: cst.Call  # the call it seeds


def string_hash_seeds(ctx: FileContext) -> list[StringHashSeed]:
    if "hash(" not in ctx.source:
        return []
    fields = str_fields(ctx)
    found = []
    for call in ctx.calls.values():
        seeds = (call.form == "function" and call.qual in SEEDED_BY_ARGUMENT) or (
            call.form == "method" and call.name in SEEDING_METHODS)
        if not seeds or not call.args:
            continue
        hashed = _string_hash(ctx, call.args[0], fields, 0)
        if hashed is not None:
            found.append(StringHashSeed(hashed, call.node))
    return found


def _string_hash(ctx: FileContext, node, fields: frozenset[str], depth: int) -> cst.Call | None:
    """A `hash()` of a string in the expression, or in what a function of the file it calls returns."""
    for inner in nodes_of(node, (cst.Call,)):
        if isinstance(inner.func, cst.Name) and inner.func.value == "hash" and len(inner.args) == 1:
            if _holds_string(ctx, inner.args[0].value, fields):
                return inner
        elif depth == 0:
            callee = ctx.value(inner.func)
            if callee.kind == "function" and isinstance(callee.body, Body) and \
                    isinstance(callee.body.node, cst.FunctionDef):
                for returned in nodes_of(callee.body.node.body, (cst.Return,)):
                    if returned.value is not None:
                        found = _string_hash(ctx, returned.value, fields, 1)
                        if found is not None:
                            return found
    return None


def _holds_string(ctx: FileContext, node, fields: frozenset[str]) -> bool:
    """A string literal, an f-string, `str(...)`, or a field the file's classes annotate `str`."""
    for inner in nodes_of(node, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString, cst.Call,
                                 cst.Attribute)):
        if isinstance(inner, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
            return True
        if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Name) and inner.func.value == "str":
            return True
        if isinstance(inner, cst.Attribute) and inner.attr.value in fields:
            return True
    return False
