"""Settings: one frozen dataclass read from ``TDA_*`` environment variables. Nothing else reads the environment.
Each field names its variable and parser where it is declared (``env_setting``)."""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .proxies import TrustedProxies
from .redact import redact_url
from .upstream_policy import STANDARD_KEY_ENVS


def offline_library_defaults() -> None:
    """Keep third-party libraries offline: litellm's cost map and tiktoken's encodings ship with litellm."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    spec = importlib.util.find_spec("litellm")  # found, not imported (the component's bundled_tokenizer_dir
    if spec and spec.submodule_search_locations:  # does the same, but importing it takes a second `tda serve` skips)
        folder = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
        if folder.is_dir():
            os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(folder))


EMBEDDER_NAMES = ("minilm", "minilm-int8", "hashing")
LOG_FORMATS = ("text", "json")


def _log_format(value: str) -> str:
    if value not in LOG_FORMATS:
        raise ValueError(f"TDA_LOG_FORMAT={value!r} is not a log format; use one of {', '.join(LOG_FORMATS)}")
    return value


def _embedder(value: str) -> str:
    if value not in EMBEDDER_NAMES:
        raise ValueError(f"TDA_EMBEDDER={value!r} is not an embedder; use one of {', '.join(EMBEDDER_NAMES)}")
    return value


def _database_url(value: str) -> str:
    """SQLite (aiosqlite) or PostgreSQL (asyncpg); ``postgresql://`` and ``postgres://`` mean asyncpg."""
    scheme, sep, rest = value.partition("://")
    if scheme in {"postgresql", "postgres", "postgresql+asyncpg"} and sep:
        return f"postgresql+asyncpg://{rest}"
    if scheme in {"sqlite", "sqlite+aiosqlite"} and sep:
        return f"sqlite+aiosqlite://{rest}"
    raise ValueError(
        f"TDA_DATABASE_URL={redact_url(value)!r} is not supported; use postgresql+asyncpg://user:password@host:5432/db "
        "or sqlite+aiosqlite:///path/to/tda.db"
    )


def _positive_int(var: str) -> Callable[[str], int]:
    def parse(value: str) -> int:
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"{var}={value!r} is not a whole number of at least 1")
        return int(value)

    return parse


def _bus_url(value: str) -> str:
    if not value.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError(
            f"TDA_BUS_URL={redact_url(value)!r} is not a Redis URL; use redis://host:6379/0 or leave it unset"
        )
    return value


def _upstream_base_url(value: str) -> str:
    if not re.match(r"^https?://\S+$", value):
        raise ValueError(
            f"TDA_UPSTREAM_BASE_URL={redact_url(value)!r} is not an http(s) URL; use e.g. http://127.0.0.1:11434/v1"
        )
    return value.rstrip("/")


