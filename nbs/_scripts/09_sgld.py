# %% [markdown]
# # SGLD
#
# > Stochastic-gradient Langevin dynamics for many chains of many models at once, localized at each model's own weights: divergence caught and named, MALA acceptance as a diagnostic, and a step-size back-off.

# %%
#| default_exp llc.sgld

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import copy, math, warnings
from typing import NamedTuple

import numpy as np
import pandas as pd
import torch

from fastcore.basics import patch

from fracsgd.llc.settings import SGLDSettings, default_n_beta, shared_settings
from fracsgd.nets.stack import ModelStack, batch_mean, batched_loss, chain_minibatches, chain_seed
from fracsgd.placement import data_device

# %%
import matplotlib.pyplot as plt
import seaborn as sns
from fracsgd.nets.models import dln_data, make_dln
from fracsgd.nets.stack import as_data, resolve_loss
torch.set_num_threads(1)   # the models on this page are tiny: one thread avoids contention on small CPUs


# %% [markdown]
# ## The sampler
#
# The local learning coefficient (next chapter) is an average over the tempered posterior localized at a
# parameter $w^*$, $p(w)\propto\exp\{-n\beta L_n(w)-\tfrac{\gamma}{2}\|w-w^*\|^2\}$, where $L_n$ is the mean
# per-sample negative log-likelihood on $n$ samples (Lau et al. 2024, eq. 11). Stochastic-gradient Langevin
# dynamics samples it with the minibatch loss $L_B$ in place of $L_n$ (their Algorithm 1):
#
# $$\Delta w_t = -\tfrac{\epsilon}{2}\big(n\beta\,\nabla L_B(w_t) + \gamma\,(w_t-w^*)\big) + \mathcal N(0,\epsilon I).$$
#
# The inverse temperature defaults to $n\beta = n/\log n$ with $n$ the number of training samples. (devinterp's
# `default_nbeta` uses the *batch* size instead; pass `n_beta=` to reproduce it.)

# %% [markdown]
# ## When a chain diverges
#
# A step size too large for the stiffest direction of $n\beta L_n$ makes the chain explode to a non-finite loss.
# The sampler stops with an `SGLDDivergenceError` that says where (step, model, chain), in which phase, with
# which step size, and what to try; the same facts are attributes, so a caller can react to them without reading
# the message.

# %%
#| export
class SGLDDivergenceError(FloatingPointError):
    """SGLD produced a NaN/inf loss.
    Attributes: `phase` ('burn-in' or 'sampling'), `step`, `model`, `chain`, `step_size`."""
    def __init__(self, message: str, *, phase: str, step: int, model: int, chain: int, step_size: float):
        super().__init__(message)
        self.phase, self.step, self.model, self.chain, self.step_size = phase, step, model, chain, step_size


# %% [markdown]
# ## MALA acceptance, a diagnostic
#
# An SGLD step is the proposal of the Metropolis-adjusted Langevin algorithm, which would accept it with
# probability $\min\{1, \pi(w')q(w\mid w')/\pi(w)q(w'\mid w)\}$ for the potential
# $U = n\beta L_B + \tfrac\gamma2\|w-w^*\|^2$. SGLD never rejects, but this probability measures how far the
# discretization is from exact: it should stay near 1 (Lau et al. 2024, app. H.1, recommend about 0.9 or more).
# `LangevinState` is a point with its potential and gradient; `mala_acceptance` compares two of them, in
# float64. It works through the weights a slice at a time (`CHUNK` numbers), so a ResNet-sized model costs no
# float64 copy of its weights: only the slice is converted.

# %%
#| export
class LangevinState(NamedTuple):
    "Chains at `w` [chains, params] with the potential U [chains] and its gradient [chains, params] there."
    w: torch.Tensor
    potential: torch.Tensor
    grad: torch.Tensor

CHUNK = 1 << 20

def sum_sq(fn, *tensors: torch.Tensor) -> torch.Tensor:
    "Σ over the last axis of `fn(*tensors)`², evaluated in float64 one `CHUNK` of columns at a time: [rows]."
    total = 0
    for parts in zip(*(t.split(CHUNK, dim=-1) for t in tensors)):
        total = total + fn(*(p.double() for p in parts)).pow(2).sum(-1)
    return total

def mala_acceptance(old: LangevinState, new: LangevinState, step_size: float,
                    precond: torch.Tensor | None = None) -> torch.Tensor:
    """MALA's acceptance probability [chains] of the Langevin proposal `old -> new` with step size `step_size`
    (a float, or a column [chains, 1] of each chain's own); `precond` [chains, params]: a diagonal preconditioner G, held fixed over the step (proposal covariance eps*G)."""
    eps = step_size                                   # a float, or a column [chains, 1]: each chain's own
    eps_row = eps.reshape(-1).double() if isinstance(eps, torch.Tensor) else eps
    if precond is None:
        log_q_forward = -sum_sq(lambda w1, w0, g0: w1 - w0 + eps / 2 * g0, new.w, old.w, old.grad) / (2 * eps_row)
        log_q_backward = -sum_sq(lambda w0, w1, g1: w0 - w1 + eps / 2 * g1, old.w, new.w, new.grad) / (2 * eps_row)
    else:
        log_q_forward = -sum_sq(lambda w1, w0, g0, G: (w1 - w0 + eps / 2 * G * g0) / G.sqrt(),
                                new.w, old.w, old.grad, precond) / (2 * eps)
        log_q_backward = -sum_sq(lambda w0, w1, g1, G: (w0 - w1 + eps / 2 * G * g1) / G.sqrt(),
                                 old.w, new.w, new.grad, precond) / (2 * eps)
    log_a = (old.potential - new.potential) + log_q_backward - log_q_forward
    return torch.exp(log_a.clamp(max=0.0))


# %% [markdown]
# On a standard Gaussian, $U(w)=\|w\|^2/2$, the acceptance of a Langevin step must tend to 1 as the step shrinks
# (its rejection rate falls like $\epsilon^{3/2}$ per dimension), and a step of the size of the target itself
# must be rejected often:

# %%
def gaussian_state(w):
    return LangevinState(w, 0.5 * w.pow(2).sum(1), w)

g = torch.Generator().manual_seed(0)
w0 = torch.randn(2000, 10, generator=g, dtype=torch.float64)             # [chains, params], from the target
rates = {}
for eps in (1.0, 0.3, 0.1, 0.03, 0.01):
    w1 = w0 - eps / 2 * w0 + math.sqrt(eps) * torch.randn(w0.shape, generator=g, dtype=torch.float64)
    rates[eps] = float(mala_acceptance(gaussian_state(w0), gaussian_state(w1), eps).mean())
