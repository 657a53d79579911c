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

from .baselines import best_single, naive_oracle, single_models
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

    def save(self, out_dir: str | Path) -> list[Path]:
        """Write ``report.json``, ``report.md``, ``frontier.png`` and, when the data
        has latency, ``latency_frontier.png`` into ``out_dir``."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        written = [out / "report.json", out / "report.md", *save_figures(self, out)]
        self.data["files"] = [p.name for p in written]
        written[0].write_text(self.to_json() + "\n")
        written[1].write_text(self.to_markdown())
        return written


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
        "debiased_oracle": lambda: _debiased_section(
            results, rep, state, seed, n_resamples, level, audit_sims
        ),
        "gap_decomposition": lambda: _gap_section(
            results, rep, seed, n_resamples, level
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


def _debiased_section(
    results: EvalResults,
    rep: Report,
    state: dict[str, Any],
    seed: int,
    n_resamples: int,
    level: float,
    audit_sims: int,
) -> Any:
    if (missing := _unavailable(rep, "debiased_oracle")) is not None:
        return missing
    out: dict[str, Any] = {}
    audit_fn = _api("audit")
    method = None
    if audit_fn is None:
        rep.data["unavailable"].append("capfront.audit")
    elif audit_sims == 0:
        out["method_note"] = "audit skipped (--audit-sims 0)"
    else:
        try:
            audit = _call(audit_fn, results, n_sims=audit_sims, seed=seed, level=level)
        except ValueError as err:
            out["audit"] = {"skipped": str(err)}
        else:
            method = _recommended(audit)
            table = _first_attr(audit, "table", "summary", "results", "metrics")
            out["audit"] = {
                "recommended": method,
                "n_sims": jsonable(_first_attr(audit, "n_sims")),
                "seconds": jsonable(_first_attr(audit, "seconds")),
                "truth_population": jsonable(_first_attr(audit, "truth_population")),
                "note": jsonable(_first_attr(audit, "note")),
                "table": jsonable(table) if table is not None else None,
            }
            rep.objects["audit"] = audit
    if method is None:
        method = "bootstrap_bc"
        out["method_note"] = (
            out.get("method_note", "no audit recommendation")
            + ": bootstrap bias correction (SPEC 4c) is used"
        )
    extra = {}
    audit = rep.objects.get("audit")
    if method == "pgm" and getattr(audit, "family", None):
        extra["family"] = audit.family  # the cell-effect family the audit chose
    res = _call(
        _api("debiased_oracle"),
        results,
        method,
        ci=level,
        n_resamples=n_resamples,
        seed=seed,
        **extra,
    )
    rep.objects["debiased"] = res
    state["method"] = method
    out.update(
        {
            "method": str(_first_attr(res, "method") or method),
            "value": _num(_first_attr(res, "value", "estimate")),
            "ci": _ci(res),
            "level": level,
        }
    )
    if extra:
        out["family"] = extra["family"]
    if out["value"] is not None and hasattr(audit, "interval"):
        # the audit's measured error of the method: these prompts' oracle and
        # the population's
        out["audit_interval"] = list(audit.interval(out["value"]))
        se = _first_attr(res, "se")
        out["audit_interval_population"] = list(
            audit.interval(out["value"], se or 0.0, target="population")
        )
    naive = naive_oracle(results, "prehoc").value
    if out["value"] is not None:
        out["naive_minus_debiased"] = naive - out["value"]
    details: dict[str, Any] = {}
    for key in ("naive", "ci_method", "se"):
        value = _first_attr(res, key)
        if value is not None:
            details[key] = jsonable(value)
    diag = _first_attr(res, "diagnostics")
    if isinstance(diag, Mapping):
        for key, value in diag.items():
            value = jsonable(value)
            if isinstance(value, (int, float, str, bool)) or (
                isinstance(value, list)
                and len(value) <= 20
                and all(isinstance(v, (int, float)) for v in value)
            ):
                details[str(key)] = value
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
        "pareto_mean": jsonable(pareto.reset_index(drop=True).head(200)),
    }


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


# ---------------------------------------------------------------------- rendering
Block = tuple[str, list[str], list[list[str]], list[str]]  # title, header, rows, notes


def fmt(value: Any, key: str = "") -> str:
    """A cell: percentages for reductions and shares, 4 decimals otherwise."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        x = float(value)
        if not math.isfinite(x):
            return "-"
        if any(w in key for w in ("reduction", "share", "coverage")) and abs(x) <= 5:
            return f"{100 * x:.1f}%"
        if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e7):
            return f"{x:.3g}"
        return f"{x:,.2f}" if abs(x) >= 10 else f"{x:.4f}"
    if isinstance(value, list):
        if len(value) == 2 and all(
            isinstance(v, (int, float)) or v is None for v in value
        ):
            return f"[{fmt(value[0], key)}, {fmt(value[1], key)}]"
        return ", ".join(fmt(v, key) for v in value[:6]) + (
            " ..." if len(value) > 6 else ""
        )
    if isinstance(value, dict):
        return ", ".join(f"{k}={fmt(v, k)}" for k, v in list(value.items())[:6])
    return str(value)


