"""A minimal LSP client for the tests and the benchmark: JSON-RPC over a child's stdio.

Messages are framed with a Content-Length header. A reader thread queues everything the server
sends; requests the server makes of the client (registerCapability, ...) get a null result.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class LspClient:
    def __init__(self, cwd: Path | None = None, args: tuple[str, ...] = ()) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
        self.process = subprocess.Popen([sys.executable, "-m", "torchlint", "server", *args], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env)
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []  # every message received, in order
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    # -- wire -----------------------------------------------------------------------------------
    def _read(self) -> None:
        try:
            self._read_frames()
        except (OSError, ValueError):  # the test closed the pipe (a client that disconnects)
            self.inbox.put(None)

    def _read_frames(self) -> None:
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self.inbox.put(None)
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            body = stream.read(length or 0)
            message = json.loads(body)
            message["_at"] = time.perf_counter()
            self.inbox.put(message)

    def send(self, message: dict[str, Any]) -> None:
        self.process.stdin.write(frame(message))
        self.process.stdin.flush()

    def notify(self, method: str, params: Any = None) -> float:
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        sent = time.perf_counter()
        self.send(message)
        return sent

    def request(self, method: str, params: Any = None) -> int:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.next_id

    # -- waiting ----------------------------------------------------------------------------------
    def _pump(self, deadline: float) -> dict[str, Any] | None:
        wait = deadline - time.monotonic()
        if wait <= 0:
            raise TimeoutError("no message from the server in time")
        message = self.inbox.get(timeout=wait)
        if message is None:
            raise EOFError("the server closed its output")
        self.seen.append(message)
        if "id" in message and "method" in message:  # a request of the server's: answer it
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        return message

    def wait_for(self, match, timeout: float = 60.0, start: int = 0) -> dict[str, Any]:
        """The first message (from index ``start`` of ``seen``) that ``match`` accepts."""
        for message in self.seen[start:]:
            if match(message):
                return message
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self._pump(deadline)
            except queue.Empty:
                raise TimeoutError("no matching message from the server in time") from None
            if match(message):
                return message

    def response(self, request_id: int, timeout: float = 60.0) -> dict[str, Any]:
        return self.wait_for(lambda m: m.get("id") == request_id and "method" not in m, timeout)

    def call(self, method: str, params: Any = None, timeout: float = 60.0) -> Any:
        reply = self.response(self.request(method, params), timeout)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result")

    def diagnostics(self, uri: str, version: int | None = None, timeout: float = 60.0, start: int = 0) -> dict:
        """The next publishDiagnostics for ``uri`` (for ``version`` when given)."""
        def match(m):
            return (m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
                    and (version is None or m["params"].get("version") == version))
        return self.wait_for(match, timeout, start)["params"]

    # -- session ----------------------------------------------------------------------------------
    def initialize(self, root: Path, options: dict | None = None, capabilities: dict | None = None) -> dict:
        result = self.call("initialize", {
            "processId": os.getpid(), "rootUri": root.as_uri(),
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
            "capabilities": capabilities or {}, "initializationOptions": options})
        self.notify("initialized", {})
        return result

    def open(self, uri: str, text: str, version: int = 1, language: str = "python") -> float:
        return self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": language, "version": version, "text": text}})

    def change(self, uri: str, version: int, text: str) -> float:
        """A whole-document change (the server also accepts ranged ones)."""
        return self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                      "contentChanges": [{"text": text}]})

    def stop(self, timeout: float = 30.0) -> tuple[int, str]:
        """shutdown + exit; the exit code and stderr."""
        self.call("shutdown")
        self.notify("exit")
        return self.finish(timeout)

    def finish(self, timeout: float = 30.0) -> tuple[int, str]:
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise
        stderr = self.process.stderr.read().decode("utf-8", "replace")
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            try:
                stream.close()
            except OSError:
                pass
        return code, stderr
