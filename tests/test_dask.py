"""capfront.dask and chunked reading give exactly the single-machine statistics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import capfront as cf

dd = pytest.importorskip("dask.dataframe", reason="the dask extra is not installed")
da = pytest.importorskip("dask.array", reason="the dask extra is not installed")
cfd = pytest.importorskip("capfront.dask")


def long_table(res: cf.EvalResults) -> pd.DataFrame:
    N, L, G = res.scores.shape
    n, l, g = np.indices((N, L, G)).reshape(3, -1)
    keep = res.mask.ravel() if res.mask is not None else np.ones(n.size, bool)
    frame = pd.DataFrame(
        {
            "prompt_id": n,
            "model": res.models[l],
            "generation": g,
            "score": res.scores.ravel(),
            "cost": res.mean_cost[n, l],
            "topic": res.topic[n],
        }
    )[keep]
    return frame.sample(frac=1.0, random_state=1)  # prompts spread over partitions


def same_results(a: cf.EvalResults, b: cf.EvalResults) -> None:
    """Equal up to the order of prompts and models."""
    pa = np.argsort(a.prompts.astype(str))
    pb = np.argsort(b.prompts.astype(str))
    ma = np.argsort(a.models.astype(str))
    mb = np.argsort(b.models.astype(str))
    np.testing.assert_array_equal(a.successes[pa][:, ma], b.successes[pb][:, mb])
    np.testing.assert_array_equal(a.n_draws[pa][:, ma], b.n_draws[pb][:, mb])
    np.testing.assert_allclose(
        a.mean_cost[pa][:, ma], b.mean_cost[pb][:, mb], rtol=1e-12, equal_nan=True
    )
    # dask may turn labels into strings
    np.testing.assert_array_equal(a.topic[pa].astype(str), b.topic[pb].astype(str))
    for kind in ("prehoc", "posthoc", "union"):
        oa, ob = cf.naive_oracle(a, kind), cf.naive_oracle(b, kind)
        assert oa.value == pytest.approx(ob.value, abs=1e-13)
        assert oa.cost == pytest.approx(ob.cost, rel=1e-12)


@pytest.fixture(scope="module")
def simulated() -> cf.EvalResults:
    res = cf.simulate(600, 5, 4, n_topics=3, seed=3)
    return res


@pytest.mark.parametrize("npartitions", [1, 3, 8])
def test_from_dask_threads_equals_single_machine(simulated, npartitions):
    frame = long_table(simulated)
    single = cf.from_frame(frame, cost="cost", topic="topic")
    dist = cfd.from_dask(
        dd.from_pandas(frame, npartitions=npartitions),
        cost="cost",
        topic="topic",
        scheduler="threads",
    )
    same_results(dist, single)


def test_from_dask_local_cluster(simulated):
    distributed = pytest.importorskip("distributed")
    frame = long_table(simulated)
    single = cf.from_frame(frame, cost="cost", topic="topic")
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            host="127.0.0.1",
            dashboard_address=None,
            processes=True,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        dist = cfd.from_dask(
            dd.from_pandas(frame, npartitions=4),
            cost="cost",
            topic="topic",
            scheduler=client,
        )
    same_results(dist, single)


def test_from_dask_array(simulated):
    arr = da.from_array(simulated.scores, chunks=(97, 5, 4))
    res = cfd.from_dask(arr, scheduler="threads")
    np.testing.assert_array_equal(res.successes, simulated.successes)
    np.testing.assert_array_equal(res.n_draws, simulated.n_draws)


def test_from_dask_ragged_and_bad_input(simulated):
    frame = long_table(simulated)
    frame = frame[~((frame.model == "sim_1") & (frame.prompt_id < 50))]
    dist = cfd.from_dask(
        dd.from_pandas(frame, npartitions=3),
        cost="cost",
        topic="topic",
        scheduler="threads",
    )
    same_results(dist, cf.from_frame(frame, cost="cost", topic="topic"))
    assert not dist.is_complete
    with pytest.raises(ValueError, match="unknown score column"):
        cfd.from_dask(
            dd.from_pandas(frame, npartitions=2), score="nope", scheduler="threads"
        )
    with pytest.raises(ValueError, match="dask DataFrame or dask Array"):
        cfd.from_dask(frame)


@pytest.mark.parametrize("suffix", ["parquet", "csv", "jsonl"])
def test_read_chunked_equals_whole(simulated, tmp_path, suffix):
    frame = long_table(simulated)
    path = tmp_path / f"data.{suffix}"
    if suffix == "parquet":
        frame.to_parquet(path, row_group_size=500)
    elif suffix == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_json(path, orient="records", lines=True)
    whole = cf.read(path, cost="cost", topic="topic")
    chunked = cf.read(path, cost="cost", topic="topic", chunk_rows=777)
    same_results(chunked, whole)
    assert chunked.scores is None  # streamed: per-draw scores not kept


def test_chunked_read_rejects_bad_values(tmp_path):
    frame = pd.DataFrame(
        {
            "prompt_id": [0, 0, 1, 1],
            "model": ["a", "b", "a", "b"],
            "score": [1, 0, 2, 1],
        }
    )
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"bad.csv.*\[0, 1\]"):
        cf.read(path, chunk_rows=2)


@pytest.mark.parametrize("statistic", ["naive_oracle", "oracle_gain", "best_single"])
def test_dask_bootstrap_independent_of_partitioning(simulated, statistic):
    frame = long_table(simulated).drop(columns=["cost", "topic"])
    runs = [
        cfd.bootstrap(
            dd.from_pandas(frame, npartitions=k),
            statistic,
            n_resamples=300,
            seed=5,
            scheduler="threads",
        )
        for k in (1, 3, 7)
    ]
    for other in runs[1:]:
        np.testing.assert_array_equal(other.replicates, runs[0].replicates)
        assert other.estimate == runs[0].estimate
    single = cf.bootstrap(simulated, statistic, n_resamples=300, seed=5)
    assert runs[0].estimate == pytest.approx(single.estimate, abs=1e-12)
    # different weights (Poisson vs multinomial): agree within Monte Carlo error
    assert runs[0].se == pytest.approx(single.se, rel=0.25)
    assert runs[0].ci[0] == pytest.approx(single.ci[0], abs=2 * single.se)
    assert runs[0].ci[1] == pytest.approx(single.ci[1], abs=2 * single.se)


def test_dask_bootstrap_bad_input(simulated):
    frame = long_table(simulated)
    ddf = dd.from_pandas(frame, npartitions=2)
    with pytest.raises(ValueError, match="unknown statistic"):
        cfd.bootstrap(ddf, "aiq", scheduler="threads")
    with pytest.raises(ValueError, match="dask DataFrame"):
        cfd.bootstrap(frame, scheduler="threads")
    with pytest.raises(ValueError, match="unknown column"):
        cfd.bootstrap(ddf, model="nope", scheduler="threads")
    ragged = dd.from_pandas(
        frame[frame.generation < 3 + (frame.prompt_id % 2)], npartitions=2
    )
    with pytest.raises(ValueError, match="same number of generations"):
        cfd.bootstrap(ragged, scheduler="threads", n_resamples=10)
