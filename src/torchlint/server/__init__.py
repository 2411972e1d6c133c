"""`torchlint server`: the static checks as a language server (LSP over stdio), built on pygls.

Only this package imports pygls; it is the optional `lsp` extra (pip install 'torchlint[lsp]').
"""

from __future__ import annotations

import logging
import os
import sys

EXIT_WAIT_S = 10.0  # how long the server waits, on exit, for the check in progress
INSTALL_HINT = "torchlint server needs pygls: pip install 'torchlint[lsp]'"


class _Quiet(logging.Formatter):
    """One line per record: a failure inside the server is reported, never as a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage().split("\n", 1)[0]  # pygls appends formatted tracebacks to some
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            message += f": {type(error).__name__}: {error}"
        return f"torchlint server: {record.levelname.lower()}: {message}"


class _Stdout:
    """stdout for the protocol: a client that went away ends the session instead of raising."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.closed = False

    def write(self, data: bytes) -> int:
        if self.closed:
            return 0
        try:
            return self.stream.write(data)
        except (BrokenPipeError, ConnectionResetError, ValueError, OSError):
            self.closed = True
            return 0

    def flush(self) -> None:
        if self.closed:
            return
        try:
            self.stream.flush()
        except (BrokenPipeError, ConnectionResetError, ValueError, OSError):
            self.closed = True

    def close(self) -> None:
        self.flush()


def serve(log_level: str = "warning") -> int:
    """Run the server on stdin/stdout until `exit` or end of input; the LSP exit code (0 after shutdown)."""
    try:
        import pygls  # noqa: F401
    except ImportError:
        from torchlint.config import ConfigError

        raise ConfigError(INSTALL_HINT) from None
    from torchlint.server.app import build_server

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Quiet())
    logging.basicConfig(level=log_level.upper(), handlers=[handler], force=True)
    server = build_server()
    stdout = _Stdout(sys.stdout.buffer)
    try:
        server.start_io(sys.stdin.buffer, stdout)
    except KeyboardInterrupt:
        pass
    code = 0 if server.shutdown_received else 1
    _detach_stdout()
    if not server.wait_for_checks(EXIT_WAIT_S):
        # A check thread inside the native parser must not meet interpreter shutdown (it would abort).
        sys.stderr.flush()
        os._exit(code)
    return code


def _detach_stdout() -> None:
    """Point fd 1 at /dev/null so flushing at interpreter exit cannot fail on a closed pipe."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
