"""Simulation studies that check the seed paper's claims (design §8).

- :func:`bias_decay`: the naive oracle's bias against the number of draws ``G``, the
  fitted decay exponent ``lambda`` and the Gaussian approximation beside it.
- :func:`topic_entropy`: the oracle's gain over the best single model against the
  entropy of the workload's topic mixture.

Both return results with ``.table``, ``.plot(ax=None)`` and ``.to_markdown()``; the
CLI is ``capfront study bias-decay|topic-entropy [--out DIR]``.
"""

from __future__ import annotations

from .bias_decay import BiasDecayResult, bias_decay
from .topic_entropy import TopicEntropyResult, topic_entropy

__all__ = ["BiasDecayResult", "TopicEntropyResult", "bias_decay", "topic_entropy"]
