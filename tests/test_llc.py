"""Ground-truth tests of fracsgd.llc: Aoyagi's exact DLN learning coefficients, the regular-model value d/2,
and the estimator's bookkeeping. Seeds are fixed; every statistical tolerance says why it is what it is."""
import math, warnings
from fractions import Fraction

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from fracsgd.llc import (LLCMeasurement, SGLDDivergenceError, aoyagi_dln_lambda, batch_means_se, calibrate_step_size,
                         default_n_beta, dln_table, estimate_llc, final_llc, reduced_rank_regression_lambda,
                         top_hessian_eigenvalue)

torch.set_num_threads(1)


# ---------- Aoyagi's formula (exact arithmetic, no tolerance)
def test_one_layer_dln_is_regular():
    for H0 in range(1, 9):
        for H1 in range(1, 9):
            for r in range(min(H0, H1) + 1):
                assert aoyagi_dln_lambda([H0, H1], r) == Fraction(H0 * H1, 2)


def test_two_layer_dln_matches_aoyagi_watanabe_2005_reduced_rank_regression():
    n = 0
    for M in range(1, 10):
        for H in range(1, 10):
            for N in range(1, 10):
                for r in range(min(M, H, N) + 1):
                    assert aoyagi_dln_lambda([M, H, N], r) == reduced_rank_regression_lambda(M, H, N, r), (M, H, N, r)
                    n += 1
    assert n > 1500


def test_aoyagi_worked_example_and_bounds():
    # [10, 8, 10], r = 4 by hand: Delta = (6, 4, 6), Sigma = all, l = 2, S = 16, a = 2:
    # (-16 + 4*20)/2 + 0 - (2/4)*64 + (24 + 24 + 36)/2 = 32 - 32 + 42 = 42
    assert aoyagi_dln_lambda([10, 8, 10], 4) == 42
    for sizes, r in [([12, 10, 8, 12], 3), ([24, 16, 16, 16, 24], 8), ([7, 3, 9, 4, 6], 2)]:
        lam = aoyagi_dln_lambda(sizes, r)
        d = sum(a * b for a, b in zip(sizes[:-1], sizes[1:]))
        regular_part = Fraction(-r * r + r * (sizes[0] + sizes[-1]), 2)   # dimension of rank-r maps / 2
        assert regular_part <= lam <= Fraction(d, 2)
    with pytest.raises(ValueError, match='rank'): aoyagi_dln_lambda([3, 4], 5)
    with pytest.raises(ValueError, match='layer_sizes'): aoyagi_dln_lambda([3], 1)


# ---------- calibration pieces
def test_top_hessian_eigenvalue_of_linear_regression():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(2000, 6, generator=g) * torch.linspace(0.5, 2.0, 6)   # anisotropic inputs
    m = nn.Linear(6, 2, bias=False); y = m(X).detach()
    exact = float(torch.linalg.eigvalsh(X.T @ X / len(X)).max())        # Hessian of 1/2 mean|Wx-y|^2 = E[xx^T] (x) I
    assert abs(top_hessian_eigenvalue(m, (X, y), 'regression', device='cpu', tol=1e-6, n_iter=200) / exact - 1) < 1e-3


def test_batch_means_se_on_ar1():
    rng = np.random.default_rng(1); phi, C, N = 0.8, 8, 40_000
    x = np.zeros((C, N)); e = rng.normal(size=(C, N))
    for t in range(1, N): x[:, t] = phi * x[:, t - 1] + e[:, t]
    se, _ = batch_means_se(x)
    exact = math.sqrt(1 / (1 - phi) ** 2 / (C * N))
    # 8 chains x 200 batches: the batch-means variance has ~1/sqrt(1600) = 2.5% relative sd -> SE within ~1.3%; 10% is 8 sd
    assert abs(se / exact - 1) < 0.10


# ---------- the estimator against exact values
def _regular(n=4000, seed=0):
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(3, 10, generator=g); X = torch.randn(n, 10, generator=g)
    m = nn.Linear(10, 3, bias=False); m.weight.data.copy_(W)
    return m, (X, X @ W.T)


