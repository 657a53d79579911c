"""Every registered kernel (``capfront._kernels.kernels()``) on every available
backend gives the NumPy reference's arrays bit for bit, on edge-case inputs:
empty, one row, non-contiguous, byte-swapped (where the kernel's contract takes
any array), NaN where allowed; a ``ValueError`` of the reference is one on every
backend.

Each kernel has its edge-case builder in :data:`CASES` (the test fails for a
kernel without one, so a new registry entry comes with its cases).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import capfront as cf
from capfront._kernels import kernels

Case = tuple[Any, ...]


def _swapped(a: np.ndarray) -> np.ndarray:
    """The same values in the non-native byte order."""
    return a.astype(a.dtype.newbyteorder())


def _strided(a: np.ndarray) -> np.ndarray:
    """The same values as a non-contiguous view (every other column of a wider
    array)."""
    wide = np.zeros((a.shape[0], 2 * a.shape[1]), dtype=a.dtype)
    wide[:, ::2] = a
    return wide[:, ::2]


def _oracle_cases(rng: np.random.Generator) -> dict[str, Case]:
    S = rng.integers(0, 4, (7, 3))
    G = np.full((7, 3), 3)
    G[2, 1] = 0
    C = rng.random((7, 3))
    C[4, 0] = np.nan
    return {
        "empty": (S[:0], G[:0], C[:0]),
        "one row": (S[:1], G[:1], C[:1]),
        "one model": (S[:, :1], G[:, :1], None),
        "non-contiguous": (_strided(S), _strided(G), _strided(C)),
        "byte-swapped": (_swapped(S), _swapped(G), _swapped(C)),
        "broadcast draws": (S, np.broadcast_to(np.int64(3), S.shape), C),
        "graded, NaN cost": (S / 3.0, G, C),
        "no model run": (S[:2], np.zeros((2, 3), dtype=np.int64), C[:2]),
    }


def _pareto_cases(rng: np.random.Generator) -> dict[str, Case]:
    pts = rng.integers(0, 3, (40, 3)).astype(np.float64)
    up = (True, False, False)
    nan = pts.copy()
    nan[3, 1] = np.nan
    return {
        "empty": (pts[:0], up),
        "one row": (pts[:1], up),
        "non-contiguous": (pts[::2], up),
        "byte-swapped": (_swapped(pts), up),
        "ties and -0.0": (np.array([[0.0, 1.0, 1.0], [-0.0, 1.0, 1.0]]), up),
        "NaN refused": (nan, up),
    }


def _hull_inputs(rng: np.random.Generator, N: int, M: int) -> tuple[np.ndarray, ...]:
    c = rng.choice([0.0, 0.5, 1.0, 2.0], size=(N, M))
    q = rng.integers(0, 5, (N, M)) / 4
    return c, q


def _dense_cases(rng: np.random.Generator) -> dict[str, Case]:
    # the kernel takes C-contiguous float64 (hull_segments makes them so)
    c, q = _hull_inputs(rng, 30, 4)
    c_nan, q_inf = c.copy(), q.copy()
    c_nan[0] = np.nan  # a prompt without an available option
    q_inf[1, 2] = np.inf
    return {
        "one row": (c[:1].copy(), q[:1].copy()),
        "one option": (c[:, :1].copy(), q[:, :1].copy()),
        "unavailable options": (c_nan, q_inf),
        "equal costs and qualities": (np.ones((5, 3)), np.full((5, 3), 0.5)),
        "general": (c, q),
    }


def _cells_cases(rng: np.random.Generator) -> dict[str, Case]:
    # any strides (the C++ kernel reads them in place); native byte order and the
    # kernel's dtypes (float64 cost, int32/int64 draws): the caller converts
    S = rng.integers(0, 4, (20, 3))
    G = np.full((20, 3), 3)
    G[5, 0] = 0
    C = rng.choice([0.0, 1.0, 3.0], size=(20, 3))
    p = S / 3.0
    return {
        "counts": (S, G, C, True, True),
        "one row": (S[:1], G[:1], C[:1], True, True),
        "broadcast draws": (S, np.broadcast_to(np.int64(3), S.shape), C, True, True),
        "non-contiguous": (_strided(S), _strided(G), _strided(C), True, True),
        "given quality and cost": (p, G, C, False, False),
        "per-model cost": (S, G, np.broadcast_to(C[0], C.shape), True, False),
        "negative cost refused": (S, G, -C - 1.0, True, False),
    }


def _posthoc_cases(rng: np.random.Generator) -> dict[str, Case]:
    S = rng.integers(0, 4, (25, 3)).astype(np.int64)
    G = np.full((25, 3), 3, dtype=np.int64)
    G[3, 2] = 0
    cbar = rng.choice([0.5, 1.0, 2.0], size=(25, 3))
    cbar[G == 0] = np.nan
    return {
        "one row": (S[:1].copy(), G[:1].copy(), cbar[:1].copy(), 3),
        "k = 1": (S, G, cbar, 1),
        "k = G": (S, G, cbar, 3),
        "one model": (S[:, :1].copy(), G[:, :1].copy(), cbar[:, :1].copy(), 2),
    }


def _vertices_cases(rng: np.random.Generator) -> dict[str, Case]:
    res = cf.simulate(30, 3, 4, seed=1)
    seg = cf.frontier(res, backend="numpy").segments
    w = np.full(seg.n_prompts, 1.0 / seg.n_prompts)
    x0 = float(np.sum(w * seg.base_cost))
    y0 = float(np.sum(w * seg.base_quality))
    args = (x0, y0, w, seg.prompt, seg.dcost, seg.dquality)
    some = w * (rng.random(w.size) < 0.5)
    collinear = (0.0, 0.0, np.ones(3), np.arange(3), np.ones(3), np.full(3, 0.5))
    return {
        "no segments": (x0, y0, w, seg.prompt[:0], seg.dcost[:0], seg.dquality[:0]),
        "one segment": (*args[:3], seg.prompt[:1], seg.dcost[:1], seg.dquality[:1]),
        "zero weights": (x0, y0, some, *args[3:]),
        "collinear run": collinear,
        "non-contiguous weights": (x0, y0, np.repeat(w, 2)[::2], *args[3:]),
        "byte-swapped": (x0, y0, _swapped(w), *args[3:]),
        "general": args,
    }


def _suffstats_cases(rng: np.random.Generator) -> dict[str, Case]:
    # scores of any dtype and layout; mask uint8, cost and latency native
    # contiguous float64 (sufficient_stats converts them)
    x = rng.integers(0, 2, (6, 3, 4)).astype(np.float64)
    mask = (rng.random(x.shape) < 0.8).astype(np.uint8)
    cost = rng.random(x.shape)
    lat = rng.random(x.shape)
    bad = x.copy()
    # inf, not NaN: scores with NaN are refused downstream (flagged), and the max
    # of a cell holding one is left to the backend
    bad[0, 0, 0], bad[1, 1, 1], bad[2, 2, 2] = np.inf, 1.5, 0.25
    neg = cost.copy()
    neg[3, 0, 1], neg[4, 1, 0] = -1.0, np.nan
    byte2 = x.astype(np.uint8)
    byte2[0, 1, 2] = 2
    return {
        "empty": (x[:0], None, None, None),
        "one row": (x[:1], mask[:1], cost[:1], lat[:1]),
        "one draw": (x[:, :, :1].copy(), None, cost[:, :, :1].copy(), None),
        "bool": (x.astype(bool), None, None, None),
        "uint8 with a 2": (byte2, None, None, None),
        "float32": (x.astype(np.float32) / 3, mask, None, lat),
        "non-contiguous": (x[:, :, ::2], None, None, None),
        "byte-swapped": (_swapped(x), mask, cost, lat),
        "bad values": (bad, mask, neg, lat),
        "int64": (x.astype(np.int64), mask, cost, None),
    }


def _count_cases(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    G = rng.integers(2, 7, (12, 3)).astype(np.int64)
    G[4, 1] = 0  # a cell not run
    S = rng.integers(0, 7, G.shape).astype(np.int64) % (G + 1)
    return S, G


def _crossfit_cases(rng: np.random.Generator) -> dict[str, Case]:
    # (N, L) int64 counts, C-contiguous (the estimators make them so)
    S, G = _count_cases(rng)
    return {
        "empty": (S[:0], G[:0]),
        "one row": (S[:1].copy(), G[:1].copy()),
        "one model": (S[:, :1].copy(), G[:, :1].copy()),
        "all or nothing": (np.where(G > 0, G, 0) * (S > 2), G),
        "ragged draws": (S, G),
    }


def _curve_cases(rng: np.random.Generator) -> dict[str, Case]:
    S, G = _count_cases(rng)
    sizes = np.arange(1, 3, dtype=np.int64)
    return {
        "empty": (S[:0], G[:0], sizes),
        "one row": (S[:1].copy(), G[:1].copy(), sizes),
        "one size": (S, G, sizes[:1].copy()),
        "ragged draws": (S, G, sizes),
    }


def _graded_inputs(rng: np.random.Generator, N: int = 9) -> tuple[np.ndarray, ...]:
    scores = rng.random((N, 3, 5))
    valid = rng.random(scores.shape) < 0.8
    valid[:, :, :2] = True  # at least 2 draws per cell
    valid[3, 2] = False  # a cell not run
    pk = np.arange(N, dtype=np.uint32) * 7 + 1
    mk = np.array([3, 1, 4], dtype=np.uint32)
    return scores, valid, pk, mk


def _graded_crossfit_cases(rng: np.random.Generator) -> dict[str, Case]:
    x, ok, pk, mk = _graded_inputs(rng)
    return {
        "one row": (x[:1].copy(), ok[:1].copy(), pk[:1].copy(), mk, 0, 4),
        "one split": (x, ok, pk, mk, 5, 1),
        "big seed": (x, ok, pk, mk, 2**63 + 11, 3),
        "ties (equal scores)": (np.round(x), ok, pk, mk, 1, 4),
    }


def _graded_curve_cases(rng: np.random.Generator) -> dict[str, Case]:
    x, ok, pk, mk = _graded_inputs(rng)
    sizes = np.array([1, 2], dtype=np.int64)
    return {
        "one row": (x[:1].copy(), ok[:1].copy(), sizes, pk[:1].copy(), mk, 0, 4),
        "one size": (x, ok, sizes[1:].copy(), pk, mk, 3, 2),
        "big seed": (x, ok, sizes, pk, mk, 2**63 + 11, 3),
    }


def _latent_inputs(n_classes: int = 1) -> dict[str, Any]:
    """A small latent fit's E-step inputs (3 topics; ``n_classes`` theta columns
    per topic, the classes' columns shifted apart)."""
    from capfront.debias import latent

    res = cf.simulate(40, 3, 5, n_topics=3, seed=2, as_counts=True)
    S, G = np.asarray(res.successes), np.asarray(res.n_draws).copy()
    G[3, 1] = 0  # a cell not run
    S = np.where(G > 0, S, 0)
    topic = np.asarray(res.topic).astype(np.int64)
    fit = latent.fit_latent(S, G, topic, max_iter=3, backend="numpy")
    theta = np.repeat(fit.theta, n_classes, axis=1)
    theta += np.tile(np.linspace(-1.0, 1.0, n_classes), 3)[None, :]
    logh = fit.tables.logh(fit.family, fit.scale)
    return {
        "fit": fit,
        "table": latent._cell_table(logh, theta),
        "logh": logh,
        "cand": latent._candidates(5.0)[0],
        "log_w": np.log(np.maximum(fit.weights, 1e-300)),
        "far_w": np.where(latent.D_GRID > 9, 0.0, -92.0),  # mass far from the data
    }


