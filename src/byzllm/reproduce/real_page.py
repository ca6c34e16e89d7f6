"""The Markdown page of a real-model reproduction (``byzllm reproduce NAME --real``).

One page that a reader can check without opening the store: ours with 95% intervals beside
the paper's number where the paper ran the configuration, the questions and how the agents
differ, parse health per stage, how well the scores separate right from wrong answers (the
scorer's AUC, :mod:`byzllm.experiments.consensus.scorer`), and what the run cost (model
calls, tokens, wall time).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from byzllm._files import write_text_atomic
from byzllm.agents import ParseCounts
from byzllm.experiments.consensus.config import ConsensusConfig
from byzllm.runs.reports import format_bounds, format_interval, paper_within

__all__ = ["RealRun", "accused_character", "write_real_monitor_report", "write_real_report"]

_METRICS = (
    ("IAA", "IAA"),
    ("FAA", "FAA"),
    ("BFTI", "BFTI"),
    ("RA", "RA"),
    ("W_IAA", "W IAA"),
    ("W_FAA", "W FAA"),
    ("S_IAA", "S IAA"),
    ("S_FAA", "S FAA"),
    ("H_Majority", "H-Majority"),
)


def _cell(row: Mapping[str, Any], key: str) -> str:
    ours = row.get(key)
    if ours is None:
        return "-"
    low, high = row.get(f"{key}_low"), row.get(f"{key}_high")
    text = f"{ours:.1f}"
    if low is not None and high is not None:
        text += f" [{low:.1f}, {high:.1f}]"
    paper = row.get(f"{key}_paper")
    if paper is not None:
        text += f" / {paper:g}{'' if paper_within(paper, ours, low, high) else ' ✗'}"
    return text


def _agents(config: ConsensusConfig) -> list[str]:
    lines = []
    for group in ("strong", "weak"):
        backend = getattr(config.agents, group)
        lines.append(
            f"- {group}: `{backend.model}`, temperature {backend.temperature:g} with a seed per "
            f"agent, at most {backend.max_tokens} tokens per reply, judging `{backend.judging}`, "
            f"refining `{backend.refining}`"
        )
    return lines


@dataclass(frozen=True)
class RealRun:
    """What every real-model page reports on: the reproduction ``entry``, its ``config``, the
    run folder (the page goes to its ``report/real.md``; the response cache is its
    ``responses.sqlite``) and the wall time of this invocation."""

    entry: Any
    config: Any
    run_dir: Path
    wall_s: float
    #: The command that regenerates the page; ``None``: the ``--real`` one, from the config's
    #: shipped models (a run on ``--model`` passes its own).
    command: str | None = None

    @property
    def page(self) -> Path:
        return self.run_dir / "report" / "real.md"


def write_real_report(
    run: RealRun,
    *,
    rows: Sequence[Mapping[str, Any]],
    summary: Sequence[tuple[Mapping[str, Any], Any]],
    records: Sequence[Mapping[str, Any]],
    planned_questions: int | None = None,
) -> str:
    """Write the page of a real-model SAC reproduction to ``run.page`` and return its text.

    ``planned_questions`` marks a partial report (a run stopped early, reported with
    ``--partial``): the page says how many of the planned questions it covers.
    """
    entry, wall_s = run.entry, run.wall_s
    config: ConsensusConfig = run.config
    questions = {str(r.get("task_id", "")) for r in records} - {""}
    composition = config.compositions[0]
    partial = (
        [
            f"**Partial: {len(questions)} of the {planned_questions} planned questions** "
            "(those finished under every protocol when the run was stopped; rerunning the "
            "command without --partial resumes it).",
            "",
        ]
        if planned_questions is not None
        else []
    )
    lines = [
        f"# {entry.paper}, {entry.table}, on real models",
        "",
        *partial,
        f"{len(questions)} questions ({config.dataset.name}"
        + (f", {_steps_text(config.dataset.steps)}" if config.dataset.name == "synthetic" else "")
        + f"), n = {composition.n} ({composition.strong} strong, {composition.weak} weak, "
        f"{composition.byzantine} {composition.attack} adversary), F = {config.F[0]}, "
        f"T = {config.T[0]}, topologies {', '.join(config.topologies)}.",
        "",
        "How the agents differ:",
        *_agents(config),
        "",
        "Cells: ours [95% interval] / the paper's number where the paper ran this "
        "configuration (✗: the paper's number lies outside our interval). Percent.",
        "",
        "| protocol | topology | " + " | ".join(label for _, label in _METRICS) + " |",
        "|---|---|" + "---|" * len(_METRICS),
    ]
    for row in rows:
        cells = [_cell(row, key) for key, _ in _METRICS]
        lines.append(f"| {row['protocol']} | {row['topology']} | " + " | ".join(cells) + " |")
    lines += ["", "## Parse health (replies that fell back to the parser's default)", ""]
    lines += ["| protocol | stage | replies | fallbacks | rate |", "|---|---|---|---|---|"]
    for meta, _ in summary:
        for stage, entry_ in ParseCounts.of(meta.get("parse")).to_dict().items():
            calls, fallbacks = entry_["calls"], entry_["fallbacks"]
            rate = f"{100 * fallbacks / calls:.1f}%" if calls else "-"
            lines.append(f"| {meta['protocol']} | {stage} | {calls} | {fallbacks} | {rate} |")
    lines += [
        "",
        "## Do the scores separate right from wrong answers?",
        "",
        "AUC of each group's scores (SAC) and self-reported confidences (CP-WBFT) against the "
        "correctness of what they judge: 0.5 is no signal, 1 is perfect; 95% bootstrap "
        "interval over questions.",
        "",
        "| protocol | judged by | AUC | pairs |",
        "|---|---|---|---|",
    ]
    for meta, _ in summary:
        for group, auc in (meta.get("scorer_auc") or {}).items():
            value = "n/a" if auc["auc"] is None else f"{auc['auc']:.2f}"
            if auc["auc"] is not None and auc["low"] is not None:
                value += f" [{auc['low']:.2f}, {auc['high']:.2f}]"
            who = "own confidence" if group == "confidence" else f"{group} agents"
            lines.append(f"| {meta['protocol']} | {who} | {value} | {auc['pairs']} |")
    total_calls = total_tokens = total_saved = total_cached = 0.0
    for meta, _ in summary:
        total_calls += float(meta.get("calls_per_question", 0)) * len(questions)
        total_cached += float(meta.get("cached_calls_per_question", 0)) * len(questions)
        total_tokens += float(meta.get("tokens_per_question", 0)) * len(questions)
        total_saved += float(meta.get("saved_calls_per_question", 0)) * len(questions)
    cost = (
        f"Model calls {total_calls:.0f} (and {total_cached:.0f} answered from the response "
        f"cache, {total_saved:.0f} identical requests answered once), tokens "
        f"{total_tokens:,.0f} (the model calls' only); wall time of this invocation "
        f"{wall_s / 60:.1f} min (a resumed run counts only the units it ran)."
    )
    regenerate = run.command or (
        f"byzllm reproduce {entry.name} --real "
        f"{str(config.agents.strong.model).split('/', 1)[-1]} --real-weak "
        f"{str(config.agents.weak.model).split('/', 1)[-1]} -n {len(questions)}"
    )
    return _write_page(run.page, lines, cost, regenerate)


def _write_page(path: Path, lines: list[str], cost: str, regenerate: str) -> str:
    """The page: ``lines``, then its cost and the command that regenerates it, written to
    ``path``; returns its text."""
    text = "\n".join([*lines, "", "## Cost", "", cost, "", f"Regenerate: `{regenerate}`", ""])
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text)
    return text


def _steps_text(steps: int | tuple[int, int]) -> str:
    if isinstance(steps, int):
        return f"{steps} step" + ("" if steps == 1 else "s")
    return f"{steps[0]}-{steps[1]} steps"


def _rate(value: Any, low: Any, high: Any) -> str:
    if value is None:
        return "-"
    text = f"{100 * value:.1f}"
    return text + (f" [{100 * low:.1f}, {100 * high:.1f}]" if low is not None else "")


def _cache_tokens(path: Path) -> tuple[int, int, int] | None:
    """(completions, prompt tokens, completion tokens) stored in a response cache, or ``None``
    without one: the tokens the server actually processed (a cache hit costs none)."""
    import json
    import sqlite3

    if not path.is_file() or path.stat().st_size == 0:
        return None
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            values = [row[0] for row in conn.execute("SELECT value FROM completions")]
    except sqlite3.Error:
        return None
    prompt = completion = 0
    for value in values:
        usage = json.loads(value).get("usage") or {}
        prompt += int(usage.get("input_tokens") or 0)
        completion += int(usage.get("output_tokens") or 0)
    return len(values), prompt, completion


def accused_character(game: Mapping[str, Any]) -> int | None:
    """The character a monitored WhoDunit game's last accusation named, read from its
    transcript (the game record keeps the outcome, not whom it accused), or ``None``."""
    for turn in reversed(game.get("transcript") or []):
        try:
            action = json.loads(str(turn.get("action", "")))
        except ValueError:
            continue
        if isinstance(action, dict) and action.get("kind") == "accuse":
            who = action.get("character")
            return who if isinstance(who, int) and not isinstance(who, bool) else None
    return None


def _random_baseline_note(probabilities: Mapping[str, float]) -> str:
    """What the random baseline did: its per-turn reset probability per role, chosen on the
    validation games as the monitors' thresholds are (the rogue-agents paper, App. D.2)."""
    chosen = ", ".join(f"{role} {p:.2f}" for role, p in sorted(probabilities.items()))
    text = (
        "The random baseline resets at each turn with a probability chosen on the validation "
        f"games, as the monitors' thresholds are (App. D.2; the largest expected gain, ties to "
        f"the smallest probability): {chosen}."
    )
    if not any(probabilities.values()):
        text += (
            " At 0 it never resets, so `random-1` plays exactly as no intervention. A random "
            "reset's expected gain on validation is the base rate minus each game's outcome, "
            "weighted by the chance of a reset in the game; when the validation games all have "
            "one length that is zero at every probability, and the tie goes to 0."
        )
    return text


