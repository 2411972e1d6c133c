"""Check one file's text: prefilter, parse once, one walk for all rules, locate, suppress."""

from __future__ import annotations

import gc
import os
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import libcst as cst

from torchlint.catalog import SYNTAX_ERROR, UNREADABLE_FILE
from torchlint.finding import Edit, Finding, Fix, Related
from torchlint.rule import RuleInfo
from torchlint.source import SourceError, decode_source, source_lines
from torchlint.static import suppress, warm_start
from torchlint.static.interpret import callsites
from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.walker import Walker
from torchlint.static.locate import locate
from torchlint.static.nesting import cpython_rejects, might_be_too_deep
from torchlint.static.parsing import parse_module, parse_with_lines, statement_memo, statement_spans
from torchlint.static.project import PROCESS_PROJECT
from torchlint.static.rules import STATIC_RULES, Rule
from torchlint.static.rules.base import DELETE_LINE

# Every rule needs torch, numpy or Lightning to be imported: files that never mention them are skipped unparsed.
_RELEVANT = re.compile(r"\b(?:torch|numpy|lightning|pytorch_lightning)\b")
_LONE_CR = re.compile(r"\r(?!\n)")


def might_have_findings(source: str) -> bool:
    return _RELEVANT.search(source) is not None


HOOKS = ("on_call", "on_binop", "on_augassign", "on_with", "on_end")


@lru_cache(maxsize=32)
def _handlers(enabled: frozenset[str]) -> tuple[list, ...]:
    """For each hook, the bound methods of the enabled rules that override it."""
    table: tuple[list, ...] = tuple([] for _ in HOOKS)
    for rule in STATIC_RULES:
        if rule.info.code not in enabled:
            continue
        for name, bucket in zip(HOOKS, table, strict=True):
            if getattr(type(rule), name) is not getattr(Rule, name):
                bucket.append(getattr(rule, name))
    return table


def check_text(
    source: str,
    path: str,
    enabled: frozenset[str],
    options: dict[str, dict[str, Any]] | None = None,
    file: Path | None = None,
    deps: dict[str, str] | None = None,
    prefilter: bool = True,
) -> list[Finding]:
    """Findings for one file (files that never mention torch or numpy are not parsed, unless
    ``prefilter`` is False: the fuzzing script parses every file).

    ``file``: where the text lives, so imports of the project's own modules resolve; the modules
    read for it are added to ``deps`` (path -> content hash)."""
    if prefilter and not might_have_findings(source):
        return []
    # A CST is acyclic and dies with this call: cyclic-GC passes while it is alive only traverse it
    # (measured: ~25% of the run time). Collection resumes as soon as the tree is garbage.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _check_text(source, path, enabled, options, file, deps)
    except RecursionError:  # valid Python nested deeper than the walk or locate recurse: say it was not checked
        if UNREADABLE_FILE.code not in enabled:
            return []
        return [_finding(UNREADABLE_FILE, "cannot analyse file: nested too deeply (RecursionError)", path,
                         (1, 1, 1, 1))]
    finally:
        if was_enabled:
            gc.enable()


# A backslash escape that may be malformed in a str literal: \x without 2 hex digits, \u without 4,
# \U without 8, \N without a name. Only a hint (raw strings, comments and bytes match too):
# CPython's compile() decides.
_BAD_ESCAPE = re.compile(r"\\(?:x(?![0-9A-Fa-f]{2})|u(?![0-9A-Fa-f]{4})|U(?![0-9A-Fa-f]{8})|N(?!\{))")


