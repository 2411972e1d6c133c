"""Debounced checks on one worker thread; a result for an outdated snapshot is dropped.

``schedule(key)`` (re)starts a timer for the key; when it fires the key joins the queue.
``schedule(key, delay, cold=True)`` asks for a check from scratch (no warm start, see
``static.warm_start``): the server's settling check once a document has been idle a while. One check
runs at a time, on a daemon thread, so the server keeps reading messages and exits promptly.
A check takes a fresh snapshot of its document when it starts (the newest text, whatever the
edits in between), and its result is published only if the document's token (version and
settings generation) is still the one it was computed for: a document edited while it was being
checked gets the next check instead, and the outdated check is abandoned (``Cancelled`` is raised
in the worker thread, at the next Python instruction it runs), so the next one starts at once.
"""

from __future__ import annotations

import asyncio
import ctypes
import threading
from collections.abc import Callable, Hashable
from typing import Any


class Cancelled(BaseException):
    """Raised in the worker thread to abandon a check whose document changed (not an Exception:
    the engine's own `except Exception` guards must let it through)."""


def _raise_in(thread_id: int, exception: type[BaseException] | None) -> None:
    """Make ``thread_id`` raise ``exception`` when it next runs Python code; None withdraws it."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id),
                                              ctypes.py_object(exception) if exception else None)


Snapshot = Callable[[Hashable, bool], "tuple[Hashable, Callable[[], Any]] | None"]


_CANCELLED = object()  # the token of an abandoned check


class Scheduler:
    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        snapshot: Snapshot,
        current: Callable[[Hashable], Hashable | None],
        publish: Callable[[Hashable, Any], None],
        on_error: Callable[[Hashable, BaseException], None],
        delay: float = 0.03,
    ) -> None:
        self.loop = loop
        self.snapshot = snapshot  # (key, cold) -> (token, job) for its current content, None when gone
        self.current = current  # key -> the token now
        self.publish = publish
        self.on_error = on_error
        self.delay = delay
        self.running: Hashable | None = None
        self.queue: dict[Hashable, bool] = {}  # keys waiting for the worker, oldest first: cold or not
        self.timers: dict[Hashable, asyncio.TimerHandle] = {}
        self.dropped = 0  # results computed for an outdated snapshot
        self.thread: threading.Thread | None = None
        self.cancelled = 0  # checks abandoned because their document changed
        self._guard = threading.Lock()  # a check may be interrupted only while it is inside its job
        self._interruptible = False

    def schedule(self, key: Hashable, delay: float | None = None, cold: bool = False) -> None:
        if key == self.running:  # its check is for text that is gone: stop it
            self._interrupt()
        timer = self.timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        wait = self.delay if delay is None else delay
        self.timers[key] = self.loop.call_later(wait, self._ready, key, cold)

    def settle(self, key: Hashable) -> None:
        """The key's findings are current without a check: drop its pending and running checks."""
        if key == self.running:
            self._interrupt()
        self.forget(key)

    def forget(self, key: Hashable) -> None:
        timer = self.timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        self.queue.pop(key, None)

    def idle(self) -> bool:
        return self.running is None and not self.queue and not self.timers

    def join(self, timeout: float) -> bool:
        """Wait for the check in progress (the server is exiting); False if it is still running."""
        if self.thread is not None:
            self.thread.join(timeout)
            return not self.thread.is_alive()
        return True

    def _ready(self, key: Hashable, cold: bool = False) -> None:
        self.timers.pop(key, None)
        self.queue[key] = cold or self.queue.get(key, False)
        self._next()

    def _next(self) -> None:
        while self.running is None and self.queue:
            key = next(iter(self.queue))
            cold = self.queue.pop(key)
            taken = self.snapshot(key, cold)
            if taken is None:  # closed meanwhile
                continue
            token, job = taken
            self.running = key
            self.thread = threading.Thread(target=self._work, args=(key, token, job), daemon=True,
                                           name="torchlint-check")
            self.thread.start()

    def _interrupt(self) -> None:
        with self._guard:
            if self._interruptible and self.thread is not None and self.thread.ident is not None:
                _raise_in(self.thread.ident, Cancelled)
                self._interruptible = False

    def _work(self, key: Hashable, token: Hashable, job: Callable[[], Any]) -> None:
        result = error = None
        try:
            try:
                with self._guard:
                    self._interruptible = True
                result = job()
            except Exception as exc:  # an engine bug must not kill the worker; report it and go on
                error = exc
            finally:
                with self._guard:
                    self._interruptible = False
                    _raise_in(threading.get_ident(), None)  # one requested too late: withdrawn
        except Cancelled:
            result, error, token = None, None, _CANCELLED
        try:
            self.loop.call_soon_threadsafe(self._done, key, token, result, error)
        except RuntimeError:  # the loop is closed: the server is exiting
            pass

    def _done(self, key: Hashable, token: Hashable, result: Any, error: BaseException | None) -> None:
        self.running = None
        try:
            if token is _CANCELLED:
                self.cancelled += 1
            elif error is not None:
                self.on_error(key, error)
            elif self.current(key) == token:
                self.publish(key, result)
            else:
                self.dropped += 1
        finally:
            self._next()
