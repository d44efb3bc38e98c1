"""The LLC validation suite: its table and split are fixed, and its exact targets agree with closed forms."""
import math

import pytest
import torch
from torch import nn

from fracsgd.llc.calibrate import crossing_data, crossing_target
from fracsgd.llc.exact_chain import chain_llc, two_layer_chain_llc
from fracsgd.llc.suite import (KINDS, aoyagi_order, equivalent_data, linear_posterior, mala_target, suite_cases,
                               suite_problem, sufficient_stats)
from fracsgd.llc.settings import default_n_beta


def test_the_split_is_fixed_and_about_half_held_out():
    a, b = suite_cases(), suite_cases()
    assert a.equals(b) and a.case.is_unique
    assert 0.4 <= (a.part == 'held-out').mean() <= 0.5
    for kind in KINDS:
        parts = a[a.kind == kind].part
        assert set(parts) == {'tune', 'held-out'} and (parts == 'held-out').sum() == len(parts) // 2


def test_cases_build_their_problems():
    for _, row in suite_cases().groupby('kind').head(2).iterrows():
        model, (X, y) = suite_problem(row)
        assert X.dtype == torch.float32 and X.shape[0] == y.shape[0] == row.n
        assert sum(p.numel() for p in model.parameters()) == row.d


def test_aoyagi_order_on_the_known_cases():
    assert [aoyagi_order([1] * (L + 1), 0) for L in range(2, 8)] == list(range(2, 8))      # scalar chains: L
    assert aoyagi_order([2, 3, 2], 0) == 2 and aoyagi_order([3, 2, 3], 0) == 1             # RRR: odd sum -> 2


def test_sampler_matches_quadrature_on_a_small_chain():
    model = nn.Sequential(nn.Linear(1, 1, bias=False), nn.Linear(1, 1, bias=False))
    for layer in model:
        layer.weight.data.zero_()
    X = torch.randn(1000, 1, generator=torch.Generator().manual_seed(0))
    data, nb = (X, torch.zeros(1000, 1)), default_n_beta(1000)
    exact = chain_llc(2, nb, 1.0, float(X.double().pow(2).mean()) / 2)
    r = mala_target(model, data, nb, 1.0, rel_se=0.01, n_chains=64)
    assert abs(r['target'] - exact) < 3 * r['target_se'], (r, exact)


def test_sampler_matches_the_gaussian_closed_form_of_a_regular_layer_with_noise():
    g = torch.Generator().manual_seed(1)
    W = torch.randn(2, 3, generator=g, dtype=torch.float64)
    X = torch.randn(500, 3, generator=g, dtype=torch.float64)
    y = X @ W.T + torch.randn(500, 2, generator=g, dtype=torch.float64)
    Sxx, Sxy = sufficient_stats((X, y))
    nb, gamma = 100.0, 2.0
    prec = nb * Sxx + gamma * torch.eye(3, dtype=torch.float64)
    R = W @ Sxx - Sxy.T                                          # one row per output
    mu = -nb * torch.linalg.solve(prec, R.T).T
    cov = torch.linalg.inv(prec)
    exact = float(nb * (2 * 0.5 * torch.trace(Sxx @ cov) + 0.5 * (mu @ Sxx * mu).sum() + (R * mu).sum()))
    r = linear_posterior([W], (Sxx, Sxy), nb, gamma, 0.002, n_chains=64, n_burnin=100, n_draws=400)
    se = r['per_chain'].std(ddof=1) / math.sqrt(64)
    assert abs(r['per_chain'].mean() - exact) < 3 * se + 1e-9, (r['per_chain'].mean(), exact, se)


@pytest.mark.parametrize('sigma', [0.0, 1.0])
def test_crossing_target_matches_closed_forms(sigma):
    data, nb, gamma = crossing_data(3000, sigma, seed=5), default_n_beta(3000), 1.0
    X, y = (t.double() for t in data)
    sxx, sxy = float((X * X).mean()), float((X * y).mean())
    a = nb * sxx + gamma                                         # x w1: a Gaussian in w1 (w2 unused)
    mu = nb * sxy / a
    assert crossing_target(1, 0, data, nb, gamma) == pytest.approx(nb * (sxx / 2 * (mu ** 2 + 1 / a) - sxy * mu),
                                                                   rel=1e-4)
    if sigma == 0:                                               # x w1 w2 with y = 0: the two-layer chain
        assert crossing_target(1, 1, data, nb, gamma) == pytest.approx(two_layer_chain_llc(nb, gamma, sxx / 2),
                                                                       rel=1e-3)


def test_equivalent_data_gives_the_same_loss_everywhere_on_few_rows():
    cases = suite_cases()
    for _, row in cases[cases.kind.isin(['dln', 'rrr', 'matrix-chain'])].groupby('kind').head(1).iterrows():
        model, data = suite_problem(row)
        small = equivalent_data(data)
        assert len(small[0]) == data[0][0].numel() + data[1][0].numel()
        assert small[0].shape[1:] == data[0].shape[1:] and small[1].shape[1:] == data[1].shape[1:]
        g = torch.Generator().manual_seed(1)
        for _ in range(3):
            with torch.no_grad():
                for p in model.parameters():
                    p.add_(torch.randn(p.shape, generator=g))
                full, few = (((model(X) - y) ** 2).flatten(1).sum(1).double().mean() for X, y in (data, small))
            assert few == pytest.approx(float(full), rel=1e-4), row.case
        stats, stats_few = sufficient_stats(data), sufficient_stats(small)
        for a, b in zip(stats, stats_few):
            assert torch.allclose(a, b, rtol=1e-4, atol=1e-5)


def test_temperature_slope_refuses_a_factor_that_is_not_colder():
    from fracsgd.llc.temperature import temperature_slope
    with pytest.raises(ValueError, match='factor must be > 1'):
        temperature_slope(nn.Linear(1, 1), (torch.zeros(4, 1), torch.zeros(4, 1)), 'regression', factor=1.0)
