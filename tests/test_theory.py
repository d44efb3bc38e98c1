"""Ground-truth tests for fracsgd.diffusion.theory: closed forms nobody here chose.

Deterministic (no random numbers except a seeded, irregular time grid). Every tolerance is stated with the reason.
"""
import numpy as np
import pytest
from scipy.special import erfcx, gamma as G

from fracsgd.diffusion.theory import (caputo_l1, effective_diffusion, fractional_relaxation, graded_mesh, l1_weights,
                            mittag_leffler, msd_exponent, solve_ffpe, spectral_dimension_from_slope, steady_state,
                            tempering_exponent, walk_dimension)


# ---------------------------------------------------------------- relations (paper eq. 12, 13, 14, 17)
def test_relations_closed_forms():
    assert walk_dimension(3.0, 2.0) == pytest.approx(3.0)                   # 2λ/d_s
    assert spectral_dimension_from_slope(0.25, 6.0) == pytest.approx(3.0)   # 2λ·slope
    assert msd_exponent(0.25) == pytest.approx(0.5)                         # α = 2·slope
    assert effective_diffusion(2.0, 3.0, 2.0) == pytest.approx(2.0 ** -1)   # ξ^{2-2λ/d_s}
    assert tempering_exponent(100, 0.25) == pytest.approx(25.0)             # m·D_ξ
    # Brownian motion: d_walk = 2 and D_ξ = 1 at every scale
    assert walk_dimension(4.0, 4.0) == 2.0 and effective_diffusion(0.1, 4.0, 4.0) == 1.0


def test_lambda_cancels_when_ds_comes_from_the_slope():
    for slope in (0.1, 0.33, 0.5):
        for llc in (0.5, 32.0, 160.0):
            d_s = spectral_dimension_from_slope(slope, llc)
            assert walk_dimension(llc, d_s) == pytest.approx(1 / slope, rel=1e-14)
            assert effective_diffusion(0.5, llc, d_s) == pytest.approx(0.5 ** (2 - 1 / slope), rel=1e-13)


def test_paper_table1_slope_column_is_ds_over_2lambda():
    # Table 1 (λ, d_s, printed "α"); the printed column is d_s/(2λ) to its 2-3 printed digits. VGG16 prints 0.001
    # where 0.14/(2·159.7) = 0.00044, hence the 0.006 tolerance (printing precision, not our arithmetic).
    rows = [(32, 21.422, 0.33), (76.1, 48.3, 0.32), (39.3, 38.7, 0.49), (72.05, 0.57, 0.004), (73.5, 0.62, 0.004),
            (159.7, 0.14, 0.001)]
    for llc, d_s, printed in rows:
        assert abs(1 / walk_dimension(llc, d_s) - printed) < 0.006


def test_steady_state_is_boltzmann_and_tempering_gives_likelihood():
    L = np.array([0.2, 0.5, 0.9, 1.4])
    D, m = 0.3, 50
    p = steady_state(L, D, gamma=2.0)
    assert p.sum() == pytest.approx(1, abs=1e-15)
    assert np.allclose(np.log(p[1:] / p[0]), -2.0 * (L[1:] - L[0]) / D, rtol=1e-13)
    tempered = steady_state(L, D) ** tempering_exponent(m, D)        # Corollary 3.2, γ = 1, flat prior
    lik = np.exp(-m * L)
    assert np.allclose(tempered / tempered.sum(), lik / lik.sum(), rtol=1e-12)
    x = np.linspace(-4, 4, 801)
    dens = steady_state(x**2 / 2, 1.0, dx=x[1] - x[0])                  # standard normal
    assert np.allclose(dens, np.exp(-x**2 / 2) / np.sqrt(2 * np.pi), atol=1e-4)  # trapezoid vs erf tails ~1e-4


@pytest.mark.parametrize('call', [lambda: walk_dimension(0.0, 1.0), lambda: walk_dimension(1.0, np.nan),
                                  lambda: spectral_dimension_from_slope(np.inf, 1.0),
                                  lambda: effective_diffusion(-1.0, 1.0, 1.0), lambda: steady_state([], 1.0),
                                  lambda: steady_state([0.0, np.nan], 1.0), lambda: steady_state([0.0], 0.0),
                                  lambda: tempering_exponent(0, 1.0)])
