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
holds ``{"skipped": reason}``; a section whose function is missing from this
version of capfront is listed under ``"unavailable"``.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .baselines import best_single, naive_oracle, on_common_prompts, single_models
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
    """Plain JSON types from numbers, arrays, DataFrames, dataclasses, result
    objects (public attributes) and mappings; NaN and inf become ``None``."""
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
    for method in ("to_dict", "as_dict", "_asdict"):
        fn = getattr(obj, method, None)
        if callable(fn):
            try:
                return jsonable(fn(), depth + 1)
            except TypeError:
                pass
    if hasattr(obj, "__dict__"):
        return {
            k: jsonable(v, depth + 1)
            for k, v in vars(obj).items()
            if not k.startswith("_") and not callable(v)
        }
    return repr(obj)


def _num(x: Any) -> float | None:
    try:
        value = float(x)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _accepts(fn: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``fn`` with the keyword arguments it accepts."""
    return fn(*args, **{k: v for k, v in kwargs.items() if _accepts(fn, k)})


def _api(name: str) -> Any:
    import capfront

    return getattr(capfront, name, None)


def _first_attr(obj: Any, *names: str) -> Any:
    for name in names:
        if isinstance(obj, Mapping) and name in obj:
            return obj[name]
        if hasattr(obj, name):
            value = getattr(obj, name)
            if not callable(value):
                return value
    return None


def _ci(obj: Any) -> list[float | None] | None:
    ci = _first_attr(obj, "ci", "interval", "conf_int")
    if ci is None:
        return None
    if hasattr(ci, "low") and hasattr(ci, "high"):
        return [_num(ci.low), _num(ci.high)]
    try:
        lo, hi = list(ci)[:2]
    except (TypeError, ValueError):
        return None
    return [_num(lo), _num(hi)]


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
        "unavailable": [],
    }
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
            on_common_prompts(results), rep, state, seed, n_resamples, level, audit_sims
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
        except Exception as err:  # a bug elsewhere must not lose the whole report
            value = {"skipped": f"failed: {type(err).__name__}: {err}", "failed": True}
        if value is _UNAVAILABLE:
            continue
        if value is not None:
            data[name] = jsonable(value)
    return rep


class _Unavailable:
    pass


_UNAVAILABLE = _Unavailable()


def _unavailable(rep: Report, *names: str) -> Any:
    missing = [n for n in names if _api(n) is None]
    if missing:
        rep.data["unavailable"].extend(f"capfront.{n}" for n in missing)
        return _UNAVAILABLE
    return None


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


def _recommended(audit: Any) -> str | None:
    rec = _first_attr(
        audit,
        "recommended",
        "recommendation",
        "recommended_method",
        "best_method",
        "method",
    )
    if rec is None:
        return None
    if not isinstance(rec, str):
        rec = _first_attr(rec, "method", "name") or rec
    return str(rec)


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
) -> Any:
    """``capfront.audit`` of the results (None when it cannot run; ``out`` says
    why), its table and verdict in ``out["audit"]``."""
    audit_fn = _api("audit")
    if audit_fn is None:
        rep.data["unavailable"].append("capfront.audit")
        return None
    if audit_sims == 0:
        out["method_note"] = (
            "no audit was run (--audit-sims 0), so the method is capfront's "
            "default, bootstrap bias correction"
        )
        return None
    try:
        audit = _call(audit_fn, results, n_sims=audit_sims, seed=seed, level=level)
    except ValueError as err:
        out["audit"] = {"skipped": str(err)}
        out["method_note"] = (
            "the audit could not run, so the method is capfront's default, "
            "bootstrap bias correction"
        )
        return None
    table = _first_attr(audit, "table", "summary", "results", "metrics")
    out["audit"] = {
        "recommended": _recommended(audit),
        "n_sims": jsonable(_first_attr(audit, "n_sims")),
        "seconds": jsonable(_first_attr(audit, "seconds")),
        "truth_population": jsonable(_first_attr(audit, "truth_population")),
        "note": jsonable(_first_attr(audit, "note")),
        "table": jsonable(table) if table is not None else None,
        # the audit's verdict, when this version of the audit gives one
        "trusted": jsonable(getattr(audit, "trusted", None)),
        "bracket": jsonable(getattr(audit, "bracket", None)),
        "checks": jsonable(getattr(audit, "checks", None)),
    }
    rep.objects["audit"] = audit
    return audit


def _interval(res: Any, level: float, name: str, description: Any) -> dict[str, Any]:
    return {
        "name": name,
        "ci": _ci(res) if not isinstance(res, (list, tuple)) else list(res),
        "level": _num(getattr(res, "level", None)) or level,
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
            boot = _call(
                _api("debiased_oracle"),
                results,
                method,
                ci=level,
                n_resamples=n_resamples,
                seed=seed,
                **extra,
            )
        except ValueError:
            boot = None
        if boot is not None and _ci(boot) is not None:
            out.append(
                _interval(
                    boot, level, "prompt_bootstrap", _first_attr(boot, "ci_method")
                )
            )
    if audit is not None and hasattr(audit, "interval"):
        se = _first_attr(res, "se") or 0.0
        try:
            pop = audit.interval(value, se, method, target="population", level=level)
        except (TypeError, ValueError):
            pop = None
        if pop is not None:
            out.append(
                _interval(
                    list(pop),
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
) -> Any:
    """The debiased oracle with the one interval its method quotes: the audit's
    (``debiased_oracle(..., audit=a)``) when an audit ran, else the prompt
    bootstrap; other intervals in ``other_intervals``."""
    if (missing := _unavailable(rep, "debiased_oracle")) is not None:
        return missing
    if results.max_draws < 2:
        return {"skipped": ONE_DRAW, "one_draw": True}
    out: dict[str, Any] = {"n_prompts": results.n_prompts}
    audit = _run_audit(results, rep, out, seed, level, audit_sims)
    method = _recommended(audit) if audit is not None else None
    fn = _api("debiased_oracle")
    use_audit = audit is not None and method is not None and _accepts(fn, "audit")
    if method is None:
        method = "bootstrap_bc"
        audit = None
    extra = {}
    if method == "pgm" and getattr(audit, "family", None):
        extra["family"] = audit.family  # the cell-effect family the audit chose
    kw = {"audit": audit} if use_audit else extra
    res = _call(fn, results, method, ci=level, n_resamples=n_resamples, seed=seed, **kw)
    rep.objects["debiased"] = res
    state["method"] = method
    value = _num(_first_attr(res, "value", "estimate"))
    out.update(
        {
            "method": str(_first_attr(res, "method") or method),
            "value": value,
            "ci": _ci(res),
            "level": _num(getattr(res, "level", None)) or level,
            "ci_method": jsonable(_first_attr(res, "ci_method")),
        }
    )
    note = getattr(res, "ci_note", None)
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
        v = _first_attr(res, key)
        if v is not None:
            details[key] = jsonable(v)
    diag = _first_attr(res, "diagnostics")
    if isinstance(diag, Mapping):
        for key, v in diag.items():
            v = jsonable(v)
            if isinstance(v, (int, float, str, bool)) or (
                isinstance(v, list)
                and len(v) <= 20
                and all(isinstance(x, (int, float)) for x in v)
            ):
                details[str(key)] = v
    out["details"] = details
    return out


def _gap_section(
    results: EvalResults, rep: Report, seed: int, n_resamples: int, level: float
) -> Any:
    if (missing := _unavailable(rep, "gap_decomposition")) is not None:
        return missing
    if results.min_draws < GAP_MIN_DRAWS:
        return {
            "skipped": f"needs at least {GAP_MIN_DRAWS} draws per cell; the data "
            f"has as few as {results.min_draws}"
        }
    _, best_acc, _ = best_single(results)
    res = _call(
        _api("gap_decomposition"),
        results,
        best_acc,
        level=level,
        seed=seed,
        n_resamples=n_resamples,
    )
    rep.objects["gap"] = res
    out = jsonable(res)
    if isinstance(out, dict):
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
    except (NotImplementedError, ImportError, TypeError, ValueError) as err:
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
            sub = _api("frontier")(results, benchmark=target, **kwargs)
            table = sub.versus_best_single(ci=level, n_resamples=n_resamples, seed=seed)
        except (NotImplementedError, ImportError, TypeError, ValueError):
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
    fr = _call(_api("frontier"), results, **kwargs)
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
    if (missing := _unavailable(rep, "frontier")) is not None:
        return missing
    kw: dict[str, Any] = {}
    out: dict[str, Any] = {}
    if not results.has_cost:
        if not _accepts(_api("frontier"), "cost"):
            return {
                "skipped": "the data has no cost; the frontier needs a cost per "
                "generation (give --cost or --prices)"
            }
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
        try:
            frq, deb = _one_frontier(
                results, level, n_resamples, seed, quality=method, **kw
            )
            out["prehoc_debiased"] = {"quality": method, **deb}
            rep.objects["frontier_debiased"] = frq
        except Exception as err:  # per-cell debiased quality is optional
            out["prehoc_debiased"] = {"skipped": f"quality={method!r}: {err}"}
    return out


def _spread_rows(table: pd.DataFrame, n: int) -> pd.DataFrame:
    """``n`` rows evenly spaced through ``table`` (first and last kept)."""
    if len(table) <= n:
        return table
    return table.iloc[np.unique(np.linspace(0, len(table) - 1, n).round().astype(int))]


def _latency_section(results: EvalResults, rep: Report) -> Any:
    if not results.has_latency:
        return None
    if (missing := _unavailable(rep, "latency_frontier")) is not None:
        return missing
    kw = {} if results.has_cost else {"cost": "unit"}
    import warnings

    with warnings.catch_warnings(record=True) as caught:  # the policy cap: reported
        warnings.simplefilter("always", RuntimeWarning)
        lf = _call(_api("latency_frontier"), results, **kw)
    rep.objects["latency_frontier"] = lf
    exact = getattr(lf, "exact", None)
    notes = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    table = getattr(lf, "policies", None)
    if not isinstance(table, pd.DataFrame):
        return jsonable(lf)
    cols = [
        c
        for c in ("label", "source", "quality", "cost", "latency_mean", "latency_p95")
        if c in table.columns
    ]
    pareto = table[table["pareto_mean"]] if "pareto_mean" in table else table
    pareto = pareto.sort_values("cost", kind="stable")[cols]
    return {
        "n_candidates": int(len(table)),
        "n_pareto_mean": int(table["pareto_mean"].sum())
        if "pareto_mean" in table
        else None,
        "n_pareto_p95": int(table["pareto_p95"].sum())
        if "pareto_p95" in table
        else None,
        "n_hull_mean": int(table["hull_mean"].sum()) if "hull_mean" in table else None,
        "exact_mean_hull": exact,
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
    if method == "pgm" and getattr(audit, "family", None):
        options["family"] = audit.family
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
