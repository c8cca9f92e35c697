"""Who the client is behind a reverse proxy, and a limit on its failed sign-ins.

``X-Forwarded-For``/``X-Forwarded-Proto`` are believed only from a trusted proxy (``TDA_TRUSTED_PROXIES``): a list
of addresses or CIDRs (``127.0.0.1,10.0.0.0/8``), or a count of proxies in front (``1``: the nearest one adds the
last entry). Without it they are ignored: anyone could send them. The client address this resolves is the key of
the failed-auth limit; the scheme decides whether the session cookie gets ``Secure``.
"""

from __future__ import annotations

import ipaddress
import math
import time
from collections import deque
from dataclasses import dataclass

from .errors import TooManyRequests

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class TrustedProxies:
    networks: tuple[Network, ...] = ()
    hops: int = 0
    """With a count: how many proxies stand in front (their entries are the last ``hops`` of the header)."""

    @classmethod
    def parse(cls, value: str) -> TrustedProxies:
        value = value.strip()
        if value.isdigit():
            return cls(hops=int(value))
        try:
            return cls(networks=tuple(ipaddress.ip_network(p.strip(), strict=False) for p in value.split(",") if p))
        except ValueError as exc:
            raise ValueError(
                f"TDA_TRUSTED_PROXIES={value!r} is not a count or a list of addresses/CIDRs ({exc}); "
                "e.g. TDA_TRUSTED_PROXIES=1 or TDA_TRUSTED_PROXIES=127.0.0.1,10.0.0.0/8"
            ) from None

    def trusts(self, address: str) -> bool:
        if self.hops:
            return True  # a count: the peer is the nearest proxy
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in net for net in self.networks)

    def client(self, peer: str, forwarded_for: str) -> str:
        """The client's address: the peer, or the nearest address in ``X-Forwarded-For`` no trusted proxy added."""
        if not forwarded_for or not self.trusts(peer):
            return peer
        chain = [a.strip() for a in forwarded_for.split(",") if a.strip()]
        if self.hops:
            return chain[-self.hops] if len(chain) >= self.hops else (chain[0] if chain else peer)
        for address in reversed(chain):
            if not self.trusts(address):
                return address
        return chain[0] if chain else peer

    def scheme(self, peer: str, own: str, forwarded_proto: str) -> str:
        """``https`` or ``http``: the connection's own, or what the trusted proxy in front says it received."""
        if not forwarded_proto or not self.trusts(peer):
            return own
        chain = [p.strip().lower() for p in forwarded_proto.split(",") if p.strip()]
        if not chain:
            return own
        return chain[-self.hops] if self.hops and len(chain) >= self.hops else chain[0 if self.hops else -1]


NO_PROXIES = TrustedProxies()


def _proxies() -> TrustedProxies:
    from .service import service

    return service().settings.trusted_proxies or NO_PROXIES


def client_address() -> str:
    from quart import request  # here, not at import: the settings (tda.config) import this module without a web app

    return _proxies().client(request.remote_addr or "", request.headers.get("X-Forwarded-For", ""))


def request_is_https() -> bool:
    from quart import has_request_context, request

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
