"""The exact finite-n LLC of the scalar chain, against a closed form, brute force and our estimator."""
import numpy as np
import pandas as pd
import pytest

from fracsgd.llc.exact_chain import (chain_llc, gap_closure, matrix_chain_llc, product_chain, run_chains,
                                 two_layer_chain_llc)
from fracsgd.llc.sgld import default_n_beta


@pytest.mark.parametrize('t,g', [(20.0, 0.5), (374.7, 3.0), (2912.0, 1.0), (1e8, 0.1)])
def test_quadrature_matches_the_bessel_closed_form_at_depth_2(t, g):
    assert chain_llc(2, t, g) == pytest.approx(two_layer_chain_llc(t, g), rel=1e-4)


def test_quadrature_matches_brute_force_at_depth_4():
    rng = np.random.default_rng(1)
    t, g = 200.0, 2.0
    K = 0.5 * np.prod(rng.standard_normal((4, 4_000_000)) / np.sqrt(g), axis=0) ** 2   # all four weights sampled
    b = np.exp(-t * K)
    assert float((t * K * b).sum() / b.sum()) == pytest.approx(chain_llc(4, t, g), rel=0.01)


def test_it_approaches_lambda_from_below_slowly():
    values = [chain_llc(3, t, 1.0) for t in (1e2, 1e4, 1e8, 1e16, 1e40)]
    assert all(np.diff(values) > 0) and values[-1] < 0.5
    assert values[-1] > 0.45                                   # logarithmic, but it does get there
    assert two_layer_chain_llc(1e60, 1.0) == pytest.approx(0.5, abs=0.01)


def test_gap_closure_is_self_consistent():
    c = gap_closure(3, 1000.0, 1.0)
    assert c['llc_stronger'] < c['llc'] < c['llc_weaker'] < 0.5
    assert c['llc'] + c['k_needed'] * (c['llc'] - c['llc_stronger']) == pytest.approx(0.5)


@pytest.mark.parametrize('bad', [dict(depth=1), dict(depth=2.5), dict(localization=0.0), dict(n_beta=-1.0),
                                 dict(scale=float('nan'))])
def test_bad_input_is_named(bad):
    args = dict(depth=3, n_beta=100.0, localization=1.0, scale=0.5) | bad
    with pytest.raises(ValueError, match=next(iter(bad))):
        chain_llc(**args)


def test_estimator_finds_the_finite_n_value_not_lambda():
    "Depth 3, n = 3000, gamma = 3: the exact value is 0.184, lambda is 0.5."
    specs = pd.DataFrame([dict(depth=3, n=3000, localization=3.0, step_size=1e-3, n_draws=10_000)])
    row = run_chains(specs).iloc[0]
    X = product_chain(3, 3000)[1][0]
    assert row.exact == pytest.approx(chain_llc(3, default_n_beta(3000), 3.0, float((X ** 2).mean()) / 2))
    assert abs(row.llc - row.exact) < 3 * row.llc_se + 0.01, (row.llc, row.llc_se, row.exact)
    assert (0.5 - row.llc) > 10 * row.llc_se                   # and it can tell that value from lambda


def test_matrix_chain_of_width_one_is_the_scalar_chain():
    "Importance sampling over the prior (width 1) against the quadrature: two independent computations."
    for depth, t in ((2, 300.0), (4, 3000.0)):
        r = matrix_chain_llc(depth, 1, t, 2.0, n_samples=400_000, seed=depth)
        assert abs(r['llc'] - chain_llc(depth, t, 2.0)) < 4 * r['se'] + 1e-3, (depth, r)


def test_matrix_chain_is_below_aoyagi_and_falls_with_depth():
    from fracsgd.llc.dln import aoyagi_dln_lambda
    values = [matrix_chain_llc(L, 2, 1000.0, 3.0, n_samples=200_000)['llc'] for L in (2, 3, 4)]
    assert all(np.diff(values) < 0) and values[0] < float(aoyagi_dln_lambda([2, 2, 2], 0))


def test_localization_tied_to_n_beta_sends_the_chain_to_zero():
    tied = [chain_llc(3, t, localization=1.5e-3 * t) for t in (1e2, 1e4, 1e6)]
    fixed = [chain_llc(3, t, localization=1.5) for t in (1e2, 1e4, 1e6)]
    assert all(np.diff(tied) < 0) and tied[-1] < 0.01             # all of the chain's lambda is singular: lost
    assert all(np.diff(fixed) > 0)                                 # a fixed localization: on its way to 1/2


def _sweep_row(**changes):
    return pd.DataFrame([dict(net=0, depth=3, layers='4-6-6-4', rank=1, n=2000, noise=0.0, true_llc=8.0) | changes])


def test_automatic_setting_tends_to_the_rank_maps_not_lambda():
    from fracsgd.llc.dln import aoyagi_dln_lambda, rank_maps_half_dimension
    assert aoyagi_dln_lambda([4, 6, 6, 4], 1) == 8 and rank_maps_half_dimension([4, 6, 6, 4], 1) == 3.5
    from fracsgd.llc.exact_chain import run_n_sweep
    rows = run_n_sweep(_sweep_row(), factors=(10_000,), n_chains=2)        # 5,000 + 5,000 steps: ~10 s
    r = rows.iloc[0]
    assert r.rank_maps == 3.5 and r.true_llc == 8.0
    assert abs(r.llc - 3.5) < 3 * r.llc_se + 0.1 and r.llc < 5     # the regular part alone, not lambda = 8


def test_n_sweep_refuses_noisy_targets():
    from fracsgd.llc.exact_chain import run_n_sweep
    with pytest.raises(ValueError, match='noiseless'):
        run_n_sweep(_sweep_row(noise=1.0), factors=(10,))


def test_rank_maps_half_dimension_is_regression_at_full_rank():
    from fracsgd.llc.dln import aoyagi_dln_lambda, rank_maps_half_dimension
    for a, b in [(3, 5), (4, 4), (7, 2)]:
        assert rank_maps_half_dimension([a, b], min(a, b)) == aoyagi_dln_lambda([a, b], min(a, b)) == a * b / 2
    assert rank_maps_half_dimension([5, 3, 6], 0) == 0
    with pytest.raises(ValueError, match='rank'):
        rank_maps_half_dimension([3, 4], 4)
