"""Input adapters: evaluation logs in the formats people already have ->
:class:`~capfront.EvalResults`.

``load(path, format=None, ...)`` picks the adapter from ``format`` or from the path:

============== ==========================================================
format          input
============== ==========================================================
csv, tsv,       long table, one row per (prompt, model, generation)
parquet, jsonl
counts          count table, one row per (prompt, model): ``n_correct`` of
                ``n_samples``
lm-eval         lm-evaluation-harness ``--log_samples`` ``samples_*.jsonl``
inspect         inspect-ai ``.eval`` / ``.json`` logs (needs ``inspect_ai``)
routerbench     RouterBench wide pandas pickle
llmrouterbench  LLMRouterBench per-(dataset, model) JSON ``records``
============== ==========================================================

``prices`` (a price table, see :mod:`capfront.adapters.prices`) turns token counts
into cost wherever the format records tokens.
"""

from __future__ import annotations

import json
from pathlib import Path

from ._common import LoadedData
from .inspect_logs import load_inspect
from .llmrouterbench import load_llmrouterbench
from .lm_eval import load_lm_eval
from .prices import PriceTable, read_prices, token_cost
from .routerbench import load_routerbench
from .tables import TABLE_FORMATS, load_table, table_format

FORMATS = (
    "csv",
    "parquet",
    "jsonl",
    "lm-eval",
    "inspect",
    "routerbench",
    "llmrouterbench",
    "counts",
)

__all__ = [
    "FORMATS",
    "LoadedData",
    "PriceTable",
    "detect_format",
    "load",
    "read_prices",
    "token_cost",
]


def _peek_json(path: Path) -> object:
    try:
        with open(path, encoding="utf-8") as fh:
            head = fh.read(2_000_000)
        return json.loads(head)
    except (OSError, ValueError):
        return None


def _first_jsonl(path: Path) -> object:
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    return json.loads(line)
    except (OSError, ValueError):
        return None
    return None


def detect_format(path: str | Path) -> str:
    """The adapter for ``path``, from its suffix, name and first record."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    if path.is_dir():
        if next(path.rglob("samples_*.jsonl"), None) is not None:
            return "lm-eval"
        if next(path.rglob("*.eval"), None) is not None:
            return "inspect"
        for f in sorted(path.rglob("*.json"))[:20]:
            head = _peek_json(f)
            if isinstance(head, dict) and isinstance(head.get("records"), list):
                return "llmrouterbench"
            if isinstance(head, dict) and "eval" in head and "samples" in head:
                return "inspect"
        raise ValueError(
            f"{path}: cannot tell the format of this folder; give --format"
        )
    suffix = table_format(path)
    if suffix in ("pkl", "pickle"):
        return "routerbench"
    if suffix == "eval":
        return "inspect"
    if suffix == "json":
        head = _peek_json(path)
        if isinstance(head, dict) and isinstance(head.get("records"), list):
            return "llmrouterbench"
        if isinstance(head, dict) and "eval" in head and "version" in head:
            return "inspect"
        return "jsonl" if head is None else "json"
    if suffix == "jsonl":
        first = _first_jsonl(path)
        if path.name.startswith("samples_") or (
            isinstance(first, dict)
            and "doc_id" in first
            and ("filtered_resps" in first or "resps" in first)
        ):
            return "lm-eval"
        return "jsonl"
    if suffix in TABLE_FORMATS:
        return suffix
    raise ValueError(
        f"{path}: cannot tell the format from the suffix "
        f"{path.suffix!r}; give --format ({', '.join(FORMATS)})"
    )


def load(
    path: str | Path,
    format: str | None = None,
    *,
    prompt: str | None = None,
    model: str | None = None,
    score: str | None = None,
    generation: str | None = None,
    cost: str | None = None,
    latency: str | None = None,
    benchmark: str | None = None,
    prices: PriceTable | str | Path | None = None,
) -> LoadedData:
    """Read evaluation results in any supported format.

    Parameters
    ----------
    path : file or folder
    format : one of :data:`FORMATS` (``None``: detected)
    prompt, model, score, generation, cost, latency, benchmark : column names for
        tables (``None``: found by common aliases). For ``lm-eval``, ``score``
        names the metric and ``model`` overrides the model name; for ``inspect``,
        ``score`` names the scorer (``scorer.key`` for dict values); for
        ``counts``, ``score`` names the successes column.
    prices : price table or its path; turns token counts into cost.

    Returns
    -------
    LoadedData
        ``.results`` plus what was detected (``.format``, ``.columns``,
        ``.notes``, ``.cost_source``).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    if format is not None and format not in FORMATS + ("tsv", "json"):
        raise ValueError(f"unknown format {format!r}; use one of {', '.join(FORMATS)}")
    fmt = format or detect_format(path)
    if isinstance(prices, (str, Path)):
        prices = read_prices(prices)
    if (
        fmt != "lm-eval"
        and fmt not in TABLE_FORMATS + ("counts",)
        and (generation is not None)
    ):
        raise ValueError(
            f"--generation is for tables; the {fmt} format defines its own generations"
        )
    if fmt == "lm-eval":
        if prices is not None:
            raise ValueError(
                f"{path}: lm-eval samples record no token counts; --prices cannot apply"
            )
        return load_lm_eval(path, score=score, model=model)
    if fmt == "inspect":
        return load_inspect(path, score=score, prices=prices)
    if fmt == "routerbench":
        if prices is not None:
            raise ValueError(
                f"{path}: RouterBench already has per-prompt cost "
                "(<model>|total_cost); --prices cannot apply"
            )
        return load_routerbench(path, prompt=prompt, benchmark=benchmark)
    if fmt == "llmrouterbench":
        return load_llmrouterbench(path, prices=prices)
    if path.is_dir():
        raise ValueError(f"{path}: is a folder; the {fmt} format reads one file")
    return load_table(
        path,
        None if fmt == "counts" else fmt,
        prompt=prompt,
        model=model,
        score=score,
        generation=generation,
        cost=cost,
        latency=latency,
        benchmark=benchmark,
        prices=prices,
        counts=True if fmt == "counts" else None,
    )
