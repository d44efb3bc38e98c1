"""The increment MSD at several ages (fracsgd.diffusion.ageing), against walks whose answers are known: Brownian motion (no
ageing, M = 2Dτd), a continuous-time random walk with Pareto waiting times (the walk of the time-fractional
Fokker-Planck equation: ageing exponent α − 1), a harmonic well from a non-equilibrium start (exact closed form),
and full-batch gradient descent on least squares (exact trajectory)."""
import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from fracsgd.diffusion.ageing import (IncrementRecorder, age_starts, aged_msd, ageing_exponent, brownian_aged_msd,
                            brownian_walks, ctrw_aged_msd, ctrw_walks, expected_msd, ou_aged_msd, ou_walks,
                            paired_ageing, paired_late_slopes, record_paths, train_with_increments)
from fracsgd.train.ensemble import EnsembleSettings, train_ensemble

torch.set_num_threads(1)
AGES, LAGS = [10, 30, 100, 300], [1, 3, 10, 30, 100, 300]


def _msd(paths, closed_form, **kw):
    rec = IncrementRecorder(AGES, LAGS, n_steps=paths.shape[1] - 1)
    tab = record_paths(paths, rec)
    return tab, aged_msd(tab, n_boot=100).merge(expected_msd(closed_form, rec, **kw), on=['age', 'lag'])


def test_recorder_gives_squared_increments_of_a_walk_written_by_hand():
    x = np.array([[0, 1, 3, 6, 10, 15], [0, -1, -1, 2, 2, 2]], float)[..., None]
    rec = IncrementRecorder(ages=[1], lags=[1, 3], n_steps=5, per_age=2, window=2.0)
    tab = record_paths(x, rec).set_index(['member', 'start', 'lag'])
    assert tab.sq[(0, 1, 3)] == 81 and tab.sq[(0, 2, 3)] == 144 and tab.sq[(1, 2, 1)] == 9
    assert tab.sq_start[(0, 2, 1)] == 9 and tab.sq_end[(1, 1, 3)] == 4
    assert not rec.snap                                        # no snapshot kept after its last lag


def test_brownian_motion_does_not_age():
    tab, res = _msd(brownian_walks(1500, 700, d=2, D=0.5, seed=1), brownian_aged_msd, d=2, D=0.5)
    assert (abs(res.msd / res.expected - 1) < 0.08).all(), res           # M = 2 D τ d = 2τ at every age
    beta = ageing_exponent(tab, lag=10)
    assert beta['ci_low'] < 0 < beta['ci_high'] and abs(beta['value']) < 0.03, beta


@pytest.mark.parametrize('alpha', [0.5, 0.7])
def test_fractional_walk_ages_with_exponent_alpha_minus_one(alpha):
    tab, res = _msd(ctrw_walks(2000, 1500, alpha, seed=2), ctrw_aged_msd, alpha=alpha)
    beta = ageing_exponent(tab, lag=3, ages=[30, 100, 300])
    closed = res[(res.lag == 3) & res.age.isin([30, 100, 300])]
    exact = np.polyfit(np.log(closed.age), np.log(closed.expected), 1)[0]   # the asymptotic law on the same grid
    assert abs(beta['value'] - (alpha - 1)) < 0.1 and beta['ci_low'] - 0.02 <= exact <= beta['ci_high'] + 0.02, beta
    far = res[(res.lag <= res.age / 10) & (res.lag >= 3) & (res.age >= 100)]   # at lag 1 few walkers jump
    assert (abs(far.msd / far.expected - 1) < 0.2).all(), far
    assert ((res.ratio_ci_low <= 1) & (1 <= res.ratio_ci_high)).mean() >= 0.8     # a martingale: ratio 1