def _flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flatten(v, key + "."))
        elif isinstance(v, list) and len(v) > 8:
            continue  # curves and vertex lists live in report.json
        else:
            out[key] = v
    return out


def _table(value: Any, max_rows: int = 40) -> tuple[list[str], list[list[str]]]:
    """Header and rows for a list of records or a mapping."""
    if isinstance(value, list) and value and all(isinstance(r, Mapping) for r in value):
        flat = [_flatten(r) for r in value]
        header = list(dict.fromkeys(k for r in flat for k in r))
        return header, [[fmt(r.get(h), h) for h in header] for r in flat[:max_rows]]
    if isinstance(value, Mapping):
        if value and all(isinstance(v, Mapping) for v in value.values()):
            flat = {k: _flatten(v) for k, v in value.items()}
            header = ["", *dict.fromkeys(k for r in flat.values() for k in r)]
            return header, [
                [str(k), *[fmt(r.get(h), h) for h in header[1:]]]
                for k, r in list(flat.items())[:max_rows]
            ]
        flat1 = _flatten(value)
        return ["", "value"], [[k, fmt(v, k)] for k, v in flat1.items()]
    return ["value"], [[fmt(value)]]


def _versus_table(rows: Any) -> tuple[list[str], list[list[str]]]:
    """The frontier-versus-best-single table, with intervals when present."""
    if not (isinstance(rows, list) and rows and isinstance(rows[0], Mapping)):
        return _table(rows)
    cols = [
        ("benchmark", "benchmark"),
        ("best_model", "best model"),
        ("best_accuracy", "acc"),
        ("best_cost", "cost"),
        ("frontier_quality_at_best_cost", "frontier acc"),
        ("error_reduction", "err. red."),
        ("cost_reduction", "cost red."),
        ("aiq", "AIQ"),
        ("oracle_quality", "oracle"),
    ]
    cols = [(k, h) for k, h in cols if k in rows[0]]
    body = []
    for r in rows:
        line = []
        for k, _ in cols:
            cell = fmt(r.get(k), k)
            lo, hi = r.get(f"{k}_low"), r.get(f"{k}_high")
            if lo is not None and hi is not None:
                cell += f" ({100 * lo:.0f}-{100 * hi:.0f})"
            line.append(cell)
        body.append(line)
    return [h for _, h in cols], body


GAP_ROWS = (
    ("router_accuracy", "R: router = best single model"),
    ("o_repro_lower", "O_repro one-sided lower bound"),
    ("o_repro_crossfit", "O_repro cross-fit (lower end)"),
    ("o_repro_plugin", "O_repro plug-in (upper end)"),
    ("o_exp", "O_exp single-draw union oracle"),
    ("delta_plugin", "Delta = O_exp - O_repro, plug-in"),
    ("delta_crossfit", "Delta, cross-fit"),
    ("delta_upper", "Delta one-sided upper bound"),
    ("best_of_k_equal_draws", "best-of-L on the committed model (equal draws)"),
    ("best_of_k_equal_cost", "best-of-K on the committed model (equal cost)"),
)


