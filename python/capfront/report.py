"""The full capability-frontier report of an evaluation: what ``capfront report``
prints and writes.

:func:`build_report` runs every analysis the installed capfront offers on an
:class:`~capfront.EvalResults` (data shape, single models, naive oracles, the
debiased oracle with the method the audit recommends and its interval, the gap
decomposition when there are 20+ draws per cell, the cost-quality frontier against
the best single model per benchmark, the latency frontier) and returns a
:class:`Report`: ``.data`` is a JSON-ready dict (keys documented in the README),
``.to_markdown()``, ``.print(console)`` (rich tables) and ``.save(out_dir)``
(``report.json``, ``report.md``, ``frontier.png`` and ``latency_frontier.png``).

A section that does not apply to the data (e.g. the union oracle on graded scores)
holds ``{"skipped": reason}``. Sections call the analyses directly and read their
results through the result protocol (``value``, ``ci``, ``level``, ``to_dict``):
nothing is probed, so a missing function is an ``ImportError``, not a silently
missing section.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._protocol import ResultProtocol, interval
from .baselines import best_single, naive_oracle, on_common_prompts, single_models
from .debias import audit as run_audit
from .debias import debiased_oracle, gap_decomposition
from .frontier import PER_CELL_QUALITY, frontier
from .pareto import latency_frontier
from .report_text import (
    GAP_ROWS,
    Block,
    Prose,
    blocks,
    fmt,
    plain,
    print_rich,
    summary,
    to_markdown,
)
from .report_text import table as _table  # noqa: F401  (kept for old imports)
from .results import EvalResults

#: sections in the order they are computed and printed
SECTIONS = (
    "data",
    "single_models",
    "naive_oracles",
    "by_benchmark",
    "truth",
    "debiased_oracle",
    "gap_decomposition",
    "frontier",
    "latency_frontier",
    "routers",
)
GAP_MIN_DRAWS = 20


# ---------------------------------------------------------------------- helpers
def jsonable(obj: Any, depth: int = 0) -> Any:
    """Plain JSON types from numbers, arrays, DataFrames, dataclasses (their
    fields), results (their ``to_dict``) and mappings; NaN and inf become
    ``None``; anything else its ``repr``."""
    if depth > 8:
        return repr(obj)
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        value = float(obj)
        return value if math.isfinite(value) else None
    if isinstance(obj, np.ndarray):
        if obj.size > 2000:
            return {"shape": list(obj.shape), "dtype": str(obj.dtype)}
        return (
            [jsonable(v, depth + 1) for v in obj.tolist()]
            if obj.ndim
            else jsonable(obj.item(), depth + 1)
        )
    if isinstance(obj, pd.DataFrame):
        frame = obj.reset_index() if not isinstance(obj.index, pd.RangeIndex) else obj
        return [
            {str(k): jsonable(v, depth + 1) for k, v in row.items()}
            for row in frame.to_dict(orient="records")
        ]
    if isinstance(obj, pd.Series):
        return {str(k): jsonable(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [jsonable(v, depth + 1) for v in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            f.name: jsonable(getattr(obj, f.name), depth + 1)
            for f in dataclasses.fields(obj)
        }
    if isinstance(obj, ResultProtocol):
        return jsonable(obj.to_dict(), depth + 1)
    return repr(obj)


def _num(x: Any) -> float | None:
    try:
        value = float(x)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _ci(res: Any) -> list[float | None]:
    """The protocol's ``ci`` as a JSON pair (``None`` for NaN)."""
    return [_num(x) for x in interval(res.ci)]


def _level(res: Any, default: float) -> float:
    """The protocol's ``level``, ``default`` when the result has no interval."""
    return _num(res.level) or default


