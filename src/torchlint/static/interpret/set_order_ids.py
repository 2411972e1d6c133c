"""Token ids numbered in the order a set of strings is iterated.

Python randomises the hash of every `str` per process (unless PYTHONHASHSEED is fixed before the
interpreter starts), so a set of strings iterates in a different order in each run:
`itos = specials + list(set(words))` followed by `{w: i for i, w in enumerate(itos)}` gives every word
another id, hence another embedding row, another output unit and, with seeded initialisation, another
training run, although every RNG is seeded. Sets of numbers iterate in a fixed order and are left
alone: the set must be shown to hold strings (words from `.split()`, the characters of a string).

Found where the numbering is visible in the file: `enumerate` of the set, or of a list made from it
(through names, list concatenations and filtering comprehensions in one scope), `.index()` on such a
list, or such a list passed to one of the file's functions or classes that enumerates that parameter.
A list made from the set and then shuffled or sampled (`random.Random(seed).shuffle(speakers)`) is
found too: a seeded shuffle permutes the starting order, so the split it makes still differs per run.
Strings are also the values of a class field annotated `str` (`speaker: str` in a dataclass).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.frames import dotted_code
from torchlint.static.traverse import code_scopes, nodes_of, statements_of

_SET_CALLS = frozenset({"set", "frozenset"})
_SET_COMPREHENSION = re.compile(r"\{[^{}:\n]*\bfor\b")  # `{w for ...}`, not a dict comprehension
_TO_LIST = frozenset({"list", "tuple"})
_STRING_METHODS = frozenset({"read", "lower", "upper", "strip", "join", "replace", "decode", "casefold"})
_SHUFFLES = frozenset({"shuffle", "permutation", "sample", "choice", "choices"})  # order-dependent draws
_STR_FIELDS = "<str fields>"  # in `defs`: the class fields the file annotates `str`


@dataclass
class SetOrderIds:
    made: cst.CSTNode  # where the set's order becomes a sequence (`list(set(words))`, `enumerate(s)`)
    numbered: cst.CSTNode  # where the sequence is numbered (`enumerate(itos)`, `itos.index(w)`)
    shuffled: bool = False  # the sequence is shuffled or sampled, not numbered


def set_order_ids(ctx: FileContext) -> list[SetOrderIds]:
    source = ctx.source
    if not ("set(" in source or _SET_COMPREHENSION.search(source)) or \
            not ("enumerate(" in source or ".index(" in source or "len(" in source or "shuffle(" in source
                 or "permutation(" in source or "sample(" in source):
        return []
    numbering = _numbering_params(ctx.module)
    found = []
    for _name, roots in code_scopes(ctx.module):
        found.extend(_in_scope(ctx, roots, numbering))
    return found


def _in_scope(ctx: FileContext, roots: list, numbering: dict[str, set[int]]) -> list[SetOrderIds]:
    defs: dict[str, list] = {_STR_FIELDS: str_fields(ctx)}
    for root in roots:
        for node in nodes_of(root, (cst.Assign,)):
            if len(node.targets) == 1:
                key = dotted_code(node.targets[0].target)
                if key is not None:
                    defs.setdefault(key, []).append(node.value)
    found = []
    for root in roots:
        for loop in nodes_of(root, (cst.For,)):
            numbered = _numbered_in_loop(loop)
            if numbered is not None and _string_set(loop.iter, defs, 0):
                found.append(SetOrderIds(loop.iter, numbered))
        for call in nodes_of(root, (cst.Call,)):
            name = _called(call)
            args = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
            if name == "enumerate" and args and _string_set(args[0], defs, 0):
                found.append(SetOrderIds(call, call))
            elif name in _TO_LIST and args and _string_set(args[0], defs, 0):
                numbered = _numbered_later(call, roots, defs, numbering)
                if numbered is not None:
                    found.append(SetOrderIds(call, numbered, _called(numbered) in _SHUFFLES))
    return found


def _numbered_in_loop(loop: cst.For):
    """`for w in kept: index[w] = len(index)`: the loop gives each item the next number."""
    if not isinstance(loop.target, cst.Name):
        return None
    for assign in nodes_of(loop.body, (cst.Assign,)):
        target = assign.targets[0].target if len(assign.targets) == 1 else None
        if isinstance(target, cst.Subscript) and len(target.slice) == 1 and \
                isinstance(target.slice[0].slice, cst.Index) and isinstance(target.slice[0].slice.value, cst.Name) \
                and target.slice[0].slice.value.value == loop.target.value and isinstance(assign.value, cst.Call) \
                and _called(assign.value) == "len":
            return assign
    return None


def _numbered_later(made: cst.Call, roots: list, defs: dict[str, list], numbering: dict[str, set[int]]):
    """Where a list made from the set (or one derived from it by names) is numbered."""
    derived: set[str] = set()
    for _ in range(4):  # names assigned the list, a concatenation with it, a filtered copy of it
        grown = {key for key, values in defs.items() if key not in derived and any(
            _mentions(value, made, derived) for value in values)}
        if not grown:
            break
        derived |= grown
    if not derived:
        return None
    for root in roots:
        for call in nodes_of(root, (cst.Call,)):
            name = _called(call)
            args = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
            if name == "enumerate" and args and dotted_code(args[0]) in derived:
                return call
            if name == "index" and isinstance(call.func, cst.Attribute) and dotted_code(call.func.value) in derived:
                return call
            if name in _SHUFFLES and isinstance(call.func, cst.Attribute) and args and dotted_code(args[0]) in derived:
                return call  # `random.Random(seed).shuffle(speakers)`, `rng.permutation(speakers)`
            positions = numbering.get(name, set())
            if any(index in positions and dotted_code(arg) in derived for index, arg in enumerate(args)):
                return call
    return None


def _mentions(value, made: cst.Call, derived: set[str]) -> bool:
    """`list(set(...))` itself, `specials + list(set(...))`, `[t for t in tokens if ...]`, `a + tokens`."""
    if value is made:
        return True
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
        return _mentions(value.left, made, derived) or _mentions(value.right, made, derived)
    if isinstance(value, (cst.ListComp, cst.GeneratorExp)) and len(_fors(value)) == 1:
        return _mentions(value.for_in.iter, made, derived)
    if isinstance(value, cst.Call) and _called(value) in _TO_LIST and len(value.args) == 1:
        return _mentions(value.args[0].value, made, derived)
    return dotted_code(value) in derived


def _string_set(node, defs: dict[str, list], depth: int) -> bool:
    """A set shown to hold strings: `set(<strings>)`, `{w for t in texts for w in t.split()}`."""
    if depth > 3:
        return False
    key = dotted_code(node)
    if key is not None:
        values = defs.get(key, ())
        return bool(values) and all(_string_set(value, defs, depth + 1) for value in values)
    if isinstance(node, cst.Call) and _called(node) in _SET_CALLS and len(node.args) == 1:
        return _strings(node.args[0].value, defs, depth + 1)
    if isinstance(node, cst.SetComp):
        return _comprehension_of_strings(node, defs, depth)
    if isinstance(node, cst.Set):
        return all(isinstance(element.value, (cst.SimpleString, cst.ConcatenatedString)) for element in node.elements)
    return False


def _strings(node, defs: dict[str, list], depth: int, resolving: frozenset[str] = frozenset()) -> bool:
    """An iterable of strings: a `.split()` result, a string (its characters), a list of one of those,
    a comprehension over them, a name bound to one on every path (a reassignment from the name itself,
    `x = list(x)`, keeps what the other assignments show)."""
    if depth > 5:
        return False
    if isinstance(node, cst.IfExp):
        return _strings(node.body, defs, depth + 1, resolving) and _strings(node.orelse, defs, depth + 1, resolving)
    key = dotted_code(node)
    if key is not None:
        if key in resolving:
            return True
        values = defs.get(key, ())
        inner = resolving | {key}
        return bool(values) and all(_strings(value, defs, depth + 1, inner) for value in values)
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return True
    if isinstance(node, cst.Call):
        name = _called(node)
        if name in ("split", "splitlines") and isinstance(node.func, cst.Attribute):
            return True
        if name in _STRING_METHODS and isinstance(node.func, cst.Attribute):
            return True  # a string: iterating it gives its characters
        if name in _TO_LIST | {"sorted"} and len(node.args) == 1:
            return _strings(node.args[0].value, defs, depth + 1, resolving)
        return False
    if isinstance(node, (cst.GeneratorExp, cst.ListComp)):
        return _comprehension_of_strings(node, defs, depth)
    return False


def _comprehension_of_strings(node, defs: dict[str, list], depth: int) -> bool:
    """`w for t in texts for w in t.split()`: the element is the target of a `for` over strings."""
    element = node.elt
    if isinstance(element, cst.Call) and _called(element) in _STRING_METHODS:
        return True
    if isinstance(element, cst.Attribute) and isinstance(element.value, cst.Name) and \
            element.attr.value in defs.get(_STR_FIELDS, ()) and any(
                isinstance(clause.target, cst.Name) and clause.target.value == element.value.value
                for clause in _fors(node)):
        return True  # `{u.speaker for u in utts}` with `speaker: str` declared by a class of the file
    for clause in _fors(node):
        if isinstance(clause.target, cst.Name) and isinstance(element, cst.Name) and \
                clause.target.value == element.value:
            return _strings(clause.iter, defs, depth + 1)
        if isinstance(clause.target, cst.Tuple) and isinstance(element, cst.Name) and clause.target.elements and \
                isinstance(clause.target.elements[0].value, cst.Name) and \
                clause.target.elements[0].value.value == element.value:
            return _counted_strings(clause.iter, defs, depth + 1)  # `w for w, c in counts.items()`
    return False


def _counted_strings(node, defs: dict[str, list], depth: int) -> bool:
    """`counts.items()` of `counts = Counter(<strings>)`: its keys are those strings."""
    if not (isinstance(node, cst.Call) and _called(node) in ("items", "most_common") and
            isinstance(node.func, cst.Attribute)):
        return False
    values = defs.get(dotted_code(node.func.value) or "", ())
    return bool(values) and all(isinstance(value, cst.Call) and _called(value) == "Counter" and value.args and
                                _strings(value.args[0].value, defs, depth + 1) for value in values)


def str_fields(ctx: FileContext) -> frozenset[str]:
    """The fields the file's classes annotate `str` (`speaker: str` in a dataclass or NamedTuple)."""
    found = ctx.memo.get(_STR_FIELDS)
    if found is None:
        names = set()
        for cls in statements_of(ctx.module, (cst.ClassDef,)):
            for line in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
                for small in line.body if isinstance(line, cst.SimpleStatementLine) else ():
                    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and \
                            isinstance(small.annotation.annotation, cst.Name) and \
                            small.annotation.annotation.value == "str":
                        names.add(small.target.value)
        found = ctx.memo[_STR_FIELDS] = frozenset(names)
    return found


