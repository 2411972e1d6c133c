"""TL511 seed-zero-skipped: seeding gated by the seed's truth value, so seed 0 seeds nothing."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.seeding import SEEDED_BY_ARGUMENT, SEEDS_EVERYTHING
from torchlint.static.rules.base import Rule
from torchlint.static.traverse import held, nodes_of

_GENERATOR_METHODS = frozenset({"manual_seed", "seed"})  # `torch.Generator().manual_seed(s)`, `rng.seed(s)`


def _seed_argument(call: CallInfo) -> cst.BaseExpression | None:
    """The expression a seeding call is given as its seed, when it is a name, attribute or item."""
    if call.form == "function" and (call.qual in SEEDED_BY_ARGUMENT or call.name in SEEDS_EVERYTHING):
        seed = call.param(0, "seed")
    elif call.form in ("local", "unknown") and call.name in SEEDS_EVERYTHING:
        seed = call.param(0, "seed")
    elif call.form == "method" and call.name in _GENERATOR_METHODS:
        seed = call.param(1, "seed")
    else:
        return None
    return seed if isinstance(seed, (cst.Name, cst.Attribute, cst.Subscript)) else None


def _key(seed: cst.BaseExpression) -> str | None:
    """The name a seed is configured under: `seed`, `args.seed`, `cfg["seed"]` -> "seed"."""
    if isinstance(seed, cst.Name):
        return seed.value
    if isinstance(seed, cst.Attribute):
        return seed.attr.value
    if isinstance(seed, cst.Subscript) and len(seed.slice) == 1 and isinstance(seed.slice[0].slice, cst.Index):
        key = seed.slice[0].slice.value
        return key.evaluated_value if isinstance(key, cst.SimpleString) else None
    return None


def _zero(node) -> bool:
    return isinstance(node, cst.Integer) and node.evaluated_value == 0


def _zero_keys(ctx: FileContext) -> set[str]:
    """The names the file gives the value 0: `{"seed": 0}`, `seed=0` (an argument or a parameter's
    default), `seed = 0`, `add_argument("--seed", default=0)`: evidence that a seed of 0 is used."""
    found: set[str] = set()
    for node in nodes_of(ctx.module, (cst.DictElement, cst.Arg, cst.Param, cst.Assign, cst.Call)):
        if isinstance(node, cst.DictElement) and _zero(node.value) and isinstance(node.key, cst.SimpleString):
            found.add(str(node.key.evaluated_value))
        elif isinstance(node, cst.Arg) and node.keyword is not None and _zero(node.value):
            found.add(node.keyword.value)
        elif isinstance(node, cst.Param) and node.default is not None and _zero(node.default):
            found.add(node.name.value)
        elif isinstance(node, cst.Assign) and _zero(node.value):
            found.update(key for target in node.targets if (key := _key(target.target)) is not None)
        elif isinstance(node, cst.Call) and node.args and isinstance(node.args[0].value, cst.SimpleString) and any(
                arg.keyword is not None and arg.keyword.value == "default" and _zero(arg.value) for arg in node.args):
            flag = str(node.args[0].value.evaluated_value)  # `add_argument("--seed", type=int, default=0)`
            found.add(flag.lstrip("-").replace("-", "_"))
    return found


class SeedZeroSkipped(Rule):
    info = RuleInfo(
        "TL511", "seed-zero-skipped", "warning",
        "Seeding run only when the seed is truthy (`if seed:`): seed 0, a common choice, seeds nothing and "
        "the run is not reproducible.",
        tags=("reproducibility",),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        seed = _seed_argument(call)
        if seed is not None:
            ctx.memo.setdefault(self.info.code, []).append((call.node, seed))

    def on_end(self, ctx: FileContext) -> None:
        found = ctx.memo.get(self.info.code)
        if not found:
            return
        zeros = _zero_keys(ctx)
        found = [(node, seed) for node, seed in found if _key(seed) in zeros]
        if not found:
            return  # no 0 is ever given as that seed: the test only matters to a run nobody configured
        wanted = {id(node) for node, _ in found}
        for test in nodes_of(ctx.module, (cst.If, cst.IfExp)):
            if not isinstance(test.test, (cst.Name, cst.Attribute, cst.Subscript)):
                continue  # `if seed is not None:` or any comparison tests the value, not its truth
            branch = test.body
            inside = held(branch, wanted)
            if not inside:
                continue
            tested = ctx.exact_code(test.test)
            for node, seed in found:
                if id(node) in inside and ctx.exact_code(seed) == tested and not ctx.is_claimed(node):
                    ctx.claim(node)
                    ctx.report(
                        self.info, test.test,
                        f"`{ctx.code(node, 50)}` runs only when `{tested}` is truthy: a seed of 0 is falsy, so "
                        "`--seed 0` (or a config with seed 0) skips the seeding and every run draws different "
                        f"numbers. Test `{tested} is not None` instead",
                        related=((node, "the seeding it skips"),),
                    )
