"""Where a project may set an environment variable for a file, besides the file's own code.

A variable like CUBLAS_WORKSPACE_CONFIG is often exported by whatever starts the program: a launcher
module that sets ``os.environ`` and then imports the training code, a module the file imports, a
shell script, a Dockerfile ``ENV`` line, a CI or cluster config, or a README command next to the
file's name. The project's files (the folder holding its pyproject/setup/.git marker) are scanned
once per process for the variable's name. A Python file counts when it is linked to the file by
imports (either way, transitively) or is the ``__init__`` of a package holding it; a run script or
config when the file is in its folder (or below), and a script or config elsewhere, or a document,
when a command in it runs the file or a script whose imports reach it.
"""

from __future__ import annotations

import io
import os
import re
import time
import tokenize
from pathlib import Path

from torchlint.static.cache import content_key
from torchlint.static.project import Project, find_root

MAX_FILES = 20_000  # files looked at per project
MAX_BYTES = 1_000_000
MAX_MODULES = 400  # modules followed through imports
SKIP_DIRS = frozenset({"node_modules", "__pycache__", "site-packages", "venv", "env", "build", "dist"})
CONFIGS = frozenset({".sh", ".bash", ".zsh", ".env", ".envrc", ".yaml", ".yml", ".toml", ".cfg", ".ini",
                     ".slurm", ".sbatch", ".job"})
DOCUMENTS = frozenset({".md", ".rst", ".txt"})
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+\(?([\w., \t]+)|import[ \t]+([\w., \t]+))",
                     re.M)


def code_mentions(source: str, word: str) -> bool:
    """`word` in the code (names, strings), not only in comments."""
    if word not in source:
        return False
    try:
        tokens = tokenize.generate_tokens(io.StringIO(source).readline)
        return any(word in token.string for token in tokens if token.type in (tokenize.NAME, tokenize.STRING)
                   or token.type == getattr(tokenize, "FSTRING_MIDDLE", -1))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return True


def code_text(source: str) -> str:
    """The source without its comments (for searches that must not be fooled by them)."""
    try:
        tokens = tokenize.generate_tokens(io.StringIO(source).readline)
        return " ".join(token.string for token in tokens if token.type != tokenize.COMMENT)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return source


def set_elsewhere(project: Project, file: Path, word: str, deps: dict[str, str], accept=None) -> Path | None:
    """A project file that sets (or documents setting) `word` for `file`; it is added to `deps`.
    With `accept`, only a Python module whose code passes ``accept(code_text)`` counts."""
    file = file.resolve()
    root = find_root(file)
    for other in _mentions(root, word):
        if other == file:
            continue
        suffix = other.suffix.lower()
        linked = False
        if suffix == ".py":
            # A launcher that imports the file, a module it imports, or a package __init__ above it
            # (which runs before any module of the package).
            linked = file in _imported(project, other) or other in _imported(project, file) \
                or (other.name == "__init__.py" and file.is_relative_to(other.parent))
        elif suffix in DOCUMENTS:
            linked = _runs_file(project, other, file, root)
        else:  # a run script, a Dockerfile, a CI or cluster config: for the files below it, or the one it runs
            linked = file.is_relative_to(other.parent) or _runs_file(project, other, file, root)
        if linked:
            try:
                data = other.read_bytes()
            except OSError:
                continue
            deps[str(other)] = content_key(data)  # read: a change to it re-checks `file`
            if accept is None or (suffix == ".py" and accept(code_text(data.decode("utf-8", "replace")))):
                return other
    return None


_SCANS: dict[tuple[Path, str], tuple[float, tuple[Path, ...]]] = {}
SCAN_SECONDS = 300.0  # a project scan is reused this long (a long-lived process sees new files after it)


