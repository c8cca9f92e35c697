"""/openapi.json describes the routes that exist: every /v1 route and method is documented, and every
documented operation, filled in with its declared parameters, reaches that route with those arguments."""

from __future__ import annotations

from typing import Any

from werkzeug.routing import IntegerConverter

ROUTE_METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE"}


def _sample(parameter: dict[str, Any]) -> str:
    schema = parameter["schema"]
    if schema.get("type") == "integer":
        return str(schema.get("minimum", 0) + 7)
    return f"x-{parameter['name']}"


async def test_every_v1_route_and_method_is_documented_with_the_route_s_own_parameters(test_app: Any) -> None:
    app = test_app.app
    document = await (await test_app.test_client().get("/openapi.json")).get_json()
    adapter = app.url_map.bind("localhost")

    documented: set[tuple[str, str]] = set()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            params = [p for p in operation.get("parameters", []) if p["in"] == "path"]
            url = path
            for p in params:
                assert f"{{{p['name']}}}" in path, f"{method} {path} declares {p['name']!r}, not in its path"
                url = url.replace(f"{{{p['name']}}}", _sample(p))
            assert "{" not in url, f"{method} {path}: a path variable without a declared parameter"
            rule, args = adapter.match(url, method.upper(), return_rule=True)
            assert rule.rule.startswith("/v1/"), f"{method} {path} reaches {rule.rule}, not the API"
            assert set(args) == {p["name"] for p in params} == set(rule.arguments), (method, path, rule.rule)
            for p in params:  # the declared type is the route's: an integer converter means an integer
                is_int = isinstance(rule._converters[p["name"]], IntegerConverter)
                assert (p["schema"].get("type") == "integer") == is_int, (method, path, p)
            documented.add((method.upper(), rule.rule))

    routes = {
        (method, rule.rule)
        for rule in app.url_map.iter_rules()
        if rule.rule.startswith("/v1/")
        for method in rule.methods & ROUTE_METHODS
    }
    assert routes - documented == set(), "routes missing from /openapi.json"
    assert documented == routes


async def test_turn_routes_are_documented_under_their_session(test_app: Any) -> None:
    """The two routes the generator used to name /v1/sessions/{turn}."""
    document = await (await test_app.test_client().get("/openapi.json")).get_json()
    paths = document["paths"]
    assert "patch" in paths["/v1/sessions/{session_id}/turns/{turn}"]
    assert "post" in paths["/v1/sessions/{session_id}/turns/{turn}/feedback"]
    assert not [p for p in paths if p.startswith("/v1/sessions/{turn}")]
    turn = next(
        p for p in paths["/v1/sessions/{session_id}/turns/{turn}"]["patch"]["parameters"] if p["name"] == "turn"
    )
    assert turn["schema"] == {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}
