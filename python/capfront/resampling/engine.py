"""The resampling engine: prompt bootstrap replicates of a statistic object, and
their percentile, basic or BCa interval (design §7).

The engine knows statistic *kinds* (:mod:`capfront.resampling.statistics`), no
statistic names: a name is looked up in the registry, whose owners (the oracles,
:mod:`capfront.debias`, :mod:`capfront.frontier`) build the object. It never holds
``n_resamples x N`` numbers: replicates are made in chunks and only their
statistic values are kept. The kernels are registry entries of
:mod:`capfront._kernels.bootstrap` (C++, Numba, NumPy: the same integers).

Linear statistics
-----------------
``theta = finalize(m)``, ``m_k = mean_n V[n, k]``. A replicate with draw counts
``c_n`` (``sum_n c_n = N``) only needs ``m*_k = sum_n c_n V[n, k] / N``. Columns
are stored as integers, ``V[n, k] = scale_k Z[k, n]``: int8 codes where ``V``
takes few values (``p_hat = S / G`` has ``G + 1``), otherwise 53-bit fixed point
(``N max|Z| <= 2^52``, a relative quantisation step of ``N 2^-52`` of the column's
largest value). The weighted sums are exact integers, so a replicate is the same
number for any backend, thread count and summation order; ``finalize`` (shared
Python code) runs on all replicates of a chunk at once.

Value classes. When the rows ``Z[:, n]`` take few distinct values (the naive
oracle's ``max_l p_hat``, the gain's ``(max, p_hat_1..L)`` with few models and
draws), a replicate's sums depend only on how many draws land in each class
``c`` (``n_c`` prompts, row ``z_c``): ``sum_n c_n Z[:, n] = sum_c M_c z_c`` with
multinomial class counts ``M`` drawn class by class within each stratum as
conditional binomials, ``O(classes sqrt(N))`` per replicate instead of ``O(N K)``.
A statistic may give the classes of its only int8 column directly
(:class:`~capfront.resampling.statistics.CodeClasses`: the naive oracle of compact
counts counts ``max_l S`` per stratum in one pass over the uint8 table), so that
the column is never built (except for BCa, whose influence values need it).
The engine takes this path automatically for one int8 column, and for any linear
statistic whose estimated class cost, ``C (8 + 60 sqrt(N / C)) + C K`` operations
for ``C`` classes, is under a quarter of the prompt path's ``N (2 + K / 2)``.

Random stream (Philox4x32-10, key = ``seed``)
--------------------------------------------
Word ``w`` of stream ``s`` for replicate ``b`` is lane ``w % 4`` of the Philox
block with counter ``(j mod 2^32, b, s, j >> 32)``, ``j = w // 4``, under the key
``(seed mod 2^32, seed >> 32)`` (see :mod:`capfront._philox`).

- Stream 0, prompts: prompts are listed by stratum (strata sorted by label, prompts
  in their original order within a stratum; one stratum without ``stratify``).
  Slot ``w`` of stratum ``s`` (positions ``offsets[s] <= w < offsets[s+1]``,
  ``n_s`` prompts) draws the prompt at position
  ``offsets[s] + floor(u_w n_s / 2^32)``. Each stratum keeps its size exactly;
  the multiply-shift map deviates from uniform by less than ``n_s / 2^32``
  relative (1e-4 at 400,000 prompts). Every path that resamples prompts (this
  engine, :meth:`capfront.Frontier.with_band`,
  ``Frontier.versus_best_single(ci=)``, ``debiased_oracle(ci=)``,
  :func:`replicate_counts`) reads these words, so a seed draws the same prompts
  everywhere.
- Stream 1, two-level cells: slot ``w``'s cell ``l`` takes word ``w L + l`` and
  inverts the ``Bin(G, p_hat)`` CDF: ``S* = #{k < G : u >= T[S, k]}`` with
  ``T[S, k] = floor(2^32 F(k; G, S / G))``.
- Stream 2, value classes: ``M_c ~ Bin(draws left, n_c / prompts left)`` (classes
  of a stratum in ascending row order), each drawn exactly in O(1) expected time
  (inversion for ``n min(p, 1 - p) < 10``, else Hormann's BTRD rejection); attempt
  ``t`` of binomial ``j`` reads the block with counter ``(j, b, 2, t)``.

Multinomial counts (rather than Poisson weights) keep ``sum_n c_n = N`` and the
strata sizes exact, which the percentile and BCa theory assume; counter-based
words make replicate ``b`` computable on any thread.

Other statistics
----------------
- weighted statistics ``value(w)`` (e.g. frontier metrics: the hull segments are
  sorted once, each replicate re-weights them): one call per chunk of weight rows
  ``w_n = c_n / N``;
- resampled statistics (a Python callable ``statistic(EvalResults) -> float``): one
  resampled :class:`EvalResults` per replicate (prompts relabelled ``0..N-1``).

BCa acceleration: from the empirical influence function for linear statistics
(``U_n = grad finalize(m) . (V_n - m)``, numerical gradient, ``O(N K)``) and a
grouped jackknife (100 groups, prompt ``n`` in group ``n mod 100``) otherwise;
never ``O(N^2)``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from .._backend import resolve_backend
from .._kernels import dispatch
from .._kernels.bootstrap import parallel_threads, replicate_chunk, two_level_draw
from .._validate import require_results
from ..results import EvalResults
from .columns import (
    ClassTables,
    Strata,
    _binomial_thresholds,
    _class_tables,
    _code,
    _code_classes,
    _Coded,
    make_strata,
)
from .intervals import interval, jackknife_acceleration, linear_acceleration
from .result import BootstrapResult
from .statistics import (
    LinearStatistic,
    PerPrompt,
    ResampledStatistic,
    WeightedStatistic,
    known_statistics,
    per_prompt_statistic,
    statistic_builder,
)

__all__ = [
    "METHODS",
    "STRATIFY",
    "Strata",
    "bootstrap",
    "count_chunks",
    "interval",
    "make_strata",
    "replicate_counts",
    "resolve_statistic",
]

METHODS = ("percentile", "bca", "basic")
STRATIFY = (None, "benchmark", "topic")
_JACKKNIFE_GROUPS = 100
_PROGRESS_AFTER = 1.0  # seconds


# --------------------------------------------------------------------------- progress
class _Progress:
    """A rich progress bar on a terminal for runs projected to take over a second."""

    def __init__(self, total: int, label: str) -> None:
        self.total = total
        self.label = label
        self.enabled = bool(getattr(sys.stderr, "isatty", lambda: False)())
        self.start = time.perf_counter()
        self.bar: Any = None
        self.task: Any = None

    def update(self, done: int) -> None:
        if not self.enabled or done <= 0:
            return
        if self.bar is None:
            elapsed = time.perf_counter() - self.start
            if elapsed * self.total / done - elapsed < _PROGRESS_AFTER:
                return
            try:
                from rich.console import Console
                from rich.progress import Progress
            except ImportError:  # pragma: no cover - rich is a dependency
                self.enabled = False
                return
            self.bar = Progress(console=Console(file=sys.stderr), transient=True)
            self.task = self.bar.add_task(self.label, total=self.total)
            self.bar.start()
        self.bar.update(self.task, completed=done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


# --------------------------------------------------------------------------- replicates
def _linear_replicates(
    coded: _Coded,
    strata: Strata,
    seed: int,
    B: int,
    backend: str,
    two_level: Any,
    S_ord: np.ndarray | None,
    progress: _Progress,
    classes: ClassTables | None = None,
) -> np.ndarray:
    """Replicates of a coded linear statistic: two-level sums, class counts or
    prompt sums, chunk by chunk (replicates are keyed by index: chunking changes
    nothing). ``classes``: the class tables when already counted."""
    n = strata.n
    reps = np.empty(B)
    chunk = replicate_chunk(n, backend)
    if classes is None and two_level is not None:
        T = _binomial_thresholds(two_level.g)
        # a two-level replicate redraws all n L cells: chunks of about 2^23 cell
        # draws per thread keep each kernel call, and so the wait for Ctrl-C, well
        # under a second
        per_thread = max(1, (1 << 23) // max(n * S_ord.shape[1], 1))
        chunk = max(1, min(chunk, per_thread * parallel_threads(backend)))
        scale = np.full(
            (1 if two_level.with_max else 0)
            + (S_ord.shape[1] if two_level.with_cells else 0),
            1.0 / two_level.g,
        )
        kernel = dispatch("bootstrap_two_level_sums", backend)
    elif classes is None:
        classes = _class_tables(coded, strata.offsets)
    if classes is not None:
        n_classes = classes[0][-1]
        chunk = max(chunk, replicate_chunk(n, backend, "classes"))
        chunk = max(1, min(chunk, (1 << 22) // max(int(n_classes), 1)))
        kernel = dispatch("bootstrap_class_counts", backend)
    elif two_level is None:
        kernel = dispatch("bootstrap_sums", backend)
    for b0 in range(0, B, chunk):
        nb = min(chunk, B - b0)
        if classes is not None:
            M = kernel(classes[0], classes[1], seed, b0, nb)
            means = (M @ classes[2]) * (coded.scale / n)
        elif two_level is None:
            sums = kernel(strata.offsets, seed, b0, nb, coded.z8, coded.z64)
            means = sums * (coded.scale / n)
        else:
            sums = kernel(
                strata.offsets,
                seed,
                b0,
                nb,
                S_ord,
                T,
                two_level.with_max,
                two_level.with_cells,
            )
            means = sums * (scale / n)
        reps[b0 : b0 + nb] = coded.finalize(means)
        progress.update(b0 + nb)
    return reps


def count_chunks(
    strata: Strata | int,
    seed: int,
    B: int,
    backend: str | None = None,
    progress: _Progress | None = None,
    start: int = 0,
) -> Iterator[tuple[int, np.ndarray]]:
    """``(b0, counts)`` chunks of the draw counts ``(nb, N)`` (uint8, prompts in
    original order) of replicates ``start .. start + B - 1``: the stream-0
    resamples of :func:`bootstrap` for this seed. ``strata`` may be a prompt count
    (one stratum)."""
    if not isinstance(strata, Strata):
        strata = Strata.single(int(strata))
    name = resolve_backend(backend)
    kernel = dispatch("bootstrap_counts", name)
    chunk = max(1, min(replicate_chunk(strata.n, name), 64))
    for b0 in range(start, start + B, chunk):
        nb = min(chunk, start + B - b0)
        counts = kernel(strata.offsets, seed, b0, nb)
        if not strata.identity:
            unperm = np.empty_like(counts)
            unperm[:, strata.order] = counts
            counts = unperm
        yield b0 - start, counts
        if progress is not None:
            progress.update(b0 - start + nb)


def _weighted_replicates(
    stat: WeightedStatistic,
    strata: Strata,
    seed: int,
    B: int,
    backend: str,
    progress: _Progress,
) -> np.ndarray:
    reps = np.empty(B)
    n = strata.n
    for b0, counts in count_chunks(strata, seed, B, backend, progress):
        W = counts.astype(np.float64) / n
        if stat.batch is not None:
            reps[b0 : b0 + W.shape[0]] = stat.batch(W)
        else:
            for r in range(W.shape[0]):
                reps[b0 + r] = stat.value(W[r])
    return reps


def resample_results(
    results: EvalResults, idx: np.ndarray, successes: np.ndarray | None = None
) -> EvalResults:
    """The prompts ``idx`` (repeats allowed) as a new EvalResults, prompts relabelled
    ``0..len(idx)-1``; ``successes`` replaces the counts (two-level, binary)."""
    s = results.stats

    def take(a: np.ndarray | None) -> np.ndarray | None:
        return None if a is None else a[idx]

    stats_ = s.take(np.asarray(idx), np.arange(results.n_models))
    stats_.prompts = stats_.models = None
    if successes is None:
        scores, mask, latency = (
            take(results.scores),
            take(results.mask),
            take(results.latency),
        )
    else:
        stats_ = stats_.with_counts(successes)
        scores = mask = latency = None
    return EvalResults(
        stats_,
        models=results.models,
        prompts=np.arange(len(idx)),
        benchmark=take(results.benchmark),
        topic=take(results.topic),
        is_binary=results.is_binary,
        scores=scores,
        mask=mask,
        latency=latency,
        truth_p=take(results.truth_p),
        truth=results.truth,
    )


def _resampled_replicates(
    stat: ResampledStatistic,
    results: EvalResults,
    strata: Strata,
    seed: int,
    B: int,
    backend: str,
    two_level: bool,
    progress: _Progress,
) -> np.ndarray:
    reps = np.empty(B)
    if not two_level:
        for b0, counts in count_chunks(strata, seed, B, backend, progress):
            for r in range(counts.shape[0]):
                idx = np.repeat(np.arange(strata.n), counts[r].astype(np.int64))
                reps[b0 + r] = stat.value(resample_results(results, idx))
        return reps
    S_ord = np.rint(results.successes[strata.order]).astype(np.int64)
    G_ord = results.n_draws[strata.order].astype(np.int64)
    tables = {int(g): _binomial_thresholds(int(g)) for g in np.unique(G_ord) if g > 0}
    words = dispatch("philox_words", backend)
    for b in range(B):
        rows, star = two_level_draw(
            strata.offsets, seed, b, S_ord, G_ord, tables, words
        )
        reps[b] = stat.value(resample_results(results, strata.order[rows], star))
        progress.update(b + 1)
    return reps


# --------------------------------------------------------------------------- BCa
def _weighted_acceleration(stat: WeightedStatistic, n: int) -> float:
    groups = min(_JACKKNIFE_GROUPS, n)
    vals = np.empty(groups)
    gid = np.arange(n) % groups
    for g in range(groups):
        w = (gid != g).astype(np.float64)
        vals[g] = stat.value(w / w.sum())
    return jackknife_acceleration(vals)


def _resampled_acceleration(stat: ResampledStatistic, results: EvalResults) -> float:
    n = results.n_prompts
    groups = min(_JACKKNIFE_GROUPS, n)
    gid = np.arange(n) % groups
    vals = np.array(
        [
            stat.value(resample_results(results, np.flatnonzero(gid != g)))
            for g in range(groups)
        ]
    )
    return jackknife_acceleration(vals)


# --------------------------------------------------------------------------- API
def _check_int(value: Any, name: str, minimum: int, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if not minimum <= v <= maximum:
        raise ValueError(f"{name} must lie in [{minimum}, {maximum}], got {v}")
    return v


_KINDS = (LinearStatistic, WeightedStatistic, ResampledStatistic)


def resolve_statistic(
    results: EvalResults, statistic: Any, two_level: bool = False
) -> tuple[str, LinearStatistic | WeightedStatistic | ResampledStatistic]:
    """``(name, statistic object)`` of a statistic object, a :class:`PerPrompt`, a
    callable ``f(EvalResults) -> float`` or a registered name."""
    if isinstance(statistic, _KINDS):
        return getattr(statistic, "name", type(statistic).__name__), statistic
    if isinstance(statistic, PerPrompt):
        if two_level:
            raise ValueError(
                "two_level=True needs a statistic computed from the counts; "
                "PerPrompt values are fixed"
            )
        return statistic.name, per_prompt_statistic(results, statistic)
    if callable(statistic):
        name = getattr(statistic, "__name__", "callable")
        return name, ResampledStatistic(statistic, float(statistic(results)))
    if not isinstance(statistic, str):
        raise ValueError(
            f"statistic must be a name or a callable taking EvalResults, got "
            f"{type(statistic).__name__}"
        )
    builder = statistic_builder(statistic)
    if builder is None:
        raise ValueError(
            f"unknown statistic {statistic!r}; use a callable taking EvalResults or "
            f"one of {', '.join(known_statistics())}"
        )
    return statistic, builder(results, statistic, two_level)


def _estimate(results: EvalResults, statistic: Any) -> float:
    stat = resolve_statistic(results, statistic, False)[1]
    if isinstance(stat, LinearStatistic):
        return _code(stat, results.n_prompts, None).estimate
    return float(stat.estimate)


def bootstrap(
    results: EvalResults,
    statistic: Any,
    *,
    n_resamples: int = 10_000,
    level: float = 0.95,
    method: str = "percentile",
    seed: int = 0,
    stratify: str | None = None,
    two_level: bool = False,
    keep_replicates: bool = False,
    backend: str | None = None,
) -> BootstrapResult:
    """Bootstrap confidence interval of a statistic over prompts (design §7).

    Replicate ``b`` draws ``N`` prompts with replacement (multinomial counts
    ``c_n``, within each stratum when ``stratify`` is set) from the Philox4x32-10
    stream of ``seed`` (layout in :mod:`capfront.resampling.engine`), so the
    replicates depend on the seed only -- not on the backend or the thread count.
    With ``two_level=True`` each drawn cell is then redrawn, ``S* ~ Bin(G, p_hat)``
    (binary scores).

    Intervals at ``alpha = (1 - level) / 2``:

    - ``"percentile"``: the ``alpha`` and ``1 - alpha`` quantiles of the replicates;
    - ``"basic"``: ``(2 theta - q_{1-alpha}, 2 theta - q_alpha)``;
    - ``"bca"`` (Efron 1987): quantiles at
      ``Phi(z0 + (z0 + z) / (1 - a (z0 + z)))``, ``z = Phi^-1(alpha), Phi^-1(1 -
      alpha)``, ``z0 = Phi^-1(share of replicates below theta)`` and the
      acceleration ``a = sum U^3 / (6 (sum U^2)^1.5)`` from the empirical influence
      values ``U`` (linearised ``finalize`` for decomposable statistics, a
      100-group jackknife otherwise).

    Parameters
    ----------
    results : EvalResults
    statistic : str, PerPrompt, statistic object or callable
        A registered name: ``"naive_oracle"`` (``mean_n max_l p_hat``),
        ``"best_single"`` (``max_l A_l``), ``"oracle_gain"`` (naive oracle minus
        best single), a debiased method of :func:`capfront.debias.decomposition`
        (``"naive"``, ``"bootstrap_bc"``, ``"double_bc"``, ``"crossfit"``,
        ``"extrapolation"``, ``"jackknife"``, ``"pgm"``),
        ``"frontier_error_reduction"``, ``"frontier_cost_reduction"``, ``"aiq"``
        (prehoc naive frontier on all prompts against the best single model), or
        any name added with :func:`capfront.resampling.register_statistic`; a
        :class:`PerPrompt`; a :class:`~capfront.resampling.LinearStatistic`,
        ``WeightedStatistic`` or ``ResampledStatistic``; or a callable
        ``f(EvalResults) -> float`` (slow path: one resampled EvalResults per
        replicate, prompts relabelled ``0..N-1``).
    n_resamples : int
        Number of replicates ``B`` (2 to 2^32).
    level : float
        Confidence level in (0, 1).
    method : ``"percentile"`` | ``"bca"`` | ``"basic"``
    seed : int
        Philox key, in ``[0, 2^64)``.
    stratify : None | ``"benchmark"`` | ``"topic"``
        Resample within the groups of these labels (each keeps its size).
    two_level : bool
        Also redraw the generations of every drawn cell (binary scores).
    keep_replicates : bool
        Return the replicate values (``n_resamples`` floats).
    backend : None | ``"cpp"`` | ``"numba"`` | ``"numpy"``

    Returns
    -------
    BootstrapResult
        ``.estimate``, ``.ci``, ``.se``, ``.replicates`` (when kept), ``.method``,
        ``.level``, ``.n_resamples``, ``.bias``.
    """
    require_results(results)
    B = _check_int(n_resamples, "n_resamples", 2, 2**32)
    seed = _check_int(seed, "seed", 0, 2**64 - 1)
    if isinstance(level, bool) or not isinstance(level, (int, float, np.floating)):
        raise ValueError(f"level must be a number in (0, 1), got {level!r}")
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; use one of {', '.join(METHODS)}")
    if stratify not in STRATIFY:
        raise ValueError(
            f"unknown stratify {stratify!r}; use None, 'benchmark' or 'topic'"
        )
    two_level = bool(two_level)
    if two_level:
        results.require_binary("two_level bootstrap (S* ~ Bin(G, p_hat))")
    name_backend = resolve_backend(backend)
    strata = make_strata(results, stratify)
    name, stat = resolve_statistic(results, statistic, two_level)
    if stat.data is not None and stat.data is not results:
        # the statistic is defined on part of the data (e.g. the prompts every
        # model ran): resample that part
        results = stat.data
        strata = make_strata(results, stratify)
    coded = classes = None
    if isinstance(stat, LinearStatistic) and (
        stat.classes is not None and not two_level and method != "bca"
    ):
        # the class path from counts of the column's values: the column (and
        # BCa's influence values, which need it) is never built
        coded, classes = _code_classes(stat, strata, name_backend)
    elif isinstance(stat, LinearStatistic):
        coded = _code(stat, strata.n, strata)
        if two_level and stat.two_level is None:
            # Ragged draws or graded data: the generic slow path.
            def value(res: EvalResults) -> float:
                return _estimate(res, statistic)

            stat = ResampledStatistic(value, coded.estimate)
    progress = _Progress(B, f"bootstrap {name}")
    try:
        if isinstance(stat, LinearStatistic):
            S_ord = None
            if two_level:
                S_ord = np.ascontiguousarray(
                    np.rint(results.successes[strata.order]).astype(np.uint8)
                )
            reps = _linear_replicates(
                coded,
                strata,
                seed,
                B,
                name_backend,
                stat.two_level if two_level else None,
                S_ord,
                progress,
                classes,
            )
        elif isinstance(stat, WeightedStatistic):
            reps = _weighted_replicates(stat, strata, seed, B, name_backend, progress)
        else:
            reps = _resampled_replicates(
                stat, results, strata, seed, B, name_backend, two_level, progress
            )
    finally:
        progress.close()
    estimate = float(coded.estimate if coded is not None else stat.estimate)
    acceleration = None
    if method == "bca":
        if isinstance(stat, LinearStatistic):
            acceleration = linear_acceleration(coded, strata.n)
        elif isinstance(stat, WeightedStatistic):
            acceleration = _weighted_acceleration(stat, strata.n)
        else:
            acceleration = _resampled_acceleration(stat, results)
    finite = np.isfinite(reps)
    if not finite.all():
        raise ValueError(
            f"{int((~finite).sum())} of {B} replicates of {name!r} are not finite "
            "(e.g. a model or stratum missing from a resample)"
        )
    ci, z0 = interval(reps, estimate, level, method, acceleration or 0.0)
    return BootstrapResult(
        estimate=estimate,
        ci=ci,
        se=float(reps.std(ddof=1)),
        method=method,
        level=level,
        n_resamples=B,
        statistic=name,
        bias=float(reps.mean() - estimate),
        seed=seed,
        stratify=stratify,
        two_level=two_level,
        backend=name_backend,
        replicates=reps if keep_replicates else None,
        acceleration=acceleration,
        z0=z0,
    )


# ``capfront.bootstrap`` (the package attribute) is the function; this lets code
# written as ``from capfront import bootstrap as mod; mod.bootstrap(...)`` work too.
bootstrap.bootstrap = bootstrap  # type: ignore[attr-defined]


def replicate_counts(
    results: EvalResults | int,
    n_resamples: int,
    *,
    seed: int = 0,
    stratify: str | None = None,
    start: int = 0,
    backend: str | None = None,
) -> np.ndarray:
    """Draw counts ``(n_resamples, N)`` (uint8) of replicates ``start ..
    start + n_resamples - 1``, prompts in their original order: exactly the
    resamples :func:`bootstrap`, :meth:`capfront.Frontier.with_band` and the
    ``ci=`` options use for the same ``seed`` and ``stratify`` (stream 0;
    statistics on the value-class path, such as the naive oracle with equal ``G``,
    draw their class counts from stream 2 instead). ``results`` may be a prompt
    count (no strata). Holds ``n_resamples x N`` numbers: call it in chunks."""
    if isinstance(results, EvalResults):
        strata = make_strata(results, stratify)
    else:
        n = _check_int(results, "results (a prompt count)", 1, 2**40)
        if stratify is not None:
            raise ValueError("stratify needs EvalResults with labels")
        strata = Strata.single(n)
    nb = _check_int(n_resamples, "n_resamples", 0, 2**32)
    start = _check_int(start, "start", 0, 2**32 - nb)
    seed = _check_int(seed, "seed", 0, 2**64 - 1)
    counts = dispatch("bootstrap_counts", backend)(strata.offsets, seed, start, nb)
    if strata.identity:
        return counts
    out = np.empty_like(counts)
    out[:, strata.order] = counts
    return out
