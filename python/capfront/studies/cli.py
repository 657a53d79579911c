"""``capfront study bias-decay|topic-entropy [--out DIR]``: run a study, write its
tables (CSV, markdown) and figure (PNG) to ``DIR`` and print the markdown."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

STUDIES = ("bias-decay", "topic-entropy")


def _floats(text: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers: {text!r}"
        ) from None


def _ints(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers: {text!r}"
        ) from None


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``study`` (with ``bias-decay`` and ``topic-entropy``) on the
    ``capfront`` command's subparsers; the handler is stored as ``func``."""
    study = subparsers.add_parser(
        "study",
        help="simulation studies of the paper's claims (bias decay, entropy)",
        description="Simulation studies with known truth (design §8): write tables "
        "(CSV, markdown) and a PNG figure to --out.",
    )
    kinds = study.add_subparsers(dest="study", metavar="{bias-decay,topic-entropy}")
    kinds.required = True
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--out",
        type=Path,
        default=Path("."),
        help="output folder (created if missing; default: .)",
    )
    common.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    common.add_argument(
        "--reps",
        type=int,
        default=None,
        help="simulated workloads per setting (default: the study's)",
    )
    common.add_argument(
        "--models",
        type=int,
        default=None,
        help="number of models L (default: the study's)",
    )
    common.add_argument(
        "--prompts",
        type=int,
        default=None,
        help="prompts N per simulated evaluation (default: the study's)",
    )
    bias = kinds.add_parser(
        "bias-decay",
        parents=[common],
        help="naive-oracle bias against G; fitted lambda",
    )
    bias.add_argument(
        "--draws",
        type=_ints,
        default=None,
        help="comma-separated G grid (default 1,2,3,5,...,200)",
    )
    bias.add_argument(
        "--correlation",
        type=_floats,
        default=None,
        help="comma-separated across-model draw correlations "
        "(default 0.3,0.7; 0 to skip)",
    )
    bias.add_argument(
        "--within-cell",
        type=_floats,
        default=None,
        help="comma-separated within-cell (Beta-Binomial) correlations (default none)",
    )
    topic = kinds.add_parser(
        "topic-entropy",
        parents=[common],
        help="oracle gain against topic-mixture entropy",
    )
    topic.add_argument("--topics", type=int, default=None, help="number of topics K")
    topic.add_argument(
        "--alphas",
        type=_floats,
        default=None,
        help="comma-separated Dirichlet concentrations",
    )
    topic.add_argument("--draws", type=int, default=None, help="draws per cell G")
    topic.add_argument(
        "--cell-sd",
        type=float,
        default=None,
        help="model-by-prompt aptitude sd (default 0)",
    )
    study.set_defaults(func=run)
    return study


def run(args: argparse.Namespace) -> int:
    """Run the study named by ``args.study`` and write its outputs."""
    from matplotlib.figure import Figure

    from . import bias_decay, topic_entropy

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    kwargs = {"seed": args.seed}
    for attr, key in (
        ("reps", "n_reps"),
        ("models", "n_models"),
        ("prompts", "n_prompts"),
    ):
        if getattr(args, attr) is not None:
            kwargs[key] = getattr(args, attr)
    start = time.perf_counter()
    if args.study == "bias-decay":
        if args.draws is not None:
            kwargs["draws"] = args.draws
        if args.correlation is not None:
            kwargs["correlation"] = args.correlation
        if args.within_cell is not None:
            kwargs["within_cell_correlation"] = args.within_cell
        result = bias_decay(**kwargs)
        stem = "study_bias_decay"
        result.table.to_csv(out / f"{stem}.csv", index=False)
        result.fits.to_csv(out / f"{stem}_fits.csv", index=False)
        result.gaussian.to_csv(out / f"{stem}_gaussian.csv", index=False)
        fig = Figure(figsize=(12.5, 4.8), layout="constrained")
        left, right = fig.subplots(1, 2)
        result.plot(ax=left)
        result.plot_slopes(ax=right)
    else:
        for attr, key in (
            ("topics", "n_topics"),
            ("alphas", "alphas"),
            ("draws", "n_draws"),
            ("cell_sd", "cell_sd"),
        ):
            if getattr(args, attr) is not None:
                kwargs[key] = getattr(args, attr)
        result = topic_entropy(**kwargs)
        stem = "study_topic_entropy"
        result.table.to_csv(out / f"{stem}.csv", index=False)
        result.summary.to_csv(out / f"{stem}_summary.csv", index=False)
        result.binned.to_csv(out / f"{stem}_binned.csv", index=False)
        fig = Figure(figsize=(7.5, 5.0), layout="constrained")
        result.plot(ax=fig.subplots())
    seconds = time.perf_counter() - start
    fig.savefig(out / f"{stem}.png", dpi=110)
    text = result.to_markdown()
    (out / f"{stem}.md").write_text(text + "\n")
    print(text)
    print(f"\n{args.study}: {seconds:.1f} s; wrote {stem}.csv/.md/.png to {out}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point: ``main(["study", "bias-decay", "--out", "DIR"])``
    (the leading ``"study"`` may be left out)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] != ["study"]:
        argv = ["study", *argv]
    parser = argparse.ArgumentParser(prog="capfront")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