def _mentions(root: Path, word: str) -> tuple[Path, ...]:
    """The project's files whose text (the code of a Python file) contains `word`."""
    now = time.monotonic()
    cached = _SCANS.get((root, word))
    if cached is None or now - cached[0] > SCAN_SECONDS:
        cached = _SCANS[(root, word)] = (now, _scan(root, word))
    return cached[1]


def _scan(root: Path, word: str) -> tuple[Path, ...]:
    found = []
    seen = 0
    needle = word.encode()
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS]
        for name in files:
            seen += 1
            if seen > MAX_FILES:
                return tuple(found)
            path = Path(folder) / name
            suffix = path.suffix.lower()
            if suffix != ".py" and suffix not in CONFIGS and suffix not in DOCUMENTS \
                    and not name.startswith(("Dockerfile", "Makefile", "Containerfile")):
                continue
            try:
                if path.stat().st_size > MAX_BYTES:
                    continue
                data = path.read_bytes()
            except OSError:
                continue
            if needle not in data:
                continue
            text = data.decode("utf-8", "replace")
            if suffix != ".py" or code_mentions(text, word):
                found.append(path.resolve())
    return tuple(found)


_SCRIPT = re.compile(r"([\w./-]+\.py)\b|-m\s+([\w.]+)")


def _runs_file(project: Project, document: Path, file: Path, root: Path) -> bool:
    """Whether a document's commands run the file, or a script or module whose imports reach it."""
    try:
        text = document.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    for script, module in _SCRIPT.findall(text):
        if script:
            target = (root / script).resolve() if (root / script).is_file() else \
                (document.parent / script).resolve() if (document.parent / script).is_file() else None
        else:
            target = project.resolve(root / "__main__.py", module, 0)
            target = target.resolve() if target is not None else None
        if target is not None and (target == file or file in _imported(project, target)):
            return True
    return False


def _imported(project: Project, start: Path) -> set[Path]:
    """Project modules `start` imports, transitively (bounded)."""
    seen: set[Path] = set()
    todo = [start.resolve()]
    while todo and len(seen) < MAX_MODULES:
        current = todo.pop()
        for module in _imports_of(project, current):
            if module not in seen:
                seen.add(module)
                todo.append(module)
    return seen


def imported_within(project: Project, start: Path, levels: int, limit: int) -> list[Path]:
    """Project modules `start` imports through at most `levels` imports, nearest first (at most `limit`)."""
    start = start.resolve()
    found: list[Path] = []
    seen, frontier = {start}, [start]
    for _ in range(levels):
        following = []
        for current in frontier:
            for module in _imports_of(project, current):
                if module not in seen and len(found) < limit:
                    seen.add(module)
                    found.append(module)
                    following.append(module)
        frontier = following
    return found


_IMPORTS: dict[tuple[str, int, int], tuple[Path, ...]] = {}


def _imports_of(project: Project, path: Path) -> tuple[Path, ...]:
    """The project modules a file imports directly (kept per process, keyed by path, size and mtime)."""
    try:
        stat = path.stat()
        token = (str(path), stat.st_size, stat.st_mtime_ns)
        if token in _IMPORTS:
            return _IMPORTS[token]
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ()
    found = _IMPORTS[token] = _resolve_imports(project, path, text)
    return found


def _resolve_imports(project: Project, path: Path, text: str) -> tuple[Path, ...]:
    found = []
    for match in _IMPORT.finditer(text):
        dots, module, names, plain = match.groups()
        if plain is not None:
            targets = [(name.split(" as ")[0].strip(), 0) for name in plain.split(",")]
        else:
            level = len(dots)
            targets = [(module, level)]
            # `from pkg import train`: `train` may be a submodule
            targets += [(f"{module}.{n.split(' as ')[0].strip()}" if module else n.split(" as ")[0].strip(), level)
                        for n in names.split(",") if n.strip()]
        for name, level in targets:
            if not name and not level:
                continue
            resolved = project.resolve(path, name or None, level)
            if resolved is not None:
                found.append(resolved.resolve())
    return tuple(found)