def _env_var_name(value: str) -> str:
    if not re.match(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$", value):
        raise ValueError(  # the value is not echoed: it may be the key itself
            "TDA_UPSTREAM_API_KEY_ENV is not an environment variable's name; put the key in a variable of its own "
            "and name that variable here, e.g. TDA_UPSTREAM_API_KEY_ENV=OPENAI_API_KEY"
        )
    return value


def _key_envs(value: str) -> frozenset[str]:
    names = frozenset(name.strip() for name in value.split(",") if name.strip())
    if bad := sorted(n for n in names if not re.match(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$", n)):
        raise ValueError(f"TDA_UPSTREAM_KEY_ENVS: {bad[0]!r} is not an environment variable's name")
    if reserved := sorted(n for n in names if n.upper().startswith("TDA_")):
        raise ValueError(
            f"TDA_UPSTREAM_KEY_ENVS lists {reserved[0]}: tda's own settings are never model keys; "
            "put the key in a variable of its own (OPENAI_API_KEY, MY_LLM_KEY, ...)"
        )
    return names


def _hosts(value: str) -> tuple[str, ...]:
    hosts = tuple(h.strip().lower() for h in value.split(",") if h.strip())
    if bad := [h for h in hosts if not re.match(r"^[a-z0-9*?\[\]._:-]+$", h)]:
        raise ValueError(
            f"TDA_UPSTREAM_HOSTS: {bad[0]!r} is not a host pattern; use names or addresses, optionally with a port, "
            "comma-separated, e.g. api.openai.com,*.openai.azure.com,127.0.0.1:11434"
        )
    return hosts


def _retries(value: str) -> int:
    if not value.isdigit() or int(value) > 5:
        raise ValueError(f"TDA_UPSTREAM_RETRIES={value!r} is not a whole number from 0 to 5")
    return int(value)


def _otlp_endpoint(value: str) -> str:
    if not re.match(r"^https?://\S+$", value):
        raise ValueError(
            f"TDA_OTLP_ENDPOINT={redact_url(value)!r} is not an http(s) URL; use an OTLP/HTTP collector's address, "
            "e.g. http://127.0.0.1:4318 (or leave it unset: no traces are exported)"
        )
    return value.rstrip("/")


def _otlp_headers(value: str) -> tuple[tuple[str, str], ...]:
    """``name=value,name2=value2`` (OpenTelemetry's format for OTEL_EXPORTER_OTLP_HEADERS)."""
    pairs = [item.partition("=") for item in value.split(",") if item.strip()]
    if any(not name.strip() or not sep for name, sep, _ in pairs):
        raise ValueError(  # the value is not echoed: it holds credentials
            "TDA_OTLP_HEADERS is not a list of name=value pairs; use e.g. "
            "TDA_OTLP_HEADERS='Authorization=Basic <base64 of public:secret key>'"
        )
    return tuple((name.strip(), header.strip()) for name, _, header in pairs)


def _capture_content(value: str) -> bool:
    if value.lower() not in {"1", "true", "yes", "0", "false", "no"}:
        raise ValueError(f"TDA_OTLP_CAPTURE_CONTENT={value!r} is not a yes or no; use true or false")
    return value.lower() in {"1", "true", "yes"}


def _model_names(value: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in value.split(",") if name.strip())


def api_key_in_env(name: str) -> str | None:
    """The value of the environment variable a model upstream names for its key, read when a call is made (so a
    rotated key is picked up); the key is never stored in settings, logged or returned."""
    return os.environ.get(name) or None


def user_data_dir(env: Mapping[str, str]) -> Path:
    """The user's data directory (XDG): ``$XDG_DATA_HOME/tda``, else ``~/.local/share/tda``. Never
    relative to the working directory, so every command finds the same store wherever it runs."""
    base = env.get("XDG_DATA_HOME") or ""
    return (Path(base) if Path(base).is_absolute() else Path.home() / ".local" / "share") / "tda"


def env_setting(var: str, parse: Callable[[str], Any] = str, **default: Any) -> Any:
    """A setting read from the environment variable ``var`` when it is set and not empty, parsed by ``parse``
    (whose ValueError says what to change); else ``default`` / ``default_factory``."""
    return field(metadata={"env": var, "parse": parse}, **default)


@dataclass(frozen=True)
class Settings:
    data_dir: Path = env_setting("TDA_DATA_DIR", Path, default_factory=lambda: user_data_dir(os.environ))
    """``TDA_DATA_DIR``; default the user's data directory. ``make run`` keeps the checkout's ``var/``."""
    database_url: str | None = env_setting("TDA_DATABASE_URL", _database_url, default=None)
    """SQLAlchemy URL; default ``sqlite+aiosqlite:///<data_dir>/tda.db``."""
    chroma_url: str | None = env_setting("TDA_CHROMA_URL", default=None)
    """A Chroma server (``http://host:port``); default: an embedded store under ``data_dir/chroma``."""
    bus_url: str | None = env_setting("TDA_BUS_URL", _bus_url, default=None)
    """Redis (``redis://host:6379/0``) carrying snapshots and events between replicas; default: in-process."""
    modules_dir: Path = env_setting(
        "TDA_MODULES_DIR", Path, default_factory=lambda: Path.home() / ".tda" / "context_modules"
    )
    host: str = env_setting("TDA_HOST", default="127.0.0.1")
    port: int = env_setting("TDA_PORT", int, default=8000)
    model: str = env_setting("TDA_MODEL", default="gpt-4o")
    """The model turns are sent to (litellm name)."""
    upstream_base_url: str | None = env_setting("TDA_UPSTREAM_BASE_URL", _upstream_base_url, default=None)
    """``TDA_UPSTREAM_BASE_URL``: an OpenAI-compatible API (``http://host:port/v1``) models are called at, for
    profiles that name no upstream of their own; unset: the provider litellm picks from the model's name."""
    upstream_api_key_env: str | None = env_setting("TDA_UPSTREAM_API_KEY_ENV", _env_var_name, default=None)
    """``TDA_UPSTREAM_API_KEY_ENV``: the name of the environment variable holding the key for the default
    upstream (sent as ``Authorization: Bearer``); unset: the provider's own variable (``OPENAI_API_KEY``, ...)
    without a base URL, and no key with one."""
    upstream_key_envs: frozenset[str] = env_setting(
        "TDA_UPSTREAM_KEY_ENVS", _key_envs, default=frozenset(STANDARD_KEY_ENVS)
    )
    """``TDA_UPSTREAM_KEY_ENVS``: the environment variables a profile's upstream may name as its key (comma-separated;
    never a ``TDA_*`` one); default: the providers' standard names (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ...)."""
    upstream_hosts: tuple[str, ...] = env_setting("TDA_UPSTREAM_HOSTS", _hosts, default=())
    """``TDA_UPSTREAM_HOSTS``: the hosts a profile's base URL may name (comma-separated patterns, optionally with a
    port: ``api.openai.com,*.openai.azure.com,127.0.0.1:11434``); unset: any host except link-local and
    cloud-metadata addresses. Set it on a server that several teams share."""
    upstream_retries: int = env_setting("TDA_UPSTREAM_RETRIES", _retries, default=2)
    """``TDA_UPSTREAM_RETRIES``: retries of a failed model call (0-5; LiteLLM's and the OpenAI SDK's default, 2)."""
    upstream_fallbacks: tuple[str, ...] = env_setting("TDA_UPSTREAM_FALLBACKS", _model_names, default=())
    """``TDA_UPSTREAM_FALLBACKS``: models tried in order when a call still fails (comma-separated)."""
    mock_model: bool = env_setting("TDA_MOCK_MODEL", lambda v: v.lower() not in {"0", "false", "no"}, default=True)
    """Answer turns with litellm's ``mock_response`` instead of calling a provider (demo/offline)."""
    embedder: str = env_setting("TDA_EMBEDDER", _embedder, default="minilm-int8")
    """Embedder for new knowledge collections and champion cases: ``minilm-int8`` (all-MiniLM-L6-v2, int8,
    onnxruntime), ``minilm`` (the same model in fp32, numpy) or ``hashing`` (deterministic feature hashing:
    fast, for tests and machines without the model)."""
    max_champion_cases: int | None = env_setting(
        "TDA_MAX_CHAMPION_CASES", _positive_int("TDA_MAX_CHAMPION_CASES"), default=None
    )
    """Champion cases kept at most (``TDA_MAX_CHAMPION_CASES``; default ``MAX_CASES`` in tda/knowledge/cases.py,
    2,000): past it, a new case takes the place of the one least worth keeping, so the store stops growing."""
    module_timeout_s: float = env_setting("TDA_MODULE_TIMEOUT_S", float, default=2.0)
    secret_key: str | None = env_setting("TDA_SECRET_KEY", default=None)
    """Signs browser-session cookies. Unset: a random one is made on first start and kept in data_dir/secret_key."""
    module_roots: tuple[Path, ...] = env_setting(
        "TDA_MODULE_ROOTS", lambda v: tuple(Path(p) for p in v.split(os.pathsep) if p), default=()
    )
    """Folders (besides modules_dir) that modules may be installed from (``TDA_MODULE_ROOTS``, ``:``-separated)."""
    max_body_bytes: int = env_setting("TDA_MAX_BODY_BYTES", int, default=16 * 1024 * 1024)
    """Larger request bodies are refused with 413."""
    body_timeout_s: int = env_setting("TDA_BODY_TIMEOUT_S", _positive_int("TDA_BODY_TIMEOUT_S"), default=60)
    """``TDA_BODY_TIMEOUT_S``: a request body must have arrived this many seconds after its request began, else
    408 and the connection is closed (a body that trickles in would hold a connection and its memory forever)."""
    max_json_depth: int = env_setting("TDA_MAX_JSON_DEPTH", int, default=64)
    """JSON bodies nested deeper are refused with 400."""
    trusted_proxies: TrustedProxies | None = env_setting("TDA_TRUSTED_PROXIES", TrustedProxies.parse, default=None)
    """``TDA_TRUSTED_PROXIES``: the reverse proxies whose ``X-Forwarded-For``/``-Proto`` are believed, as addresses or
    CIDRs (``127.0.0.1,10.0.0.0/8``) or a count of proxies in front (``1``); unset, those headers are ignored."""
    auth_failures_per_minute: int = env_setting(
        "TDA_AUTH_FAILURES_PER_MINUTE", _positive_int("TDA_AUTH_FAILURES_PER_MINUTE"), default=20
    )
    """``TDA_AUTH_FAILURES_PER_MINUTE``: failed authentications a client address may make a minute; then 429."""
    otlp_endpoint: str | None = env_setting("TDA_OTLP_ENDPOINT", _otlp_endpoint, default=None)
    """``TDA_OTLP_ENDPOINT``: an OTLP/HTTP (protobuf) collector each turn is exported to as OpenTelemetry spans
    (``http://host:4318``; ``/v1/traces`` is added unless the URL ends with it). Unset: nothing is exported."""
    otlp_headers: tuple[tuple[str, str], ...] = env_setting("TDA_OTLP_HEADERS", _otlp_headers, default=(), repr=False)
    """``TDA_OTLP_HEADERS``: headers sent with each export, ``name=value`` comma-separated (a collector's key)."""
    otlp_capture_content: bool = env_setting("TDA_OTLP_CAPTURE_CONTENT", _capture_content, default=False)
    """``TDA_OTLP_CAPTURE_CONTENT``: ``true`` puts what the model was sent and answered on each ``chat`` span (the
    GenAI conventions' ``gen_ai.system_instructions``, ``gen_ai.input.messages``, ``gen_ai.output.messages``, each
    message with the module that contributed it), with keys, tokens and URL credentials redacted as in logs.
    Default off: spans carry counts, never the conversation."""
    log_format: str = env_setting("TDA_LOG_FORMAT", _log_format, default="text")
    """``text`` or ``json`` (one object per line, with the request id)."""
    log_level: str = env_setting("TDA_LOG_LEVEL", default="INFO")
    index_files_dir: Path | None = env_setting("TDA_INDEX_FILES_DIR", Path, default=None)
    """``TDA_INDEX_FILES_DIR``: a directory on a disk where the sessions' recall indexes keep their large buffers
    (vectors, postings, columns, packed texts) as the pages of unlinked files of their own, which the kernel may drop
    from memory when it needs the room and read again when next used (``components/context_window/mapped.py``);
    nothing is left there once the process ends. Unset: anonymous memory, which only the process gives back."""
    prometheus_multiproc_dir: Path | None = env_setting("PROMETHEUS_MULTIPROC_DIR", Path, default=None)
    """``PROMETHEUS_MULTIPROC_DIR``: set for several worker processes, so /metrics sums them (tda/metrics.py)."""

    @property
    def sqlalchemy_url(self) -> str:
        return self.database_url or f"sqlite+aiosqlite:///{self.data_dir / 'tda.db'}"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        env = os.environ if env is None else env
        offline_library_defaults()
        values = {f.name: f.metadata["parse"](env[var]) for f in fields(cls) if env.get(var := f.metadata["env"])}
        values.setdefault("data_dir", user_data_dir(env))
        return replace(cls(), **{**values, **overrides})
