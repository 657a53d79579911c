"""Figures of the cost-quality frontier, in the style of the seed paper's Figure 1.

- :func:`plot_frontier` draws one :class:`~capfront.frontier.Frontier` on an Axes:
  single models as points (only the ones that matter labelled), the frontier as a
  line, and two arrows from the best single model: straight up to the frontier at
  its cost (the matched-cost error-rate reduction) and straight left to the
  frontier at its accuracy (the matched-quality cost reduction). A posthoc frontier
  adds each model's best-of-k curve as a faint line (the best model's in colour).
- Without a cost (``cost="unit"``) a prehoc frontier is one point (every model
  costs one generation), so :func:`plot_frontier` draws the models ranked by
  accuracy with the oracle above them instead; a posthoc one has generations per
  prompt on the x axis.
- :func:`use_log_cost` is the rule for a log cost axis (costs spanning more than
  ``LOG_SPAN`` times), used for every panel of a figure at once.

``Frontier.plot`` calls :func:`plot_frontier`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ._names import short_names

#: a cost axis is logarithmic when the largest positive cost is more than this many
#: times the smallest
LOG_SPAN = 10.0
#: at most this many single models get a name on a panel
MAX_LABELS = 7
COLORS = {
    "frontier": "tab:blue",
    "debiased": "tab:orange",
    "single": "tab:red",
    "best": "black",
    "error": "tab:green",
    "cost": "tab:purple",
    "k": "0.6",
}


def is_unit_cost(fr: Any) -> bool:
    """Whether the frontier counts generations (no cost in the data)."""
    return isinstance(fr.cost, str) and fr.cost == "unit"


def cost_axis_label(fr: Any, cost_label: str | None = None) -> str:
    if is_unit_cost(fr):
        return "generations per prompt (no cost given)"
    return cost_label or "mean cost per prompt"


def quality_label(fr: Any) -> str:
    return "accuracy" if fr.results.is_binary else "mean score"


def plotted_costs(fr: Any) -> np.ndarray:
    """Every x a panel of ``fr`` shows: vertices and single (best-of-k) points."""
    pts = fr.single_points()
    return np.concatenate([np.asarray(fr.vertices)[:, 0], pts["cost"].to_numpy()])


def use_log_cost(costs: Iterable[np.ndarray]) -> bool:
    """Log x when the positive costs span more than :data:`LOG_SPAN` times and no
    cost is zero (a log axis would drop it)."""
    x = np.concatenate([np.ravel(np.asarray(c, dtype=np.float64)) for c in costs])
    x = x[np.isfinite(x)]
    if x.size == 0 or (x <= 0).any():
        return False
    return bool(x.max() > LOG_SPAN * x.min())


def _pick_labels(singles: Any, fr: Any, best_model: str, max_labels: int) -> list[int]:
    """Rows of ``singles`` to name: the best model, the cheapest, the single models
    no other is both cheaper and better than, then those nearest the frontier
    (smallest quality gap below it at their cost)."""
    cost = singles["cost"].to_numpy()
    qual = singles["quality"].to_numpy()
    order: list[int] = []
    best_rows = np.flatnonzero(singles["model"].to_numpy() == best_model)
    order += [int(i) for i in best_rows[:1]]
    order.append(int(np.argmin(cost)))
    # the single models no other beats on both cost and quality, cheapest first
    by_cost = np.lexsort((-qual, cost))
    best_so_far = -np.inf
    for i in by_cost:
        if qual[i] > best_so_far + 1e-12:
            order.append(int(i))
            best_so_far = qual[i]
    span = max(float(np.ptp(qual)), 1e-9)
    gap = (np.asarray(fr.quality_at(cost), dtype=np.float64) - qual) / span
    gap = np.where(np.isfinite(gap), gap, np.inf)
    near = [int(i) for i in np.argsort(gap, kind="stable") if gap[i] <= 0.1]
    order += near
    return list(dict.fromkeys(order))[:max_labels]


def _label_points(
    ax: Any, xs: Sequence[float], ys: Sequence[float], texts: Sequence[str]
) -> None:
    """Names next to points, alternating sides by height so neighbours do not
    stack on one another."""
    rank = np.argsort(np.asarray(ys))
    for j, i in enumerate(rank):
        right = j % 2 == 0
        ax.annotate(
            texts[i],
            (xs[i], ys[i]),
            fontsize=7,
            xytext=(5 if right else -5, 3 if j % 4 < 2 else -8),
            textcoords="offset points",
            ha="left" if right else "right",
            color="0.15",
            zorder=5,
            gid=MOVABLE,
            # a leader line, visible once declutter moves the name away
            arrowprops={
                "arrowstyle": "-",
                "color": "0.6",
                "lw": 0.5,
                "shrinkA": 0,
                "shrinkB": 3,
                "relpos": (0.0 if right else 1.0, 0.5),
            },
        )


def _label_best(ax: Any, x: float, y: float, text: str) -> None:
    """The best model's name above its star (its arrows leave to the left and up)."""
    ax.annotate(
        text,
        (x, y),
        fontsize=7,
        fontweight="bold",
        xytext=(-4, 6),
        textcoords="offset points",
        ha="right",
        va="bottom",
        color="0.05",
        zorder=5,
        gid=FIXED,
    )