def test_harmonic_well_matches_its_closed_form_and_stops_ageing():
    kw = dict(k=0.02, D=0.001, x0=4.0, d=2)
    tab, res = _msd(ou_walks(1500, 700, **kw, seed=3), ou_aged_msd, **kw)
    assert (abs(res.msd / res.expected - 1) < 0.1).all(), res
    assert ageing_exponent(tab, lag=10, ages=[10, 30])['ci_high'] < -0.3          # sliding in: it ages
    assert (res.query('age == 10 and lag <= 30').ratio_ci_high < 0.7).all()      # drift: ratio below 1


def test_training_with_increments_is_train_ensemble_plus_the_exact_gd_increments():
    g = torch.Generator().manual_seed(4)
    X = torch.randn(40, 2, generator=g, dtype=torch.float64)
    y = X @ torch.tensor([[0.7], [-1.3]], dtype=torch.float64) + 0.2 * torch.randn(40, 1, generator=g, dtype=torch.float64)
    loss = lambda out, t: ((out - t) ** 2).sum(-1) / 2
    def nets():
        torch.manual_seed(5)
        return [nn.Linear(2, 1, bias=False).double() for _ in range(2)]
    a, b = nets(), nets()
    w0 = torch.stack([n.weight.detach().reshape(-1).clone() for n in a])
    s = EnsembleSettings(lr=0.1, batch_size=40, n_steps=120, every=7)
    traj, inc = train_with_increments(a, (X, y), loss, s, ages=[4, 40], lags=[2, 50], per_age=2, window=0.5)
    pd.testing.assert_frame_equal(traj, train_ensemble(b, (X, y), loss, s))
    A = torch.eye(2, dtype=torch.float64) - 0.1 * X.T @ X / 40
    w_star = torch.linalg.lstsq(X, y).solution[:, 0]
    at = lambda t: (torch.linalg.matrix_power(A, t) @ (w0 - w_star).T).T
    exact = [float(((at(r.start + r.lag) - at(r.start))[r.member] ** 2).sum()) for r in inc.itertuples()]
    assert np.allclose(inc.sq, exact, rtol=1e-9) and set(inc.member) == {0, 1}
    assert all(torch.allclose(p, q) for p, q in zip(a[0].parameters(), b[0].parameters()))   # written back


def test_paired_comparisons_recover_known_exponents():
    t = np.arange(1, 2001.)
    c = np.linspace(1, 3, 20)[:, None]
    sl = paired_late_slopes(t, c * t ** 0.42, c * t ** 0.25, t_min=200, n_boot=20).set_index('quantity')
    assert np.allclose(sl.value, [0.42, 0.25, 0.17]) and np.allclose(sl.ci_high - sl.ci_low, 0)
    bm, _ = _msd(brownian_walks(800, 400, seed=6), brownian_aged_msd)
    ct, _ = _msd(ctrw_walks(800, 400, 0.5, seed=7), ctrw_aged_msd, alpha=0.5)
    pa = paired_ageing(bm, ct, lag=3, ages=[30, 100, 300], n_boot=50)
    assert abs(pa.value[0]) < 0.05 and abs(pa.value[1] + 0.5) < 0.1 and pa.ci_low[2] > 0.2, pa


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match='overlap'):
        age_starts([10, 12], per_age=5, window=0.5)
    with pytest.raises(ValueError, match='positive'):
        IncrementRecorder([10], [0, 1])
    rec = IncrementRecorder([5], [1])
    with pytest.raises(ValueError, match='initial weights'):
        rec.update(3, torch.zeros(2, 3))
    tab = record_paths(brownian_walks(5, 30), IncrementRecorder([5, 10], [1, 2], 30))
    with pytest.raises(ValueError, match='lag 7 was not recorded'):
        ageing_exponent(tab, lag=7)
    with pytest.raises(ValueError, match='ages'):
        ageing_exponent(tab, lag=1, ages=[5, 50])
    with pytest.raises(ValueError, match='pairs'):
        paired_late_slopes(np.arange(1, 11.), np.ones((3, 10)), np.ones((4, 10)), t_min=2)
