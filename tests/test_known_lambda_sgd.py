"""SGD on the exact landscapes (nbs/07c_known_lambda_sgd.ipynb): the per-sample regressions, their minibatch noise,
the capacity solver and the finite-n LLC target, each against a closed form."""
import math

import numpy as np
import pytest

from fracsgd.diffusion.known_lambda import linear_regression, sgd
from fracsgd.diffusion.known_lambda_sgd import (cap_capacity, crossing_regression, dln_regression, escape_zones,
                                                pair_direction_change, pore_volume, scalar_noise_covariance,
                                                scalar_posterior_target, sgd_stationary_variance, valley_regression,
                                                zone_capacity)


@pytest.mark.parametrize('ls', [crossing_regression(1, 1), crossing_regression(1, 2), valley_regression(3, 1),
                                dln_regression([1, 2, 1], 1)], ids=lambda ls: ls.name)
def test_minibatch_gradient_is_unbiased(ls):
    "The mean of many minibatch gradients is the population gradient: the population loss is the landscape."
    rng = np.random.default_rng(0)
    w = ls.w_star + 0.3 * rng.standard_normal((3, ls.dim))
    draws = np.stack([ls.batch_grad(w, rng, 500) for _ in range(400)])          # 200,000 samples per walker
    se = draws.std(0) / math.sqrt(len(draws))
    assert (np.abs(draws.mean(0) - ls.grad(w)) <= 5 * se + 1e-12).all()
    assert np.allclose(ls.loss(ls.w_star[None]), 0) and np.allclose(ls.grad(ls.w_star[None]), 0)


def test_scalar_noise_covariance():
    "The covariance of y = w1 w2 x's minibatch gradient: (σ² + 2r²)/B ∇φ∇φᵀ with r = φ − φ*, ∇φ = (w2, w1)."
    ls, rng, w = crossing_regression(1, 1, noise=0.7), np.random.default_rng(1), np.array([[0.8, -0.5]])
    g = np.stack([ls.batch_grad(w, rng, 4)[0] for _ in range(100_000)])
    exact = scalar_noise_covariance([-0.5, 0.8], 0.8 * -0.5, 0.7, 4)
    assert np.allclose(np.cov(g.T), exact, rtol=0.03, atol=1e-4)


@pytest.mark.parametrize('d,lr,batch', [(2, 0.05, 4), (1, 0.1, 2)])
def test_sgd_stationary_variance(d, lr, batch):
    "Online SGD on linear regression: the exact stationary variance of the discrete step."
    x = sgd(linear_regression(d), 2000, 600, lr=lr, batch=batch, seed=2)
    measured = (x[:, 300:] ** 2).mean()
    assert abs(measured / sgd_stationary_variance(lr, batch, 1.0, d) - 1) < 0.04
    with pytest.raises(ValueError):
        sgd_stationary_variance(2.0, 1, 1.0, d)


def test_valley_regression_freezes_the_flat_directions():
    "On y = w1 x in R³ the stiff coordinate is 1-D linear regression and the two flat ones never move."
    x = sgd(valley_regression(3, 1), 2000, 400, lr=0.1, batch=2, seed=3, start=(0.0, 0.3, -0.2))
    assert (x[..., 1] == 0.3).all() and (x[..., 2] == -0.2).all()
    assert abs((x[:, 200:, 0] ** 2).mean() / sgd_stationary_variance(0.1, 2, 1.0, 1) - 1) < 0.05


def test_sgd_fixed_points_and_invariant_directions():
    "SGD never leaves the crossing's origin (its noise vanishes there); on DLN [1, 2, 1] u ± v keep their directions."
    x = sgd(crossing_regression(1, 1), 20, 500, lr=0.05, batch=8)
    assert (x == 0).all()
    ls = dln_regression([1, 2, 1], 1)
    x = sgd(ls, 20, 2000, lr=0.05, batch=8, seed=4)
    assert np.abs(x[:, -1] - x[:, 0]).max() > 1e-3 and pair_direction_change(x, 2) < 1e-10


def test_zone_capacity_against_closed_forms():
    "A whole sphere: 4πr; a spherical cap: 4r(θ0 + sin θ0); a small cap: a disc's 8a."
    assert abs(zone_capacity([(0, math.pi)], radius=2.0) / (8 * math.pi) - 1) < 1e-4
    for t0 in (0.05, 0.4, 2.0):
        assert abs(zone_capacity([(0, t0)], 1.5, panels=80) / cap_capacity(t0, 1.5) - 1) < 1e-3
    assert abs(cap_capacity(1e-4) / 8e-4 - 1) < 1e-6
    two = zone_capacity(escape_zones(2, 3, 0.01))                        # two caps: less than twice one, more than one
    one = cap_capacity(math.asin(math.sqrt(0.02)))
    assert one < two < 2 * one
    with pytest.raises(ValueError):
        escape_zones(3, 3, 0.01)


def test_pore_volume():
    "The slab and the tube fill the ball when a = r, and match a Monte Carlo volume otherwise."
    assert math.isclose(pore_volume(1, 0.5), 4 * math.pi / 3) and math.isclose(pore_volume(2, 0.5), 4 * math.pi / 3)
    w = np.random.default_rng(5).uniform(-1, 1, (400_000, 3))
    w = w[(w**2).sum(1) < 1]
    for c, e in ((1, 0.02), (2, 0.05)):
        frac = (0.5 * (w[:, :c] ** 2).sum(1) < e).mean()
        assert abs(frac * 4 * math.pi / 3 / pore_volume(c, e) - 1) < 0.02


def test_scalar_posterior_target_gaussian():
    "For y = w1 x the localized tempered posterior is Gaussian: nβ(½Sxx(1/P + μ²) − Sxy μ), P = nβSxx + γ."
    rng = np.random.default_rng(6)
    X, Y = rng.standard_normal(500), rng.standard_normal(500)
    nb, gamma = 80.0, 1.0
    sxx, sxy = (X * X).mean(), (X * Y).mean()
    P = nb * sxx + gamma
    mu = nb * sxy / P
    exact = nb * (sxx * (1 / P + mu**2) / 2 - sxy * mu)
    t, se = scalar_posterior_target(lambda w: w[:, 0], [0.0], X, Y, nb, gamma, n_samples=1_000_000)
    assert abs(t - exact) < 4 * se and se < 0.02 * exact
