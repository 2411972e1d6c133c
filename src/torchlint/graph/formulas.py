"""Cost formulas as people read them (``16 KiB·B·T + 512 bytes·B·T²``), and their value at given dims."""

from __future__ import annotations

import re

import sympy

from torchlint.graph.errors import TraceInputError

_BINARY = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB")
_DECIMAL = ("", "K", "M", "G", "T", "P", "E")


def parse_dims(text: str | None) -> dict[str, int]:
    """``B=8,T=4096`` -> {"B": 8, "T": 4096}."""
    if not text:
        return {}
    dims: dict[str, int] = {}
    for part in text.split(","):
        name, equals, value = part.partition("=")
        name, value = name.strip(), value.strip()
        if not equals or not name.isidentifier() or not value.isdigit() or int(value) < 1:
            raise TraceInputError(f"--dims: expected NAME=POSITIVE_INTEGER pairs such as B=8,T=4096, got {part.strip()!r}")
        dims[name] = int(value)
    return dims


class Formulas:
    """Renders sympy costs in the user's dim names; evaluates them when every dim has a value."""

    def __init__(self, names: dict[str, str], dims: dict[str, int]) -> None:
        self.names = {symbol: sympy.Symbol(name, positive=True, integer=True) for symbol, name in names.items()}
        self.dims = dims
        self._values: dict = {}
        self._named: dict = {}
        self._texts: dict = {}  # a repeated block's rows carry the same costs: each is rendered once

    def named(self, value) -> sympy.Expr:
        value = sympy.sympify(value)
        named = self._named.get(value)
        if named is None:
            renames = {s: self.names[str(s)] for s in value.free_symbols if str(s) in self.names}
            named = self._named[value] = sympy.expand(value.subs(renames) if renames else value)
        return named

    def value(self, value) -> float | None:
        """The number at ``--dims``; None when a symbol has no value."""
        value = sympy.sympify(value)
        if value not in self._values:
            self._values[value] = self._evaluate(value)
        return self._values[value]

    def _evaluate(self, value) -> float | None:
        named = self.named(value)
        missing = {str(s) for s in named.free_symbols} - set(self.dims)
        if missing:
            return None
        return float(named.subs({s: self.dims[str(s)] for s in named.free_symbols}))

    def unknown(self, values) -> list[str]:
        """The dims in ``values`` that ``--dims`` does not give."""
        names: set[str] = set()
        for value in values:
            names |= {str(s) for s in self.named(value).free_symbols}
        return sorted(names - set(self.dims))

    def bytes(self, value) -> str:
        return self._text(value, _BINARY, 1024, " ")

    def flops(self, value) -> str:
        return self._text(value, _DECIMAL, 1000, "")

    def both(self, value, kind: str) -> str:
        """The formula, and `= number` at --dims when it has symbols."""
        render = self.bytes if kind == "bytes" else self.flops
        text = render(value)
        number = self.value(value) if self.dims else None
        if number is not None and self.named(value).free_symbols:
            text += f" = {render(sympy.Float(number))}"
        return text

    def flops_cell(self, value) -> str:
        """A table cell: the value at --dims, else the formula; empty for nothing."""
        return self._cell(value, self.flops)

    def bytes_cell(self, value) -> str:
        return self._cell(value, self.bytes)

    def raw(self, value):
        """For JSON: an integer when the value is known (constant, or at --dims), else the formula."""
        if value is None:
            return None
        number = self.value(value)
        return round(number) if number is not None else str(self.named(value)).replace("**", "^")

    def _cell(self, value, render) -> str:
        if not value:
            return ""
        number = self.value(value) if self.dims else None
        return render(sympy.Float(number) if number is not None else value)

    def _text(self, value, units, step: int, space: str) -> str:
        key = (value, step)
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = self._render(value, units, step, space)
        return text

    def _render(self, value, units, step: int, space: str) -> str:
        named = self.named(value)
        if named == 0:
            return "0"
        terms = []
        for term in sorted(sympy.Add.make_args(named), key=_degree, reverse=True):
            coefficient, monomial = term.as_coeff_Mul()
            amount = _scaled(float(coefficient), units, step, space)
            if monomial == 1:
                terms.append(amount)
            else:
                terms.append(f"{amount}·{_monomial(monomial)}")
        return " + ".join(terms).replace("+ -", "- ")


def _degree(term) -> tuple:
    return (sympy.Poly(term).total_degree() if term.free_symbols else 0, str(term))


def _monomial(monomial) -> str:
    text = str(monomial).replace("**2", "²").replace("**3", "³").replace("*", "·")
    return re.sub(r"\*\*(\d+)", r"^\1", text)


def _scaled(number: float, units, step: int, space: str) -> str:
    index = 0
    while abs(number) >= step and index < len(units) - 1:
        number /= step
        index += 1
    text = f"{number:.0f}" if number == int(number) and abs(number) < 1000 else f"{number:.3g}"
    unit = units[index]
    if units is _BINARY and index == 0:
        return f"{text} bytes"
    return f"{text}{space}{unit}" if unit else text

