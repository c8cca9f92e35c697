"""Security defaults: the session-cookie secret, where modules may be installed from, and JSON body limits.

Trust model: an admin token may change types, profiles and sessions, and install modules. A module is Python
code that runs inside the server, so installing one is as powerful as shell access; tda only installs from
folders the operator has designated (``TDA_MODULES_DIR`` and the roots in ``TDA_MODULE_ROOTS``), never from
anywhere an admin token can name. Viewer tokens read and stream; browser sessions are signed cookies.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
from pathlib import Path
from typing import Any

from .config import Settings
from .errors import Forbidden

SECRET_FILE = "secret_key"
WEAK_SECRETS = frozenset({"dev-only-change-me", "secret", "changeme", "change-me", "password", "tda", "test"})
MIN_SECRET_CHARS = 16


class InsecureSettings(Exception):
    """The settings would expose the service; the message says what to change."""


def session_secret(settings: Settings) -> str:
    """TDA_SECRET_KEY, or a random secret made on first start and kept in the data dir (owner-only, 0600)."""
    if settings.secret_key:
        return settings.secret_key
    path = settings.data_dir / SECRET_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # made by an earlier start, or by another worker a moment ago
        return _read_secret(path)
    with os.fdopen(fd, "w") as out:
        out.write(secrets.token_urlsafe(48))
    return _read_secret(path)


def _read_secret(path: Path) -> str:
    secret = path.read_text().strip()
    if len(secret) < MIN_SECRET_CHARS:
        raise InsecureSettings(f"{path} holds no usable secret; delete it (a new one is made) or set TDA_SECRET_KEY")
    return secret


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def is_weak(secret: str) -> bool:
    return secret.lower() in WEAK_SECRETS or len(secret) < MIN_SECRET_CHARS


def check_secret(settings: Settings, secret: str) -> None:
    """Anyone who knows the secret can forge a browser session: refuse a weak one where others can connect."""
    if is_weak(secret) and not is_loopback(settings.host):
        raise InsecureSettings(
            f"refusing to serve on {settings.host}: TDA_SECRET_KEY is a known or short (<{MIN_SECRET_CHARS} chars) "
            "secret, so browser sessions could be forged; set a long random one, or unset it to have one generated"
        )


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
