"""TDAService: the objects one running service shares (store, registry, handler, bus, model), as a Quart extension."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from quart import Quart, current_app

from components.context_window import mapped
from components.context_window.handler import AssembledContext, ContextWindowHandler
from components.context_window.module_registry import ModuleRegistry
from components.context_window.recall.messages import SessionRecall
from components.context_window.token_estimator import STORED_ENCODINGS, calibratable, estimator, estimator_for
from components.context_window.window_type import ContextWindowType

from .background import BackgroundWriter, Jobs
from .builtins import module_registry
from .cache_ttl import CacheTTL
from .calibration import Calibrations
from .clients import FailedAuthLimit
from .collector import LOADED
from .config import Settings
from .db import upgrade_async
from .errors import Invalid, field_errors
from .events import create_bus
from .history import HistoryCache
from .knowledge.providers import LiveKnowledge
from .llm import LLM, LLMSummarizer, Upstream, preload
from .memory import FreedMemory, drop_tiktoken_rank_copies
from .recall.turns import TurnIndex
from .recall.vectors import part_vectors_for
from .sources import Sources
from .store import Store
from .upstream_policy import UpstreamPolicy

if TYPE_CHECKING:
    from .traces_out import TracesOut

log = logging.getLogger(__name__)


def _traces_out(settings: Settings) -> TracesOut | None:
    """The OTLP exporter when ``TDA_OTLP_ENDPOINT`` is set; else None (OpenTelemetry's exporter is not imported)."""
    if settings.otlp_endpoint is None:
        return None
    from .traces_out import TracesOut

    return TracesOut(settings.otlp_endpoint, dict(settings.otlp_headers), capture_content=settings.otlp_capture_content)


class TDAService:
    def __init__(
        self,
        settings: Settings,
        *,
        registry: ModuleRegistry | None = None,
        sources: Sources | None = None,
        llm: LLM | None = None,
        migrate: bool = True,
        warm_up_llm: bool = True,
        warm_up_knowledge: bool = True,
        heartbeat_s: float = 15.0,
    ) -> None:
        self.settings = settings
        mapped.keep_in_files(settings.index_files_dir)  # before any index is made (the process's own choice)
        self.store = Store.connect(settings.sqlalchemy_url)
        self.registry = registry or module_registry(user_dir=settings.modules_dir)
        self.handler = ContextWindowHandler(self.registry, timeout_s=settings.module_timeout_s)
        self.scratch_handler = ContextWindowHandler(
            self.registry, timeout_s=settings.module_timeout_s, remember_sessions=0
        )
        """For previews and replays: they must not change what the live handler remembers of a session."""
        self._session_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self.bus = create_bus(settings.bus_url)
        self._freed = FreedMemory()
        self.writer = BackgroundWriter(idle=self._background_done)
        self.experiments = Jobs()
        """The experiments this process runs (tda/experiments.py)."""
        self.failed_auth = FailedAuthLimit(settings.auth_failures_per_minute)
        self.history = HistoryCache(self.store.sessions)
        self.cache_ttl = CacheTTL()
        """Each session's recent call times: the TTL of Claude's cache marks (tda/cache_ttl.py)."""
        self.calibrations = Calibrations(self.store.calibrations)
        self.llm = llm or LLM(
            mock=settings.mock_model,
            upstream=Upstream.from_settings(settings),
            policy=UpstreamPolicy(settings.upstream_key_envs, settings.upstream_hosts),
        )
        self.knowledge = LiveKnowledge(
            settings.data_dir,
            settings.chroma_url,
            embedder=settings.embedder,
            max_cases=settings.max_champion_cases,
        )
        """Opened at start-up (warm_up_knowledge) or on first use: Chroma and the embedder take seconds to load."""
        self.sources = sources or Sources(knowledge=self.knowledge, cases=self.knowledge, embedder=self.knowledge)
        self.history_vectors = part_vectors_for(
            self.store.history_vectors, self.knowledge, settings.embedder, self.sources.embedder, self.writer
        )
        """Where recall's part vectors are kept for other replicas and restarts (None: embedding is cheaper)."""
        if self.sources.history_recall is None:  # one index per session, shared by its turns (tda/recall/messages.py)
            self.sources.history_recall = SessionRecall(
                self.sources.embedder, stored=self.history_vectors, runner=self.sources.offload
            )
        if self.sources.turn_index is None:  # older turns as modules search them (tda/recall/turns.py)
            self.sources.turn_index = TurnIndex(self.store.db, lambda: self.sources.embedder)
        if self.sources.summarizer is None and not self.llm.mock:
            # A mock model cannot summarise or rewrite a follow-up; without a summarizer the modules
            # use their own extractive fallbacks and the original query.
            self.sources.summarizer = LLMSummarizer(self.llm, settings.model)
        self.migrate = migrate
        self.warm_up_llm = warm_up_llm
        self.warm_up_knowledge = warm_up_knowledge and sources is None  # injected sources bring their own
        self.heartbeat_s = heartbeat_s
        self.traces_out = _traces_out(settings)
        self._heartbeats: asyncio.Task[None] | None = None

    def _background_done(self) -> None:
        """The background work is done: modules loaded since are frozen (`tda serve`: tda/collector.py), after
        which freed heap pages go back."""
        LOADED.idle()
        self._freed.idle()

    def init_app(self, app: Quart) -> None:
        app.extensions["tda"] = self
        app.before_serving(self.startup)
        app.after_serving(self.shutdown)

    async def startup(self) -> None:
        if self.migrate:
            await upgrade_async(self.settings.sqlalchemy_url)
        # Both load in worker threads, side by side; serving starts once the first turn would not stall on them
        # (a turn arriving while MiniLM still loads would time its retrieval modules out).
        litellm_needed = self.llm.needs_litellm(self.settings.model)  # else it loads when a call first needs it
        calls_sdk = not self.llm.mock or not litellm_needed  # the mock's text answers go through the SDK too
        warm_ups = [self._warm_up_llm(calls_sdk, litellm_needed)] if self.warm_up_llm else []
        warm_ups.append(asyncio.to_thread(_load_tokenizers, self.settings.model))
        if self.warm_up_knowledge:
            warm_ups.append(self._warm_up_knowledge())
        await asyncio.gather(*warm_ups)
        self.registry.load()
        await self.store.types.seed_defaults(types=self.registry.window_types())  # built-in and packs' types
        await self.store.types.current()  # each type validated now: a process's first call parses none (~4 ms)
        await self.calibrations.load()
        await self.apply_module_state()
        self.bus.on_control("modules", self.reload_modules)
        await self.bus.start()
        self._heartbeats = asyncio.create_task(self.bus.run_heartbeats(self.heartbeat_s))

    async def _warm_up_llm(self, calls_sdk: bool, litellm_needed: bool) -> None:
        await preload(calls_sdk, litellm_needed)
        if not calls_sdk:
            return
        try:  # after the SDK's import (one thread imports it)
            await asyncio.to_thread(self.llm.ready_client)
        except Exception as exc:  # a head start only: the first call makes what this did not
            log.warning("model client warm-up failed: %s", exc)

    async def _warm_up_knowledge(self) -> None:
        try:
            await self.knowledge.warm_up()
        except Exception as exc:  # retrieval then fails per turn (the snapshot says why); serving goes on
            log.warning("knowledge store warm-up failed: %s", exc)

    async def shutdown(self) -> None:
        await self.bus.stop()
        if self._heartbeats is not None:
            self._heartbeats.cancel()
        await self.experiments.stop()  # each saves what it replayed, as cancelled
        await self.writer.drain()  # before the stores close: what turns queued is written
        await self.handler.close()  # the work ahead of sessions' next calls, before the model's client closes
        if self.history_vectors is not None:
            await self.history_vectors.flush()
        await asyncio.to_thread(self.knowledge.close)
        await self.store.close()
        await self.llm.aclose()
        if self.traces_out is not None:  # the turns' queued spans are sent (bounded when the collector is down)
            await asyncio.to_thread(self.traces_out.shutdown)

    async def reload_modules(self) -> None:
        """Another replica installed, removed, activated or deactivated a module: do the same here."""
        self.registry.reload()
        await self.apply_module_state()

    async def apply_module_state(self) -> None:
        """Re-apply the activation admins chose (the registry keeps it only in memory)."""
        for module_id, active in (await self.store.modules.all()).items():
            if module_id not in self.registry.modules:
                continue
            try:
                (self.registry.activate if active else self.registry.deactivate)(module_id)
            except ValueError as exc:  # e.g. a module became required since
                log.warning("module state for %s not applied: %s", module_id, exc)

    @contextlib.asynccontextmanager
    async def session_lock(self, session_id: str) -> AsyncIterator[None]:
        """One turn at a time per session, across every replica: turn numbers stay dense.

        In process first (turns queued here hold no database connection), then the database's lock (PostgreSQL:
        an advisory lock, released even if this process dies). Before letting go, the session's events are
        handed to the bus, so the next turn's events, wherever it runs, come after them. Work the block left to
        the background writer is done before the lock goes, after the response: the next turn, on any replica,
        sees it."""
        lock = self._session_locks.get(session_id)
        if lock is None:
            lock = self._session_locks[session_id] = asyncio.Lock()
        async with contextlib.AsyncExitStack() as held:
            await held.enter_async_context(lock)
            await held.enter_async_context(self.store.db.exclusive(f"session:{session_id}"))
            try:
                yield
            finally:
                await self.bus.drain()
                if self.writer.busy(session_id):
                    release = held.pop_all().aclose
                    self.writer.submit(session_id, release, f"release of session {session_id}'s lock")

    def observe_prompt_count(self, key: str, model: str, assembled: AssembledContext, prompt_tokens: int) -> None:
        """After the response (in ``key``'s queue): the provider's count of the window tunes the model's estimate."""
        if prompt_tokens > 0 and calibratable(model):
            messages, tools = assembled.messages, assembled.tools
            job = lambda: self.calibrations.observe(model, messages, tools, prompt_tokens)  # noqa: E731
            self.writer.submit(key, job, "token calibration")

    def validate_type(self, data: Any, loc: tuple[str, ...] = ()) -> ContextWindowType:
        try:
            # Installed modules plus every built-in id (a type may name a built-in that failed to load here).
            context = self.registry.validation_context()
            return ContextWindowType.model_validate(data, context=context)
        except ValidationError as exc:
            raise Invalid(
                "the context window type is invalid; fix the fields listed in errors", errors=field_errors(exc, loc)
            ) from None


def _load_tokenizers(model: str) -> None:
    """The encodings a turn counts with: its model's, and those stored with each message. Loading one takes ~0.4 s,
    which the first turn would otherwise spend with the event loop blocked."""
    estimator_for(model)
    for name in STORED_ENCODINGS:
        estimator(name)
    drop_tiktoken_rank_copies()  # ~40 MB resident (tda/memory.py)
    import numpy.ma  # noqa: F401  # np.unique's first call imports it (recall's ranking): ~15 ms of the first turn


def service() -> TDAService:
    return current_app.extensions["tda"]