def _gap_block(sec: Mapping[str, Any]) -> Block:
    title = "Gap decomposition R <= O_repro <= O_exp (seed 003)"
    if not any(k in sec for k, _ in GAP_ROWS):
        h, r = _table(sec)
        return title, h, r, []
    rows = [[label, fmt(sec[k])] for k, label in GAP_ROWS if sec.get(k) is not None]
    share = sec.get("noise_share")
    if isinstance(share, Mapping):
        rows += [
            [f"noise share of the gap ({k})", fmt(v, "share")] for k, v in share.items()
        ]
    notes = []
    if sec.get("bound_method"):
        lvl = sec.get("level")
        notes.append(
            f"bounds ({f'{lvl:.0%} ' if lvl else ''}one-sided): {sec['bound_method']}"
        )
    if sec.get("router"):
        notes.append(f"router: {sec['router']}")
    return title, ["", "value"], rows, notes


def _latency_block(sec: Mapping[str, Any], max_rows: int = 12) -> Block:
    pts = sec["pareto_mean"]
    if len(pts) > max_rows:
        idx = np.unique(np.linspace(0, len(pts) - 1, max_rows).round().astype(int))
        pts = [pts[i] for i in idx]
    cols = [
        ("label", "policy"),
        ("quality", "quality"),
        ("cost", "cost"),
        ("latency_mean", "mean latency"),
        ("latency_p95", "P95 latency"),
    ]
    rows = [
        [
            (r.get("label") or r.get("source") or "routed")
            if k == "label"
            else fmt(r.get(k), k)
            for k, _ in cols
        ]
        for r in pts
    ]
    notes = [
        f"{sec.get('n_pareto_mean')} of {sec.get('n_candidates')} candidate "
        "policies are non-dominated in (quality up, cost down, mean latency "
        f"down) ({sec.get('n_pareto_p95')} with P95 latency); "
        f"{len(pts)} shown, by cost; all in report.json"
    ]
    return (
        "Latency frontier (non-dominated policies)",
        [h for _, h in cols],
        rows,
        notes,
    )


