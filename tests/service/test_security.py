"""Security defaults: a generated cookie secret, refusal of weak secrets, module installs only from
designated folders, and bounded JSON bodies answered in the API's error format."""

from __future__ import annotations

import base64
import json
import os
import secrets
import stat
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from quart import Quart

from tda.app import create_app
from tda.auth import SESSION_KEY
from tda.config import Settings
from tda.security import InsecureSettings
from tests.service.support import ECHO, check_nul_is_refused_before_anything_is_written, write_module

QUIET = {"migrate": False, "warm_up_llm": False, "warm_up_knowledge": False}


def _serializer(secret: str) -> Any:
    signer = Quart(__name__)
    signer.secret_key = secret
    return signer.session_interface.get_signing_serializer(signer)


def _cookie(secret: str, content: dict[str, Any]) -> str:
    """A session cookie holding ``content`` signed with ``secret``, the way Quart signs its own."""
    return _serializer(secret).dumps({SESSION_KEY: content})


async def test_without_a_configured_secret_one_is_generated_and_kept_private(settings: Settings) -> None:
    assert settings.secret_key is None
    app = create_app(settings, **QUIET)
    path = settings.data_dir / "secret_key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert app.secret_key == path.read_text().strip() and len(app.secret_key) >= 32
    assert create_app(settings, **QUIET).secret_key == app.secret_key  # kept across restarts
    other = replace(settings, data_dir=settings.data_dir / "elsewhere")
    assert create_app(other, **QUIET).secret_key != app.secret_key  # random, not a fixed default


async def test_a_session_forged_with_the_old_development_secret_is_refused(test_app: Any, svc: Any) -> None:
    token, row = await svc.store.tokens.create("someone", "admin")
    r = await test_app.test_client().post("/v1/auth/session", json={"token": token})
    content = _serializer(test_app.app.secret_key).loads(r.headers["Set-Cookie"].split(";")[0].split("=", 1)[1])
    client = test_app.test_client()
    forged = _cookie("dev-only-change-me", content[SESSION_KEY])
    r = await client.get("/v1/auth/session", headers={"Cookie": f"tda_session={forged}"})
    assert r.status_code == 401
    genuine = _cookie(test_app.app.secret_key, content[SESSION_KEY])  # the control: the real secret
    r = await client.get("/v1/auth/session", headers={"Cookie": f"tda_session={genuine}"})
    assert r.status_code == 200 and (await r.get_json())["name"] == "someone"
    # A validly signed cookie is not enough by itself: it must name a session the server started.
    invented = _cookie(test_app.app.secret_key, {"id": "made-up", "csrf": "x"})
    assert (await client.get("/v1/auth/session", headers={"Cookie": f"tda_session={invented}"})).status_code == 401
    old_style = _cookie(test_app.app.secret_key, {"token_id": row.id, "csrf": "x"})  # before sessions were stored
    assert (await client.get("/v1/auth/session", headers={"Cookie": f"tda_session={old_style}"})).status_code == 401


WEAK = [
    "secret",
    "dev-only-change-me",
    "a-long-random-secret-for-this-host",  # 34 characters, about 204 bits even if every one were random
    secrets.token_hex(31),  # 248 bits
    secrets.token_urlsafe(32)[:40],  # 240 bits
    "a" * 200,  # long, not random
    "0123456789" * 10,
]
STRONG = [secrets.token_urlsafe(32), secrets.token_hex(32), base64.b64encode(os.urandom(32)).decode()]
"""secrets.token_urlsafe(32), openssl rand -hex 32, openssl rand -base64 32."""


@pytest.mark.parametrize("secret", WEAK, ids=range(len(WEAK)))  # stable ids: the random ones differ per process
def test_a_weak_secret_is_refused_whatever_the_bind_address(settings: Settings, secret: str) -> None:
    """A loopback port is open to every local user and to cross-site requests from the operator's browser."""
    for host in ("0.0.0.0", "10.1.2.3", "127.0.0.1", "localhost", "::1"):
        with pytest.raises(InsecureSettings, match="TDA_SECRET_KEY has under 32 bytes of entropy"):
            create_app(replace(settings, secret_key=secret, host=host), **QUIET)


