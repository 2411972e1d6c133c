"""A notebook cell as the Python the analysis reads: IPython syntax neutralised, then, for a cell that
still does not compile, what IPython runs anyway and what an exercise leaves for the reader.

- IPython removes the first line's indentation from every line before running a cell, so a cell
  pasted with a one-space indent runs in Jupyter; Python rejects it. The cell is read dedented and
  its findings' columns are moved back (``Neutralised.indent``).
- IPython's automagic runs a line magic typed without its `%` (`pip install -r requirements.txt`,
  `cd data`): such a line is read as `pass`.
- Exercise and template notebooks leave blanks to fill in: `x = ` with nothing (or `pass`) after
  it, a `def`/`for`/`if` whose body is only comments. The blank is read as `...`, on the same line.

A repair is kept only when the whole cell then compiles; otherwise the cell is the syntax error it
was. The result of each cell's source is cached: the same cells are read on every check of a notebook.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from functools import lru_cache

from torchlint.static.magics import Neutralised, neutralise

FLAGS = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT

# `x = `, `x.y, z = # comment`, `x = pass`: an assignment whose value is left for the reader
_BLANK_VALUE = re.compile(
    r"^(?P<target>[ \t]*[A-Za-z_][\w.]*(?:[ \t]*,[ \t]*[A-Za-z_][\w.]*)*[ \t]*=)(?P<pass>[ \t]*pass)?[ \t]*"
    r"(?P<comment>#.*)?$")
# a line magic typed without `%`, which IPython's automagic (on by default) runs: `pip install x`, `cd ..`
_AUTOMAGIC = re.compile(
    r"^(?P<indent>[ \t]*)(?:pip|conda|mamba|cd|pwd|ls|ll|mkdir|rmdir|cat|cp|mv|rm|env|matplotlib|load_ext|"
    r"reload_ext|autoreload|run|who|whos|reset|pushd|popd|bookmark|dhist|less|man|clear|history)"
    r"(?:[ \t]+(?![=(\[,:;+*%&|^<>!-])\S.*)?[ \t]*$")
# a compound statement's header: `def f(x):`, `for x in y:  # comment`
_HEADER = re.compile(
    r"^(?P<indent>[ \t]*)(?:async[ \t]+)?(?:def|class|for|while|if|elif|else|with|try|except|finally)\b.*?:"
    r"[ \t]*(?P<comment>#.*)?$")


@lru_cache(maxsize=4096)
def cell_python(source: str) -> Neutralised:
    """The cell as Python, line for line, with ``error`` set when it does not compile even repaired."""
    result = neutralise(source)
    if not result.python:
        return result
    error = _error(result.text)
    if error is None:
        return result
    repaired = _repaired(result)
    return repaired if repaired is not None else replace(result, error=error)


def _error(text: str) -> tuple[str, int, int] | None:
    """(message, line, column) of the syntax error of ``text``, or None."""
    try:
        compile(text, "<cell>", "exec", FLAGS)  # not the real path: CPython would read that file
    except SyntaxError as error:
        return error.msg, error.lineno or 1, max(error.offset or 1, 1)
    except (ValueError, RecursionError, MemoryError):
        pass
    return None


def _repaired(result: Neutralised) -> Neutralised | None:
    lines = result.text.split("\n")
    changed = set(result.changed)
    indent = _leading_indent(lines)
    if indent:
        lines = [line[indent:] if line[:indent].isspace() else line for line in lines]
        changed |= {number for number, line in enumerate(lines, start=1) if line.strip()}
    for index in range(len(lines)):
        magic = _AUTOMAGIC.match(lines[index])
        if magic is not None:
            lines[index] = magic.group("indent") + "pass"
            changed.add(index + 1)
            continue
        filled = _filled(lines, index)
        if filled is not None:
            lines[index] = filled
            changed.add(index + 1)
    text = "\n".join(lines)
    if _error(text) is not None:
        return None
    return Neutralised(text, changed, indent=indent)


def _leading_indent(lines: list[str]) -> int:
    """The indentation IPython strips: the first line's, when every non-blank line starts with it."""
    if not lines or not lines[0].strip():
        return 0
    prefix = lines[0][:len(lines[0]) - len(lines[0].lstrip())]
    if not prefix or any(line.strip() and not line.startswith(prefix) for line in lines):
        return 0
    return len(prefix)


def _filled(lines: list[str], index: int) -> str | None:
    """Line ``index`` with its blank read as `...`, or None when it leaves none."""
    line = lines[index]
    blank = _BLANK_VALUE.match(line)
    if blank is not None:
        comment = blank.group("comment")
        return blank.group("target") + " ..." + (f"  {comment}" if comment else "")
    header = _HEADER.match(line)
    if header is None:
        return None
    depth = len(header.group("indent").expandtabs())
    following = next((later for later in lines[index + 1:] if later.strip() and not later.lstrip().startswith("#")),
                     None)
    if following is not None and len(following.expandtabs()) - len(following.expandtabs().lstrip()) > depth:
        return None  # it has a body
    comment = header.group("comment")
    code = line[:header.start("comment")].rstrip() if comment else line.rstrip()
    return code + " ..." + (f"  {comment}" if comment else "")