def test_relations_reject_bad_input(call):
    with pytest.raises(ValueError):
        call()


def test_linear_maps_accept_negative_slope_bounds():
    # a confidence bound of a slope may cross zero; the linear maps must pass it through
    assert spectral_dimension_from_slope(-0.01, 10.0) == pytest.approx(-0.2)
    assert msd_exponent(-0.01) == pytest.approx(-0.02)


# ---------------------------------------------------------------- Caputo derivative, L1 scheme
def test_caputo_linear_function_exact_on_irregular_grid():
    rng = np.random.default_rng(0)
    # irregular steps of 1/256 .. 64/256: dyadic, so the samples f_k and their differences are exact in floating
    # point and the test sees only the scheme's own error (with arbitrary steps, f_k - f_{k-1} alone loses ~1e-12)
    t = np.concatenate([[0.0], np.cumsum(rng.integers(1, 65, 300)) / 256])
    for alpha in (0.1, 0.5, 0.9, 1.0):
        d = caputo_l1(2.5 * t - 1.0, t, alpha)
        exact = 2.5 * t[1:] ** (1 - alpha) / G(2 - alpha)     # paper eq. 71
        assert np.max(np.abs(d / exact - 1)) < 1e-12           # L1 is exact for piecewise-linear f


@pytest.mark.parametrize('alpha', [0.3, 0.5, 0.7])
def test_caputo_power_uniform_grid_error_and_order(alpha):
    beta = 2.0
    errs = []
    for N in (256, 512):
        t = np.linspace(0, 1, N + 1)
        exact = G(beta + 1) / G(beta + 1 - alpha) * t[1:] ** (beta - alpha)
        rel = np.abs(caputo_l1(t**beta, t, alpha) / exact - 1)
        errs.append(rel[-1])
    # On a uniform grid the relative error at t_n depends only on n (scale invariance), so the claim is for points
    # at least N/2 = 256 steps in. Measured on t ∈ [0.5, 1] at N = 512: 1.9e-5, 7.5e-5, 2.8e-4 for α = 0.3, 0.5, 0.7.
    assert rel[t[1:] >= 0.5].max() <= 5e-4
    order = np.log2(errs[0] / errs[1])
    assert abs(order - (2 - alpha)) <= 0.05, order             # theory: O(τ^{2-α}); measured 1.678, 1.495, 1.299


@pytest.mark.parametrize('alpha', [0.3, 0.5, 0.7])
def test_caputo_nonsmooth_power_on_graded_mesh(alpha):
    beta = alpha + 0.25                                         # t^β is not smooth at 0
    errs = []
    for N in (512, 1024):
        t = graded_mesh(1.0, N, (2 - alpha) / beta)
        exact = G(beta + 1) / G(beta + 1 - alpha) * t[1:] ** (beta - alpha)
        rel = np.abs(caputo_l1(t**beta, t, alpha) / exact - 1)[t[1:] >= 0.1]
        assert rel.max() <= 5e-4
        errs.append(rel.max())
    order = np.log2(errs[0] / errs[1])
    assert abs(order - (2 - alpha)) <= 0.05, order


def test_l1_weights_alpha_one_is_backward_difference_and_positive():
    t = graded_mesh(3.0, 40, 1.8)
    W = l1_weights(t, 1.0)
    assert np.allclose(W, np.diag(1 / np.diff(t)), rtol=1e-14, atol=0)
    W = l1_weights(t, 0.4)
    assert np.all(W[np.tril_indices(40)] > 0) and np.all(W[np.triu_indices(40, 1)] == 0)


@pytest.mark.parametrize('bad', [np.array([0.1, 0.2]), np.array([0.0, 0.2, 0.2]), np.array([0.0])])
def test_caputo_rejects_bad_grid(bad):
    with pytest.raises(ValueError, match='t must'):
        caputo_l1(bad, bad, 0.5)