def blocks(data: Mapping[str, Any]) -> list[Block]:
    """The report as titled tables, shared by the markdown and rich renderers."""
    out: list[Block] = []
    src = data.get("source") or {}
    d = data.get("data") or {}
    rows = []
    if src.get("path"):
        rows.append(["source", f"{src['path']} ({src.get('format', '?')})"])
    if d:
        dr = d.get("draws_per_cell", {})
        g = (
            str(dr.get("min"))
            if dr.get("min") == dr.get("max")
            else f"{dr.get('min')}..{dr.get('max')}"
        )
        rows += [
            [
                "shape",
                f"{d['n_prompts']:,} prompts x {d['n_models']} models, "
                f"{g} draw(s) per cell",
            ],
            ["scores", str(d.get("scores"))],
            [
                "coverage",
                "complete"
                if d.get("complete")
                else f"{d.get('missing_cells'):,} (prompt, model) cells not run",
            ],
            ["cost", src.get("cost") or ("yes" if d.get("cost") else "none")],
            ["latency", "yes" if d.get("latency") else "none"],
        ]
        bm = d.get("benchmarks")
        if bm:
            names = ", ".join(f"{k} ({v})" for k, v in list(bm.items())[:8])
            rows.append(
                ["benchmarks", f"{len(bm)}: {names}" + (" ..." if len(bm) > 8 else "")]
            )
    for k, v in (src.get("columns") or {}).items():
        rows.append([f"column: {k}", str(v)])
    notes = list(src.get("notes") or [])
    out.append(("Data", ["", ""], rows, notes))

    sm = data.get("single_models")
    if isinstance(sm, Mapping) and "models" in sm:
        models = sm["models"]
        keep = [
            k
            for k in (
                "model",
                "accuracy",
                "mean_cost",
                "mean_latency",
                "p95_latency",
                "n_prompts",
            )
            if models and k in models[0]
        ]
        body = [[fmt(r.get(k), k) for k in keep] for r in models[:15]]
        extra = (
            [f"{len(models) - 15} more models in report.json"]
            if len(models) > 15
            else []
        )
        out.append(("Single models (by accuracy)", keep, body, extra))

    orc = data.get("naive_oracles") or {}
    rows = []
    best = (sm or {}).get("best") if isinstance(sm, Mapping) else None
    if best:
        rows.append(
            [
                f"best single model: {best['model']}",
                fmt(best["accuracy"]),
                "-",
                fmt(best.get("cost")),
            ]
        )
    labels = {
        "prehoc": "naive prehoc oracle (max_l p_hat)",
        "posthoc": "naive posthoc oracle (any draw right)",
        "union": "single-draw union oracle",
    }
    for kind, label in labels.items():
        o = orc.get(kind)
        if not o:
            continue
        if "skipped" in o:
            continue  # the reason is in the notes
        rows.append(
            [
                label,
                fmt(o["value"]),
                fmt(o["value"] - best["accuracy"] if best else None),
                fmt(o.get("cost")),
            ]
        )
    deb = data.get("debiased_oracle")
    if isinstance(deb, Mapping) and "value" in deb:
        ci = deb.get("ci")
        lvl = int(round(100 * deb.get("level", 0.95)))
        label = f"debiased oracle ({deb.get('method')})" + (
            f", {lvl}% CI [{fmt(ci[0])}, {fmt(ci[1])}]" if ci else ""
        )
        rows.append(
            [
                label,
                fmt(deb["value"]),
                fmt(
                    deb["value"] - best["accuracy"]
                    if best and deb["value"] is not None
                    else None
                ),
                "-",
            ]
        )
    tr = data.get("truth")
    if isinstance(tr, Mapping) and "true_oracle" in tr:
        rows.append(
            [
                "true oracle (simulated truth)",
                fmt(tr["true_oracle"]),
                fmt(tr["true_oracle"] - best["accuracy"] if best else None),
                "-",
            ]
        )
    notes = []
    if isinstance(deb, Mapping):
        if "skipped" in deb:
            notes.append(f"debiased oracle: {deb['skipped']}")
        audit = deb.get("audit") or {}
        if audit.get("recommended"):
            notes.append(
                f"method recommended by capfront.audit: {audit['recommended']}"
            )
        if deb.get("audit_interval"):
            lo, hi = deb["audit_interval"]
            pct = 100 * deb.get("level", 0.95)
            notes.append(
                f"{pct:.0f}% interval from the audit's measured error (these "
                f"prompts): [{fmt(lo)}, {fmt(hi)}]"
            )
        if deb.get("method_note"):
            notes.append(deb["method_note"])
    for kind in labels:
        o = orc.get(kind) or {}
        if "skipped" in o:
            notes.append(f"{kind}: {o['skipped']}")
    if rows:
        out.append(
            ("Oracles", ["estimate", "accuracy", "gain vs best", "cost"], rows, notes)
        )

    bb = data.get("by_benchmark")
    if isinstance(bb, list) and bb:
        header = ["benchmark", "prompts", "best model", "best acc", "prehoc oracle"]
        body = [
            [
                r["benchmark"],
                fmt(r["n_prompts"]),
                str(r["best_model"]),
                fmt(r["best_accuracy"]),
                fmt(r["prehoc_oracle"]),
            ]
            for r in bb
        ]
        out.append(("Per benchmark", header, body, []))

    if isinstance(deb, Mapping) and isinstance(
        (deb.get("audit") or {}).get("table"), (list, dict)
    ):
        tab = deb["audit"]["table"]
        keep = ("method", "bias", "rmse", "interval_coverage", "coverage")
        if isinstance(tab, list):  # the columns that fit a terminal
            tab = [
                {k: v for k, v in row.items() if k in keep}
                if isinstance(row, Mapping)
                else row
                for row in tab
            ]
        h, r = _table(tab)
        out.append(
            (
                "Audit (simulated data of this shape)",
                h,
                r,
                [
                    "interval_coverage: of the audit interval (value +- z rmse); "
                    "coverage: of value +- z se (population oracle); full table "
                    "in the JSON report"
                ],
            )
        )

    for key, title in (
        ("gap_decomposition", "Gap decomposition (seed 003)"),
        ("frontier", "Frontier versus the best single model"),
        ("latency_frontier", "Latency frontier"),
    ):
        sec = data.get(key)
        if sec is None:
            continue
        if isinstance(sec, Mapping) and "skipped" in sec:
            out.append((title, [], [], [sec["skipped"]]))
            continue
        if key == "gap_decomposition":
            out.append(_gap_block(sec))
            continue
        if key == "latency_frontier" and isinstance(sec.get("pareto_mean"), list):
            out.append(_latency_block(sec))
            continue
        if key == "frontier":
            for kind, fr in sec.items():
                if not isinstance(fr, Mapping):
                    continue
                if "skipped" in fr:
                    if kind != "prehoc_debiased":  # optional: only in report.json
                        out.append((f"{title} ({kind})", [], [], [fr["skipped"]]))
                    continue
                h, r = _versus_table(fr.get("versus_best_single"))
                notes = [
                    f"AIQ (area under the frontier / cost range): "
                    f"{fmt(fr.get('aiq'))}; "
                    f"{(fr.get('vertices') or {}).get('n_vertices', '?')} "
                    "frontier vertices (report.json)",
                    "err. red. = error-rate reduction at the best model's cost; "
                    "cost red. = cost reduction at its accuracy; frontier acc = "
                    "frontier accuracy at its cost; (lo-hi) = bootstrap interval "
                    "in %",
                    *fr.get("notes", []),
                ]
                if fr.get("quality"):
                    notes.append(f"quality per cell: {fr['quality']} estimate")
                out.append((f"{title} ({kind})", h, r, notes))
            continue
        h, r = _table(sec)
        out.append((title, h, r, []))
    from .router_report import router_blocks

    out.extend(router_blocks(data.get("routers")))
    if data.get("unavailable"):
        out.append(
            (
                "Not in this version",
                [],
                [],
                ["not available yet: " + ", ".join(data["unavailable"])],
            )
        )
    return out


