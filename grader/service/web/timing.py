"""``Server-Timing: app;dur=MS`` on every answer: how long the service took, from the request to its headers.

A browser's developer tools show it beside the network time, and ``benchmarks/manual_grading.py`` reads it to
report the server's own time per action of the grading page, apart from the browser's.
"""

from __future__ import annotations

import time

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class ServerTiming:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def timed(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.append("Server-Timing", f"app;dur={(time.perf_counter() - started) * 1000:.1f}")
            await send(message)

        await self.app(scope, receive, timed)
