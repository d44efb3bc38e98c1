"""Cross-check of fracsgd.llc.estimate.estimate_llc against devinterp 2.0.1: same model, data and SGLD hyperparameters.

Conventions matched (read from devinterp/slt/sampling.py, sampler.py, llc.py and optim/sgmcmc.py):
- update: w <- w - (lr/2) (n_beta grad L_B + localization (w - w*)) + sqrt(lr) N(0, 1), L_B the batch-mean
  loss;
- the loss of a step is recorded before its update, and devinterp averages every step including burn-in, so we
  use no burn-in and one step between draws (then both average the same steps);
- devinterp's baseline is the mean over `num_init_loss_batches` shuffled minibatches (drop_last); with n
  divisible by the batch size and n / batch_size batches this is exactly one pass over the data, i.e. our
  full-data L_n(w*).
"""
import math, tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from fracsgd.llc.estimate import estimate_llc
from fracsgd.llc.result import batch_means_se
from fracsgd.llc.sgld import SGLDSettings, default_n_beta

devinterp_llc = pytest.importorskip('devinterp.slt.llc').llc
datasets = pytest.importorskip('datasets')


def _trained_mlp(X, y, seed=0):
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 2))
    opt = torch.optim.Adam(net.parameters(), lr=0.03)
    for _ in range(1500):                       # full-batch training to (near) a local minimum
        opt.zero_grad()
        F.cross_entropy(net(X), y).backward()
        opt.step()
    return net


def test_matches_devinterp_within_monte_carlo_error():
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    n, B = 512, 64
    X = torch.randn(n, 2, generator=g)
    y = ((X[:, 0] * X[:, 1]) > 0).long()
    y[torch.randperm(n, generator=g)[:40]] ^= 1                 # some label noise: a non-zero loss at w*
    net = _trained_mlp(X, y)
    n_beta = default_n_beta(n)
    settings = SGLDSettings(step_size=2e-4, localization=100.0, n_chains=4, n_draws=400, n_burnin=0,
                            steps_between_draws=1, batch_size=B, n_beta=n_beta, seed=0)

    ours = estimate_llc(net, (X, y), 'classification', settings, device='cpu')

    # the row index as 2 tokens
    ds = datasets.Dataset.from_dict({'input_ids': [[i, i] for i in range(n)]}).with_format('torch')
    def loss_fn(model, input_ids):                  # -> per-"token" loss (batch, 1)
        idx = input_ids[:, 0]
        return F.cross_entropy(model(X[idx]), y[idx], reduction='none')[:, None]
    with tempfile.TemporaryDirectory() as d:        # fresh output_path: no cache reuse
        out = devinterp_llc(net, ds, {}, lr=settings.step_size, n_beta=n_beta,
                            localization=settings.localization, num_chains=settings.n_chains,
                            num_draws=settings.n_draws, num_burnin_steps=0, num_steps_bw_draws=1,
                            batch_size=B, num_init_loss_batches=n // B, loss_fn=loss_fn, device='cpu',
                            output_path=str(Path(d) / 'samples.zarr'))
        dev_trace = np.asarray(out.loss_trace.values, dtype=float)               # (chain, step)
        dev_init = float(out.init_loss)
        dev_llc = float(out.llc_mean)

    assert abs(dev_init - ours.baseline) < 1e-5 * max(1.0, abs(ours.baseline))   # same baseline, L_n(w*)
    dev_se, _ = batch_means_se(n_beta * (dev_trace - dev_init))
    diff, tol = ours.llc - dev_llc, 3 * math.hypot(ours.llc_se, dev_se)
    # Independent chains (different seeds), same target: the difference is ~N(0, se_ours^2 + se_dev^2); 3
    # combined standard errors fails a correct implementation with probability ~0.3%. The seeds are fixed, so
    # the test is deterministic; it fails if either the update, the temperature, the baseline or the averaging
    # differ.
    assert abs(diff) < tol, (ours.llc, ours.llc_se, dev_llc, dev_se)
    assert ours.llc > 0 and ours.llc_se < 0.1 * ours.llc   # a meaningful comparison, not two noisy zeros


def test_rmsprop_sgld_matches_devinterp_step_for_step():
    # devinterp's SGMCMC.rmsprop_sgld (optim/sgmcmc.py, preconditioner.py) and our sampler with
    # preconditioner='rmsprop': one chain of a linear model (one weight tensor, so both draw the noise in the
    # same order from the same generator), full-batch gradients, 300 steps. A small rmsprop eps makes the
    # preconditioner differ between coordinates. Agreement to float32 rounding.
    from devinterp.optim.sgmcmc import SGMCMC
    from fracsgd.nets.models import dln_data, make_dln
    from fracsgd.llc.sgld import SGLDSampler
    from fracsgd.nets.stack import ModelStack, as_data, chain_seed, resolve_loss
    torch.set_num_threads(1)
    model = make_dln([10, 3], 3, seed=0)
    X, y = dln_data(model, 500, seed=1)
    y = y + 0.3 * torch.randn(y.shape, generator=torch.Generator().manual_seed(2))   # a gradient at w*
    nb, gamma, eps_rms = default_n_beta(500), 5.0, 1e-2
    s = SGLDSettings(step_size=0.05 * eps_rms / nb, localization=gamma, n_chains=1, n_draws=300, n_burnin=0,
                     batch_size=None, n_beta=nb, seed=3, diag_every=0, preconditioner='rmsprop',
                     rmsprop_eps=eps_rms)
    weights = lambda params, buffers: next(iter(params.values()))[0].detach().clone().flatten()
    ours = SGLDSampler(ModelStack([model], 'cpu'), resolve_loss('regression'), as_data((X, y), 'cpu'), s,
                       record=weights).sample([0]).recorded

    theirs = make_dln([10, 3], 3, seed=0)
    (p,) = list(theirs.parameters())
    opt = SGMCMC.rmsprop_sgld([p], lr=s.step_size, localization=gamma, nbeta=nb, alpha=0.99, eps=eps_rms)
    gen = torch.Generator().manual_seed(chain_seed(s.seed, 0, 0, 0))    # our noise stream of chain (0, 0)
    for t in range(s.n_steps):
        assert torch.allclose(p.detach().flatten(), ours[t], rtol=0, atol=1e-5), t
        opt.zero_grad()
        (0.5 * (theirs(X) - y).pow(2).sum(1)).mean().backward()
        opt.step(noise_generator=gen)
    assert (ours[-1] - ours[0]).abs().max() > 1e-2                       # the chain moved
