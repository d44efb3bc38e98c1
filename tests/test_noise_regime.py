"""fracsgd.diffusion.noise_regime against closed forms: the twin distance of drift plus Brownian or
Ornstein–Uhlenbeck noise, growth exponents 1 and 0, Theorem 3.1 on Gaussian walks, and the SGD/GD pairing."""
import numpy as np
import pytest
import torch
from dataclasses import replace

from fracsgd.datasets.moons import load_moons
from fracsgd.nets.models import make_mlp
from fracsgd.diffusion.ageing import brownian_walks, ou_walks, ou_aged_msd
from fracsgd.diffusion.return_probability import gaussian_walks, return_curves, gaussian_return_probability
from fracsgd.diffusion.noise_regime import (SMOKE, WeightSnapshots, continue_from, converge, growth_exponent,
                                            log_steps, paired_difference, snapshots, theorem31)

T, D, d = 2000, 0.5, 3
TIMES = np.array([10, 30, 100, 300, 1000, 2000])


def _noise(kind: str, n: int = 400) -> np.ndarray:
    "Squared twin distances [n, TIMES] of drift + noise against drift alone: the drift cancels exactly."
    drift = np.linspace(0, 50, T + 1)[None, :, None] * np.ones((n, 1, d))
    noise = brownian_walks(n, T, d=d, D=D, seed=1) if kind == 'bm' else ou_walks(n, T, k=0.05, D=D, d=d, seed=2)
    sgd, gd = drift + noise, drift
    return ((sgd - gd) ** 2).sum(-1)[:, TIMES]


@pytest.mark.parametrize('kind', ['bm', 'ou'])
def test_twin_distance_closed_form(kind):
    truth = 2 * D * d * TIMES if kind == 'bm' else ou_aged_msd(0, TIMES, k=0.05, D=D, d=d)
    gap = paired_difference(TIMES, _noise(kind), np.zeros((400, len(TIMES))), n_boot=300)
    assert np.allclose(gap.value, truth, rtol=0.15)
    assert ((gap.ci_low < truth) & (truth < gap.ci_high)).mean() >= 0.8
    assert (gap.pairs == 400).all()


def test_growth_exponents():
    bm = growth_exponent(TIMES, _noise('bm'), t_min=100)
    ou = growth_exponent(TIMES, _noise('ou'), t_min=100)
    assert abs(bm['value'] - 1) < 0.05 and bm['ci_low'] < bm['value'] < bm['ci_high']
    assert abs(ou['value']) < 0.05                                   # 1/k = 20 steps ≪ 100: levelled off
    assert bm['decades'] == pytest.approx(np.log10(2000 / 100))


def test_paired_difference_refuses_unpaired():
    with pytest.raises(ValueError, match='must both be'):
        paired_difference(TIMES, np.zeros((3, 6)), np.zeros((4, 6)))


def test_theorem31_on_gaussian_walks():
    walks = gaussian_walks(200, 4000, 2, seed=3)
    steps = np.array(log_steps(4000, 40)[1:])
    R = np.linalg.norm(walks[:, steps], axis=-1)
    tau = np.unique(np.geomspace(1, 1000, 30).round().astype(int))
    curves = return_curves(walks, [1.0], tau=tau)
    th = theorem31(steps, R, curves, 1.0, lam=np.full(200, 2.0), t_min=100, n_boot=100).set_index('quantity')
    v = th.value
    # exact: d_walk = 2; the chi-square return probability's own log-log slope on the chosen window
    exact = gaussian_return_probability(tau, 1.0, 2)
    sel = (tau >= th.tau_min.iloc[0]) & (tau <= th.tau_max.iloc[0])
    d_s_exact = -2 * np.polyfit(np.log(tau[sel]), np.log(exact[sel]), 1)[0]
    assert abs(v['d_walk = 1 / late slope of R'] - 2) < 0.15
    assert abs(v['d_s from returns'] - d_s_exact) < 0.1 and abs(d_s_exact - 2) < 0.1
    assert th.ci_low['d_walk − 2 λ̄ / d_s'] < 0 < th.ci_high['d_walk − 2 λ̄ / d_s']
    assert v['2 λ̄ / d_s (Theorem 3.1)'] == pytest.approx(4 / v['d_s from returns'])
    no_lam = theorem31(steps, R, curves, 1.0, t_min=100, n_boot=20).set_index('quantity')
    assert np.isnan(no_lam.value['λ̄ (LLC)']) and np.isfinite(no_lam.value['d_walk · d_s / 2 (the λ Theorem 3.1 needs)'])
    with pytest.raises(ValueError, match='one unit per net'):
        theorem31(steps, R[:10], curves, 1.0)


def test_snapshots_and_log_steps():
    assert log_steps(1000, 4) == [0, 1, 10, 100, 1000]
    rec = WeightSnapshots([0, 2])
    for step in range(4):
        rec.update(step, torch.full((3, 5), float(step)))
    assert rec.steps == [0, 2] and rec.weights().shape == (3, 2, 5) and rec.weights()[0, 1, 0] == 2
    other = WeightSnapshots([0, 2])
    for step in range(3):
        other.update(step, torch.full((1, 5), -float(step)))
    chunks = type('Chunks', (), {'recorders': {(3,): other, (0, 1, 2): rec}})()   # as PerChunk holds them
    steps, w = snapshots(chunks)
    assert list(steps) == [0, 2] and w.shape == (4, 2, 5) and w[3, 1, 0] == -2 and w[0, 1, 0] == 2
    late = WeightSnapshots([0, 1])
    late.update(1, torch.zeros(1, 5))
    with pytest.raises(ValueError, match='different steps'):
        snapshots(type('Chunks', (), {'recorders': {(0,): rec, (1,): late}})())


def test_pairing_and_convergence():
    torch.set_num_threads(1)
    X, y, _ = load_moons(SMOKE.n_samples, SMOKE.noise, seed=0)
    nets = [make_mlp([2, *SMOKE.hidden, 2], seed=s) for s in range(2)]
    once = converge(nets, (X, y), replace(SMOKE, tol=10.0))                  # any change is below 1000%
    assert list(once.step) == [0, SMOKE.block] and once.converged.iloc[-1]
    never = converge([make_mlp([2, 8, 2], seed=0)], (X, y), replace(SMOKE, tol=0.0, max_steps=3 * SMOKE.block))
    assert never.step.max() == 3 * SMOKE.block and not never.converged.any()
    run = lambda b: continue_from(nets, (X, y), 0.05, b, 30, ages=(10,), lags=(1, 5), proj_dim=3,
                                  record=log_steps(30, 4), seed=7)
    gd, same, sgd = run(SMOKE.n_samples), run(SMOKE.n_samples), run(8)
    assert np.abs(gd['snaps'] - same['snaps']).max() < 1e-5                 # all the data at every step: the same run
    assert np.abs(gd['snaps'] - sgd['snaps'])[:, -1].max() > 1e-3
    assert np.array_equal(gd['snaps'][:, 0], sgd['snaps'][:, 0])             # both start at the same weights
    assert gd['paths'].shape == (2, 31, 3) and set(gd['increments'].lag) == {1, 5}
    assert np.allclose(gd['paths'][:, 0], 0)
