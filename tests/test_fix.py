"""Autofix: exact rewrites, safe vs unsafe, and on every fixture: parses, idempotent, comments kept,
nothing fixable left."""

import ast
import io
import tokenize

import pytest
from conftest import FIXTURES

from torchlint.cli import main
from torchlint.config import Settings
from torchlint.fix import applicable, fix_source

FIXTURE_FILES = sorted(p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*.py"))


def comments(source: str) -> list[str]:
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return [t.string for t in tokens if t.type == tokenize.COMMENT]


@pytest.mark.parametrize("relative", FIXTURE_FILES)
def test_fixes_on_fixture(relative):
    source = (FIXTURES / relative).read_text(encoding="utf-8")
    result = fix_source(source, relative, Settings(), unsafe=True)
    ast.parse(result.source)
    assert comments(result.source) == comments(source)
    assert not [f for f in result.remaining if applicable(f, unsafe=True)]
    again = fix_source(result.source, relative, Settings(), unsafe=True)
    assert again.source == result.source and again.fixed == 0


def test_fixtures_do_exercise_fixes():
    total = sum(fix_source((FIXTURES / r).read_text(), r, Settings(), unsafe=True).fixed for r in FIXTURE_FILES)
    assert total >= 7


@pytest.mark.parametrize(("before", "after", "unsafe"), [
    ("y = torch.log(torch.softmax(x, dim=1))  # keep\n", "y = torch.log_softmax(x, dim=1)  # keep\n", False),
    ("y = F.softmax(x, -1).log()\n", "y = F.log_softmax(x, -1)\n", False),
    ("y = x.softmax(-1).log()\n", "y = x.log_softmax(-1)\n", False),
    ("y = torch.log(torch.sigmoid(z))\n", "y = F.logsigmoid(z)\n", False),
    ("l = F.binary_cross_entropy(torch.sigmoid(z), t, reduction='sum')\n",
     "l = F.binary_cross_entropy_with_logits(z, t, reduction='sum')\n", False),
    ("y = torch.log(1 + x)\n", "y = torch.log1p(x)\n", False),
    ("y = np.log(x + 1)\n", "y = np.log1p(x)\n", False),
    ("y = (a * b).exp() - 1\n", "y = (a * b).expm1()\n", False),
    ("y = x.exp().sum(-1, keepdim=True).log()\n", "y = x.logsumexp(-1, keepdim=True)\n", False),
    ("y = torch.log(torch.relu(x))\n", "y = torch.log(torch.relu(x).clamp_min(1e-8))\n", True),
    ("for b in data:\n    step(b).backward()\n    opt.step()\n    torch.cuda.empty_cache()\n",
     "for b in data:\n    step(b).backward()\n    opt.step()\n", True),
])
def test_exact_rewrites(before, after, unsafe):
    header = "import numpy as np\nimport torch\nimport torch.nn.functional as F\n"
    settings = Settings(extend_select=["TL112", "TL113"])  # opt-in, with safe fixes
    result = fix_source(header + before, "m.py", settings, unsafe=unsafe)
    assert result.source == header + after
    if unsafe:  # unsafe fixes are not applied without the flag
        assert fix_source(header + before, "m.py", settings).source == header + before


def test_cli_fix_diff_and_unsafe(project, capsys):
    target = project / "m.py"
    original = ("import torch\n\ndef f(x, loader, opt):\n    for b in loader:\n        torch.cuda.empty_cache()\n"
                "        b.sum().backward()\n        opt.step()\n        opt.zero_grad()\n"
                "    return torch.log(torch.softmax(x, 1))\n")
    target.write_text(original)
    assert main(["m.py", "--no-cache", "--diff"]) == 1
    out = capsys.readouterr().out
    assert "-    return torch.log(torch.softmax(x, 1))" in out and "+    return torch.log_softmax(x, 1)" in out
    assert target.read_text() == original  # --diff writes nothing
    code = main(["m.py", "--no-cache", "--fix"])
    out = capsys.readouterr().out
    assert code == 1 and "TL401" in out and "TL102" not in out  # the unsafe fix is not applied
    assert "return torch.log_softmax(x, 1)" in target.read_text()
    assert main(["m.py", "--no-cache", "--fix", "--unsafe-fixes"]) == 0
    assert "empty_cache" not in target.read_text()
    assert main(["m.py", "--no-cache", "--diff"]) == 0