def _estep_cases(rng: np.random.Generator) -> dict[str, Case]:
    # (the posteriors written to resp are compared through pgm_class_estep's)
    x = _latent_inputs()
    f, t, lw = x["fit"], x["table"], x["log_w"]
    J = len(lw)

    def case(n: slice, log_w=lw, ll=True) -> Case:
        rows, tp = f.cell_row[n].copy(), f.topic[n].copy()
        m = len(tp)
        return (t, rows, tp, log_w, np.empty((m, J)), np.empty(m) if ll else None)

    return {
        "empty": case(slice(0, 0)),
        "one row": case(slice(0, 1)),
        "no ll_out": case(slice(None), ll=False),
        "prior far from the data": case(slice(None), x["far_w"]),
        "general": case(slice(None)),
    }


def _estep_stats_cases(rng: np.random.Generator) -> dict[str, Case]:
    out = {}
    for label, (t, rows, tp, lw, resp, _) in _estep_cases(rng).items():
        out[label] = (t, rows, tp, lw, resp, t.shape[1], t.shape[2])
    out["wrong table shape refused"] = (*out["general"][:5], 1, 1)
    return out


def _latent_stats_cases(rng: np.random.Generator) -> dict[str, Case]:
    f = _latent_inputs()["fit"]
    K, R = f.theta.shape[1], f.tables.n_rows
    return {
        "empty": (f.resp[:0], f.cell_row[:0], f.topic[:0], K, R),
        "one row": (f.resp[:1], f.cell_row[:1].copy(), f.topic[:1].copy(), K, R),
        "general": (f.resp, f.cell_row, f.topic, K, R),
    }


