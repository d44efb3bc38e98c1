"""Ground-truth tests of the spectral-dimension fits on curves whose exponents and crossover are known exactly."""
import numpy as np
import pytest

from fracsgd.spectral import (fit_power_law, detect_crossover, fit_after_crossover, compare_growth_laws,
                              predict_displacement, diffusion_exponents, spectral_dimension_from_volume,
                              fit_late_exponent, LATE_ESTIMATORS)


def eq32_curve(t, t_c, early, late, A=1.0):
    "Paper eq. 32: r(t) = t^early frozen at t_c, plus A·(t − t_c)^late after t_c (scaled so both parts matter)."
    return np.minimum(t, t_c) ** early + A * t_c ** (early - late) * np.clip(t - t_c, 0, None) ** late


@pytest.mark.parametrize('t_c,early,late', [(300., 0.9, 0.3), (1000., 0.8, 0.25), (150., 1.0, 0.4)])
def test_eq32_crossover_and_late_exponent_recovered(t_c, early, late):
    # Seed 0; 2% multiplicative log-normal noise on each of 20 runs (the size of run-to-run scatter in the moons study).
    # Tolerances: t_c within 20% (the SSE profile is flat near the break because the late part starts at zero),
    # late exponent within 0.03 (a tenth of the smallest exponent tested: enough to tell 0.3 from the naive fit's bias).
    rng = np.random.default_rng(0)
    t = np.arange(1, 30001.)
    runs = eq32_curve(t, t_c, early, late) * np.exp(0.02 * rng.standard_normal((20, len(t))))
    c = detect_crossover(t, runs)
    assert c.model == 'restart' and abs(c.t_c / t_c - 1) < 0.20, c
    fit = fit_after_crossover(t, runs, c.t_c)
    assert abs(fit.slope - late) < 0.03, fit
    assert fit.ci_low - 0.03 < late < fit.ci_high + 0.03


def test_smooth_crossover_by_local_slope():
    # R = t (1 + t/t0)^(s-1): local slope 1 − (1−s)x/(1+x), x = t/t0, equals ½ exactly at t = t0/(1 − 2s).
    # Noise-free, so the only error is the finite window of the local slope: 3% on t_c, 0.01 on the late exponent.
    t = np.arange(1, 100001.)
    for t0, s in [(100., 0.3), (500., 0.2)]:
        R = t * (1 + t / t0) ** (s - 1)
        c = detect_crossover(t, R, method='slope')
        assert c.model == 'bend' and abs(c.t_c / (t0 / (1 - 2 * s)) - 1) < 0.03, (t0, s, c)
        assert abs(fit_power_law(t, R, t_min=100 * t0).slope - s) < 0.01


@pytest.mark.parametrize('method', ['auto', 'eq32', 'bend', 'slope'])
def test_a_power_law_has_no_crossover(method):
    # The example (exact t^0.4 on 1..499, where eq. 32 used to invent t_c = 406), a longer exact power law,
    # and noisy ones (2% iid log-normal noise, seeds 0-4): one power law, whatever method is asked to place t_c.
    rng = np.random.default_rng(0)
    t = np.arange(1, 500.)
    curves = [t ** 0.4] + [np.arange(1, 20001.) ** 0.3 * np.exp(0.02 * rng.standard_normal(20000)) for _ in range(5)]
    for R in curves:
        tt = np.arange(1., len(R) + 1)
        c = detect_crossover(tt, R, method=method)
        assert not c.found and c.model == 'none' and np.isnan(c.t_c) and c.delta_bic < 10, c
    assert abs(detect_crossover(t, t ** 0.4).late_slope - 0.4) < 1e-12
    with pytest.raises(ValueError, match='no crossover'):
        fit_late_exponent(t, t ** 0.4)
    with pytest.raises(ValueError, match='no crossover'):
        fit_after_crossover(t, t ** 0.4, detect_crossover(t, t ** 0.4).t_c)


