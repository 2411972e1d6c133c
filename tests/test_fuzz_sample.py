"""A fast sample of bench/fuzz_static.py: mutated real PyTorch files give no traceback, no hang, and
--fix never writes source that no longer parses; inputs that would crash LibCST are syntax errors."""

import sys

import pytest
from conftest import ROOT

from torchlint import check_source
from torchlint.config import Settings

sys.path.insert(0, str(ROOT / "bench"))
import fuzz_static  # noqa: E402


def test_a_few_hundred_mutants():
    inputs = fuzz_static.mutants(300, seed=17)
    tally = fuzz_static.run_all(inputs, jobs=1, limit=20.0, fix=True)
    assert tally["inputs"] == 300
    assert tally["failures"] == []
    assert tally["outcomes"].get("finding", 0) > 50  # the mutants are mostly broken, and reported


@pytest.mark.parametrize(("source", "code", "message"), [
    ("x = " + "(" * 3000 + "1" + ")" * 3000, "TL001", "syntax error: too many nested parentheses"),
    ("x = 1" + "+1" * 8000, "TL001", "syntax error: too deeply nested for the parser (RecursionError)"),
    ("x = " + "-" * 2000 + "1", "TL002", "cannot analyse file: nested too deeply (RecursionError)"),
    ("def f():\n    x = 1\n  \\\n    return x\n", "TL001", "syntax error: unindent does not match any outer "
                                                        "indentation level"),
])
def test_input_that_would_crash_libcst_is_a_finding(source, code, message):
    found = check_source("import torch\n" + source + "\n", settings=Settings(select=["ALL"]))
    assert [(f.code, f.message) for f in found] == [(code, message)]


def test_lone_cr_and_no_final_newline():
    found = check_source("import torch\rx = torch.log(torch.softmax(y, 1))", settings=Settings(select=["TL102"]))
    assert [(f.code, f.line, f.column, f.end_column) for f in found] == [("TL102", 2, 5, 35)]


def test_literals_from_the_real_file_run():
    """Crashes the full run found in the standard library and sympy: hex literals, ints beyond float."""
    source = ("import torch\na = torch.exp(y) - 0x1\nb = torch.log1p(y) - 0b1\nc = 10**400 * 10**400 * y\n"
              "d = (2**1100) ** 3\ne = (1e300 * y.abs()) ** 4\nf = -(10**400)\n")
    found = check_source(source, settings=Settings(select=["ALL"]))
    assert {(f.code, f.line) for f in found} >= {("TL113", 2)}