# ---------------------------------------------------------------------- report
@dataclasses.dataclass
class Report:
    """A built report: ``data`` (JSON-ready dict) and the objects behind the
    figures (``objects``: frontier objects etc.)."""

    data: dict[str, Any]
    results: EvalResults
    objects: dict[str, Any] = dataclasses.field(default_factory=dict)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.data, indent=indent, allow_nan=False)

    def to_markdown(self) -> str:
        return to_markdown(self.data)

    def print(self, console: Any = None) -> None:
        """Readable rich tables on ``console`` (stdout by default)."""
        print_rich(self.data, console)

    def save(self, out_dir: str | Path, html: bool = True) -> list[Path]:
        """Write ``report.json``, ``report.md``, the figures (``frontier.png``,
        ``frontier_by_benchmark.png`` with several benchmarks,
        ``latency_frontier.png`` with latency) and ``report.html`` (one
        self-contained page, interactive with plotly) into ``out_dir``."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        figures = save_figures(self, out)
        written = [out / "report.json", out / "report.md", *figures]
        if html:
            written.append(out / "report.html")
        # the text names only files that exist: list them before rendering
        self.data["files"] = [p.name for p in written]
        written[0].write_text(self.to_json() + "\n")
        written[1].write_text(self.to_markdown())
        if html:
            from .report_html import write_html

            write_html(self, out, png=out / "frontier.png")
        return written

    def to_html(self) -> str:
        """The report as one self-contained HTML page (:mod:`capfront.report_html`)."""
        from .report_html import to_html

        return to_html(self)


def build_report(
    results: EvalResults,
    *,
    source: Mapping[str, Any] | None = None,
    seed: int = 0,
    n_resamples: int = 1000,
    level: float = 0.95,
    audit_sims: int = 20,
    on_step: Callable[[str], None] | None = None,
    routers: Mapping[str, Any] | None = None,
    known_models: Sequence[str] | None = None,
) -> Report:
    """Run every available analysis on ``results``.

    Parameters
    ----------
    results : the evaluation results
    source : what was read (path, format, columns, notes, cost source); shown
        first in the report
    seed, n_resamples, level : seed and number of bootstrap resamples for the
        intervals, and their confidence level
    audit_sims : simulated data sets for :func:`capfront.audit`, which picks the
        debiasing method (0: no audit; bootstrap bias correction is used)
    on_step : called with each section's name before it runs (progress bars)
    routers : ``{name: choices}`` (see :func:`capfront.evaluate_router`): adds the
        router section and the models tied with the best single model
    known_models : models whose rates are known from their counts (greedy runs,
        any number of draws): passed to the audit, whose quoted estimate then
        splits on them (:func:`capfront.debiased_oracle`)

    Returns
    -------
    Report
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if audit_sims < 0:
        raise ValueError(f"audit_sims must be >= 0, got {audit_sims}")
    import capfront

    data: dict[str, Any] = {
        "capfront_version": capfront.__version__,
        "settings": {
            "seed": int(seed),
            "n_resamples": int(n_resamples),
            "level": float(level),
            "audit_sims": int(audit_sims),
        },
        "source": jsonable(dict(source or {})),
    }
    if known_models is not None:
        data["settings"]["known_models"] = [str(m) for m in known_models]
    rep = Report(data, results)
    state: dict[str, Any] = {}
    builders: dict[str, Callable[[], Any]] = {
        "data": lambda: _data_section(results),
        "single_models": lambda: _single_section(results),
        "naive_oracles": lambda: _oracle_section(results),
        "by_benchmark": lambda: _benchmark_section(results),
        "truth": lambda: _truth_section(results),
        # like the single models and naive oracles, the debiased oracle and the
        # gap decomposition are computed on the prompts every model ran
        "debiased_oracle": lambda: _debiased_section(
            on_common_prompts(results),
            rep,
            state,
            seed,
            n_resamples,
            level,
            audit_sims,
            known_models,
        ),
        "gap_decomposition": lambda: _gap_section(
            on_common_prompts(results), rep, seed, n_resamples, level
        ),
        "frontier": lambda: _frontier_section(
            results, rep, state, seed, n_resamples, level
        ),
        "latency_frontier": lambda: _latency_section(results, rep),
        "routers": lambda: _router_section(
            results, rep, state, routers, seed, n_resamples, level
        ),
    }
    for name in SECTIONS:
        if on_step is not None:
            on_step(name)
        try:
            value = builders[name]()
        except ValueError as err:
            value = {"skipped": str(err)}
        except ImportError:
            raise  # a broken install: never a silently missing section
        except Exception as err:  # a bug elsewhere must not lose the whole report
            value = {"skipped": f"failed: {type(err).__name__}: {err}", "failed": True}
        if value is not None:
            data[name] = jsonable(value)
    return rep


