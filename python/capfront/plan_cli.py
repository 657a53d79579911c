"""``capfront plan PILOT --precision 0.01``: the evaluation a pilot calls for
(:func:`capfront.plan`), as a table or JSON."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any


def add_parser(sub: Any, format_choices: Sequence[str]) -> None:
    """The ``capfront plan`` subcommand."""
    p = sub.add_parser(
        "plan",
        help="prompts and draws per cell needed for a precision or an effect",
        description="How many prompts N and draws per cell G a full evaluation "
        "needs, from a pilot (capfront.plan): simulated on worlds fitted to it and "
        "checked by simulation.",
    )
    p.add_argument("path", metavar="PILOT", help="the pilot's results file")
    p.add_argument("--format", choices=format_choices, help="input format")
    goal = p.add_mutually_exclusive_group(required=True)
    goal.add_argument("--precision", type=float, help="half-width, e.g. 0.01")
    goal.add_argument("--detect", type=float, help="effect to detect, e.g. 0.02")
    p.add_argument(
        "--target",
        choices=("oracle", "frontier_gain", "router_vs_best"),
        default="oracle",
    )
    p.add_argument("--router", metavar="FILE", help="choices (router_vs_best)")
    p.add_argument("--method", default="pgm", help="debiasing method (oracle)")
    p.add_argument(
        "--draws",
        default="2,3,5,10,20,50",
        metavar="G,G,...",
        help="the grid of draws per cell",
    )
    p.add_argument("--level", type=float, default=0.95)
    p.add_argument("--power", type=float, default=0.8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=cmd_plan)


def cmd_plan(args: argparse.Namespace) -> int:
    import json

    from .adapters import load
    from .plan import plan
    from .report import jsonable

    try:
        draws = tuple(int(g) for g in args.draws.split(","))
    except ValueError:
        raise ValueError(f"--draws {args.draws!r}: use integers like 2,5,10") from None
    loaded = load(args.path, args.format)
    pl = plan(
        loaded.results,
        target=args.target,
        precision=args.precision,
        detect=args.detect,
        level=args.level,
        power=args.power,
        method=args.method,
        draws=draws,
        router=args.router,
        seed=args.seed,
    )
    if args.json:
        sys.stdout.write(json.dumps(jsonable(pl.to_dict()), indent=2) + "\n")
        return 0
    print(pl.summary())
    print(pl.table.to_string(float_format=lambda x: f"{x:.4g}"))
    for note in pl.notes:
        print(f"- {note}")
    return 0
