"""Run a script or a module as `python train.py args` / `python -m pkg.mod args` would, in this process."""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys
from dataclasses import dataclass, field


class LaunchError(Exception):
    """The script or module cannot be found: a one-line message for the command line."""


@dataclass
class Program:
    """What to run: a script path, or a module name (`module=True`), with the script's arguments."""

    target: str
    args: list[str] = field(default_factory=list)
    module: bool = False

    @property
    def name(self) -> str:
        return self.target if self.module else os.path.basename(self.target)

    def file(self) -> str | None:
        """The file that runs: the script, or the module's (its __main__ for a package)."""
        if not self.module:
            return self.target
        spec = _find_spec(self.target)
        if spec.submodule_search_locations:  # a package: python -m runs its __main__
            spec = _find_spec(f"{self.target}.__main__")
        return spec.origin

    def argv(self) -> list[str]:
        """The argv the child passes on: `-m name args` or `path args`."""
        return ["-m", self.target, *self.args] if self.module else [self.target, *self.args]

    def check(self) -> None:
        if self.module:
            self.file()
        elif not os.path.isfile(self.target):
            raise LaunchError(f"file not found: {self.target}")


def _find_spec(name: str):
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as error:
        raise LaunchError(f"no module named {name!r} ({error})") from None
    if spec is None or (spec.origin is None and not spec.submodule_search_locations):
        raise LaunchError(f"no module named {name!r}")
    return spec


def from_argv(argv: list[str]) -> Program:
    """The inverse of `Program.argv`."""
    if argv and argv[0] == "-m":
        return Program(argv[1], argv[2:], module=True)
    return Program(argv[0], argv[1:])


def execute(program: Program) -> None:
    """Run it with sys.argv and sys.path[0] set as Python sets them; both are restored afterwards."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    try:
        if program.module:
            sys.argv = [program.file() or program.target, *program.args]
            sys.path.insert(0, os.getcwd())  # `python -m` puts the working directory first
            runpy.run_module(program.target, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [program.target, *program.args]
            sys.path.insert(0, os.path.dirname(os.path.abspath(program.target)))
            runpy.run_path(program.target, run_name="__main__")
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
