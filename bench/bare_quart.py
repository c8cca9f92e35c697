"""The framework's ceiling: a bare Quart app serving a fixed JSON body, on the same server stack as `tda serve`
(hypercorn, uvloop, no access log). service_bench.py runs it beside tda and compares req/s.

    python bench/bare_quart.py PORT BODY.json
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any


async def main(port: int, body: Any) -> None:
    from hypercorn.asyncio import serve
    from hypercorn.config import Config
    from quart import Quart

    app = Quart(__name__)

    @app.get("/v1/context-window-types")
    async def types() -> Any:
        return body

    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    await serve(app, config)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tda.server_cli import run_event_loop

    port, body = int(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())
    with contextlib.suppress(KeyboardInterrupt):
        run_event_loop(main(port, body))
