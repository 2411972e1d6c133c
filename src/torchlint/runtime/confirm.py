"""Tie runtime events to static findings.

An event with a source line confirms the static findings at that line. An event without one (a
parameter blown up by an update, memory growth, a nondeterministic run) is explained by the static
findings, in the files involved, of the rules that cause it. An unchanged file is checked once.
"""

from __future__ import annotations

import os

EXPLAINED_BY = {
    "TL901": ("TL101", "TL102", "TL103", "TL104", "TL105", "TL106", "TL108", "TL119"),  # a NaN loss made after the model
    "TL903": ("TL109", "TL110"),  # an update that dwarfs the weights: large init, learning rate
    "TL904": ("TL402",),  # memory growth: graphs kept alive
    "TL905": ("TL501", "TL502", "TL503"),  # nondeterminism: seeding and determinism settings
    "TL906": ("TL110", "TL109", "TL107"),  # NaN parameters: optimizer eps/lr, init, float16
    "TL908": ("TL402",),  # earlier steps' graphs still alive
    "TL909": ("TL301",),  # the last step's gradients not cleared
}

_checked: dict[tuple[str, int, int], list] = {}  # (path, mtime, size) -> its static findings


def _key(path: str) -> tuple[str, int, int]:
    stat = os.stat(path)
    return path, stat.st_mtime_ns, stat.st_size


def static_findings(paths) -> list:
    """The static findings of the existing files among `paths`; an unchanged file is checked once."""
    keys = [_key(p) for p in sorted({os.path.abspath(p) for p in paths if p and os.path.isfile(p)})]
    missing = [key for key in keys if key not in _checked]
    if missing:
        from torchlint.api import check_paths

        found = check_paths([path for path, _, _ in missing])
        for key in missing:
            _checked[key] = [f for f in found if os.path.abspath(f.path) == key[0]]
    return [f for key in keys for f in _checked[key]]


def confirm(event) -> None:
    if event.file and event.line:
        event.confirmed = [f for f in static_findings([event.file]) if f.line == event.line]


def explain(event, paths) -> None:
    """Attach the static findings that explain an event that has no source line of its own."""
    codes = EXPLAINED_BY.get(event.code)
    if not event.confirmed and not event.line and codes:
        event.confirmed = [f for f in static_findings(paths) if f.code in codes]