def test_regular_model_gives_half_the_dimension():
    m, data = _regular()
    eps = calibrate_step_size(m, data, 'regression', localization=1.0, stiffness=0.05, device='cpu')
    r = estimate_llc(m, data, 'regression', step_size=eps, localization=1.0, n_chains=4, n_draws=1500, n_burnin=300,
                     batch_size=500, seed=0, device='cpu')
    # truth d/2 = 15; the calibrated step over-disperses the stiffest direction by ~eps*h/4 = 1.3% (an upper bound on
    # the bias), and 4 SE covers the Monte-Carlo error (seed 0).
    assert abs(r.llc - 15) < 4 * r.llc_se + 0.013 * 15, (r.llc, r.llc_se)
    assert r.diagnostics.mala_acceptance[0] > 0.9 and not r.diagnostics.problems[0]


def test_paired_baseline_agrees_with_full_baseline():
    m, (X, y) = _regular()
    y = y + 0.5 * torch.randn(y.shape, generator=torch.Generator().manual_seed(3))   # noisy targets: L_B(w*) varies
    kw = dict(step_size=0.05 / default_n_beta(4000), localization=1.0, n_chains=4, n_draws=600, n_burnin=200,
              batch_size=500, device='cpu')
    a = estimate_llc(m, (X, y), 'regression', baseline='full', seed=0, **kw)
    b = estimate_llc(m, (X, y), 'regression', baseline='paired', seed=0, **kw)
    # Same chains (same seed); the draws differ by L_B(w*) - L_n(w*), which has mean zero over minibatches, so the
    # estimates differ by a Monte-Carlo fluctuation: 3 standard errors. Pairing should not make the error larger.
    assert abs(a.llc - b.llc) < 3 * a.llc_se, (a.llc, b.llc, a.llc_se)
    assert b.llc_se <= 1.1 * a.llc_se


def test_small_dln_with_the_automatic_setting():
    # [8, 6, 8] at rank 3: Aoyagi lambda = 26 (d/2 = 48, so clearly singular). Automatic rules, half the steps.
    df = dln_table([([8, 6, 8], 3)], setting='auto', n_burnin=3000, n_draws=3000, device='cpu')
    # 6% = the 5% goal plus room for the shorter chains (MC error ~0.5%, seed 0)
    assert abs(df.rel_error[0]) < 0.06, df.to_dict('records')


# ---------- vectorization, errors, measurement
def test_ensemble_is_independent_of_chunking_and_matches_single_calls():
    m, data = _regular(n=1000)
    ens = [m] + [nn.Linear(10, 3, bias=False) for _ in range(2)]
    for i, e in enumerate(ens[1:], 1): e.weight.data.copy_(m.weight.data + 0.001 * i)
    kw = dict(step_size=1e-4, localization=1.0, n_chains=3, n_draws=50, n_burnin=10, batch_size=100, seed=5, device='cpu')
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')          # short chains are flagged as not equilibrated; irrelevant here
        by2 = estimate_llc(ens, data, 'regression', chunk_size=2, **kw)
        by3 = estimate_llc(ens, data, 'regression', chunk_size=3, **kw)
        alone = estimate_llc(ens[0], data, 'regression', **kw)
    # chains are seeded by (seed, model index, chain index): chunking must not change any number (float rounding aside)
    np.testing.assert_allclose(by2.per_chain, by3.per_chain, rtol=1e-5)
    np.testing.assert_allclose(by2.loss_trace, by3.loss_trace, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(by2.per_chain[0], alone.per_chain, rtol=1e-5)
    assert by2.llc.shape == (3,) and by2.per_chain.shape == (3, 3) and len(by2.diagnostics) == 3


def test_divergence_names_the_step_size():
    m, data = _regular(n=1000)
    with pytest.raises(SGLDDivergenceError, match='step_size=2'):
        estimate_llc(m, data, 'regression', step_size=2.0, n_draws=100, n_burnin=0, device='cpu')


def test_bad_input_is_named():
    m, (X, y) = _regular(n=100)
    with pytest.raises(ValueError, match='rows'): estimate_llc(m, (X, y[:10]), 'regression')
    with pytest.raises(ValueError, match='n_draws'): estimate_llc(m, (X, y), 'regression', n_draws=0)
    with pytest.raises(ValueError, match='loss'): estimate_llc(m, (X, y), 'hinge')
    with pytest.raises(ValueError, match='architecture'): estimate_llc([m, nn.Linear(10, 4)], (X, y), 'regression')


def test_measurement_leaves_training_state_untouched():
    torch.manual_seed(0)
    X = torch.randn(256, 4); y = (X.sum(1) > 0).long()
    net = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2)).train()
    F.cross_entropy(net(X), y).backward()
    state = {k: v.clone() for k, v in net.state_dict().items()}
    grads = [p.grad.clone() for p in net.parameters()]; rng = torch.get_rng_state()
    meas = LLCMeasurement((X, y), 'classification', every=100, n_draws=20, batch_size=64, device='cpu')
    v = meas(net)
    assert isinstance(v, float) and meas.every == 100
    assert net.training and torch.equal(rng, torch.get_rng_state())
    assert all(torch.equal(state[k], v2) for k, v2 in net.state_dict().items())     # incl. batch-norm running stats
    assert all(torch.equal(g, p.grad) for g, p in zip(grads, net.parameters()))
    import pandas as pd
    table = pd.DataFrame({'step': [100, 200, 300], 'llc': [1.0, np.nan, 3.0]})
    assert final_llc(table, last=10) == 2.0 and final_llc(table, last=1) == 3.0


