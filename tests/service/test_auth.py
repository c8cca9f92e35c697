"""Browser sign-in: a token starts a cookie session; writes then need the CSRF header; revocation ends it."""

from __future__ import annotations

from tda.store.tokens import TokenStore


async def test_cookie_session_with_csrf(client, svc):
    token, row = await svc.store.tokens.create("browser", "admin")
    assert (await client.post("/v1/auth/session", json={"token": "wrong"})).status_code == 401
    r = await client.post("/v1/auth/session", json={"token": token})
    assert r.status_code == 200
    body = await r.get_json()
    assert body["role"] == "admin" and body["csrf_token"]
    assert "HttpOnly" in r.headers["Set-Cookie"] and "SameSite=Lax" in r.headers["Set-Cookie"]

    assert (await client.get("/v1/context-window-types")).status_code == 200  # the cookie is enough to read
    who = await (await client.get("/v1/auth/session")).get_json()
    assert who["csrf_token"] == body["csrf_token"]
    profile = {"id": "web", "type": "llm_only"}
    r = await client.post("/v1/profiles", json=profile)
    assert r.status_code == 403 and "CSRF" in (await r.get_json())["message"]
    r = await client.post("/v1/profiles", json=profile, headers={"X-CSRF-Token": "forged"})
    assert r.status_code == 403
    r = await client.post("/v1/profiles", json=profile, headers={"X-CSRF-Token": body["csrf_token"]})
    assert r.status_code == 201

    await svc.store.tokens.revoke(row.id, "test")
    assert (await client.get("/v1/context-window-types")).status_code == 401


async def test_viewer_cookie_reads_but_cannot_write_and_sign_out(client, svc):
    token, _ = await svc.store.tokens.create("reader", "viewer")
    csrf = (await (await client.post("/v1/auth/session", json={"token": token})).get_json())["csrf_token"]
    assert (await client.get("/v1/profiles")).status_code == 200
    r = await client.post("/v1/profiles", json={"id": "x"}, headers={"X-CSRF-Token": csrf})
    assert r.status_code == 403 and "admin" in (await r.get_json())["message"]
    assert (await client.delete("/v1/auth/session")).status_code == 204
    assert (await client.get("/v1/profiles")).status_code == 401


async def test_bearer_tokens_are_stored_hashed_and_revocable(client, svc):
    token, row = await svc.store.tokens.create("cli", "viewer")
    assert token.startswith("tda_") and token not in row.token_hash
    headers = {"Authorization": f"Bearer {token}"}
    assert (await client.get("/v1/profiles", headers=headers)).status_code == 200
    assert (await client.get("/v1/profiles", headers={"Authorization": f"Basic {token}"})).status_code == 401
    await svc.store.tokens.revoke(row.id, "test")
    assert (await client.get("/v1/profiles", headers=headers)).status_code == 401


async def test_signing_out_ends_the_session_for_a_copied_cookie_too(test_app, svc):
    """Sessions are kept server-side: a cookie copied before sign-out (another tab, a stolen copy) stops working."""
    token, _ = await svc.store.tokens.create("browser", "admin")
    browser, thief = test_app.test_client(), test_app.test_client()
    r = await browser.post("/v1/auth/session", json={"token": token})
    assert r.status_code == 200
    cookie = r.headers["Set-Cookie"].split(";", 1)[0]
    assert token not in cookie
    assert (await thief.get("/v1/profiles", headers={"Cookie": cookie})).status_code == 200
    assert (await browser.delete("/v1/auth/session")).status_code == 204
    r = await thief.get("/v1/profiles", headers={"Cookie": cookie})
    assert r.status_code == 401 and "sign in again" in (await r.get_json())["message"]
    assert (await browser.get("/v1/profiles")).status_code == 401
    r = await browser.post("/v1/auth/session", json={"token": token})  # signing in again starts a new session
    assert r.status_code == 200 and (await browser.get("/v1/profiles")).status_code == 200
    assert (await thief.get("/v1/profiles", headers={"Cookie": cookie})).status_code == 401


async def _signed_in(app, token: str) -> tuple[object, str, str]:
    """A new browser signed in with ``token``: its client, its session cookie and its CSRF token."""
    browser = app.test_client()
    r = await browser.post("/v1/auth/session", json={"token": token})
    assert r.status_code == 200
    return browser, r.headers["Set-Cookie"].split(";", 1)[0], (await r.get_json())["csrf_token"]


async def test_sign_out_everywhere_ends_every_session_of_the_callers_token(test_app, svc):
    token, _ = await svc.store.tokens.create("alice", "admin")
    other, _ = await svc.store.tokens.create("bob", "admin")
    laptop, _, csrf = await _signed_in(test_app, token)
    phone, copied, _ = await _signed_in(test_app, token)
    bobs, _, _ = await _signed_in(test_app, other)
    thief = test_app.test_client()
    assert (await laptop.delete("/v1/auth/sessions")).status_code == 403  # a write: it needs the CSRF header
    r = await laptop.delete("/v1/auth/sessions", headers={"X-CSRF-Token": csrf})
    assert r.status_code == 200 and (await r.get_json()) == {"ended": 2}
    for client, headers in ((laptop, {}), (phone, {}), (thief, {"Cookie": copied})):
        assert (await client.get("/v1/profiles", headers=headers)).status_code == 401
    assert (await bobs.get("/v1/profiles")).status_code == 200  # another token's sessions go on
    bearer = {"Authorization": f"Bearer {token}"}
    assert (await test_app.test_client().get("/v1/profiles", headers=bearer)).status_code == 200  # the token stays


async def test_revoking_a_token_elsewhere_ends_its_browser_sessions_at_once(test_app, svc):
    """Revoked by another process (the CLI, another replica): this replica's cache still holds the token for up to
    a second, but its browser sessions are gone from the database, so they end at once."""
    token, row = await svc.store.tokens.create("browser", "admin")
    browser, _, _ = await _signed_in(test_app, token)
    assert (await browser.get("/v1/profiles")).status_code == 200  # the token is in this replica's cache now
    await TokenStore(svc.store.db).revoke(row.id, "cli")
    r = await browser.get("/v1/profiles")
    assert r.status_code == 401 and "sign in again" in (await r.get_json())["message"]