def _check_text(source, path, enabled, options, file, deps) -> list[Finding]:
    file_ignored = suppress.file_ignores(source)
    if suppress.is_ignored("ALL", file_ignored):
        return []
    if "\r" in source:  # lone CR line ends (Python reads them as \n) break LibCST's round trip; same length
        source = _LONE_CR.sub("\n", source)
    # LibCST would crash on deep nesting (see nesting.py) and accepts string escapes CPython refuses
    # (`"\x y"`): for such text, CPython's verdict instead
    suspicious = might_be_too_deep(source) or _BAD_ESCAPE.search(source) is not None
    rejected = cpython_rejects(source, path) if suspicious else None
    if rejected is not None:
        return [_finding(SYNTAX_ERROR, *_cpython_syntax_error(rejected, path))] if SYNTAX_ERROR.code in enabled else []
    try:
        module, lines = parse_with_lines(source)
    except cst.ParserSyntaxError as error:
        if SYNTAX_ERROR.code not in enabled:
            return []
        return [_finding(SYNTAX_ERROR, *_describe_syntax_error(source, path, error))]
    except (RecursionError, MemoryError, ValueError) as error:  # pathological input
        return [_finding(SYNTAX_ERROR, f"could not parse: {type(error).__name__}", path, (1, 1, 1, 1))]

    try:
        ctx = _walk(module, path, source, options, file, _handlers(enabled))
    except RecursionError:
        raise  # check_text reports it
    except Exception as error:  # a rule bug must not stop the run; the tests re-raise it
        if os.environ.get("TORCHLINT_STRICT"):
            raise
        print(f"torchlint: internal error in {path}: {type(error).__name__}: {error}", file=sys.stderr)
        return []
    if deps is not None:
        deps.update(ctx.deps)
    if not ctx.pending:
        return []

    targets = [p.node for p in ctx.pending]
    for pending in ctx.pending:
        if pending.fix is not None:
            targets.extend(node for node, _ in pending.fix.replacements)
        targets.extend(item[0] for item in pending.related if _local(item, path))
    spans = locate(module, targets, lines, statement_spans(module))
    noqa = suppress.LineSuppression(source, source_lines(source))
    findings = []
    seen = set()
    for pending in ctx.pending:
        span = spans.get(id(pending.node))
        if span is None:
            continue
        code = pending.rule.code
        key = (code, span)
        if key in seen or suppress.is_ignored(code, file_ignored):
            continue
        seen.add(key)
        if noqa.suppresses(span[0], code):
            continue
        fix = None
        if pending.fix is not None:
            edits = tuple(_edit(spans[id(node)], text) for node, text in pending.fix.replacements
                          if id(node) in spans)
            fix = Fix(pending.fix.message, pending.fix.applicability, edits)
        related = tuple(Related(path, spans[id(node)][0], spans[id(node)][1], text)
                        for node, text, *_ in (r for r in pending.related if _local(r, path))
                        if id(node) in spans and spans[id(node)] != span)
        related += tuple(_foreign_related(r) for r in pending.related if not _local(r, path))
        findings.append(_finding(pending.rule, pending.message, path, span, fix, related))
    findings.sort(key=lambda f: f.sort_key)
    return findings


def _walk(module, path, source, options, file, handlers) -> FileContext:
    """Walk with the rules; walk again while calls (in the file, and from the project's other files
    to its functions) teach parameters something new."""
    deps: dict[str, str] = {}
    seeded = _foreign_calls(module, file, deps)
    facts: dict = {}
    quiet: frozenset[int] = frozenset()
    fp16: frozenset[int] = frozenset()
    shapes = callsites.shapes_matter(source)
    if seeded:
        facts, quiet, fp16 = callsites.CallSites(path, seeded, shapes).learned()
    kept = statement_memo(module, "settled")  # the language server's document: its last check's facts
    warm = warm_start.start(module, kept.get("last")) if kept is not None else None
    if warm is not None:
        facts, quiet, fp16 = warm
        kept["warm"] = bool(facts or quiet or fp16)  # the server checks such a start again, cold, when idle
    seen = callsites.signature(facts, quiet, fp16, shapes)
    walks = callsites.walks_for(source)
    for walk in range(walks):
        ctx = FileContext(path=path, source=source, module=module, options=options or {},
                          project=PROCESS_PROJECT if file is not None else None, file=file,
                          call_sites=callsites.CallSites(path, seeded, shapes), param_facts=facts,
                          grad_off_functions=quiet, fp16_functions=fp16, deps=dict(deps))
        walker = Walker(ctx, handlers)
        walker.run(module)
        if file is not None and not facts and not quiet and not fp16:  # the walk a summary would make: reused
            PROCESS_PROJECT.note_calls(file, ctx.call_sites.foreign, ctx.deps)
        facts, quiet, fp16 = ctx.call_sites.learned()
        now = callsites.signature(facts, quiet, fp16, shapes)
        if now == seen or walk == walks - 1:
            walker.finish()  # only the last walk's findings are kept: its end-of-file checks alone run
            if kept is not None:
                kept["last"] = warm_start.settled(module, facts, quiet, fp16) if now == seen else None
            break
        seen = now
    return ctx


