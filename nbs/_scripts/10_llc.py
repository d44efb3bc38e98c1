# %% [markdown]
# # LLC estimation
#
# > The local learning coefficient of any `nn.Module`, or of many at once, from SGLD draws: the estimate with its Monte-Carlo error and diagnostics, step-size calibration, one automatic setting, and a measurement for the displacement recorder.

# %%
#| default_exp llc.estimate

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import math, warnings

import numpy as np
import pandas as pd
import torch
from torch import nn
from tqdm.auto import tqdm

from fracsgd.nets.stack import ModelStack, as_data, batched_loss, full_data_loss, where_to_compute, resolve_loss
from fracsgd.llc.sgld import SGLDSampler, SGLDSettings, default_n_beta, shared_settings
from fracsgd.llc.settings import PAPER_PRESET
from fracsgd.llc.criticality import GradientDrop, full_data_gradient
from fracsgd.llc.result import ESS_MIN, RHAT_LIMIT, LLCResult, _assemble, stronger_localization, with_localization_interval

# %%
import copy, time
import matplotlib.pyplot as plt
from fracsgd.nets.models import dln_data, make_dln
import torch.nn.functional as F
from fracsgd.llc.sgld import SGLDDivergenceError
torch.set_num_threads(1)   # the models on this page are tiny: one thread avoids contention on small CPUs


# %% [markdown]
# ## What is estimated
#
# Lau et al. (2024) define the local learning coefficient $\lambda(w^*)$ of a parameter $w^*$ through the volume
# of nearly-as-good parameters around it, and estimate it with a WBIC-style average (their eq. 11 and Algorithm
# 1, appendix G):
#
# $$\hat\lambda(w^*) = n\beta\,\big(\mathbb{E}_w[L_n(w)] - L_n(w^*)\big),\qquad n\beta = \frac{n}{\log n},$$
#
# where $L_n$ is the mean per-sample negative log-likelihood on the $n$ training samples and the expectation is
# over the tempered posterior localized at $w^*$, sampled by SGLD as the [SGLD chapter](sgld.html) describes;
# the [model stack](stack.html) lets one call sample every chain of many models. The settings keep the paper's
# names: step size $\epsilon$ (`step_size`), localization $\gamma$ (`localization`), chains (`n_chains`), draws
# (`n_draws`), burn-in (`n_burnin`), steps between draws (`steps_between_draws`), batch size (`batch_size`) and
# inverse temperature $n\beta$ (`n_beta`). The [DLN chapter](dln.html) checks the estimator against exact
# learning coefficients.
#

# %% [markdown]
# ## The estimator
#
# `estimate_llc` takes one model or a list of same-architecture models (an ensemble), the data
# `(inputs, targets)`, a per-sample loss and the SGLD settings: an `SGLDSettings`, keyword changes to it, or
# both (`estimate_llc(model, data, 'regression', calibrate_at_curvature(model, data, 'regression'), n_chains=8)`). It
# evaluates the baseline $L_n(w^*)$ on the full data (unless paired), samples every chain, drops the burn-in and
# returns an `LLCResult`: the estimate, its Monte-Carlo standard error, per-chain values, loss traces, the
# baseline, one row of diagnostics per model, the per-step diagnostics, and the settings. Models go `chunk_size`
# at a time (default: as many as give 256 chains) to bound memory; a chain is seeded by `(seed, model, chain)`,
# so chunking changes no number.
#
# Models are evaluated in **eval mode**: batch-norm layers use their running statistics (and are not updated),
# dropout is off. This makes the loss a fixed function of the weights, as the posterior requires. Each model
# gets its mode back afterwards.
#
# **Where it runs.** With no `device` named, the estimate runs on the models' own device and in their floating
# dtype (`placement` in the [stack chapter](stack.html)): the models and the data must be on one device, and
# data elsewhere are refused with a message naming both, not copied. A named `device` is where the sampling
# runs: the weights are copied there (the models themselves never move), and the data must already be there.
# The rule is that nothing is moved behind the caller's back. The same holds for every function of this
# chapter that takes a `device`: `top_hessian_eigenvalue`, `calibrate_step_size`, `calibrate_at_curvature`,
# `estimate_llc_until_stationary` and `LLCMeasurement` (and `localization_sweep`, `localization_sensitivity` of
# the [localization chapter](localization.html)).