# ---------------------------------------------------------------------- sections
def _data_section(results: EvalResults) -> dict[str, Any]:
    obs = results.observed
    out: dict[str, Any] = {
        "n_prompts": results.n_prompts,
        "n_models": results.n_models,
        "draws_per_cell": {"min": results.min_draws, "max": results.max_draws},
        "scores": "binary" if results.is_binary else "graded",
        "complete": bool(obs.all()),
        "missing_cells": int((~obs).sum()),
        "cost": bool(results.has_cost),
        "latency": bool(results.has_latency),
        "benchmarks": None,
        "topics": None,
    }
    if results.benchmark is not None:
        labels, counts = np.unique(results.benchmark.astype(str), return_counts=True)
        out["benchmarks"] = {
            str(k): int(v) for k, v in zip(labels, counts, strict=True)
        }
    if results.topic is not None:
        out["topics"] = int(len(np.unique(results.topic.astype(str))))
    return out


def _single_section(results: EvalResults) -> dict[str, Any]:
    table = single_models(results).sort_values(
        "accuracy", ascending=False, kind="stable"
    )
    model, acc, cost = best_single(results)
    return {
        "best": {"model": model, "accuracy": acc, "cost": _num(cost)},
        "models": table,
    }


def _oracle_section(results: EvalResults) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _, best_acc, _ = best_single(results)
    for kind in ("prehoc", "posthoc", "union"):
        try:
            orc = naive_oracle(results, kind)
        except ValueError as err:
            out[kind] = {"skipped": str(err)}
            continue
        out[kind] = {
            "value": orc.value,
            "cost": _num(orc.cost),
            "gain_over_best_single": orc.value - best_acc,
        }
    if results.min_draws < results.max_draws or results.max_draws > 1:
        out["note"] = (
            "prehoc and union use p_hat = successes / draws; posthoc counts "
            "a prompt if any draw of any model succeeded"
        )
    return out


def _benchmark_section(results: EvalResults) -> list[dict[str, Any]] | None:
    if results.benchmark is None:
        return None
    rows = []
    for name, sub in results.by_benchmark().items():
        model, acc, cost = best_single(sub)
        pre = naive_oracle(sub, "prehoc")
        rows.append(
            {
                "benchmark": name,
                "n_prompts": sub.n_prompts,
                "best_model": model,
                "best_accuracy": acc,
                "best_cost": _num(cost),
                "prehoc_oracle": pre.value,
                "prehoc_cost": _num(pre.cost),
            }
        )
    return rows


def _truth_section(results: EvalResults) -> dict[str, Any] | None:
    if results.truth_p is None:
        return None
    truth = results.truth_p
    acc = np.nanmean(np.where(results.observed, truth, np.nan), axis=0)
    return {
        "true_oracle": results.true_oracle,
        "true_best_single": float(np.nanmax(acc)),
        "naive_oracle_bias": naive_oracle(results, "prehoc").value
        - float(results.true_oracle or 0.0),
    }


ONE_DRAW = (
    "debiasing needs repeated draws of each model on each prompt; with one draw "
    "per cell only the plug-in oracle (some model got the prompt right) is "
    "available, an upper end"
)


def _run_audit(
    results: EvalResults,
    rep: Report,
    out: dict[str, Any],
    seed: int,
    level: float,
    audit_sims: int,
    known_models: Sequence[str] | None = None,
) -> Any:
    """``capfront.audit`` of the results (None when it cannot run; ``out`` says
    why), its table and verdict in ``out["audit"]``."""
    if audit_sims == 0:
        out["method_note"] = (
            "no audit was run (--audit-sims 0), so the method is capfront's "
            "default, bootstrap bias correction"
        )
        return None
    try:
        audit = run_audit(
            results,
            n_sims=audit_sims,
            seed=seed,
            level=level,
            known_models=known_models,
        )
    except ValueError as err:
        out["audit"] = {"skipped": str(err)}
        out["method_note"] = (
            "the audit could not run, so the method is capfront's default, "
            "bootstrap bias correction"
        )
        return None
    out["audit"] = {
        "recommended": str(audit.recommended),
        "n_sims": jsonable(audit.n_sims),
        "seconds": jsonable(audit.seconds),
        "truth_population": jsonable(audit.truth_population),
        "note": jsonable(audit.note),
        "table": jsonable(audit.table),
        # the audit's verdict
        "trusted": jsonable(audit.trusted),
        # every passing world is the quoted model's own (AuditResult.self_audited)
        "self_audited": jsonable(audit.self_audited),
        # the size the worlds were judged at (AuditResult.checks_at)
        "checks_at": str(audit.checks_at),
        "sim_prompts": jsonable(audit.sim_prompts),
        "bracket": jsonable(audit.bracket),
        "checks": jsonable(audit.checks),
        # the correlated logit-normal against pgm (AIC; whether it was scored)
        "correlated": jsonable(audit.correlated),
        # models that answered all or nothing, taken as known (debias.known)
        "known_models": [str(m) for m in audit.known_models],
        "solved_by_known": jsonable(audit.solved_by_known),
    }
    rep.objects["audit"] = audit
    return audit


