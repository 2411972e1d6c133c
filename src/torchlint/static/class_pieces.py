"""A big class statement parsed in runs of its members, into the tree one parse gives.

Test suites keep hundreds of methods in one class (the torch package's ``distributed_test.py``: one
431 kB class holding another), and LibCST's native parser holds ~500 bytes per character of what
it parses at once: +160 MB for that one statement. Here the class's header is parsed with a stand-in
body (``pass``), and its members in runs of at most ``piece_chars`` characters, each run inside a
stand-in class header at the class's own indentation (and, for a class inside a class, stand-ins for
the enclosing ones), so every member is parsed at the indentation it has in the file. A run cuts
right after the previous member's last line: the blank and comment lines before a member stay its
leading lines, as in a whole parse. A member that is itself a big class is split the same way.

``parse_class`` returns what ``libcst.parse_module(prefix + text)`` returns, where ``prefix`` is
the stand-ins for the enclosing classes; anything unexpected raises ``NotSplit`` and the caller
parses the text at once.
"""

from __future__ import annotations

import io
import tokenize

import libcst as cst

from torchlint.static.token_kinds import CONTINUES

_IGNORED = frozenset({tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER})


class NotSplit(Exception):
    """The text is not a class this module splits, or its pieces do not fit: parse it at once."""


def parse_class(text: str, piece_chars: int, enclosing: tuple[str, ...] = ()) -> cst.Module:
    """``libcst.parse_module(prefix + text)`` for a class statement ``text`` (its decorators, the
    comment lines before and after it) inside stand-in classes whose headers have the indentations
    ``enclosing`` (none: a top-level statement); its members parsed in runs of ``piece_chars``."""
    if not _starts_a_class(text):
        raise NotSplit
    newline = "\r\n" if text.split("\n", 1)[0].endswith("\r") else "\n"
    prefix = _stand_ins(enclosing, newline)
    shape = _members(prefix, text, len(enclosing))
    if shape is None:
        raise NotSplit
    header_indent, member_indent, cuts, count = shape
    runs = _runs(cuts, len(text), piece_chars)
    if len(runs) < 2 and runs[0][1] - runs[0][0] <= piece_chars:
        raise NotSplit
    depth = len(enclosing)
    skeleton = cst.parse_module(prefix + text[:cuts[0]] + member_indent + "pass" + newline)
    inner = (*enclosing, header_indent)
    members: list[cst.CSTNode] = []
    last = None
    for index, (start, end) in enumerate(runs):
        run = text[start:end]
        if end - start > piece_chars:
            try:
                module = parse_class(run, piece_chars, inner)
            except NotSplit:
                module = cst.parse_module(_stand_ins(inner, newline) + run)
        else:
            module = cst.parse_module(_stand_ins(inner, newline) + run)
        _same_defaults(module, skeleton)
        stand_in = _descend(module, depth + 1)
        if index < len(runs) - 1 and (module.footer or _has_footer(module, depth + 1)):
            raise NotSplit  # lines after a run's last member: the cut was not where a member ends
        members.extend(stand_in.body.body)
        last = module
    if len(members) != count:
        raise NotSplit
    real = _descend(skeleton, depth + 1)
    block = real.body.with_changes(body=tuple(members), footer=_descend(last, depth + 1).body.footer)
    whole = _replace_innermost(last, depth, real.with_changes(body=block))
    return whole.with_changes(header=skeleton.header) if depth == 0 else whole


def _starts_a_class(text: str) -> bool:
    """Whether the first line of code is a decorator or a class header (before tokenizing it all)."""
    for line in text.splitlines()[:1000]:
        code = line.strip()
        if code and not code.startswith("#"):
            return code.startswith(("@", "class ", "class\t"))
    return False


def _stand_ins(indents: tuple[str, ...], newline: str) -> str:
    return "".join(f"{indent}class _:{newline}" for indent in indents)


