"""What finding the parameters litellm leaves out costs a call (`make bench`, issue 34 item 2; tda/llm.py
``unsent_params``): tda builds the request litellm would send (its ``return_raw_request``, no call made) once per
model, upstream and set of parameter names, in a worker thread, and keeps the answer.

For each provider (an OpenAI model at an OpenAI-compatible base URL, Claude at Anthropic's API): the first build
(the provider's code imported by litellm then), a build for a new set of names, and the cached lookup (median of
LOOKUPS). tda's start-up warm-up (``llm.preload``: litellm imported, one request built) runs before timing, as
`tda serve` runs it. Nothing is sent anywhere.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tda.llm import Upstream, preload, unsent_params  # noqa: E402

LOOKUPS = int(os.environ.get("BENCH_UNSENT_LOOKUPS", "2000"))
TARGETS = [
    ("openai-compatible", "llama3", Upstream(base_url="http://127.0.0.1:9/v1")),
    ("anthropic", "anthropic/claude-sonnet-4-5", Upstream()),
]
PARAMS = {"temperature": 0.2, "top_p": 0.9, "thinking": {"type": "enabled", "budget_tokens": 1024}, "user": "u"}


async def _ms(model: str, params: dict[str, object], upstream: Upstream) -> float:
    started = time.perf_counter()
    await unsent_params(model, params, upstream)
    return (time.perf_counter() - started) * 1000


async def main() -> None:
    await preload()  # what `tda serve` does at start-up
    print(f"{'target':<20} {'first build':>12} {'new names':>10} {'cached p50':>11}  left out")
    for name, model, upstream in TARGETS:
        first = await _ms(model, PARAMS, upstream)
        other = await _ms(model, {**PARAMS, "seed": 7}, upstream)
        cached = statistics.median([await _ms(model, PARAMS, upstream) for _ in range(LOOKUPS)])
        _, _, unsent = await unsent_params(model, PARAMS, upstream)
        print(f"{name:<20} {first:>10.1f}ms {other:>8.1f}ms {cached * 1000:>9.1f}us  {', '.join(unsent)}")


if __name__ == "__main__":
    asyncio.run(main())