@pytest.mark.parametrize("secret", STRONG, ids=["token_urlsafe", "hex", "base64"])
def test_a_random_32_byte_secret_is_accepted(settings: Settings, secret: str) -> None:
    assert create_app(replace(settings, secret_key=secret, host="0.0.0.0"), **QUIET).secret_key == secret
    create_app(replace(settings, host="0.0.0.0"), **QUIET)  # unset: generated, strong


def test_a_secret_file_others_can_read_is_refused(settings: Settings) -> None:
    path = settings.data_dir / "secret_key"
    create_app(settings, **QUIET)
    path.chmod(0o644)
    with pytest.raises(InsecureSettings, match="chmod 600"):
        create_app(settings, **QUIET)
    path.chmod(0o600)
    create_app(settings, **QUIET)
    path.write_text("secret\n")
    with pytest.raises(InsecureSettings, match="no strong secret"):
        create_app(settings, **QUIET)


async def test_modules_install_only_from_designated_folders(
    client: Any, admin: dict[str, str], settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> None:
    url = "/v1/context-window/modules"
    outside = write_module(tmp_path_factory.mktemp("outside"), "far_away", "Echo", ECHO)
    r = await client.post(f"{url}/install", json={"path": str(outside)}, headers=admin)
    assert r.status_code == 403
    body = await r.get_json()
    assert body["error"] == "forbidden" and "TDA_MODULE_ROOTS" in body["message"]
    assert not (settings.modules_dir / "far_away").exists()

    link = settings.data_dir / "sneaky"  # a symlink inside a root that points outside it
    link.symlink_to(outside)
    assert (await client.post(f"{url}/install", json={"path": str(link)}, headers=admin)).status_code == 403

    inside = write_module(settings.data_dir / "incoming", "near_by", "Echo", ECHO)  # data_dir is a root here
    r = await client.post(f"{url}/install", json={"path": str(inside)}, headers=admin)
    assert r.status_code == 201, await r.get_json()
    assert (settings.modules_dir / "near_by" / "manifest.json").is_file()


def _nested(levels: int) -> str:
    return '{"id": "deep", "name": ' + "[" * levels + "]" * levels + "}"


@pytest.mark.parametrize("levels", [100_000, 65])
async def test_deeply_nested_json_is_a_clear_400(client: Any, admin: dict[str, str], levels: int) -> None:
    for method, path in (("post", "/v1/context-window-types"), ("post", "/v1/profiles"), ("patch", "/v1/sessions/x")):
        r = await getattr(client, method)(
            path, data=_nested(levels), headers={**admin, "Content-Type": "application/json"}
        )
        assert r.status_code == 400, (path, await r.get_data())
        body = await r.get_json()
        assert body["error"] == "invalid_json" and "64 levels" in body["message"]


async def test_nesting_within_the_limit_reaches_validation(client: Any, admin: dict[str, str]) -> None:
    r = await client.post(
        "/v1/context-window-types", data=_nested(60), headers={**admin, "Content-Type": "application/json"}
    )
    assert r.status_code == 422  # parsed, then refused for what it says, not for its shape


async def test_malformed_json_says_where(client: Any, admin: dict[str, str]) -> None:
    for path in ("/v1/context-window-types", "/v1/profiles", "/v1/sessions"):
        r = await client.post(path, data='{"id": "x",}', headers={**admin, "Content-Type": "application/json"})
        assert r.status_code == 400
        body = await r.get_json()
        assert body["error"] == "invalid_json"
        assert "line 1, column 12" in body["message"] and "browser (or proxy)" not in body["message"]


async def test_a_body_over_the_size_limit_is_413(settings: Settings) -> None:
    app = create_app(replace(settings, max_body_bytes=10_000), **QUIET)
    async with app.test_app() as running:
        client = running.test_client()
        body = json.dumps({"messages": [{"role": "user", "content": "x" * 20_000, "turn": 1}]})
        r = await client.post("/v1/sessions/s/messages", data=body, headers={"Content-Type": "application/json"})
        assert r.status_code == 413
        reply = await r.get_json()
        assert reply["error"] == "body_too_large" and "10,000 bytes" in reply["message"]


def test_settings_read_module_roots_and_limits_from_the_environment(tmp_path: Path) -> None:
    s = Settings.from_env(
        {"TDA_MODULE_ROOTS": f"{tmp_path}/a:{tmp_path}/b", "TDA_MAX_BODY_BYTES": "2048", "TDA_MAX_JSON_DEPTH": "8"}
    )
    assert s.module_roots == (tmp_path / "a", tmp_path / "b")
    assert (s.max_body_bytes, s.max_json_depth, s.secret_key) == (2048, 8, None)


async def test_pages_carry_security_headers_and_a_policy_their_scripts_fit(client: Any, admin: dict[str, str]) -> None:
    """Whether the policy lets the pages work is checked in Chromium (tests/browser/test_pages.py); here: every
    response is marked, and the pages' scripts and styles are all files the policy allows (none inline)."""
    import hashlib
    import re

    r = await client.post("/v1/auth/session", json={"token": admin["Authorization"].removeprefix("Bearer ")})
    assert r.status_code in (200, 201)
    for path in ("/ui/sign-in", "/ui/types", "/ui/sessions", "/docs", "/v1/auth/session", "/healthz"):
        r = await client.get(path)
        assert r.status_code == 200, path
        assert r.headers["X-Frame-Options"] == "DENY" and r.headers["X-Content-Type-Options"] == "nosniff"
        assert r.headers["Referrer-Policy"] == "no-referrer"
        if r.mimetype != "text/html":
            continue
        page = await r.get_data(as_text=True)
        policy = dict(part.strip().split(" ", 1) for part in r.headers["Content-Security-Policy"].split(";"))
        assert policy["frame-ancestors"] == "'none'" and policy["object-src"] == "'none'"
        inline = re.findall(r"<script>(.*?)</script>", page, re.DOTALL)
        for script in inline:  # only /docs has one: allowed by its hash, nothing else inline
            digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
            assert f"'sha256-{digest}'" in policy["script-src"].split() and path == "/docs"
        assert "'unsafe-inline'" not in policy["script-src"] and "'unsafe-eval'" not in policy["script-src"]
        for src in re.findall(r"<(?:script|link)[^>]* (?:src|href)=\"([^\"]+)\"", page):
            assert src == "data:," or (src.startswith("/") and not src.startswith("//")), (path, src)  # 'self'
        assert path == "/docs" or " style=" not in page


async def test_rollback_refuses_an_empty_if_match(client: Any, admin: dict[str, str]) -> None:
    url = "/v1/context-window-types/knowledge_heavy"
    body = await (await client.get(url, headers=admin)).get_json()
    edit = {k: v for k, v in body.items() if k not in ("version", "updated_at", "etag")}
    r = await client.put(url, json={**edit, "name": "KH 2"}, headers={**admin, "If-Match": body["etag"]})
    assert r.status_code == 200
    r = await client.post(f"{url}/rollback", json={"version": 1}, headers={**admin, "If-Match": ""})
    assert r.status_code == 428 and "send If-Match" in (await r.get_json())["message"]
    assert (await (await client.get(url, headers=admin)).get_json())["name"] == "KH 2"  # nothing rolled back


async def test_a_413_closes_the_connection(settings: Settings) -> None:
    """The unread rest of the body would be taken for the next request on a kept-alive connection."""
    app = create_app(replace(settings, max_body_bytes=10_000), **QUIET)
    async with app.test_app() as running:
        r = await running.test_client().post("/v1/profiles", data="x" * 20_000, headers={"Content-Type": "text/plain"})
    assert r.status_code == 413 and r.headers["Connection"] == "close"


def test_a_new_data_dir_and_database_are_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tda.cli import main

    data = tmp_path / "new" / "data"
    monkeypatch.setenv("TDA_DATA_DIR", str(data))
    old = os.umask(0o022)  # the usual umask, which leaves new files readable by all
    try:
        assert main(["db", "upgrade"]) == 0
        create_app(Settings(data_dir=data / "other"), **QUIET)
    finally:
        os.umask(old)
    assert stat.S_IMODE(data.stat().st_mode) == 0o700 and stat.S_IMODE((data / "tda.db").stat().st_mode) == 0o600
    assert stat.S_IMODE((data / "other").stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) & 0o077 == 0 for p in data.glob("tda.db*"))


async def test_nul_characters_are_refused_with_the_field_before_anything_is_written(client, admin) -> None:
    await check_nul_is_refused_before_anything_is_written(client, admin)
