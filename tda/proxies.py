"""Which reverse proxies are believed (``TDA_TRUSTED_PROXIES``), and what they say about the client.

Pure: parsed into the settings at start-up (so ``config.py`` needs no web framework), applied per request by
``clients.py``.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

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
