"""share_tokens: a held summary tree shrinks without changing its code or the positions of what
the analysis points at."""

from __future__ import annotations

import sys

import libcst as cst
import pytest
from conftest import ROOT

from torchlint.static import project
from torchlint.static.compact import share_tokens
from torchlint.static.locate import locate

sys.path.insert(0, str(ROOT / "bench"))
import real_bugs  # noqa: E402

SOURCE = """\
import torch


def loss(p, y):  # a comment
    a = torch.log(p) + (1, 2, 3)[0]
    b = [y, y, y]
    return -(a * b[0]).mean()


class Net(torch.nn.Module):
    def forward(self, x, y):
        return x + y
"""


def _nodes(module: cst.Module) -> list[cst.CSTNode]:
    found, stack = [], [module]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(node.children)
    return found


def test_code_is_unchanged_and_equal_tokens_become_one_object():
    module = cst.parse_module(SOURCE)
    before = _nodes(module)
    commas_before = {id(n) for n in before if isinstance(n, cst.Comma)}
    torch_strings_before = {id(n.value) for n in before if isinstance(n, cst.Name) and n.value == "torch"}
    share_tokens(module)
    after = _nodes(module)
    assert module.code == SOURCE
    commas_after = {id(n) for n in after if isinstance(n, cst.Comma)}
    assert len(commas_before) == 7
    assert len(commas_after) == 1  # `, ` everywhere: one shared object
    spaces = {id(n) for n in after if isinstance(n, cst.SimpleWhitespace) and n.value == " "}
    assert len(spaces) == 1
    torch_names = [n for n in after if isinstance(n, cst.Name) and n.value == "torch"]
    assert len(torch_names) == 3 and len({id(n) for n in torch_names}) == 3  # the names stay apart
    assert len(torch_strings_before) > 1 and len({id(n.value) for n in torch_names}) == 1  # their strings are one


def test_names_calls_and_statements_keep_their_own_objects_and_positions():
    plain = cst.parse_module(SOURCE)
    shared = share_tokens(cst.parse_module(SOURCE))
    kinds = (cst.Name, cst.Call, cst.SimpleStatementLine, cst.BinaryOperation, cst.Subscript)
    plain_nodes = [n for n in _nodes(plain) if isinstance(n, kinds)]
    shared_nodes = [n for n in _nodes(shared) if isinstance(n, kinds)]
    assert len({id(n) for n in shared_nodes}) == len(shared_nodes) == len(plain_nodes)
    plain_spans = locate(plain, plain_nodes)
    shared_spans = locate(shared, shared_nodes)
    assert [plain_spans[id(n)] for n in plain_nodes] == [shared_spans[id(n)] for n in shared_nodes]
    log = next(n for n in shared_nodes if isinstance(n, cst.Name) and n.value == "log")
    assert shared_spans[id(log)][:2] == (5, 15)


@pytest.mark.parametrize("share_after", [0, 2])
def test_real_bug_projects_judged_the_same_with_every_summary_shared(monkeypatch, share_after):
    """The multi-file cases of the real-bug corpus, their summaries' trees all shared (as past
    SHARE_AFTER summaries on a big project; with 2, the first summaries are shared after their
    walk): the same findings, line for line."""
    cases = [case for case in real_bugs.load_cases() if case.path.is_dir()]
    assert len(cases) >= 5

    def findings() -> list:
        project.PROCESS_PROJECT.summaries.clear()
        project.PROCESS_PROJECT.latest.clear()
        project.PROCESS_PROJECT.calls_seen.clear()
        outcomes = [real_bugs.judge(case) for case in cases]
        return [(o.case.slug, o.status, sorted((f.path, f.line, f.column, f.code) for f in o.hits + o.extra))
                for o in outcomes]

    monkeypatch.setattr(project, "SHARE_AFTER", 10**9)
    plain = findings()
    monkeypatch.setattr(project, "SHARE_AFTER", share_after)
    shared = findings()
    assert shared == plain
    assert any(status == "found" for _, status, _ in plain)