def _mstep_cases(rng: np.random.Generator) -> dict[str, Case]:
    x = _latent_inputs()
    f = x["fit"]
    # any non-negative statistics; a (model, topic) never run
    C3 = rng.random((f.theta.size, f.tables.n_rows, len(f.weights)))
    C3[0] = 0.0
    return {
        "one row": (C3[:1].copy(), x["logh"], x["cand"]),
        "one candidate": (C3, x["logh"], x["cand"][:, :1].copy()),
        "general": (C3, x["logh"], x["cand"]),
    }


def _window_cases(rng: np.random.Generator) -> dict[str, Case]:
    C3, logh, cand = _mstep_cases(rng)["general"]
    n_c = cand.shape[1]
    lo = rng.integers(0, n_c - 5, C3.shape[0])
    return {
        "width 1": (C3, logh, cand, lo, 1),
        "at both ends": (C3, logh, cand, np.resize([0, n_c - 5], C3.shape[0]), 5),
        "general": (C3, logh, cand, lo, 5),
    }


def _emax_cases(rng: np.random.Generator) -> dict[str, Case]:
    import dataclasses

    from capfront.debias import latent

    f = _latent_inputs()["fit"]
    point = dataclasses.replace(f, scale=0.0)
    one, few = (
        dataclasses.replace(
            f, resp=f.resp[:n], cell_row=f.cell_row[:n].copy(), topic=f.topic[:n].copy()
        )
        for n in (1, 4)
    )
    return {
        "one row": latent._emax_args(one, 1e-6),
        "point mass": latent._emax_args(point, 1e-6),
        "every grid point": latent._emax_args(few, 0.0, stride=3),
        "general": latent._emax_args(f, 1e-6),
    }