def _fors(node) -> list[cst.CompFor]:
    found, clause = [], node.for_in
    while clause is not None:
        found.append(clause)
        clause = clause.inner_for_in
    return found


def _numbering_params(module: cst.Module) -> dict[str, set[int]]:
    """For each function and class of the file (by name), the positions of the parameters it
    enumerates or `.index()`es (a class by its `__init__`, `self` left out)."""
    found: dict[str, set[int]] = {}
    for cls in statements_of(module, (cst.ClassDef,)):
        for member in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
            if isinstance(member, cst.FunctionDef) and member.name.value == "__init__":
                positions = _numbering(member, skip_self=True)
                if positions:
                    found[cls.name.value] = positions
    for function in statements_of(module, (cst.FunctionDef,)):
        positions = _numbering(function, skip_self=False)
        if positions and function.name.value not in found:
            found[function.name.value] = positions
    return found


def _numbering(function: cst.FunctionDef, skip_self: bool) -> set[int]:
    params = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
    if skip_self:
        params = params[1:]
    numbered = set()
    for call in nodes_of(function.body, (cst.Call,)):
        name = _called(call)
        if name == "enumerate" and call.args and isinstance(call.args[0].value, cst.Name):
            numbered.add(call.args[0].value.value)
        elif name == "index" and isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name):
            numbered.add(call.func.value.value)
    return {index for index, name in enumerate(params) if name in numbered}


def _called(call: cst.Call) -> str:
    func = call.func
    return func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
