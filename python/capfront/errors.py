"""Warning classes of capfront (filter them with ``warnings.simplefilter``)."""

from __future__ import annotations


class CapfrontWarning(UserWarning):
    """Base class of the warnings capfront emits."""


class OutsideFrontierWarning(CapfrontWarning):
    """A frontier lookup outside the frontier's range: the answer is NaN."""


class NotEvalResultsError(TypeError, ValueError):
    """An argument that must be an :class:`~capfront.EvalResults` is not one.

    A ``TypeError``, and also a ``ValueError`` because earlier releases raised
    that (``except ValueError`` keeps working)."""