def test_one_chain_direct_call_matches_the_vectorized_path():
    # one model x one chain runs a private copy of the model called directly; in an ensemble the same chain goes through
    # functional_call under vmap. Chains are seeded by (seed, model, chain), so both must give the same numbers (float
    # rounding aside). Batch norm checks that each model's buffers (running statistics) reach the direct call.
    _, (X, y) = _regular(n=600)
    def bn_net(i):
        torch.manual_seed(i)
        net = nn.Sequential(nn.Linear(10, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
        net.train(); net(X)                      # running statistics differ between the two nets
        return net
    nets = [bn_net(0), bn_net(1)]
    kw = dict(step_size=1e-4, localization=10.0, n_chains=1, n_draws=60, n_burnin=10, batch_size=100, seed=3, device='cpu')
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        together = estimate_llc(nets, (X, y), 'regression', chunk_size=2, **kw)      # K = 2: vmap
        apart = estimate_llc(nets, (X, y), 'regression', chunk_size=1, **kw)         # K = 1 per chunk: direct calls
    np.testing.assert_allclose(together.loss_trace, apart.loss_trace, rtol=1e-5, atol=1e-7)
    assert not np.allclose(together.loss_trace[0], together.loss_trace[1])           # the two nets really differ
    assert all(n.training for n in nets)


def test_progress_bar_counts_every_step(capsys):
    m, data = _regular(n=500)
    kw = dict(step_size=1e-4, n_chains=2, n_draws=50, n_burnin=10, batch_size=100, device='cpu')
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        estimate_llc(m, data, 'regression', progress=True, **kw)
        shown = capsys.readouterr().err
        estimate_llc(m, data, 'regression', **kw)
        silent = capsys.readouterr().err
    assert 'SGLD, 1 model(s) x 2 chains' in shown and '60/60' in shown      # 10 burn-in + 50 draws
    assert 'SGLD' not in silent                                               # off by default


def test_a_model_that_cannot_be_copied_still_works():
    # the lone-chain fast path copies the model; one holding a lock cannot be copied and must take the vmap path,
    # with the same numbers as a copyable twin (same weights, same seeds)
    import threading
    m, data = _regular(n=500)
    locked = nn.Linear(10, 3, bias=False); locked.weight.data.copy_(m.weight.data); locked.lock = threading.Lock()
    kw = dict(step_size=1e-4, n_chains=1, n_draws=40, n_burnin=5, batch_size=100, seed=1, device='cpu')
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        a, b = estimate_llc(m, data, 'regression', **kw), estimate_llc(locked, data, 'regression', **kw)
    np.testing.assert_allclose(a.loss_trace, b.loss_trace, rtol=1e-5, atol=1e-7)


def test_bad_input_is_named_with_the_progress_bar_on():
    # the bar must not hide the real error (a failure before the first step used to leave no bar to close)
    m, (X, y) = _regular(n=100)
    with pytest.raises(ValueError, match='architecture'):
        estimate_llc([m, nn.Linear(10, 4)], (X, y), 'regression', progress=True, device='cpu')
