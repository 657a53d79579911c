"""Models whose counts are all or nothing: their cells are known.

A greedy-decoded model (temperature 0) gives the same answer in every draw, so
on every prompt its count is ``0`` or ``G``: its rate there is 0 or 1, and its
cells carry no sampling noise. No one cell-effect distribution fits such a
model beside sampled ones (on the robustness battery's ``mixed_decoding``
family, half the models greedy, ``pgm`` came out 0.76 points below the truth at
L = 4, G = 5, further off than the naive oracle; docs/estimators.md).

With the set ``D`` of such models known, the oracle splits exactly:

    O = mean_n max_l p[n, l] = s1 + s0 * mean_{n in R} max_{l not in D} p[n, l]

where a prompt is *solved* when some model of ``D`` solved it (its maximum is
then 1), ``s1`` is the share of solved prompts, ``s0 = 1 - s1`` and ``R`` the
unsolved ones (every model of ``D`` at 0 there). The model-based estimators
(``pgm``, ``correlated``), ``crossfit`` and ``double_bc`` estimate the second
term on the counts of ``R`` and the other models; restricting to ``R``
conditions them on ``D``'s failures. The other count estimators (naive,
bootstrap and jackknife corrections, extrapolation) already treat a cell of 0 or
``G`` draws as exact, so the split leaves them unchanged; the audit audits the
reduced problem and maps its numbers back (``audit._lift_audit``).

A model counts as all or nothing when every one of its observed cells has at
least two draws and a count of 0 or ``G``, over at least
``MIN_KNOWN_CELLS`` cells: a sampled model with rates strictly inside (0, 1)
gives such counts on all of a few thousand prompts only when its rates are all
within a hair of 0 or 1, where taking them as 0 or 1 costs as little. (On 24
other battery families, 27 data sets each, no model qualified.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._input import row_blocks

#: observed cells a model needs before its all-or-nothing counts make it known
MIN_KNOWN_CELLS = 20


@dataclass(frozen=True)
class KnownSplit:
    """The all-or-nothing models and the prompts they solved.

    known : (L,) bool, the all-or-nothing models ``D``.
    solved : (N,) bool, prompts some model of ``D`` solved (maximum 1).
    """

    known: np.ndarray
    solved: np.ndarray

    @property
    def share_solved(self) -> float:
        """``s1``: the share of prompts a known model solved."""
        return float(self.solved.mean()) if self.solved.size else 0.0

    @property
    def rest_models(self) -> np.ndarray:
        """Indices of the models that are not known."""
        return np.flatnonzero(~self.known)

    @property
    def rest_prompts(self) -> np.ndarray:
        """Indices of the prompts no known model solved."""
        return np.flatnonzero(~self.solved)


def known_models(S: np.ndarray, G: np.ndarray) -> np.ndarray:
    """``(L,)`` bool: models whose every observed cell (``G > 0``) has at least
    two draws and ``S`` equal to 0 or ``G``, over at least ``MIN_KNOWN_CELLS``
    cells."""
    S = np.asarray(S)
    G = np.broadcast_to(np.asarray(G), S.shape)
    L = S.shape[1]
    ok = np.ones(L, dtype=bool)
    n_obs = np.zeros(L, dtype=np.int64)
    for rows in row_blocks(S.shape[0]):  # (no (N, L) temporaries at N = 1e7)
        s, g = S[rows], G[rows]
        obs = g > 0
        ok &= (((s == 0) | (s == g)) & (g >= 2) | ~obs).all(axis=0)
        n_obs += obs.sum(axis=0)
        if not ok.any():
            break
    return ok & (n_obs >= MIN_KNOWN_CELLS)


def declared_known(results, names) -> np.ndarray | None:
    """``(L,)`` bool of the models a user declares known (``known_models=``:
    e.g. greedy runs, whose one draw is their rate), or ``None``. Every named
    model must exist and answer all or nothing in every observed cell (any
    number of draws, one included)."""
    if names is None:
        return None
    if isinstance(names, str):
        names = [names]
    models = [str(m) for m in results.models]
    pos = {m: i for i, m in enumerate(models)}
    mask = np.zeros(len(models), dtype=bool)
    for name in names:
        if str(name) not in pos:
            raise ValueError(
                f"known_models: no model {str(name)!r} in these results (models: "
                f"{', '.join(models[:10])}{', ...' if len(models) > 10 else ''})"
            )
        mask[pos[str(name)]] = True
    cols = np.flatnonzero(mask)  # (the named models' cells only)
    S = np.asarray(results.successes)[:, cols]
    G = np.broadcast_to(np.asarray(results.n_draws), (len(S), len(models)))[:, cols]
    between = (G > 0) & (S != 0) & (S != G)
    for j in np.flatnonzero(between.any(axis=0)):
        n, i = int(np.flatnonzero(between[:, j])[0]), int(cols[j])
        raise ValueError(
            f"known_models: model {models[i]!r} has counts strictly between 0 and "
            f"its draws in {int(between[:, j].sum())} cell(s) (e.g. prompt "
            f"{results.prompts[n]!r}: {int(S[n, j])} of {int(G[n, j])}); a model "
            "whose rates are known answers all or nothing (greedy decoding): "
            "leave it out of known_models"
        )
    return mask


def split_known(
    S: np.ndarray, G: np.ndarray, declared: np.ndarray | None = None
) -> KnownSplit | None:
    """The :class:`KnownSplit` of counts ``(S, G)``: the all-or-nothing models
    (:func:`known_models`) and the ``declared`` ones (:func:`declared_known`);
    ``None`` when there are none."""
    known = known_models(S, G)
    if declared is not None:
        known = known | np.asarray(declared, dtype=bool)
    if not known.any():
        return None
    S = np.asarray(S)
    G = np.broadcast_to(np.asarray(G), S.shape)
    solved = ((S[:, known] == G[:, known]) & (G[:, known] > 0)).any(axis=1)
    return KnownSplit(known=known, solved=solved)


def lift_values(split: KnownSplit, rest_values: np.ndarray) -> np.ndarray:
    """Per-prompt values ``(N, K)`` from those of the unsolved prompts: 1 on
    the solved prompts (their maximum), ``rest_values`` on the others."""
    rest_values = np.asarray(rest_values, dtype=np.float64)
    if rest_values.ndim == 1:
        rest_values = rest_values[:, None]
    out = np.ones((split.solved.size, rest_values.shape[1]))
    out[~split.solved] = rest_values
    return out


#: below this many prompts that no known model solved (or with no other model)
#: the oracle is taken as the naive one: see :func:`exact_decomposition`
MIN_REST_PROMPTS = 20


def known_degenerate(split: KnownSplit) -> bool:
    """Whether too little is left to estimate: every model known, or fewer than
    ``MIN_REST_PROMPTS`` prompts that no known model solved."""
    return len(split.rest_models) == 0 or len(split.rest_prompts) < MIN_REST_PROMPTS


def all_or_nothing_words(known) -> str:
    """How the report, the audit's note and the decomposition's note open on
    the known models: ``"N model(s) answered all or nothing on every prompt"``,
    with their names and the likely cause when ``known`` is a list of names
    (an int: the count alone)."""
    if isinstance(known, (int, np.integer)):
        return f"{int(known)} model(s) answered all or nothing on every prompt"
    names = [str(m) for m in known]
    return (
        f"{len(names)} model(s) answered all or nothing on every prompt "
        f"({', '.join(names)}: greedy decoding?)"
    )


def exact_decomposition(split: KnownSplit, S: np.ndarray, G: np.ndarray):
    """The naive oracle's decomposition where :func:`known_degenerate`: exact
    when every model is known; else its bias is at most the share of the
    prompts no known model solved (``naive_bias_bound``, a bound, not an
    estimate: the naive maximum of a prompt is off by at most 1)."""
    from .bias_correction import bounded_naive_decomposition

    n = split.solved.size
    rest = len(split.rest_prompts)
    exact = len(split.rest_models) == 0
    bound = 0.0 if exact else rest / max(n, 1)
    note = (
        all_or_nothing_words(int(split.known.sum()))
        + ", so their rates are known, and "
        + (
            "no other model is left: the naive oracle is exact"
            if exact
            else f"they solved all but {rest} prompts: the naive oracle, its bias "
            f"at most {bound:.2g} (a bound)"
        )
    )
    return bounded_naive_decomposition(S, G, bound, note)


def one_draw_hint(G: np.ndarray, models) -> str:
    """A hint for pools where some models have one draw in every cell and
    others more ("" when not): a greedy run's one draw is its rate, which the
    counts cannot show; ``known_models=`` says so. ``G``: the draws ``(N, L)``
    (or broadcastable), ``models`` their names."""
    gmax = np.asarray(G).max(axis=0) if np.ndim(G) == 2 else np.asarray(G)
    gmax = np.broadcast_to(gmax, (len(models),))
    one = gmax == 1  # (one draw in every observed cell: the largest is 1)
    if not (one.any() and (gmax >= 2).any()):
        return ""
    names = [str(m) for m in np.asarray(models)[one]]
    shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
    return (
        f"model(s) {shown} have one draw in every cell while others have more: if "
        f"they were run greedily (temperature 0), their one answer is their rate; "
        f"pass known_models={names[:5]!r} (docs/debiasing.md), else they are read "
        "as one sample each"
    )
