"""Agent sessions shaped as real clients send them, through every wire tda speaks (issue 32's held-out check,
session 49; `make bench`).

bench/long_session_bench.py sends one shape (user -> one call -> one result -> answer) through chat completions.
This bench sends tests/agent_shapes.py's: parallel calls with results from one line to a 40K-token file read and a
5,000-row query, tool loops of 3-8 steps, assistant text beside calls, ``content: null``, results as content parts;
through /v1/chat/completions, /v1/responses (function_call / function_call_output items) and /v1/messages
(tool_use / tool_result blocks), stateless (resent whole) and with ``X-TDA-Session``, streamed and not; to profiles
of 8K, 16K and 32K (gpt-4o) and a Claude model (no offline tokenizer; the fake's Anthropic-shaped API). The app
runs in this process (hypercorn on 127.0.0.1, the hashing embedder), its model a fake upstream that records what
it was sent and answers by the shape's script, so a session's loop goes on as its client expects.

For every model call the upstream receives (tests/agent_checks.py):
1. utilisation (the window's tokens / the available budget, from the call's snapshot) >= 80% when the
   conversation exceeds the budget; the newest turn whole (its question, every call and result of its loop), or
   condensed with nothing older beside it;
2. the same history part (the messages before the turn's question) on every step of the turn (or its beginning:
   docs/agents.md "Stable within a turn"), and the same window cold and warm (a session's calls made as its
   history arrives, then made again once its background work has finished) and stateless;
3. no orphan tool result (nor a call without its result), every result sent byte for byte or as its beginning
   with tda's note; every auxiliary call (a summary) at the profile's upstream, naming its model, within its window;
4. the cut reported: ``usage.tda`` and ``X-TDA-Cut`` (a stream's with its first byte) on every endpoint.
Reported per shape and endpoint: calls checked, utilisation min / median, and every break found.
A model without an offline tokenizer (Claude) is counted by cl100k times a ratio learned from the provider's own
counts (tda/calibration.py): its windows change while the ratio is learned. Each shape's calls are made once to the
Claude profile before its runs (not checked), so cold = warm compares the same calibration, as it compares the same
stored state.
Knobs: BENCH_SHAPES (names, default all), BENCH_SHAPES_JSON (a file for the figures).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tda.config import Settings, offline_library_defaults  # noqa: E402

offline_library_defaults()

import httpx  # noqa: E402
import litellm  # noqa: E402

from modules.conversation_history.handler import LOOP_TAIL_PCT  # noqa: E402
from tda.db import upgrade  # noqa: E402
from tests.agent_checks import (  # noqa: E402
    CUT_MARK,
    altered_results,
    cut_header_breaks,
    history_part,
    newest_turn,
    orphans,
    question_at,
)
from tests.agent_shapes import SHAPES, TOOLS, newest_calls, script, text_of  # noqa: E402
from tests.agent_wires import anthropic_tools, as_anthropic, as_responses, received_messages, responses_tools  # noqa: E402
from tests.gateway.upstream import FakeUpstream  # noqa: E402
from tests.service.served_app import App, served  # noqa: E402

CLAUDE = "anthropic/claude-sonnet-4-5"
PROFILES = {
    "p8k": ("gpt-4o", 8_000),
    "p16k": ("gpt-4o", 16_000),
    "p32k": ("gpt-4o", 32_000),
    "claude": (CLAUDE, 16_000),
}
ENDPOINTS = ("chat", "responses", "messages")


@dataclasses.dataclass(frozen=True)
class Run:
    shape: str
    endpoint: str
    session: bool
    stream: bool
    profile: str

    @property
    def label(self) -> str:
        mode = "session" if self.session else "stateless"
        return f"{self.shape}/{self.endpoint}/{mode}/{'stream' if self.stream else 'plain'}/{self.profile}"


def runs(shapes: list[str]) -> list[Run]:
    """The matrix: every shape on every endpoint, stateless and with a session, streamed and not, at 16K; at 8K and
    32K through chat completions; the Claude profile through chat and messages."""
    out = [
        Run(s, e, session, stream, "p16k")
        for s in shapes
        for e in ENDPOINTS
        for session in (False, True)
        for stream in (False, True)
    ]
    out += [Run(s, "chat", session, False, p) for s in shapes for p in ("p8k", "p32k") for session in (False, True)]
    out += [Run(s, e, True, stream, "claude") for s in shapes for e in ("chat", "messages") for stream in (False, True)]
    return out


@dataclasses.dataclass
class Call:
    """One client call: what it sent, its response's cut report and header, and what the upstream received."""

    run: Run
    step: int
    sent: list[dict[str, Any]]
    cut: dict[str, Any] | None
    header: str | None
    received: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    path: str = ""
    snapshot: dict[str, Any] = dataclasses.field(default_factory=dict)
    warm: bool = False


