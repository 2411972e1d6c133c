"""Tie runtime events to static findings.

An event with a source line confirms the static findings at that line. An event without one (a
parameter blown up by an update, memory growth, a nondeterministic run) is explained by the static
findings, in the files involved, of the rules that cause it.
"""

from __future__ import annotations

import os

EXPLAINED_BY = {
    "TL901": ("TL101", "TL102", "TL103", "TL104", "TL105", "TL106", "TL108"),  # a NaN loss made after the model
    "TL903": ("TL109", "TL110"),  # an update that dwarfs the weights: large init, learning rate
    "TL904": ("TL402",),  # memory growth: graphs kept alive
    "TL905": ("TL501", "TL502", "TL503"),  # nondeterminism: seeding and determinism settings
    "TL906": ("TL110", "TL109", "TL107"),  # NaN parameters: optimizer eps/lr, init, float16
}


def confirm(event) -> None:
    if not event.file or not event.line or not os.path.isfile(event.file):
        return
    from torchlint.api import check_paths

    event.confirmed = [f for f in check_paths([event.file]) if f.line == event.line]


def explain(event, paths) -> None:
    """Attach the static findings that explain an event that has no source line of its own."""
    codes = EXPLAINED_BY.get(event.code)
    files = sorted({os.path.abspath(p) for p in paths if p and os.path.isfile(p)})
    if event.confirmed or event.line or not codes or not files:
        return
    from torchlint.api import check_paths

    event.confirmed = [f for f in check_paths(files) if f.code in codes]
