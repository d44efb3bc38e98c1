"""Tests of the exact-posterior chapter against closed forms: a quadratic loss's grid posterior is its Gaussian, two
well-separated Gaussian wells split the mass by their weights, SGD on a quadratic reaches the stationary covariance of
its linear recursion (and, at a small step, of the Ornstein–Uhlenbeck limit), and the fitting and mixing tools recover
what they were built from."""
import math

import numpy as np
import pytest
from scipy.integrate import dblquad
from scipy.linalg import solve_discrete_lyapunov
from scipy.stats import multivariate_normal, norm

from fracsgd.posterior.exact import (StudentLocation, basin_masses, basin_moments, basin_of, bootstrap_walkers,
                                     cluster_data, fit_beta, grid_posterior, saddle_heights, sgd_covariance,
                                     sgd_walkers, split_rhat, steepest_basins)


def grid(lo, hi, step):
    a = np.arange(lo, hi + step / 2, step)
    return a, np.stack(np.meshgrid(a, a, indexing='ij'), -1)


# ---------------------------------------------------------------- the grid posterior against Gaussians

def test_quadratic_loss_gives_its_gaussian():
    "L = ½(w−μ)ᵀP(w−μ): the posterior tempered to β is N(μ, (βmP)⁻¹); its moments and a half-plane's mass."
    mu, P, m, beta = np.array([0.3, -0.2]), np.array([[2.0, 0.6], [0.6, 1.0]]), 50, 0.5
    a, W = grid(-2.005, 2.005, 0.01)                   # nodes at ±0.005, ±0.015, …: cell edges on multiples of 0.01
    d = W - mu
    p = grid_posterior(0.5 * np.einsum('...i,ij,...j->...', d, P, d), m, beta)
    (mean, cov), = basin_moments(p, np.zeros(p.shape, int), (a, a))
    S = np.linalg.inv(beta * m * P)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(mean, mu, atol=1e-9)
    np.testing.assert_allclose(cov, S, rtol=1e-6, atol=1e-9)
    for cut in (0.2, 0.4, 0.5):                        # cell edges: the midpoint rule's error is O(h²)
        assert p[a < cut].sum() == pytest.approx(norm.cdf(cut, mu[0], math.sqrt(S[0, 0])), abs=2e-4)


def test_two_gaussian_wells_split_by_their_weights():
    "exp(−m L) a two-component Gaussian mixture 10 sd apart: two basins whose masses are the weights (1e-4)."
    w1, mu1, mu2 = 0.3, np.array([-1.5, 0.0]), np.array([1.5, 0.5])
    S1, S2 = 0.01 * np.eye(2), np.diag([0.005, 0.02])
    a, W = grid(-3, 3, 0.02)
    dens = w1 * multivariate_normal(mu1, S1).pdf(W) + (1 - w1) * multivariate_normal(mu2, S2).pdf(W)
    m = 7
    L = -np.log(dens + 1e-300) / m
    labels, roots = steepest_basins(L)
    assert labels.max() == 1
    # the deeper mode (higher peak density) is basin 0: peak ∝ weight/√det Σ, 0.7/0.01 against 0.3/0.01
    np.testing.assert_allclose(W.reshape(-1, 2)[roots], [mu2, mu1], atol=0.011)
    masses = basin_masses(grid_posterior(L, m), labels)
    np.testing.assert_allclose(masses, [1 - w1, w1], atol=1e-4)
    # the cell masses of one basin integrate to the component's Gaussian
    assert basin_masses(grid_posterior(L, m, beta=1.0), labels)[1] == pytest.approx(w1, abs=1e-4)


