"""Secrets out of anything shown: URLs in readiness output, log lines, error messages and CLI output lose their
credentials. A database, Redis or Chroma URL often carries a password (``user:password@``) or a token in its query
(``?api_key=...``); /readyz needs no login, and logs go wherever the operator ships them."""

from __future__ import annotations

import re

HIDDEN = "***"
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]*[^\s'\"<>).,;\]]")
"""A URL in prose: up to a space or a quote, and not the punctuation that closes the sentence around it."""
_USERINFO = re.compile(r"^([^:]+://)[^\s'\"<>]*@")
"""Everything up to the last ``@``: an unencoded ``@`` or ``/`` in a password must not leave part of it shown."""
_SECRET_QUERY = re.compile(
    r"([?&;][^=&#;]*(?:token|key|secret|pass|pwd|auth|sig|credential|session)[^=&#;]*=)[^&#;]*", re.IGNORECASE
)


def redact_url(url: str) -> str:
    """``url`` with its user information and the values of secret-looking query parameters replaced by ***."""
    url = _USERINFO.sub(rf"\1{HIDDEN}@", url)
    return _SECRET_QUERY.sub(rf"\1{HIDDEN}", url)


def redact_urls(text: str) -> str:
    """``text`` with every URL in it redacted (error messages quote the URL they failed on)."""
    return _URL.sub(lambda match: redact_url(match.group(0)), text)


_KEY_LIKE = re.compile(r"\b(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{24,}\b")
"""A run of 24+ letters and digits (mixed): an API key, a token, a signature."""


def redact_secrets(text: str) -> str:
    """``text`` with URLs' credentials and anything shaped like a key or token replaced by ***."""
    return _KEY_LIKE.sub(HIDDEN, redact_urls(text))