def _class_estep_cases(rng: np.random.Generator) -> dict[str, Case]:
    x = _latent_inputs(n_classes=2)
    f, t, lw = x["fit"], x["table"], x["log_w"]
    N = len(f.topic)
    log_pi = np.log(np.array([[0.5, 0.5], [0.9, 0.1], [1e-300, 1.0]]))
    # previous responsibilities (each prompt keeps a pair: they sum to 1)
    prev = np.zeros((N, 2))
    prev[:, 0] = np.where(rng.random(N) < 0.3, 0.0, rng.random(N))
    prev[:, 1] = 1.0 - prev[:, 0]
    args = (t, f.cell_row, f.topic, 2, lw, log_pi)
    return {
        "one row": (
            t,
            f.cell_row[:1].copy(),
            f.topic[:1].copy(),
            *args[3:],
            None,
            0.0,
            0.0,
            1,
            True,
            True,
            True,
        ),  # fmt: skip
        "posteriors only": (*args, None, 0.0, 0.0, 4096, False, True, True),
        "statistics": (*args, None, 1e-8, 1e-8, 7, True, False, False),
        "sparse pairs": (*args, prev, 0.3, 1e-8, 16, True, True, True),
    }


# ---------------------------------------------------------------- resampling
_SEED = 5 | (1 << 32)  # both Philox key words non-zero


def _philox_cases(rng: np.random.Generator) -> dict[str, Case]:
    return {
        "none": (_SEED, 0, 0, 0, 0),
        "one block": (_SEED, 3, 1, 0, 4),
        "unaligned start (refused)": (_SEED, 2, 2, 5, 11),
        "aligned start": (_SEED, 2, 2, 8, 11),
        "high counter": (7, 2**31 + 5, 0, 2**33 - 2, 9),
    }