def test_steepest_basins_and_the_saddle_of_a_double_well():
    "U = (w1² − 1)² + w2²: minima at (±1, 0) of equal depth, saddle at the origin with U = 1."
    a, W = grid(-2, 2, 0.05)
    U = (W[..., 0] ** 2 - 1) ** 2 + W[..., 1] ** 2
    labels, roots = steepest_basins(U)
    assert labels.max() == 1
    np.testing.assert_allclose(np.sort(W.reshape(-1, 2)[roots][:, 0]), [-1, 1], atol=1e-12)
    H = saddle_heights(U, labels)
    assert H[0, 1] == pytest.approx(1.0, abs=1e-12) and H[0, 1] == H[1, 0]
    left = labels[np.argmin(np.abs(a + 1)), np.argmin(np.abs(a))]
    assert (labels[a < -0.01, :] == left).all() and (labels[a > 0.01, :] != left).all()


def test_basin_of_outside_is_minus_one():
    a = np.linspace(0, 1, 11)
    labels = np.arange(121).reshape(11, 11)
    pts = np.array([[0.0, 0.0], [0.52, 0.31], [1.04, 0.5], [-0.06, 0.5], [0.5, 1.2]])
    np.testing.assert_array_equal(basin_of(pts, (a, a), labels), [0, 5 * 11 + 3, 10 * 11 + 5, -1, -1])


# ---------------------------------------------------------------- the model's log-loss

