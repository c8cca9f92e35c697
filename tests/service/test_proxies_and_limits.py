"""Behind a reverse proxy: the session cookie gets Secure over https, forwarded headers are believed only from a
trusted proxy, failed sign-ins are limited per client (429 with Retry-After), and a database that cannot be
reached gives 503 with Retry-After, not 500."""

from __future__ import annotations

from dataclasses import replace
from http.cookies import SimpleCookie
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import async_sessionmaker

from tda.app import create_app
from tda.config import Settings
from tda.db import create_engine
from tda.inline_sqlite import LoopReader, LoopWriter
from tda.proxies import TrustedProxies

QUIET = {"migrate": False, "warm_up_llm": False, "warm_up_knowledge": False}
PROXY, CLIENT, OTHER = ("10.0.0.2", 40000), "203.0.113.7", "198.51.100.9"


async def _token(app: Any) -> str:
    return (await app.extensions["tda"].store.tokens.create("admin", "admin"))[0]


def _cookie_attributes(response: Any) -> dict[str, Any]:
    jar = SimpleCookie(response.headers["Set-Cookie"])
    return dict(jar["tda_session"].items())


async def _sign_in(client: Any, token: str, peer: tuple[str, int], **headers: str) -> Any:
    return await client.post("/v1/auth/session", json={"token": token}, headers=headers, scope_base={"client": peer})


async def test_the_cookie_is_secure_only_when_https_is_told_by_a_trusted_proxy(settings: Settings) -> None:
    app = create_app(replace(settings, trusted_proxies=TrustedProxies.parse("10.0.0.0/8")), **QUIET)
    async with app.test_app() as running:
        client, token = running.test_client(), await _token(app)
        behind = await _sign_in(client, token, PROXY, **{"X-Forwarded-Proto": "https"})
        assert behind.status_code == 200 and _cookie_attributes(behind)["secure"] is True
        plain = await _sign_in(client, token, PROXY)
        assert not _cookie_attributes(plain)["secure"]
        forged = await _sign_in(client, token, ("192.0.2.1", 5000), **{"X-Forwarded-Proto": "https"})
        assert not _cookie_attributes(forged)["secure"]  # not from a trusted proxy: the header is not believed
        tls = await client.post("/v1/auth/session", json={"token": token}, scheme="https")
        assert _cookie_attributes(tls)["secure"] is True  # its own TLS needs no proxy


def test_the_client_address_is_the_nearest_one_no_trusted_proxy_added() -> None:
    cidrs = TrustedProxies.parse("10.0.0.0/8, 127.0.0.1")
    assert cidrs.client("10.0.0.2", f"{OTHER}, {CLIENT}, 10.0.0.9") == CLIENT  # the left part may be forged
    assert cidrs.client("192.0.2.1", CLIENT) == "192.0.2.1"  # untrusted peer: header ignored
    hops = TrustedProxies.parse("1")
    assert hops.client("10.0.0.2", f"{OTHER}, {CLIENT}") == CLIENT
    assert hops.scheme("10.0.0.2", "http", "https") == "https"
    assert TrustedProxies().client("10.0.0.2", CLIENT) == "10.0.0.2"  # unset: never believed
    with pytest.raises(ValueError, match="TDA_TRUSTED_PROXIES"):
        TrustedProxies.parse("ten.0.0.0/8")
    assert Settings.from_env({"TDA_TRUSTED_PROXIES": "1"}).trusted_proxies == hops


async def test_failed_auth_is_limited_per_client_with_retry_after(settings: Settings) -> None:
    limited = replace(settings, trusted_proxies=TrustedProxies.parse("10.0.0.0/8"), auth_failures_per_minute=5)
    app = create_app(limited, **QUIET)
    async with app.test_app() as running:
        client = running.test_client()
        wrong = {"Authorization": "Bearer tda_wrong", "X-Forwarded-For": CLIENT}
        statuses = [
            (await client.get("/v1/profiles", headers=wrong, scope_base={"client": PROXY})).status_code
            for _ in range(7)
        ]
        assert statuses == [401] * 5 + [429] * 2
        r = await _sign_in(client, "tda_also_wrong", PROXY, **{"X-Forwarded-For": CLIENT})
        assert r.status_code == 429 and 1 <= int(r.headers["Retry-After"]) <= 60
        assert "wait" in (await r.get_json())["message"]
        other = await _sign_in(client, "tda_wrong", PROXY, **{"X-Forwarded-For": OTHER})
        assert other.status_code == 401  # another client behind the same proxy has its own count


async def test_failed_auth_never_locks_out_a_valid_token(settings: Settings) -> None:
    """20 wrong tokens from one address (the default limit), then the admin's valid token from that address still
    works, by bearer and by sign-in; wrong tokens from it are still 429."""
    app = create_app(settings, **QUIET)
    async with app.test_app() as running:
        client, token = running.test_client(), await _token(app)
        peer = {"client": (CLIENT, 5000)}
        wrong = {"Authorization": "Bearer tda_wrong"}
        statuses = [(await client.get("/v1/profiles", headers=wrong, scope_base=peer)).status_code for _ in range(20)]
        assert statuses == [401] * 20
        right = {"Authorization": f"Bearer {token}"}
        assert (await client.get("/v1/profiles", headers=right, scope_base=peer)).status_code == 200
        assert (await _sign_in(client, token, (CLIENT, 5000))).status_code == 200
        for guess in ("tda_wrong", "tda_other"):
            r = await client.get("/v1/profiles", headers={"Authorization": f"Bearer {guess}"}, scope_base=peer)
            assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1
        assert (await _sign_in(client, "tda_wrong", (CLIENT, 5000))).status_code == 429


async def test_an_unreachable_database_is_503_with_retry_after_and_recovers(test_app: Any, admin: Any) -> None:
    client, db = test_app.test_client(), test_app.app.extensions["tda"].store.db
    assert (await client.get("/v1/profiles", headers=admin)).status_code == 200
    engine, sessions, reader, writer = db.engine, db.sessions, db.reader, db.single_writes
    db.engine = create_engine("postgresql+asyncpg://tda:tda@127.0.0.1:9/tda")  # nothing listens on port 9
    db.sessions = async_sessionmaker(db.engine, expire_on_commit=False)
    gone = "/nonexistent/tda.db"  # and the loop's own SQLite connections (a session's creation) cannot open theirs
    db.reader, db.single_writes = LoopReader(gone, engine.dialect), LoopWriter(gone, engine.dialect)
    try:
        for method, path in (("GET", "/v1/profiles"), ("POST", "/v1/sessions"), ("GET", "/v1/sessions/x/turns")):
            r = await client.open(path, method=method, headers=admin, json={"id": "x", "profile_id": "p"})
            body = await r.get_json()
            assert r.status_code == 503, (path, body)
            assert (
                r.headers["Retry-After"] == "5" and "database" in body["message"] and "unreachable" in body["message"]
            )
    finally:
        await db.engine.dispose()
        db.engine, db.sessions, db.reader, db.single_writes = engine, sessions, reader, writer
    assert (await client.get("/v1/profiles", headers=admin)).status_code == 200
