"""The engine's walks: end-of-file checks run once, big files get fewer re-walks, and the fast node
search finds what LibCST's visitor finds, in the same order."""

import textwrap
from pathlib import Path

import libcst as cst

from torchlint import check_source
from torchlint.static.interpret import callsites
from torchlint.static.interpret.walker import Walker
from torchlint.static.traverse import nodes_of

CHAIN = textwrap.dedent("""
    import torch
    import torch.nn as nn

    def inner(pair):
        a, b = pair
        return a.clamp(0).sqrt()

    def middle(x):
        return inner((x, x))

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def loss(self, x):
            return middle(self.fc(x))
    """)


def test_end_of_file_checks_run_once_after_the_last_walk(monkeypatch):
    runs, finishes = [], []
    run, finish = Walker.run, Walker.finish
    monkeypatch.setattr(Walker, "run", lambda self, module: (runs.append(1), run(self, module))[1])
    monkeypatch.setattr(Walker, "finish", lambda self: (finishes.append(1), finish(self))[1])
    # the sqrt two calls below the layer is found only by re-walks with call-site facts
    assert [(f.code, f.line) for f in check_source(CHAIN)] == [("TL105", 7)]
    assert len(runs) >= 3 and len(finishes) == 1


INSTANCE_ARGUMENT = textwrap.dedent("""
    import torch

    class Meter:
        def __init__(self):
            self.total = 0.0

    def record(meter, value):
        meter.total += value.item()

    def run(values):
        meter = Meter()
        for value in values:
            record(meter, torch.as_tensor(value))
    """)


def test_a_call_passing_an_instance_settles_after_one_re_walk(monkeypatch):
    # each walk builds its classes anew: a fact naming an instance must compare by its class's
    # definition, not its object, or the file walks the maximum every time
    runs = []
    run = Walker.run
    monkeypatch.setattr(Walker, "run", lambda self, module: (runs.append(1), run(self, module))[1])
    assert check_source(INSTANCE_ARGUMENT) == []
    assert len(runs) == 2


def test_files_over_the_line_budget_get_two_walks():
    assert callsites.walks_for(CHAIN) == callsites.MAX_WALKS
    long = CHAIN + "\n" * callsites.BIG_FILE_LINES
    assert callsites.walks_for(long) == callsites.BIG_FILE_WALKS == 2


class _Collector(cst.CSTVisitor):
    def __init__(self, types):
        self.types, self.found = types, []

    def on_visit(self, node):
        if isinstance(node, self.types):
            self.found.append(node)
        return True


def test_node_search_matches_the_visitor():
    module = cst.parse_module(CHAIN + "y = [v for v in {1, 2}]\nz = list(set(w))\nq: int = f(*a, **k)\n")
    types = (cst.Call, cst.For, cst.CompFor, cst.Assign, cst.AnnAssign, cst.Name)
    visitor = _Collector(types)
    module.visit(visitor)
    assert list(nodes_of(module, types)) == visitor.found


def test_node_search_matches_the_visitor_on_the_fixtures():
    types = (cst.Name, cst.Call, cst.Attribute, cst.Subscript, cst.BinaryOperation, cst.Comparison, cst.Lambda,
             cst.For, cst.CompFor, cst.While, cst.If, cst.With, cst.Try, cst.Return, cst.Assign, cst.AugAssign,
             cst.AnnAssign, cst.Integer, cst.Float, cst.SimpleString, cst.FormattedString, cst.Decorator, cst.Param)
    files = sorted((Path(__file__).resolve().parents[1] / "fixtures").rglob("*.py"))
    checked = 0
    for file in files:
        try:
            module = cst.parse_module(file.read_text(encoding="utf-8"))
        except cst.ParserSyntaxError:
            continue
        visitor = _Collector(types)
        module.visit(visitor)
        assert list(nodes_of(module, types)) == visitor.found, file
        checked += 1
    assert checked > 100