def _points(ax: Any, x: Any, y: Any, best: tuple[float, float], name: str) -> None:
    """Single models as points, the best one as a star."""
    ax.scatter(
        x,
        y,
        s=20,
        color=COLORS["single"],
        zorder=4,
        label="single models",
        alpha=0.85,
        lw=0,
    )
    ax.scatter(
        [best[0]],
        [best[1]],
        s=120,
        marker="*",
        color=COLORS["best"],
        zorder=6,
        label=f"best single model ({name})",
    )


def _mid(a: float, b: float, log: bool) -> float:
    return float(np.sqrt(a * b)) if log and a > 0 and b > 0 else (a + b) / 2


#: gids of the text a panel carries: model names that may move, and the texts
#: they must not cover (the best model's name, the arrows' labels)
MOVABLE, FIXED = "capfront-label", "capfront-fixed"


def declutter(ax: Any, tries: int = 8) -> None:
    """Move each model name that overlaps another text (or an earlier name) up
    or down, a line at a time and alternating, to the nearest free place (its
    leader line then shows which point it names). Call again after the layout
    changes."""
    from matplotlib.text import Text

    fig = ax.figure
    renderer = fig.canvas.get_renderer()

    def extent(t: Any) -> Any:  # the text alone, not its leader line
        t.update_positions(renderer)
        return Text.get_window_extent(t, renderer)

    fixed = [t for t in ax.texts if t.get_gid() == FIXED]
    movable = [t for t in ax.texts if t.get_gid() == MOVABLE]
    # the arrows themselves (empty text) count by their line's box
    boxes = [
        extent(t) if t.get_text() else t.get_window_extent(renderer) for t in fixed
    ]
    for t in movable:
        if not hasattr(t, "_capfront_home"):
            t._capfront_home = tuple(t.xyann)
        dx, dy = t._capfront_home
        step = extent(t).height * 72.0 / fig.dpi + 1.0
        shifts = [0.0] + [s * k * step for k in range(1, tries + 1) for s in (1, -1)]
        for d in [*shifts, 0.0]:  # nowhere free: back home
            t.xyann = (dx, dy + d)
            box = extent(t)
            if not any(box.overlaps(b) for b in boxes):
                break
        boxes.append(box)


ARROW = {"arrowstyle": "-|>", "lw": 1.6, "shrinkA": 0, "shrinkB": 0}


def _arrow(
    ax: Any,
    start: tuple[float, float],
    end: tuple[float, float],
    color: str,
    text: str,
    at: tuple[float, float],
    offset: tuple[float, float],
    **text_kw: Any,
) -> None:
    """An arrow from ``start`` to ``end`` and its label at ``at`` (+ offset)."""
    ax.annotate(
        "",
        xy=end,
        xytext=start,
        arrowprops={**ARROW, "color": color},
        zorder=4,
        gid=FIXED,
    )
    ax.annotate(
        text,
        at,
        xytext=offset,
        textcoords="offset points",
        fontsize=8,
        color=color,
        gid=FIXED,
        **text_kw,
    )


def _arrows(
    ax: Any, fr: Any, cb: float, ab: float, log: bool, compact: bool = False
) -> None:
    """Matched-cost (up) and matched-quality (left) arrows from the best model."""
    q_up = float(fr.quality_at(cb))
    c_left = float(fr.cost_at(ab))
    if np.isfinite(q_up) and q_up > ab + 1e-9 and ab < 1:
        err = (q_up - ab) / (1 - ab)
        text = (
            f"-{err:.0%} errors"
            if compact
            else f"{err:.0%} fewer errors\nat the same cost"
        )
        _arrow(
            ax,
            (cb, ab),
            (cb, q_up),
            COLORS["error"],
            text,
            (cb, (ab + q_up) / 2),
            (6, 0),
            va="center",
        )
    if np.isfinite(c_left) and c_left < cb * (1 - 1e-9) and cb > 0:
        cut = 1 - c_left / cb
        text = (
            f"-{cut:.0%} cost"
            if compact
            else f"{cut:.0%} lower cost\nat the same {quality_label(fr)}"
        )
        _arrow(
            ax,
            (cb, ab),
            (c_left, ab),
            COLORS["cost"],
            text,
            (_mid(c_left, cb, log), ab),
            (0, -6),
            ha="center",
            va="top",
        )