def _interval(
    ci: tuple[float, float], level: float, name: str, description: Any
) -> dict[str, Any]:
    return {
        "name": name,
        "ci": [_num(x) for x in interval(ci)],
        "level": level,
        "description": jsonable(description),
    }


def _other_intervals(
    results: EvalResults,
    method: str,
    value: float,
    res: Any,
    audit: Any,
    extra: Mapping[str, Any],
    seed: int,
    n_resamples: int,
    level: float,
) -> list[dict[str, Any]]:
    """Intervals of the same estimate that the text does not quote (JSON only):
    the prompt bootstrap when the audit's interval is quoted, and the audit's
    interval for the prompt population."""
    out = []
    if audit is not None:
        try:
            boot = debiased_oracle(
                results, method, ci=level, n_resamples=n_resamples, seed=seed, **extra
            )
        except ValueError:
            boot = None
        if boot is not None:
            out.append(
                _interval(
                    boot.ci, _level(boot, level), "prompt_bootstrap", boot.ci_method
                )
            )
    if audit is not None:
        se = res.se or 0.0
        try:
            pop = audit.interval(value, se, method, target="population", level=level)
        except ValueError:
            pop = None
        if pop is not None:
            out.append(
                _interval(
                    pop,
                    level,
                    "audit_population",
                    "value +- z * max(se, the audit's RMSE against the population "
                    "oracle): the oracle of the prompt population",
                )
            )
    return out


def _debiased_section(
    results: EvalResults,
    rep: Report,
    state: dict[str, Any],
    seed: int,
    n_resamples: int,
    level: float,
    audit_sims: int,
    known_models: Sequence[str] | None = None,
) -> Any:
    """The debiased oracle with the one interval its method quotes: the audit's
    (``debiased_oracle(..., audit=a)``) when an audit ran, else the prompt
    bootstrap; other intervals in ``other_intervals``."""
    if results.max_draws < 2:
        return {"skipped": ONE_DRAW, "one_draw": True}
    out: dict[str, Any] = {"n_prompts": results.n_prompts}
    audit = _run_audit(results, rep, out, seed, level, audit_sims, known_models)
    method = "bootstrap_bc" if audit is None else str(audit.recommended)
    extra = {}
    if audit is not None and method == "pgm" and audit.family:
        extra["family"] = audit.family  # the cell-effect family the audit chose
    kw = {"audit": audit} if audit is not None else extra
    res = debiased_oracle(
        results, method, ci=level, n_resamples=n_resamples, seed=seed, **kw
    )
    rep.objects["debiased"] = res
    state["method"] = method
    value = _num(res.value)
    out.update(
        {
            "method": str(res.method),
            "value": value,
            "ci": _ci(res),
            "level": _level(res, level),
            "ci_method": jsonable(res.ci_method),
        }
    )
    note = res.diagnostics.get("ci_note")
    if isinstance(note, str):
        out["ci_note"] = note
    if extra:
        out["family"] = extra["family"]
    if value is not None:
        out["other_intervals"] = _other_intervals(
            results, method, value, res, audit, extra, seed, n_resamples, level
        )
        out["naive_minus_debiased"] = naive_oracle(results, "prehoc").value - value
    details: dict[str, Any] = {}
    for key in ("naive", "ci_method", "se"):
        v = getattr(res, key)
        if v is not None:
            details[key] = jsonable(v)
    for key, v in res.diagnostics.items():
        v = jsonable(v)
        if isinstance(v, (int, float, str, bool)) or (
            isinstance(v, list)
            and len(v) <= 20
            and (
                all(isinstance(x, (int, float)) for x in v)
                or all(isinstance(x, str) for x in v)
            )
        ):
            details[str(key)] = v
    out["details"] = details
    return out


def _gap_section(
    results: EvalResults, rep: Report, seed: int, n_resamples: int, level: float
) -> Any:
    if results.min_draws < GAP_MIN_DRAWS:
        return {
            "skipped": f"needs at least {GAP_MIN_DRAWS} draws per cell; the data "
            f"has as few as {results.min_draws}"
        }
    _, best_acc, _ = best_single(results)
    res = gap_decomposition(
        results, best_acc, level=level, seed=seed, n_resamples=n_resamples
    )
    rep.objects["gap"] = res
    out = jsonable(res)
    out["router"] = "the best single model (router_accuracy = its accuracy)"
    return out


