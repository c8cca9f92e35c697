"""The ``tda`` command."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import Settings

if TYPE_CHECKING:  # imported by the commands that use them: `tda serve` binds before the component loads
    from components.context_window.base import AssemblyContext
    from components.context_window.handler import ContextWindowHandler
    from components.context_window.module_registry import ModuleRegistry
    from components.context_window.snapshot import ContextWindowSnapshot
    from components.context_window.window_type import ContextWindowType

Command = Callable[[argparse.Namespace, Settings], int]


def _registry(settings: Settings) -> ModuleRegistry:
    from .builtins import module_registry

    return module_registry(user_dir=settings.modules_dir).load()


def _load_type(args: argparse.Namespace, registry: ModuleRegistry) -> ContextWindowType:
    from components.context_window.window_type import ContextWindowType

    if args.type_file:
        data = json.loads(Path(args.type_file).read_text(encoding="utf-8"))
        context = registry.validation_context()
        return ContextWindowType.model_validate(data, context=context)
    shipped = {t.id: t for t in registry.window_types()}
    if args.type not in shipped:
        raise ValueError(f"unknown window type {args.type!r}; choose one of {sorted(shipped)} or --type-file")
    return shipped[args.type]


def _embedder(args: argparse.Namespace, settings: Settings) -> Any:
    """The service's embedder (TDA_EMBEDDER), so a session file's history is recalled as the service would; none with
    --no-embedder (by words only, without loading a model)."""
    if args.no_embedder:
        return None
    from .knowledge.embeddings import Embedder

    return Embedder(settings.embedder)


async def _assemble(handler: ContextWindowHandler, ctx: AssemblyContext, window_type: ContextWindowType) -> Any:
    """One assembly; with an embedder, the history's vectors are made first (a one-off run has no later turn for
    which a background job could make them), so recall ranks by meaning as the service's does."""
    from components.context_window.recall.messages import SessionRecall

    if ctx.embedder is not None:
        recall = SessionRecall(ctx.embedder)
        await recall.sync(ctx.session, dense=True)
        ctx = dataclasses.replace(ctx, history_recall=recall)
    return await handler.assemble(ctx, window_type)


def cmd_assemble(args: argparse.Namespace, settings: Settings) -> int:
    from pydantic import ValidationError

    from components.context_window.budget import BudgetExceeded
    from components.context_window.handler import ContextWindowHandler

    from .session_file import SessionFileError, load_session_file

    registry = _registry(settings)
    try:
        window_type = _load_type(args, registry)
        embedder = _embedder(args, settings)
        ctx = load_session_file(Path(args.session), model=args.model, model_limit=args.limit, embedder=embedder)
        handler = ContextWindowHandler(registry, timeout_s=settings.module_timeout_s)
        result = asyncio.run(_assemble(handler, ctx, window_type))
    except (SessionFileError, ValueError, ValidationError, OSError, BudgetExceeded) as exc:
        print(f"tda assemble: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(
            json.dumps(
                {"snapshot": result.snapshot.to_dict(), "messages": result.messages, "tools": result.tools}, indent=2
            )
        )
    else:
        print(format_snapshot(result.snapshot))
    return 0


def format_snapshot(s: ContextWindowSnapshot) -> str:
    rows = [f"{'module':<24}{'status':<9}{'alloc':>9}{'used':>9}{'util':>7}  strategy / reason"]
    for m in s.modules:
        detail = m.reason or m.strategy
        flags = "".join(
            f" [{flag}]"
            for flag, on in (
                ("condensed", m.condensed),
                (f"+{m.surplus_received}", m.surplus_received),
                (f"-{m.surplus_donated}", m.surplus_donated),
            )
            if on
        )
        rows.append(
            f"{m.module_id:<24}{m.status:<9}{m.allocated:>9,}{m.used:>9,}{m.utilisation:>7.0%}  {detail}{flags}"
        )
    head = [
        s.summary(),
        f"type {s.window_type_id} | model {s.model} | limit {s.model_limit:,} ({s.model_limit_source}) "
        f"-> effective {s.effective_limit:,} | reserve {s.output_reserve:,} | available {s.available_budget:,}",
        f"query {s.query_tokens:,} tokens | {s.token_method} | {s.duration_ms:.2f} ms",
        "",
    ]
    tail = ["", "rules fired: " + ("; ".join(s.adjustments_fired) or "none"), "decisions:"]
    return "\n".join(head + rows + tail + [f"  {d}" for d in s.decisions])


