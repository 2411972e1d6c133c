"""The paths named on the command line: each must exist and be a directory or a Python file we read."""

from __future__ import annotations

import errno
import os

from torchlint.config import ConfigError

READ_SUFFIXES = (".py", ".pyi", ".pyw", ".ipynb")


def check_named_paths(paths: list[str]) -> None:
    """A one-line ConfigError (exit 2) for the first path that cannot be checked."""
    for path in paths:
        problem = path_problem(path)
        if problem is not None:
            raise ConfigError(problem)


def path_problem(path: str) -> str | None:
    if os.path.isdir(path):
        return None
    if os.path.exists(path):
        if path.endswith(READ_SUFFIXES) or _python_shebang(path):
            return None
        return f"not a Python file: {path} (torchlint reads .py, .pyi and .ipynb files and scripts with a python shebang)"
    if os.path.islink(path):
        try:
            os.stat(path)
        except OSError as error:
            if error.errno == errno.ELOOP:
                return f"symlink loop: {path}"
        return f"broken symlink: {path} -> {os.readlink(path)}"
    return f"path not found: {path}"


def _python_shebang(path: str) -> bool:
    """A script without a suffix that pre-commit's `types: [python]` would pass: `#!... python...`."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(200)
    except OSError:
        return True  # unreadable: reported as TL002 with the reason
    return first.startswith(b"#!") and b"python" in first