def _foreign_calls(module, file, deps: dict[str, str]) -> dict:
    """The calls the project's other files make to this file's functions, by function node (none
    when the file is not on disk or its importers cannot all be seen)."""
    if file is None:
        return {}
    functions = callsites.qualified_functions(module)
    if not functions:
        return {}
    names = sorted({qualname.split(".", 1)[0] for qualname in functions})
    try:
        methods = {q: q.rsplit(".", 1)[1] for q in functions if "." in q}
        calls = PROCESS_PROJECT.callers_of(file, names, deps, methods)
    except (OSError, RuntimeError, ValueError):  # RuntimeError: a symlink loop, or too deep a recursion
        return {}
    if not calls:
        return {}
    return {id(functions[q]): (functions[q], records) for q, records in calls.items() if q in functions}


def _local(related: tuple, path: str) -> bool:
    return len(related) < 3 or not related[2] or related[2] == path


def _foreign_related(related: tuple) -> Related:
    """A related location in another project module: positioned in that module's own tree."""
    node, text, where = related
    module = PROCESS_PROJECT.module_of(where)
    if module is None:  # a file checked earlier in this run, whose tree is gone: parse it again
        module, node = _same_node_in(where, node)
    line = column = 1
    if module is not None:
        span = locate(module, [node]).get(id(node))
        if span is not None:
            line, column = span[0], span[1]
    relative = os.path.relpath(where)
    shown = where if relative.startswith("..") else relative
    return Related(shown, line, column, text)


def _same_node_in(path: str, node) -> tuple:
    """The file's tree parsed again, and the first node in it with the same type and code as
    ``node`` (a node of an earlier parse of that file); (None, node) when the file cannot be read."""
    try:
        module = parse_module(decode_source(Path(path).read_bytes()).text)
    except (OSError, SourceError, cst.ParserSyntaxError, RecursionError, ValueError):
        return None, node
    empty = cst.Module([])
    wanted = empty.code_for_node(node)
    kind = type(node)
    found: list = []

    class Finder(cst.CSTVisitor):
        def on_visit(self, candidate) -> bool:
            if not found and type(candidate) is kind and empty.code_for_node(candidate) == wanted:
                found.append(candidate)
            return not found

    module.visit(Finder())
    return module, (found[0] if found else node)


def _edit(span, text: str) -> Edit:
    line, column, end_line, end_column = span
    if text == DELETE_LINE:  # the statement's whole lines, indentation and newline included
        return Edit(line, 1, end_line + 1, 1, "")
    return Edit(line, column, end_line, end_column, text)


def _describe_syntax_error(source: str, path: str, error: cst.ParserSyntaxError):
    """CPython's message and position (LibCST points at the next token); LibCST's if CPython accepts it."""
    cpython = cpython_rejects(source, path)
    if cpython is not None:
        return _cpython_syntax_error(cpython, path)
    line, column = error.raw_line, error.raw_column + 1
    detail = error.message.strip().splitlines()[0]
    return f"syntax not supported by the parser: {detail}", path, (line, column, line, column)


def _cpython_syntax_error(error: SyntaxError, path: str):
    line = error.lineno or 1
    column = max(error.offset or 1, 1)
    return f"syntax error: {error.msg}", path, (line, column, line, column)


def _finding(rule: RuleInfo, message: str, path: str, span, fix: Fix | None = None,
             related: tuple[Related, ...] = ()) -> Finding:
    line, column, end_line, end_column = span
    return Finding(
        code=rule.code, name=rule.name, severity=rule.severity, message=message, path=path,
        line=line, column=column, end_line=end_line, end_column=end_column,
        help=rule.summary, fix=fix, related=related,
    )