def to_markdown(data: Mapping[str, Any]) -> str:
    """The report as GitHub markdown."""
    lines = ["# capfront report", ""]
    for title, header, rows, notes in blocks(data):
        lines += [f"## {title}", ""]
        if header and rows:
            head = [h or " " for h in header]
            lines.append("| " + " | ".join(head) + " |")
            lines.append("|" + "|".join("---" for _ in head) + "|")
            lines += [
                "| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
                for row in rows
            ]
            lines.append("")
        lines += [f"- {n}" for n in notes]
        if notes:
            lines.append("")
    s = data.get("settings") or {}
    lines.append(
        f"capfront {data.get('capfront_version')}, seed {s.get('seed')}, "
        f"{s.get('n_resamples')} bootstrap resamples."
    )
    return "\n".join(lines) + "\n"


def _looks_numeric(cell: str) -> bool:
    head = cell.split(" [")[0].split(" (")[0].replace(",", "").rstrip("%")
    if head in ("-", ""):
        return True
    try:
        float(head)
    except ValueError:
        return False
    return True


def print_rich(data: Mapping[str, Any], console: Any = None) -> None:
    """The report as rich tables."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    for title, header, rows, notes in blocks(data):
        if header and rows:
            table = Table(
                title=title,
                title_justify="left",
                show_header=any(header),
                header_style="bold",
                box=box.SIMPLE_HEAD,
                title_style="bold",
            )
            key_value = not any(header[1:])
            for i, h in enumerate(header):
                numeric = all(_looks_numeric(row[i]) for row in rows)
                table.add_column(
                    h,
                    justify="right" if numeric and not key_value and i > 0 else "left",
                    no_wrap=(i == 0 or numeric) and not key_value,
                    overflow="ellipsis",
                )
            for row in rows:
                table.add_row(*row)
            console.print(table)
        else:
            console.print(f"[bold]{title}[/bold]")
        for n in notes:
            console.print(f"  [dim]- {n}[/dim]", highlight=False)
        console.print()


def save_figures(rep: Report, out: Path) -> list[Path]:
    """``frontier.png`` (``Frontier.plot``; single models and naive oracles when no
    frontier is available) and ``latency_frontier.png`` when there is latency."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    fronts = [
        (k, rep.objects[k])
        for k in ("frontier", "frontier_posthoc")
        if k in rep.objects
    ]
    if fronts:
        fig, axes = plt.subplots(
            1, len(fronts), figsize=(6.5 * len(fronts), 5), squeeze=False
        )
        settings = rep.data.get("settings") or {}
        for ax, (kind, fr) in zip(axes[0], fronts, strict=True):
            small = (
                rep.results.n_prompts * rep.results.n_models <= FRONTIER_CI_MAX_CELLS
            )
            if small and getattr(fr, "band", 1) is None and hasattr(fr, "with_band"):
                try:
                    fr.with_band(
                        n_resamples=min(200, settings.get("n_resamples", 200)),
                        level=settings.get("level", 0.95),
                        seed=settings.get("seed", 0),
                    )
                except (ValueError, TypeError):
                    pass  # the band is decoration; the report has the numbers
            if _accepts(fr.plot, "logx"):
                fr.plot(ax=ax, logx=kind != "frontier")
            else:
                fr.plot(ax=ax)
            ax.set_title(
                "prehoc frontier"
                if kind == "frontier"
                else "posthoc frontier (best-of-k)"
            )
        if "routers" in rep.objects:  # routers as points on the prehoc frontier
            from .router import plot_routers

            plot_routers(rep.objects["routers"], axes[0][0])
    else:
        fig, ax = plt.subplots(figsize=(6.5, 5))
        sm = rep.data.get("single_models") or {}
        models = sm.get("models") or []
        has_cost = models and models[0].get("mean_cost") is not None
        xs = [m.get("mean_cost") if has_cost else i for i, m in enumerate(models)]
        ax.scatter(xs, [m["accuracy"] for m in models], label="single models")
        orc = rep.data.get("naive_oracles") or {}
        for kind, marker in (("prehoc", "*"), ("posthoc", "P")):
            o = orc.get(kind) or {}
            if "value" in o and (o.get("cost") is not None or not has_cost):
                ax.scatter(
                    [o["cost"] if has_cost else len(models)],
                    [o["value"]],
                    marker=marker,
                    s=120,
                    label=f"naive {kind} oracle",
                )
        ax.set_xlabel("mean cost per prompt" if has_cost else "model (index)")
        ax.set_ylabel("accuracy")
        ax.set_title("single models and naive oracles")
        ax.legend(loc="lower right")
    src = rep.data.get("source") or {}
    if src.get("cost"):
        fig.text(
            0.01, 0.005, f"cost: {src['cost']}", fontsize=7, ha="left", va="bottom"
        )
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    path = out / "frontier.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    written.append(path)
    lf = rep.objects.get("latency_frontier")
    if lf is not None:
        fig, ax = plt.subplots(figsize=(6.5, 5))
        if callable(getattr(lf, "plot", None)):
            lf.plot(ax=ax)
        else:
            pts = np.asarray(_first_attr(lf, "points", "policies", "vertices"))
            if pts.ndim == 2 and pts.shape[1] >= 3:
                sc = ax.scatter(pts[:, 1], pts[:, 0], c=pts[:, 2], cmap="viridis")
                fig.colorbar(sc, ax=ax, label="latency")
                ax.set_xlabel("mean cost per prompt")
                ax.set_ylabel("quality")
        fig.tight_layout()
        path = out / "latency_frontier.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written