def _paper_gains(test: Sequence[dict[str, Any]]) -> str:
    """The end of the sentence that lists the paper's Fig. 4 gains, each marked ✗ when it lies
    outside our interval of monitor-1 − none, as the SAC page marks its cells: a paper number
    beside an interval that misses it must say so. The bounds are compared as the page prints
    them (one decimal), so a mark never contradicts the numbers beside it."""
    from byzllm.experiments.monitor.ablations import success_difference

    from .monitor import FIG4_GAINS

    d = success_difference(test, "monitor-1", "none")
    if d is None:
        return "): " + ", ".join(f"{model} {gain:+g}" for model, gain in FIG4_GAINS.items())
    low, high = round(100 * d.low, 1), round(100 * d.high, 1)
    marked = ", ".join(
        f"{model} {gain:+g}{'' if low <= gain <= high else ' ✗'}"
        for model, gain in FIG4_GAINS.items()
    )
    return f"; ✗: outside our interval of monitor-1 − none): {marked}"


def _logprob_counts(games: Sequence[Mapping[str, Any]]) -> tuple[int, int, int]:
    """(turns read, turns without log-probabilities, games recording the stage) of the
    ``logprobs`` parse stage; records that predate the stage lack it."""
    read = unread = recording = 0
    for g in games:
        stage = (g.get("parse") or {}).get("logprobs")
        if isinstance(stage, Mapping):
            recording += 1
            read += int(stage.get("calls", 0))
            unread += int(stage.get("fallbacks", 0))
    return read, unread, recording