def _vertices(fr: Any, max_points: int = 400) -> dict[str, Any]:
    """Frontier vertices for the JSON: all of them up to ``max_points``, else an
    evenly spaced subset that keeps the first and last."""
    v = np.asarray(fr.vertices, dtype=np.float64)
    keep = (
        v
        if len(v) <= max_points
        else v[np.unique(np.linspace(0, len(v) - 1, max_points).round().astype(int))]
    )
    return {"n_vertices": int(len(v)), "cost_quality": jsonable(keep)}


#: frontier intervals are bootstrapped in the report up to this many (prompt, model)
#: cells; beyond, the Python API (``versus_best_single(ci=...)``) gives them
FRONTIER_CI_MAX_CELLS = 20_000


def _versus(
    fr: Any,
    level: float,
    n_resamples: int,
    seed: int,
    notes: list[str],
    with_ci: bool,
    results: EvalResults | None = None,
    kwargs: Mapping[str, Any] | None = None,
) -> Any:
    if not with_ci:
        return jsonable(fr.versus_best_single())
    try:
        table = fr.versus_best_single(ci=level, n_resamples=n_resamples, seed=seed)
    except (NotImplementedError, ValueError) as err:
        rows = jsonable(fr.versus_best_single())
        if results is None or results.benchmark is None:
            notes.append(f"no intervals for the frontier comparison: {err}")
            return rows
        return _versus_by_group(
            rows, results, level, n_resamples, seed, notes, dict(kwargs or {}), err
        )
    return jsonable(table)


def _versus_by_group(
    rows: list[dict[str, Any]],
    results: EvalResults,
    level: float,
    n_resamples: int,
    seed: int,
    notes: list[str],
    kwargs: dict[str, Any],
    err: Exception,
) -> list[dict[str, Any]]:
    """Intervals one benchmark (and the pooled ``all`` row) at a time, when the joint
    bootstrap fails for one of them (e.g. a best model without errors)."""
    failed = []
    for row in rows:
        name = str(row.get("benchmark"))
        if name == "mean":
            continue
        target = np.full(results.n_prompts, "all") if name == "all" else name
        try:
            sub = frontier(results, benchmark=target, **kwargs)
            table = sub.versus_best_single(ci=level, n_resamples=n_resamples, seed=seed)
        except (NotImplementedError, ValueError):
            failed.append(name)
            continue
        got = jsonable(table)[0]
        row.update({k: v for k, v in got.items() if k.endswith(("_low", "_high"))})
    if failed:
        notes.append(f"no intervals for {', '.join(failed)}: {err}")
    return rows


def _one_frontier(
    results: EvalResults, level: float, n_resamples: int, seed: int, **kwargs: Any
) -> tuple[Any, dict[str, Any]]:
    fr = frontier(results, **kwargs)
    notes: list[str] = []
    with_ci = True
    if kwargs.get("posthoc"):
        with_ci = False
        notes.append(
            "posthoc intervals are not bootstrapped in the report (slow "
            "path); use Frontier.versus_best_single(ci=...) in Python"
        )
    elif kwargs.get("cost") == "unit" or "quality" in kwargs:
        with_ci = False  # degenerate, or per-cell estimates refitted per replicate
    elif results.n_prompts * results.n_models > FRONTIER_CI_MAX_CELLS:
        with_ci = False
        notes.append(
            f"intervals skipped: more than {FRONTIER_CI_MAX_CELLS:,} "
            "(prompt, model) cells; use Frontier.versus_best_single(ci=...) "
            "in Python"
        )
    out: dict[str, Any] = {
        "aiq": _num(fr.aiq()),
        "versus_best_single": _versus(
            fr, level, n_resamples, seed, notes, with_ci, results, kwargs
        ),
        "vertices": _vertices(fr),
    }
    if notes:
        out["notes"] = notes
    return fr, out