def cmd_types(args: argparse.Namespace, settings: Settings) -> int:
    shipped = {t.id: t for t in _registry(settings).window_types()}  # the built-in plugin's and packs'
    if args.action == "list":
        for t in shipped.values():
            default = " (default)" if t.is_default else ""
            print(f"{t.id:<20}{t.name}{default}: {len(t.active_ids)} active modules, reserve {t.output_reserve_pct:g}%")
        return 0
    if args.id and args.id not in shipped:
        print(f"tda types: unknown type {args.id!r}; known: {sorted(shipped)}", file=sys.stderr)
        return 2
    chosen = [shipped[args.id]] if args.id else list(shipped.values())
    data = [t.model_dump(mode="json") for t in chosen]
    print(json.dumps(data[0] if args.action == "show" else data, indent=2))
    return 0


def cmd_modules(args: argparse.Namespace, settings: Settings) -> int:
    registry = _registry(settings)
    for info in registry.infos():
        state = "active" if info.active else "inactive"
        print(f"{info.module_id:<24}{info.source:<9}{info.version:<9}{state:<9}{info.display_name}")
    for error in registry.load_errors:
        print(f"load error [{error.source}] {error.name}: {error.error}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tda", description="Context-window assembly for LLM agent platforms.")
    commands = parser.add_subparsers(dest="command", required=True)

    assemble = commands.add_parser("assemble", help="assemble a context window from a session file")
    assemble.add_argument("--session", required=True, help="session JSON file (see examples/)")
    pick = assemble.add_mutually_exclusive_group()
    pick.add_argument("--type", default="balanced", help="a shipped window type id (default: balanced)")
    pick.add_argument("--type-file", help="a window type JSON file")
    assemble.add_argument("--model", help="model name (litellm); default: the session file's")
    assemble.add_argument("--limit", type=int, help="treat the model's input limit as N tokens")
    assemble.add_argument("--json", action="store_true", help="print the snapshot and messages as JSON")
    assemble.add_argument(
        "--no-embedder", action="store_true", help="rank by words only (default: the TDA_EMBEDDER the service uses)"
    )
    assemble.set_defaults(func=cmd_assemble)

    types = commands.add_parser("types", help="the shipped context window types")
    types.add_argument("action", choices=["list", "show", "export"])
    types.add_argument("id", nargs="?", help="type id (show: required; export: optional)")
    types.set_defaults(func=cmd_types)

    modules = commands.add_parser("modules", help="installed context modules")
    modules.add_argument("action", choices=["list"])
    modules.set_defaults(func=cmd_modules)

    for register in _extension_commands():
        register(commands)
    return parser


def _extension_commands() -> list[Callable[[argparse._SubParsersAction], None]]:
    """Commands contributed by other parts of the application (knowledge store, server)."""
    from .knowledge.cli import register as knowledge_commands  # light: heavy imports happen per command
    from .server_cli import register as server_commands

    return [server_commands, knowledge_commands]


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "types" and args.action == "show" and not args.id:
        print("tda types show: name a type id", file=sys.stderr)
        return 2
    try:
        settings = Settings.from_env()
    except ValueError as exc:  # a TDA_* variable that cannot be used: say which and how, no traceback
        print(f"tda: {exc}", file=sys.stderr)
        return 2
    return args.func(args, settings)


if __name__ == "__main__":
    raise SystemExit(main())
