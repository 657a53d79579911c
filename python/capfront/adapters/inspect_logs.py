"""inspect-ai evaluation logs (``.eval`` or ``.json``), read with inspect_ai's own
reader (``inspect_ai.log.read_eval_log``; optional extra ``capfront[inspect]``).

Mapping: model = ``log.eval.model``, benchmark = ``log.eval.task``, prompt =
``<task>/<sample.id>``, generation = ``sample.epoch``, score = the sample's score
from the first scorer (or ``score="scorer"`` / ``"scorer.key"`` for dict values),
turned into a number by ``inspect_ai.scorer.value_to_float`` (``C`` = 1, ``I`` = 0,
``P`` = 0.5, ``N`` = 0), latency = ``sample.total_time`` (seconds), tokens =
``sample.model_usage[model]``; cost = tokens x price table when given, else
``ModelUsage.total_cost`` when the log has it. Samples that ended in an error
without a score are left out (and counted in the notes).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._common import (
    BENCH,
    COST,
    GEN,
    IN_TOK,
    LATENCY,
    MODEL,
    OUT_TOK,
    PROMPT,
    SCORE,
    LoadedData,
    apply_prices,
    finish,
    score_value,
    shown_source,
)
from .prices import PriceTable


def _inspect() -> Any:
    try:
        import inspect_ai.log as ilog
        import inspect_ai.scorer as iscorer
    except ImportError:
        raise ValueError(
            "reading inspect-ai logs needs the inspect_ai package: "
            "pip install 'capfront[inspect]'"
        ) from None
    return ilog, iscorer


#: files that ``inspect_ai.eval_set()`` writes beside its logs (not logs)
EVAL_SET_FILES = ("eval-set.json", "logs.json")


def _is_json_log(path: Path) -> bool:
    """A ``.json`` file that starts like an inspect-ai log (not a manifest)."""
    if path.name in EVAL_SET_FILES:
        return False
    try:
        with open(path, encoding="utf-8") as fh:
            head = fh.read(4096)
    except (OSError, UnicodeDecodeError):
        return False
    return '"eval"' in head and '"version"' in head


def log_files(path: Path | list[Path]) -> list[Path]:
    """The logs to read: a file, several files, or a folder searched recursively
    (an ``eval_set()`` folder's ``eval-set.json`` and ``logs.json`` are skipped)."""
    if isinstance(path, list):
        return [f for p in path for f in log_files(p)]
    if path.is_file():
        return [path]
    files = sorted(
        p
        for p in path.rglob("*")
        if p.is_file()
        and (p.suffix == ".eval" or (p.suffix == ".json" and _is_json_log(p)))
    )
    if not files:
        raise ValueError(f"{path}: no inspect-ai .eval or .json logs found")
    return files


def _pick_score(scores: Mapping[str, Any], wanted: str | None, where: str) -> Any:
    if not scores:
        raise ValueError(f"{where}: the sample has no score")
    key = None
    if wanted is not None:
        name, _, key = wanted.partition(".")
        if name not in scores:
            raise ValueError(f"{where}: no scorer {name!r} (scorers: {list(scores)})")
        value = scores[name].value
    else:
        name = next(iter(scores))
        value = scores[name].value
    if isinstance(value, Mapping):
        if not key:
            raise ValueError(
                f"{where}: scorer {name!r} gives several values {list(value)}; pick "
                f"one with --score {name}.<key>"
            )
        if key not in value:
            raise ValueError(
                f"{where}: scorer {name!r} has no value {key!r} (values: {list(value)})"
            )
        value = value[key]
    return value


def _latest_of_eval_sets(ilog: Any, files: list[Path]) -> tuple[list[Any], int]:
    """(file, log) pairs to read, and how many were left out: an ``eval_set()``
    retries a failed task in a new log that carries over its finished samples, so
    of the logs sharing (eval_set_id, task_id, model) only the latest counts. Logs
    of separate ``eval()`` runs (no eval_set_id) are all kept."""
    logs = []
    for f in files:
        try:
            logs.append((f, ilog.read_eval_log(str(f))))
        except Exception as err:  # inspect raises its own error types
            raise ValueError(f"{f}: not a readable inspect-ai log ({err})") from None
    latest: dict[tuple[str, str, str], tuple[str, Path]] = {}
    for f, log in logs:
        set_id = getattr(log.eval, "eval_set_id", None)
        if set_id:
            key = (str(set_id), str(log.eval.task_id), str(log.eval.model))
            stamp = (str(getattr(log.eval, "created", "") or ""), f)
            if key not in latest or stamp > latest[key]:
                latest[key] = stamp
    keep = {f for _, f in latest.values()}
    out = [
        (f, log)
        for f, log in logs
        if not getattr(log.eval, "eval_set_id", None) or f in keep
    ]
    return out, len(logs) - len(out)


def load_inspect(
    path: Path | list[Path],
    *,
    score: str | None = None,
    prices: PriceTable | None = None,
) -> LoadedData:
    """Read inspect-ai log file(s): a file, several files, or a folder searched
    recursively (e.g. an ``eval_set()`` output folder). Several logs of the same
    (task, model), e.g. two separate runs, are more generations of that cell: the
    runs in the order they were created, each run's epochs in order."""
    ilog, iscorer = _inspect()
    to_float = iscorer.value_to_float()
    rows: list[dict[str, Any]] = []
    skipped = 0
    files = log_files(path)
    runs: dict[tuple[str, str], list[str]] = {}
    logs, superseded = _latest_of_eval_sets(ilog, files)
    for f, log in logs:
        model = str(log.eval.model)
        task = str(log.eval.task)
        runs.setdefault((task, model), []).append(f.name)
        created = str(getattr(log.eval, "created", "") or "")
        for s in log.samples or []:
            where = f"{f}: sample {s.id} epoch {s.epoch}"
            if not s.scores:
                if s.error is not None:
                    skipped += 1
                    continue
                raise ValueError(f"{where}: the sample has no score")
            raw = _pick_score(s.scores, score, where)
            value = score_value(to_float(raw), where)
            usage = s.model_usage.get(model) if s.model_usage else None
            if usage is None and s.model_usage:
                usage = next(iter(s.model_usage.values()))
            rows.append(
                {
                    PROMPT: f"{task}/{s.id}",
                    MODEL: model,
                    BENCH: task,
                    "_run": (created, str(f)),
                    GEN: s.epoch,
                    SCORE: value,
                    LATENCY: s.total_time if s.total_time is not None else np.nan,
                    IN_TOK: usage.input_tokens if usage is not None else np.nan,
                    OUT_TOK: usage.output_tokens if usage is not None else np.nan,
                    COST: (
                        usage.total_cost
                        if usage is not None
                        and getattr(usage, "total_cost", None) is not None
                        else np.nan
                    ),
                }
            )
    if not rows:
        raise ValueError(
            f"{shown_source(path)}: the inspect-ai logs hold no scored samples"
        )
    frame = pd.DataFrame(rows)
    notes = [f"{len(files)} inspect-ai log(s); epochs are generations"]
    if superseded:
        notes.append(
            f"{superseded} log(s) of an eval_set() task retried later left out "
            "(the latest log of each eval-set task and model is read)"
        )
    repeated = {k: v for k, v in runs.items() if len(v) > 1}
    if repeated:
        # the same sample in two runs of a task: number the draws run by run
        frame = frame.sort_values(["_run", GEN], kind="stable")
        frame[GEN] = frame.groupby([PROMPT, MODEL], sort=False).cumcount()
        (task, model), names = next(iter(repeated.items()))
        notes.append(
            f"{model} ran task {task!r} in {len(names)} separate logs"
            + (
                f" (and {len(repeated) - 1} more task/model pairs)"
                if len(repeated) > 1
                else ""
            )
            + ": each run's epochs are more generations of the same samples"
        )
    frame = frame.drop(columns=["_run"])
    if skipped:
        notes.append(
            f"{skipped} sample(s) ended in an error without a score and were left out"
        )
    cost_source = None
    if prices is not None:
        frame = apply_prices(frame.drop(columns=[COST]), prices, shown_source(path))
        cost_source = "model_usage tokens x price table"
    elif frame[COST].notna().all():
        cost_source = "model_usage total_cost"
    else:
        frame = frame.drop(columns=[COST])
    if frame[LATENCY].isna().any():
        frame = frame.drop(columns=[LATENCY])
    frame = frame.drop(columns=[IN_TOK, OUT_TOK])
    return finish(
        frame,
        fmt="inspect",
        source=shown_source(path),
        notes=notes,
        cost_source=cost_source,
        columns={"score": score or "first scorer"},
    )
