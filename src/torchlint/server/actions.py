"""Code actions: a finding's own fix, and `# noqa: TLxxx` to silence it on its line."""

from __future__ import annotations

import io
import re
import tokenize

from lsprotocol import types

from torchlint.finding import Finding
from torchlint.server.diagnostics import client_range, to_diagnostics
from torchlint.server.positions import lines_of

QUICK_FIX = types.CodeActionKind.QuickFix
FIX_ALL = "source.fixAll.torchlint"
_NOQA_CODES = re.compile(r"#\s*noqa:\s*[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*", re.I)
_BARE_NOQA = re.compile(r"#\s*noqa(?!:)", re.I)


def wants(only: list[str] | None, kind: str) -> bool:
    """Whether a request's `only` filter admits ``kind`` (a prefix admits its sub-kinds)."""
    return only is None or any(kind == k or kind.startswith(k + ".") for k in only)


def quick_fixes(uri: str, text: str, findings: list[Finding], wanted: types.Range, encoding: str,
                only: list[str] | None) -> list[types.CodeAction]:
    if not wants(only, QUICK_FIX):
        return []
    lines = lines_of(text)
    actions = []
    for finding, diagnostic in zip(findings, to_diagnostics(findings, text, uri, encoding), strict=True):
        if not _overlaps(diagnostic.range, wanted):
            continue
        if finding.fix is not None and finding.fix.edits:
            edits = [types.TextEdit(client_range(lines, (e.line, e.column, e.end_line, e.end_column), encoding),
                                    e.content) for e in finding.fix.edits]
            unsafe = finding.fix.applicability != "safe"
            actions.append(types.CodeAction(
                title=f"{finding.code}: {finding.fix.message}" + (" (unsafe fix)" if unsafe else ""),
                kind=QUICK_FIX, diagnostics=[diagnostic], is_preferred=not unsafe,
                edit=types.WorkspaceEdit(changes={uri: edits})))
        edit = noqa_edit(text, finding.line, finding.code)
        if edit is not None:
            line, start, end, content = edit
            actions.append(types.CodeAction(
                title=f"Disable {finding.code} for this line", kind=QUICK_FIX, diagnostics=[diagnostic],
                edit=types.WorkspaceEdit(changes={uri: [types.TextEdit(
                    client_range(lines, (line, start, line, end), encoding), content)]})))
    return actions


def noqa_edit(text: str, line: int, code: str) -> tuple[int, int, int, str] | None:
    """(line, start column, end column, new text) that makes ``line`` carry `# noqa: code`; None
    when the line cannot take a comment (it ends inside a string or after a backslash)."""
    lines = lines_of(text)
    if not 1 <= line <= len(lines):
        return None
    current = lines[line - 1]
    if _BARE_NOQA.search(current):
        return None
    listed = _NOQA_CODES.search(current)
    if listed is not None:
        if code in re.findall(r"[A-Z]+[0-9]+", listed.group().upper()):
            return None
        return line, listed.end() + 1, listed.end() + 1, f", {code}"
    body = current.rstrip()
    if body.endswith("\\") or not _comment_fits(text, line):
        return None
    return line, len(body) + 1, len(current) + 1, f"  # noqa: {code}"


def _comment_fits(text: str, line: int) -> bool:
    """False when ``line`` ends inside a string (a comment there would change the string)."""
    opened: list[int] = []  # first lines of the f-/t-strings being read (3.12+ splits them in tokens)
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.start[0] > line and not opened:
                return True
            kind = tokenize.tok_name[token.type]
            if kind == "STRING" and token.start[0] <= line < token.end[0]:
                return False
            if kind in ("FSTRING_START", "TSTRING_START"):
                opened.append(token.start[0])
            elif kind in ("FSTRING_END", "TSTRING_END") and opened:
                if opened.pop() <= line < token.end[0]:
                    return False
    except (tokenize.TokenError, SyntaxError):
        return True  # text that does not tokenize this far: the line is taken as it reads
    return True


def _overlaps(a: types.Range, b: types.Range) -> bool:
    a_start, a_end = (a.start.line, a.start.character), (a.end.line, a.end.character)
    b_start, b_end = (b.start.line, b.start.character), (b.end.line, b.end.character)
    return a_start <= b_end and b_start <= a_end


def fix_all_action(uri: str, before: str, after: str, count: int) -> types.CodeAction | None:
    """The whole document replaced by its fixed text (safe fixes only)."""
    if after == before:
        return None
    lines = lines_of(before)
    end = types.Position(len(lines), 0)
    edit = types.TextEdit(types.Range(types.Position(0, 0), end), after)
    return types.CodeAction(title=f"torchlint: apply {count} safe fix{'es' if count != 1 else ''}", kind=FIX_ALL,
                            edit=types.WorkspaceEdit(changes={uri: [edit]}))
