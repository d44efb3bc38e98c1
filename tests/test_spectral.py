"""Ground-truth tests of the power-law fits, exponents, growth laws and d_s on curves whose exponents are known exactly."""
import numpy as np
import pytest

from fracsgd.diffusion.spectral import (fit_power_law, compare_growth_laws, diffusion_exponents, spectral_dimension_from_volume)


def test_power_law_interval_coverage():
    # 200 synthetic ensembles (seed 1) of 10 runs with slope 0.3 and 5% noise; the nominal 95% run-bootstrap
    # interval must cover the truth in at least 88% of them. With 200 trials at true coverage 0.95 the chance of
    # falling below 0.88 is < 1e-4 (binomial), while a CI that ignores run-to-run variation covers far less.
    rng = np.random.default_rng(1)
    t = np.geomspace(1, 1e4, 60)
    hits = 0
    for _ in range(200):
        runs = 2 * t ** 0.3 * np.exp(0.05 * rng.standard_normal((10, 1)) * np.log(t) / np.log(t[-1])
                                     + 0.02 * rng.standard_normal((10, len(t))))
        f = fit_power_law(t, runs, n_boot=200, seed=int(rng.integers(1e9)))
        hits += f.ci_low <= 0.3 <= f.ci_high
    assert hits / 200 >= 0.88, hits


def test_growth_laws_identified():
    # Each law generated exactly (1% noise, seed 2) must rank first, or tie within ΔAIC < 4 with the nested
    # power + drift law; ΔAIC of 4 is the usual "considerably less support" threshold.
    rng = np.random.default_rng(2)
    t = np.arange(1, 10001.)
    cases = {'power law': 2 * t ** 0.3, 'logarithmic': 1 + 0.5 * np.log(t), 'linear drift': 5 + 0.01 * t}
    for truth, R in cases.items():
        d = compare_growth_laws(t, R * np.exp(0.01 * rng.standard_normal(len(t)))).set_index('law')
        assert d.delta_aic[truth] < 4, (truth, d)
    d = compare_growth_laws(t, (2 * t ** 0.25 + 0.01 * t) * np.exp(0.01 * rng.standard_normal(len(t))))
    assert d.law.iloc[0] == 'power + drift'


def test_exponents():
    t = np.arange(1, 5001.)
    e = diffusion_exponents(fit_power_law(t, t ** 0.35), llc=10.)
    assert np.isclose(e['d_s'], 7.0) and np.isclose(e['d_walk'], 1 / 0.35) and e['ds_le_llc']
    e = diffusion_exponents(fit_power_law(t, t ** 0.6), llc=10.)
    assert not e['ds_le_llc'] and e['regime'] == 'super-diffusive'   # d_s = 12 > λ = 10  ⇔  slope > ½
    with pytest.raises(ValueError, match='LLC'):
        diffusion_exponents(fit_power_law(t, t ** 0.3), llc=-1.)


def test_volume_dimension_of_brownian_line():
    # A simple random walk on Z visits E[S_t] ≈ sqrt(8t/π) distinct sites, so d_s = 1 (seed 3, 200 walkers;
    # ±0.08 covers the sub-leading +O(1) correction over t = 10…5000).
    rng = np.random.default_rng(3)
    pos = np.cumsum(rng.choice([-1, 1], size=(200, 5000)), axis=1)
    ts = np.unique(np.geomspace(10, 5000, 12).astype(int))
    S = np.array([[len(np.unique(w[:k])) for k in ts] for w in pos]).mean(0)
    d = spectral_dimension_from_volume(ts, S)
    assert abs(d['d_s'] - 1) < 0.08, d


def test_bad_input_named():
    t = np.arange(1, 10.)
    with pytest.raises(ValueError, match='shape mismatch'): fit_power_law(t, np.ones(5))
    with pytest.raises(ValueError, match='NaN'): fit_power_law(t, np.full(9, np.nan))
    with pytest.raises(ValueError, match='positive'): fit_power_law(t, np.zeros(9))