def _members(prefix: str, text: str, depth: int) -> tuple[str, str, list[int], int] | None:
    """The class header's indentation, its members' indentation, the offsets in ``text`` where a
    run of members may start (right after the line before a member ends; the first member's is the
    first) and the number of members; None when ``text`` is not a class with an indented body."""
    line_starts = [0]
    for line in io.StringIO(prefix + text):
        line_starts.append(line_starts[-1] + len(line))
    base = len(prefix)
    level = 0
    header_indent = member_indent = None
    is_class = False
    cuts: list[int] = []
    count = 0  # members
    ended = False
    line_end = 0  # where the last logical line ended (an offset in text)
    new_line = True
    decorated = False
    for token in tokenize.generate_tokens(io.StringIO(prefix + text).readline):
        kind = token.type
        offset = line_starts[token.start[0] - 1] + token.start[1] - base
        if offset < 0:
            continue  # the stand-ins
        if kind == tokenize.INDENT:
            level += 1
            if level == depth + 1 and member_indent is None:
                if not is_class:
                    return None
                member_indent = token.string
            continue
        if kind == tokenize.DEDENT:
            level -= 1
            ended = ended or (level <= depth and member_indent is not None)
            continue
        if kind == tokenize.NEWLINE:
            line_end = line_starts[token.end[0] - 1] + token.end[1] - base
            new_line = True
            continue
        if kind in _IGNORED:
            continue
        if ended:
            return None  # a statement after the class: not one class
        if header_indent is None:
            if token.string not in ("@", "class"):
                return None
            header_indent = text[offset - token.start[1]:offset]
        if member_indent is None and level == depth and token.string == "class":
            is_class = True
        if new_line and level == depth + 1 and member_indent is not None:
            if not (kind == tokenize.NAME and token.string in CONTINUES) and not decorated:
                count += 1
                between = text[line_end:offset - token.start[1]]
                if _plain_gap(between, member_indent):
                    cuts.append(line_end)
                elif count == 1:
                    return None
            decorated = token.string == "@"
        new_line = False
    if member_indent is None or header_indent is None or not cuts:
        return None
    return header_indent, member_indent, cuts, count


def _plain_gap(lines: str, indent: str) -> bool:
    """Whether the lines between two members are empty lines and comments at the members' own
    indentation only: a whole parse gives them to the next member, as a run starting there does
    (a comment indented further belongs to the block above it)."""
    for line in lines.splitlines():
        if line and not line.startswith(indent + "#"):
            return False
    return True


def _runs(cuts: list[int], end: int, piece_chars: int) -> list[tuple[int, int]]:
    """Runs of whole members of at most ``piece_chars`` (a longer member on its own)."""
    bounds = [*cuts, end]
    runs: list[tuple[int, int]] = []
    start = bounds[0]
    for index in range(1, len(bounds)):
        if bounds[index] - start > piece_chars and bounds[index - 1] > start:
            runs.append((start, bounds[index - 1]))
            start = bounds[index - 1]
    runs.append((start, end))
    return runs


def _same_defaults(module: cst.Module, skeleton: cst.Module) -> None:
    """Indentation and newline fields are stored relative to the module's defaults: they must agree."""
    if module.default_indent != skeleton.default_indent or module.default_newline != skeleton.default_newline:
        raise NotSplit


def _descend(module: cst.Module, levels: int) -> cst.ClassDef:
    """The class ``levels`` deep: the first statement, then the first statement of its body, ..."""
    node = module.body[0] if len(module.body) == 1 else None
    for _ in range(levels - 1):
        body = node.body.body if isinstance(node, cst.ClassDef) and isinstance(node.body, cst.IndentedBlock) else ()
        node = body[0] if len(body) == 1 else None
    if not isinstance(node, cst.ClassDef) or not isinstance(node.body, cst.IndentedBlock):
        raise NotSplit
    return node


def _has_footer(module: cst.Module, levels: int) -> bool:
    """Whether a stand-in's block, or its innermost class's, ends in comment or blank lines."""
    return any(_descend(module, level).body.footer for level in range(1, levels + 1))


def _replace_innermost(module: cst.Module, depth: int, node: cst.CSTNode) -> cst.Module:
    """``module`` with the statement ``depth`` stand-ins deep replaced by ``node``."""

    def replaced(holder: cst.ClassDef, level: int) -> cst.ClassDef:
        inside = node if level == depth - 1 else replaced(holder.body.body[0], level + 1)
        return holder.with_changes(body=holder.body.with_changes(body=(inside,)))

    if depth == 0:
        return module.with_changes(body=(node,))
    return module.with_changes(body=(replaced(module.body[0], 0),))
