"""Security defaults: the session-cookie secret, where modules may be installed from, and JSON body limits.

Trust model: an admin token may change types, profiles and sessions, and install modules. A module is Python
code that runs inside the server, so installing one is as powerful as shell access; tda only installs from
folders the operator has designated (``TDA_MODULES_DIR`` and the roots in ``TDA_MODULE_ROOTS``), never from
anywhere an admin token can name. Viewer tokens read and stream; browser sessions are signed cookies naming a
session kept in the database (tda/auth.py), so signing out ends them.
"""

from __future__ import annotations

import base64
import bisect
import hashlib
import json
import math
import os
import re
import secrets
import stat
import string
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

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


def json_depth_exceeds(
    value: Any, limit: int, checked: frozenset[int] = frozenset(), leading: Mapping[int, int] | None = None
) -> bool:
    """True when arrays/objects nest deeper than ``limit`` (level by level, iterative: a deep body cannot exhaust
    the stack). Only arrays and objects are carried to the next level: a chat's texts are most of its values.
    ``checked``: the ids of values found within the limit at the same depth before (``ParsedBody.reused``), and
    ``leading``: how many leading items of a list (by its id) were, not walked again."""
    leading = leading or {}
    level = [value] if isinstance(value, dict | list) else []
    depth = 1
    while level:
        if depth > limit:
            return True
        below: list[Any] = []
        for item in level:
            below += [
                child
                for child in (item.values() if isinstance(item, dict) else item[leading.get(id(item), 0) :])
                if isinstance(child, dict | list) and id(child) not in checked
            ]
        level, depth = below, depth + 1
    return False


UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
"""What no text field may hold: NUL (PostgreSQL cannot store it) and surrogates left unpaired (JSON may escape one,
``"\\ud800"``, but it is no character: UTF-8 cannot encode it, so a driver or a provider fails on it). A paired
escape (``"\\ud83d\\ude00"``) is decoded to its character and never reaches this."""


def unstorable(text: str) -> str | None:
    """Why ``text`` cannot be stored (``NUL`` or ``surrogate``), or None."""
    found = UNSTORABLE.search(text)
    if found is None:
        return None
    return "NUL" if found.group() == "\x00" else "surrogate"


def first_unstorable(value: Any) -> tuple[str, str] | None:
    """The dotted location of the first string (or object key) in a JSON value that cannot be stored, with why
    (``unstorable``), or None; ``body`` for the whole. Iterative, as json_depth_exceeds."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(value, ())]
    while stack:
        item, loc = stack.pop()
        if isinstance(item, str):
            if why := unstorable(item):
                return ".".join(loc) or "body", why
        elif isinstance(item, dict):
            for key, child in item.items():
                if why := unstorable(key):
                    return ".".join((*loc, repr(escaped(key)))), why
                stack.append((child, (*loc, key)))
        elif isinstance(item, list):
            stack.extend((child, (*loc, str(i))) for i, child in enumerate(item))
    return None


def escaped(text: str) -> str:
    """``text`` with each character ``UNSTORABLE`` finds as JSON escapes it: a location names it, not carries it."""
    return UNSTORABLE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


_WHITESPACE = re.compile(r"[ \t\n\r]*")
_ESCAPED_UNSTORABLE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")
"""How a NUL or a surrogate can appear in JSON text: escaped (raw, NUL is a control character JSON refuses, and a
surrogate is not UTF-8). A text without such an escape holds neither, so the walk of its values is skipped."""
SLICED_LEVELS = 2
"""How deep the parse goes member by member: the body's fields and the items of its lists (a chat's messages).
Below, each item is parsed whole by json's C scanner, which holds the GIL for as long as it runs."""


def loads_in_slices(text: str) -> Any:
    """``json.loads(text)``, but the body object's members and its lists' items each parsed by one short call of
    json's C scanner instead of one call for all: run in a worker thread, it lets the event loop's thread take the
    GIL back between any two (a 100,000-message body would otherwise hold it ~150 ms in one call). The same
    values, and the same JSONDecodeError (message, line and column) for a text that is not JSON."""
    return loads_reusing(text)[0]


