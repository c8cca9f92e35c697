"""Security defaults: the session-cookie secret, where modules may be installed from, and JSON body limits.

Trust model: an admin token may change types, profiles and sessions, and install modules. A module is Python
code that runs inside the server, so installing one is as powerful as shell access; tda only installs from
folders the operator has designated (``TDA_MODULES_DIR`` and the roots in ``TDA_MODULE_ROOTS``), never from
anywhere an admin token can name. Viewer tokens read and stream; browser sessions are signed cookies naming a
session kept in the database (tda/auth.py), so signing out ends them.
"""

from __future__ import annotations

import base64
import hashlib
import math
import os
import re
import secrets
import stat
import string
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import Settings
from .errors import Forbidden

if TYPE_CHECKING:  # `tda serve` checks the secret before the web framework loads
    from quart import Quart, Response

SECRET_FILE = "secret_key"
WEAK_SECRETS = frozenset({"dev-only-change-me", "secret", "changeme", "change-me", "password", "tda", "test"})
MIN_SECRET_BITS = 256
"""32 bytes of entropy: ``secrets.token_urlsafe(32)`` (43 chars), ``openssl rand -hex 32`` (64) or ``-base64 32``."""
_BASE64 = string.ascii_letters + string.digits
ALPHABETS = (
    (string.digits, 10),
    (string.digits + "abcdef", 16),
    (string.digits + "ABCDEF", 16),
    (_BASE64 + "+/", 64),
    (_BASE64 + "-_", 64),  # base64url (secrets.token_urlsafe)
    (string.printable.strip(), 94),
)
"""Estimating entropy: a key is counted as drawn at random from the smallest of these that holds all of it."""


class InsecureSettings(Exception):
    """The settings would expose the service; the message says what to change."""


def session_secret(settings: Settings) -> str:
    """TDA_SECRET_KEY, or a random secret made on first start and kept in the data dir (owner-only, 0600)."""
    if settings.secret_key:
        return settings.secret_key
    path = settings.data_dir / SECRET_FILE
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # the data dir: owner only, when tda makes it
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # made by an earlier start, or by another worker a moment ago
        return _read_secret(path)
    with os.fdopen(fd, "w") as out:
        out.write(secrets.token_urlsafe(48))
    return _read_secret(path)


def _read_secret(path: Path) -> str:
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        raise InsecureSettings(
            f"{path} can be read by other users, who could sign in as anyone with it; "
            f"`chmod 600 {path}`, or delete it so a new one is made"
        )
    secret = path.read_text().strip()
    if is_weak(secret):
        raise InsecureSettings(f"{path} holds no strong secret; delete it (a new one is made) or set TDA_SECRET_KEY")
    return secret


def entropy_bits(secret: str) -> float:
    """An upper bound of the key's entropy, so a floor on it refuses every key that cannot be strong: its length
    times the bits of a character drawn at random from the smallest alphabet holding all of it ('=' padding
    aside), and no more than its size compressed (a repeated pattern, ``abcabc...``, is not random however long)."""
    key = secret.rstrip("=")
    size = next((size for chars, size in ALPHABETS if set(key) <= set(chars)), 256)
    compressed = len(zlib.compress(key.encode(), 9)) - len(zlib.compress(b"", 9))
    return min(len(key) * math.log2(size), 8.0 * compressed)


def is_weak(secret: str) -> bool:
    return secret.lower() in WEAK_SECRETS or entropy_bits(secret) < MIN_SECRET_BITS


def check_secret(settings: Settings, secret: str) -> None:
    """Anyone who knows the secret can sign an admin's browser session: a guessable one is refused wherever the
    service listens (a loopback port is open to every local user and to a browser's cross-site requests)."""
    if is_weak(secret):
        raise InsecureSettings(
            f"TDA_SECRET_KEY has under {MIN_SECRET_BITS // 8} bytes of entropy (a known word, too short, or not "
            "random), so browser sessions could be forged; set a random one, e.g. "
            "`python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`, or unset it to have one generated"
        )


UI_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
"""The UI's pages load only their own scripts and styles (no inline code: an injected <script> does not run)."""
DOCS_PATH = "/docs"
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)


def docs_csp(page: str) -> str:
    """The API docs page (quart-schema's Swagger UI) starts itself with one inline script of a fixed text: that
    script alone is allowed, by its hash; Swagger UI sets inline styles."""
    digests = (base64.b64encode(hashlib.sha256(script.encode()).digest()) for script in _INLINE_SCRIPT.findall(page))
    hashes = " ".join(f"'sha256-{digest.decode()}'" for digest in digests)
    return UI_CSP.replace("script-src 'self'", f"script-src 'self' {hashes}").replace(
        "style-src 'self'", "style-src 'self' 'unsafe-inline'"
    )


def install_security_headers(app: Quart) -> None:
    """Every response: no MIME sniffing, no framing (clickjacking), no Referer to other sites; every HTML page:
    a Content-Security-Policy."""
    from quart import request

    @app.after_request
    async def security_headers(response: Response) -> Response:
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        if response.mimetype == "text/html":
            page = request.path == DOCS_PATH and await response.get_data(as_text=True)
            response.headers.setdefault("Content-Security-Policy", docs_csp(page) if page else UI_CSP)
        return response


def install_roots(settings: Settings) -> list[Path]:
    return [settings.modules_dir, *settings.module_roots]


def check_install_source(path: Path, settings: Settings) -> Path:
    """The folder, resolved (symlinks followed), if it lies under an install root; 403 with the reason if not."""
    resolved = path.resolve()
    roots = install_roots(settings)
    if not any(resolved.is_relative_to(root.resolve()) for root in roots):
        raise Forbidden(
            f"{path} is outside the folders modules may be installed from "
            f"({', '.join(str(r) for r in roots)}); move it under one of them or add its parent to TDA_MODULE_ROOTS",
            errors=[{"loc": "path", "msg": "not under TDA_MODULES_DIR or TDA_MODULE_ROOTS", "type": "forbidden"}],
        )
    return resolved


def json_depth_exceeds(value: Any, limit: int) -> bool:
    """True when arrays/objects nest deeper than ``limit`` (iterative: a deep body cannot exhaust the stack)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def first_nul(value: Any) -> str | None:
    """The dotted location of the first string (or object key) in a JSON value holding a NUL character, or None;
    ``body`` for the whole. Iterative, as json_depth_exceeds."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(value, ())]
    while stack:
        item, loc = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return ".".join(loc) or "body"
        elif isinstance(item, dict):
            for key, child in item.items():
                if "\x00" in key:
                    return ".".join((*loc, repr(key.replace("\x00", "\\u0000"))))
                stack.append((child, (*loc, key)))
        elif isinstance(item, list):
            stack.extend((child, (*loc, str(i))) for i, child in enumerate(item))
    return None
