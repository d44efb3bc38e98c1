"""Tests of the posterior-tempering chapter: closed-form distances, the tempering algebra, the noise floor and
baselines, and clear errors for bad input."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import jensenshannon
from scipy.special import rel_entr
from scipy.stats import wasserstein_distance

from fracsgd.posterior.clusters import cluster_masses
from fracsgd.diffusion.spectral import fit_power_law
from fracsgd.diffusion.theory import spectral_dimension_from_slope, steady_state
from fracsgd.posterior.tempering import (accessibility_factor, bootstrap_distances, check_distribution, compare_to_posterior,
                               comparison_verdicts, distances, js_divergence, kl_divergence, noise_floor,
                               resample_labels, temper, tempered_masses, xi_scan)


# ---------------------------------------------------------------- distances against closed forms and scipy

@pytest.mark.parametrize('a,b', [(0.3, 0.6), (0.01, 0.5), (0.9, 0.2)])
def test_kl_of_bernoullis_is_the_closed_form_both_ways(a, b):
    d = distances([a, 1 - a], [b, 1 - b], names=('A', 'B'))
    kl = lambda x, y: x * math.log(x / y) + (1 - x) * math.log((1 - x) / (1 - y))
    assert d['KL(A‖B) [nats]'] == pytest.approx(kl(a, b), rel=1e-12)
    assert d['KL(B‖A) [nats]'] == pytest.approx(kl(b, a), rel=1e-12)


def test_disjoint_point_masses():
    # All mass on cluster 0 vs all on cluster 3: W1 = 3 with ground metric |i − j|; JS = 1 bit = ln 2 nats; KL infinite.
    d = distances([1., 0, 0, 0], [0, 0, 0, 1.])
    assert d.iloc[0] == math.inf and d.iloc[1] == math.inf
    assert d.iloc[2] == pytest.approx(3) and d.iloc[3] == pytest.approx(1) and d.iloc[4] == pytest.approx(1)
    assert js_divergence([1., 0], [0, 1.], base=math.e) == pytest.approx(math.log(2))
    assert 'nats' in distances([1., 0], [0, 1.], js_base=math.e).index[3]


def test_distances_match_scipy_on_random_distributions():
    rng = np.random.default_rng(0)
    x = np.array([0., 1, 3, 4, 9, 10])
    for _ in range(50):
        p, q = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
        d = distances(p, q, positions=x)
        assert d.iloc[0] == pytest.approx(rel_entr(p, q).sum(), rel=1e-10)
        assert d.iloc[1] == pytest.approx(rel_entr(q, p).sum(), rel=1e-10)
        assert d.iloc[2] == pytest.approx(wasserstein_distance(x, x, p, q), rel=1e-10)
        assert d.iloc[4] == pytest.approx(jensenshannon(p, q, base=2), rel=1e-8)
        assert d.iloc[3] == pytest.approx(jensenshannon(p, q, base=2) ** 2, rel=1e-8)
    assert kl_divergence(p, p) == 0


def test_distance_labels_name_direction_ground_metric_and_base():
    names = list(distances([.5, .5], [.4, .6], names=('Bayes', 'tempered SGD')).index)
    assert names[0] == 'KL(Bayes‖tempered SGD) [nats]' and names[1] == 'KL(tempered SGD‖Bayes) [nats]'
    assert 'ground |x_i − x_j|' in names[2] and 'cluster index' in names[2]
    assert 'bits' in names[3] and names[4].startswith('JS distance')



# ---------------------------------------------------------------- the tempering algebra

@pytest.mark.parametrize('slope', [0.15, 0.3, 0.45, 0.5, 0.6, 0.8])
def test_llc_cancels_when_d_s_comes_from_the_displacement_fit(slope):
    # R(t) = 2 t^slope with 1% multiplicative noise on 20 runs (seed 1): the fitted slope is within 2e-3, and
    # D_ξ from (λ, d_s = 2λ·slope_fit) equals ξ^(2 − 1/slope_fit) to rounding for every λ.
    rng = np.random.default_rng(1)
    t = np.arange(1, 3001.)
    fit = fit_power_law(t, 2 * t ** slope * np.exp(0.01 * rng.standard_normal((20, len(t)))), n_boot=0)
    assert abs(fit.slope - slope) < 2e-3
    xi = np.array([0.1, 0.5, 0.9, 1.0, 2.0])
    for lam in (0.3, 4.0, 250.0):
        d_s = spectral_dimension_from_slope(fit.slope, lam)
        assert np.allclose(accessibility_factor(xi, llc=lam, d_s=d_s), xi ** (2 - 1 / fit.slope), rtol=1e-12)


def test_factor_exceeds_one_below_unit_scale_exactly_when_sub_diffusive():
    s, xi = np.meshgrid(np.linspace(0.02, 0.98, 49), np.linspace(0.02, 0.98, 49))
    D = accessibility_factor(xi, slope=s)
    brownian = np.isclose(s, 0.5)
    assert np.array_equal((D > 1)[~brownian], (s < 0.5)[~brownian])
    assert np.allclose(D[brownian], 1)
    assert np.allclose(accessibility_factor(1.0, slope=s), 1)              # ξ = 1: no tempering at any slope


def test_tempering_a_boltzmann_steady_state_gives_the_likelihood():
    # Cor. 3.2 with m = 1 on discrete states: p_s ∝ exp(−L/D) raised to D is ∝ exp(−L), for any D.
    L = np.random.default_rng(2).uniform(0, 3, 7)
    for D in (0.3, 1.0, 2.7):
        assert np.allclose(temper(steady_state(L, D), D), steady_state(L, 1.0), rtol=1e-10)


def test_tempered_masses_closed_forms_and_choices():
    p = np.array([0.5, 0.3, 0.2])
    assert np.allclose(tempered_masses(p, 1.0, slope=0.3), p)               # ξ = 1, m = 1: raw SGD
    e = 0.5 ** (2 - 1 / 0.3)
    assert np.allclose(tempered_masses(p, 0.5, slope=0.3), p ** e / (p ** e).sum(), rtol=1e-12)
    assert np.allclose(tempered_masses(p, 0.5, m=512, slope=0.3), [1, 0, 0])   # m = n: argmax, no underflow
    lam, d_s = np.array([1., 2., 3.]), 1.5                                   # per-cluster λ_k, one d_s
    ek = 0.5 ** (2 - 2 * lam / d_s)
    assert np.allclose(tempered_masses(p, 0.5, llc=lam, d_s=d_s), p ** ek / (p ** ek).sum(), rtol=1e-12)
    assert np.allclose(tempered_masses([0.7, 0.3, 0.0], 0.5, slope=0.3)[2], 0)  # an empty cluster stays empty


def test_global_tempering_keeps_the_order_per_cluster_can_change_it():
    # p^e is increasing in p for e > 0: one exponent never changes which cluster is largest; per-cluster ones can.
    p = np.array([0.5, 0.3, 0.2])
    for xi in (0.1, 0.5, 0.9, 2.0):
        for s in (0.2, 0.5, 0.8):
            for m in (1, 512):
                assert (np.diff(tempered_masses(p, xi, m, slope=s)) <= 0).all()
    flipped = tempered_masses(p, 0.5, slope=[0.2, 0.5, 0.5])        # D = 0.5^(2 − 1/s): [8, 1, 1]
    assert np.allclose(flipped, np.array([0.5 ** 8, 0.3, 0.2]) / (0.5 ** 8 + 0.5)) and flipped.argmax() == 1



# ---------------------------------------------------------------- bootstrap, noise floor, baselines

def test_noise_floor_separates_same_from_different():
    # 3000 labels per sample, 200 resamples, seed 0. Two samples of one distribution: every distance below three
    # times the floor's 95% quantile; a sample of a clearly different one (KL ≈ 0.2): interval above 5× the floor.
    rng = np.random.default_rng(0)
    p = np.array([0.5, 0.3, 0.15, 0.05])
    a, b = rng.choice(4, 3000, p=p), rng.choice(4, 3000, p=p)
    c = rng.choice(4, 3000, p=[0.25] * 4)
    floor = noise_floor(a, 4)
    same, diff = bootstrap_distances(a, b, 4), bootstrap_distances(a, c, 4)
    assert (same.value.values < 3 * floor.q95.values).all()
    assert (diff.ci_low.values > 5 * floor.q95.values).all()
    assert (same.ci_low <= same.value).all() and (same.value <= same.ci_high).all()


def test_comparison_recovers_a_planted_tempering():
    # SGD labels drawn from p; "posterior" labels from p tempered by D = 0.5^(2 − 1/0.3) ≈ 2.52 (20000 each, seed 0).
    # Tempered SGD must land within the noise floor's scale, raw SGD and uniform well outside it.
    rng = np.random.default_rng(0)
    p = np.array([0.45, 0.35, 0.2])
    post = tempered_masses(p, 0.5, slope=0.3)
    sgd, bayes = rng.choice(3, 20000, p=p), rng.choice(3, 20000, p=post)
    table = compare_to_posterior(sgd, bayes, 3, 0.5, slope=0.3, n_boot=100)
    v = comparison_verdicts(table)
    assert v['tempered below raw SGD'].all() and v['tempered below uniform'].all()
    assert (v['tempered SGD'] < 3 * v['noise floor (q95)']).all()
    scan = xi_scan(cluster_masses(sgd, 3), cluster_masses(bayes, 3), [0.2, 0.5, 0.9], slope=0.3)
    assert scan.iloc[:, 2].idxmin() == 1                                      # the planted ξ = 0.5 wins
    back = xi_scan(cluster_masses(sgd, 3), cluster_masses(bayes, 3), [0.2, 0.5, 0.9], slope=0.3,
                   compare='untempered')
    assert back.iloc[:, 2].idxmin() == 1


def test_block_resampling_keeps_runs_and_widens_intervals_of_correlated_chains():
    rng = np.random.default_rng(0)
    chain = np.repeat(rng.integers(0, 2, 20), 50)[None]            # one chain: 20 runs of 50 equal draws
    r = resample_labels(chain, rng, block=50)
    assert r.shape == chain.shape and all(np.isin(r[0, i:i + 1], chain).all() for i in range(0, 1000, 50))
    # Width of the 95% interval of the mass of cluster 0 over 300 resamples (seed 1): single draws see 1000
    # independent labels (width ≈ 4·sqrt(p(1-p)/1000) ≈ 0.06); blocks of 50 see ~20 (width ≈ 0.4).
    width = lambda block: np.diff(np.quantile([cluster_masses(resample_labels(chain, np.random.default_rng(i), block), 2)[0]
                                               for i in range(300)], [0.025, 0.975]))[0]
    assert width(50) > 3 * width(1)
    with pytest.raises(ValueError, match='block must be a whole number'):
        resample_labels(chain, rng, block=2000)


def test_an_infinite_noise_floor_gives_no_verdict():
    # One posterior draw of 200 in cluster 2: most resamples leave it empty, so KL(Q‖Bayes) is infinite in the floor.
    post = np.array([0] * 150 + [1] * 49 + [2])
    sgd = np.random.default_rng(0).choice(3, 200, p=[0.5, 0.3, 0.2])
    v = comparison_verdicts(compare_to_posterior(sgd, post, 3, 0.5, slope=0.3, n_boot=100))
    assert v.loc['KL(Q‖Bayes) [nats]', 'noise floor (q95)'] == np.inf
    assert pd.isna(v.loc['KL(Q‖Bayes) [nats]', 'tempered within noise floor'])
    assert v.loc['JS divergence [bits]', 'tempered within noise floor'] in (True, False)



# ---------------------------------------------------------------- bad input: clear errors naming the problem

@pytest.mark.parametrize('xi', [0, -0.5, np.nan, [0.5, 0.0]])
def test_non_positive_length_scale(xi):
    with pytest.raises(ValueError, match='xi'):
        accessibility_factor(xi, slope=0.3)
    with pytest.raises(ValueError, match='xi'):
        tempered_masses([0.5, 0.5], xi, slope=0.3)


@pytest.mark.parametrize('p', [[0.5, 0.6], [0.2, 0.2], [-0.1, 1.1], [np.nan, 1.0], [[0.5, 0.5]], []])
def test_distributions_that_are_not_distributions(p):
    with pytest.raises(ValueError, match='p_sgd'):
        tempered_masses(p, 0.5, slope=0.3)
    with pytest.raises(ValueError, match='p_sgd'):
        check_distribution(p, 'p_sgd')
    with pytest.raises(ValueError, match='Bayes'):
        distances(p, [0.5, 0.5], names=('Bayes', 'SGD'))
    if np.ndim(p) == 1 and len(p) == 2 and np.isfinite(p).all() and np.min(p) >= 0:
        with pytest.raises(ValueError, match='sums to'):
            check_distribution(p)


@pytest.mark.parametrize('llc,d_s,word', [(0, 1, 'llc'), (-2, 1, 'llc'), (1, 0, 'd_s'), (1, -1, 'd_s'),
                                          ([1, 0], 1, 'llc'), (1, [2, np.nan], 'd_s')])
def test_non_positive_llc_or_spectral_dimension(llc, d_s, word):
    with pytest.raises(ValueError, match=word):
        accessibility_factor(0.5, llc=llc, d_s=d_s)


def test_other_bad_tempering_inputs():
    with pytest.raises(ValueError, match='slope'):
        accessibility_factor(0.5, slope=0)
    with pytest.raises(ValueError, match='either slope'):
        accessibility_factor(0.5)
    with pytest.raises(ValueError, match='either slope'):
        accessibility_factor(0.5, slope=0.3, llc=1, d_s=1)
    with pytest.raises(ValueError, match='both llc and d_s'):
        accessibility_factor(0.5, llc=1)
    with pytest.raises(ValueError, match='one value per cluster'):
        tempered_masses([0.5, 0.5], 0.5, llc=[1, 2, 3], d_s=1)
    with pytest.raises(ValueError, match='m must be'):
        tempered_masses([0.5, 0.5], 0.5, m=0, slope=0.3)
    with pytest.raises(ValueError, match="compare must be"):
        xi_scan([0.5, 0.5], [0.5, 0.5], [0.5], slope=0.3, compare='both')