def _offsets() -> np.ndarray:
    return np.array([0, 7, 20], dtype=np.int64)  # two strata, 7 and 13 prompts


def _counts_cases(rng: np.random.Generator) -> dict[str, Case]:
    return {
        "no replicate": (_offsets(), _SEED, 0, 0),
        "one prompt": (np.array([0, 1], dtype=np.int64), _SEED, 0, 3),
        "strata": (_offsets(), _SEED, 3, 5),
    }


def _sums_cases(rng: np.random.Generator) -> dict[str, Case]:
    z8 = rng.integers(-5, 9, (2, 20)).astype(np.int8)
    z64 = rng.integers(-1000, 1000, (1, 20)).astype(np.int64)
    return {
        "both columns": (_offsets(), _SEED, 3, 4, z8, z64),
        "int8 only": (_offsets(), _SEED, 0, 2, z8, z64[:0]),
        "int64 only": (_offsets(), _SEED, 0, 2, z8[:0], z64),
        "no replicate": (_offsets(), _SEED, 0, 0, z8, z64),
    }


def _two_level_cases(rng: np.random.Generator) -> dict[str, Case]:
    from capfront.resampling.columns import _binomial_thresholds

    S = rng.integers(0, 5, (20, 3)).astype(np.uint8)
    T = _binomial_thresholds(4)
    return {
        "max and cells": (_offsets(), _SEED, 0, 3, S, T, True, True),
        "max only": (_offsets(), _SEED, 2, 2, S, T, True, False),
        "one model": (_offsets(), _SEED, 0, 2, S[:, :1].copy(), T, True, True),
    }


def _class_inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    offsets = np.array([0, 3, 5], dtype=np.int64)  # two strata, 3 and 2 classes
    size = np.array([10, 1, 400, 7, 9], dtype=np.int64)
    value = np.array([-3, 0, 5, 1, 2], dtype=np.int64)
    return offsets, size, value


def _class_counts_cases(rng: np.random.Generator) -> dict[str, Case]:
    off, size, _ = _class_inputs()
    one = np.array([0, 1], dtype=np.int64)
    return {
        "strata": (off, size, _SEED, 2, 6),
        "one class": (one, np.array([12], dtype=np.int64), _SEED, 0, 3),
        "no replicate": (off, size, _SEED, 0, 0),
    }


def _class_sums_cases(rng: np.random.Generator) -> dict[str, Case]:
    off, size, value = _class_inputs()
    return {
        "strata": (off, size, value, _SEED, 2, 6),
        "no replicate": (off, size, value, _SEED, 0, 0),
    }


def _row_max_cases(rng: np.random.Generator) -> dict[str, Case]:
    S = rng.integers(0, 9, (20, 33)).astype(np.uint8)  # 16-byte loads and a tail
    order = rng.permutation(20).astype(np.int64)
    none = np.empty(0, np.int64)
    one = np.array([0, 20], dtype=np.int64)
    return {
        "one stratum": (S, none, one, 9),
        "strata, permuted": (S, order, _offsets(), 12),
        "one model": (S[:, :1].copy(), none, one, 9),
        "narrow rows": (S[:, :5].copy(), order, _offsets(), 9),
        "non-contiguous": (S[:, ::2], none, one, 9),
        "one row": (S[:1], none, np.array([0, 1], dtype=np.int64), 9),
        "maximum too large": (S, none, one, 8),
    }


def _poisson_cases(rng: np.random.Generator) -> dict[str, Case]:
    keys = np.array([0, 1, 2**40 + 3, 2**61 + 11, 17], dtype=np.int64)
    values = rng.integers(-50, 50, (5, 2)).astype(np.int64)
    return {
        "keys above 2^61": (keys, values, _SEED, 4),
        "key 2^62 (refused)": (keys + np.int64(2**62 - 2**61 - 11), values, _SEED, 1),
        "one row": (keys[:1], values[:1], _SEED, 3),
        "empty": (keys[:0], values[:0], _SEED, 2),
    }


