"""Who the client is behind a reverse proxy, and a limit on its failed sign-ins.

``X-Forwarded-For``/``X-Forwarded-Proto`` are believed only from a trusted proxy (``TDA_TRUSTED_PROXIES``): a list
of addresses or CIDRs (``127.0.0.1,10.0.0.0/8``), or a count of proxies in front (``1``: the nearest one adds the
last entry). Without it they are ignored: anyone could send them. The client address this resolves is the key of
the failed-auth limit; the scheme decides whether the session cookie gets ``Secure``.
"""

from __future__ import annotations

import math
import time
from collections import deque

from quart import current_app, has_request_context, request

from .errors import TooManyRequests
from .proxies import TrustedProxies

TRUSTED_PROXIES = "TDA_TRUSTED_PROXIES"
"""The app's config key for ``Settings.trusted_proxies`` (set by ``create_app``)."""


NO_PROXIES = TrustedProxies()


def _proxies() -> TrustedProxies:
    return current_app.config.get(TRUSTED_PROXIES) or NO_PROXIES


def client_address() -> str:
    return _proxies().client(request.remote_addr or "", request.headers.get("X-Forwarded-For", ""))


def request_is_https() -> bool:
    if not has_request_context():
        return False
    forwarded = request.headers.get("X-Forwarded-Proto", "")
    return _proxies().scheme(request.remote_addr or "", request.scheme, forwarded) == "https"


class FailedAuthLimit:
    """At most ``failures`` failed authentications per client per ``window_s``; past that, 429 with Retry-After
    until the oldest failure leaves the window. Kept per replica, in memory (bounded: ``max_clients``)."""

    def __init__(self, failures: int = 20, window_s: float = 60.0, max_clients: int = 10_000) -> None:
        self.failures, self.window_s, self.max_clients = failures, window_s, max_clients
        self._seen: dict[str, deque[float]] = {}

    def _recent(self, client: str, now: float) -> deque[float]:
        times = self._seen.get(client) or deque()
        while times and times[0] <= now - self.window_s:
            times.popleft()
        return times

    def check(self, client: str) -> None:
        now = time.monotonic()
        times = self._recent(client, now)
        if len(times) >= self.failures:
            wait = max(1, math.ceil(times[0] + self.window_s - now))
            raise TooManyRequests(
                f"too many failed sign-ins from {client}; wait {wait} s, and check the token you send",
                retry_after=wait,
            )

    def failed(self, client: str) -> None:
        now = time.monotonic()
        if client not in self._seen and len(self._seen) >= self.max_clients:
            self._seen.pop(next(iter(self._seen)))  # the client seen longest ago
        times = self._recent(client, now)
        times.append(now)
        self._seen[client] = times
