"""50 concurrent writers of one type, each with the ETag it read: every update is applied or refused with 412."""

from __future__ import annotations

import asyncio

URL = "/v1/context-window-types/balanced"


async def test_50_concurrent_puts_none_lost(client, admin):
    r = await client.get(URL, headers=admin)
    base, etag = await r.get_json(), r.headers["ETag"]
    edit = {k: v for k, v in base.items() if k not in ("version", "updated_at", "etag")}

    async def writer(i: int) -> tuple[int, str]:
        r = await client.put(URL, json={**edit, "description": f"writer {i}"}, headers={**admin, "If-Match": etag})
        return r.status_code, f"writer {i}"

    results = await asyncio.gather(*(writer(i) for i in range(50)))
    statuses = [s for s, _ in results]
    assert set(statuses) <= {200, 412}
    applied = [d for s, d in results if s == 200]
    assert len(applied) == 1  # all read v1, so exactly one could win

    # Retry the refused ones the way a client should (GET, reapply, PUT) until every edit is in;
    # five at a time still race each other, without the quadratic cost of 49 racing at once.
    gate = asyncio.Semaphore(5)

    async def retry(description: str) -> None:
        async with gate:
            await _retry_until_applied(client, admin, description)

    await asyncio.gather(*(retry(d) for s, d in results if s == 412))
    versions = (await (await client.get(f"{URL}/versions", headers=admin)).get_json())["versions"]
    assert versions[0]["version"] == 51
    written = [v["data"]["description"] for v in versions if v["version"] > 1]
    assert sorted(written) == sorted(f"writer {i}" for i in range(50))  # each edit exactly once: none lost


async def _retry_until_applied(client, admin, description: str) -> None:
    while True:
        r = await client.get(URL, headers=admin)
        current = {k: v for k, v in (await r.get_json()).items() if k not in ("version", "updated_at", "etag")}
        put = await client.put(
            URL, json={**current, "description": description}, headers={**admin, "If-Match": r.headers["ETag"]}
        )
        if put.status_code == 200:
            return
        assert put.status_code == 412
