"""Latent prompt classes for ``pgm``: specialisation that no label names.

The model of :mod:`capfront.debias.latent` with each prompt in one of ``K``
unobserved classes (within its topic label ``t``, when labels are given)::

    class c_n ~ Categorical(pi[t_n, :]),   d_n ~ the nonparametric difficulty prior,
    logit q[n, l] = theta[l, t_n, c_n] - d_n,   p[n, l] = q + the cell effect,

the same difficulty prior (shared by all classes), cell-effect families and ridge
penalty as the one-class model. ``K = 1`` is that model exactly (and runs its code).

Why: real logs rarely carry the labels of what models specialise in. Without them
the one-class model reads a model's advantage on a group of prompts as independent
cell noise, shrinks every cell's posterior toward the model's overall rate and
places the posterior maximum too low: on unlabelled 4-topic worlds ``pgm`` came out
0.7-2.4 points under the true oracle. The classes give that shared structure a
place; continuous (low-rank) specialisation is approximated by a few classes.

Fit, by EM on the marginal likelihood of the counts: every prompt is carried once
per class (its cells' table rows, the class's ``theta`` column), so the one-class
kernels do the work unchanged. E-step: each (prompt, class) pair's difficulty
posterior and log marginal likelihood ``ll[n, k]`` (the E-step kernel), the class
responsibilities ``r[n, k] ~ pi[t_n, k] exp(ll[n, k])``; M-step: the M-step
statistics of the pairs weighted by ``r`` (the statistics kernel on
``r``-weighted difficulty posteriors), then ``theta`` and the scale as in the
one-class model, ``pi`` the mean responsibilities per label and the difficulty
prior the ``r``-weighted mean posterior. Start: k-means on each prompt's centred
logit success rates (fixed seed), one M-step from those hard classes.

``K`` is chosen by AIC over ``CLASS_CANDIDATES`` (``-2 loglik + 2 n_params``, an
estimate of ``-2 x`` the log-likelihood of fresh prompts; every candidate is
fitted). BIC (``n_params log N``) kept one class where two or three kinds of
prompts mattered (near-ceiling pools, clustered prompts: docs/debiasing.md).
Above ``SUBSAMPLE_ABOVE`` prompts the classes' hyperparameters are fitted on an
evenly spaced subsample of ``SUBSAMPLE_SIZE`` prompts (they are global), and the
posterior maximum runs on all prompts.

Posterior maximum: ``E_post[max_l p | data] = sum_k r[n, k] E[max_l p | data,
class k]``, each term the one-class kernel's exact posterior maximum; pairs with
``r[n, k] < CLASS_MIN_RESP`` are skipped (the rest renormalised).
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy.cluster.vq import kmeans2

from .._backend import resolve_backend
from .._kernels import dispatch
from .._kernels.latent import block_rows
from ._input import even_rows, row_blocks
from ._input import n_cells as count_cells
from .correlated import squarem_step
from .latent import (
    D_GRID,
    FAMILIES,
    LEAN_ABOVE,
    LOGIT_T_DF,
    SCALE_GRID,
    SCALE_RES,
    SUBSAMPLE_ABOVE,
    SUBSAMPLE_SIZE,
    THETA_GRID,
    UNBOUNDED,
    EMRows,
    LatentFit,
    _auto_stride,
    _candidates,
    _cell_table,
    _cells,
    _emax,
    _latent_fit,
    _m_step,
    _stats,
    check_bounds,
    fit_decomposition,
    fit_latent,
    fit_t_df,
    resp_blocks,
)
from .latent import posterior_max as _posterior_max_one
from .result import Decomposition

CLASS_CANDIDATES = (1, 2, 4, 8)
# latent_classes="auto" tries K only with at least this many prompts per class:
# fewer cannot pin a class's L aptitudes (the AIC took K = 8 on EvalPerf's 118
# prompts, 15 per class, and the fit and audit took 5x as long as with K = 2)
MIN_CLASS_PROMPTS = 50
# family="auto": the cell-effect families pgm chooses from by marginal likelihood,
# and the log-likelihood (nats) a later one must gain over the best earlier one to
# be chosen. Why the Student t: with rare large cell effects (heavy-tailed or
# mixed per-cell noise, flaky cells) the normal's shrinkage pulls every cell's
# posterior, and so the posterior maximum, too far down (pgm came out 0.7-1.4
# points low on such worlds, within 0.3 with the t). Why the Beta, last: the
# audit already took it by this rule (its AUTO_MARGIN), so the report quoted a
# Beta pgm where debiased_oracle(res, "pgm") stayed on the logit scale; on
# latent classes with Beta rates the logit families left pgm 0.3-1.1 points low
# where the Beta fit, higher by 25-1,000 nats, was within 0.35 (docs/debiasing.md
# "The Beta family in pgm's own choice")
AUTO_FAMILIES = ("logitnormal", "logit_t", "betabinomial")
# the logit-scale families (the audit fits the Beta beside them itself)
LOGIT_FAMILIES = ("logitnormal", "logit_t")
FAMILY_MARGIN = 2.0
# pgm returns the naive oracle when the bound on its bias is at most its standard
# error or this (0.2 points, the accuracy asked of a debiased estimate); the check
# runs only from SHORTCUT_MIN_G draws per cell (below, the bound is far larger)
NAIVE_BOUND_TARGET = 0.002
SHORTCUT_MIN_G = 500
# (prompt, class) pairs with less responsibility are skipped in the posterior max
CLASS_MIN_RESP = 1e-6
# prompts per chunk in the class fit's posterior maximum (bounds its memory)
CHUNK = 8192
# EM iterations of a class fit (the mixture converges more slowly than K = 1)
CLASS_MAX_ITER = 150
# EM tolerance (log-likelihood per cell) of the fits that only choose K: AIC
# differences between candidates are far larger than what EM gains below it
SELECT_TOL = 2e-5
SELECT_SIZE = 4000
# the class search stops after this many candidates in a row that do not improve
# the AIC (on the battery's near-ceiling pools K = 2 did not pay and K = 4, 8 did)
SELECT_PATIENCE = 2
SPARSE_R = 1e-8
# pairs below this responsibility change the statistics by less than the E-step's
# floor: left out of them
KEEP_R = 1e-8
SPARSE_EVERY = 5
# k-means runs (k-means++ starts) per starting partition of the class EM: the
# one with the least within-cluster sum of squares starts it. One run left the
# EM at a local optimum in many of topics_many's data sets (8 unlabelled
# topics): pgm 0.8-2.7 points low, 860-19,000 nats below the likelihood the
# best-of-10 start reached, which gave -0.15..+0.10 (docs/debiasing.md)
KMEANS_RUNS = 10
# fits of more EM iterations than this are SQUAREM-accelerated (_class_em); the
# audit's refits (5 steps from the data's fit) are plain EM steps
ACCELERATE_ABOVE = 10


def _init_classes(
    S, G, topic, K: int, seed: int = 0, runs: int | None = None
) -> np.ndarray:
    """Hard starting classes ``(N,)``: k-means on each prompt's centred logit
    success rates ``logit((S + 1/2) / (G + 1))`` (missing cells at the prompt's
    mean), within each topic label: the best (least within-cluster sum of
    squares ``sum_n |x_n - c_{lab_n}|^2``) of ``runs`` (default
    ``KMEANS_RUNS``) k-means++ starts drawn from one generator (fixed ``seed``)."""
    runs = KMEANS_RUNS if runs is None else int(runs)
    x = _class_features(S, G)
    out = np.zeros(len(S), np.int64)
    rng = np.random.default_rng(seed)
    for t in np.unique(topic):
        rows = np.flatnonzero(topic == t)
        if len(rows) <= K:
            out[rows] = np.arange(len(rows)) % K
            continue
        xr = x[rows]
        if len(np.unique(xr.round(12), axis=0)) < K:  # too few distinct profiles
            out[rows] = np.arange(len(rows)) % K
            continue
        best = None
        for _ in range(max(1, runs)):
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                # (an empty cluster is fine: EM re-fills it or leaves its weight ~0)
                warnings.simplefilter("ignore")
                cent, lab = kmeans2(xr, K, minit="++", seed=rng)
            ss = float(np.nan_to_num(((xr - cent[lab]) ** 2).sum(), nan=np.inf))
            if best is None or ss < best:  # (the first run always)
                best = ss
                out[rows] = lab
    return out


def _class_features(S, G) -> np.ndarray:
    """The k-means features of :func:`_init_classes`: each prompt's centred logit
    success rates ``logit((S + 1/2) / (G + 1))``, missing cells at the prompt's
    mean ``(N, L)``."""
    obs = G > 0
    x = np.log((S + 0.5) / np.maximum(G - S + 0.5, 0.5))
    x = np.where(obs, x, np.nan)
    x = x - np.nanmean(x, axis=1, keepdims=True)
    return np.where(obs, x, 0.0)


def _pairs(cell_row, topic, K: int):
    """Every prompt once per class: table rows ``(N K, L)`` and theta columns."""
    N = len(topic)
    rows = np.ascontiguousarray(np.repeat(cell_row, K, axis=0))
    grp = np.ascontiguousarray(
        np.repeat(topic, K) * K + np.tile(np.arange(K, dtype=np.int64), N)
    )
    return rows, grp


def _class_estep(name, table, cell_row, topic, K, log_w, log_pi):
    """E-step over (prompt, class) pairs: ``(ll, r (N, K), resp (N K, J), rows,
    grp)``."""
    ll, r, _, _, resp, _ = dispatch("pgm_class_estep", name)(
        table, cell_row, topic, K, log_w, log_pi, None, 0.0, 0.0,
        block_rows(len(topic), table.size), False, True, False,
    )  # fmt: skip
    rows, grp = _pairs(cell_row, topic, K)
    return float(ll), r, resp, rows, grp


def _em_estep(name, table, cell_row, topic, K, n_labels, n_rows, log_w, log_pi, prev_r):
    """One E-step of the class EM: ``(ll, r (N, K), stats)``, ``stats()`` giving
    the M-step statistics ``C (L, T K, R, J)`` of the ``r``-weighted pair
    posteriors (pairs with ``r > KEEP_R``) and the difficulty prior's update.
    ``prev_r``: the previous responsibilities (pairs below ``SPARSE_R`` are
    skipped: sparse EM) or ``None`` (all pairs). (The C++ kernel computes both in
    one pass and stores no pair posteriors.)"""
    N = cell_row.shape[0]
    if table.shape[1:3] != (n_labels * K, n_rows):
        raise ValueError(f"table {table.shape} does not hold {n_labels} x {K} columns")
    ll, r, C, wsum, _, _ = dispatch("pgm_class_estep", name)(
        table, cell_row, topic, K, log_w, log_pi, prev_r, SPARSE_R, KEEP_R,
        block_rows(N, table.size), True, False, False,
    )  # fmt: skip
    return float(ll), r, lambda: (C, wsum / N)


def _class_em(e_step, m_step, x, max_iter: int, tol_ll: float, accelerate: bool):
    """The class EM's iterations from parameters ``x = (theta, scale, weights,
    pi)``: ``(x, ll, r, E-steps, converged)``, ``ll`` and ``r`` those of the last
    E-step (at the returned ``x`` when converged).

    ``e_step(x, prev_r) -> (redo, ll, r, stats)`` (``redo()``: the same E-step
    with all pairs), ``m_step(x, r, stats) -> x'``. Stops when the log-likelihood
    at the start of an iteration has risen by less than ``tol_ll`` per E-step
    since the previous one (confirmed with all pairs: sparse EM skips pairs with
    ``r < SPARSE_R`` and recomputes all every ``SPARSE_EVERY`` E-steps).

    ``accelerate``: each iteration is a SQUAREM cycle (Varadhan and Roland 2008,
    scheme S3): two EM steps ``x0 -> x1 -> x2``, the extrapolation ``x' = x0 - 2 a
    r + a^2 v`` (``r = x1 - x0``, ``v = x2 - 2 x1 + x0``, ``a = -|r| / |v|`` in
    ``[-ALPHA_MAX, -1]``, :func:`~capfront.debias.correlated.squarem_step`; ``a =
    -1`` is ``x2``), one EM step from ``x'``, kept
    when the log-likelihood at ``x'`` is at least that at ``x1`` (else ``x2``).
    The extrapolation moves ``theta`` (clipped to ``THETA_GRID``), the
    difficulty weights and the class weights (both clipped at 0 / floored and
    renormalised); the scale is ``x2``'s. The stopping rule is plain EM's, per
    E-step: where plain EM's step gains little because the EM crawls, a cycle
    still gains more per E-step and goes on (docs/debiasing.md, "The class EM:
    SQUAREM")."""
    ll_old = -np.inf
    ll = -np.inf
    r = None
    converged = False
    it = 0
    prev_r = None
    it_old = 0
    while it < max_iter:
        redo, ll, r, stats = e_step(x, prev_r)
        it += 1
        # (per E-step since the last start: a SQUAREM cycle takes two or three)
        tol_it = tol_ll * (it - it_old)
        if ll - ll_old < tol_it and it > 1 and prev_r is not None:
            # converged on the active pairs: confirm with all pairs
            ll, r, stats = redo()
        if ll - ll_old < tol_it and it > 1:
            converged = True
            break
        it_old = it
        # sparse EM: pairs with r < SPARSE_R skip the next E-steps, all pairs are
        # recomputed every SPARSE_EVERY iterations and before stopping
        prev_r = None if it % SPARSE_EVERY == 0 else r
        ll_old = ll
        x1 = m_step(x, r, stats)
        del stats
        if not accelerate or it + 3 > max_iter:
            # (a cycle only with room for the E-step after it: the last E-step's
            # ll and r are then those of the point the last M-step started from)
            x = x1
            continue
        _, ll1, r1, st1 = e_step(x1, prev_r)
        it += 1
        prev_r = None if it % SPARSE_EVERY == 0 else r1
        x2 = m_step(x1, r1, st1)
        del st1
        xx = _extrapolate(x, x1, x2)
        if xx is None:
            x = x2
            continue
        _, llx, rx, stx = e_step(xx, None)
        it += 1
        x = m_step(xx, rx, stx) if llx >= ll1 else x2
    return x, ll, r, it, converged


def _extrapolate(x0, x1, x2):
    """SQUAREM's point from three successive EM iterates ``(theta, scale,
    weights, pi)`` (see :func:`_class_em`), or ``None`` when the step length is
    1 (the point is ``x2``)."""

    def pack(x):
        return np.concatenate([x[0].ravel(), x[2].ravel(), x[3].ravel()])

    p0, p1, p2 = pack(x0), pack(x1), pack(x2)
    r = p1 - p0
    v = p2 - 2.0 * p1 + p0
    alpha = squarem_step(r, v)
    if alpha == -1.0:
        return None
    px = p0 - 2.0 * alpha * r + alpha**2 * v
    th, w, pi = x2[0], x2[2], x2[3]
    a, b = th.size, th.size + w.size
    theta = np.clip(px[:a].reshape(th.shape), THETA_GRID[0], THETA_GRID[-1])
    weights = np.maximum(px[a:b], 0.0)
    weights /= weights.sum()
    pi_x = np.maximum(px[b:].reshape(pi.shape), 1e-6)
    pi_x /= pi_x.sum(axis=1, keepdims=True)
    return theta, x2[1], weights, pi_x


def fit_classes(
    S: np.ndarray,
    G: np.ndarray,
    topic: np.ndarray | None,
    n_classes: int,
    *,
    family: str = "logitnormal",
    scale: float | None = None,
    max_iter: int = CLASS_MAX_ITER,
    tol: float = 2e-6,
    theta_sd: float = 5.0,
    init: LatentFit | None = None,
    base: LatentFit | None = None,
    topics: list | None = None,
    backend: str | None = None,
    t_df: float | None = None,
    accelerate: bool | None = None,
    bounds: tuple[float, float] | None = None,
) -> LatentFit:
    """Fit ``n_classes`` latent prompt classes (within each topic label) by EM.

    ``init``: a class fit with the same ``n_classes`` to warm-start from (the
    audit's refits); ``base``: the one-class fit of the same data (the start of
    ``theta``, the scale and the difficulty prior; fitted here when not given).
    Stops when an iteration gains less than ``tol`` log-likelihood per cell.
    ``t_df`` (``family="logit_t"``): the Student t's degrees of freedom;
    ``None``: ``init``'s or ``base``'s (a base fitted here chooses them).
    ``accelerate``: SQUAREM cycles (:func:`_class_em`) instead of plain EM
    steps; ``None``: when ``max_iter > ACCELERATE_ABOVE`` (the fits, not the
    audit's few-step refits).
    ``bounds``: the rates' floor and ceiling (:func:`~capfront.debias.latent.
    fit_latent`); ``None``: ``init``'s or ``base``'s, else (0, 1).
    ``n_classes = 1`` is :func:`~capfront.debias.latent.fit_latent`."""
    K = int(n_classes)
    if K < 1:
        raise ValueError(f"latent_classes must be >= 1, got {n_classes}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1 (EM iterations), got {max_iter}")
    if not float(tol) >= 0:  # also refuses NaN
        raise ValueError(f"tol must be >= 0 (log-likelihood gain per cell), got {tol}")
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; use one of {FAMILIES}")
    if bounds is None:
        src = init if init is not None else base
        bounds = src.bounds if src is not None else UNBOUNDED
    bounds = check_bounds(bounds)
    kw = dict(family=family, scale=scale, tol=tol, theta_sd=theta_sd, backend=backend)
    kw["bounds"] = bounds
    if K == 1:
        return fit_latent(
            S, G, topic, max_iter=max_iter, init=init, topics=topics, t_df=t_df, **kw
        )
    name = resolve_backend(backend)
    t0 = time.perf_counter()
    N, L = S.shape
    topic = (
        np.zeros(N, np.int64)
        if topic is None
        else np.ascontiguousarray(topic, dtype=np.int64)
    )
    T = int(topic.max()) + 1
    tables, cell_row = _cells(S, G, bounds)
    em = EMRows(tables, cell_row)
    n_cells = count_cells(cell_row)
    grid = SCALE_GRID[family] if scale is None else np.array([float(scale)])
    cand_idx, penalty = _candidates(theta_sd)
    counts_t = np.bincount(topic, minlength=T).astype(np.float64)
    if init is not None and init.n_classes == K and init.theta.shape == (L, T * K):
        theta = init.theta.copy()
        sc = float(init.scale) if scale is None else float(scale)
        h = 10 * SCALE_RES[family]
        weights = init.weights.copy()
        pi = init.class_weights.copy()
        nu = init.nu if t_df is None else float(t_df)
    else:
        if base is None or base.theta.shape != (L, T) or base.bounds != bounds:
            base = fit_latent(S, G, topic, max_iter=300, t_df=t_df, **kw)
        nu = base.nu if t_df is None else float(t_df)
        sc = float(base.scale)
        h = 10 * SCALE_RES[family]
        weights = base.weights.copy()
        lab = _init_classes(S, G, topic, K)
        r0 = np.zeros((N, K))
        r0[np.arange(N), lab] = 1.0
        pi = _class_weights(r0, topic, T, counts_t)
        theta = np.repeat(base.theta, K, axis=1)
        # one M-step from the hard classes with the one-class difficulty posterior
        # (a lean base fit keeps none: recomputed in blocks of prompts)
        C = 0.0
        for sl, resp_b in _base_resp(base, name):
            rows, grp = _pairs(em.cell_row[sl], topic[sl], K)
            wr = np.repeat(resp_b, K, axis=0) * r0[sl].reshape(-1, 1)
            keep = r0[sl].reshape(-1) > 0
            C = C + _stats(name, wr[keep], rows[keep], grp[keep], T * K, em.n_rows)
        C = C.reshape(L, T * K, em.n_rows, -1)
        theta, sc, h = _m_step(
            name, C, tables, family, theta, sc, h, grid, scale, cand_idx, penalty, em,
            nu,
        )  # fmt: skip

    def e_step(x, prev_r):
        th, sc_, w_, pi_ = x
        table = em.table(em.logh(tables, family, sc_, nu), th)
        log_w = np.log(np.maximum(w_, 1e-300))
        log_pi = np.log(np.maximum(pi_, 1e-300))
        args = (name, table, em.cell_row, topic, K, T, em.n_rows, log_w, log_pi)
        return (lambda: _em_estep(*args, None)), *_em_estep(*args, prev_r)

    def m_step(x, r, stats):
        nonlocal h
        C, w_ = stats()
        pi_ = _class_weights(r, topic, T, counts_t)
        th, sc_, h = _m_step(
            name, C, tables, family, x[0], x[1], h, grid, scale, cand_idx, penalty,
            em, nu,
        )  # fmt: skip
        return th, sc_, w_, pi_

    if accelerate is None:
        accelerate = int(max_iter) > ACCELERATE_ABOVE
    (theta, sc, weights, pi), ll, r, it, converged = _class_em(
        e_step, m_step, (theta, sc, weights, pi), int(max_iter), tol * n_cells,
        bool(accelerate),
    )  # fmt: skip
    state = (theta, sc, weights, ll, it, converged)
    t_fit = nu if family == "logit_t" else None
    return _latent_fit(family, state, topics, T, t0, tables, cell_row, topic,
                       resp=np.zeros((0, len(D_GRID))), n_classes=K,
                       class_weights=pi, class_resp=r, t_df=t_fit)  # fmt: skip


def _base_resp(base: LatentFit, name: str):
    """``(slice, resp)``: the one-class fit's difficulty posteriors, all at once
    or, for a lean fit (no stored ``resp``), in blocks of prompts."""
    if base.resp is not None:
        yield slice(0, base.resp.shape[0]), base.resp
    else:
        yield from resp_blocks(base, name)


def _class_weights(r, topic, T, counts_t) -> np.ndarray:
    """Mean class responsibilities per label ``(T, K)`` (floored at 1e-6)."""
    K = r.shape[1]
    pi = np.zeros((T, K))
    np.add.at(pi, topic, r)
    pi = np.maximum(pi / np.maximum(counts_t, 1)[:, None], 1e-6)
    return pi / pi.sum(axis=1, keepdims=True)


def _select(S, G, topic, ks, max_iter, kw, base=None, workers=1):
    """AIC of the candidate numbers of classes and their fits: ``(aic, fits)``;
    ``base``: the one-class fit of the same prompts and options, when already
    made. Candidates are fitted in increasing order until ``SELECT_PATIENCE``
    in a row fail to improve on the best so far: a K that does not pay can be
    followed by a larger one that does (two classes of a three-kind pool).
    ``workers > 1``: the next ``workers`` candidates are fitted at the same time
    in threads (each fit is its own, so the result is the same; a fit past the
    stopping point is discarded)."""
    if base is None:
        base = fit_latent(S, G, topic, max_iter=max_iter, **kw)
    fits = {1: base}
    aic = {1: _aic(base)}
    misses = 0
    todo = sorted(k for k in ks if k > 1)
    n_par = max(1, int(workers))

    def one(k):
        return fit_classes(
            S, G, topic, k, base=base, max_iter=min(max_iter, CLASS_MAX_ITER), **kw
        )

    while todo and misses < SELECT_PATIENCE:
        batch, todo = todo[:n_par], todo[n_par:]
        if len(batch) == 1:
            done = [one(batch[0])]
        else:
            with ThreadPoolExecutor(max_workers=len(batch)) as pool:
                done = list(pool.map(one, batch))
        for k, f in zip(batch, done, strict=True):
            fits[k] = f
            aic[k] = _aic(f)
            misses = (
                misses + 1 if aic[k] >= min(v for kk, v in aic.items() if kk < k) else 0
            )
            if misses >= SELECT_PATIENCE:
                break
    if 1 not in ks:
        fits.pop(1)
        aic.pop(1)
    return aic, fits


def choose_family(
    S: np.ndarray,
    G: np.ndarray,
    topic: np.ndarray | None,
    *,
    scale: float | None = None,
    max_iter: int = 300,
    tol: float = 2e-6,
    backend: str | None = None,
    topics: list | None = None,
    families: tuple[str, ...] = AUTO_FAMILIES,
) -> tuple[str, LatentFit, dict]:
    """``family="auto"``: the cell-effect family of ``families`` (default
    ``AUTO_FAMILIES``: logit-normal, logit-t, Beta) with the highest one-class
    marginal log-likelihood, each later one only when it gains more than
    ``FAMILY_MARGIN`` nats over the best before it; fitted on an evenly spaced
    subsample of ``SELECT_SIZE`` prompts (EM tolerance ``SELECT_TOL``). Returns
    ``(family, its fit on the subsample, {family: loglik})``.

    The t is fitted at ``LOGIT_T_DF`` degrees of freedom first; only when that
    fit beats the normal by ``FAMILY_MARGIN`` are its degrees of freedom fitted
    (:func:`~capfront.debias.latent.fit_t_df`, warm from it): a t that loses at
    3 degrees of freedom is not chosen, as before they were fitted, and costs
    one fit."""
    sel = even_rows(S.shape[0], SELECT_SIZE)
    t_sel = None if topic is None else np.asarray(topic)[sel]
    kw = dict(scale=scale, tol=max(tol, SELECT_TOL), backend=backend, topics=topics)
    kw["max_iter"] = max_iter
    unknown = set(families) - set(AUTO_FAMILIES)
    if not families or unknown:
        raise ValueError(f"families must be some of {AUTO_FAMILIES}, not {families!r}")
    fits = {}
    for f in families:
        if f != "logit_t":
            fits[f] = fit_latent(S[sel], G[sel], t_sel, family=f, **kw)
            continue
        t3 = fit_latent(S[sel], G[sel], t_sel, family=f, t_df=LOGIT_T_DF, **kw)
        rival = max((v.loglik for v in fits.values()), default=-np.inf)
        fits[f] = (
            fit_t_df(S[sel], G[sel], t_sel, first=t3, **kw)
            if t3.loglik > rival + FAMILY_MARGIN
            else t3
        )
    best = families[0]
    for f in families[1:]:
        if fits[f].loglik > fits[best].loglik + FAMILY_MARGIN:
            best = f
    return best, fits[best], {f: fit.loglik for f, fit in fits.items()}


# bounds="auto": the rates' ceilings and floors pgm chooses from by marginal
# likelihood (one-class fits on the selection subsample, the chosen family), and
# the log-likelihood (nats) a step must gain to be taken. Why: real rates can
# stop short of 0 and 1 for every model alike (multiple choice guessing; answers
# right only most of the time); the logit scale then sees the rates compressed
# at both ends, and with the cell effect fitted to the middle the posterior
# maximum of such prompts came out above the truth (MMLU-Pro's rates: +0.9 to
# +1.4 points, within 0.2 with the bounds; docs/debiasing.md)
BOUND_CEILINGS = (1.0, 0.995, 0.99, 0.98, 0.97, 0.96, 0.95, 0.93, 0.9)
BOUND_FLOORS = (0.0, 0.005, 0.01, 0.02, 0.03, 0.05, 0.08, 0.12, 0.16, 0.2, 0.25)
BOUNDS_MARGIN = 3.0
# EM iterations of each candidate's fit, warm-started at the best so far
BOUNDS_ITER = 40


def choose_bounds(
    S: np.ndarray,
    G: np.ndarray,
    topic: np.ndarray | None,
    *,
    family: str,
    t_df: float | None = None,
    base: LatentFit | None = None,
    max_iter: int = 300,
    tol: float = 2e-6,
    backend: str | None = None,
    topics: list | None = None,
    scale: float | None = None,
) -> tuple[tuple[float, float], LatentFit, dict]:
    """``bounds="auto"``: the floor and ceiling ``(f, c)`` of the rates, ``p =
    f + (c - f) sigma(t)``, by the one-class marginal likelihood on the evenly
    spaced subsample of ``SELECT_SIZE`` prompts (the family's, :func:`choose_family`):
    the ceiling walks down ``BOUND_CEILINGS`` from 1 (floor 0), then the floor
    up ``BOUND_FLOORS`` at that ceiling, then the ceiling on down; each step is
    warm-started at the previous one and taken when it gains more than
    ``BOUNDS_MARGIN`` nats over the best so far, and each walk stops at the
    first step that loses likelihood against the previous one. ``base``: the
    unbounded fit of those prompts and options, when made. Returns ``(bounds,
    the fit at them, {(f, c): loglik})``."""
    sel = even_rows(S.shape[0], SELECT_SIZE)
    t_sel = None if topic is None else np.asarray(topic)[sel]
    kw = dict(family=family, scale=scale, tol=max(tol, SELECT_TOL), backend=backend)
    kw.update(topics=topics, t_df=t_df)
    S_, G_ = S[sel], G[sel]
    if base is None or base.bounds != UNBOUNDED or base.cell_row.shape[0] != len(sel):
        base = fit_latent(S_, G_, t_sel, bounds=UNBOUNDED, max_iter=max_iter, **kw)
    if family == "logit_t" and kw["t_df"] is None:
        kw["t_df"] = base.t_df
    fits = {UNBOUNDED: base}
    best = UNBOUNDED

    def walk(values, which: int) -> None:
        nonlocal best
        last = best  # the last point tried: the walk goes on while it climbs
        for v in values:
            b = (best[0], v) if which else (v, best[1])
            if not b[0] < b[1]:
                return
            if b not in fits:
                fits[b] = fit_latent(
                    S_, G_, t_sel, bounds=b, init=fits[last], max_iter=BOUNDS_ITER, **kw
                )
            if fits[b].loglik > fits[best].loglik + BOUNDS_MARGIN:
                best = b
            elif not fits[b].loglik > fits[last].loglik:
                return
            last = b

    walk(BOUND_CEILINGS[1:], 1)
    walk(BOUND_FLOORS[1:], 0)
    if best[0] > 0:  # (a floor moves the ceiling's optimum)
        walk([c for c in BOUND_CEILINGS if c < best[1]], 1)
    return best, fits[best], {b: float(f.loglik) for b, f in fits.items()}


def _bic(fit: LatentFit, n_prompts: int) -> float:
    """``-2 loglik + n_params log N`` (reported beside the AIC; not the choice)."""
    return float(-2.0 * fit.loglik + fit.n_params * np.log(max(n_prompts, 2)))


def _aic(fit: LatentFit) -> float:
    """``-2 loglik + 2 n_params``: an estimate of ``-2 x`` the expected
    log-likelihood of fresh prompts, the criterion that chooses ``K``."""
    return float(-2.0 * fit.loglik + 2.0 * fit.n_params)


def fit_pgm(
    S: np.ndarray,
    G: np.ndarray,
    topic: np.ndarray | None = None,
    *,
    latent_classes: int | str = "auto",
    family: str = "auto",
    scale: float | None = None,
    max_iter: int = 300,
    tol: float = 2e-6,
    init: LatentFit | None = None,
    topics: list | None = None,
    backend: str | None = None,
    candidates: tuple[int, ...] = CLASS_CANDIDATES,
    one_class: LatentFit | None = None,
    select_base: LatentFit | None = None,
    workers: int = 1,
    bounds: tuple[float, float] | str | None = "auto",
) -> LatentFit:
    """The ``pgm`` fit: ``latent_classes`` an int (``1``: the one-class model) or
    ``"auto"``: the AIC-best of ``candidates`` with at least
    ``MIN_CLASS_PROMPTS`` prompts per class (``LatentFit.aic`` holds them,
    ``LatentFit.bic`` the BIC for comparison);
    ``family`` one of ``FAMILIES`` or ``"auto"`` (:func:`choose_family`;
    ``LatentFit.family_loglik`` holds the candidates' log-likelihoods).
    With ``init`` the refit keeps ``init``'s number of classes and family;
    ``one_class``: the one-class fit of the same data and family, returned when
    AIC picks one class; ``select_base``: the one-class fit of the selection
    subsample (:func:`choose_family`'s, the same prompts and options), used
    when its family and degrees of freedom are the chosen ones (else fitted
    again); ``workers``: candidates fitted at the same time (:func:`_select`;
    the same result); ``bounds``: the rates' floor and ceiling ``(f, c)``
    (:func:`~capfront.debias.latent.fit_latent`), ``"auto"``:
    :func:`choose_bounds` for the logit-scale families (the Beta family stays
    unbounded unless given bounds), ``None``: ``init``'s, else (0, 1);
    ``LatentFit.bounds_loglik`` holds the candidates' log-likelihoods."""
    if family != "auto" and family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; use 'auto' or one of {FAMILIES}")
    if init is not None:
        latent_classes = init.n_classes
        if family == "auto":
            family = init.family
    if isinstance(latent_classes, str):
        if latent_classes != "auto":
            raise ValueError(
                f"latent_classes must be 'auto' or an int >= 1, not {latent_classes!r}"
            )
        ks = tuple(int(k) for k in candidates)
    elif isinstance(latent_classes, (int, np.integer)) and int(latent_classes) >= 1:
        ks = (int(latent_classes),)
    else:
        raise ValueError(
            f"latent_classes must be 'auto' or an int >= 1, not {latent_classes!r}"
        )
    N = S.shape[0]
    if isinstance(latent_classes, str):  # "auto": classes of MIN_CLASS_PROMPTS
        ks = tuple(k for k in ks if k * MIN_CLASS_PROMPTS <= N) or (min(ks),)
    sel_fit, family_ll = None, {}
    if family == "auto":
        if one_class is not None:
            family = one_class.family
        else:
            family, sel_fit, family_ll = choose_family(
                S, G, topic, scale=scale, max_iter=max_iter, tol=tol,
                backend=backend, topics=topics,
            )  # fmt: skip
    # the t's degrees of freedom: the family choice's or the one-class fit's
    # (chosen once, on the selection subsample, not again per fit)
    t_df = None
    if family == "logit_t" and init is None:
        src = one_class if one_class is not None else sel_fit
        if src is not None and src.family == "logit_t":
            t_df = src.t_df
    bounds_ll: dict = {}
    if isinstance(bounds, str):
        if bounds != "auto":
            raise ValueError(
                f"bounds must be 'auto', None or (floor, ceiling), not {bounds!r}"
            )
        if init is not None:
            bounds = init.bounds
        elif family == "betabinomial":
            bounds = UNBOUNDED
        else:
            base = sel_fit
            if base is None and _same_base(
                select_base, family, t_df, len(even_rows(N, SELECT_SIZE))
            ):
                base = select_base
            bounds, sel_fit, bounds_ll = choose_bounds(
                S, G, topic, family=family, t_df=t_df, base=base, max_iter=max_iter,
                tol=tol, backend=backend, topics=topics, scale=scale,
            )  # fmt: skip
            if family == "logit_t" and t_df is None:
                t_df = sel_fit.t_df
    elif bounds is None:
        bounds = init.bounds if init is not None else UNBOUNDED
    bounds = check_bounds(bounds)
    if one_class is not None and one_class.bounds != bounds:
        one_class = None  # (fitted at other bounds)
    kw = dict(family=family, scale=scale, tol=tol, backend=backend, topics=topics)
    kw["t_df"] = t_df
    kw["bounds"] = bounds
    if ks == (1,):
        out = fit_latent(S, G, topic, max_iter=max_iter, init=init, **kw)
        out.family_loglik = family_ll
        out.bounds_loglik = bounds_ll
        return out
    if init is not None:
        return fit_classes(
            S, G, topic, init.n_classes, max_iter=max_iter, init=init, **kw
        )
    t_all = (
        np.zeros(N, np.int64)
        if topic is None
        else np.ascontiguousarray(topic, dtype=np.int64)
    )
    # K is chosen on an evenly spaced subsample of SELECT_SIZE prompts (BIC's
    # differences between candidates there are hundreds of nats), with a looser
    # EM tolerance
    sel = even_rows(N, SELECT_SIZE)
    if sel_fit is None and _same_base(select_base, family, kw["t_df"], len(sel)):
        sel_fit = select_base  # (choose_family's: the same prompts and options)
    if sel_fit is not None and sel_fit.bounds != bounds:
        sel_fit = None
    aic, fits = _select(
        S[sel],
        G[sel],
        t_all[sel],
        ks,
        max_iter,
        {**kw, "tol": max(tol, SELECT_TOL)},
        base=sel_fit,  # (the same prompts and options)
        workers=workers,
    )
    best = min(aic, key=lambda k: (aic[k], k))
    if family == "logit_t" and kw["t_df"] is None:
        # (chosen on the selection subsample, by the first candidate's fit)
        kw["t_df"] = fits[min(fits)].t_df
    if bounds_ll and bounds != UNBOUNDED and best > 1:
        # bounds the one-class walk chose must pay with the classes too (a
        # one-class fit of clustered prompts took a ceiling of 0.96 for 64
        # nats that the 8-class fit gave back): the chosen K refitted without
        # them, warm-started at the bounded fit; kept when they gain more than
        # BOUNDS_MARGIN there
        free = fit_classes(
            S[sel], G[sel], t_all[sel], best, init=fits[best],
            max_iter=min(max_iter, CLASS_MAX_ITER),
            **{**kw, "tol": max(tol, SELECT_TOL), "bounds": UNBOUNDED},
        )  # fmt: skip
        bounds_ll["classes"] = {bounds: fits[best].loglik, UNBOUNDED: free.loglik}
        if not fits[best].loglik > free.loglik + BOUNDS_MARGIN:
            bounds = UNBOUNDED
            kw["bounds"] = bounds
            fits[best] = free
    if best == 1:
        out = (
            dataclasses.replace(one_class)
            if one_class is not None
            else fit_latent(S, G, topic, max_iter=max_iter, **kw)
        )
    else:
        # the chosen K on all prompts (a subsample above SUBSAMPLE_ABOVE: the
        # hyperparameters are global), warm-started at the selection fit
        sub = even_rows(N, SUBSAMPLE_SIZE) if N > SUBSAMPLE_ABOVE else np.arange(N)
        out = fit_classes(
            S[sub], G[sub], t_all[sub], best, init=fits[best], max_iter=max_iter, **kw
        )
        if len(sub) < N:  # hyperparameters from the subsample, cells of all prompts
            tables, cell_row = _cells(S, G, kw["bounds"])
            out = dataclasses.replace(
                out, tables=tables, cell_row=cell_row, topic=t_all, class_resp=None
            )
    out.aic = aic
    out.bic = {k: _bic(f, len(sel)) for k, f in fits.items()}
    out.family_loglik = family_ll
    out.bounds_loglik = bounds_ll
    return out


def _same_base(fit: LatentFit | None, family: str, t_df, n: int) -> bool:
    """Whether ``fit`` is the one-class fit ``_select`` would make on its ``n``
    prompts: the same family and (the t) degrees of freedom."""
    if fit is None or fit.family != family or fit.cell_row.shape[0] != n:
        return False
    return family != "logit_t" or (t_df is not None and fit.t_df == t_df)


def posterior_max(
    fit: LatentFit,
    backend: str | None = None,
    min_resp: float = 1e-6,
    stride: int | None = None,
    cell_means: bool = True,
    class_min_resp: float = CLASS_MIN_RESP,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """:func:`capfront.debias.latent.posterior_max` for any fit: with latent
    classes, ``sum_k r[n, k]`` times each class's exact posterior maximum (and
    posterior cell means), from a fresh E-step at the fitted hyperparameters.
    Also stores ``fit.class_resp`` and the class-mixed difficulty posterior in
    ``fit.resp``. ``cell_means=False``: the cell means are not kept (``None``);
    ``class_min_resp``: (prompt, class) pairs with less responsibility are
    skipped (the rest renormalised)."""
    if fit.n_classes == 1:
        return _posterior_max_one(
            fit, backend, min_resp=min_resp, stride=stride, cell_means=cell_means
        )
    name = resolve_backend(backend)
    K = fit.n_classes
    N, L = fit.cell_row.shape
    J = len(D_GRID)
    if stride is None:
        stride = _auto_stride(fit)
    table = _cell_table(fit.logh(), fit.theta)
    log_w = np.log(np.maximum(fit.weights, 1e-300))
    log_pi = np.log(np.maximum(fit.class_weights, 1e-300))
    emax = np.zeros(N)
    emax2 = np.zeros(N)
    pmean = np.zeros((N, L)) if cell_means else None
    r_all = np.empty((N, K))
    # the class-mixed difficulty posteriors, kept unless there are many prompts
    resp_mix = np.zeros((N, J)) if N * J <= LEAN_ABOVE else None
    for a in range(0, N, CHUNK):
        sl = slice(a, min(N, a + CHUNK))
        _, r, resp, rows, grp = _class_estep(
            name, table, fit.cell_row[sl], fit.topic[sl], K, log_w, log_pi
        )
        r_all[sl] = r
        rf = r.reshape(-1)
        if resp_mix is not None:
            resp_mix[sl] = (resp * rf[:, None]).reshape(-1, K, J).sum(axis=1)
        keep = np.flatnonzero(rf >= class_min_resp)
        sub = dataclasses.replace(
            fit,
            resp=np.ascontiguousarray(resp[keep]),
            cell_row=np.ascontiguousarray(rows[keep]),
            topic=np.ascontiguousarray(grp[keep]),
            n_classes=1,
        )
        e1, e2, pm = _emax(name, sub, float(min_resp), stride)
        w = rf[keep]
        owner = keep // K + a
        tot = np.bincount(owner - a, weights=w, minlength=sl.stop - a)
        wn = w / tot[owner - a]
        np.add.at(emax, owner, wn * np.asarray(e1))
        np.add.at(emax2, owner, wn * np.asarray(e2))
        if pmean is not None:
            np.add.at(pmean, owner, wn[:, None] * np.asarray(pm))
    fit.class_resp = r_all
    fit.resp = resp_mix
    if pmean is not None:
        pmean[fit.cell_row < 0] = np.nan  # (in place: no second (N, L) array)
    return emax, emax2, pmean


def pgm_decomposition(
    S: np.ndarray,
    G: np.ndarray,
    topic: np.ndarray | None = None,
    *,
    latent_classes: int | str = 1,
    family: str = "auto",
    scale: float | None = None,
    backend: str | None = None,
    init: LatentFit | None = None,
    max_iter: int = 300,
    tol: float = 2e-6,
    topics: list | None = None,
    min_resp: float = 1e-6,
    class_min_resp: float = CLASS_MIN_RESP,
    bounds: tuple[float, float] | str | None = "auto",
) -> Decomposition:
    """``O_pgm = mean_n E_post[max_l p[n, l]]`` under the (latent-class) fit; the
    per-prompt values are the posterior expected maxima with the hyperparameters
    held at their fit. ``latent_classes=1`` is the one-class model of
    :func:`capfront.debias.latent.pgm_decomposition`.

    Many draws per cell: when the naive oracle's bias is provably below its own
    sampling error (:func:`naive_bias_bound`), the fit could not improve on it and
    the naive oracle is returned, with ``diagnostics["note"]`` saying so."""
    short = naive_shortcut(S, G)
    if short is not None:
        return short
    from .many_draws import coarse_counts

    # many draws per cell: the fit on counts rounded to a grid finer than the
    # sampling noise (no more table rows than that grid has; many_draws.py)
    coarse = coarse_counts(S, G)
    fit = fit_pgm(
        S if coarse is None else coarse,
        G,
        topic,
        latent_classes=latent_classes,
        family=family,
        scale=scale,
        backend=backend,
        init=init,
        max_iter=max_iter,
        tol=tol,
        topics=topics,
        bounds=bounds,
    )
    dec = fit_decomposition(
        fit,
        *posterior_max(fit, backend, min_resp=min_resp, class_min_resp=class_min_resp),
    )
    dec.diagnostics["latent_classes"] = fit.n_classes
    dec.diagnostics["bounds"] = fit.bounds
    dec.diagnostics["aic"] = dict(fit.aic)
    dec.diagnostics["bic"] = dict(fit.bic)
    dec.diagnostics["coarsened_counts"] = coarse is not None
    return dec


def naive_bias_bound(S: np.ndarray, G: np.ndarray) -> float:
    """An upper bound on the naive oracle's bias ``E[O_biased] - O`` (it is never
    negative): ``mean_n sqrt(ln(L_n) / (2 g_n))``, ``L_n`` the prompt's observed
    cells and ``g_n`` their fewest draws.

    Why: ``E[max_l X_l] - max_l mu_l <= E[max_l (X_l - mu_l)]``, and a success rate
    of ``G`` draws minus its mean is sub-Gaussian with variance proxy ``1 / (4 G)``
    (Hoeffding), so the expected maximum of ``L`` of them is at most
    ``sqrt(2 ln(L) / (4 g))``. Below, by Jensen: ``E[max] >= max E``."""
    b = np.zeros(len(S))
    for sl in row_blocks(len(S)):  # (any integer dtype; no (N, L) copies)
        g = np.asarray(G[sl], dtype=np.int64)
        obs = g > 0
        n_obs = obs.sum(axis=1)
        g_min = np.where(obs, g, np.iinfo(np.int64).max).min(axis=1)
        ok = n_obs > 1
        b[sl][ok] = np.sqrt(np.log(n_obs[ok]) / (2.0 * g_min[ok]))
    return float(b.mean()) if len(b) else 0.0


def naive_shortcut(S: np.ndarray, G: np.ndarray) -> Decomposition | None:
    """The naive oracle's decomposition, with a note, when its bias bound
    (:func:`naive_bias_bound`) is at most its standard error (no estimator can
    then beat its error by much); else ``None``. Only reached at large draw
    counts (``G`` in the thousands or more): the latent model's grids resolve a
    cell's rate to about 0.05 on the logit scale, far coarser than such data."""
    if S.size == 0 or int(G.max()) < SHORTCUT_MIN_G:
        return None
    bound = naive_bias_bound(S, G)
    from .bias_correction import bounded_naive_decomposition

    dec = bounded_naive_decomposition(S, G, bound, "")
    se = dec.standard_error()
    if not bound <= max(se if np.isfinite(se) else 0.0, NAIVE_BOUND_TARGET):
        return None
    dec.diagnostics["note"] = (
        f"pgm returned the naive oracle: with this many draws per cell its "
        f"bias is at most {bound:.2g} (a bound, not an estimate), no more "
        f"than its standard error {se:.2g} or {NAIVE_BOUND_TARGET}"
    )
    return dec
