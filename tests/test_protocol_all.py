"""Every public result follows the result protocol: ``value``, ``ci`` (a
``(low, high)`` pair of floats) with ``level``, ``to_frame()`` (a DataFrame) and
``to_dict()`` (JSON-ready).

The public results are found, not listed: every dataclass that ``capfront``
exports (``_EXPORTS``) or that a ``capfront.studies`` function returns. A new
public result class without an example here fails
:func:`test_every_public_result_class_has_an_example`.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pandas as pd
import pytest

import capfront as cf
from capfront import studies

#: exported dataclasses that are data, not results of an analysis
DATA = {"EvalResults", "SufficientStats"}
#: results whose protocol the lead adds (debias/audit.py)
LEAD = {"AuditResult"}
#: collections of results: ``value`` and ``ci`` per member (a Series, a dict);
#: each member follows the protocol, the collection has ``to_frame``/``to_dict``
COLLECTIONS = {"RouterTable": "routers"}


def _public_result_classes() -> set[str]:
    names = set()
    for name in cf._EXPORTS:
        obj = getattr(cf, name)
        if isinstance(obj, type) and dataclasses.is_dataclass(obj):
            names.add(name)
    for name in studies.__all__:
        obj = getattr(studies, name)
        if isinstance(obj, type) and dataclasses.is_dataclass(obj):
            names.add(name)
    return names - DATA - LEAD


@pytest.fixture(scope="module")
def examples() -> dict[str, object]:
    res = cf.simulate(120, 3, 6, seed=4)
    fr = cf.frontier(res)
    choices = res.models[res.p_hat[:, :2].argmax(axis=1)]
    c, q, _, _ = cf.frontier_options(res)
    table = cf.evaluate_router(res, {"r": choices}, n_resamples=30)
    small = dict(n_models=3, draws=(1, 2, 4, 8), n_reps=3, n_prompts=40, n_boot=30)
    topic = dict(n_topics=2, n_models=3, alphas=(0.1, 10.0), n_reps=2)
    out: dict[str, object] = {
        "OracleResult": cf.naive_oracle(res),
        "BootstrapResult": cf.bootstrap(res, "naive_oracle", n_resamples=30),
        "DebiasResult": cf.debiased_oracle(res, "crossfit", ci=0.9),
        "GapDecomposition": cf.gap_decomposition(res),
        "Frontier": fr,
        "HullSegments": cf.hull_segments(c, q),
        "LatencyFrontier": cf.latency_frontier(res),
        "Comparison": cf.compare(res, res.models[0], res.models[1], n_resamples=30),
        "TiedSet": cf.tied_with_best(res, n_resamples=30),
        "Plan": cf.plan(
            res,
            precision=0.05,
            method="bootstrap_bc",
            draws=(2, 4),
            n_world=2000,
            n_check=5,
        ),
        "RouterResult": table.routers["r"],
        "RouterTable": table,
        "BiasDecayResult": studies.bias_decay(correlation=0, seed=1, **small),
        "TopicEntropyResult": studies.topic_entropy(
            **topic, n_prompts=60, n_draws=3, n_boot=30, seed=1
        ),
    }
    return out


def test_every_public_result_class_has_an_example(examples) -> None:
    missing = _public_result_classes() - set(examples)
    assert not missing, f"no protocol example for {sorted(missing)}"
    for name, obj in examples.items():
        assert type(obj).__name__ == name


@pytest.mark.parametrize("name", sorted(_public_result_classes()))
def test_protocol(examples, name: str) -> None:
    if name in COLLECTIONS:
        col = examples[name]
        d = col.to_dict()
        assert json.loads(json.dumps(d, allow_nan=False)) == d
        assert isinstance(col.to_frame(), pd.DataFrame)
        for member in getattr(col, COLLECTIONS[name]).values():
            _check(member)
        return
    _check(examples[name])


def _check(r: object) -> None:
    assert isinstance(r.value, (float, int)) and not isinstance(r.value, bool)
    ci = r.ci
    assert isinstance(ci, tuple) and len(ci) == 2
    low, high = ci
    assert isinstance(low, float) and isinstance(high, float)
    level = r.level
    assert isinstance(level, float)
    if math.isfinite(low) or math.isfinite(high):
        assert low <= high and 0 < level < 1
    else:
        assert math.isnan(low) and math.isnan(high)
    d = r.to_dict()
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    assert {"value", "ci", "level"} <= set(d)
    v = d["value"]
    assert (v is None and not math.isfinite(r.value)) or v == pytest.approx(r.value)
    frame = r.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame.columns) > 0


def test_headlines(examples) -> None:
    """The headline numbers are the documented ones (not just any float)."""
    hs = examples["HullSegments"]
    fr = examples["Frontier"]
    np.testing.assert_allclose(hs.value, hs.vertices()[-1, 1])
    np.testing.assert_allclose(hs.value, fr.max_quality)
    lat = examples["LatencyFrontier"]
    assert lat.value == lat.policies["quality"].max()
    bd = examples["BiasDecayResult"]
    assert bd.value == bd.lambdas["lambda"].iloc[0] and bd.level == 0.95
    te = examples["TopicEntropyResult"]
    assert te.value == te.spearman
    orc = examples["OracleResult"]
    assert "choice" not in orc.to_dict() and orc.to_frame().loc[0, "kind"] == "prehoc"
