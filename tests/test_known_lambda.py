"""Tests for `fracsgd.diffusion.known_lambda`: potentials whose learning coefficient is exact, Langevin and minibatch-SGD
walkers on them, the walk's exponents against λ, and the first-passage model of Theorem 3.2.

Known values (none chosen here): λ = d/2 for a regular minimum, min(1/(2a), 1/(2b)) for w1^(2a) w2^(2b) (normal
crossing, uniform prior), c/2 for a Morse–Bott valley of codimension c, Aoyagi's λ for deep linear networks; the
Ornstein–Uhlenbeck moments of Langevin on a quadratic; Brownian motion (d_walk = 2, d_s = d) inside the pore of a
regular minimum; the mean exit time r²/(2D) of one-dimensional Brownian motion from (−r, r).
"""
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from fracsgd.diffusion.known_lambda import (KNOWN_LAMBDA_SCALE, dln_landscape, first_passage_times, known_lambda_summary,
                                  langevin, linear_regression, monomial, morse_bott, passage_exponent,
                                  product_regression, quadratic, sgd, walk_exponents)
from fracsgd.ledger.claims import read_ledger
from fracsgd.ledger.provenance import COMPACT

ZOO = [quadratic(3), monomial(1, 1), monomial(1, 2), monomial(2, 3), morse_bott(3, 1), dln_landscape([1, 2, 1], 1),
       dln_landscape([2, 2, 2], 2), product_regression()]


@pytest.mark.parametrize('ls', ZOO, ids=lambda ls: ls.name)
def test_gradient_and_minimum(ls):
    rng = np.random.default_rng(0)
    w = ls.w_star + 0.3 * rng.standard_normal((4, ls.dim))
    h = 1e-6
    numeric = np.stack([(ls.loss(w + h * e) - ls.loss(w - h * e)) / (2 * h) for e in np.eye(ls.dim)], -1)
    np.testing.assert_allclose(ls.grad(w), numeric, rtol=1e-5, atol=1e-7)
    assert abs(ls.loss(ls.w_star[None])[0]) < 1e-12


def test_exact_learning_coefficients():
    lam = {ls.name: ls.llc for ls in ZOO}
    assert lam['quadratic, d = 3'] == Fraction(3, 2) and lam['Morse–Bott, d = 3, c = 1'] == Fraction(1, 2)
    assert lam['w1^2 w2^2'] == Fraction(1, 2) and lam['w1^2 w2^4'] == Fraction(1, 4) and lam['w1^4 w2^6'] == Fraction(1, 6)
    # DLN [1, 2, 1] rank 1 is K = ½(u·v − m)²: one constraint on four weights, a Morse–Bott valley, λ = ½
    assert lam['DLN [1, 2, 1], rank 1'] == Fraction(1, 2) and lam['DLN [2, 2, 2], rank 2'] == 2
    dims = {ls.name: ls.minimum_set_dim for ls in ZOO}
    assert dims['DLN [1, 2, 1], rank 1'] == 3 and dims['DLN [2, 2, 2], rank 2'] == 4   # u·v = m; the GL(2) orbit
    assert monomial(1, 1).multiplicity == 2 and monomial(1, 2).multiplicity == 1


def test_langevin_and_sgd_match_the_ornstein_uhlenbeck_moments():
    t = np.arange(301)
    exact = 3 * (1 - (1 - 0.01) ** (2 * t)) / (1 - 0.01 / 2)          # E|w_t|², T = 1, d = 3, from w* = 0
    x = langevin(quadratic(3), 2000, 300, lr=0.01, seed=2)
    np.testing.assert_allclose((x[:, 1:] ** 2).sum(-1).mean(0), exact[1:], rtol=0.06)
    y = sgd(linear_regression(3), 2000, 300, lr=0.01, batch=8, seed=2)  # minibatch noise: T = lr σ²/(2B)
    np.testing.assert_allclose((y[:, 1:] ** 2).sum(-1).mean(0), exact[1:] * 0.01 / 16, rtol=0.08)


def test_sgd_noise_vanishes_at_the_singular_minimum():
    # per-sample gradients of y = w1 w2 x + noise are proportional to (w2, w1): at w* = 0 SGD never moves
    x = sgd(product_regression(), 5, 100, lr=0.1, batch=4, seed=0)
    assert np.all(x == 0)
    with pytest.raises(ValueError, match='per-sample'):
        sgd(quadratic(2), 2, 10, lr=0.1, batch=4)


@pytest.mark.parametrize('d', [1, 3])
def test_regular_minimum_gives_rho_two_not_one(d):
    # inside the pore (lags << 1/lr) the walk is Brownian: d_walk = 2, d_s = d, so d_walk d_s / (2λ) = 2
    x = langevin(quadratic(d), 300, 2000, lr=1e-5, seed=d)
    m = walk_exponents(x, llc=d / 2, t_window=(10, 1000), tau_window=(10, 1000), n_boot=200)
    assert m['rho_ci'][0] <= 2 <= m['rho_ci'][1] and m['rho_ci'][0] > 1, m
    assert m['d_s_ci'][0] <= d <= m['d_s_ci'][1] and m['d_walk_ci'][0] <= 2 <= m['d_walk_ci'][1], m


def test_first_passage_in_a_strip_is_one_dimensional_and_independent_of_eps():
    strip = morse_bott(2, 1)
    times = [first_passage_times(strip, e, 1.0, step=0.2 * math.sqrt(2 * e), n_walkers=300, seed=s)
             for s, e in enumerate((1e-2, 3e-2, 1e-1))]
    for t in times:                                      # exit from (−1, 1) along the valley: r²/(2D) = 1, D = ½
        assert abs(t.mean() - 1) < 0.15, t.mean()
    fit = passage_exponent((1e-2, 3e-2, 1e-1), times)
    assert fit['ci'][0] <= 0 <= fit['ci'][1] and fit['ci'][1] < 0.5, fit  # Theorem 3.2 would say λ = ½


def test_no_escape_from_a_regular_minimum():
    t = first_passage_times(quadratic(2), 0.1, 1.0, step=0.05, n_walkers=5, max_steps=3000)
    assert np.isinf(t).all()                             # {K < ε} is a ball of radius √(2ε) < r: T = ∞
    assert 'censored' in passage_exponent([0.1, 0.2], [t, t])['reason']


def test_committed_result_follows_from_its_tables():
    folder = COMPACT / 'known-lambda' / 'full'
    walks, passage = pd.read_csv(folder / 'walks.csv'), pd.read_csv(folder / 'first_passage.csv')
    summary = pd.read_csv(folder / 'summary.csv')
    again = known_lambda_summary(walks, passage)
    assert again.quantity.tolist() == summary.quantity.tolist()
    np.testing.assert_allclose(again[['value', 'ci_low', 'ci_high']].values.astype(float),
                               summary[['value', 'ci_low', 'ci_high']].values.astype(float), rtol=1e-12)
    rows = read_ledger().set_index('claim_id')
    for claim in ('thm31-eq12-regular', 'thm31-eq12-degenerate', 'thm32-fpt-exponent'):
        assert rows.loc[claim, 'source'] == 'compact/known-lambda/full' and rows.loc[claim, 'scale'] == KNOWN_LAMBDA_SCALE