def test_student_location_is_a_normalized_density_with_exact_derivatives():
    X = cluster_data(30, [[-1, 0], [1, 0.5]], [0.6, 0.4], [0.2, 0.3], seed=3)
    model = StudentLocation(X, s=0.5, nu=1.0)
    w = np.array([0.2, -0.1])
    # exp(−per-sample loss) integrates to 1 over x: the loss is a log-loss, constant included
    f = lambda y, x: math.exp(-model.per_sample_loss(w, np.array([[x, y]]))[0])
    # heavy tails: integrate the radial part in closed form beyond radius 40 (density ~ r^(−3) for ν = 1)
    inner = dblquad(lambda r, t: r * f(w[1] + r * math.sin(t), w[0] + r * math.cos(t)), 0, 2 * math.pi, 0, 40,
                    epsabs=1e-10)[0]
    c = model.nu * model.s ** 2
    tail = (c / (c + 40 ** 2)) ** (model.nu / 2)       # 1 − CDF of the radius of a 2-D t
    assert inner + tail == pytest.approx(1.0, abs=1e-6)
    # the mean batch gradient with the whole data set as the batch is the gradient of L_m
    h = 1e-6
    g = model.batch_grad(w[None], X[None])[0]
    fd = [(model.loss(w + h * e) - model.loss(w - h * e)) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    H, C = model.local_noise(w)
    fdH = np.stack([(model.batch_grad((w + h * e)[None], X[None])[0] - model.batch_grad((w - h * e)[None], X[None])[0])
                    / (2 * h) for e in np.eye(2)])
    np.testing.assert_allclose(H, fdH, rtol=1e-5, atol=1e-7)
    per = np.stack([model.batch_grad(w[None], X[i][None, None])[0] for i in range(len(X))])
    np.testing.assert_allclose(C, np.cov(per.T, bias=True), rtol=1e-10)


# ---------------------------------------------------------------- SGD on a quadratic: the linear closed forms

def quadratic_problem(seed=0, m=40):
    "Per-sample loss ½(w − y_i)ᵀP(w − y_i): batch gradient P(w − mean of the batch), noise independent of w."
    rng = np.random.default_rng(seed)
    Y = rng.standard_normal((m, 2)) @ np.array([[1.0, 0.0], [0.5, 0.7]])
    P = np.array([[2.0, 0.4], [0.4, 0.6]])
    grad = lambda w, yb: (w - yb.mean(1)) @ P
    S = np.cov(Y.T, bias=True)                          # one index drawn with replacement: covariance of y_i
    return Y, P, grad, P @ S @ P                        # C, the per-sample gradient covariance


def stationary_sample(lr, B, steps, N=4000, seed=1):
    Y, P, grad, C = quadratic_problem()
    w0 = np.tile(Y.mean(0), (N, 1))
    final = sgd_walkers(grad, Y, w0, lr, B, steps, every=steps, seed=seed)[-1] - Y.mean(0)
    return final, P, C


def z_scores(x, Sigma):
    "(entry estimate − Σ) / Monte Carlo error for the 3 distinct entries of the covariance of i.i.d. rows x."
    out = []
    for i, j in ((0, 0), (0, 1), (1, 1)):
        prod = x[:, i] * x[:, j]                        # the mean is known (ȳ, the minimum): E[x_i x_j] = Σ_ij
        out.append((prod.mean() - Sigma[i, j]) / (prod.std(ddof=1) / math.sqrt(len(x))))
    return np.array(out)


def test_sgd_reaches_the_discrete_lyapunov_covariance():
    "At lr = 0.1 the walkers' covariance is the exact stationary one of w ← (I − lrP)w + lr·noise, within 4 MC errors."
    lr, B = 0.1, 4
    x, P, C = stationary_sample(lr, B, 600)
    exact = solve_discrete_lyapunov(np.eye(2) - lr * P, lr ** 2 * C / B)
    np.testing.assert_allclose(sgd_covariance(P, C, lr, B), exact)
    assert np.abs(z_scores(x, exact)).max() < 4
    # the test can fail: the same walkers reject the covariance of another batch size
    assert np.abs(z_scores(x, sgd_covariance(P, C, lr, B // 2))).max() > 10


def test_sgd_at_a_small_step_reaches_the_ornstein_uhlenbeck_covariance():
    "At lr = 0.01 (lr·λ_max(P) ≈ 0.02) the continuous limit HΣ + ΣH = lr·C/B holds within 4 MC errors."
    lr, B = 0.01, 4
    x, P, C = stationary_sample(lr, B, 4000)
    ou = sgd_covariance(P, C, lr, B, discrete=False)
    np.testing.assert_allclose(P @ ou + ou @ P, lr * C / B, atol=1e-12)
    assert np.abs(z_scores(x, ou)).max() < 4


# ---------------------------------------------------------------- the fit, the bootstrap, the mixing check

def test_fit_beta_recovers_the_temperature_it_was_built_from():
    X = cluster_data(60, 1.75 * np.array([[-1, -0.6], [1, -0.6], [0, 1.1]]), [0.4, 0.33, 0.27], [0.2, 0.3, 0.12])
    model = StudentLocation(X)
    a, W = grid(-4, 4, 0.1)
    L = model.loss(W)
    labels, _ = steepest_basins(L)
    assert labels.max() >= 1
    for beta in (0.03, 0.06, 0.1):                    # masses that still tell temperatures apart
        target = basin_masses(grid_posterior(L, model.m, beta), labels)
        assert target.min() > 1e-3, target
        assert fit_beta(target, L, labels, model.m) == pytest.approx(beta, rel=1e-4)


def test_bootstrap_over_walkers_has_the_binomial_error():
    rng = np.random.default_rng(0)
    p, N = 0.3, 2000
    occ = np.zeros((N, 2)); k = rng.random(N) < p
    occ[k, 0] = 1; occ[~k, 1] = 1
    boot = bootstrap_walkers(occ, lambda q: q[0], 2000, seed=1)
    assert boot.std() == pytest.approx(math.sqrt(p * (1 - p) / N), rel=0.1)


def test_split_rhat_is_one_for_mixed_chains_and_large_for_stuck_ones():
    rng = np.random.default_rng(0)
    mixed = rng.standard_normal((500, 200))
    assert abs(split_rhat(mixed) - 1) < 0.01
    stuck = mixed + rng.standard_normal(200) * 3          # each chain around its own level
    assert split_rhat(stuck) > 2
    drifting = mixed + np.linspace(0, 3, 500)[:, None]    # every chain still moving: the halves differ
    assert split_rhat(drifting) > 1.2
