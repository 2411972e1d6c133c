"""`torchlint run [options] train.py [script args]`: where torchlint's options end and the script's begin.

As with `python`, `torchrun` and `python -m`, everything after the script path (or after
`-m MODULE`) belongs to the script, even `--help` and options whose names torchlint also has
(`--lr`, `--device`). A model target (`model.py:Net`) has no arguments of its own, so torchlint's
options may also follow it. A `--` right after the script path is dropped: it was the way to pass
arguments before, and a script given `--` first would read its options as positionals.
"""

from __future__ import annotations

import argparse
import os

from torchlint.config import ConfigError

MODEL_ONLY = ("--input", "--init", "--init-kwargs", "--steps", "--loss", "--optimizer", "--lr", "--device")


def is_script(target: str) -> bool:
    """A script to run unchanged, not a `model.py:Net` / `package.module:Net` target."""
    return ":" not in target and (target.endswith(".py") or os.path.isfile(target))


def _option(table: dict[str, bool], token: str) -> str | None:
    """The full option name a token stands for (argparse accepts unique prefixes), or None."""
    name = token.split("=", 1)[0]
    if name in table:
        return name
    matches = [option for option in table if option.startswith(name) and option.startswith("--")]
    return matches[0] if len(matches) == 1 else None


def split_run_argv(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[list[str], list[str]]:
    """(torchlint's own arguments, the script's arguments)."""
    table = {s: action.nargs != 0 for action in parser._actions for s in action.option_strings}
    own: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":  # end of torchlint's options: the target follows
            index += 1
            break
        if token.startswith("-m") and token not in table and not token.startswith("--"):
            token, argv = "-m", [*argv[:index], "-m", token[2:], *argv[index + 1:]]  # `-mpkg.mod`, as python allows
        if token == "-m":
            if index + 1 == len(argv):
                raise ConfigError("-m needs a module name")
            own += ["-m", argv[index + 1]]
            return _checked(own, argv[index + 2:])
        if token.startswith("-") and token != "-":
            option = _option(table, token)
            own.append(token)
            if option is not None and table[option] and "=" not in token and index + 1 < len(argv):
                own.append(argv[index + 1])
                index += 1
            index += 1
            continue
        break
    if index == len(argv):
        return own, []
    target, rest = argv[index], argv[index + 1:]
    if not is_script(target):  # a model target: torchlint's options may follow it
        return [*own, target, *rest], []
    if rest[:1] == ["--"]:
        rest = rest[1:]
    return _checked([*own, "--", target], rest)


def _checked(own: list[str], script_args: list[str]) -> tuple[list[str], list[str]]:
    """A model-only option before a script is a mistake: say so instead of ignoring it."""
    table = {option: True for option in MODEL_ONLY}
    for token in own:
        if token.startswith("--") and _option(table, token) is not None:
            raise ConfigError(f"{_option(table, token)} applies to model targets (model.py:Net); a script's own "
                               "arguments go after the script path: torchlint run [options] train.py [script args]")
    return own, script_args
