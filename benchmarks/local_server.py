"""byzllm's local server against llama-cpp-python's own, on the same model, side by side.

Both are OpenAI-compatible servers over llama-cpp-python on 127.0.0.1 with one thread
(``--threads``); the only difference is how a completion is produced:

* **byzllm** (``byzllm serve``, :mod:`byzllm.llm._llama_http`): the model loaded without
  ``logits_all``; top-k log-probabilities read from the last position's logits in numpy;
* **llama-cpp-python's server** (``python -m llama_cpp.server``, needs its ``[server]`` extra):
  ``logits_all`` on, which log-probabilities need there.

The workload is what byzllm's experiments send: anchored SAC judging (one token, top-20
log-probabilities; five judged answers to one question), a monitored reply (up to 64 tokens
with top-5 log-probabilities, as WhoDunit's monitor reads), and a plain reply (up to 64
tokens, no log-probabilities); replies are timed per generated token. Each server runs the
workload ``--repeats`` times in alternation (A B A B ...) so that a change in the machine's
load hits both; the figure per workload is the median over repeats, and the ratio is
llama-cpp-python's time over byzllm's.

Run: ``python benchmarks/local_server.py [--model qwen0.5b] [--repeats 3]``. Needs the
``local`` extra (and ``llama-cpp-python[server]`` for the comparison). Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
import urllib.request
from typing import Any

from byzllm.llm import LocalServer

QUESTION = (
    "Ada picks 108 apples in the orchard. 3 apples turn out to be rotten and are thrown "
    "away. Ada picks 59 more apples. How many apples are there at the end?"
)
SOLUTION = "108 - 3 = 105 apples are left. 105 + 59 = 164.\nAnswer: 164"


class LlamaCppPythonServer(LocalServer):
    """llama-cpp-python's own server, started and stopped like ours."""

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.gguf.path),
            "--model_alias",
            self.model_name,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.context_tokens),
            "--n_threads",
            str(self.threads),
            "--n_threads_batch",
            str(self.threads),
            "--logits_all",
            "true",
            "--verbose",
            "false",
        ]


def _post(base_url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=900) as response:
        reply: dict[str, Any] = json.load(response)
    return reply


def _judge_messages(candidate: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You check answers. Reply with exactly one word: Yes or No."},
        {
            "role": "user",
            "content": f"Problem: {QUESTION}\nYour own worked solution:\n{SOLUTION}\n"
            f"The answer to judge: {candidate}\nIs it correct? Reply Yes or No.",
        },
    ]


def _workload(server: LocalServer, repeat: int) -> dict[str, float]:
    """Seconds per workload; prompts differ per repeat so no server reuses a whole prompt."""
    model = server.model_name
    times: dict[str, float] = {}
    started = time.perf_counter()
    for candidate in ("164", "161", "107", "164.0", "58"):
        _post(
            server.base_url,
            {
                "model": model,
                "messages": _judge_messages(f"{candidate} (repeat {repeat})"),
                "temperature": 0,
                "max_tokens": 1,
                "logprobs": True,
                "top_logprobs": 20,
            },
        )
    times["judge_5_calls_s"] = time.perf_counter() - started
    for name, extra in (
        ("monitored_s_per_token", {"logprobs": True, "top_logprobs": 5}),
        ("plain_s_per_token", {}),
    ):
        started = time.perf_counter()
        reply = _post(
            server.base_url,
            {
                "model": model,
                "messages": [
                    {
                        "role": "user",
                        "content": f"Repeat {repeat}. Count from 1 to 100, separated by spaces.",
                    }
                ],
                "temperature": 0,
                "max_tokens": 64,
                # llama-cpp-python's server defaults to 1.1 (its Python API, and ours, to
                # 1.0): the same setting on both, so both generate the same tokens.
                "repeat_penalty": 1.0,
                **extra,
            },
        )
        elapsed = time.perf_counter() - started
        times[name] = elapsed / max(1, reply["usage"]["completion_tokens"])
    return times


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # the parent package is missing
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen0.5b")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    # llama_cpp.server imports without its web stack; uvicorn and starlette fail only later.
    missing = [m for m in ("llama_cpp.server", "uvicorn", "starlette") if not _importable(m)]
    if missing:
        sys.exit(
            f"needs llama-cpp-python's server ({', '.join(missing)} missing): "
            "pip install 'llama-cpp-python[server]'"
        )
    runs: dict[str, list[dict[str, float]]] = {"byzllm": [], "llama_cpp_python": []}
    for repeat in range(args.repeats):
        for name, kind in (("byzllm", LocalServer), ("llama_cpp_python", LlamaCppPythonServer)):
            with kind(args.model, port=0, threads=args.threads) as server:
                runs[name].append(_workload(server, repeat))
            print(f"repeat {repeat + 1}/{args.repeats} {name}: {runs[name][-1]}", file=sys.stderr)
    keys = ("judge_5_calls_s", "monitored_s_per_token", "plain_s_per_token")
    medians = {
        name: {key: round(statistics.median(r[key] for r in results), 3) for key in keys}
        for name, results in runs.items()
    }
    ratios = {
        key: round(medians["llama_cpp_python"][key] / medians["byzllm"][key], 2) for key in keys
    }
    print(
        json.dumps(
            {
                "benchmark": "local_server",
                "model": args.model,
                "threads": args.threads,
                "repeats": args.repeats,
                "load_average_1m": round(os.getloadavg()[0], 2),
                "median_s": medians,
                "speedup": ratios,
            }
        )
    )


if __name__ == "__main__":
    main()
