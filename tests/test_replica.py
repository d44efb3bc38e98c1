"""Tests of the replica-exchange chapter: MALA with swaps against closed forms (Gaussian moments, the masses of a
mixture's modes, detailed balance of a swap), the moons net's posterior, and clear errors for bad input."""
import math

import numpy as np
import pytest
import torch
from torch import nn

from fracsgd.datasets.moons import load_moons
from fracsgd.nets.models import make_mlp
from fracsgd.posterior.replica import (GaussianTarget, MixtureTarget, NetPosterior, ReplicaSettings, convergence_table,
                                       default_prior_std, geometric_ladder, replica_exchange, swap_log_acceptance)

torch.set_num_threads(1)
draws = lambda run: torch.stack(run.recorded, 1)                     # [chains, draws, d]


def test_gaussian_target_moments_match_the_closed_form():
    g = GaussianTarget([1.0, -2.0], [[4.0, 1.0], [1.0, 2.0]])
    s = ReplicaSettings(betas=(1.0, 0.5, 0.0), step_size=0.3, n_burnin=200, n_draws=300, thin=2, seed=0)
    run = replica_exchange(g, torch.zeros(64, 2, dtype=torch.float64), s, record=lambda x: x.clone())
    x = draws(run).reshape(-1, 2).numpy()
    mean, cov = g.moments()
    assert np.allclose(x.mean(0), mean, atol=0.03), (x.mean(0), mean)
    assert np.allclose(np.cov(x.T), cov, atol=0.03), (np.cov(x.T), cov)
    assert 0.4 < run.accept[0] < 0.75 and (run.swap > 0.2).all(), (run.accept, run.swap)
    assert run.log_lik.shape == (64, 300) and np.isfinite(run.energy).all()


def test_exchange_recovers_mixture_masses_that_mala_alone_misses():
    mix = MixtureTarget([0.25, 0.75], [[-3.0], [3.0]])
    x0 = torch.full((16, 1), -3.0, dtype=torch.float64)             # every chain in the light mode
    base = ReplicaSettings(betas=(1.0,), step_size=0.05, n_burnin=200, n_draws=400, thin=2, seed=1)
    stuck = np.stack([mix.mode_of(v) for v in replica_exchange(mix, x0, base, record=lambda x: x.clone()).recorded], 1)
    assert (stuck == 0).all()                                      # 6 standard deviations apart: MALA never crosses
    run = replica_exchange(mix, x0, base.replace(betas=geometric_ladder(6, 0.02)), record=lambda x: x.clone())
    labels = np.stack([mix.mode_of(v) for v in run.recorded], 1)   # [chains, draws]
    assert abs((labels == 1).mean() - 0.75) < 0.05, (labels == 1).mean()
    table = convergence_table(labels, 2, run.energy)
    assert (table.rhat < 1.1).all(), table
    assert table.mass.iloc[:2].sum() == pytest.approx(1)


def test_swap_acceptance_is_the_ratio_of_the_products_and_keeps_each_rung_exact():
    # the log acceptance is log π_i(x_j) π_j(x_i) − log π_i(x_i) π_j(x_j) for π_β ∝ prior · lik^β
    rng = np.random.default_rng(0)
    for _ in range(20):
        bi, bj = np.sort(rng.uniform(0, 1, 2))[::-1]
        li, lj, pi, pj = rng.normal(size=4) * 5
        # pi, pj are the priors of x_i and x_j: the prior terms cancel, only the likelihoods move
        direct = (pj + bi * lj) + (pi + bj * li) - (pi + bi * li) - (pj + bj * lj)
        assert swap_log_acceptance(li, lj, bi, bj) == pytest.approx(direct)
        assert swap_log_acceptance(lj, li, bi, bj) == pytest.approx(-direct)       # the reverse move
    # exact draws on two rungs of a Gaussian target, then a swap: rung 0 must stay exactly π_1 (a wrong sign fails)
    g = GaussianTarget([2.0], [[3.0]])
    (m1, v1), (m0, v0) = [(float(a[0]), float(b[0, 0])) for a, b in (g.moments(1.0), g.moments(0.2))]
    n = 200_000
    x1, x0 = m1 + math.sqrt(v1) * rng.normal(size=n), m0 + math.sqrt(v0) * rng.normal(size=n)
    ll = lambda x: -0.5 * 3.0 * (x - 2.0) ** 2
    def after_swap(sign):
        ok = np.log(rng.uniform(size=n)) < sign * swap_log_acceptance(ll(x1), ll(x0), 1.0, 0.2)
        return np.where(ok, x0, x1)
    good, bad = after_swap(1), after_swap(-1)
    assert abs(good.mean() - m1) < 0.01 and abs(good.var() - v1) < 0.01, (good.mean(), good.var(), m1, v1)
    assert abs(bad.mean() - m1) > 0.05 or abs(bad.var() - v1) > 0.05