def _frontier_section(
    results: EvalResults,
    rep: Report,
    state: dict[str, Any],
    seed: int,
    n_resamples: int,
    level: float,
) -> Any:
    kw: dict[str, Any] = {}
    out: dict[str, Any] = {}
    if not results.has_cost:
        kw["cost"] = "unit"
        out["cost"] = (
            "unit: the data has no cost, so every generation costs 1 "
            "(posthoc best-of-k costs k)"
        )
    fr, out["prehoc"] = _one_frontier(results, level, n_resamples, seed, **kw)
    rep.objects["frontier"] = fr
    if results.max_draws > 1:
        try:
            frp, out["posthoc"] = _one_frontier(
                results, level, n_resamples, seed, posthoc=True, **kw
            )
            rep.objects["frontier_posthoc"] = frp
        except ValueError as err:
            out["posthoc"] = {"skipped": str(err)}
    method = state.get("method")
    if method and method != "naive":
        # a quoted estimator without per-cell estimates (the correlated model,
        # the bias corrections): the latent model's posterior means instead
        qual = method if method in PER_CELL_QUALITY else "pgm"
        # the quoted pgm fit's own posterior means (its family; no second fit)
        quoted = rep.objects.get("debiased")
        cells = getattr(quoted, "diagnostics", {}).get("posterior_mean_p")
        q_arg = (
            np.asarray(cells) if qual == method == "pgm" and cells is not None else qual
        )
        try:
            frq, deb = _one_frontier(
                results, level, n_resamples, seed, quality=q_arg, **kw
            )
            out["prehoc_debiased"] = {"quality": qual, **deb}
            if qual != method:
                out["prehoc_debiased"]["quoted"] = method
            rep.objects["frontier_debiased"] = frq
        except Exception as err:  # per-cell debiased quality is optional
            out["prehoc_debiased"] = {"skipped": f"quality={qual!r}: {err}"}
    return out


def _spread_rows(table: pd.DataFrame, n: int) -> pd.DataFrame:
    """``n`` rows evenly spaced through ``table`` (first and last kept)."""
    if len(table) <= n:
        return table
    return table.iloc[np.unique(np.linspace(0, len(table) - 1, n).round().astype(int))]


def _latency_section(results: EvalResults, rep: Report) -> Any:
    if not results.has_latency:
        return None
    kw = {} if results.has_cost else {"cost": "unit"}
    with warnings.catch_warnings(record=True) as caught:  # the policy cap: reported
        warnings.simplefilter("always", RuntimeWarning)
        lf = latency_frontier(results, **kw)
    rep.objects["latency_frontier"] = lf
    notes = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    table = lf.to_frame()
    cols = ["label", "source", "quality", "cost", "latency_mean", "latency_p95"]
    pareto = lf.pareto("mean").sort_values("cost", kind="stable")[cols]
    return {
        "n_candidates": int(len(table)),
        "n_pareto_mean": int(table["pareto_mean"].sum()),
        "n_pareto_p95": int(table["pareto_p95"].sum()),
        "n_hull_mean": int(table["hull_mean"].sum()),
        "exact_mean_hull": bool(lf.exact),
        "notes": notes,
        # up to 200 policies spread evenly over the cost range (all when fewer)
        "pareto_mean": jsonable(_spread_rows(pareto.reset_index(drop=True), 200)),
    }


__all__ = [
    "GAP_ROWS",
    "SECTIONS",
    "Block",
    "Prose",
    "Report",
    "blocks",
    "build_report",
    "fmt",
    "jsonable",
    "plain",
    "print_rich",
    "save_figures",
    "summary",
    "to_markdown",
]


def _router_section(
    results: EvalResults,
    rep: Report,
    state: dict[str, Any],
    routers: Mapping[str, Any] | None,
    seed: int,
    n_resamples: int,
    level: float,
) -> Any:
    """Routers given by the caller (``--router NAME=FILE``): accuracy, cost and
    their position against the best single model (and the models tied with it),
    the debiased oracle and the frontier (:mod:`capfront.router_report`)."""
    if not routers:
        return None
    from .router_report import router_section

    options = {}
    audit = rep.objects.get("audit")
    method = state.get("method", "bootstrap_bc")
    if method == "pgm" and audit is not None and audit.family:
        options["family"] = audit.family
        options["bounds"] = tuple(audit.bounds)  # (pgm's floor and ceiling)
    out, table = router_section(
        results,
        routers,
        oracle=method,
        oracle_options=options,
        frontier=rep.objects.get("frontier"),
        seed=seed,
        n_resamples=n_resamples,
        level=level,
    )
    rep.objects["routers"] = table
    return out


def save_figures(rep: Report, out: Path) -> list[Path]:
    """The report's figures (:func:`capfront.report_figures.save_figures`)."""
    from .report_figures import save_figures as _save_figures

    return _save_figures(rep, out)