class ParsedBody:
    """A body as ``loads_reusing`` parsed it: its text, and the arrays and objects its slices parsed whole (a chat's
    messages) by where each began, with where it ended. A chat client sends its whole conversation again on every
    call, a few messages longer: the next body's items that lie within the text both begin with are these values,
    not parsed again (at turn 100 of an agent session, ~1 MB: ~3 ms of each call), and a list's leading items are
    taken as one slice, not item by item (``lists``). The values are shared by the bodies that sent them: a handler
    of such bodies must not change them in place."""

    __slots__ = ("items", "lists", "reused", "text")

    def __init__(
        self,
        text: str,
        items: dict[int, tuple[Any, int]],
        lists: dict[int, tuple[list[Any], list[int]]],
        reused: Reused,
    ) -> None:
        self.text, self.items, self.lists = text, items, lists
        """``items``: the objects and arrays of an object's members parsed whole, by where each began, with where it
        ended; ``lists``: each list whose items were parsed whole (a chat's messages), by where it began, with where
        each item ended."""
        self.reused = reused


class Reused(NamedTuple):
    """What a parse took from the body it went on from (``loads_reusing``): values that passed its checks then."""

    spans: list[tuple[int, int]]
    """Where each value taken, or each run of a list's items, began and ended in the text, in order."""
    values: list[Any]
    """The objects and arrays taken whole (an object's members)."""
    leading: dict[int, int]
    """How many leading items each list took as a run, by the list's id."""


class _Reusing:
    """One parse's reuse of the body it goes on from (``loads_reusing``): what it lends, and what it keeps for the
    next."""

    def __init__(self, text: str, prior: ParsedBody | None) -> None:
        self.same = common_prefix(text, prior.text) if prior is not None else 0
        self.prior = prior
        self.items: dict[int, tuple[Any, int]] = {}
        self.lists: dict[int, tuple[list[Any], list[int]]] = {}
        self.reused = Reused([], [], {})
        self.scanner = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # the C scanner; typeshed omits it

    def scan(self, text: str, at: int) -> tuple[Any, int]:
        """The value that begins at ``at``: the prior body's when it lies within the shared beginning."""
        found = self.prior.items.get(at) if self.prior is not None else None
        if found is not None and found[1] <= self.same:
            self.reused.spans.append((at, found[1]))
            self.reused.values.append(found[0])
        else:
            found = self.scanner(text, at)
        if isinstance(found[0], dict | list):
            self.items[at] = found
        return found

    def lend(self, at: int) -> tuple[list[Any], list[int]]:
        """The leading items of the list that began at ``at`` in the prior body that lie within the shared
        beginning (a copy of the list's slice), and where each ended: one bisection and one slice, however many."""
        found = self.prior.lists.get(at) if self.prior is not None else None
        if found is None:
            return [], []
        values, ends = found
        n = bisect.bisect_right(ends, self.same)
        run = values[:n]
        if n:
            self.reused.spans.append((at, ends[n - 1]))
            self.reused.leading[id(run)] = n  # the run goes on as the list's own
        return run, ends[:n]


def loads_reusing(text: str, prior: ParsedBody | None = None) -> tuple[Any, ParsedBody]:
    """``loads_in_slices(text)`` with the items that lie within the beginning ``text`` shares with ``prior``'s text
    taken from ``prior`` (the same characters, from the same place, parse to the same value), and the body as
    parsed."""
    reusing = _Reusing(text, prior)
    value, end = _sliced(text, _skip(text, 0), reusing, 0)
    end = _skip(text, end)
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value, ParsedBody(text, reusing.items, reusing.lists, reusing.reused)


PREFIX_STEP = 64 * 1024
"""``common_prefix`` compares texts this many characters at a time (each comparison copies its slices)."""


