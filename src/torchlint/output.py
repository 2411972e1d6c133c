"""Where a command's report goes, and the exit statuses every command shares."""

from __future__ import annotations

import sys
from pathlib import Path

from torchlint.config import ConfigError

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def emit(text: str, output_file: Path | None) -> None:
    """The report goes to -o FILE when given, else to stdout."""
    if output_file is None:
        sys.stdout.write(text)
        return
    try:
        output_file.write_text(text, encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot write {output_file}: {error.strerror}") from None