# ---------------------------------------------------------------- expected max
def _emax_rows_cases(rng: np.random.Generator) -> dict[str, Case]:
    p = rng.random((37, 4))  # > 16 rows: the lane blocks and a remainder
    p[3] = [0.0, 1.0, 0.5, 0.5]
    one = np.full((1, 4), 10, dtype=np.int64)
    ragged = rng.integers(1, 12, (37, 4)).astype(np.int64)
    return {
        "shared draws": (p, one),
        "ragged draws": (p, ragged),
        "one row": (p[:1], ragged[:1]),
        "one model": (p[:, :1], np.full((1, 1), 5, dtype=np.int64)),
        "G = 1": (p, np.ones((1, 4), dtype=np.int64)),
    }


def _curve_mean_cases(rng: np.random.Generator) -> dict[str, Case]:
    G = rng.integers(3, 7, (12, 3)).astype(np.int64)
    S = rng.integers(0, 7, G.shape).astype(np.int64) % (G + 1)
    sizes = np.array([1, 2, 3], dtype=np.int64)
    return {
        "counts": (S, G, sizes),
        "one row": (S[:1], G[:1], sizes),
        "one model": (S[:, :1].copy(), G[:, :1].copy(), sizes[:2]),
    }


def _correlated_cases(rng: np.random.Generator) -> dict[str, Case]:
    from capfront.debias.correlated import correlated_draws

    def case(N, L, K, missing=0.0, df=5.0):
        G = rng.integers(1, 9, (N, L)).astype(float)
        G[rng.random((N, L)) < missing] = 0.0
        S = rng.binomial(G.astype(np.int64), 0.4).astype(float)
        A = rng.normal(size=(L, L))
        Sig = A @ A.T / L + np.eye(L)
        z, log_q = correlated_draws(K, L, 1, df)
        return (
            S,
            G,
            rng.normal(size=L) * 0.5,
            np.linalg.inv(Sig),
            float(np.linalg.slogdet(Sig)[1]),
            rng.normal(size=(N, L)),
            z,
            log_q,
            1.2,
            30,
        )

    small = case(9, 3, 16)
    bad = list(case(4, 2, 8))
    bad[0] = bad[1] + 1.0  # successes above the draws
    not_pd = list(case(4, 2, 8))
    not_pd[3] = -np.eye(2)
    return {
        "small": small,
        "missing cells": case(40, 5, 64, missing=0.3),
        "normal proposal": case(20, 4, 32, df=np.inf),
        "laplace (K = 0)": case(12, 4, 0),
        "one model": case(33, 1, 8),
        "no prompts": case(0, 3, 8),
        "no newton steps": (*small[:-1], 0),
        "strided": (_strided(small[0]), _strided(small[1]), *small[2:]),
        "moments off": (*case(10, 3, 16), False),
        "successes above draws": tuple(bad),
        "not positive definite": tuple(not_pd),
        "wrong z": (*small[:6], small[6][:, :2], *small[7:]),
    }


CASES: dict[str, Callable[[np.random.Generator], dict[str, Case]]] = {
    "naive_oracle_rows": _oracle_cases,
    "union_oracle_rows": _oracle_cases,
    "pareto_minima_3d": _pareto_cases,
    "hull_segments_dense": _dense_cases,
    "hull_segments_cells": _cells_cases,
    "hull_segments_posthoc": _posthoc_cases,
    "frontier_vertices": _vertices_cases,
    "sufficient_stats": _suffstats_cases,
    "crossfit_rows": _crossfit_cases,
    "subsample_curve_rows": _curve_cases,
    "graded_crossfit_rows": _graded_crossfit_cases,
    "graded_curve_rows": _graded_curve_cases,
    "pgm_estep": _estep_cases,
    "pgm_stats": _latent_stats_cases,
    "pgm_estep_stats": _estep_stats_cases,
    "pgm_mstep_scores": _mstep_cases,
    "pgm_mstep_scores_window": _window_cases,
    "pgm_emax": _emax_cases,
    "pgm_class_estep": _class_estep_cases,
    "correlated_estep": _correlated_cases,
    "philox_words": _philox_cases,
    "bootstrap_counts": _counts_cases,
    "bootstrap_sums": _sums_cases,
    "bootstrap_two_level_sums": _two_level_cases,
    "bootstrap_class_counts": _class_counts_cases,
    "bootstrap_class_sums": _class_sums_cases,
    "poisson_sums": _poisson_cases,
    "row_max_counts": _row_max_cases,
    "expected_max_binomial_rows": _emax_rows_cases,
    "subsample_curve_mean": _curve_mean_cases,
}


