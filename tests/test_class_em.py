"""The class EM's iterations (:func:`capfront.debias.classes._class_em`): plain
EM steps as before, SQUAREM cycles that reach the fixed point in far fewer
E-steps, and on data a fit at least as far up the likelihood."""

from __future__ import annotations

import numpy as np
import pytest

import capfront as cf
from capfront.debias import classes
from test_latent_classes import _rank2, _topics


def _linear_em(A, b):
    """A toy EM: ``theta' = A theta + b`` (a contraction), log-likelihood
    ``-|theta - theta*|^2`` at the E-step's point; ``x = (theta, scale,
    weights, pi)`` as the class EM's."""
    star = np.linalg.solve(np.eye(len(b)) - A, b)
    calls = []

    def e_step(x, prev_r):
        calls.append(x[0].copy())
        ll = -float(((x[0] - star) ** 2).sum())
        return (lambda: (ll, None, None)), ll, np.ones((1, 1)), None

    def m_step(x, r, stats):
        return A @ x[0] + b, x[1], x[2], x[3]

    return e_step, m_step, star, calls


def _x0(theta):
    return np.asarray(theta, float), 1.0, np.array([1.0]), np.array([[1.0]])


def test_plain_steps_are_the_em_iteration():
    A, b = np.diag([0.9, 0.5]), np.array([0.3, -0.2])
    e_step, m_step, star, calls = _linear_em(A, b)
    x, ll, _, it, conv = classes._class_em(
        e_step, m_step, _x0([2.0, 2.0]), 7, 0.0, False
    )
    theta = np.array([2.0, 2.0])
    for k in range(7):  # the E-steps saw theta_0 .. theta_6, x is theta_7
        np.testing.assert_array_equal(calls[k], theta)
        theta = A @ theta + b
    np.testing.assert_array_equal(x[0], theta)
    assert it == 7 and not conv


def test_squarem_reaches_the_fixed_point_in_fewer_steps():
    A, b = np.diag([0.99, 0.6]), np.array([0.01, 0.2])
    out = {}
    for acc in (False, True):
        e_step, m_step, star, calls = _linear_em(A, b)
        x, ll, _, it, conv = classes._class_em(
            e_step, m_step, _x0([3.0, -3.0]), 5000, 1e-14, acc
        )
        assert conv
        out[acc] = (it, float(np.abs(x[0] - star).max()))
    assert out[True][1] < 1e-5
    assert out[True][1] <= out[False][1]
    # (plain EM: 1,480 E-steps, SQUAREM 340 with its step length at most ALPHA_MAX)
    assert out[True][0] * 3 < out[False][0]


@pytest.mark.parametrize("max_iter", [3, 4, 5, 6, 7, 8])
def test_unconverged_squarem_ends_with_an_em_step(max_iter):
    """Stopped by ``max_iter``, the returned point is one EM step from the
    last E-step's (whose ll and r the fit keeps), as with plain EM."""
    A, b = np.diag([0.99, 0.6]), np.array([0.01, 0.2])
    e_step, m_step, star, calls = _linear_em(A, b)
    x, ll, _, it, conv = classes._class_em(
        e_step, m_step, _x0([3.0, -3.0]), max_iter, 0.0, True
    )
    assert not conv and it == len(calls) <= max_iter
    np.testing.assert_array_equal(x[0], A @ calls[-1] + b)
    assert ll == -float(((calls[-1] - star) ** 2).sum())


def test_extrapolation_keeps_the_parameters_valid():
    th0 = np.zeros((2, 3))
    x0 = (th0, 0.5, np.array([0.5, 0.5, 0.0]), np.array([[0.5, 0.5]]))
    x1 = (th0 + 3.0, 0.6, np.array([0.3, 0.6, 0.1]), np.array([[0.2, 0.8]]))
    x2 = (th0 + 5.0, 0.7, np.array([0.2, 0.6, 0.2]), np.array([[0.1, 0.9]]))
    theta, sc, w, pi = classes._extrapolate(x0, x1, x2)
    assert theta.shape == th0.shape and theta.max() == classes.THETA_GRID[-1]
    assert sc == 0.7  # the scale is x2's
    assert w.min() >= 0 and w.sum() == pytest.approx(1.0)
    assert pi.min() >= 1e-6 / 2 and pi.sum(axis=1) == pytest.approx(1.0)
    # equal steps: step length 1, the point is x2
    x2 = (th0 + 6.0, 0.7, x1[2] * 2 - x0[2], x1[3] * 2 - x0[3])
    assert classes._extrapolate(x0, x1, x2) is None


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_accelerated_fit_climbs_at_least_as_far(seed):
    for S, G, _ in (_topics(1500, 8, 10, seed), _rank2(1500, 8, 10, seed)):
        base = classes.fit_latent(S, G, None)
        plain = classes.fit_classes(
            S, G, None, 4, base=base, max_iter=300, accelerate=False
        )
        fast = classes.fit_classes(S, G, None, 4, base=base, max_iter=300)
        assert fast.converged
        # (different starts of the last steps can end in other local maxima:
        # within a nat; measured +1 to +10 nats on 5 of these 6)
        assert fast.loglik > plain.loglik - 1.0


def test_refits_of_few_steps_are_plain_em():
    S, G, _ = _topics(400, 5, 6, seed=3, K=2)
    f = classes.fit_classes(S, G, None, 2, max_iter=40)
    a = classes.fit_classes(S, G, None, 2, init=f, max_iter=classes.ACCELERATE_ABOVE)
    b = classes.fit_classes(S, G, None, 2, init=f, max_iter=10, accelerate=False)
    np.testing.assert_array_equal(a.theta, b.theta)
    assert a.loglik == b.loglik


def test_backends_agree_on_an_accelerated_fit():
    S, G, _ = _topics(300, 4, 6, seed=5, K=2)
    fits = {
        b: classes.fit_classes(S, G, None, 2, backend=b, max_iter=60, accelerate=True)
        for b in cf.available_backends()
    }
    ref = fits["numpy"]
    for b, f in fits.items():
        assert f.n_iter == ref.n_iter, b
        np.testing.assert_allclose(f.theta, ref.theta, atol=1e-8, err_msg=b)
        assert f.loglik == pytest.approx(ref.loglik, rel=1e-10)