assert list(rates.values()) == sorted(rates.values()) and rates[0.01] > 0.995 and rates[1.0] < 0.9
# a constant preconditioner G = 1 is no preconditioner; G = 1/4 is a step a quarter as large
ones = torch.ones_like(w0)
w1 = w0 - 0.1 / 2 * w0 + math.sqrt(0.1) * torch.randn(w0.shape, generator=g, dtype=torch.float64)
plain = mala_acceptance(gaussian_state(w0), gaussian_state(w1), 0.1)
assert torch.allclose(mala_acceptance(gaussian_state(w0), gaussian_state(w1), 0.1, ones), plain)
assert torch.allclose(mala_acceptance(gaussian_state(w0), gaussian_state(w1), 0.4, ones / 4), plain)
rates


# %% [markdown]
# ## The chains of one run
#
# `SGLDSampler` holds what stays fixed while chains run: the `ModelStack`, the per-sample loss, the data, the
# settings and the device (the stack's). `sample(models)` runs every chain of the models with the indices
# `models` in one vectorized loop and returns an `SGLDRun`: the minibatch loss of every step (the loss trace),
# the draws (the losses at draw steps, or paired differences), the per-step diagnostics, and the settings that
# were actually used.
#
# Each chain draws its minibatch order and its Gaussian noise from generators seeded by `(seed, model, chain)`,
# so no number depends on which models share a call. A step is one forward and backward pass for all chains, the
# noise, and three in-place passes over the weights: a `lerp_` towards $w^*$, the gradient added per parameter
# tensor, the noise. A lone chain (one model, one chain) calls a private copy of the model whose parameters live
# in the chain's memory instead of `functional_call` under `vmap`, with the same numbers and less overhead per
# step. The losses go into the trace, which is scanned for non-finite values, every 50 steps, and the diagnostics
# stay on the device until the chain ends, so a GPU is never made to wait for a check or a copy at each step.
#
# The sampler computes where its stack is, in the dtype of the weights: the data must already be on the stack's
# device (data elsewhere are refused, naming both devices, not copied), and the noise and the loss trace take the
# weights' dtype (the trace at least float32), so a float64 model samples in float64 and a float32 one exactly as
# before.
#
# Every `diag_every` steps, three diagnostics per chain (with the step size of that step): the MALA acceptance
# of the step just taken (one extra forward and backward pass), the ratio of the gradient step to the noise
# step, and the distance $\|w_t-w^*\|$.
#
# **Recording the draws.** The run keeps losses, not weights. A caller that needs more of each draw (a
# prediction, a norm, a copy of the weights) passes `record=fn` to the sampler: at every draw step $t$, before
# the update, it calls `fn(params, buffers)` with the weights $w_t$ of all chains as named parameters
# `[chains, *shape]` (model-major, as the draws) and the chains' buffers, which is what
# `torch.func.functional_call` takes under `vmap`. What `fn` returns comes back in order, one entry per draw, in
# `SGLDRun.recorded`. The parameters are views of the live chains: `fn` must compute from them or copy them, not
# keep them. A record that accumulates instead (a sum over the draws) has a `reset()` method, which the sampler
# calls before each try.
#
# With `on_divergence='backoff'`, a diverged call is run again with smaller step sizes, up to three times, and a
# warning says so; the halved step sizes come back in `SGLDRun.settings`. Which steps are halved is decided
# after the loop.

# %%
#| export
class SGLDRun(NamedTuple):
    """The result of `SGLDSampler.sample`.
    Loss trace [chains, steps], draws [chains, draws], diagnostics, settings used, and what the sampler's
    `record` returned at each draw (None without one)."""
    trace: torch.Tensor
    draws: torch.Tensor
    diagnostics: pd.DataFrame
    settings: SGLDSettings
    recorded: list | None = None
    per_model: list | None = None        # each model's own settings, after back-off, where models differ