def test_caputo_rejects_bad_order():
    t = np.linspace(0, 1, 5)
    for a in (0.0, 1.5, np.nan):
        with pytest.raises(ValueError, match='alpha'):
            caputo_l1(t, t, a)


# ---------------------------------------------------------------- Mittag-Leffler
def test_mittag_leffler_alpha1_is_exp():
    z = np.linspace(-50, 20, 1401)
    assert np.max(np.abs(mittag_leffler(z, 1.0) / np.exp(z) - 1)) < 1e-13


def test_mittag_leffler_half_is_erfcx():
    t = np.linspace(0, 1e4, 2001)                               # E_{1/2}(-√t) = erfcx(√t), decays like 1/√(πt)
    assert np.max(np.abs(mittag_leffler(-np.sqrt(t), 0.5) / erfcx(np.sqrt(t)) - 1)) < 1e-12
    x = np.linspace(0, 5, 101)                                  # positive side: E_{1/2}(x) = erfcx(-x)
    assert np.max(np.abs(mittag_leffler(x, 0.5) / erfcx(-x) - 1)) < 1e-12


def test_mittag_leffler_two_is_cos():
    t = np.linspace(0, 30, 1201)
    assert np.max(np.abs(mittag_leffler(-t**2, 2.0) - np.cos(t))) < 1e-12


@pytest.mark.parametrize('alpha,beta', [(0.3, 1.0), (0.75, 1.0), (1.5, 0.5), (0.6, 2.0)])
def test_mittag_leffler_matches_power_series(alpha, beta):
    # independent of the package: the defining series, summed to 300 terms (|z| ≤ 1: converges to rounding)
    z = np.linspace(-1, 1, 41)
    k = np.arange(300)
    series = np.array([np.sum(zz ** k / G(alpha * k + beta)) for zz in z])
    assert np.allclose(mittag_leffler(z, alpha, beta), series, rtol=1e-12, atol=1e-14)


def test_fractional_relaxation_solves_the_fractional_ode():
    # D^α y = -k y solved with the implicit L1 scheme on a graded mesh must converge to E_α(-k t^α)
    alpha, k = 0.6, 1.5
    def l1_solution(N):
        t = graded_mesh(5.0, N, (2 - alpha) / alpha)
        W = l1_weights(t, alpha)
        y, dy = np.ones(N + 1), np.zeros(N)
        for n in range(1, N + 1):
            dy[n - 1] = (-k * y[n - 1] - W[n - 1, :n - 1] @ dy[:n - 1]) / (W[n - 1, n - 1] + k)
            y[n] = y[n - 1] + dy[n - 1]
        return np.abs(y - fractional_relaxation(t, alpha, k)).max()
    e1, e2 = l1_solution(200), l1_solution(400)
    assert e2 < 1e-3                                            # measured ~3e-4
    assert abs(np.log2(e1 / e2) - (2 - alpha)) < 0.15           # global order 2-α on the graded mesh (Stynes 2017)


