"""Running module code so that no module can break, hang, stall or poison a turn.

* Every call is driven step by step from outside the module: each synchronous step is timed, which is
  exactly how long the module held the event loop (``blocked_s``). A module whose steps take longer than its
  timeout is recorded "timeout" and its result discarded, even though nothing could interrupt it.
* A step is charged the time it held the loop less the time the loop's thread waited for a CPU that other
  processes had (``waited_for_a_cpu``: Linux's run-queue wait, ``/proc/thread-self/schedstat``). On a loaded
  machine a step that computes 0.4 s can hold the loop 2.3 s (session 60: the history's fill, 2.257 s at load
  ~36); that wait is the machine's, not the module's, and the turn has paid it by then, so discarding the finished
  result would only lose the history the fill gathered (the window falls back to the allocation's, 3.4K of 14K
  tokens in Balanced at 16K) and make the window differ run to run. What is charged is the module's own doing:
  its CPU, and its sleeps and blocking calls (a thread blocked on I/O, a lock or ``time.sleep`` is not waiting for
  a CPU), so a module that computes or blocks past its timeout is still cut off, loaded or not. Where the wait is
  not known (not Linux) it counts as 0: every step is charged its wall time, as before. Not excluded: a wait for the
  GIL (this process's own work) and a wait on another of its threads that the load slowed.
* A call that awaits is bound by wall time: when it has awaited ``timeout_s`` (the time other modules held the loop
  added) it is cancelled, loaded or not: a hung call cannot be told from a slow one.
* Most module calls finish in their first step; those run inline (no task). A call that awaits becomes a
  task, and the timeout is enforced from outside it: when the deadline passes the task is cancelled, and a
  task that ignores the cancellation is abandoned (left to finish on its own) and recorded "timeout".
* Every call runs in a context of its own (a copy of the caller's), the same one for all its steps: a step run
  inline and the rest run in a task would otherwise see two contexts, so a context variable set before an
  ``await`` could not be reset after it (litellm's ``is_internal_call``: every model call failed), and what a
  module set would leak into the turn.
* Any ``Exception``, and a ``CancelledError`` the module raised itself (not one from the caller), is a
  failure of that module; a caller's cancellation still cancels the turn.
* What a module returns is checked at the boundary: a ``Contribution`` with a known placement and units of
  text, messages or tools, or ``signals()`` as a mapping of names to plain values.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import math
import os
import threading
from collections.abc import Coroutine, Generator, Hashable, Iterable, Mapping
from dataclasses import dataclass
from time import perf_counter
from types import MappingProxyType
from typing import Any, TypeVar

from .base import PLACEMENTS, Contribution

_Key = TypeVar("_Key", bound=Hashable)  # whatever names a call: its outcome comes back under it

log = logging.getLogger(__name__)

CANCEL_GRACE_S = 0.05
"""How long a cancelled module may take to stop before it is abandoned."""
BLOCKING_WARN_S = 0.05
"""Holding the event loop longer than this in one call is flagged (every other request waits meanwhile)."""

_SCHEDSTAT = "/proc/thread-self/schedstat"
"""Linux's scheduler figures for the calling thread: time on a CPU, time runnable but waiting for one (ns), slices."""

_abandoned: set[asyncio.Task[Any]] = set()
"""Tasks of modules that ignored cancellation, until their coroutine is closed (kept referenced meanwhile)."""


@dataclass
class Outcome:
    status: str  # "ok", "failed" or "timeout"
    value: Any = None
    reason: str = ""
    blocked_s: float = 0.0
    """Time the call held the event loop (the sum of its synchronous steps)."""
    waited_s: float = 0.0
    """Of ``blocked_s``, the time the loop's thread waited for a CPU other processes had (not charged to it)."""


class _Descriptor:
    """A file descriptor closed when nothing holds it (a thread's local storage goes with the thread)."""

    __slots__ = ("fd",)

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_RDONLY)

    def __del__(self) -> None:
        os.close(self.fd)


