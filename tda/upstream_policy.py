"""Where a model call may go, and with which key: the operator decides, never a caller.

A profile's upstream (``ProfileRow.upstream``) names a base URL and the environment variable holding its key. Left
open, an admin of any team could name ``TDA_SECRET_KEY`` (or a cloud credential) as the "key" and a host of their own
as the base URL, and one chat would deliver the secret there; or point the call at an internal address (a cloud
metadata service, a Redis port). So:

* a key variable must be one the operator lists (``TDA_UPSTREAM_KEY_ENVS``; default: the providers' standard names)
  and is never a ``TDA_*`` variable (tda's own settings and secrets);
* a base URL's host must match ``TDA_UPSTREAM_HOSTS`` when the operator sets it, and link-local or cloud-metadata
  addresses are refused unless listed there, checked on the name as written and on every address it resolves to.

The operator's own default upstream (``TDA_UPSTREAM_BASE_URL``, ``TDA_UPSTREAM_API_KEY_ENV``) is trusted as set.
Profiles are checked when written (a 422 naming the field) and again at every call (a profile stored before the
operator narrowed the lists, or a name that now resolves elsewhere, is refused before anything is sent).
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
from dataclasses import dataclass
from fnmatch import fnmatchcase
from urllib.parse import urlsplit

STANDARD_KEY_ENVS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "AZURE_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "COHERE_API_KEY",
    "GROQ_API_KEY",
    "TOGETHERAI_API_KEY",
    "TOGETHER_API_KEY",
    "OPENROUTER_API_KEY",
    "DEEPSEEK_API_KEY",
    "FIREWORKS_AI_API_KEY",
    "XAI_API_KEY",
    "PERPLEXITYAI_API_KEY",
    "CEREBRAS_API_KEY",
    "DEEPINFRA_API_KEY",
    "HUGGINGFACE_API_KEY",
    "NVIDIA_NIM_API_KEY",
)
"""The key variables a profile may name when the operator lists none: each provider's own, as litellm reads them."""

RESERVED_PREFIX = "TDA_"
"""tda's own settings (the cookie secret, the database URL): never a key a profile may send anywhere."""

METADATA_HOSTS = frozenset({"metadata", "metadata.google.internal", "metadata.goog", "instance-data"})
"""Cloud metadata services reached by name (their addresses are link-local, refused below)."""

RESOLVED_KEPT_S = 60.0
"""How long a host's resolved addresses are trusted before they are looked up again."""


class UpstreamRefused(ValueError):
    """An upstream the operator's policy does not allow; ``field`` is ``api_key_env`` or ``base_url``."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class UpstreamPolicy:
    key_envs: frozenset[str] = frozenset(STANDARD_KEY_ENVS)
    """The key variables a profile may name."""
    hosts: tuple[str, ...] = ()
    """Host patterns a base URL must match (``api.openai.com``, ``*.openai.azure.com``, ``10.0.0.7:8000``);
    empty: any host but link-local and metadata ones."""

    def check_key_env(self, name: str) -> None:
        if name.upper().startswith(RESERVED_PREFIX):
            raise UpstreamRefused(
                "api_key_env", f"{name} is one of tda's own settings, never a model key; name the provider's variable"
            )
        if name not in self.key_envs:
            allowed = ", ".join(sorted(self.key_envs))
            raise UpstreamRefused(
                "api_key_env",
                f"{name} is not a key variable the operator allows (TDA_UPSTREAM_KEY_ENVS); use one of: {allowed}",
            )

    def check_base_url(self, url: str) -> None:
        """The URL as written: its host is listed (when the operator lists hosts) and is no metadata address."""
        host, port = _host_port(url)
        if self.hosts:
            if not self._listed(host, port):
                raise UpstreamRefused(
                    "base_url",
                    f"{host} is not a host the operator allows (TDA_UPSTREAM_HOSTS: {', '.join(self.hosts)})",
                )
            return
        if host.lower().rstrip(".") in METADATA_HOSTS or _link_local(host):
            raise UpstreamRefused("base_url", f"{host} is a link-local or cloud-metadata address; models are not there")

    async def check_resolved(self, url: str) -> None:
        """Every address the URL's host resolves to: a name may point at a metadata address."""
        host, port = _host_port(url)
        if self._listed(host, port):
            return
        for address in await _resolved(host, port):
            if _link_local(address):
                raise UpstreamRefused("base_url", f"{host} resolves to a link-local address ({address}); refused")

    def _listed(self, host: str, port: int | None) -> bool:
        host = host.lower()
        names = (host, f"{host}:{port}") if port is not None else (host,)
        return any(fnmatchcase(name, pattern.lower()) for pattern in self.hosts for name in names)


def _host_port(url: str) -> tuple[str, int | None]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UpstreamRefused(
            "base_url", "the base URL must be an http(s) URL with a host, e.g. http://127.0.0.1:8000/v1"
        )
    try:
        port = parts.port
    except ValueError:
        raise UpstreamRefused("base_url", "the base URL's port is not a number from 0 to 65535") from None
    return parts.hostname, port


def _link_local(host: str) -> bool:
    try:
        address = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return False  # a name: its addresses are checked when it is resolved
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_link_local or str(address) == "fd00:ec2::254"  # AWS's IPv6 metadata address


_resolved_at: dict[tuple[str, int | None], tuple[float, tuple[str, ...]]] = {}


async def _resolved(host: str, port: int | None) -> tuple[str, ...]:
    """The host's addresses (cached for ``RESOLVED_KEPT_S``); a name that does not resolve has none, and the call
    itself then fails as it would have."""
    key = (host, port)
    now = time.monotonic()
    if (kept := _resolved_at.get(key)) is not None and now - kept[0] < RESOLVED_KEPT_S:
        return kept[1]
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port or 443)
    except OSError:
        infos = []
    addresses = tuple(dict.fromkeys(str(info[4][0]) for info in infos))
    if len(_resolved_at) >= 256:  # a few hosts in practice; never a leak
        _resolved_at.clear()
    _resolved_at[key] = (now, addresses)
    return addresses
