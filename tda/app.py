"""create_app(settings) -> the Quart app: the REST API, OpenAPI with a locally served docs page, and SSE."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from quart import Quart, Response, jsonify, redirect
from quart.sessions import SecureCookieSessionInterface
from quart_schema import QuartSchema, hide

from .api import register_api
from .api.openapi import RoutePaths
from .clients import TRUSTED_PROXIES, request_is_https
from .config import Settings
from .gateway import CALL_NAMES
from .logs import install_request_ids
from .metrics import watch_pool
from .ops import bp as ops
from .security import check_secret, install_security_headers, session_secret
from .service import TDAService
from .views import bp as ui_pages

PACKAGE = Path(__file__).resolve().parent
ROOT = PACKAGE if (PACKAGE / "static").is_dir() else PACKAGE.parent
"""Where static/ and templates/ are: inside the package when installed from a wheel (setup.py maps them to
tda/static and tda/templates), else the project folder (a source checkout or an editable install)."""
SWAGGER = "/static/vendor/swagger-ui"


def create_app(settings: Settings | None = None, **service_options: Any) -> Quart:
    settings = settings or Settings.from_env()
    app = Quart(
        __name__, root_path=str(ROOT), static_folder="static", static_url_path="/static", template_folder="templates"
    )
    app.secret_key = session_secret(settings)
    check_secret(settings, app.secret_key)
    app.config.update(
        MAX_CONTENT_LENGTH=settings.max_body_bytes,
        BODY_TIMEOUT=settings.body_timeout_s,
        SESSION_COOKIE_NAME="tda_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        QUART_SCHEMA_SWAGGER_JS_URL=f"{SWAGGER}/swagger-ui-bundle.js",  # no CDN: the docs work offline
        QUART_SCHEMA_SWAGGER_CSS_URL=f"{SWAGGER}/swagger-ui.css",
    )
    app.config[TRUSTED_PROXIES] = settings.trusted_proxies  # which X-Forwarded-* headers clients.py believes
    QuartSchema(
        app,
        info={"title": "tda", "version": "0.1.0", "description": "Context-window assembly service"},
        security_schemes={"bearer": {"type": "http", "scheme": "bearer"}},
        security=[{"bearer": []}],
        redoc_ui_path=None,
        scalar_ui_path=None,
        swagger_ui_path="/docs",
        openapi_provider_class=RoutePaths,
    )
    app.session_interface = HttpsAwareSessions()
    # wraps the bound method; mypy types the attribute as the unbound one (with self), so no callable matches it
    app.make_response = _plain_json_first(app.make_response)  # type: ignore[assignment]
    svc = TDAService(settings, **service_options)
    svc.init_app(app)

    @app.before_serving
    async def compile_call_statements() -> None:  # no call compiles them on its first use (~10 ms in all)
        svc.store.types.prepare()
        svc.store.sessions.prepare(CALL_NAMES)

    watch_pool(svc.store.db.engine)
    install_request_ids(app)
    install_security_headers(app)
    register_api(app)
    app.register_blueprint(ui_pages)
    app.register_blueprint(ops)

    @app.after_request
    async def no_body_no_content_type(response: Any) -> Any:
        if response.status_code in (204, 304):
            response.headers.pop("Content-Type", None)
        return response

    @app.get("/")
    @hide
    async def index() -> Any:
        return redirect("/ui/types")  # the admin UI (it sends strangers to sign in); the API docs are at /docs

    return app


class HttpsAwareSessions(SecureCookieSessionInterface):
    """The session cookie gets ``Secure`` when the request came over https: its own TLS, or a trusted proxy's
    ``X-Forwarded-Proto: https`` (``TDA_TRUSTED_PROXIES``), so a browser never sends it over plain http."""

    def get_cookie_secure(self, app: Quart) -> bool:
        return bool(app.config["SESSION_COOKIE_SECURE"]) or request_is_https()


_R = TypeVar("_R")


def _plain_json_first(make_response: Callable[[Any], Awaitable[_R]]) -> Callable[[Any], Coroutine[Any, Any, _R]]:
    """Serialise plain dict/list results directly, with their status and headers: quart-schema would first walk
    the body and a headers dict each with a new pydantic TypeAdapter, which costs milliseconds per response for
    nothing (they are JSON and strings already)."""

    async def wrapper(result: Any) -> _R:
        if isinstance(result, (dict, list)):
            result = jsonify(result)
        elif isinstance(result, tuple) and result and isinstance(result[0], (dict, list)):
            result = _json_response(*result)
        return await make_response(result)

    return wrapper


def _json_response(body: Any, *status_or_headers: Any) -> Response:
    """A view's ``(body, status)``, ``(body, headers)`` or ``(body, status, headers)`` as one response."""
    response = jsonify(body)
    for extra in status_or_headers:
        if isinstance(extra, int):
            response.status_code = extra
        else:
            response.headers.update(extra)
    return response