class _Chains(NamedTuple):
    """The chains of one attempt: model indices, settings, w* per chain [chains, params], buffers per chain, and
    where the models' settings differ, each model's own (`per_model`) and the columns [chains, 1] they give."""
    models: list
    settings: SGLDSettings
    w_star: torch.Tensor
    buffers: dict
    per_model: list | None = None
    columns: dict | None = None

    def step_size_at(self, t: int, exact: bool = False):
        """The step size of step `t`: a float when the models share it, else a column [chains, 1] in the
        weights' dtype (`exact`: in float64, for the diagnostics)."""
        if self.per_model is None:
            return self.settings.step_size_at(t)
        return self.columns[('burn-in' if self.settings.phase(t) == 'burn-in' else 'sampling', exact)]

    def gamma_column(self, exact: bool = False):
        "gamma: a float when the models share it, else a column [chains, 1] (`exact`: in float64)."
        return self.settings.localization if self.per_model is None else self.columns[('localization', exact)]

    def model_settings(self, k: int) -> SGLDSettings:
        "The settings of the model of chain `k`."
        return self.settings if self.per_model is None else self.per_model[k // self.settings.n_chains]


class SGLDSampler:
    """SGLD for the models of `stack` at their own weights, on `data` = (X, y) already on the stack's device;
    `record(params, buffers)`, if given, is called at every draw and its results come back in the run (a record
    with `takes_flat = True` gets the flat weights [chains, params] instead of the dict of parameters).
    `settings` may be a list, one per model of the stack, that differs in step sizes and localization only."""
    def __init__(self, stack: ModelStack, loss_fn, data: tuple, settings: SGLDSettings | list, record=None):
        if record is not None and not callable(record):
            raise ValueError(f"record must be a function (params, buffers) -> anything, got {record!r}")
        self.per_model = None
        if isinstance(settings, (list, tuple)):
            if len(settings) != len(stack):
                raise ValueError(f"{len(settings)} settings for {len(stack)} models: give one per model")
            settings, self.per_model = shared_settings(settings)
        self.stack, self.loss_fn, self.settings, self.record = stack, loss_fn, settings, record
        self.X, self.y = data
        self.device = stack.flat.device
        if data_device(self.X, self.y) != self.device:
            raise ValueError(f"the data are on {self.X.device} but the model stack is on {self.device}: place both "
                             "on one device (nothing is moved behind your back)")
        self.n_beta = settings.n_beta if settings.n_beta is not None else default_n_beta(len(self.X))
        if settings.metropolis and (settings.batch_size or len(self.X)) < len(self.X):
            raise ValueError(f"metropolis=True needs the full batch at every step (batch_size=None), got "
                             f"batch_size={settings.batch_size} of n={len(self.X)}: a minibatch's loss is not the "
                             "potential the accept/reject step must weigh")
        self.f = batched_loss(stack.template, loss_fn)

    def _chains(self, models: list, settings: SGLDSettings, per_model: list | None = None) -> _Chains:
        "The chains of `models`; `per_model`: their own settings (None: all share `settings`)."
        C = settings.n_chains
        w_star = self.stack.flat[models].repeat_interleave(C, 0)                           # [chains, params]
        buffers = {k: v[models].repeat_interleave(C, 0) for k, v in self.stack.buffers.items()}
        if per_model is None:
            return _Chains(list(models), settings, w_star, buffers)
        values = {'burn-in': [s.step_size_at(0) for s in per_model], 'sampling': [s.step_size for s in per_model],
                  'localization': [s.localization for s in per_model]}
        columns = {(k, exact): torch.tensor(v, dtype=torch.float64 if exact else w_star.dtype,
                                            device=w_star.device).repeat_interleave(C).unsqueeze(1)
                   for k, v in values.items() for exact in (False, True)}
        return _Chains(list(models), settings, w_star, buffers, list(per_model), columns)

    def _generators(self, chains: _Chains, stream: int, device) -> list[torch.Generator]:
        seed, C = chains.settings.seed, chains.settings.n_chains
        return [torch.Generator(device).manual_seed(chain_seed(seed, m, c, stream))
                for m in chains.models for c in range(C)]


# %% [markdown]
# The sampler below works on a linear regression $y = Wx$ with $W\in\mathbb R^{3\times10}$ (a one-layer DLN of
# the [models chapter](models.html)) at its true weights. `_chains` repeats each model's weights for its chains,
# and every chain gets its own generators:

# %%
reg = make_dln([10, 3], 3, seed=0)                     # one layer: linear regression at its true weights
X_reg, y_reg = dln_data(reg, 2000)
data_reg = as_data((X_reg, y_reg), 'cpu')
settings = SGLDSettings(step_size=0.05 / default_n_beta(2000), n_chains=3, n_burnin=50, n_draws=200,
                        batch_size=200)
sampler = SGLDSampler(ModelStack([reg], 'cpu'), resolve_loss('regression'), data_reg, settings)
chains = sampler._chains([0], settings)
assert chains.w_star.shape == (3, 30) and torch.equal(chains.w_star[2], sampler.stack.flat[0])
first_draws = [g.initial_seed() for g in sampler._generators(chains, 0, 'cpu')]
assert len(set(first_draws)) == 3 and sampler.n_beta == default_n_beta(2000)


# %% [markdown]
# **Weights that autograd can see.** The chains' weights live in one `[chains, params]` tensor `w`, which the
# update changes in place. `_differentiable` gives autograd leaves that *are* that memory, one per parameter
# tensor, and a loss of them: for a lone chain, a private copy of the model whose parameters are the leaves; for
# several, the stacked call under `vmap`. Both must see the same weights as `w`:

# %%
#| export
@patch
def _differentiable(self: SGLDSampler, w: torch.Tensor, buffers: dict):
    """Autograd leaves in the memory of `w` [chains, params], one per parameter tensor, and
    `loss(x, y) -> [chains]`. A lone chain calls a private copy of the model whose parameters are those
    leaves, and its loss is 0-d (it broadcasts as [1]; its gradient needs no sum); several go through vmap."""
    pieces = list(self.stack.params(w).values())              # [chains, *shape] views of w
    try:
        model = copy.deepcopy(self.stack.template) if len(w) == 1 else None
    except Exception:                   # e.g. a model holding a lock: take the vmap path
        model = None
    if model is None:
        leaves = [p.detach().requires_grad_(True) for p in pieces]
        params = dict(zip(self.stack.names, leaves))
        return leaves, lambda xb, yb: self.f(params, buffers, xb, yb)
    for p, piece in zip(model.parameters(), pieces):
        p.data = piece[0]
    for name, b in model.named_buffers():
        b.copy_(buffers[name][0])
    mean = batch_mean(self.loss_fn)
    return list(model.parameters()), lambda xb, yb: mean(model(xb[0]), yb[0])   # 0-d: no sum to undo


# %%
w_try = chains.w_star.clone()                                         # [3 chains, 30]
leaves, loss_of = sampler._differentiable(w_try, chains.buffers)
x8, y8 = X_reg[:8].expand(3, 8, 10), y_reg[:8].expand(3, 8, 3)     # [chains, batch, features]
assert leaves[0].data_ptr() == w_try.data_ptr() and loss_of(x8, y8).shape == (3,)
w_one = chains.w_star[:1].clone()                                     # a lone chain: the model copy
leaves_one, loss_one = sampler._differentiable(w_one, {})
assert leaves_one[0].data_ptr() == w_one.data_ptr()
assert torch.allclose(loss_one(x8[:1], y8[:1]), loss_of(x8, y8)[:1])


# %% [markdown]
# **Divergence.** `_check_finite` looks at a stretch of the loss trace and raises at its first non-finite value,
# naming the step, the model and chain it belongs to, the phase and the step size:

# %%
#| export
@patch
def _check_finite(self: SGLDSampler, trace: torch.Tensor, steps: tuple[int, int], chains: _Chains):
    "Raise `SGLDDivergenceError` at the first non-finite loss in `trace[:, steps[0]:steps[1]]`."
    bad = ~torch.isfinite(trace[:, steps[0]:steps[1]])       # [chains, steps]
    if not bad.any():
        return
    t = steps[0] + int(bad.any(0).nonzero()[0])
    k = int(bad[:, t - steps[0]].nonzero()[0])
    s, C = chains.model_settings(k), chains.settings.n_chains
    eps, phase, model = s.step_size_at(t), s.phase(t), chains.models[k // C]
    raise SGLDDivergenceError(
        f"SGLD diverged at step {t} (model {model}, chain {k % C}, {phase}): the minibatch loss is "
        f"{trace[k, t].item()}. step_size={eps:g} is too large for this model "
        f"at n_beta={self.n_beta:.4g}, localization={s.localization:g}; "
        f"try step_size={eps / 10:g} or calibrate_step_size(...).",
        phase=phase, step=t, model=model, chain=k % C, step_size=eps)


# %%
trace_bad = torch.zeros(3, 60)
trace_bad[1, 57] = float('inf')
sampler._check_finite(trace_bad, (0, 50), chains)                     # the bad value lies outside: no error
try:
    sampler._check_finite(trace_bad, (50, 60), chains)
    raise AssertionError
except SGLDDivergenceError as e:
    assert (e.step, e.model, e.chain, e.phase, e.step_size) == (57, 0, 1, 'sampling', settings.step_size)


# %% [markdown]
# **Diagnostics.** `_state` evaluates the potential $U$ and its gradient for `mala_acceptance`; `_before_step`
# keeps what the diagnostics need from before the update; `_diagnostics` takes one more forward and backward
# pass at the new weights, on the same minibatch, and writes one row per chain. At $w^*$ itself the localization
# term vanishes, so the potential is $n\beta L_B(w^*)$, and here, at the true weights of noiseless data, zero:

# %%
#| export
@patch
def _state(self: SGLDSampler, w: torch.Tensor, loss: torch.Tensor, grad: torch.Tensor,
           chains: _Chains) -> LangevinState:
    """The potential n_beta L_B + gamma/2 |w - w*|^2 (float64) and its gradient at `w` [chains, params] (in the
    weights' dtype: one copy of the weights, whatever the model's size)."""
    gamma, w_star = chains.gamma_column(), chains.w_star                   # a float or a column [chains, 1]
    gamma_row = chains.gamma_column(exact=True).reshape(-1) if isinstance(gamma, torch.Tensor) else gamma
    potential = self.n_beta * loss.double() + gamma_row / 2 * sum_sq(torch.sub, w, w_star)
    return LangevinState(w, potential, torch.sub(w, w_star).mul_(gamma).add_(grad, alpha=self.n_beta))

@patch
def _before_step(self: SGLDSampler, w, loss, grads, noise, chains: _Chains, precond=None) -> dict:
    """What the diagnostics need from before a step: the state, the gradient and noise norms [chains], and the
    preconditioner of the step (None without one)."""
    grad = torch.cat([g.reshape(len(w), -1) for g in grads], 1)              # [chains, params]
    return dict(state=self._state(w.clone(), loss, grad, chains), grad_norm=grad.norm(dim=1),
                noise_norm=noise.norm(dim=1), distance=(w - chains.w_star).norm(dim=1),
                precond=None if precond is None else precond.clone())

@patch
def _diagnostics(self: SGLDSampler, t: int, before: dict, w: torch.Tensor, batch: tuple,
                 chains: _Chains) -> dict:
    """For the step just taken, per chain and left on the device: MALA acceptance, grad-to-noise ratio, distance
    from w* (`diagnostics_table` makes the table)."""
    eps = chains.step_size_at(t, exact=True)                       # a float or a column [chains, 1]
    w_new = w.detach().clone().requires_grad_(True)
    loss = self.f(self.stack.params(w_new), chains.buffers, *batch)   # one more forward + backward
    grad, = torch.autograd.grad(loss.sum(), w_new)
    with torch.no_grad():
        acc = mala_acceptance(before['state'], self._state(w_new.detach(), loss, grad, chains), eps,
                              before['precond'])
        eps = eps.reshape(-1) if isinstance(eps, torch.Tensor) else eps
        root = eps.sqrt() if isinstance(eps, torch.Tensor) else math.sqrt(eps)
        ratio = (eps / 2 * self.n_beta * before['grad_norm']) / (root * before['noise_norm'])
    return dict(step=t, step_size=eps, mala_acceptance=acc, grad_to_noise=ratio, distance=before['distance'])

def diagnostics_table(rows: list[dict], chains: _Chains) -> pd.DataFrame:
    """The diagnostics of a run as one table, one row per chain and diagnosed step, from the rows `_diagnostics`
    left on the device: one transfer at the end instead of three host synchronisations per diagnosed step."""
    if not rows:
        return pd.DataFrame()
    C, M = chains.settings.n_chains, len(chains.models)
    n, cols = len(rows), ('mala_acceptance', 'grad_to_noise', 'distance')
    values = {c: torch.stack([r[c] for r in rows]).cpu().numpy().reshape(-1) for c in cols}   # [steps x chains]
    sizes = (np.repeat([r['step_size'] for r in rows], M * C) if chains.per_model is None    # per chain otherwise
             else torch.stack([r['step_size'] for r in rows]).double().cpu().numpy().reshape(-1))
    return pd.DataFrame({'step': np.repeat([r['step'] for r in rows], M * C),
                         'model': np.tile(np.repeat(chains.models, C), n),
                         'chain': np.tile(np.arange(C), M * n),
                         'step_size': sizes, **values})


# %%
at_truth = sampler._state(chains.w_star, torch.zeros(3), torch.zeros(3, 30), chains)
assert torch.equal(at_truth.potential, torch.zeros(3, dtype=torch.float64)) and at_truth.grad.abs().max() == 0


# %% [markdown]
# **RMSprop-SGLD.** A preconditioned SGLD (Li et al. 2016, "Preconditioned stochastic gradient Langevin dynamics")
# gives each coordinate its own step: it keeps a running mean $V$ of the squared minibatch gradient $g_t=\nabla
# L_B(w_t)$ and multiplies both the drift and the noise variance by the diagonal $G=1/(\sqrt V+\varepsilon_{\rm
# rms})$,
#
# $$V_t=\alpha V_{t-1}+(1-\alpha)\,g_t^2,\qquad \Delta w_t=-\tfrac\epsilon2\,G_t\big(n\beta g_t+\gamma(w_t-w^*)\big)
# +\sqrt{\epsilon G_t}\;\xi_t .$$
#
# With `preconditioner='rmsprop'` the sampler runs exactly what devinterp calls `SGMCMC.rmsprop_sgld` (devinterp
# 2.0.1, `devinterp/optim/sgmcmc.py` and `preconditioner.py`, read here in the installed package): $V$ is
# updated with the unscaled minibatch gradient before it is used, $\alpha = 0.99$ and
# $\varepsilon_{\rm rms} = 0.1$ by default (`rmsprop_alpha`, `rmsprop_eps`), and the correction term of Li et al.
# (the divergence of $G$, which they drop for $\alpha$ near 1) is left out, as there. The preconditioner only
# changes how the chain moves, not the target, as long as $G$ changes slowly. Since $G\le 1/\varepsilon_{\rm
# rms}$, the largest step any coordinate takes is $\epsilon/\varepsilon_{\rm rms}$: with
# $\varepsilon_{\rm rms}=0.1$ a step size that suits plain SGLD is up to ten times too large here. The MALA
# diagnostic uses the proposal $\mathcal N(w-\tfrac\epsilon2 G\nabla U,\ \epsilon G)$ with $G$ of the step.

# %%
#| export
def rmsprop_preconditioner(square_avg: torch.Tensor, grad: torch.Tensor, alpha: float, eps: float) -> torch.Tensor:
    """RMSprop's diagonal preconditioner G = 1/(sqrt(V) + eps) [chains, params], after updating the running mean
    of squared gradients V (`square_avg`, in place) with `grad` [chains, params]."""
    square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
    return square_avg.sqrt().add_(eps).reciprocal_()

def preconditioned_step(w, w_star, grad, noise, precond, step_size: float, localization: float, n_beta: float):
    "One RMSprop-SGLD step of all chains `w` [chains, params], in place: the drift and noise scaled by `precond`."
    drift = torch.sub(w, w_star).mul_(localization).add_(grad, alpha=n_beta)      # grad of the potential U
    w.addcmul_(precond, drift, value=-step_size / 2)
    w.addcmul_(precond.sqrt(), noise, value=math.sqrt(step_size))


# %% [markdown]
# **Metropolis adjustment.** SGLD never rejects a step, so its chains sample a distribution a little wider than
# the tempered posterior; the excess grows with the step and with the curvature the chains meet. Where the
# curvature varies by orders of magnitude, as it does along a singular valley, a step that the average point
# accepts 99.7% of the time can still leave the estimate 20% high. With the full batch at every step the potential
# is exact, so the Langevin proposal can be accepted with MALA's probability and rejected otherwise (Roberts &
# Tweedie 1996): the chains then sample the tempered posterior itself, at any step size, and the step only sets
# how fast they mix. The test for the proposal made at step t−1 needs the loss and gradient at it, which step t
# computes anyway, so it costs one uniform draw per chain; a rejected chain is put back, in place, where it was.
# A proposal whose loss is not finite is always rejected.

# %%
#| export
@patch
def _metropolis(self: SGLDSampler, w: torch.Tensor, loss: torch.Tensor, grads, last: dict | None, chains: _Chains,
                t: int, gen: torch.Generator):
    """Accept the proposals `w` [chains, params] of step t-1 with MALA's probability, else put the chain back (in
    place: the autograd leaves follow). Returns the loss and gradients there, and the next test's state."""
    flat = torch.cat([g.reshape(len(w), -1) for g in grads], 1)                    # grad L_n [chains, params]
    state = self._state(w.clone(), loss, flat, chains)
    if last is not None:
        acc = torch.nan_to_num(mala_acceptance(last['state'], state, chains.step_size_at(t - 1, exact=True)))
        col = (take := torch.rand(len(w), generator=gen, dtype=torch.float64, device=w.device) < acc)[:, None]
        w.copy_(torch.where(col, w, last['state'].w))
        loss = torch.where(take.reshape(loss.shape), loss, last['loss'])
        flat = torch.where(col, flat, last['grad'])
        state = LangevinState(w.clone(), torch.where(take, state.potential, last['state'].potential),
                              torch.where(col, state.grad, last['state'].grad))
        grads = [piece.reshape_as(g) for piece, g in zip(flat.split([g.numel() // len(w) for g in grads], 1), grads)]
    return loss, grads, dict(state=state, loss=loss, grad=flat)


# %% [markdown]
# **The loop** puts it together, and `sample` adds the back-off. A run has one row per chain, the draws are the
# trace after the burn-in, and each chain starts at $w^*$ with its own minibatches:

# %%
#| export
@patch
def _attempt(self: SGLDSampler, models: list, settings: SGLDSettings, bar, per_model: list | None = None) -> SGLDRun:
    """One try at every chain of `models` under `settings` (`per_model`: each model's own step sizes and
    localization, where they differ); raises `SGLDDivergenceError`."""
    chains = self._chains(models, settings, per_model)
    s, n = settings, len(self.X)
    noise_gens = self._generators(chains, 0, self.device)
    batches = chain_minibatches(self.X, self.y, min(s.batch_size or n, n),
                                self._generators(chains, 1, 'cpu'), self.device)
    w = chains.w_star.clone()                                    # every chain's weights [chains, params]
    leaves, step_loss = self._differentiable(w, chains.buffers)
    trace = torch.empty(len(w), s.n_steps, dtype=torch.promote_types(w.dtype, torch.float32),
                        device=self.device)                      # [chains, steps], the weights' dtype
    noise, paired, diagnostics, recorded, losses, checked = torch.empty_like(w), [], [], [], [], 0
    flat_record = getattr(self.record, 'takes_flat', False)      # a record that reads w [chains, params] as is
    if hasattr(self.record, 'reset'):                            # an accumulating record starts afresh each try
        self.record.reset()
    rmsprop = s.preconditioner == 'rmsprop'
    square_avg = torch.zeros_like(w) if rmsprop else None        # RMSprop's running mean of g^2 [chains, params]
    if per_model is not None:                                    # per phase: eps gamma/2, -eps n_beta/2, sqrt(eps)
        gamma = chains.gamma_column(exact=True)
        per_chain = {phase: ((e * gamma / 2).to(w.dtype),
                             [(-e * self.n_beta / 2).to(w.dtype).view(-1, *[1] * (x.dim() - 1)) for x in leaves],
                             e.sqrt().to(w.dtype))
                     for phase, e in (('burn-in', chains.step_size_at(0, exact=True)),
                                      ('sampling', chains.step_size_at(s.n_burnin, exact=True)))}
    # per phase, the shared step's scalars: eps gamma/2, -eps n_beta/2, sqrt(eps) (the same floats at every step)
    phase_eps = {'burn-in': s.step_size_at(0), 'sampling': s.step_size_at(s.n_burnin)}
    shared = {p: (e * s.localization / 2, -e * self.n_beta / 2, math.sqrt(e)) for p, e in phase_eps.items()}
    w_star, paired_baseline, records = chains.w_star, s.baseline == 'paired', self.record is not None
    last, accept_gen = None, torch.Generator(self.device).manual_seed(chain_seed(s.seed, chains.models[0], 0, 2))
    for t in range(s.n_steps):
        phase, batch = 'burn-in' if t < s.n_burnin else 'sampling', next(batches)
        loss = step_loss(*batch)                                 # [chains] (0-d for a lone chain)
        grads = torch.autograd.grad(loss if loss.dim() == 0 else loss.sum(), leaves)   # one per parameter tensor
        with torch.no_grad():
            if s.metropolis:                                     # accept or reject the last step's proposal
                loss, grads, last = self._metropolis(w, loss, grads, last, chains, t, accept_gen)
            losses.append(loss)
            # into the trace and scanned for NaN/inf every 50 steps: no per-step sync or copy
            if t + 1 - checked == 50 or t + 1 == s.n_steps:
                trace[:, checked:t + 1] = torch.stack(losses, -1)
                self._check_finite(trace, (checked, t + 1), chains)
                checked, losses = t + 1, []
            if (paired_baseline or records) and s.is_draw(t):
                if paired_baseline:
                    paired.append(loss - self.f(self.stack.params(w_star), chains.buffers, *batch))
                if records:                                      # w_t: the weights of this draw
                    recorded.append(self.record(w if flat_record else self.stack.params(w), chains.buffers))
            if len(noise_gens) == 1:                             # the same draws as noise[0], one call fewer
                noise.normal_(generator=noise_gens[0])
            else:
                for i, gen in enumerate(noise_gens):             # each chain's own generator, in place
                    noise[i].normal_(generator=gen)
            check = s.diag_every and t % s.diag_every == 0
            if rmsprop:
                g = torch.cat([x.reshape(len(w), -1) for x in grads], 1)            # grad L_B [chains, params]
                precond = rmsprop_preconditioner(square_avg, g, s.rmsprop_alpha, s.rmsprop_eps)
            if check:
                before = self._before_step(w, loss, grads, noise, chains, precond if rmsprop else None)
            if rmsprop:
                preconditioned_step(w, w_star, g, noise, precond, phase_eps[phase], s.localization, self.n_beta)
            elif per_model is None:
                pull, grad_alpha, noise_alpha = shared[phase]
                w.lerp_(w_star, pull)                                             # w -= eps/2 gamma (w - w*)
                torch._foreach_add_(leaves, grads, alpha=grad_alpha)              # w -= eps/2 n_beta grad L_B
                w.add_(noise, alpha=noise_alpha)                                  # w += N(0, eps)
            else:                                                # the same step with each chain's eps and gamma
                pull, grad_scales, noise_scale = per_chain[phase]
                w.lerp_(w_star, pull)
                torch._foreach_addcmul_(leaves, grads, grad_scales)
                w.addcmul_(noise, noise_scale)
        if check:
            diagnostics.append(self._diagnostics(t, before, w, batch, chains))
        if bar is not None:
            bar.update()
    draws = (torch.stack(paired, 1) if s.baseline == 'paired'
             else trace[:, s.n_burnin::s.steps_between_draws])
    table = diagnostics_table(diagnostics, chains)
    return SGLDRun(trace.cpu(), draws.cpu(), table, settings, recorded if self.record is not None else None,
                   per_model)


# %% [markdown]
# **Which step to blame.** A chain that diverges during the burn-in had the burn-in step too large, and that
# step is halved; so is the sampling step when it would otherwise be larger than the halved burn-in step, since
# the sampling phase explores the region the burn-in led to (with equal steps, both are halved). A chain that diverges in the sampling phase may be innocent of the sampling step: a
# burn-in step that is too large can throw the chains far out without a non-finite loss, into a region whose
# curvature the sampling step does not survive, and the loss explodes a few steps after the burn-in ends.
# Halving the sampling step alone then retries the same burn-in and fails the same way. How long is "a few
# steps"? Near $w^*$ the loss only adds curvature, so the slowest pull back is the localization's: per step it
# shrinks the offset $w_t-w^*$ by the factor $1-\epsilon\gamma/2$, one factor $e$ per $2/(\epsilon\gamma)$
# steps. A sampling divergence within `RELAXATIONS_AFTER_BURNIN` = 3 of these relaxation times after the
# burn-in, while more than $e^{-3}$ of where the burn-in left the chain may remain, halves the burn-in step as
# well; a later one is the sampling step's alone. (Without a separate `burnin_step_size`, halving the step size
# halves both phases anyway.)

# %%
#| export
RELAXATIONS_AFTER_BURNIN = 3

def phases_to_halve(settings: SGLDSettings, error: SGLDDivergenceError) -> tuple[str, ...]:
    """The phases whose step sizes the back-off halves after `error`: its own phase; the sampling phase too
    after a burn-in divergence when its step would exceed the halved burn-in step; the burn-in too when a
    sampling divergence comes within `RELAXATIONS_AFTER_BURNIN` relaxation times 2/(eps*gamma) of its end."""
    if settings.n_burnin == 0 or settings.burnin_step_size is None:
        return (error.phase,)
    if error.phase == 'burn-in':
        return ('burn-in', 'sampling') if settings.step_size > settings.burnin_step_size / 2 else ('burn-in',)
    rate = settings.flat_step_size * settings.localization / 2               # offset shrinks by 1-rate per step
    if rate > 0 and (error.step - settings.n_burnin) * rate >= RELAXATIONS_AFTER_BURNIN:
        return ('sampling',)
    return ('burn-in', 'sampling')


# %%
def divergence(phase, step):
    return SGLDDivergenceError('made up', phase=phase, step=step, model=0, chain=0, step_size=1e-3)

s = SGLDSettings(step_size=1e-3, burnin_step_size=1e-2, localization=10.0, n_burnin=100, n_draws=1000)
# one relaxation time is 2 / (1e-3 * 10) = 200 steps, so three end 600 steps after the burn-in
assert phases_to_halve(s, divergence('burn-in', 50)) == ('burn-in',)                  # 1e-3 < 1e-2 / 2
assert phases_to_halve(s.replace(burnin_step_size=1e-3), divergence('burn-in', 50)) == ('burn-in', 'sampling')
assert phases_to_halve(s, divergence('sampling', 101)) == ('burn-in', 'sampling')
assert phases_to_halve(s, divergence('sampling', 699)) == ('burn-in', 'sampling')
assert phases_to_halve(s, divergence('sampling', 700)) == ('sampling',)
assert phases_to_halve(s.replace(localization=0.0), divergence('sampling', 1099)) == ('burn-in', 'sampling')
assert phases_to_halve(s.replace(burnin_step_size=None), divergence('sampling', 101)) == ('sampling',)
assert phases_to_halve(s.replace(n_burnin=0), divergence('sampling', 1)) == ('sampling',)


# %%
#| export
@patch
def sample(self: SGLDSampler, models: list, bar=None) -> SGLDRun:
    """Every chain of the models `models`; backs off and retries on divergence if the settings say so. With
    settings per model, only the diverging model's step sizes are halved (all models run again)."""
    settings, start = self.settings, bar.n if bar is not None else 0
    per_model = None if self.per_model is None else [self.per_model[m] for m in models]
    for attempt in range(4):
        try:
            return self._attempt(models, settings, bar, per_model)
        except SGLDDivergenceError as e:
            if settings.on_divergence == 'raise' or attempt == 3:
                raise
            if bar is not None:                                   # the retry runs these steps again
                bar.n = start
                bar.refresh()
            k = models.index(e.model)
            own = settings if per_model is None else per_model[k]
            phases = phases_to_halve(own, e)
            for phase in phases:
                own = own.halved(phase)
            if per_model is None:
                settings = own
            else:
                per_model[k] = own
            sizes = ', '.join(f"{own.step_size_at(0 if p == 'burn-in' else own.n_burnin):.3g}" for p in phases)
            which = ' and '.join(phases) + (' step sizes' if len(phases) > 1 else ' step size')
            whose = f"models {models}" if per_model is None else f"model {e.model} (of {models})"
            msg = f"SGLD diverged; retrying {whose} with the {which} {sizes} ({e})"
            warnings.warn(msg, stacklevel=3)


# %%
run = sampler.sample([0])
assert run.trace.shape == (3, 250) and run.draws.shape == (3, 200)
assert torch.equal(run.draws, run.trace[:, 50:]) and run.settings == settings
assert not torch.equal(run.trace[0], run.trace[1])                          # chains see different minibatches
assert set(run.diagnostics.columns) == {'step', 'model', 'chain', 'step_size', 'mala_acceptance',
                                        'grad_to_noise', 'distance'}
assert len(run.diagnostics) == 3 * len(range(0, 250, 20))
assert run.recorded is None                                                 # no `record`: nothing recorded
run.diagnostics.groupby('chain')[['mala_acceptance', 'grad_to_noise']].mean()

# %% [markdown]
# **What `record` sees.** The mean weight of each chain, recorded at every draw, must equal the mean weight of
# the same chain run by hand: the update written out as in the equation above, $w_{t+1} = w_t -
# \tfrac{\epsilon}{2}(n\beta\nabla L_n(w_t) + \gamma(w_t-w^*)) + \sqrt\epsilon\,\xi_t$, with the gradient from
# autograd on the full data (`batch_size=None`, so no minibatch order is involved), the noise $\xi_t$ drawn
# from each chain's noise generator, and $w_t$ read at the draw steps. Two chains (the vectorized path) and a
# localization $\gamma=50$ large enough that its pull shows; agreement to float32 rounding.

# %%
from torch.func import functional_call
from fracsgd.nets.stack import chain_seed
s_rec = settings.replace(n_chains=2, n_burnin=7, n_draws=12, steps_between_draws=3, batch_size=None,
                         localization=50.0, seed=4)
mean_weight = lambda params, buffers: torch.cat([p.flatten(1) for p in params.values()], 1).mean(1)  # [chains]
recorded = SGLDSampler(sampler.stack, sampler.loss_fn, data_reg, s_rec, record=mean_weight).sample([0])
assert len(recorded.recorded) == s_rec.n_draws and recorded.recorded[0].shape == (2,)
w_star = sampler.stack.flat[0]
def full_loss(w):                                                         # L_n at flat weights w [params]
    params = {name: p[0] for name, p in sampler.stack.params(w[None]).items()}
    return resolve_loss('regression')(functional_call(reg, params, (X_reg,)), y_reg).mean()
for c in range(2):
    noise_gen = torch.Generator().manual_seed(chain_seed(s_rec.seed, 0, c, 0))     # stream 0: the noise
    w, by_hand = w_star.clone(), []
    for t in range(s_rec.n_steps):
        if s_rec.is_draw(t):
            by_hand.append(w.mean())
        grad, = torch.autograd.grad(full_loss(w.requires_grad_(True)), w)
        eps = s_rec.step_size
        w = (w - eps / 2 * (sampler.n_beta * grad + s_rec.localization * (w - w_star))
             + math.sqrt(eps) * torch.empty_like(w).normal_(generator=noise_gen)).detach()
    sampled = torch.stack([r[c] for r in recorded.recorded])
    assert torch.allclose(sampled, torch.stack(by_hand), rtol=0, atol=1e-6), (sampled, by_hand)
    assert (sampled - w_star.mean()).abs().max() > 1e-3                    # the chains did move

# %% [markdown]
# The same check for RMSprop-SGLD: the loop written out as in the equation of the preconditioner above, with
# a small $\varepsilon_{\rm rms}=10^{-3}$ so that $G$ differs from coordinate to coordinate, against the sampler's
# vectorized chains.

# %%
s_rms = s_rec.replace(preconditioner='rmsprop', rmsprop_eps=1e-3, step_size=s_rec.step_size * 1e-3)
rms_run = SGLDSampler(sampler.stack, sampler.loss_fn, data_reg, s_rms, record=mean_weight).sample([0])
for c in range(2):
    noise_gen = torch.Generator().manual_seed(chain_seed(s_rms.seed, 0, c, 0))
    w, V, by_hand, spread = w_star.clone(), torch.zeros_like(w_star), [], []
    for t in range(s_rms.n_steps):
        if s_rms.is_draw(t):
            by_hand.append(w.mean())
        grad, = torch.autograd.grad(full_loss(w.requires_grad_(True)), w)
        V = 0.99 * V + 0.01 * grad ** 2
        G = 1 / (V.sqrt() + 1e-3)
        spread.append(float(G.max() / G.min()))
        eps = s_rms.step_size
        w = (w - eps / 2 * G * (sampler.n_beta * grad + s_rms.localization * (w - w_star))
             + (eps * G).sqrt() * torch.empty_like(w).normal_(generator=noise_gen)).detach()
    sampled = torch.stack([r[c] for r in rms_run.recorded])
    assert torch.allclose(sampled, torch.stack(by_hand), rtol=0, atol=1e-6), (sampled, by_hand)
    assert max(spread) > 2                                  # G really differs between coordinates

# %% [markdown]
# And for the Metropolis adjustment: the same chains written out by hand, each step accepted when a uniform from the
# accept generator (stream 2) falls below MALA's probability $\min(1, e^{U(w) - U(w')} q(w \mid w')/q(w' \mid w))$,
# with $q(b \mid a) \propto \exp(-\lVert b - a + \tfrac\epsilon2\nabla U(a)\rVert^2 / 2\epsilon)$, and put back where it
# was otherwise. The step is 4 times the one above, so that some proposals are rejected.

# %%
s_mh = s_rec.replace(metropolis=True, step_size=s_rec.step_size * 4)
mh_run = SGLDSampler(sampler.stack, sampler.loss_fn, data_reg, s_mh, record=mean_weight).sample([0])
def potential(w):                                                         # U(w) and its gradient, in float64
    w = w.detach().requires_grad_(True)
    u = sampler.n_beta * full_loss(w).double() + s_mh.localization / 2 * (w - w_star).double().pow(2).sum()
    return u.detach(), torch.autograd.grad(u, w)[0].detach()
noise_gens = [torch.Generator().manual_seed(chain_seed(s_mh.seed, 0, c, 0)) for c in range(2)]
accept_gen = torch.Generator().manual_seed(chain_seed(s_mh.seed, 0, 0, 2))
eps, W, by_hand, rejected = s_mh.step_size, [w_star.clone(), w_star.clone()], [], 0
old = None
for t in range(s_mh.n_steps):
    cur = [potential(w) for w in W]
    if old is not None:
        u = torch.rand(2, generator=accept_gen, dtype=torch.float64)
        for c in range(2):
            (w0, (u0, g0)), (w1, (u1, g1)) = old[c], (W[c], cur[c])
            fwd = (w1 - w0 + eps / 2 * g0).double().pow(2).sum() / (2 * eps)
            bwd = (w0 - w1 + eps / 2 * g1).double().pow(2).sum() / (2 * eps)
            if not u[c] < torch.exp(torch.clamp(u0 - u1 + fwd - bwd, max=0.0)):
                W[c], cur[c], rejected = w0, (u0, g0), rejected + 1
    if s_mh.is_draw(t):
        by_hand.append(torch.stack([w.mean() for w in W]))
    old = [(W[c], cur[c]) for c in range(2)]
    W = [(W[c] - eps / 2 * cur[c][1].float() + math.sqrt(eps) * torch.empty_like(W[c]).normal_(generator=noise_gens[c])).detach()
         for c in range(2)]
sampled = torch.stack(mh_run.recorded)
assert torch.allclose(sampled, torch.stack(by_hand), rtol=0, atol=1e-5), (sampled, by_hand)
assert 0 < rejected < 2 * (s_mh.n_steps - 1), rejected                   # some proposals rejected, not all
rejected, s_mh.n_steps - 1

# %% [markdown]
# A float64 model on float64 data samples in float64: weights, noise and trace. Data on another device than the
# stack are refused, naming both devices (here `meta`, PyTorch's device of tensors without storage):

# %%
import copy
reg64 = copy.deepcopy(reg).double()
run64 = SGLDSampler(ModelStack([reg64], 'cpu'), sampler.loss_fn, (X_reg.double(), y_reg.double()),
                    settings.replace(n_draws=20, n_burnin=5)).sample([0])
assert run64.trace.dtype == torch.float64 and torch.isfinite(run64.draws).all()
assert next(reg64.parameters()).dtype == torch.float64 and next(reg.parameters()).dtype == torch.float32
try:
    SGLDSampler(sampler.stack, sampler.loss_fn, (X_reg.to('meta'), y_reg.to('meta')), settings)
    raise AssertionError
except ValueError as e:
    assert 'meta' in str(e) and 'cpu' in str(e), e

# %% [markdown]
# The smaller the step, the closer each step is to exact: the MALA acceptance of the same chains at five step
# sizes, in units of $1/(n\beta h_{\max})$ (here $h_{\max}\approx 1$, the top eigenvalue of
# $\mathbb E[xx^\top]$):

# %%
rows = []
for c in (1.0, 0.3, 0.1, 0.03, 0.01):
    s_c = settings.replace(step_size=c / default_n_beta(2000), n_burnin=0, n_draws=200, diag_every=5)
    d = SGLDSampler(sampler.stack, sampler.loss_fn, data_reg, s_c).sample([0]).diagnostics
    rows.append(d.assign(stiffness=c))
acceptance = pd.concat(rows)
means = acceptance.groupby('stiffness').mala_acceptance.mean()
assert means.is_monotonic_decreasing and means[0.01] > 0.99 and means[1.0] < means[0.1]
fig, ax = plt.subplots(figsize=(5.5, 3))
sns.boxplot(acceptance, x='stiffness', y='mala_acceptance', ax=ax, color='tab:blue', fliersize=2)
ax.set(xlabel=r'step size $\times\, n\beta h_{\max}$', ylabel='MALA acceptance', title='acceptance per step')
plt.tight_layout()

# %% [markdown]
# A step size far too large diverges: the error names the phase, the step and the step size, and carries them.
# With `on_divergence='backoff'` the sampler halves the step sizes to blame (see above) until the chains stay
# finite, and returns the step sizes it used.

# %%
too_big = settings.replace(step_size=10 / default_n_beta(2000), n_burnin=0)
try:
    SGLDSampler(sampler.stack, sampler.loss_fn, data_reg, too_big).sample([0])
    raise AssertionError
except SGLDDivergenceError as e:
    print(e)
    assert e.phase == 'sampling' and e.step_size == too_big.step_size and 'step_size=' in str(e)
fast_burnin = settings.replace(burnin_step_size=20 / default_n_beta(2000), on_divergence='backoff')
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    backed_off = SGLDSampler(sampler.stack, sampler.loss_fn, data_reg, fast_burnin).sample([0])
assert backed_off.settings.burnin_step_size < fast_burnin.burnin_step_size
assert backed_off.settings.step_size == fast_burnin.step_size   # only the burn-in step was halved
assert any('burn-in' in str(w.message) for w in caught)
backed_off.settings.burnin_step_size * default_n_beta(2000)

# %% [markdown]
# A made-up case where the burn-in is to blame for a divergence in the sampling phase: a two-layer linear
# network (its curvature grows with the square of the weights), a burn-in step of 5 in units of
# $1/(n\beta h_{\max})$, beyond the stability limit of 4 in the stiffest direction, for 14 steps, and a sampling
# step of 0.05, stable near $w^*$. The burn-in throws the chains out without a non-finite loss; the first
# sampling steps explode. A sampling step 8 times smaller (where three halvings of it alone would end) fails
# the same way; the back-off halves the burn-in step as well, and one retry suffices:

# %%
deep = make_dln([6, 4, 3], 2, seed=0)
data_deep = as_data(dln_data(deep, 2000), 'cpu')
scale = default_n_beta(2000) * 1.7714                              # n_beta h_max of this network
thrown_out = SGLDSettings(step_size=0.05 / scale, burnin_step_size=5 / scale, n_chains=2, n_burnin=14,
                          n_draws=100, batch_size=None, diag_every=0)
deep_sampler = SGLDSampler(ModelStack([deep], 'cpu'), resolve_loss('regression'), data_deep, thrown_out)
for sampling_step in (thrown_out.step_size, thrown_out.step_size / 8):
    deep_sampler.settings = thrown_out.replace(step_size=sampling_step)
    try:
        deep_sampler.sample([0])
        raise AssertionError
    except SGLDDivergenceError as e:
        assert e.phase == 'sampling' and e.step - thrown_out.n_burnin < 5        # a few steps after the burn-in
deep_sampler.settings = thrown_out.replace(on_divergence='backoff')
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    rescued = deep_sampler.sample([0])
assert torch.isfinite(rescued.trace).all() and len(caught) == 1
assert 'burn-in and sampling step sizes' in str(caught[0].message)
assert rescued.settings.burnin_step_size == thrown_out.burnin_step_size / 2
rescued.settings.burnin_step_size * scale, rescued.settings.step_size * scale

# %% [markdown]
# **Settings per model.** `calibrate_at_curvature` (the [LLC chapter](llc.html)) gives each net its own step size and
# localization, from its own curvature. Run one net at a time, ten nets cost ten sampler loops; on a GPU each
# loop is bound by the host, so ten loops cost ten times one. Given a list of settings, one per model, the sampler
# runs them all in one vectorized pass, each chain with its model's $\epsilon$ and $\gamma$ (`shared_settings`
# refuses lists that differ in anything else: one pass has one schedule). What it must do: chain $k$ of model
# $m$ takes exactly the path it takes in a pass where every model has $m$'s settings, since its generators and
# minibatches depend only on the seed, $m$ and $k$. Three regression models, three step sizes and localizations
# a factor of 4 apart:

# %%
models3 = [make_dln([10, 3], 3, seed=i) for i in range(3)]
stack3 = ModelStack(models3, 'cpu')
data3 = as_data(dln_data(models3[0], 2000), 'cpu')
own = [settings.replace(step_size=settings.step_size / 4 ** i, localization=10.0 * 4 ** i, n_chains=2)
       for i in range(3)]
together = SGLDSampler(stack3, resolve_loss('regression'), data3, own).sample([0, 1, 2])
for m, s_m in enumerate(own):
    alone = SGLDSampler(stack3, resolve_loss('regression'), data3, s_m).sample([0, 1, 2])  # everyone at m's
    rows = slice(2 * m, 2 * m + 2)
    assert torch.allclose(together.trace[rows], alone.trace[rows], rtol=1e-5, atol=1e-7)
    d, a = (r.diagnostics[r.diagnostics.model == m].reset_index(drop=True) for r in (together, alone))
    assert np.allclose(d.step_size, s_m.step_size) and np.allclose(d.mala_acceptance, a.mala_acceptance, atol=1e-6)
assert together.per_model == own and not torch.equal(together.trace[0], together.trace[2])
for bad, word in [([own[0], own[1].replace(batch_size=100), own[2]], 'batch_size'), (own[:2], '2 settings')]:
    try:
        SGLDSampler(stack3, resolve_loss('regression'), data3, bad)
        raise AssertionError
    except ValueError as e:
        assert word in str(e), e
assert SGLDSampler(stack3, resolve_loss('regression'), data3, [own[0]] * 3).per_model is None  # one shared setting

# %% [markdown]
# With back-off, a model that diverges has its own step sizes halved, and the others keep theirs (the pass runs
# again for all):

# %%
wild = [s_m.replace(on_divergence='backoff', n_burnin=0) for s_m in own]
wild[1] = wild[1].replace(step_size=10 / default_n_beta(2000))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    calmed = SGLDSampler(stack3, resolve_loss('regression'), data3, wild).sample([0, 1, 2])
assert calmed.per_model[1].step_size < wild[1].step_size and calmed.per_model[0] == wild[0]
assert calmed.per_model[2] == wild[2] and torch.isfinite(calmed.trace).all()
assert all('model 1' in str(w.message) for w in caught)
[s_m.step_size * default_n_beta(2000) for s_m in calmed.per_model]

# %%
#| hide
import nbdev
nbdev.nbdev_export()