# %%
#| export
def estimate_llc(model_or_models, data, loss='classification', settings: SGLDSettings | list | None = None, *,
                 device=None, chunk_size: int | None = None, progress: bool = False, eval_batch: int = 4096,
                 **changes) -> LLCResult:
    """The LLC of a model, or of each of a list of same-architecture models, by SGLD under `settings`
    (default `SGLDSettings()`) with keyword `changes` to it. `settings` may be a list, one per model, whose step
    sizes and localization differ (as `calibrate_at_curvature` gives them net by net): all models still run in one pass.
    `progress=True` shows a bar over all SGLD steps; `eval_batch` images at a time enter the baseline L_n(w*)
    (lower it for large images: its activations are held for that many at once)."""
    single = not isinstance(model_or_models, (list, tuple, nn.ModuleList))
    models = [model_or_models] if single else list(model_or_models)
    if not models or not all(isinstance(m, nn.Module) for m in models):
        raise ValueError("model_or_models must be an nn.Module or a non-empty list of them")
    device, X, y = where_to_compute(models, data, device, loss)              # nothing is moved
    per_model = isinstance(settings, (list, tuple))
    if per_model and len(settings) != len(models):
        raise ValueError(f"{len(settings)} settings for {len(models)} models: give one per model, or one for all")
    filled = [(s or SGLDSettings()).replace(**changes) for s in (settings if per_model else [settings])]
    filled = [s.replace(n_beta=s.n_beta or default_n_beta(len(X))) for s in filled]
    settings, own = shared_settings(filled)                    # own: None where every model shares them
    loss_fn = resolve_loss(loss)
    modes = [m.training for m in models]
    try:
        for m in models:
            m.eval()                                   # batch norm uses running statistics, dropout is off
        stack = ModelStack(models, device)             # a copy of the weights on `device`; the models stay
        sampler = SGLDSampler(stack, loss_fn, (X, y), own or settings)
        runs, baselines, gradient_sq, drops = _sample_in_chunks(sampler, chunk_size or max(1, 256 // settings.n_chains), progress,
                                             eval_batch)
    finally:
        for m, mode in zip(models, modes):
            m.train(mode)
    res = _assemble(runs, torch.cat(baselines).numpy(), settings, single, stack.flat.shape[1],
                    gradient_sq=torch.cat(gradient_sq).numpy(), drops=torch.cat(drops).numpy(),
                    warn=not settings.systematic)
    if not settings.systematic:
        return res
    with warnings.catch_warnings(record=True):                   # its problems join the combined row's
        warnings.simplefilter('always')
        strong = [stronger_localization(s) for s in own] if own else stronger_localization(settings)
        stronger = estimate_llc(model_or_models, data, loss, strong, device=device,
                                chunk_size=chunk_size, progress=progress, eval_batch=eval_batch)
    return with_localization_interval(res, stronger)

def _sample_in_chunks(sampler: SGLDSampler, per: int, progress: bool,
                      eval_batch: int = 4096) -> tuple[list, list, list, list]:
    """Run the sampler on `per` models at a time; return the runs, each model's full-data loss at w*, the squared
    norm of its full-data gradient g there (in slices of a quarter of `eval_batch`: a backward pass holds its
    activations) and D = -n_beta E[g.(w - w*)] over its chains' draws (the criticality chapter)."""
    stack, s = sampler.stack, sampler.settings
    runs, baselines, gradient_sq, drops = [], [], [], []
    desc = f'SGLD, {len(stack)} model(s) x {s.n_chains} chains'
    total = math.ceil(len(stack) / per) * s.n_steps
    with tqdm(total=total, disable=not progress, desc=desc, unit='step') as bar:
        for start in range(0, len(stack), per):
            ids = list(range(start, min(start + per, len(stack))))
            buffers = {k: v[ids] for k, v in stack.buffers.items()}
            params = stack.params(stack.flat[ids])
            base = full_data_loss(sampler.f, params, buffers, sampler.X, sampler.y, eval_batch)  # [ids]
            if not torch.isfinite(base).all():
                bad = [ids[i] for i in (~torch.isfinite(base)).nonzero().flatten().tolist()]
                raise ValueError(f"the loss at w* is not finite for model(s) {bad}")
            grad = full_data_gradient(sampler.f, stack, stack.flat[ids], buffers, sampler.X, sampler.y,
                                      max(1, eval_batch // 4))
            sampler.record = GradientDrop(grad, stack.flat[ids], s.n_chains)
            run = sampler.sample(ids, bar)
            runs.append(run._replace(recorded=None))
            baselines.append(base.cpu())
            gradient_sq.append(grad.pow(2).sum(1).cpu())
            drops.append(-sampler.n_beta * sampler.record.mean().cpu())
    sampler.record = None
    return runs, baselines, gradient_sq, drops


# %% [markdown]
# ### A regular model: $\lambda = d/2$
#
# Linear regression $y = Wx$ with $W\in\mathbb R^{3\times 10}$ and Gaussian noise (a one-layer DLN of the
# [models chapter](models.html)) is a regular model, so its
# learning coefficient is half the number of parameters, $d/2 = 15$ (Lau et al. 2024, sec. 3). We sample at the
# true $W$ with the step size $\epsilon = 0.05/(n\beta\,h_{\max})$ (see *Calibration* below; here
# $h_{\max}\approx 1$ because $x\sim\mathcal N(0,I)$).

# %%
reg = make_dln([10, 3], 3, seed=0)                     # one layer: linear regression at its true weights
X_reg, y_reg = dln_data(reg, 4000)
nb = default_n_beta(len(X_reg))
t0 = time.time()
res = estimate_llc(reg, (X_reg, y_reg), 'regression', step_size=0.05 / nb, localization=1.0, n_chains=4,
                   n_draws=2000, n_burnin=200, batch_size=500, seed=0)   # 600 draws: ESS < 100, flagged
print(f"LLC = {res.llc:.2f} +- {res.llc_se:.2f} (truth 15), {time.time() - t0:.1f} s")
# tolerance: 4 standard errors plus the ~1.3% upward discretization bias expected at eps*h = 0.05
# (see Calibration)
assert abs(res.llc - 15) < 4 * res.llc_se + 0.02 * 15, res.llc
assert res.per_chain.shape == (4,) and res.loss_trace.shape == (4, 2200) and res.baseline == 0.0
assert not res.diagnostics.problems[0] and res.diagnostics.mala_acceptance[0] > 0.9
assert res.settings.n_beta == nb and res.settings.n_draws == 2000
res.diagnostics

# %%
fig, ax = plt.subplots(1, 2, figsize=(10, 3.2))
for c, tr in enumerate(res.loss_trace):
    ax[0].plot(nb * (tr - res.baseline), lw=0.6, label=f'chain {c}')
ax[0].axvline(200, color='k', ls=':', label='end of burn-in')
ax[0].axhline(15, color='r', ls='--', label='d/2')
ax[0].set(xlabel='SGLD step', ylabel=r'$n\beta\,(L_B(w_t)-L_n(w^*))$', title='loss trace (nats, scaled)')
ax[0].legend(fontsize=7)
dt = res.diagnostic_trace
ax[1].plot(dt.step, dt.mala_acceptance, '.', ms=3)
ax[1].set(xlabel='SGLD step', ylabel='MALA acceptance', ylim=(0, 1.05), title='acceptance (diagnostic only)')
plt.tight_layout()

# %% [markdown]
# ### Ensembles: many models in one call
#
# Pass a list of models and every chain of every model runs in the same vectorized step. The first model of an
# ensemble gets exactly the chains of a single-model call, whatever the chunking, and one model gives the shapes
# of an ensemble of one without the model axis:

# %%
ens = [copy.deepcopy(reg) for _ in range(3)]
for i, m in enumerate(ens):
    m[0].weight.data += 0.01 * i
few = SGLDSettings(step_size=0.05 / nb, localization=1.0, n_chains=2, n_draws=100, n_burnin=20,
                   batch_size=500, seed=1)
with warnings.catch_warnings():
    # models 1, 2 are off the minimum: flagged, that's fine here
    warnings.simplefilter('ignore')
    many = estimate_llc(ens, (X_reg, y_reg), 'regression', few, chunk_size=2)
    at_once = estimate_llc(ens, (X_reg, y_reg), 'regression', few, chunk_size=3)
    alone = estimate_llc(ens[0], (X_reg, y_reg), 'regression', few)
assert many.llc.shape == (3,) and many.per_chain.shape == (3, 2) and len(many.diagnostics) == 3
assert many.loss_trace.shape == (3,) + alone.loss_trace.shape and np.ndim(alone.llc) == 0
assert np.allclose(many.per_chain, at_once.per_chain, rtol=1e-5)
assert np.allclose(many.per_chain[0], alone.per_chain, rtol=1e-5)
many.diagnostics[['model', 'llc', 'llc_se', 'baseline', 'mala_acceptance', 'problems']]

# %% [markdown]
# ### Bad input and divergence
#
# A step size far too large makes SGLD explode; the error names the step size and suggests a smaller one. Empty
# or mismatched data and invalid settings are refused with a message naming the problem. A parameter that is not
# a minimum gives a negative estimate, which is flagged.

# %%
try:
    estimate_llc(reg, (X_reg, y_reg), 'regression', step_size=1.0, n_draws=50, n_burnin=0)
    raise AssertionError
except SGLDDivergenceError as e:
    print(e)
    assert 'step_size=1' in str(e) and e.phase == 'sampling'
for bad, word in [(dict(n_chains=0), 'n_chains'), (dict(step_size=-1), 'step_size'),
                  (dict(baseline='some'), 'baseline'), (dict(stepsize=1e-3), 'unknown')]:
    try:
        estimate_llc(reg, (X_reg, y_reg), 'regression', **bad)
        raise AssertionError
    except ValueError as e:
        assert word in str(e)
try:
    estimate_llc(reg, (X_reg, y_reg[:5]), 'regression')
    raise AssertionError
except ValueError as e:
    assert 'rows' in str(e)
off = copy.deepcopy(reg)
off[0].weight.data += 0.3                                             # far from the minimum
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter('always')
    r_off = estimate_llc(off, (X_reg, y_reg), 'regression', step_size=0.05 / nb, n_chains=2, n_draws=100,
                         n_burnin=0, batch_size=500)
assert r_off.llc < 0 and 'negative LLC' in r_off.diagnostics.problems[0]
assert any('negative LLC' in str(x.message) for x in w)


# %% [markdown]
# ### Draws extended until the chains are stationary
#
# A run that fails only the stationarity checks (drift $z$, $\hat R$, ESS) may just be too short.
# `estimate_llc_until_stationary` doubles the draws, up to `max_draws`, until those checks pass, and returns the
# last estimate. Chains are seeded by `(seed, model, chain)`, so a longer run repeats the shorter one and
# continues it. It cannot cure the other problems: a chain held far out by the localization stays there however
# long it runs.

# %%
#| export
def _stationary(row) -> bool:
    "Whether one diagnostics row passes the drift, R-hat and ESS checks."
    ok = lambda v, bad: not (np.isfinite(v) and bad(v))
    return (ok(row.drift_z, lambda z: abs(z) > 3) and ok(row.rhat, lambda r: r > RHAT_LIMIT)
            and ok(row.ess, lambda e: e < ESS_MIN))

def estimate_llc_until_stationary(model, data, loss='classification', settings: SGLDSettings | None = None, *,
                                  max_draws: int = 64_000, device=None, **changes) -> LLCResult:
    """`estimate_llc` of one model with its draws doubled, up to `max_draws`, until the drift test, R-hat and
    ESS pass; a warning says when they still fail at `max_draws`."""
    settings = (settings or SGLDSettings()).replace(**changes)
    while True:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            res = estimate_llc(model, data, loss, settings, device=device)
        if _stationary(res.diagnostics.iloc[0]) or 2 * settings.n_draws > max_draws:
            break
        settings = settings.replace(n_draws=2 * settings.n_draws)
    for w in caught:                                           # the last run's warnings reach the user
        warnings.warn(w.message, w.category, stacklevel=2)
    if not _stationary(res.diagnostics.iloc[0]):
        warnings.warn(f"estimate_llc_until_stationary: still not stationary at {settings.n_draws} draws "
                      f"(max_draws={max_draws})", stacklevel=2)
    return res


# %% [markdown]
# The regular model above with only 300 draws fails the R-hat and ESS checks; extended to 1200, it passes them,
# at $d/2$:

# %%
with warnings.catch_warnings(record=True) as heard:
    warnings.simplefilter('always')
    extended = estimate_llc_until_stationary(reg, (X_reg, y_reg), 'regression', step_size=0.05 / nb,
                                             localization=1.0, n_chains=4, n_draws=300, n_burnin=200,
                                             batch_size=500, seed=0, max_draws=4800)
d_ext = extended.diagnostics.iloc[0]
assert extended.settings.n_draws > 300 and _stationary(d_ext) and not d_ext.flagged
assert abs(extended.llc - 15) < 4 * extended.llc_se + 0.02 * 15         # tolerance as for the run above
extended.settings.n_draws, round(extended.llc, 2), round(d_ext.ess)


# %% [markdown]
# ## Calibration
#
# The step size is the setting that matters most (Lau et al. 2024, app. H.1). In a direction where $n\beta L_n$
# has curvature $h$, the SGLD update is an AR(1) process whose stationary variance is $1/(h(1-\epsilon h/4))$
# instead of $1/h$: the stiffest direction is over-dispersed by about $\epsilon h/4$, and the chain becomes
# unstable at $\epsilon h = 4$. So we set $\epsilon = c/(n\beta\,h_{\max}+\gamma)$ with a *stiffness* $c$, where
# $h_{\max}$ is the top eigenvalue of the Hessian of $L_n$ at $w^*$, found by power iteration on Hessian-vector
# products (double backward; no Hessian is formed). The random start vector of the power iteration takes the
# dtype of the model's weights.

# %%
#| export
def top_hessian_eigenvalue(model: nn.Module, data, loss='classification', *, n_iter: int = 50,
                           tol: float = 1e-3, max_samples: int | None = 8192, seed: int = 0,
                           device=None) -> float:
    """Largest Hessian eigenvalue of the mean per-sample loss L_n at the model's weights.
    By power iteration on Hessian-vector products."""
    device, X, y = where_to_compute([model], data, device, loss)             # nothing is moved
    if max_samples and len(X) > max_samples:
        keep = torch.randperm(len(X), generator=torch.Generator().manual_seed(seed))[:max_samples].to(device)
        X, y = X[keep], y[keep]
    was_training = model.training
    try:
        model.eval()
        stack = ModelStack([model], device)            # a copy of the weights on `device`; the model stays
        f = batched_loss(stack.template, resolve_loss(loss))
        w = stack.flat.clone().requires_grad_(True)                                 # [1, params]
        loss_sum = f(stack.params(w), stack.buffers, X[None], y[None]).sum()
        g, = torch.autograd.grad(loss_sum, w, create_graph=True)
        v = torch.randn(w.shape, generator=torch.Generator().manual_seed(seed), dtype=w.dtype).to(device)
        v /= v.norm()
        estimate = 0.0
        for i in range(n_iter):
            hv, = torch.autograd.grad(g, w, grad_outputs=v, retain_graph=True)
            rayleigh = float((hv * v).sum())
            v = hv / hv.norm().clamp_min(1e-30)
            converged = i > 0 and abs(rayleigh - estimate) <= tol * abs(rayleigh)
            estimate = rayleigh
            if converged:
                break
    finally:
        model.train(was_training)
    return estimate

def calibrate_step_size(model: nn.Module, data, loss='classification', *, localization: float = 1.0,
                        n_beta: float | None = None, stiffness: float = 0.05, **power) -> float:
    """SGLD step size eps = stiffness / (n_beta * h_max + localization), h_max the top Hessian eigenvalue
    of L_n (`power` goes to `top_hessian_eigenvalue`). `stiffness` = eps*h bounds the stiffest direction's
    bias by ~1/4 of it."""
    X = as_data(data)[0]
    nb = default_n_beta(len(X)) if n_beta is None else n_beta
    h_max = abs(top_hessian_eigenvalue(model, data, loss, **power))
    return stiffness / (nb * h_max + localization)


# %%
h_reg = top_hessian_eigenvalue(reg, (X_reg, y_reg), 'regression')
# Hessian of 1/2 mean |Wx-y|^2: E[xx^T] (x) I
exact = float(torch.linalg.eigvalsh(X_reg.T @ X_reg / len(X_reg)).max())
assert abs(h_reg / exact - 1) < 1e-2, (h_reg, exact)
# unequal curvatures: a real power iteration
X_aniso = X_reg[:2000, :6] * torch.linspace(0.5, 2.0, 6)
lin6 = nn.Linear(6, 2, bias=False)
h_aniso = top_hessian_eigenvalue(lin6, (X_aniso, lin6(X_aniso).detach()), 'regression', tol=1e-6, n_iter=200)
assert abs(h_aniso / float(torch.linalg.eigvalsh(X_aniso.T @ X_aniso / 2000).max()) - 1) < 1e-3
eps = calibrate_step_size(reg, (X_reg, y_reg), 'regression', localization=1.0, stiffness=0.05)
assert abs(eps * (nb * exact + 1.0) - 0.05) < 1e-3
h_reg, exact, eps


# %% [markdown]
# ### One automatic setting
#
# `calibrate_at_curvature` turns these rules into a complete `SGLDSettings`, with no per-model tuning beyond measuring
# $h_{\max}$:
#
# * localization $\gamma = q\,n\beta\,h_{\max}$ with $q = 3\cdot10^{-3}$, far below the stiffest likelihood
#   curvature;
# * step size $\epsilon = c/(n\beta h_{\max}+\gamma)$ with stiffness $c = 0.1$, in burn-in and sampling alike;
# * 5000 burn-in steps and 5000 draws, 4 chains, batch size 500 (Lau et al., app. J.1). The run then covers
#   $\epsilon\gamma T = cqT/(1+q) \approx 3$ relaxation times of the directions that only the localization
#   holds, the least that lets chains settle along the singular set instead of drifting outwards for the whole run;
# * `preconditioner='rmsprop'` runs RMSprop-SGLD (see the [SGLD chapter](sgld.html)) with the step size
#   multiplied by its $\varepsilon_{\rm rms}$, so that the largest step a coordinate can take,
#   $\epsilon/\varepsilon_{\rm rms}$, keeps the stiffness $c$; coordinates with large gradients take smaller ones;
# * if a chain still diverges, the step size to blame is halved and the chunk rerun (`on_divergence='backoff'`,
#   reported in the diagnostics' step-size columns and as a warning): the burn-in's for a divergence in the
#   burn-in, both for one in the sampling phase that comes within a few relaxation times of the burn-in's end
#   (see the [SGLD chapter](sgld.html)).
#
# * `systematic=True`: every estimate is repeated at $3\gamma$ and reported with the localization's systematic
#   error (see the [localization chapter](localization.html)), at a third more cost.
#
# The step-size and localization rules were chosen on the tuning part of the first
# [validation set](llc_validation.html); the systematic step and its constants on the tuning part of the
# depth-covering set of the [LLC-at-depth chapter](llc_depth.html), which reports them once on its held-out part.
# What they give, in short: on deep linear networks of depth 2 to 7 whose truth the data resolve, the estimate at
# $\gamma$ has a mean |error| of about 6% (worst 15%), and the interval with the systematic part covers
# Aoyagi's $\lambda$ on every held-out network, at a median half-width of about 16%; on a second held-out set
# drawn afresh, the extrapolated estimate's mean |error| is 5.6% (worst 13%) and the interval covers 11 of 12.
# With noisy targets the extrapolation overshoots (mean |error| 17% on that set's six noisy networks, against 10%
# for the estimate at $\gamma$, `llc_raw` in the diagnostics); the interval still covered all six. That is **not** the 5% at
# every depth we want; the interval says how far to trust each number. Part of the remaining low error at depth and
# large $n$ may not be the sampler's: on the scalar chain, where it can be computed, even an exact sampler of the
# localized posterior lands far below λ at these $n$, and our estimator lands on that exact value
# ([An exact truth at finite n](exact_chain.html)). The same chapter measures a limit of this rule: since γ grows
# with $n\beta$, the localization wins in every singular direction as $n$ grows, and the estimate tends to the
# regular part of λ (for a deep linear network, half the dimension of its rank-$r$ maps), not to λ. Estimates made
# under it at very different $n$ are therefore not comparable, and at a fixed $n$ the deeper the network the more
# of its singular part is missed. Holding γ fixed as $n$ grows moves the estimate towards λ instead, at a cost in
# steps that grows with $n$. That rule is now `calibrate` ([Settings that exist at every point](calibrate.html)): γ from the weights' scale and the step from pilot chains, defined at degenerate points where this one has no scale. The curvature rule keeps its name, `calibrate_at_curvature`, because every committed LLC that says "calibrated" or "auto" was made with it; those results have not yet been re-run under the new rule. The first validation set's large errors at
# depth came mostly from truths its data could not resolve (see the LLC-at-depth chapter). The previous rule,
# $q=10^{-4}$, stiffness 0.3 with a burn-in stiffness of 2 and 6000 + 6000 steps, set on two networks of the DLN
# suite, covered only 0.4 relaxation times: its chains drifted for the whole run, and they diverged on 6 of the
# 10 tuning networks it was run on.

# %% [markdown]
# Both automatic rules first ask `nan_source` whether the model is finite at $w^*$: it names the weights, the output,
# the loss or the gradient that is not (the [chapter on settings that exist at every point](calibrate.html) shows each case), so that the error says
# what failed rather than that a step size came out NaN.

# %%
#| export
def nan_source(model: nn.Module, data, loss='classification', eval_batch: int = 4096) -> str | None:
    """Where a non-finite value of `model` at its current weights comes from, in words: its weights, its output, the
    loss, or the gradient of the mean loss (naming the parameters); None when all are finite."""
    X, y = as_data(data)
    loss_fn = resolve_loss(loss)
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    bad = [n for n, p in named if not torch.isfinite(p).all()]
    if bad:
        return f"the model's weights {bad} are not finite"
    was = model.training
    model.eval()
    try:
        grads = [torch.zeros_like(p) for _, p in named]
        for s in range(0, len(X), eval_batch):
            xb, yb = X[s:s + eval_batch], y[s:s + eval_batch]
            out = model(xb)
            flat = out.reshape(len(xb), -1)
            if not torch.isfinite(flat).all():
                i = int((~torch.isfinite(flat)).any(1).nonzero()[0])
                return f"the model's output is not finite (first at sample {s + i}: {flat[i].tolist()[:4]})"
            per = loss_fn(out, yb)
            if not torch.isfinite(per).all():
                i = int((~torch.isfinite(per)).nonzero()[0])
                return f"the loss is not finite (first at sample {s + i}) although the model's output is finite"
            g = torch.autograd.grad(per.sum() / len(X), [p for _, p in named], allow_unused=True)
            grads = [a + b if b is not None else a for a, b in zip(grads, g)]
        bad = [n for (n, _), g in zip(named, grads) if not torch.isfinite(g).all()]
        if bad:
            return f"the gradient of the loss is not finite in {bad} although the output and the loss are finite"
    finally:
        model.train(was)
    return None


# %%
#| export
AUTO_SETTING = dict(stiffness=0.1, burnin_stiffness=0.1, localization_ratio=3e-3, n_chains=4, n_burnin=5000,
                    n_draws=5000, steps_between_draws=1, batch_size=500, preconditioner='none', systematic=True)

def calibrate_at_curvature(model: nn.Module, data, loss='classification', *, n_beta: float | None = None,
                           device=None, **rules) -> SGLDSettings:
    """The curvature rule's SGLD settings for `model` at its current weights (`AUTO_SETTING`, with `rules` changed):
    step and localization from the top Hessian eigenvalue at w*. Refused where that is zero, tiny or not finite
    (a degenerate point: `calibrate_at_curvature` of the next chapter is defined there)."""
    a = {**AUTO_SETTING, **rules}
    unknown = set(a) - set(AUTO_SETTING)
    if unknown:
        raise ValueError(f"calibrate_at_curvature: unknown rule(s) {sorted(unknown)}; known: {sorted(AUTO_SETTING)}")
    nb = default_n_beta(len(as_data(data)[0])) if n_beta is None else float(n_beta)
    h_max = abs(top_hessian_eigenvalue(model, data, loss, device=device))   # refuses a model and data apart
    if not math.isfinite(h_max):
        raise ValueError(f"calibrate_at_curvature: the Hessian at w* is not finite: "
                         f"{nan_source(model, data, loss) or 'its second derivatives overflow'}")
    if nb * h_max < 1e-8:
        raise ValueError(f"calibrate_at_curvature: the Hessian at w* is zero (top eigenvalue {h_max:.3g}), a degenerate "
                         "point where the curvature rule has no scale: use fracsgd.llc.calibrate.calibrate, whose "
                         "settings exist at every point")
    gamma = a['localization_ratio'] * nb * h_max
    # RMSprop scales a coordinate's step by at most 1/rmsprop_eps: the stiffness bounds that largest step
    scale = SGLDSettings().rmsprop_eps if a['preconditioner'] == 'rmsprop' else 1.0
    return SGLDSettings(step_size=scale * a['stiffness'] / (nb * h_max + gamma),
                        burnin_step_size=scale * a['burnin_stiffness'] / (nb * h_max + gamma), localization=gamma,
                        n_chains=a['n_chains'], n_burnin=a['n_burnin'], n_draws=a['n_draws'],
                        steps_between_draws=a['steps_between_draws'], batch_size=a['batch_size'], n_beta=nb,
                        on_divergence='backoff', preconditioner=a['preconditioner'], systematic=a['systematic'])


# %%
auto = calibrate_at_curvature(reg, (X_reg, y_reg), 'regression')
assert abs(auto.localization - 3e-3 * nb * h_reg) < 1e-6 * nb * h_reg
assert auto.step_size == auto.burnin_step_size and 2.5 < auto.step_size * auto.localization * auto.n_steps < 3
assert auto.n_steps == 10_000 and auto.on_divergence == 'backoff' and auto.systematic
try:
    calibrate_at_curvature(reg, (X_reg, y_reg), 'regression', stifness=0.1)
    raise AssertionError
except ValueError as e:
    assert 'stifness' in str(e)
auto

# %% [markdown]
# **Many nets, each calibrated, in one pass.** `calibrate_at_curvature` gives each net its own step size and localization.
# `estimate_llc` takes a list of such settings, one per model, and samples every net at once, each chain with
# its own net's $\epsilon$ and $\gamma$ (the [sampler chapter](sgld.html) checks the chains against passes with
# shared settings). Row $m$ of the result is what a pass in which every net had net $m$'s settings gives for net
# $m$; a net run alone gets another random stream (its chains' seeds depend on its place in the list), so it
# agrees only within the Monte-Carlo error. A two-layer linear net, and the same net with its first layer doubled:

# %%
two_layer = make_dln([6, 4, 3], 2, seed=0)
data_two = dln_data(two_layer, 2000)
steeper = copy.deepcopy(two_layer)
with torch.no_grad():
    next(steeper.parameters()).mul_(2.0)                      # the first layer twice as large: a stiffer second
short = dict(n_burnin=300, n_draws=300, n_chains=2)
own = [calibrate_at_curvature(m, data_two, 'regression', **short) for m in (two_layer, steeper)]
assert own[0].step_size / own[1].step_size > 2
with warnings.catch_warnings():
    warnings.simplefilter('ignore')          # 600 steps are too few for the diagnostics, and they say so: not the point here
    both = estimate_llc([two_layer, steeper], data_two, 'regression', own)
    shared_passes = [estimate_llc([two_layer, steeper], data_two, 'regression', s_m) for s_m in own]
for m, (s_m, shared) in enumerate(zip(own, shared_passes)):
    assert np.isclose(both.diagnostics.step_size[m], s_m.step_size)
    assert np.isclose(both.diagnostics.localization[m], s_m.localization)
    assert np.isclose(both.llc[m], shared.llc[m], rtol=1e-4) and np.isclose(both.llc_high[m], shared.llc_high[m], rtol=1e-4)
both.diagnostics[['model', 'step_size', 'localization', 'llc', 'llc_low', 'llc_high']]

# %% [markdown]
# The experiment table behind this choice (tuning part of the validation set; one row per setting, errors
# against Aoyagi's exact $\lambda$; the [validation page](llc_validation.html) has the per-network rows, the
# exact-sampler reference and the held-out results). No setting reaches a mean |error| of 5% with no network
# above 15%:

# %%
from fracsgd.llc.validation import summarize, validation_results
experiments = summarize(validation_results('tune'), by=['sampler', 'setting'])
meets = (experiments.mean_abs_error <= 0.05) & (experiments.max_abs_error <= 0.15) & (experiments.diverged == 0)
assert not meets.any()                                    # what the prose above says
experiments.round(3)


# %% [markdown]
# ## During training: a recorder measurement
#
# The paper estimates the LLC every 100 training steps with its preset and reports the mean of the last 10
# estimates (Hennick & De Baerdemacker, app. G.1). `LLCMeasurement` is a callable `fn(model)` with an `every`
# attribute, which is all the displacement recorder asks of a measurement; `final_llc` reduces the recorded
# column. It defaults to the paper's preset, and each call uses a fresh seed (`seed` plus the number of earlier
# calls). The measurement only reads the weights: parameters, `.grad`, train/eval mode, device and the global
# random state are unchanged afterwards. It computes where the model is (or on its `device`, if one is named),
# so its data must be there too: data on another device are refused at the first measurement, not copied at
# every one.
#
# It hides nothing. It returns `{'llc': ..., 'flagged': ...}`, so the recorder keeps a `flagged` column
# (`<name>/flagged`, 1.0 when `llc_problems` found anything, a negative LLC included) beside every estimate
# (`details=True` adds the standard error and the MALA acceptance), and each problem reaches the user as one
# warning that names the call. Its settings are checked when it is made: unknown names and bad values are
# refused there, not at the first measurement a thousand steps later, and so is `n_draws < 2`, which leaves
# no drift test and no standard error.

# %%
#| export
class LLCMeasurement:
    "A displacement-recorder measurement: `fn(model)`, called every `every` steps, returns the LLC, a flag and whether the point is near a minimum."
    def __init__(self, data, loss='classification', every: int = 100, details: bool = False,
                 settings: SGLDSettings = PAPER_PRESET, device=None, eval_batch: int = 4096, **changes):
        if isinstance(every, bool) or int(every) != every or every < 1:
            raise ValueError(f"every must be a positive integer, got {every!r}")
        if not isinstance(settings, SGLDSettings):
            raise TypeError(f"settings must be an SGLDSettings, got {type(settings).__name__}")
        self.settings = settings.replace(**changes)          # unknown names and bad values are refused here
        if self.settings.n_draws < 2:
            raise ValueError(f"n_draws must be at least 2 for an LLC measurement (a standard error and a "
                             f"drift test need 2 draws), got {self.settings.n_draws}")
        resolve_loss(loss)                                    # an unknown loss is named now
        as_data(data)                                         # so are empty or mismatched data
        self.data, self.loss, self.every, self.details, self.device = data, loss, int(every), details, device
        self.eval_batch = eval_batch                          # samples at a time in the baseline (`estimate_llc`)
        self.calls, self.last = 0, None

    def __call__(self, model: nn.Module) -> dict:
        settings = self.settings.replace(seed=self.settings.seed + self.calls)
        self.calls += 1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            self.last = estimate_llc(model, self.data, self.loss, settings, device=self.device, eval_batch=self.eval_batch)
        d = self.last.diagnostics.iloc[0]
        for w in caught:                                      # re-raised with the call they belong to
            warnings.warn(f"LLC measurement {self.calls} (training step ~{self.calls * self.every}): "
                          f"{w.message}", w.category, stacklevel=2)
        out = dict(llc=float(d.llc), flagged=float(d.flagged), near_minimum=float(d.near_minimum))
        if self.details:
            out.update(se=float(d.llc_se), mala=float(d.mala_acceptance))
        return out

def final_llc(table: pd.DataFrame, column: str = 'llc', last: int = 10) -> float:
    """The paper's final LLC: the mean of the last `last` LLC estimates in a trajectory table (appendix G.1).
    `column` is a column or the name of an `LLCMeasurement` (whose estimates sit in `<name>/llc`); flagged
    estimates among them are counted in a warning."""
    if column not in table and f'{column}/llc' in table:
        column = f'{column}/llc'
    if column not in table:
        raise ValueError(f"table has no column {column!r}; columns: {list(table.columns)}")
    values = table[column].dropna()
    if len(values) == 0:
        raise ValueError(f"column {column!r} holds no LLC estimates")
    flags = column.rsplit('/', 1)[0] + '/flagged'
    if flags in table:
        n_flagged = int((table.loc[values.index[-last:], flags] > 0).sum())
        if n_flagged:
            warnings.warn(f"final_llc: {n_flagged} of the last {min(last, len(values))} estimates in "
                          f"{column!r} are flagged (see the measurement's warnings)", stacklevel=2)
    return float(values.iloc[-last:].mean())


# %%
torch.manual_seed(0)
Xc = torch.randn(512, 2)
yc = (Xc[:, 0] * Xc[:, 1] > 0).long()
net = nn.Sequential(nn.Linear(2, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 2))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
meas = LLCMeasurement((Xc, yc), 'classification', every=50, n_draws=40, batch_size=128)
assert meas.every == 50 and meas.settings.localization == 100.0 and meas.settings.step_size == 1e-5
rows = []
with warnings.catch_warnings(record=True) as heard:
    warnings.simplefilter('always')
    for step in range(1, 201):
        idx = torch.randint(0, 512, (64,))
        opt.zero_grad()
        F.cross_entropy(net(Xc[idx]), yc[idx]).backward()
        opt.step()
        if step % meas.every == 0:
            state = {k: v.clone() for k, v in net.state_dict().items()}       # weights and batch-norm statistics
            grads = [p.grad.clone() for p in net.parameters()]
            rng_state = torch.get_rng_state()
            rows.append(dict(step=step, **{f'llc/{k}': v for k, v in meas(net).items()}))
            assert net.training and torch.equal(rng_state, torch.get_rng_state())
            assert all(torch.equal(state[k], v) for k, v in net.state_dict().items())
            assert all(torch.equal(g, p.grad) for g, p in zip(grads, net.parameters()))
table = pd.DataFrame(rows)
# 40 draws from w* of the paper's preset: far from stationary here, and the user hears it, call by call
assert table['llc/flagged'].sum() > 0 and any('LLC measurement' in str(w.message) for w in heard)
with warnings.catch_warnings(record=True) as heard:
    warnings.simplefilter('always')
    assert final_llc(table, 'llc', last=2) == table['llc/llc'].iloc[-2:].mean()   # by the measurement's name
assert any('flagged' in str(w.message) for w in heard)
# steps without an estimate are skipped
gaps = pd.DataFrame({'step': [100, 200, 300], 'llc': [1.0, np.nan, 3.0]})
assert final_llc(gaps, last=10) == 2.0 and final_llc(gaps, last=1) == 3.0
try:
    final_llc(table, 'LLC')
    raise AssertionError
except ValueError as e:
    assert 'LLC' in str(e)
table

# %% [markdown]
# Settings are checked when the measurement is made, and a negative LLC (weights that are not a minimum) is
# flagged in the very row that records it:

# %%
for bad, word in [(dict(n_draws=1), 'n_draws'), (dict(stepsize=1e-3), 'unknown'), (dict(step_size=-1), 'step_size'),
                  (dict(every=0), 'every'), (dict(settings='paper'), 'SGLDSettings'), (dict(loss='hinge'), 'hinge')]:
    try:
        LLCMeasurement((Xc, yc), **{'loss': 'classification', **bad})
        raise AssertionError(bad)
    except (ValueError, TypeError) as e:
        assert word in str(e), (bad, e)
off_minimum = copy.deepcopy(reg)
off_minimum[0].weight.data += 0.3
probe = LLCMeasurement((X_reg, y_reg), 'regression', every=1, step_size=0.05 / nb, n_chains=2, n_draws=100,
                       batch_size=500, localization=1.0)
with warnings.catch_warnings(record=True) as heard:
    warnings.simplefilter('always')
    row = probe(off_minimum)
assert row['llc'] < 0 and row['flagged'] == 1.0
assert any('negative LLC' in str(w.message) and 'LLC measurement 1' in str(w.message) for w in heard)
row

# %%
#| hide
import nbdev
nbdev.nbdev_export()