class Harness:
    def __init__(self, app: App, own: FakeUpstream, default: FakeUpstream) -> None:
        self.app, self.own, self.default = app, own, default
        self.http = httpx.AsyncClient(base_url=app.base_url.removesuffix("/v1"), timeout=300)
        self.windows: list[Any] = []
        handler = app.svc.handler
        assemble = handler.assemble

        async def recorded(ctx: Any, window_type: Any) -> Any:
            assembled = await assemble(ctx, window_type)
            self.windows.append(assembled.snapshot)
            return assembled

        handler.assemble = recorded  # type: ignore[method-assign]

    async def call(self, run: Run, step: int, messages: list[dict[str, Any]], session: str | None) -> Call:
        """One call of ``run`` sending ``messages``; the upstream's request that answered it (the one with tools)."""
        self.windows.clear()
        before = len(self.own.requests)
        headers = {"Authorization": f"Bearer {self.app.token}", "X-TDA-Profile": run.profile}
        headers |= {"X-TDA-Session": session} if session else {}
        path, body = request_body(run, messages)
        if run.stream:
            cut, header = await self._streamed(run.endpoint, path, body, headers)
        else:
            r = await self.http.post(path, json=body, headers=headers)
            if r.status_code != 200:
                raise RuntimeError(f"{run.label} step {step}: {r.status_code} {r.text[:400]}")
            cut, header = (r.json().get("usage") or {}).get("tda"), r.headers.get("X-TDA-Cut")
        answered = [r for r in self.own.requests[before:] if r.body.get("tools")]
        if len(answered) != 1 or len(self.windows) != 1:
            raise RuntimeError(f"{run.label} step {step}: {len(answered)} answering calls, {len(self.windows)} windows")
        (upstream,) = answered
        snapshot = self.windows[0]
        return Call(
            run,
            step,
            messages,
            cut,
            header,
            received_messages(upstream.path, upstream.body),
            upstream.path,
            {"total_used": snapshot.total_used, "available_budget": snapshot.available_budget},
        )

    async def _streamed(
        self, endpoint: str, path: str, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[dict[str, Any] | None, str | None]:
        """A streamed call read to its end: the cut its last usage carried, and the header."""
        cut = None
        async with self.http.stream("POST", path, json=body, headers=headers) as r:
            if r.status_code != 200:
                raise RuntimeError(f"{path}: {r.status_code} {(await r.aread())[:400]!r}")
            header = r.headers.get("X-TDA-Cut")
            async for line in r.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                event = json.loads(line[6:])
                usage = event.get("usage") or (event.get("response") or {}).get("usage") or {}
                if event.get("type") not in (None, "response.completed", "message_delta"):
                    continue
                cut = usage.get("tda", cut)
        return cut, header


def request_body(run: Run, messages: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """The request ``run``'s endpoint sends for ``messages``."""
    if run.endpoint == "chat":
        body: dict[str, Any] = {"model": "tda", "messages": messages, "tools": TOOLS}
        if run.stream:
            body |= {"stream": True, "stream_options": {"include_usage": True}}
        return "/v1/chat/completions", body
    if run.endpoint == "responses":
        instructions, items = as_responses(messages)
        body = {"model": "tda", "instructions": instructions, "input": items, "tools": responses_tools(TOOLS)}
        return "/v1/responses", body | {"stream": run.stream, "store": run.session}
    system, blocks = as_anthropic(messages)
    body = {"model": "tda", "max_tokens": 1024, "system": system, "messages": blocks, "tools": anthropic_tools(TOOLS)}
    return "/v1/messages", body | {"stream": run.stream}


async def drive(h: Harness, run: Run) -> list[Call]:
    """The newest turn's loop of ``run``'s shape, call by call; with a session, the same calls in a new session once
    the server's background work (the history's vectors, kept by text) has finished: warm."""
    shape = SHAPES[run.shape]
    h.own.script = script(shape)
    session = f"{run.shape}-{run.endpoint}-{uuid.uuid4().hex[:8]}" if run.session else None
    calls = [await h.call(run, step, sent, session) for step, sent in enumerate(newest_calls(shape))]
    if session is not None:  # the same calls in a new session once the server's indexing has finished
        await h.app.svc.writer.drain()
        await asyncio.sleep(0.2)
        for step, sent in enumerate(newest_calls(shape)):
            warm = await h.call(run, step, sent, session + "-warm")
            warm.warm = True
            calls.append(warm)
    return calls


def loop_tokens(sent: list[dict[str, Any]]) -> int:
    """The tokens of the turn's tool loop so far (what follows its question)."""
    return conversation_tokens(sent[question_at(sent) + 1 :]) - 800


def conversation_tokens(sent: list[dict[str, Any]]) -> int:
    return sum(4 + litellm.token_counter(model="gpt-4o", text=text_of(m.get("content"))) for m in sent) + 800


def check(calls: list[Call]) -> dict[str, Any]:
    """Items 1-4 over one run's calls: figures and the breaks found."""
    breaks: list[str] = []
    utilisation = []
    turn_states = defaultdict(int)
    cold = [c for c in calls if not c.warm]
    for c in calls:
        where = f"step {c.step}{' warm' if c.warm else ''}"
        used = c.snapshot["total_used"] / c.snapshot["available_budget"]
        if conversation_tokens(c.sent) > c.snapshot["available_budget"]:
            utilisation.append(used)
            if used < 0.8:
                breaks.append(f"{where}: utilisation {used:.0%}")
        state = newest_turn(c.sent, c.received)
        turn_states[state.split(":")[0]] += 1
        if state.startswith("broken"):
            breaks.append(f"{where}: newest turn {state}")
        breaks += [f"{where}: {o}" for o in orphans(c.received)]
        breaks += [f"{where}: {a}" for a in altered_results(c.sent, c.received)]
        breaks += [f"{where}: {w}" for w in told(c)]
    parts = [history_part(c.received) for c in cold]
    identical = sum(p == parts[0] for p in parts[1:])
    prefix = sum(_is_prefix(p, parts[0]) for p in parts[1:])
    # docs/agents.md: a step sends the first step's history part or its beginning; only a loop larger than the
    # per-turn tail (LOOP_TAIL_PCT of the history's room) gets a new window
    larger = [c.step for c, p in zip(cold[1:], parts[1:], strict=True) if not _is_prefix(p, parts[0])]
    recut = [s for s in larger if _recut(parts[s], parts[0])]
    tail = LOOP_TAIL_PCT / 100 * cold[0].snapshot["available_budget"]
    unexplained = [s for s in larger if s not in recut and loop_tokens(cold[s].sent) <= tail]
    if unexplained:
        breaks.append(f"steps {unexplained}: the history part changed while the loop fitted the tail")
    warm = [c for c in calls if c.warm]
    if warm:
        differ = [w.step for w, c in zip(warm, cold, strict=True) if w.received != c.received]
        if differ:
            breaks.append(f"cold != warm at steps {differ}")
    return {
        "calls": len(calls),
        "utilisation": utilisation,
        "newest": dict(turn_states),
        "steps_identical": f"{identical}/{len(parts) - 1}",
        "steps_prefix": f"{prefix}/{len(parts) - 1}",
        "steps_new_window": larger,
        "steps_recut": recut,
        "windows": [json.dumps(c.received) for c in cold],
        "breaks": breaks,
    }


def _is_prefix(part: str, first: str) -> bool:
    """Whether a later step's history part is the first's beginning, its last message perhaps a result cut shorter
    (the provider's cache holds up to it)."""
    later, whole = json.loads(part), json.loads(first)
    if whole[: len(later)] == later:
        return True
    n = len(later)
    return n <= len(whole) and whole[: n - 1] == later[:-1] and _cut_shorter(later[-1], whole[n - 1])


def _recut(part: str, first: str) -> bool:
    """Whether a later step's history part holds the first's messages in order, some results cut anew (a history
    whose stable part is a cut turn has no tail to give: the module is asked again within the room left)."""
    later, whole = json.loads(part), json.loads(first)
    return len(later) <= len(whole) and all(
        a == b or (_cut_shorter(a, b) or _cut_shorter(b, a)) for a, b in zip(later, whole, strict=False)
    )


def _cut_shorter(later: dict[str, Any], first: dict[str, Any]) -> bool:
    if later.get("tool_call_id") is None or later.get("tool_call_id") != first.get("tool_call_id"):
        return False
    text, whole = text_of(later.get("content")), text_of(first.get("content"))
    at = text.rfind(CUT_MARK)
    return at > 0 and whole.startswith(text[:at].rstrip())


def told(c: Call) -> list[str]:
    """What is wrong with the call's cut report (``usage.tda``, and ``X-TDA-Cut`` streamed or not)."""
    wrong = []
    if not c.cut:
        return ["no usage.tda"]
    if c.cut["tokens_sent"] != c.snapshot["total_used"]:
        wrong.append(f"usage.tda tokens_sent {c.cut['tokens_sent']} != the window's {c.snapshot['total_used']}")
    if not c.path.endswith("/messages") and c.cut["messages_sent"] != len(c.received):
        wrong.append(f"usage.tda messages_sent {c.cut['messages_sent']} != {len(c.received)} sent")
    return wrong + cut_header_breaks(c.cut, c.header)


def auxiliary_breaks(h: Harness, profiles: dict[str, tuple[str, int]]) -> list[str]:
    """Every call at the profiles' upstream names a profile's model and fits its window; none went to the default."""
    breaks = [f"{len(h.default.requests)} calls at the service's default upstream"] if h.default.requests else []
    limits = {model: limit for model, limit in profiles.values()}
    for r in h.own.requests:
        if r.body.get("tools"):
            continue
        model = r.body.get("model", "")
        known = next((m for m in limits if m.endswith(model) or model.endswith(m.split("/")[-1])), None)
        if known is None:
            breaks.append(f"an auxiliary call named {model!r}")
            continue
        tokens = conversation_tokens(received_messages(r.path, r.body)) - 800
        if tokens > max(limits[m] for m in limits if m == known):
            breaks.append(f"an auxiliary call of ~{tokens} tokens to {model}")
    return breaks


async def measure(shapes: list[str], data: Path) -> dict[str, Any]:
    with FakeUpstream() as own, FakeUpstream() as default:
        os.environ["ANTHROPIC_API_KEY"] = "sk-fake"  # this process's: sent to the fake on 127.0.0.1 only
        settings = Settings(
            data_dir=data,
            modules_dir=data / "modules",
            mock_model=False,
            module_timeout_s=60.0,
            embedder="hashing",
            model="gpt-4o-mini",
            upstream_base_url=default.base_url,
        )
        async with served(settings) as app:
            for name, (model, limit) in PROFILES.items():
                upstream = {"base_url": own.base_url}
                if model == CLAUDE:  # litellm adds /v1/messages to the root
                    upstream = {"base_url": own.base_url.removesuffix("/v1"), "api_key_env": "ANTHROPIC_API_KEY"}
                await app.profile(name, model=model, context_limit=limit, upstream=upstream, system_prompt="")
            h = Harness(app, own, default)
            results: dict[str, Any] = {}
            started = time.perf_counter()
            primed: set[str] = set()
            for run in runs(shapes):
                if PROFILES[run.profile][0] == CLAUDE and run.shape not in primed:  # see ``primed``
                    primed.add(run.shape)
                    with contextlib.suppress(RuntimeError):  # a refused call is the run's to report
                        await drive(h, dataclasses.replace(run, session=False, stream=False))
                try:
                    results[run.label] = check(await drive(h, run))
                except Exception as exc:  # a refused call is a break, not the bench's end
                    results[run.label] = {"calls": 0, "utilisation": [], "breaks": [f"failed: {exc}"]}
                print(run.label, summary_line(results[run.label]), flush=True)
            stateless_vs_session(results)
            aux = auxiliary_breaks(h, PROFILES)
            await h.http.aclose()
            return {"runs": results, "auxiliary": aux, "seconds": time.perf_counter() - started}


def stateless_vs_session(results: dict[str, Any]) -> None:
    """A session's cold windows are the stateless call's (the window is a function of what was sent and stored)."""
    for label, result in results.items():
        if "/session/" not in label or "windows" not in result:
            continue
        other = results.get(label.replace("/session/", "/stateless/"))
        if other and other.get("windows") and other["windows"] != result["windows"]:
            result["breaks"].append("the session's windows differ from the stateless call's")


def summary_line(result: dict[str, Any]) -> str:
    used = result["utilisation"]
    low = f"{min(used):.0%}/{statistics.median(used):.0%}" if used else "-"
    return (
        f"calls {result['calls']}, utilisation min/median {low}, breaks {len(result['breaks'])}: {result['breaks'][:3]}"
    )


def table(results: dict[str, Any]) -> list[str]:
    """Per shape and endpoint (the Claude profile apart): calls checked, utilisation min / median, runs with a break."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for label, result in results.items():
        shape, endpoint, _, _, profile = label.split("/")
        groups[(shape, endpoint + ("/claude" if profile == "claude" else ""))].append(result)
    lines = []
    for (shape, endpoint), rows in sorted(groups.items()):
        used = [u for r in rows for u in r["utilisation"]]
        low = f"{min(used):.0%} / {statistics.median(used):.0%}" if used else "-"
        broken, calls = sum(bool(r["breaks"]) for r in rows), sum(r["calls"] for r in rows)
        lines.append(f"{shape:9} {endpoint:17} calls {calls:4}  util {low:11}  broken {broken}/{len(rows)}")
    return lines


def main() -> None:
    shapes = os.environ.get("BENCH_SHAPES", ",".join(SHAPES)).split(",")
    with tempfile.TemporaryDirectory() as folder:
        upgrade(f"sqlite+aiosqlite:///{Path(folder) / 'tda.db'}")  # before the loop: alembic runs its own
        figures = asyncio.run(measure(shapes, Path(folder)))
    for run in figures["runs"].values():
        run.pop("windows", None)
    print("\n".join(table(figures["runs"])))
    print(json.dumps({"auxiliary": figures["auxiliary"], "seconds": round(figures["seconds"], 1)}))
    if out := os.environ.get("BENCH_SHAPES_JSON"):
        Path(out).write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
