"""pygls's protocol with two fixes: a request it cannot read gets an error reply instead of
silence, and a notification's bookkeeping is dropped once it is handled (pygls 2.1 keeps a
future per notification handled by a built-in feature, such as every didChange, for ever)."""

from __future__ import annotations

from typing import Any

from lsprotocol.types import ResponseError
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol


class Protocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]):
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            # a request whose params do not fit its method: the client waits for an answer
            if isinstance(data, dict) and "id" in data and isinstance(data.get("method"), str):
                self._send_response(data["id"], error=ResponseError(
                    error.code, f"{error.message}: the params do not fit {data['method']}"))
            raise

    def _handle_notification(self, method_name: str, params: Any) -> None:
        before = set(self._request_futures)  # the requests in flight: a handful
        super()._handle_notification(method_name, params)
        for key in set(self._request_futures) - before:  # keyed by a fresh uuid, never a client's id
            future = self._request_futures[key]
            if future.done():
                del self._request_futures[key]
            else:
                future.add_done_callback(lambda _, key=key: self._request_futures.pop(key, None))