def common_prefix(a: str, b: str) -> int:
    """How many first characters ``a`` and ``b`` share: compared a step (``PREFIX_STEP``) at a time, then by halves
    within the step that differs (C comparisons of slices: ~0.1 ms a megabyte)."""
    n, most = 0, min(len(a), len(b))
    while n < most and a[n : n + PREFIX_STEP] == b[n : n + PREFIX_STEP]:
        n += PREFIX_STEP
    if n >= most:
        return most
    low, high = n, min(n + PREFIX_STEP, most)  # a[:low] == b[:low], and they differ before high
    while high - low > 1:
        middle = (low + high) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle
    return low + (a[low] == b[low])


def _skip(text: str, at: int) -> int:
    found = _WHITESPACE.match(text, at)
    return found.end() if found else at


def _sliced(text: str, at: int, reusing: _Reusing, level: int) -> tuple[Any, int]:
    opener = text[at : at + 1]
    if level >= SLICED_LEVELS or opener not in ("{", "["):
        try:
            return reusing.scan(text, at)
        except StopIteration as stop:
            raise json.JSONDecodeError("Expecting value", text, stop.value) from None
    closer = "}" if opener == "{" else "]"
    whole = opener == "[" and level + 1 >= SLICED_LEVELS  # its items parsed whole: kept, and lent to the next
    start = at
    out: Any
    out, ends = reusing.lend(at) if whole else ({} if opener == "{" else [], [])
    lent = bool(ends)  # then the first step goes from the last item lent to the separator after it
    at = _skip(text, ends[-1] if lent else at + 1)
    if not lent and text.startswith(closer, at):
        return out, at + 1
    while True:
        if lent:
            lent = False
        elif opener == "{":
            if not text.startswith('"', at):
                raise json.JSONDecodeError("Expecting property name enclosed in double quotes", text, at)
            key, at = json.decoder.scanstring(text, at + 1)  # type: ignore[attr-defined]  # as json's own
            at = _skip(text, at)
            if not text.startswith(":", at):
                raise json.JSONDecodeError("Expecting ':' delimiter", text, at)
            out[key], at = _sliced(text, _skip(text, at + 1), reusing, level + 1)
        else:
            item, at = _sliced(text, at, reusing, level + 1)
            out.append(item)
            ends.append(at)
        at = _skip(text, at)
        if text.startswith(closer, at):
            if whole:
                reusing.lists[start] = (out, ends)
            return out, at + 1
        if not text.startswith(",", at):
            raise json.JSONDecodeError("Expecting ',' delimiter", text, at)
        at = _skip(text, at + 1)


class NestedTooDeep(Exception):
    """A JSON body nests arrays/objects deeper than the limit."""


def checked_json(
    text: str, max_depth: int, prior: ParsedBody | None = None
) -> tuple[Any, tuple[str, str] | None, ParsedBody]:
    """A body's JSON value (ValueError when it is not JSON; NestedTooDeep past ``max_depth``), with where and why
    the first text that cannot be stored is (``first_unstorable``), or None, and the body as parsed (``ParsedBody``:
    kept, it spares the next body that begins the same way parsing and checking that beginning again). ``prior``:
    such a body, one that passed these checks. Blocking: big ones in a worker thread."""
    try:
        data, parsed = loads_reusing(text, prior)
    except RecursionError:  # the C scanner's own limit, met before ours
        raise NestedTooDeep from None
    reused = parsed.reused
    if json_depth_exceeds(data, max_depth, frozenset(map(id, reused.values)), reused.leading):
        raise NestedTooDeep
    return data, first_unstorable(data) if _escaped_outside(text, reused.spans) else None, parsed


def _escaped_outside(text: str, spans: Sequence[tuple[int, int]]) -> bool:
    """Whether ``text`` escapes a NUL or a surrogate outside the ``spans`` (start, end; in order) of values taken
    from an earlier body: they passed there, and a text's escapes are all within the value that holds it."""
    at = 0
    for start, end in spans:
        if _ESCAPED_UNSTORABLE.search(text, at, start):
            return True
        at = end
    return _ESCAPED_UNSTORABLE.search(text, at) is not None