# ---------------------------------------------------------------- fractional Fokker-Planck solver
def point_source(L=15.0, M=301):
    x = np.linspace(-L, L, M)
    return x, np.where(np.arange(M) == M // 2, 1 / (x[1] - x[0]), 0.0)


@pytest.mark.parametrize('alpha', [0.3, 0.5, 0.8])
def test_free_fractional_diffusion_msd(alpha):
    x, p0 = point_source()
    # grading twice (2-α)/α: concentrates steps near 0 so the MSD ∝ t^α is accurate in *relative* terms over two
    # decades of time. Domain ±15 keeps the mass at the walls below 1e-16 up to t = 1 (MSD ≤ 2).
    t = graded_mesh(1.0, 1000, 2 * (2 - alpha) / alpha)
    sol = solve_ffpe(x, p0, t, alpha, D=1.0)
    exact = 2 * t**alpha / G(1 + alpha)
    late = t >= 0.01
    assert np.max(np.abs(sol.msd[late] / exact[late] - 1)) < 1e-3   # measured 3.4e-5, 1.1e-4, 6.0e-4
    slope = np.polyfit(np.log(t[late]), np.log(sol.msd[late]), 1)[0]
    assert abs(slope - alpha) < 0.002                                # measured |slope-α| ≤ 1e-4
    assert np.max(np.abs(sol.mass - 1)) < 1e-12


def test_alpha_one_free_diffusion_msd_is_exact():
    # backward Euler for the second moment is exact (it grows linearly), and so is the 3-point Laplacian's moment
    x, p0 = point_source()
    t = np.linspace(0, 0.5, 51)
    sol = solve_ffpe(x, p0, t, 1.0, D=0.7)
    assert np.allclose(sol.msd, 2 * 0.7 * t, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize('alpha,k', [(0.5, 1.0), (0.8, 2.0)])
def test_harmonic_well_mean_follows_mittag_leffler(alpha, k):
    x = np.linspace(-6, 6, 241)
    p0 = steady_state((x - 1.0) ** 2 / (2 * 0.05**2), 1.0, dx=x[1] - x[0])   # narrow Gaussian at x0 = 1
    t = graded_mesh(5.0, 400, (2 - alpha) / alpha)
    sol = solve_ffpe(x, p0, t, alpha, D=0.5, potential=lambda x: k * x**2 / 2)
    err = np.max(np.abs(sol.mean - sol.mean[0] * fractional_relaxation(t, alpha, k)))
    assert err < 2e-2                                          # measured ≤ 2e-3 (O(h²) in space, O(τ^{2-α}) in time)
    assert np.max(np.abs(sol.mass - 1)) < 1e-12


def test_double_well_relaxes_to_boltzmann():
    x = np.linspace(-2.5, 2.5, 201)
    h, D, alpha = x[1] - x[0], 0.5, 0.8
    V = (x**2 - 1) ** 2
    p0 = steady_state((x + 1) ** 2 / (2 * 0.1**2), 1.0, dx=h)                 # all mass in the left well
    t = graded_mesh(1e4, 800, (2 - alpha) / alpha)
    sol = solve_ffpe(x, p0, t, alpha, D=D, potential=V)
    # compare with the *continuous* Boltzmann density (normalised by a fine quadrature, not by the grid)
    xf = np.linspace(-2.5, 2.5, 200001)
    Z = np.trapezoid(np.exp(-(xf**2 - 1) ** 2 / D), xf)
    l1 = np.sum(np.abs(sol.p[-1] - np.exp(-V / D) / Z)) * h
    # measured 6e-4: the Mittag-Leffler tail ~ t^{-α} of the inter-well mode, not discretisation, sets it
    assert l1 < 5e-3
    assert np.max(np.abs(sol.mass - 1)) < 1e-12
    assert sol.p[-1][x < 0].sum() * h == pytest.approx(0.5, abs=5e-3)          # symmetric well: half on each side


def test_boltzmann_is_exactly_stationary():
    x = np.linspace(-3, 3, 121)
    V = np.sin(3 * x) + 0.3 * x**2                                             # rugged potential
    p_s = steady_state(V, 0.4, gamma=1.3, dx=x[1] - x[0])
    sol = solve_ffpe(x, p_s, graded_mesh(50.0, 60, 2.0), 0.5, D=0.4, potential=V, gamma=1.3)
    assert np.max(np.abs(sol.p - p_s)) < 1e-12 * p_s.max()


@pytest.mark.parametrize('kw,match', [(dict(x=np.array([0.0, 1.0, 3.0])), 'uniform'),
                                      (dict(p0=-np.ones(3)), 'p0'), (dict(alpha=0.0), 'alpha'),
                                      (dict(D=0.0), 'D'), (dict(potential=np.array([0.0, np.nan, 0.0])), 'potential'),
                                      (dict(t=np.array([0.0, 0.0, 1.0])), 't must')])
def test_ffpe_rejects_bad_input(kw, match):
    args = dict(x=np.linspace(0, 1, 3), p0=np.ones(3), t=np.linspace(0, 1, 3), alpha=0.5)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        solve_ffpe(**args)
