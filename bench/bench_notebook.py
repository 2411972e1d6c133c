"""A 200-cell notebook against the same code as one .py file: time per run and the ratio.

The code is the top-level statements of the bundled fixtures (numerics/, training/, models/,
clean/), three to a cell, with a markdown cell every 10 cells and an IPython line (`%matplotlib
inline`, `!nvidia-smi`, `%time ...`) every 20; the .py file holds the same cells joined, the IPython
lines as comments. Both are linted cold (no cache, one job) through the same API the CLI uses; the
best of N interleaved runs is reported. Target (issue 14): notebook <= 1.5x the .py file.

    python bench/bench_notebook.py [--cells 200] [--runs 5]
"""

from __future__ import annotations

import argparse
import ast
import json
import tempfile
import time
from pathlib import Path

from torchlint.api import check_files
from torchlint.config import Settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MAGICS = ("%matplotlib inline", "!nvidia-smi", "%time _ = torch.zeros(1)")


def statements() -> list[str]:
    chunks = []
    for folder in ("numerics", "training", "models", "clean"):
        for file in sorted((FIXTURES / folder).glob("*.py")):
            text = file.read_text(encoding="utf-8")
            lines = text.splitlines(keepends=True)
            for node in ast.parse(text).body:
                start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
                chunks.append("".join(lines[start - 1:node.end_lineno]))
    return chunks


def build(cells: int) -> tuple[str, str, int]:
    chunks = statements()
    code_cells, index = [], 0
    while len(code_cells) < cells:
        body = "\n".join(chunks[(index + k) % len(chunks)].rstrip("\n") for k in range(3)) + "\n"
        index += 3
        if len(code_cells) % 20 == 0:
            body = MAGICS[(len(code_cells) // 20) % len(MAGICS)] + "\n" + body
        code_cells.append(body)
    nb_cells = []
    for number, body in enumerate(code_cells):
        if number % 10 == 0:
            nb_cells.append({"cell_type": "markdown", "id": f"m{number}", "metadata": {},
                             "source": [f"## Part {number // 10}\n"]})
        nb_cells.append({"cell_type": "code", "execution_count": number + 1, "id": f"c{number}", "metadata": {},
                         "outputs": [{"name": "stdout", "output_type": "stream", "text": ["ok\n"]}],
                         "source": body.rstrip("\n").splitlines(keepends=True)})
    notebook = json.dumps({"cells": nb_cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
                          indent=1, ensure_ascii=False) + "\n"
    script = "".join(("# " + b) if b.startswith(MAGICS) else b for b in code_cells)
    return notebook, script, script.count("\n")


def lint(path: Path) -> tuple[float, int]:
    start = time.perf_counter()
    results = check_files([path], Settings(root=path.parent), jobs=1, cache=False)
    return time.perf_counter() - start, sum(len(r.findings) for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    notebook, script, lines = build(args.cells)
    with tempfile.TemporaryDirectory() as folder:
        nb_path, py_path = Path(folder) / "bench.ipynb", Path(folder) / "bench.py"
        nb_path.write_text(notebook, encoding="utf-8")
        py_path.write_text(script, encoding="utf-8")
        lint(nb_path), lint(py_path)  # warm-up: imports, rule tables
        nb_times, py_times = [], []
        for _ in range(args.runs):
            seconds, nb_findings = lint(nb_path)
            nb_times.append(seconds)
            seconds, py_findings = lint(py_path)
            py_times.append(seconds)
    best_nb, best_py = min(nb_times), min(py_times)
    print(f"{args.cells} code cells, {lines} lines of code; best of {args.runs} interleaved cold runs, 1 job")
    print(f"  .py file   {best_py * 1000:8.1f} ms  {py_findings} findings")
    print(f"  notebook   {best_nb * 1000:8.1f} ms  {nb_findings} findings")
    print(f"  ratio      {best_nb / best_py:8.2f}x  (target <= 1.5x)")


if __name__ == "__main__":
    main()
