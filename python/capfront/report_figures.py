"""The report's figures: ``frontier.png`` (prehoc and posthoc panels),
``frontier_by_benchmark.png`` (one small panel per benchmark) and
``latency_frontier.png``. Drawing is in :mod:`capfront.frontier_plot`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._names import short_names
from .frontier_plot import declutter, plot_frontier, plotted_costs, use_log_cost

#: small multiples for at most this many benchmarks (the largest ones)
MAX_PANELS = 16
#: the frontier's bootstrap band is drawn up to this many (prompt, model) cells
BAND_MAX_CELLS = 20_000


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _band(rep: Any, fr: Any) -> None:
    settings = rep.data.get("settings") or {}
    small = rep.results.n_prompts * rep.results.n_models <= BAND_MAX_CELLS
    if small and fr.band is None and len(fr.vertices) > 1:
        try:
            fr.with_band(
                n_resamples=min(200, settings.get("n_resamples", 200)),
                level=settings.get("level", 0.95),
                seed=settings.get("seed", 0),
            )
        except (ValueError, TypeError):
            pass  # the band is decoration; the report has the numbers


def _caption(rep: Any, fig: Any) -> None:
    src = rep.data.get("source") or {}
    cost = src.get("cost")
    if cost:
        import textwrap

        width = int(fig.get_figwidth() * 17)  # characters of 7 pt text per inch
        text = textwrap.fill(f"cost: {cost}", width=max(width, 60))
        fig.text(0.01, 0.005, text, fontsize=7, ha="left", va="bottom")


def _save(fig: Any, path: Path) -> Path:
    plt = _pyplot()
    for ax in fig.axes:  # the layout moved the points: names again clear
        declutter(ax)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def frontier_figure(rep: Any) -> Any:
    """Prehoc (with the debiased-quality frontier dashed) and posthoc panels,
    with one log-or-linear decision for both."""
    plt = _pyplot()
    fronts = [
        (k, rep.objects[k])
        for k in ("frontier", "frontier_posthoc")
        if k in rep.objects
    ]
    if not fronts:
        return _fallback_figure(rep)
    names = short_names(rep.results.models.astype(str))
    logx = use_log_cost(plotted_costs(fr) for _, fr in fronts)
    fig, axes = plt.subplots(
        1, len(fronts), figsize=(6.8 * len(fronts), 5.2), squeeze=False
    )
    for ax, (kind, fr) in zip(axes[0], fronts, strict=True):
        _band(rep, fr)
        extra = []
        deb = rep.objects.get("frontier_debiased")
        if kind == "frontier" and deb is not None and len(deb.vertices) > 1:
            extra.append((deb, "frontier, debiased per-cell quality"))
        plot_frontier(fr, ax, logx=logx, names=names, extra=extra)
        if kind == "frontier" and "routers" in rep.objects:
            from .router import plot_routers  # routers as points on the frontier

            plot_routers(rep.objects["routers"], ax)
        ax.set_title(
            "route each prompt to one model (prehoc)"
            if kind == "frontier"
            else "route and sample k times, keep the best (posthoc)",
            fontsize=10,
        )
    _caption(rep, fig)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig


def benchmark_figure(rep: Any) -> Any | None:
    """One small prehoc panel per benchmark (the largest :data:`MAX_PANELS`);
    None with fewer than two benchmarks."""
    fr = rep.objects.get("frontier")
    if fr is None or fr.benchmark_labels is None:
        return None
    groups = fr._groups()
    if len(groups) < 2:
        return None
    plt = _pyplot()
    names = short_names(rep.results.models.astype(str))
    top = sorted(groups.items(), key=lambda kv: -int((kv[1] > 0).sum()))[:MAX_PANELS]
    subs = [(name, fr.sub(w)) for name, w in top]
    logx = use_log_cost(plotted_costs(s) for _, s in subs)
    ncol = min(4, len(subs))
    nrow = -(-len(subs) // ncol)
    fig, axes = plt.subplots(
        nrow, ncol, figsize=(max(4.2 * ncol, 7.0), 3.4 * nrow + 0.8), squeeze=False
    )
    for i, (ax, (name, sub)) in enumerate(zip(axes.ravel(), subs, strict=False)):
        plot_frontier(sub, ax, logx=logx, names=names, legend=False, compact=True)
        n = int((sub.weights > 0).sum())
        ax.set_title(f"{name} ({n} prompts)", fontsize=8)
        ax.tick_params(labelsize=7)
        ylabel = ax.get_ylabel()
        bottom = i >= len(subs) - ncol  # no panel below this one
        ax.set_xlabel(ax.get_xlabel() if bottom else "", fontsize=8)
        ax.set_ylabel(ylabel if i % ncol == 0 else "", fontsize=8)
        for t in ax.texts:
            t.set_fontsize(6)
    for ax in axes.ravel()[len(subs) :]:
        ax.set_visible(False)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    keep = [
        (h, lab)
        for h, lab in zip(handles, labels, strict=True)
        if not lab.startswith("best single model (")
    ]
    keep.append((handles[-1], "best single model of the benchmark"))
    fig.legend(
        *zip(*keep, strict=True),
        loc="upper center",
        bbox_to_anchor=(0.5, 0.975),
        ncol=len(keep),
        fontsize=8,
        frameon=False,
    )
    title = "per benchmark: the frontier against the best single model of each"
    if len(groups) > MAX_PANELS:
        title += f" ({MAX_PANELS} largest of {len(groups)})"
    fig.suptitle(title, fontsize=10, y=0.998)
    _caption(rep, fig)
    fig.tight_layout(rect=(0, 0.04, 1, 0.95))
    return fig


def _finish(rep: Any, fig: Any, ax: Any, xlabel: str, title: str) -> Any:
    """Labels, title, legend, grid, caption and layout of a one-panel figure."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel("accuracy" if rep.results.is_binary else "mean score")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right", fontsize=7)
    ax.grid(alpha=0.3)
    _caption(rep, fig)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig


def _fallback_figure(rep: Any) -> Any:
    """Without the frontier: single models (by cost, or ranked) and naive oracles."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.8, 5.2))
    sm = rep.data.get("single_models") or {}
    models = sm.get("models") or []
    has_cost = bool(models) and models[0].get("mean_cost") is not None
    xs = [m.get("mean_cost") if has_cost else i + 1 for i, m in enumerate(models)]
    ax.scatter(xs, [m["accuracy"] for m in models], s=18, label="single models")
    orc = rep.data.get("naive_oracles") or {}
    o = orc.get("prehoc") or {}
    if "value" in o:
        ax.axhline(o["value"], color="tab:blue", label="oracle (plug-in)")
    xlabel = "mean cost per prompt" if has_cost else "models, most accurate first"
    return _finish(rep, fig, ax, xlabel, "single models and the oracle")


def latency_figure(rep: Any) -> Any | None:
    """Policies no other beats on quality, cost and mean latency, coloured by
    mean latency; single models ringed."""
    lf = rep.objects.get("latency_frontier")
    if lf is None or not len(lf.policies):
        return None
    table = lf.policies
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.2, 5.2))
    pareto = table[table["pareto_mean"]] if "pareto_mean" in table else table
    single = table[table["source"] == "single"] if "source" in table else table[:0]
    lat = table["latency_mean"]
    lo, hi = float(lat.min()), float(lat.max())
    # a few slow models must not wash out the colours of the rest
    wide = lo > 0 and hi > 10 * lo
    norm = (plt.matplotlib.colors.LogNorm if wide else plt.Normalize)(lo, hi)
    sc = None
    layers = [
        (pareto, {"s": 8, "lw": 0}, "not beaten on quality, cost and latency"),
        (
            single,
            {"s": 45, "edgecolors": "tab:red", "linewidths": 1.2},
            "single models",
        ),
    ]
    for frame, style, label in layers:
        sc_ = ax.scatter(
            frame["cost"],
            frame["quality"],
            c=frame["latency_mean"],
            norm=norm,
            cmap="viridis",
            label=label,
            **style,
        )
        sc = sc_ if frame is pareto else sc
    fig.colorbar(sc, ax=ax, label="mean latency per prompt")
    if use_log_cost([table["cost"].to_numpy()]):
        ax.set_xscale("log")
    ax.xaxis.set_major_locator(plt.MaxNLocator(6))
    xlabel = (
        "mean cost per prompt"
        if rep.results.has_cost
        else "generations per prompt (no cost given)"
    )
    return _finish(
        rep, fig, ax, xlabel, "routing policies by quality, cost and latency"
    )


def save_figures(rep: Any, out: Path) -> list[Path]:
    """Write the figures into ``out``; returns their paths."""
    out = Path(out)
    written = [_save(frontier_figure(rep), out / "frontier.png")]
    for name, make in (
        ("frontier_by_benchmark.png", benchmark_figure),
        ("latency_frontier.png", latency_figure),
    ):
        fig = make(rep)
        if fig is not None:
            written.append(_save(fig, out / name))
    return written
