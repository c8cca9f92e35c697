"""A gateway call streamed: the turn runs in a task that hands the model's deltas over a queue, shared by the
OpenAI wire formats (chat completions, responses)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Mapping
from typing import Any

from quart import Response

from ..client_call import ClientCall
from ..gateway import complete, reply_headers
from ..models import ProfileRow, SessionRow
from ..service import TDAService

_background: set[asyncio.Task[Any]] = set()


@dataclasses.dataclass
class StreamedTurn:
    turn: asyncio.Task[dict[str, Any]]
    queue: asyncio.Queue[dict[str, Any]]
    first: asyncio.Task[dict[str, Any]]
    headers: dict[str, str]
    """tda's reply headers known before the model answered (``reply_headers``): the session's turn, what was cut."""

    async def deltas(self) -> AsyncGenerator[dict[str, Any], None]:
        """Each delta as the model sends it (``{"content": ...}`` or ``{"tool_calls": [...]}``), until the turn
        ends. Close it (``contextlib.aclosing``) when the client goes away: the turn itself goes on and is
        recorded."""
        pending: asyncio.Task[dict[str, Any]] | None = self.first
        try:
            while pending is not None:
                await asyncio.wait({self.turn, pending}, return_when=asyncio.FIRST_COMPLETED)
                if pending.done():
                    yield pending.result()
                    pending = asyncio.create_task(self.queue.get())
                elif self.turn.done():
                    pending.cancel()
                    pending = None
        finally:
            if pending is not None:
                pending.cancel()
        while not self.queue.empty():
            yield self.queue.get_nowait()

    def response(self, events: AsyncIterator[bytes], headers: Mapping[str, str]) -> Response:
        """``events`` as the server-sent reply, with the call's ``headers`` and tda's reply headers."""
        response = Response(
            events, mimetype="text/event-stream", headers={**headers, **self.headers, "Cache-Control": "no-cache"}
        )
        response.timeout = None  # as long as the model answers
        return response

    def error(self) -> BaseException | None:
        """What ended the turn, once the deltas are through (None: it completed; ``turn.result()`` is its result)."""
        return self.turn.exception()


async def start_turn(
    svc: TDAService, call: ClientCall, profile: ProfileRow, session: SessionRow | None
) -> StreamedTurn:
    """Start the call and wait for its first delta. Errors before the model starts answering (a bad chat, an
    unknown profile, a window that cannot be assembled) are raised here, as plain HTTP errors; later ones are the
    caller's to send as an event. A client that goes away does not cancel the turn. The reply's headers are those of
    the window whose model answers (the last one assembled), counted while it answered."""
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    windows: list[Awaitable[dict[str, Any]]] = []
    told = dataclasses.replace(call, on_delta=queue.put, on_window=windows.append)
    turn = asyncio.create_task(complete(svc, told, profile, session))
    _background.add(turn)
    turn.add_done_callback(_background.discard)
    first = asyncio.create_task(queue.get())
    await asyncio.wait({turn, first}, return_when=asyncio.FIRST_COMPLETED)
    if turn.done() and turn.exception() is not None and not first.done():
        first.cancel()
        raise turn.exception()  # type: ignore[misc]
    headers = reply_headers(await windows[-1]) if windows else {}
    return StreamedTurn(turn, queue, first, headers)