_FLAGS = (
    "nonfinite_scores",
    "out_of_range_scores",
    "nonbinary_scores",
    "bad_cost",
    "bad_latency",
)


def _stats_view(raw: dict, args: Case) -> dict:
    """What ``sufficient_stats`` keeps of a backend's raw dict: the backends may
    leave out what the data implies (``n_draws`` without a mask, ``sum_sq`` and
    ``max_score`` of clean binary scores) or hold counts as integers."""
    scores, mask = args[0], args[1]
    N, L, G = scores.shape
    out: dict[str, Any] = {k: int(raw[k]) for k in _FLAGS}
    out["successes"] = np.asarray(raw["successes"], dtype=np.float64)
    draws = raw["n_draws"]
    out["n_draws"] = (
        np.full((N, L), G) if mask is None or draws is None else np.asarray(draws)
    )
    if any(out[k] for k in _FLAGS[:3]):
        out["sum_sq"] = np.asarray(raw["sum_sq"], dtype=np.float64)
        out["max_score"] = np.asarray(raw["max_score"], dtype=np.float64)
    for k in ("cost_sum", "latency_sum", "latency_max"):
        out[k] = raw[k]
    return out


#: kernels whose backends agree to rounding, not bit for bit (the compiled ones
#: sum the hypergeometric probabilities by their own recursion, NumPy by SciPy's)
# SciPy's hypergeometric / binomial CDFs against the compiled recursions
TOLERANCE = {
    "crossfit_rows": 1e-12,
    "subsample_curve_rows": 1e-12,
    "expected_max_binomial_rows": 1e-14,
    "subsample_curve_mean": 1e-12,
}
#: (the latent model's compiled kernels skip a prompt's far posterior tail,
#: multiply by the normaliser's inverse and sum in their own order)
TOLERANCE.update({name: 1e-9 for name, k in kernels().items() if k.family == "latent"})
#: (the compiled correlated E-step takes the prior's quadratic form by an identity)
TOLERANCE["correlated_estep"] = 1e-9

#: kernel -> what of its output the backends must agree on (default: all of it)
VIEWS: dict[str, Callable[[Any, Case], Any]] = {"sufficient_stats": _stats_view}


def _run(fn: Callable[..., Any], args: Case) -> Any:
    try:
        return fn(*args)
    except ValueError as err:
        return ValueError(str(err).split(";")[0])


def _same(a: Any, b: Any, where: str, tol: float = 0.0) -> None:
    if isinstance(a, ValueError) or isinstance(b, ValueError):
        assert isinstance(a, ValueError) and isinstance(b, ValueError), (where, a, b)
        return
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), where
        for k in a:
            _same(a[k], b[k], f"{where}[{k}]", tol)
        return
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]", tol)
        return
    if a is None or b is None:
        assert a is None and b is None, where
        return
    x, y = np.asarray(a), np.asarray(b)
    assert x.shape == y.shape, (where, x.shape, y.shape)
    if tol:
        np.testing.assert_allclose(x, y, rtol=tol, atol=tol, err_msg=where)
    else:
        np.testing.assert_array_equal(x, y, err_msg=where, strict=False)


def test_every_kernel_has_edge_cases() -> None:
    assert set(kernels()) <= set(CASES), sorted(set(kernels()) - set(CASES))


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("backend", cf.available_backends())
def test_parity(name: str, backend: str) -> None:
    k = kernels()[name]
    cases = CASES[name](np.random.default_rng(7))
    view = VIEWS.get(name, lambda out, args: out)
    for label, args in cases.items():
        want = _run(k.numpy, args)
        got = _run(k.for_backend(backend), args)
        if not isinstance(want, ValueError) and not isinstance(got, ValueError):
            want, got = view(want, args), view(got, args)
        _same(want, got, f"{name} / {backend} / {label}", TOLERANCE.get(name, 0.0))