def test_net_posterior_is_the_nets_cross_entropy_and_the_default_init_variance():
    X, y, _ = load_moons(64, 0.2, seed=0)
    net = make_mlp([2, 8, 8, 2], seed=3)
    t = NetPosterior(net, X, y)
    w = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
    z = t.whiten(w)[None]
    assert torch.allclose(t.weights(z)[0], w)
    expect = -64 * nn.functional.cross_entropy(net(X), y)
    assert t.log_lik(z).item() == pytest.approx(expect.item(), rel=1e-5)
    std = default_prior_std(net)
    assert std[0].item() == pytest.approx(1 / math.sqrt(6)) and std[-1].item() == pytest.approx(1 / math.sqrt(24))
    wide = make_mlp([2, 400, 2], seed=0)                            # the default init's variance, measured
    first = wide.layer1[0].weight.detach().reshape(-1)
    assert first.var().item() == pytest.approx(1 / 6, rel=0.1)
    assert NetPosterior(net, X, y, prior_scale=2.0).std[0].item() == pytest.approx(2 / math.sqrt(6))


def test_a_short_net_run_records_cold_draws_and_diagnostics():
    X, y, _ = load_moons(64, 0.2, seed=0)
    t = NetPosterior(make_mlp([2, 8, 8, 2], seed=0), X, y)
    s = ReplicaSettings(betas=geometric_ladder(3, 0.3, prior=True), step_size=0.01, n_burnin=20, n_draws=5, thin=2)
    w = torch.stack([torch.cat([p.detach().reshape(-1) for p in make_mlp([2, 8, 8, 2], seed=i).parameters()])
                     for i in range(3)])
    run = replica_exchange(t, t.whiten(w), s, record=lambda z: t.outputs(z, X[:5]).softmax(-1))
    assert draws(run).shape == (3, 5, 5, 2) and run.log_lik.shape == (3, 5)
    assert len(run.accept) == 4 and len(run.swap) == 3 and len(run.steps) == 4 and run.final.shape == (3, 4, len(w[0]))


def test_bad_input_raises_a_clear_error():
    with pytest.raises(ValueError, match='start at 1'):
        ReplicaSettings(betas=(0.5, 0.1))
    with pytest.raises(ValueError, match='fall strictly'):
        ReplicaSettings(betas=(1.0, 0.5, 0.7))
    with pytest.raises(ValueError, match='step_size'):
        ReplicaSettings(step_size=0)
    with pytest.raises(ValueError, match='n_draws'):
        ReplicaSettings(n_draws=0)
    with pytest.raises(ValueError, match='ladder'):
        geometric_ladder(1, 0.1)
    g = GaussianTarget([0.0], [[1.0]])
    with pytest.raises(ValueError, match='x0'):
        replica_exchange(g, torch.zeros(3), ReplicaSettings())
    with pytest.raises(ValueError, match='one value per state'):
        replica_exchange(type('T', (), {'log_prior': lambda self, x: x, 'log_lik': lambda self, x: x.sum(-1)})(),
                         torch.zeros(2, 3), ReplicaSettings())
    with pytest.raises(ValueError, match='prior_scale'):
        NetPosterior(make_mlp([2, 4, 2]), torch.zeros(5, 2), torch.zeros(5, dtype=torch.long), prior_scale=0)
    with pytest.raises(ValueError, match='weights'):
        MixtureTarget([0.5, 0.6], [0.0, 1.0])
    with pytest.raises(ValueError, match='labels'):
        convergence_table(np.zeros((1, 10), int), 2)
    with pytest.raises(ValueError, match='nn.Linear'):
        default_prior_std(nn.Sequential(nn.Conv1d(1, 1, 3)))