def plot_frontier(
    fr: Any,
    ax: Any = None,
    *,
    label_models: bool = True,
    logx: bool | None = None,
    cost_label: str | None = None,
    arrows: bool = True,
    max_labels: int = MAX_LABELS,
    names: dict[str, str] | None = None,
    extra: Sequence[tuple[Any, str]] = (),
    legend: bool = True,
    compact: bool = False,
) -> Any:
    """Draw ``fr`` on ``ax`` (a new figure when None); returns the Axes.

    Parameters
    ----------
    fr : Frontier
    label_models : name the best model, the cheapest and those on or near the
        frontier (at most ``max_labels``); the others are unlabelled points
    logx : log cost axis; None decides by :func:`use_log_cost`
    cost_label : x-axis label (default "mean cost per prompt"; "generations per
        prompt (no cost given)" without cost)
    arrows : the matched-cost and matched-quality arrows from the best model
    names : display names (default: :func:`capfront._names.short_names`)
    extra : more frontiers drawn as dashed lines, ``(frontier, legend label)``
        (e.g. the frontier of debiased per-cell quality)
    compact : short arrow labels and only the best model named (small panels)
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 5))
    if is_unit_cost(fr) and not fr.posthoc:
        return plot_ranked(fr, ax, names=names, legend=legend)
    names = names or short_names(fr.models.astype(str))
    if logx is None:
        logx = use_log_cost([plotted_costs(fr)])
    v = np.asarray(fr.vertices)
    pts = fr.single_points()
    singles = pts[pts["k"] == 1].reset_index(drop=True)
    best_model, ab, cb = fr.best_single()
    if fr.band is not None:
        ax.fill_between(
            fr.band["cost"],
            fr.band["lower"],
            fr.band["upper"],
            color=COLORS["frontier"],
            alpha=0.15,
            lw=0,
            label=f"{fr.band.get('level', 0.95):.0%} bootstrap band",
        )
    if fr.posthoc:
        for model, grp in pts.groupby("model", sort=False):
            grp = grp.sort_values("k")
            if len(grp) < 2:
                continue
            is_best = model == best_model
            ax.plot(
                grp["cost"],
                grp["quality"],
                "-",
                color=COLORS["best"] if is_best else COLORS["k"],
                lw=1.2 if is_best else 0.6,
                alpha=0.9 if is_best else 0.5,
                zorder=2,
                label=f"best model, best-of-k (k = 1..{int(grp['k'].max())})"
                if is_best
                else None,
            )
    kind = "best-of-k routing" if fr.posthoc else "routing"
    lines = [(fr, "-", COLORS["frontier"], 2.2, f"frontier ({kind})")]
    lines += [(o, "--", COLORS["debiased"], 1.6, label) for o, label in extra]
    for line_fr, style, color, lw, label in lines:
        lv = np.asarray(line_fr.vertices)
        ax.plot(lv[:, 0], lv[:, 1], style, color=color, lw=lw, zorder=3, label=label)
        if line_fr is fr:
            right = float(np.nanmax(pts["cost"])) if len(pts) else v[-1, 0]
            if right > v[-1, 0]:  # more budget buys nothing: the frontier is flat
                ax.plot([v[-1, 0], right], [v[-1, 1]] * 2, "--", color=color, lw=1)
    _points(
        ax,
        singles["cost"],
        singles["quality"],
        (cb, ab),
        names.get(best_model, best_model),
    )
    if arrows:
        _arrows(ax, fr, cb, ab, bool(logx), compact)
    if label_models and len(singles):
        rows = _pick_labels(singles, fr, best_model, max_labels)
        _label_best(ax, cb, ab, names.get(best_model, best_model))
        rows = [r for r in rows if singles["model"].iloc[r] != best_model]
        rows = [] if compact else rows
        _label_points(
            ax,
            singles["cost"].to_numpy()[rows],
            singles["quality"].to_numpy()[rows],
            [names.get(m, m) for m in singles["model"].to_numpy()[rows]],
        )
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(cost_axis_label(fr, cost_label))
    ax.set_ylabel(quality_label(fr))
    if legend:
        ax.legend(loc="best", fontsize=7, framealpha=0.9)
    ax.grid(alpha=0.3)
    declutter(ax)
    return ax


def plot_ranked(
    fr: Any, ax: Any, *, names: dict[str, str] | None = None, legend: bool = True
) -> Any:
    """No cost, one generation: models ranked by accuracy, the oracle (frontier
    top) as a line and an arrow from the best model up to it."""
    names = names or short_names(fr.models.astype(str))
    pts = fr.single_points(best_of_k=False).sort_values(
        "quality", ascending=False, kind="stable"
    )
    x = np.arange(1, len(pts) + 1)
    best_model, ab, _ = fr.best_single()
    top = fr.max_quality
    ax.axhline(
        top,
        color=COLORS["frontier"],
        lw=2,
        label="oracle (each prompt to its best model)",
    )
    _points(ax, x, pts["quality"], (1, ab), names.get(best_model, best_model))
    if top > ab + 1e-9 and ab < 1:
        _arrow(
            ax,
            (1, ab),
            (1, top),
            COLORS["error"],
            f"{(top - ab) / (1 - ab):.0%} fewer errors",
            (1, (ab + top) / 2),
            (6, 0),
            va="center",
        )
    ax.set_xlabel("models, most accurate first (no cost given: one generation each)")
    ax.set_ylabel(quality_label(fr))
    ax.set_xlim(0, len(pts) + 1)
    if legend:
        ax.legend(loc="lower left", fontsize=7, framealpha=0.9)
    ax.grid(alpha=0.3)
    return ax
