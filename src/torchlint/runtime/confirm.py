"""Static findings at the line where a runtime event happened are confirmed by it."""

from __future__ import annotations

import os


def confirm(event) -> None:
    if not event.file or not event.line or not os.path.isfile(event.file):
        return
    from torchlint.api import check_paths

    event.confirmed = [f for f in check_paths([event.file]) if f.line == event.line]
