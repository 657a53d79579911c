"""The ``capfront`` command line.

- ``capfront report PATH``: the full capability-frontier report of an evaluation
  (any format of :mod:`capfront.adapters`); ``--out DIR`` writes ``report.json``,
  ``report.md``, ``report.html`` and the figures, ``--json`` prints the JSON.
- ``capfront demo [evalperf|mmlu-pro]``: the same report on the bundled example.
- ``capfront simulate ... --out FILE``: a synthetic data set with its truth.
- ``capfront plan PILOT --precision 0.01``: prompts and draws an evaluation needs.
- ``capfront study ...``: the simulation studies (when :mod:`capfront.studies`
  provides a command line).

Bad input ends with one line on stderr (``capfront: error: <file>: <what>``) and
exit status 1, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from importlib import resources
from pathlib import Path
from typing import Any

DEMOS = {
    "evalperf": ("evalperf_example.csv.gz", "counts"),
    "mmlu-pro": ("mmlu_pro_example.csv.gz", "csv"),
}
DEMO_COST = (
    "stand-in: active parameters (billions) of the model per generation, a "
    "compute proxy from the model cards, not dollars (see "
    "capfront/data/README.md)"
)


def _names_list(text: str | None) -> list[str] | None:
    """``"a, b"`` -> ``["a", "b"]`` (``None`` when not given)."""
    if text is None:
        return None
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise SystemExit(
            "--known-models: give one or more model names, comma-separated"
        )
    return names


def _common_report_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out",
        metavar="DIR",
        help="write report.json, report.md, report.html (one self-contained "
        "page), frontier.png (and frontier_by_benchmark.png, "
        "latency_frontier.png) into DIR",
    )
    p.add_argument(
        "--json", action="store_true", help="print the report as JSON instead of tables"
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="N",
        help="seed of every random step (default 0)",
    )
    p.add_argument(
        "--resamples",
        type=int,
        default=1000,
        metavar="B",
        help="bootstrap resamples for the intervals (default 1000, demo 500)",
    )
    p.add_argument(
        "--level",
        type=float,
        default=0.95,
        help="confidence level of the intervals (default 0.95)",
    )
    p.add_argument(
        "--audit-sims",
        type=int,
        default=20,
        metavar="S",
        help="simulated data sets for the audit that picks the debiasing "
        "method (default 20, demo 10; 0 skips the audit)",
    )
    p.add_argument(
        "--known-models",
        metavar="NAMES",
        help="comma-separated models run greedily (every draw the same answer, "
        "one draw is enough): their rates are their counts (docs/debiasing.md)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="capfront",
        description="Capability-frontier statistics for pools of LLMs: oracle "
        "routing, debiased oracles, cost-quality frontiers.",
    )
    from . import __version__
    from .adapters import FORMATS

    parser.add_argument(
        "--version", action="version", version=f"capfront {__version__}"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    rep = sub.add_parser(
        "report",
        help="full report of an evaluation",
        description="The full capability-frontier report of an evaluation.",
    )
    rep.add_argument(
        "path",
        metavar="PATH",
        nargs="+",
        help="file or folder of results; several paths or a quoted glob "
        "('logs/*.eval') are read as one data set",
    )
    rep.add_argument(
        "--format",
        choices=FORMATS,
        help="input format (default: detected from the path)",
    )
    for role in (
        "prompt",
        "model",
        "score",
        "generation",
        "cost",
        "latency",
        "benchmark",
    ):
        rep.add_argument(
            f"--{role}",
            metavar="COL",
            help=f"column holding the {role} (default: detected)",
        )
    rep.add_argument(
        "--prices",
        metavar="FILE",
        help="price table (model, $ per million input/output tokens) "
        "turning token counts into cost",
    )
    _common_report_args(rep)
    rep.add_argument(
        "--router",
        action="append",
        metavar="NAME=FILE",
        help="a router's choices (CSV/JSON/JSONL/Parquet with columns prompt_id, "
        "model[, k]); repeat for several routers",
    )
    rep.set_defaults(func=cmd_report)
    _add_plan(sub)

    demo = sub.add_parser(
        "demo",
        help="the report on the bundled example data",
        description="The report on the bundled example data "
        "(real EvalPerf / MMLU-Pro results).",
    )
    demo.add_argument(
        "name",
        nargs="?",
        default="evalperf",
        choices=sorted(DEMOS),
        help="which bundled example (default evalperf)",
    )
    _common_report_args(demo)
    demo.set_defaults(func=cmd_demo, resamples=500, audit_sims=10)

    sim = sub.add_parser(
        "simulate",
        help="write a synthetic data set with its truth",
        description="Write a synthetic evaluation (design §8) with each "
        "cell's true success probability (truth_p).",
    )
    sim.add_argument("--prompts", type=int, default=1000, metavar="N")
    sim.add_argument("--models", type=int, default=8, metavar="L")
    sim.add_argument("--draws", type=int, default=10, metavar="G")
    sim.add_argument("--topics", type=int, default=4, metavar="K")
    sim.add_argument("--specialisation", type=float, default=1.0)
    sim.add_argument(
        "--correlation",
        type=float,
        default=0.0,
        help="within-cell correlation of the draws, in [0, 1)",
    )
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument(
        "--counts",
        action="store_true",
        help="write a count table (n_correct, n_samples) instead of one row per draw",
    )
    sim.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        help="output file: .csv, .csv.gz, .parquet or .jsonl",
    )
    sim.set_defaults(func=cmd_simulate)

    _add_study(sub)
    return parser


def _add_study(sub: Any) -> None:
    """``capfront study``: the subcommands of :mod:`capfront.studies.cli`."""
    from .studies import cli as studies_cli

    studies_cli.add_parser(sub)


# ---------------------------------------------------------------------- commands
def _progress(args: argparse.Namespace, total: int) -> Any:
    """A rich progress bar on a terminal (stderr); ``None`` otherwise."""
    if args.quiet or args.json:
        return None
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    if not console.is_terminal:
        return None
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


def _run_report(args: argparse.Namespace, loaded: Any, cost_label: str | None) -> int:
    from .report import SECTIONS, build_report

    source = {
        "path": loaded.source,
        "format": loaded.format,
        "columns": loaded.columns,
        "notes": loaded.notes,
        "cost": cost_label or loaded.cost_source,
    }
    with ExitStack() as stack:
        bar = _progress(args, len(SECTIONS))
        on_step = None
        if bar is not None:
            stack.enter_context(bar)
            task = bar.add_task("report", total=len(SECTIONS))

            def on_step(name: str) -> None:
                bar.update(task, description=name.replace("_", " "), advance=1)

        rep = build_report(
            loaded.results,
            source=source,
            seed=args.seed,
            n_resamples=args.resamples,
            level=args.level,
            audit_sims=args.audit_sims,
            on_step=on_step,
            routers=_routers(getattr(args, "router", None)),
            known_models=_names_list(getattr(args, "known_models", None)),
        )
    written = rep.save(args.out) if args.out else []
    if args.json:
        sys.stdout.write(rep.to_json() + "\n")
    else:
        from rich.console import Console

        console = Console()
        if not console.is_terminal:
            console = Console(width=100)  # files and pipes: the tables fit 100
        rep.print(console)
        for path in written:
            console.print(f"wrote {path}", highlight=False)
    return 0


def _routers(specs: Sequence[str] | None) -> dict[str, str] | None:
    """``NAME=FILE`` options as ``{name: file}``."""
    if not specs:
        return None
    out: dict[str, str] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--router {spec!r}: use NAME=FILE")
        if name in out:
            raise ValueError(f"--router: the name {name!r} is given twice")
        out[name] = path
    return out


def _add_plan(sub: Any) -> None:
    from .adapters import FORMATS
    from .plan_cli import add_parser

    add_parser(sub, FORMATS)


def cmd_report(args: argparse.Namespace) -> int:
    from .adapters import load

    loaded = load(
        args.path[0] if len(args.path) == 1 else args.path,
        args.format,
        prompt=args.prompt,
        model=args.model,
        score=args.score,
        generation=args.generation,
        cost=args.cost,
        latency=args.latency,
        benchmark=args.benchmark,
        prices=args.prices,
    )
    return _run_report(args, loaded, None)


def demo_path(name: str = "evalperf") -> Any:
    """The bundled example file (a Traversable inside the package)."""
    if name not in DEMOS:
        raise ValueError(f"unknown demo {name!r}; use one of {sorted(DEMOS)}")
    return resources.files("capfront") / "data" / DEMOS[name][0]


def cmd_demo(args: argparse.Namespace) -> int:
    from .adapters import load

    fmt = DEMOS[args.name][1]
    with resources.as_file(demo_path(args.name)) as path:
        loaded = load(path, fmt)
    loaded.source = f"bundled example {args.name!r} ({DEMOS[args.name][0]})"
    return _run_report(args, loaded, DEMO_COST)


def simulated_frame(results: Any, counts: bool = False) -> Any:
    """Long (or count) table of a simulated :class:`EvalResults`, with ``truth_p``."""
    import numpy as np
    import pandas as pd

    N, L = results.n_prompts, results.n_models
    ii, jj = np.meshgrid(np.arange(N), np.arange(L), indexing="ij")
    cell = {"prompt_id": results.prompts[ii.ravel()].astype(str)}
    if results.topic is not None:
        cell["topic"] = results.topic[ii.ravel()]
    cell["model"] = results.models[jj.ravel()]
    extra = {
        "cost": results.mean_cost,
        "latency": results.mean_latency,
        "truth_p": results.truth_p,
    }
    if counts or results.scores is None:
        frame = pd.DataFrame(cell)
        frame["n_correct"] = results.successes.ravel().astype(np.int64)
        frame["n_samples"] = results.n_draws.ravel()
        for k, v in extra.items():
            if v is not None:
                frame[k] = v.ravel()
        return frame
    G = results.scores.shape[2]
    frame = pd.DataFrame({k: np.repeat(np.asarray(v), G) for k, v in cell.items()})
    frame["generation"] = np.tile(np.arange(G), N * L)
    frame["score"] = results.scores.reshape(-1)
    for k, v in extra.items():
        if v is not None:
            frame[k] = np.repeat(v.ravel(), G)
    return frame


def cmd_simulate(args: argparse.Namespace) -> int:
    from .simulate import simulate

    out = Path(args.out)
    name = out.name.lower()
    if not name.endswith((".csv", ".csv.gz", ".parquet", ".jsonl")):
        raise ValueError(
            f"{out}: the output must end in .csv, .csv.gz, .parquet or .jsonl"
        )
    results = simulate(
        args.prompts,
        args.models,
        args.draws,
        n_topics=args.topics,
        specialisation=args.specialisation,
        within_cell_correlation=args.correlation,
        seed=args.seed,
    )
    frame = simulated_frame(results, counts=args.counts)
    if out.parent and not out.parent.exists():
        raise FileNotFoundError(f"{out.parent}: no such folder")
    if name.endswith(".parquet"):
        frame.to_parquet(out, index=False)
    elif name.endswith(".jsonl"):
        frame.to_json(out, orient="records", lines=True)
    else:
        frame.to_csv(out, index=False)
    print(
        f"wrote {out}: {results.n_prompts} prompts x {results.n_models} models x "
        f"{args.draws} draws ({len(frame):,} rows; true oracle "
        f"{results.true_oracle:.4f})"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # e.g. `capfront demo | head`: stop quietly
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except (ValueError, FileNotFoundError, KeyError, OSError) as err:
        msg = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
        if (
            isinstance(err, FileNotFoundError)
            and err.filename
            and (str(err.filename) not in msg)
        ):
            msg = f"{err.filename}: {msg}"
        print(f"capfront: error: {' '.join(msg.split())}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("capfront: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