class _Schedstat(threading.local):
    """Each thread's own open schedstat file (a thread reads only its own figures), closed with the thread."""

    file: _Descriptor | None = None
    opened = False


_schedstat = _Schedstat()


def waited_for_a_cpu() -> float:
    """Seconds the calling thread has spent runnable but waiting for a CPU (other processes had it), since it
    started; 0.0 where the system does not say. ~2 us a read."""
    if not _schedstat.opened:
        _schedstat.opened = True
        with contextlib.suppress(OSError):
            _schedstat.file = _Descriptor(_SCHEDSTAT)  # kept open: read at every step
    if _schedstat.file is None:
        return 0.0
    try:
        return int(os.pread(_schedstat.file.fd, 128, 0).split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        _schedstat.file = None
        return 0.0


class _Driver:
    """Steps a module's coroutine, adding up the time each step takes and the part of it spent waiting for a CPU."""

    __slots__ = ("abandoned", "blocked", "cancelled_by_us", "coro", "waited")

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.coro = coro
        self.blocked = 0.0
        self.waited = 0.0
        self.cancelled_by_us = False
        self.abandoned = False

    @property
    def charged(self) -> float:
        """The time held against the timeout: the loop held, less the waits for a CPU."""
        return self.blocked - self.waited

    def step(self, value: Any = None, exc: BaseException | None = None) -> Any:
        waited, started = waited_for_a_cpu(), perf_counter()
        try:
            return self.coro.send(value) if exc is None else self.coro.throw(exc)
        finally:
            held = perf_counter() - started
            self.blocked += held
            self.waited += min(held, max(0.0, waited_for_a_cpu() - waited))


class _Rest:
    """The rest of a call whose first step ran inline, as an awaitable a task can drive."""

    def __init__(self, driver: _Driver, pending: Any) -> None:
        self.driver = driver
        self.pending = pending

    def __await__(self) -> Generator[Any, Any, Any]:
        yielded = self.pending
        while True:
            try:
                value, exc = (yield yielded), None
            except BaseException as thrown:  # cancellation, delivered by the task
                if self.driver.abandoned:  # it ignored one cancellation: stop stepping it, close it
                    _close(self.driver.coro)
                    raise
                value, exc = None, thrown
            try:
                yielded = self.driver.step(value, exc)
            except StopIteration as stop:
                return stop.value


async def _finish(rest: _Rest) -> Any:
    return await rest


def _close(coro: Coroutine[Any, Any, Any]) -> None:
    with contextlib.suppress(Exception):  # "coroutine ignored GeneratorExit": it is not stepped again either way
        coro.close()


def describe_error(exc: BaseException) -> str:
    """The error as a log line or a snapshot reads it: its type, and its message when it has one ("TimeoutError")."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


async def run_calls(calls: Mapping[_Key, Coroutine[Any, Any, Any]], timeout_s: float) -> dict[_Key, Outcome]:
    """Run module calls concurrently, each under ``timeout_s``; never raises for a module's fault."""
    outcomes: dict[_Key, Outcome] = {}
    pending: dict[asyncio.Task[Any], tuple[_Key, _Driver]] = {}
    loop = asyncio.get_running_loop()
    for key, coro in calls.items():
        driver = _Driver(coro)
        context = contextvars.copy_context()
        try:
            first = context.run(driver.step)
        except StopIteration as stop:
            outcomes[key] = _judge(driver, timeout_s, value=stop.value)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # CancelledError here is the module's own: nobody cancelled it
            outcomes[key] = _judge(driver, timeout_s, error=exc)
        else:
            pending[loop.create_task(_finish(_Rest(driver, first)), context=context)] = (key, driver)
    if pending:
        await _wait(pending, timeout_s, outcomes)
    return outcomes


async def _wait(
    pending: dict[asyncio.Task[Any], tuple[_Key, _Driver]], timeout_s: float, outcomes: dict[_Key, Outcome]
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    try:
        while pending:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            blocked_before = sum(d.blocked for _, d in pending.values())
            done, _ = await asyncio.wait(set(pending), timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                key, driver = pending.pop(task)
                outcomes[key] = _judge_task(task, driver, timeout_s)
            for task, (_, driver) in list(pending.items()):
                if driver.charged > timeout_s:  # it keeps holding the loop: no deadline can pass meanwhile
                    _cancel(task, driver)
            # Time a module held the loop is not time the others had: extend their deadline by it.
            deadline += max(0.0, sum(d.blocked for _, d in pending.values()) - blocked_before)
    except asyncio.CancelledError:  # the caller cancelled the turn: stop every module, then let it propagate
        for task, (_, driver) in pending.items():
            _cancel(task, driver)
        raise
    if not pending:
        return
    for task, (_, driver) in pending.items():
        _cancel(task, driver)
    done, still = await asyncio.wait(set(pending), timeout=CANCEL_GRACE_S)
    for task in done:
        key, driver = pending[task]
        outcomes[key] = _outcome("timeout", driver, reason=f"took longer than {timeout_s:g} s")
        task.exception() if not task.cancelled() else None  # retrieved: no "never retrieved" warning
    for task in still:
        key, driver = pending[task]
        driver.abandoned = True
        task.cancel()  # delivered at its next wake-up: the module's coroutine is closed, never stepped again
        _abandoned.add(task)
        task.add_done_callback(_forget)
        outcomes[key] = _outcome(
            "timeout", driver, reason=f"took longer than {timeout_s:g} s and ignored cancellation; abandoned"
        )


def _cancel(task: asyncio.Task[Any], driver: _Driver) -> None:
    driver.cancelled_by_us = True
    task.cancel()


def _forget(task: asyncio.Task[Any]) -> None:
    _abandoned.discard(task)
    if not task.cancelled():
        task.exception()


def _judge_task(task: asyncio.Task[Any], driver: _Driver, timeout_s: float) -> Outcome:
    if task.cancelled():
        if driver.cancelled_by_us:
            return _outcome("timeout", driver, reason=_too_long(driver, timeout_s))
        return _judge(driver, timeout_s, error=asyncio.CancelledError())
    exc = task.exception()
    if exc is not None:
        if driver.cancelled_by_us:
            return _outcome("timeout", driver, reason=_too_long(driver, timeout_s))
        return _judge(driver, timeout_s, error=exc)
    return _judge(driver, timeout_s, value=task.result())


def _too_long(driver: _Driver, timeout_s: float) -> str:
    if driver.charged > timeout_s:
        waits = f", {driver.waited:.2f} s more waiting for a CPU" if driver.waited >= 0.005 else ""
        return f"blocked the event loop for {driver.charged:.2f} s (limit {timeout_s:g} s{waits})"
    return f"took longer than {timeout_s:g} s"


def _judge(driver: _Driver, timeout_s: float, *, value: Any = None, error: BaseException | None = None) -> Outcome:
    if driver.charged > timeout_s:
        return _outcome("timeout", driver, reason=_too_long(driver, timeout_s))
    if error is not None:
        return _outcome("failed", driver, reason=describe_error(error))
    return _outcome("ok", driver, value)


def _outcome(status: str, driver: _Driver, value: Any = None, reason: str = "") -> Outcome:
    return Outcome(status, value, reason, blocked_s=driver.blocked, waited_s=driver.waited)


# --- what modules hand back ------------------------------------------------------------------------


def checked_contribution(value: Any, module_id: str) -> Contribution:
    """``value`` as a well-formed, read-only Contribution of ``module_id``; ValueError says what is wrong."""
    if not isinstance(value, Contribution):
        raise ValueError(f"returned {type(value).__name__}, not a Contribution")
    if value.placement not in PLACEMENTS:
        raise ValueError(f"placement {value.placement!r} is not one of {', '.join(PLACEMENTS)}")
    if value.trim_from not in ("start", "end"):
        raise ValueError(f"trim_from {value.trim_from!r} is not 'start' or 'end'")
    for name in ("header", "joiner", "strategy"):
        if not isinstance(getattr(value, name), str):
            raise ValueError(f"{name} must be text")
    if type(value.condensed) is not bool or type(value.left_out) is not bool:
        raise ValueError("condensed and left_out must be True or False")
    units = _units(value.units)
    if type(value.volatile_tail) is not int or not 0 <= value.volatile_tail <= len(units):
        raise ValueError("volatile_tail must be a whole number of units, at most how many there are")
    metadata = _plain(value.metadata, "metadata")
    return value.replace(units=units, metadata=metadata, module_id=module_id, tokens=0)


def _units(units: Any) -> tuple[tuple[Any, ...], ...]:
    """A fresh tuple of tuples: the module keeps no handle on what is measured (the items themselves are
    immutable, and the handler's measuring rejects any that is not text, a Message or a ToolSchema)."""
    if type(units) is tuple and all(type(unit) is tuple for unit in units):
        return units  # already immutable all the way down to the items
    if isinstance(units, str | bytes | Mapping) or not isinstance(units, Iterable):
        raise ValueError("units must be a sequence of units (tuples of text, Message or ToolSchema)")
    out = []
    for unit in units:
        if isinstance(unit, str | bytes | Mapping) or not isinstance(unit, Iterable):
            raise ValueError(f"a unit must be a tuple of items, got {type(unit).__name__}")
        out.append(tuple(unit))
    return tuple(out)


def _plain(value: Any, what: str) -> dict[str, Any]:
    """A JSON-safe deep copy of a mapping (snapshots are stored and sent as JSON)."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{what} must be a mapping")
    if not value:
        return {}
    try:
        return _copied(value, 0)  # what the JSON round trip below returns, for the usual shapes
    except _Unusual:
        pass
    try:
        return json.loads(json.dumps(dict(value), allow_nan=False, default=_json_default))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be plain JSON data: {exc}") from None


class _Unusual(Exception):
    """Data ``_copied`` leaves to the JSON round trip (which converts it, or says why it is not JSON)."""


_ATOMS = (str, int, bool, type(None))


def _copied(value: Any, depth: int) -> Any:
    """A copy of plain data equal to ``json.loads(json.dumps(value))``: dicts with text keys, lists and tuples
    (as lists), text, integers, finite floats, booleans and None, nested at most 32 deep. Anything else
    (other keys or types, NaN, a cycle) raises ``_Unusual``. A metadata's round trip through JSON cost more
    than any module's own work on a small turn; this is ~4x cheaper."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is float:
        if not math.isfinite(value):
            raise _Unusual
        return value
    if depth > 32:
        raise _Unusual
    if kind is dict or kind is MappingProxyType:
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _Unusual
            out[key] = _copied(item, depth + 1)
        return out
    if kind is list or kind is tuple:
        return [_copied(item, depth + 1) for item in value]
    raise _Unusual


def _json_default(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple | frozenset | set):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON data")


SIGNAL_TYPES: dict[str, type | tuple[type, ...]] = {"top_score": (int, float), "eligible_cases": int}
"""Signals the conditions read, and the type each must have."""


def checked_signals(value: Any) -> tuple[dict[str, Any], list[str]]:
    """The valid part of a ``signals()`` result, and what was wrong with the rest."""
    if not isinstance(value, Mapping):
        return {}, [f"signals() returned {type(value).__name__}, not a mapping"]
    good: dict[str, Any] = {}
    bad: list[str] = []
    for key, item in value.items():
        expected = SIGNAL_TYPES.get(key, (str, int, float, bool, type(None)))
        if not isinstance(key, str):
            bad.append(f"signal name {key!r} is not text")
        elif (isinstance(item, bool) and key in SIGNAL_TYPES) or not isinstance(item, expected):
            bad.append(f"signal {key!r} = {item!r:.80} has the wrong type")
        elif isinstance(item, float) and not math.isfinite(item):
            bad.append(f"signal {key!r} is not a finite number")
        else:
            good[key] = item
    return good, bad
