"""Short display names for long model (or benchmark) names, for tables and figures."""

from __future__ import annotations

import re
from collections.abc import Iterable

_SEP = re.compile(r"[_/:|]")


def short_names(names: Iterable[str], max_len: int = 28) -> dict[str, str]:
    """A unique short name per name, for names longer than ``max_len``.

    Leading components (separated by ``_``, ``/``, ``:`` or ``|``; e.g. the run
    date and harness version of ``20251124_mini-v1.16.0_claude-opus-4-5``) are
    dropped while the name is too long; names with as many components as most
    of the long ones keep only their last, so that ``20250807_mini-v1.7.0_gpt-5``
    becomes ``gpt-5`` alongside the long ones. Every short name stays
    unique (a name whose shortening would collide keeps its full form). Returns
    ``{name: short}`` for every name.
    """
    full = [str(n) for n in dict.fromkeys(str(n) for n in names)]
    drops = {}
    for name in full:
        cut, k = name, 0
        while len(cut) > max_len:
            parts = _SEP.split(cut, maxsplit=1)
            if len(parts) < 2 or not parts[1]:
                break
            cut, k = parts[1], k + 1
        drops[name] = k
    # names of one pattern (e.g. date_harness_model) keep only their last
    # component: the pattern is the most common number of components among the
    # names that had to be shortened
    n_parts = {name: len(_SEP.split(name)) for name in full}
    long = [n_parts[name] for name in full if drops[name] > 0]
    common = max(set(long), key=long.count) if long else 0
    short = {}
    for name in full:
        k = n_parts[name] - 1 if common > 1 and n_parts[name] == common else drops[name]
        short[name] = _SEP.split(name, maxsplit=k)[-1] if k else name
    counts: dict[str, int] = {}
    for s in short.values():
        counts[s] = counts.get(s, 0) + 1
    clash = {s for s, c in counts.items() if c > 1} | (set(full) & set(short.values()))
    return {
        n: n if (s != n and (s in clash or counts[s] > 1)) else s
        for n, s in short.items()
    }


def shortened(mapping: dict[str, str]) -> dict[str, str]:
    """The entries of a :func:`short_names` mapping that differ from the name."""
    return {k: v for k, v in mapping.items() if k != v}