@pytest.mark.parametrize('noise', [0, 0.02])
def test_crossover_model_identified(noise):
    # A restart (eq. 32) and a smooth bend t (1 + t/t0)^(s−1), exact and with 2% noise (seed 1), each recognised
    # for what it is; t_c within 5% of the restart time, or of t0 where the bend's asymptotes meet.
    rng = np.random.default_rng(1)
    t = np.arange(1, 20001.)
    for truth, t_c, R in [('restart', 300., eq32_curve(t, 300., 0.9, 0.3)), ('bend', 100., t * (1 + t / 100) ** -0.7)]:
        c = detect_crossover(t, R * np.exp(noise * rng.standard_normal(len(t))))
        assert c.model == truth and abs(c.t_c / t_c - 1) < 0.05 and c.delta_bic > 10, (truth, c)


def test_short_late_window_flagged():
    # late_decades = log10(t_max / t_c) exactly; under one decade is flagged, here and in fit_late_exponent.
    for t_max, short in [(2000., True), (20000., False)]:
        t = np.arange(1, t_max + 1)
        c = detect_crossover(t, eq32_curve(t, 300., 0.9, 0.3))
        assert np.isclose(c.late_decades, np.log10(t_max / c.t_c)) and c.short_late_window == short, c
        assert fit_late_exponent(t, eq32_curve(t, 300., 0.9, 0.3), c, n_boot=0).short_late_window == short


def test_reported_estimator_follows_the_model():
    # Exact curves with true late exponent 0.3: after a restart eq. 32 is reported and is right, with the log-log
    # slope as the (biased) check; after a sharp bend the log-log slope is reported and is right.
    t = np.arange(1, 20001.)
    late = fit_late_exponent(t, eq32_curve(t, 300., 0.9, 0.3), n_boot=0)
    assert late.estimator == LATE_ESTIMATORS['eq32'] and abs(late.slope - 0.3) < 0.005, late
    assert late.check_estimator == LATE_ESTIMATORS['loglog'] and abs(late.check_slope - 0.3) > 0.03, late
    kink = np.where(t < 300, t ** 0.9, 300 ** 0.9 * (t / 300) ** 0.3)
    late = fit_late_exponent(t, kink, n_boot=0)
    assert late.model == 'bend' and late.estimator == LATE_ESTIMATORS['loglog'] and abs(late.slope - 0.3) < 0.005


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


def test_late_exponent_interval_coverage():
    # 40 synthetic ensembles (seed 3) of 20 runs of a sharp bend, t^0.9 until t_c = 100 then late exponent 0.3,
    # each run with its own scale (10%) and 3% noise per point, at 60 log-spaced times up to 1e4. t_c is
    # re-detected in every one of 100 bootstrap replicates. Tolerance: if the nominal 90% intervals cover at
    # their stated rate, fewer than 31 hits out of 40 has binomial probability 0.5%. They must not buy coverage
    # by width either: the mean interval must be under 1.5x the width the spread of the estimates calls for.
    rng = np.random.default_rng(3)
    t = np.unique(np.geomspace(1, 1e4, 60).round())
    curve = np.where(t < 100, t ** 0.9, 100 ** 0.9 * (t / 100) ** 0.3)
    hits, slopes, widths = 0, [], []
    for i in range(40):
        runs = curve * np.exp(0.1 * rng.standard_normal((20, 1)) + 0.03 * rng.standard_normal((20, len(t))))
        late = fit_late_exponent(t, runs, n_boot=100, seed=i, level=0.9)
        assert late.model == 'bend' and late.n_boot == 100, late
        hits += late.ci_low <= 0.3 <= late.ci_high
        slopes.append(late.slope)
        widths.append(late.ci_high - late.ci_low)
    assert hits >= 31, hits
    assert np.mean(widths) < 1.5 * 2 * 1.645 * np.std(slopes), (np.mean(widths), np.std(slopes))


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


def test_prediction_and_exponents():
    t = np.arange(1, 5001.)
    p = predict_displacement(t, 3 * t ** 0.35)
    assert p.attrs['r2'] > 0.9999 and abs(p.attrs['slope'] - 0.35) < 1e-9
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
