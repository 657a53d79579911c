"""lm-evaluation-harness ``--log_samples`` output.

``lm_eval --output_path OUT --log_samples`` writes, per model,
``OUT/<model_name_sanitized>/samples_<task>_<timestamp>.jsonl`` (one JSON object
per document: ``doc_id``, ``doc``, ``target``, ``arguments``, ``resps``,
``filtered_resps``, ``filter``, ``metrics`` (names), and each per-sample metric as
a top-level key, e.g. ``"exact_match": 1.0``) and ``results_<timestamp>.json``
(with ``model_name``).

Mapping: prompt = ``<task>/<doc_id>``, benchmark = task, model = ``model_name``
from the results file next to the samples (else the folder name). Generations:

- several sample files of the same (model, task) (repeated runs) are generations,
  in timestamp order;
- a metric whose per-sample value is a list (one score per repeat) gives one
  generation per entry;
- ``pass@1`` with ``repeats: k`` (``k`` responses per document) is the fraction of
  the ``k`` responses that passed, so it is read as ``round(pass@1 * k)`` of ``k``.

Documents logged once per filter (e.g. ``strict-match`` and ``flexible-extract``)
use the first filter seen for that task unless ``filter_name`` is given.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from ._common import (
    BENCH,
    GEN,
    MODEL,
    NDRAWS,
    PROMPT,
    SCORE,
    SUCC,
    LoadedData,
    finish,
    score_value,
    shown_source,
)

#: keys of a logged sample that are not metrics
BOOKKEEPING = {
    "doc_id",
    "doc",
    "target",
    "arguments",
    "resps",
    "filtered_resps",
    "filter",
    "metrics",
    "doc_hash",
    "prompt_hash",
    "target_hash",
}
_SAMPLES_RE = re.compile(
    r"^samples_(?P<task>.+)_(?P<stamp>\d{4}-\d{2}-\d{2}T[\d\-.:]+)"
    r"\.jsonl$"
)


NO_SAMPLES = (
    "lm-eval results_*.json files hold only aggregate scores, no per-sample "
    "results: re-run lm_eval with --log_samples (it writes "
    "samples_<task>_<time>.jsonl beside them) and read those"
)


def is_results_file(path: Path) -> bool:
    """An lm-eval ``results_<time>.json`` (aggregates only)."""
    return path.name.startswith("results_") and path.suffix == ".json"


def sample_files(path: Path | list[Path]) -> list[Path]:
    if isinstance(path, list):
        return [f for p in path for f in sample_files(p)]
    if path.is_file():
        if is_results_file(path):
            raise ValueError(f"{path}: {NO_SAMPLES}")
        return [path]
    files = sorted(p for p in path.rglob("samples_*.jsonl") if p.is_file())
    if not files:
        if next(path.rglob("results_*.json"), None) is not None:
            raise ValueError(f"{path}: {NO_SAMPLES}")
        raise ValueError(f"{path}: no lm-eval samples_*.jsonl files found")
    return files


def _per_sample(value: object) -> bool:
    """A value that scores one sample: a number, or a list of numbers (one per
    repeat). Corpus-level metrics (BLEU, chrF, TER, F1 over the corpus, ...) log
    ``[gold, [prediction]]`` per sample instead: they have no per-sample score."""
    if isinstance(value, (bool, int, float)):
        return True
    return isinstance(value, list) and all(
        isinstance(v, (bool, int, float)) for v in value
    )


def _metrics(rec: dict) -> list[str]:
    names = rec.get("metrics")
    keys = [str(k) for k in names if k in rec] if isinstance(names, list) else []
    return keys or [k for k in rec if k not in BOOKKEEPING]


def _task_and_stamp(path: Path, first: dict) -> tuple[str, str]:
    m = _SAMPLES_RE.match(path.name)
    if m:
        return m.group("task"), m.group("stamp")
    stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
    return (stem[len("samples_") :] if stem.startswith("samples_") else stem), ""


def _model_name(path: Path) -> str:
    """``model_name`` (or ``model_args`` pretrained=) from a results file beside the
    samples, else the folder name (lm-eval's sanitized model name)."""
    for res in sorted(path.parent.glob("results_*.json"), reverse=True):
        try:
            info = json.loads(res.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        name = info.get("model_name")
        if name:
            return str(name)
        args = str((info.get("config") or {}).get("model_args") or "")
        m = re.search(r"(?:pretrained|model)=([^,]+)", args)
        if m:
            return m.group(1)
    # (resolved: the parent of a bare file name is '.', whose name is empty)
    return path.resolve().parent.name.replace("__", "/") or "model"


def _metric_name(rec: dict, wanted: str | None, where: str) -> str:
    """The metric to read: ``wanted``, else the first per-sample one."""
    names = _metrics(rec)
    scorable = [k for k in names if _per_sample(rec[k])]
    corpus = [k for k in names if k not in scorable]
    if wanted is not None:
        if wanted not in rec:
            avail = [k for k in rec if k not in BOOKKEEPING]
            raise ValueError(f"{where}: no metric {wanted!r} (metrics here: {avail})")
        if not _per_sample(rec[wanted]):
            raise ValueError(
                f"{where}: metric {wanted!r} is corpus-level (logged per sample as "
                "[gold, [prediction]]) and cannot be scored per sample; metrics "
                f"that can: {scorable or 'none'}"
            )
        return wanted
    if scorable:
        return scorable[0]
    if corpus:
        raise ValueError(
            f"{where}: the metric(s) {corpus} are corpus-level (logged per sample "
            "as [gold, [prediction]]) and cannot be scored per sample; this task "
            "has no per-sample metric to read"
        )
    raise ValueError(f"{where}: no per-sample metric found; name one with --score")


def load_lm_eval(
    path: Path | list[Path],
    *,
    score: str | None = None,
    model: str | None = None,
    filter_name: str | None = None,
) -> LoadedData:
    """Read lm-eval ``samples_*.jsonl`` file(s) (a file or a folder searched
    recursively). ``score`` names the metric; ``model`` overrides the model name."""
    files = sample_files(path)
    source = shown_source(path)
    rows: list[tuple[str, str, str, float]] = []  # prompt, model, task, score
    count_rows: list[tuple[str, str, str, int, int]] = []
    runs: dict[tuple[str, str], int] = {}
    notes: list[str] = []
    metrics_used: set[str] = set()
    filters_used: dict[str, str] = {}
    keyed = []
    for f in files:
        lines = [ln for ln in f.read_text().splitlines() if ln.strip()]
        if not lines:
            continue
        try:
            recs = [json.loads(ln) for ln in lines]
        except json.JSONDecodeError as err:
            raise ValueError(f"{f}: not JSON lines ({err})") from None
        if not all(isinstance(r, dict) and "doc_id" in r for r in recs):
            raise ValueError(f"{f}: not lm-eval samples (records need 'doc_id')")
        task, stamp = _task_and_stamp(f, recs[0])
        keyed.append((model or _model_name(f), task, stamp, f, recs))
    if not keyed:
        raise ValueError(f"{source}: the lm-eval samples files are empty")
    keyed.sort(key=lambda k: (k[0], k[1], k[2], str(k[3])))
    for mname, task, _stamp, f, recs in keyed:
        runs[(mname, task)] = runs.get((mname, task), 0) + 1
        flt = filter_name or filters_used.get(task)
        if flt is None and "filter" in recs[0]:
            flt = str(recs[0]["filter"])
        if flt is not None:
            filters_used[task] = flt
        for r in recs:
            if flt is not None and "filter" in r and r["filter"] != flt:
                continue
            where = f"{f}: doc_id {r['doc_id']}"
            metric = _metric_name(r, score, where)
            metrics_used.add(metric)
            value = r[metric]
            prompt = f"{task}/{r['doc_id']}"
            resps = r.get("resps")
            n_rep = (
                len(resps[0])
                if (isinstance(resps, list) and resps and isinstance(resps[0], list))
                else 1
            )
            if isinstance(value, list):
                for v in value:
                    rows.append((prompt, mname, task, score_value(v, where)))
            elif n_rep > 1 and re.fullmatch(r"pass(@|_at_)1", metric):
                v = score_value(value, where)
                k = int(round(v * n_rep))
                if abs(k - v * n_rep) > 1e-6:
                    raise ValueError(
                        f"{where}: {metric} = {v} is not a multiple of "
                        f"1/{n_rep} ({n_rep} repeats)"
                    )
                count_rows.append((prompt, mname, task, k, n_rep))
            else:
                rows.append((prompt, mname, task, score_value(value, where)))
    notes.append(
        f"{len(files)} lm-eval samples file(s); metric "
        f"{', '.join(sorted(metrics_used))}"
    )
    if filters_used:
        notes.append(
            "filter used per task: "
            + ", ".join(f"{t}={v}" for t, v in sorted(filters_used.items()))
        )
    if any(n > 1 for n in runs.values()):
        notes.append("several runs of the same (model, task): each run is a generation")
    long = pd.DataFrame(rows, columns=[PROMPT, MODEL, BENCH, SCORE])
    if count_rows:
        notes.append(
            "pass@1 over repeats read as counts: round(pass@1 x repeats) of repeats"
        )
        counts = pd.DataFrame(count_rows, columns=[PROMPT, MODEL, BENCH, SUCC, NDRAWS])
        if len(long):
            if not set(np.unique(long[SCORE])) <= {0.0, 1.0}:
                raise ValueError(
                    f"{source}: cannot mix graded scores with pass@1 counts"
                )
            extra = (
                long.groupby([PROMPT, MODEL, BENCH], sort=False)[SCORE]
                .agg(["sum", "size"])
                .reset_index()
                .rename(columns={"sum": SUCC, "size": NDRAWS})
            )
            counts = pd.concat([counts, extra], ignore_index=True)
        counts = (
            counts.groupby([PROMPT, MODEL, BENCH], sort=False)[[SUCC, NDRAWS]]
            .sum()
            .reset_index()
        )
        return finish(
            counts,
            fmt="lm-eval",
            source=source,
            notes=notes,
            cost_source=None,
            counts=True,
            columns={"score": ", ".join(sorted(metrics_used))},
        )
    if len(long) == 0:
        raise ValueError(f"{source}: no samples found")
    long[GEN] = long.groupby([PROMPT, MODEL], sort=False).cumcount()
    return finish(
        long,
        fmt="lm-eval",
        source=source,
        notes=notes,
        cost_source=None,
        columns={"score": ", ".join(sorted(metrics_used))},
    )