def _logprobs_line(read: int, unread: int, recording: int, games: int) -> str:
    """The ``logprobs`` stage on the page: a turn without log-probabilities at its decision
    positions is one the monitor reads as no uncertainty, a silent default like a passed
    move; records that do not count the stage are said not to, rather than shown as zero."""
    if not recording:
        return (
            "Turns without log-probabilities at their decision positions (the monitor reads "
            "them as no uncertainty): not counted in these games' records."
        )
    of = f" (in the {recording} of {games} games that count them)" if recording < games else ""
    rate = f" ({100 * unread / read:.1f}%)" if read else ""
    return (
        f"Valid moves the monitor read {read}{of}, without log-probabilities at their "
        f"decision positions {unread}{rate} (the monitor reads those as no uncertainty)."
    )


def write_real_monitor_report(
    run: RealRun,
    *,
    games: Sequence[dict[str, Any]],
    collected: Sequence[dict[str, Any]],
    selections: Sequence[Any],
    controls: Sequence[dict[str, Any]],
    random_probabilities: Mapping[str, float] | None = None,
) -> str:
    """The page of a real-model WhoDunit reproduction (``byzllm reproduce ra-fig4 --real``):
    Success-Rate per condition and the gains over no intervention with 95% intervals beside
    the paper's, what the monitors were trained on (real games only), parse health, the
    accusations' spread over characters, and the cost (the tokens the response cache
    holds). Writes ``run.page``, returns the text."""
    entry, config, wall_s = run.entry, run.config, run.wall_s
    from collections import Counter

    from byzllm.experiments.monitor.ablations import success_difference
    from byzllm.experiments.monitor.environments import get_environment
    from byzllm.experiments.monitor.outcomes import outcome_rows

    env = get_environment(config.env)
    test = [g for g in games if g.get("split", "test") == "test"]
    game = config.game
    lines = [
        f"# {entry.paper[:1].upper()}{entry.paper[1:]}, {entry.table}, on a real model",
        "",
        f"WhoDunitEnv-{game.variant.capitalize()}, {game.n_suspects} suspects, "
        f"{game.n_attributes} properties, {game.max_turns} turns; every player "
        f"`{config.model}` at temperature 0, at most {config.max_tokens} tokens per reply, "
        f"decoding `{config.decoding}`, prompt `{config.prompt}`, final move "
        f"`{config.final_move}`, {config.top_logprobs} top log-probabilities. "
        f"{len({g['game_id'] for g in test})} test games, {config.repeats} run(s) per "
        "condition.",
        "",
        "## Success-Rate per condition",
        "",
        "Percent, 95% bootstrap interval over test games.",
        "",
        "| condition | games | Success-Rate | accused someone | Game-Length | resets per game |",
        "|---|---|---|---|---|---|",
    ]
    for row in outcome_rows(test, env.metrics):
        rows_c = [g for g in test if g["condition"] == row["condition"]]
        accused = sum(bool(g.get("accused")) for g in rows_c)
        resets = sum(int(g.get("resets", 0)) for g in rows_c) / max(1, len(rows_c))
        length = row.get("game_length")
        rate = _rate(*(row.get(f"success_rate{end}") for end in ("", "_low", "_high")))
        lines.append(
            f"| {row['label']} | {row['games']} | {rate} | {accused} of {len(rows_c)} | "
            f"{'-' if length is None else f'{length:.1f}'} | {resets:.2f} |"
        )
    lines += [
        "",
        "## Gains (points of Success-Rate)",
        "",
        "Paired over test games, 95% bootstrap interval. The paper's gain of the monitor with "
        f"one reset over none (§5, Fig. 4, 10 suspects{_paper_gains(test)}.",
        "",
        "| comparison | gain | 95% interval | games |",
        "|---|---|---|---|",
    ]
    for a, b in (("monitor-1", "none"), ("random-1", "none"), ("monitor-1", "random-1")):
        d = success_difference(test, a, b)
        if d is None:
            continue
        lines.append(
            f"| {a} − {b} | {format_interval(d.value, scale=100, signed=True)} | "
            f"{format_bounds(d.low, d.high, scale=100, signed=True)} | {d.n} |"
        )
    for row in controls:
        if row.get("verdict") != "n/a":
            lines.append(f"| {row['comparison']} | … | {row.get('sentence', '')} | |")
    if random_probabilities:
        lines += ["", _random_baseline_note(random_probabilities)]
    by_split: dict[str, list[dict[str, Any]]] = {}
    for g in collected:
        by_split.setdefault(str(g.get("split")), []).append(g)
    trained = ", ".join(
        f"{split} {_games_and_plays(rows_)} ({sum(bool(g.get('success')) for g in rows_)} "
        "successes)"
        for split, rows_ in sorted(by_split.items(), key=lambda kv: kv[0] != "train")
    )
    lines += [
        "",
        "## The monitors (trained and selected on real games only)",
        "",
        f"Collected with no intervention on this model: {trained}. Per role, the features, "
        "polynomial degree and threshold chosen on the validation games (App. D.2), with the "
        "expected gain there and the base success rate.",
        "",
        "| role | features | degree | threshold | validation gain | base rate | train turns |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in selections:
        lines.append(
            f"| {s.role} | {', '.join(s.features)} | {s.degree} | {s.threshold:.2f} | "
            f"{format_interval(s.gain, scale=100, signed=True)} | "
            f"{format_interval(s.base_rate, scale=100)} | {s.n_train_turns} |"
        )
    every = [*collected, *test]
    moves = sum(int(((g.get("parse") or {}).get("move") or {}).get("calls", 0)) for g in every)
    fallbacks = sum(
        int(((g.get("parse") or {}).get("move") or {}).get("fallbacks", 0)) for g in every
    )
    rejected = sum(int(g.get("parse_failures", 0)) for g in every)
    read, unread, recording = _logprob_counts(every)
    accused_ids = Counter(who for who in (accused_character(g) for g in test) if who is not None)
    spread = ", ".join(f"character {k}: {v}" for k, v in sorted(accused_ids.items()))
    lines += [
        "",
        "## Parse health",
        "",
        f"Agent turns {moves}, passed for want of a valid move {fallbacks}"
        + (f" ({100 * fallbacks / moves:.1f}%)" if moves else "")
        + f"; replies rejected and re-prompted {rejected}.",
        "",
        _logprobs_line(read, unread, recording, len(every)),
        "",
        f"Whom the test games accused (every condition): {spread or 'nobody'}.",
    ]
    sent = sum(int((g.get("requests") or {}).get("requests", 0)) for g in every)
    cached = sum(int((g.get("requests") or {}).get("cached", 0)) for g in every)
    tokens = _cache_tokens(run.run_dir / "responses.sqlite")
    token_text = (
        ""
        if tokens is None
        else f"; the server generated {tokens[0]} completions, {tokens[1]:,} prompt and "
        f"{tokens[2]:,} completion tokens"
    )
    cost = (
        f"Model requests {sent} (and {cached} answered by the response cache: requests "
        "identical to ones already answered in this run, the turns a condition plays exactly "
        "as another did, such as those before a monitor's first reset or every turn of a "
        f"condition that never resets){token_text}; wall time of this invocation "
        f"{wall_s / 60:.1f} min (a resumed run counts only what it ran)."
    )
    regenerate = run.command or (
        f"byzllm reproduce {entry.name} --real {str(config.model).split('/', 1)[-1]}"
    )
    return _write_page(run.page, lines, cost, regenerate)


def _games_and_plays(rows: list[dict[str, Any]]) -> str:
    """``"12 games"``, or ``"12 games, 36 plays"`` when games were played more than once: the
    tables above count distinct games, as every report does."""
    from byzllm.monitor.dataset import game_counts

    counts = game_counts(rows)
    text = f"{counts['distinct_games']} games"
    if counts["plays"] == counts["distinct_games"]:
        return text
    return f"{text}, {counts['plays']} plays"
