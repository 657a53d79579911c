"""The adapters of issue 6 are reachable as ``capfront.io.<name>``."""

from __future__ import annotations

import pytest


def test_adapters_reachable_from_capfront_io():
    import capfront.adapters as adapters
    import capfront.io as io

    assert io.load is adapters.load
    assert io.read_prices is adapters.read_prices
    assert io.load_lm_eval is adapters.load_lm_eval
    assert tuple(io.FORMATS) == tuple(adapters.FORMATS)
    with pytest.raises(AttributeError):
        io.no_such_adapter  # noqa: B018
