# %% [markdown]
# # LLC estimation
#
# > The local learning coefficient of any `nn.Module` by SGLD: all chains and many models in one vectorized loop, with standard errors, diagnostics, step-size calibration, the paper's preset, and a check against Aoyagi's exact coefficients of deep linear networks.

# %%
#| default_exp llc

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import copy, math, time, warnings
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm
from torch import nn
from torch.func import functional_call, vmap

from fracsgd.core import default_device

# %%
import time
import matplotlib.pyplot as plt
torch.set_num_threads(1)   # the models on this page are tiny: one thread avoids thread contention on small CPUs


# %% [markdown]
# ## What is estimated
#
# Lau et al. (2024) define the local learning coefficient $\lambda(w^*)$ of a parameter $w^*$ through the volume of
# nearly-as-good parameters around it, and estimate it with a WBIC-style average (their eq. 11 and Algorithm 1, appendix G):
#
# $$\hat\lambda(w^*) = n\beta\,\big(\mathbb{E}_w[L_n(w)] - L_n(w^*)\big),\qquad n\beta = \frac{n}{\log n},$$
#
# where $L_n$ is the mean per-sample negative log-likelihood on the $n$ training samples and the expectation is over the
# tempered posterior localized at $w^*$, $p(w)\propto\exp\{-n\beta L_n(w)-\tfrac{\gamma}{2}\|w-w^*\|^2\}$. It is sampled by
# stochastic-gradient Langevin dynamics (SGLD) on minibatches $B$,
#
# $$\Delta w_t = -\tfrac{\epsilon}{2}\big(n\beta\,\nabla L_B(w_t) + \gamma\,(w_t-w^*)\big) + \mathcal N(0,\epsilon I).$$
#
# The hyperparameters keep the paper's names: step size $\epsilon$ (`step_size`), localization $\gamma$ (`localization`),
# chains (`n_chains`), draws (`n_draws`), burn-in (`n_burnin`), steps between draws (`steps_between_draws`), batch size
# (`batch_size`) and inverse temperature $n\beta$ (`n_beta`, default $n/\log n$ with $n$ the training-set size).
# Note that `devinterp.utils.default_nbeta` uses the *batch* size instead of $n$; pass `n_beta=` to reproduce it.

# %% [markdown]
# ## Losses: per-sample negative log-likelihoods
#
# The estimator needs a per-sample loss `loss(output, target) -> (batch,)` that is a negative log-likelihood. For
# classification this is the cross-entropy; for regression a Gaussian with standard deviation $\sigma$,
# $\|y-f(x)\|^2/(2\sigma^2)$ (the normalizing constant cancels in $L_B(w)-L_n(w^*)$ and is dropped).

# %%
#| export
def cross_entropy_loss(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    "Per-sample negative log-likelihood of a classifier with logits `output` and integer labels `target`."
    return F.cross_entropy(output, target, reduction='none')

def gaussian_nll(sigma: float = 1.0) -> Callable:
    "Per-sample Gaussian negative log-likelihood `|y - f(x)|^2 / (2 sigma^2)`, without its constant (it cancels in the LLC)."
    if not sigma > 0: raise ValueError(f"gaussian_nll: sigma must be > 0, got {sigma}")
    def loss(output, target): return (output - target).pow(2).flatten(1).sum(1) / (2 * sigma**2)
    loss.sigma = sigma
    return loss

def resolve_loss(loss) -> Callable:
    "A per-sample loss from a name ('classification', 'regression' = Gaussian with sigma 1) or a callable `(output, target) -> (batch,)`."
    if callable(loss): return loss
    names = {'classification': cross_entropy_loss, 'cross_entropy': cross_entropy_loss,
             'regression': gaussian_nll(1.0), 'gaussian': gaussian_nll(1.0)}
    if loss not in names: raise ValueError(f"loss must be a callable or one of {sorted(names)}, got {loss!r}")
    return names[loss]

def default_n_beta(n: int) -> float:
    "The inverse temperature n*beta = n / log n (Lau et al. 2024, Algorithm 1) for n training samples."
    if n < 2: raise ValueError(f"n_beta = n/log n needs at least 2 training samples, got n={n}")
    return n / math.log(n)


# %%
out, tgt = torch.tensor([[2.0, 0.0], [0.0, 0.0]]), torch.tensor([0, 1])
assert torch.allclose(resolve_loss('classification')(out, tgt), torch.tensor([math.log(1 + math.exp(-2)), math.log(2)]))
assert torch.allclose(gaussian_nll(2.0)(torch.ones(3, 2), torch.zeros(3, 2)), torch.full((3,), 2 / 8))
assert abs(default_n_beta(10_000) - 10_000 / math.log(10_000)) < 1e-9
for bad in ['hinge', 1]:
    try: resolve_loss(bad); raise AssertionError
    except ValueError as e: assert 'loss must be' in str(e)

# %% [markdown]
# ## The paper's preset
#
# Hennick & De Baerdemacker estimate every LLC with the same SGLD setting (appendix G, table 3): step size $10^{-5}$,
# localization 100, one chain of 400 draws, no burn-in, one step between draws. `preset('paper')` returns it; the batch
# size and $n\beta$ are not given in the paper, so they keep this chapter's defaults unless you pass them.

# %%
#| export
PAPER_PRESET = dict(step_size=1e-5, localization=100.0, n_chains=1, n_draws=400, n_burnin=0, steps_between_draws=1)

def preset(name: str) -> dict:
    "Named SGLD hyperparameters (a fresh dict): 'paper' is Hennick & De Baerdemacker's appendix G, table 3."
    presets = {'paper': PAPER_PRESET}
    if name not in presets: raise ValueError(f"unknown LLC preset {name!r}; known: {sorted(presets)}")
    return dict(presets[name])


# %%
p = preset('paper'); p['n_draws'] = 1
assert preset('paper')['n_draws'] == 400 and preset('paper')['localization'] == 100.0   # a copy, not the constant
preset('paper')


# %% [markdown]
# ## All chains, all models, one step
#
# The parameters of $M$ same-architecture models are flattened into one tensor of shape `[M, D]` and repeated for the
# $C$ chains, giving `[M*C, D]`. Views of it are handed to `torch.func.functional_call`, vectorized with `vmap` over the
# stacked dimension, so one forward and one backward pass advance every chain of every model. Each chain draws its own
# minibatch order and its own Gaussian noise from generators seeded by `(seed, model index, chain index)`, so a chain's
# result does not depend on which other models share its chunk. A lone chain (one model, one chain) skips `vmap` and
# `functional_call`: a private copy of the model whose parameters live in that same memory is called directly, which
# gives the same numbers with less per-step overhead (tested in `tests/test_llc.py`).
#
# Models are evaluated in **eval mode**: batch-norm layers use their running statistics (and are not updated), dropout
# is off. This makes the loss a fixed function of the weights, as the posterior requires. Buffers are stacked per model.

# %%
#| export
def _as_data(data, device):
    if isinstance(data, torch.utils.data.TensorDataset): data = data.tensors
    if not (isinstance(data, (tuple, list)) and len(data) == 2 and all(torch.is_tensor(t) for t in data)):
        raise ValueError("data must be a pair of tensors (inputs, targets) or a TensorDataset of two tensors")
    X, y = data
    if len(X) != len(y): raise ValueError(f"data: inputs have {len(X)} rows but targets have {len(y)}")
    if len(X) < 2: raise ValueError(f"data must hold at least 2 samples, got {len(X)}")
    return X.to(device), y.to(device)

class _Stack:
    "Parameters of same-architecture models flattened into one [models, D] tensor, plus stacked buffers."
    def __init__(self, models: Sequence[nn.Module], device):
        ref = models[0]
        self.names = [n for n, _ in ref.named_parameters()]
        self.shapes = [p.shape for _, p in ref.named_parameters()]
        for i, m in enumerate(models[1:], 1):
            got = [(n, p.shape) for n, p in m.named_parameters()]
            if got != list(zip(self.names, self.shapes)):
                raise ValueError(f"model {i} does not have the architecture of model 0 (parameter names/shapes differ)")
        self.sizes = [math.prod(s) for s in self.shapes]
        self.D = sum(self.sizes)
        self.flat = torch.stack([torch.cat([p.detach().reshape(-1) for p in m.parameters()]) for m in models]).to(device)
        self.buffers = {n: torch.stack([dict(m.named_buffers())[n].detach() for m in models]).to(device)
                        for n, _ in ref.named_buffers()}

    def params(self, flat):
        "Views of a [K, D] tensor as a dict of [K, *shape] parameters."
        K = flat.shape[0]                                  # one split (its backward is one concatenation)
        return {n: piece.view(K, *s) for n, s, piece in zip(self.names, self.shapes, flat.split(self.sizes, dim=1))}

def _batched_loss(template: nn.Module, loss_fn: Callable):
    "f(params [K,...], buffers [K,...], x [K,B,...], y [K,B,...]) -> mean per-sample loss [K], vectorized with vmap."
    def one(p, b, x, y): return loss_fn(functional_call(template, (p, b), (x,)), y).mean()
    batched = vmap(one)
    def f(params, buffers, x, y):
        if x.shape[0] == 1:   # one chain: a plain call avoids vmap's batched kernels; squeeze(0), unlike [0], has a copy-free backward
            return one({k: v.squeeze(0) for k, v in params.items()}, {k: v.squeeze(0) for k, v in buffers.items()}, x[0], y[0])[None]
        return batched(params, buffers, x, y)
    return f

def _full_loss(template, loss_fn, stack_flat, stack, buffers, X, y, eval_batch=4096):
    "Mean loss on the full data for each row of `stack_flat` [M, D] (no grad)."
    M, n = stack_flat.shape[0], len(X)
    f, tot = _batched_loss(template, loss_fn), torch.zeros(M, dtype=torch.float64, device=X.device)
    with torch.no_grad():
        params = stack.params(stack_flat)
        for s in range(0, n, eval_batch):
            xb, yb = X[s:s + eval_batch], y[s:s + eval_batch]
            xs, ys = xb.expand(M, *xb.shape), yb.expand(M, *yb.shape)
            tot += f(params, buffers, xs, ys).double() * len(xb)
    return (tot / n)

# ---------------- the sampler


# %%
lin = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2)).eval()
st = _Stack([lin, lin], 'cpu')
assert st.flat.shape == (2, 3 * 4 + 4 + 4 + 4 + 4 * 2 + 2) and set(st.buffers) == {'1.running_mean', '1.running_var', '1.num_batches_tracked'}
Xs, ys = torch.randn(5, 3), torch.randint(0, 2, (5,))
full = _full_loss(lin, cross_entropy_loss, st.flat, st, st.buffers, Xs, ys)
assert torch.allclose(full.float(), cross_entropy_loss(lin(Xs), ys).mean().expand(2), atol=1e-6)   # vmapped == plain call
try: _Stack([lin, nn.Sequential(nn.Linear(3, 5))], 'cpu'); raise AssertionError
except ValueError as e: assert 'architecture' in str(e)


# %% [markdown]
# ### The SGLD loop
#
# The private SGLD worker of this module runs the update above for all chains of a chunk of models. It records the minibatch loss $L_B(w_t)$ at
# every step (the loss trace), and at draw steps (after `n_burnin` steps, every `steps_between_draws`) stores the draw;
# with `baseline='paired'` it stores the difference $L_B(w_t)-L_B(w^*)$ on the same minibatch instead, which removes the
# minibatch noise of the baseline. Every `diag_every` steps it records three diagnostics per chain: the MALA acceptance
# probability of the step just taken (Lau et al. 2024, app. H.1: computed, never used to reject), the ratio of the
# gradient step to the noise step, and the distance $\|w_t-w^*\|$. A non-finite loss stops the run with an
# `SGLDDivergenceError` that names the step size and the first step that went bad (the trace is scanned every 50 steps,
# so a GPU is never made to wait for a per-step check). The update is written as three in-place passes over the weights
# (a `lerp_` towards $w^*$, the gradient added per parameter tensor, the noise), and the gradients stay per tensor, so
# a step does no more than a bare forward+backward plus the noise draw and these three passes.

# %%
#| export
class SGLDDivergenceError(FloatingPointError):
    "SGLD produced a NaN/inf loss: the step size is too large for this model and temperature."

def _chain_seed(seed: int, model: int, chain: int, stream: int) -> int:
    return int(np.random.SeedSequence([seed, model, chain, stream]).generate_state(1)[0])

def _minibatches(X, y, K: int, B: int, data_gens, device):
    "Endless stream of `(xb [K, B, ...], yb [K, B, ...])`: chain k walks through its own random permutations, epoch after epoch."
    n = len(X)
    if B >= n:
        while True: yield X.expand(K, *X.shape), y.expand(K, *y.shape)
    while True:
        perm = torch.stack([torch.randperm(n, generator=g) for g in data_gens]).to(device)
        for j in range(n // B):              # index_select on the flat indices: one gather, faster than X[idx] on CPU
            idx = perm[:, j * B:(j + 1) * B].reshape(-1)
            yield X.index_select(0, idx).view(K, B, *X.shape[1:]), y.index_select(0, idx).view(K, B, *y.shape[1:])

def _step_size_at(h: dict, t: int) -> float:
    "The SGLD step size at step `t`: `burnin_step_size` during burn-in when one is set, else `step_size`."
    return h['burnin_step_size'] if t < h['n_burnin'] and h['burnin_step_size'] else h['step_size']

def _divergence(trace, t0, t1, model_ids, C, h, n_beta):
    "An `SGLDDivergenceError` for the first non-finite loss in `trace[:, t0:t1]`, or None if all are finite."
    bad = ~torch.isfinite(trace[:, t0:t1])
    if not bad.any(): return None
    t = t0 + int(bad.any(0).nonzero()[0]); k = int(bad[:, t - t0].nonzero()[0]); m, c = model_ids[k // C], k % C
    eps = _step_size_at(h, t)
    return SGLDDivergenceError(
        f"SGLD diverged at step {t} (model {m}, chain {c}): the minibatch loss is {trace[k, t].item()}. "
        f"step_size={eps:g}{' (burn-in)' if t < h['n_burnin'] else ''} is too large for this model at n_beta={n_beta:.4g}, "
        f"localization={h['localization']:g}; try step_size={eps / 10:g} or calibrate_step_size(...).")

def _chain_loss(template, loss_fn, f, stack, w, bufs):
    """Autograd leaves holding the chains' weights in the memory of `w` [K, D], one per parameter tensor, and
    `step_loss(xb, yb) -> [K]`. One chain calls a private copy of the model whose parameters are those leaves (no
    per-step rebinding); several chains go through `f` (functional_call under vmap)."""
    pieces = list(stack.params(w).values())             # [K, *shape] views of w, in the model's parameter order
    try: model = copy.deepcopy(template) if len(w) == 1 else None
    except Exception: model = None                      # a model that cannot be copied (e.g. it holds a lock) goes through f
    if model is None:
        leaves = [p.detach().requires_grad_(True) for p in pieces]
        params = dict(zip(stack.names, leaves))
        return leaves, lambda xb, yb: f(params, bufs, xb, yb)
    for p, piece in zip(model.parameters(), pieces): p.data = piece[0]
    for name, b in model.named_buffers(): b.copy_(bufs[name][0])
    return list(model.parameters()), lambda xb, yb: loss_fn(model(xb[0]), yb[0]).mean()[None]

def _sgld_chunk(template, loss_fn, stack, w_star, buffers, X, y, model_ids, h, n_beta, device, paired, diag_every, bar):
    "Run all chains of the models `model_ids` in one vectorized SGLD loop; return per-step losses, draws and diagnostics."
    C, gamma, n_burnin, every = h['n_chains'], h['localization'], h['n_burnin'], h['steps_between_draws']
    K, n_steps = len(model_ids) * C, h['n_burnin'] + h['n_draws'] * h['steps_between_draws']
    w0 = w_star.repeat_interleave(C, 0)
    bufs = {k: v.repeat_interleave(C, 0) for k, v in buffers.items()}
    noise_gens = [torch.Generator(device).manual_seed(_chain_seed(h['seed'], m, c, 0)) for m in model_ids for c in range(C)]
    data_gens = [torch.Generator().manual_seed(_chain_seed(h['seed'], m, c, 1)) for m in model_ids for c in range(C)]
    batches = _minibatches(X, y, K, min(h['batch_size'] or len(X), len(X)), data_gens, device)
    f = _batched_loss(template, loss_fn)
    w = w0.clone()                                                    # every chain's weights: one [K, D] tensor
    leaves, step_loss = _chain_loss(template, loss_fn, f, stack, w, bufs)
    trace, noise, paired_draws, diag, checked = torch.empty(K, n_steps, device=device), torch.empty_like(w0), [], [], 0
    for t in range(n_steps):
        eps = _step_size_at(h, t)
        xb, yb = next(batches)
        loss = step_loss(xb, yb)
        grads = torch.autograd.grad(loss.sum(), leaves)             # one gradient per parameter tensor, no concatenation
        with torch.no_grad():
            trace[:, t] = loss
            if t + 1 - checked == 50 or t + 1 == n_steps:           # look for NaN/inf every 50 steps: no per-step device sync
                err = _divergence(trace, checked, t + 1, model_ids, C, h, n_beta); checked = t + 1
                if err: raise err
            if paired and t >= n_burnin and (t - n_burnin) % every == 0:
                paired_draws.append(loss - f(stack.params(w0), bufs, xb, yb))
            for i, gen in enumerate(noise_gens): noise[i].normal_(generator=gen)     # each chain's own generator, in place
            check = diag_every and t % diag_every == 0
            if check: w_old, g_old = w.clone(), torch.cat([g.reshape(len(w), -1) for g in grads], 1)
            w.lerp_(w0, eps * gamma / 2)                                # w -= eps/2 * gamma * (w - w*)
            torch._foreach_add_(leaves, grads, alpha=-eps * n_beta / 2)  # w -= eps/2 * n_beta * grad L_B (leaves are w's memory)
            w.add_(noise, alpha=math.sqrt(eps))                         # w += N(0, eps)
        if check: diag.append(_step_diagnostics(f, stack, bufs, xb, yb, w_old, w, g_old, loss.detach(), noise, w0,
                                                n_beta, gamma, eps, t, model_ids, C))
        bar.update()
    draws = torch.stack(paired_draws, 1) if paired else trace[:, n_burnin::every]
    return trace.cpu(), draws.cpu(), (pd.concat(diag, ignore_index=True) if diag else pd.DataFrame())

def _step_diagnostics(f, stack, bufs, xb, yb, w_old, w_new, g_old, l_old, noise, w0, n_beta, gamma, eps, t, model_ids, C):
    "One row per chain for the step w_old -> w_new: MALA acceptance, gradient-to-noise ratio, distance from w*."
    acc = _mala_acceptance(f, stack, bufs, xb, yb, w_old, w_new, g_old, l_old, w0, n_beta, gamma, eps)
    g2n = (eps / 2 * n_beta * g_old.norm(dim=1)) / (math.sqrt(eps) * noise.norm(dim=1))
    return pd.DataFrame({'step': t, 'model': np.repeat(model_ids, C), 'chain': np.tile(np.arange(C), len(model_ids)),
                         'mala_acceptance': acc.cpu().numpy(), 'grad_to_noise': g2n.cpu().numpy(),
                         'distance': (w_old - w0).norm(dim=1).cpu().numpy()})

def _mala_acceptance(f, stack, bufs, xb, yb, w_old, w_new, g_old, l_old, w0, n_beta, gamma, eps):
    "MALA acceptance probability min(1, pi(w')q(w|w') / pi(w)q(w'|w)) of the SGLD proposal w -> w' on the same minibatch (Lau et al. 2024, app. H.1)."
    U = lambda w, l: n_beta * l.double() + gamma / 2 * (w - w0).double().pow(2).sum(1)         # potential, in float64
    dU = lambda w, g: (n_beta * g + gamma * (w - w0)).double()
    w_new = w_new.detach().clone().requires_grad_(True)
    l_new = f(stack.params(w_new), bufs, xb, yb)
    g_new, = torch.autograd.grad(l_new.sum(), w_new)
    with torch.no_grad():
        wo, wn = w_old.double(), w_new.detach().double()
        log_q_fwd = -(wn - wo + eps / 2 * dU(w_old, g_old)).pow(2).sum(1) / (2 * eps)
        log_q_bwd = -(wo - wn + eps / 2 * dU(w_new, g_new)).pow(2).sum(1) / (2 * eps)
        log_a = (U(w_old, l_old) - U(w_new.detach(), l_new)) + log_q_bwd - log_q_fwd
        return torch.exp(log_a.clamp(max=0.0))

# ---------------- statistics


# %% [markdown]
# ## Monte-Carlo error
#
# Successive SGLD draws are correlated, so the naive standard error $s/\sqrt{N}$ is too small. `batch_means_se` splits each
# chain into $\lfloor\sqrt N\rfloor$ consecutive batches; the variance of the batch means estimates the variance of the
# chain mean, and the chains are independent. The effective sample size is the pooled variance over the squared error.
# Below it is checked on an AR(1) process, whose long-run variance $\sigma^2/(1-\phi)^2$ is known exactly.

# %%
#| export
def batch_means_se(x: np.ndarray) -> tuple[float, float]:
    "Monte-Carlo standard error of the mean of correlated chains `x` [chains, draws] by batch means; also the effective sample size."
    x = np.atleast_2d(np.asarray(x, dtype=float)); C, N = x.shape
    nb = max(int(math.isqrt(N)), 1); size = N // nb
    if size < 1 or nb < 2: return float('nan'), float('nan')
    means = x[:, :nb * size].reshape(C, nb, size).mean(-1)            # [C, nb]
    var_of_mean = means.var(axis=1, ddof=1) / nb                      # per chain
    se = math.sqrt(var_of_mean.sum()) / C
    s2 = x.var(ddof=1) if x.size > 1 else float('nan')
    return se, (s2 / se**2 if se > 0 else float('inf'))


# %%
rng = np.random.default_rng(0); phi, C, N = 0.9, 8, 20_000
ar = np.zeros((C, N)); e = rng.normal(size=(C, N))
for t in range(1, N): ar[:, t] = phi * ar[:, t - 1] + e[:, t]
se, ess = batch_means_se(ar)
exact = math.sqrt(1 / (1 - phi)**2 / (C * N))        # long-run variance sigma^2/(1-phi)^2, sigma = 1
assert abs(se / exact - 1) < 0.15, (se, exact)      # batch means with 141 batches/chain: ~10% relative precision
assert abs(ess / (C * N * (1 - phi) / (1 + phi)) - 1) < 0.3
se, exact, ess


# %% [markdown]
# ## The estimator
#
# `estimate_llc` takes one model or a list of same-architecture models (an ensemble), the data `(inputs, targets)` and a
# per-sample loss. It evaluates the baseline $L_n(w^*)$ on the full data (default) or uses paired minibatch differences,
# runs the chains, drops the burn-in and returns an `LLCResult`: the estimate, its Monte-Carlo standard error, per-chain
# values, loss traces, the baseline, and one row of diagnostics per model. Models are processed `chunk_size` at a time
# (default: as many as give 256 chains) to bound memory.
#
# Flags (also raised as warnings): a **negative** LLC means $w^*$ is not a local minimum or the chain found lower loss
# (Lau et al. app. H.3); a **non-finite** one means divergence; mean MALA acceptance **below 0.9** means the step is too
# large; a running estimate whose second half exceeds the first by more than 3 standard errors has **not equilibrated**.

# %%
#| export
def _flags(llc, se, acc, drift_z):
    out = []
    if not np.isfinite(llc): out.append('non-finite LLC: the chain or the baseline is not finite (diverging SGLD?)')
    elif llc < 0: out.append('negative LLC: w* is not a local minimum of the loss, or the chain found lower loss '
                             '(train longer; smaller step_size or larger localization)')
    if np.isfinite(acc) and acc < 0.9: out.append(f'MALA acceptance {acc:.2f} < 0.9: step_size too large (discretization error)')
    if np.isfinite(drift_z) and drift_z > 3: out.append('running estimate still rising: not equilibrated (more burn-in/draws or larger step_size)')
    return '; '.join(out)

@dataclass
class LLCResult:
    "LLC estimates. For one model: floats and arrays per chain; for an ensemble: a leading model axis. `diagnostics` has one row per model."
    llc: float | np.ndarray
    llc_se: float | np.ndarray
    per_chain: np.ndarray
    loss_trace: np.ndarray
    baseline: float | np.ndarray
    n_beta: float
    diagnostics: pd.DataFrame
    diagnostic_trace: pd.DataFrame = field(repr=False, default=None)
    hyper: dict = field(default_factory=dict)

    def __float__(self):
        if np.ndim(self.llc): raise TypeError("float() needs a single-model LLCResult; this one holds an ensemble")
        return float(self.llc)

def _check_hyper(h):
    for k in ('n_chains', 'n_draws', 'steps_between_draws'):
        if int(h[k]) != h[k] or h[k] < 1: raise ValueError(f"{k} must be a positive integer, got {h[k]!r}")
    if int(h['n_burnin']) != h['n_burnin'] or h['n_burnin'] < 0: raise ValueError(f"n_burnin must be a non-negative integer, got {h['n_burnin']!r}")
    for k in ('step_size', 'burnin_step_size'):
        if k == 'step_size' or h[k] is not None:
            if not (h[k] > 0 and math.isfinite(h[k])): raise ValueError(f"{k} must be a positive number, got {h[k]!r}")
    if not (h['localization'] >= 0 and math.isfinite(h['localization'])): raise ValueError(f"localization must be >= 0, got {h['localization']!r}")
    if h['batch_size'] is not None and (int(h['batch_size']) != h['batch_size'] or h['batch_size'] < 1):
        raise ValueError(f"batch_size must be a positive integer or None (full batch), got {h['batch_size']!r}")
    if h['baseline'] not in ('full', 'paired'): raise ValueError(f"baseline must be 'full' or 'paired', got {h['baseline']!r}")

def estimate_llc(model_or_models, data, loss='classification', *, step_size: float = 1e-4, localization: float = 1.0,
                 n_chains: int = 4, n_draws: int = 200, n_burnin: int = 100, steps_between_draws: int = 1,
                 batch_size: int | None = 256, n_beta: float | None = None, baseline: str = 'full', seed: int = 0,
                 device=None, chunk_size: int | None = None, diag_every: int = 20,
                 burnin_step_size: float | None = None, on_divergence: str = 'raise', progress: bool = False) -> LLCResult:
    """Estimate the local learning coefficient of a model (or of an ensemble of same-architecture models) with SGLD.

    `data` is `(inputs, targets)`; `loss` a per-sample loss name or callable `(output, target) -> (batch,)`.
    `n_beta` defaults to n/log n (n = number of training samples). All chains of `chunk_size` models advance together.
    `burnin_step_size` (default: `step_size`) lets the discarded burn-in move faster towards the typical set.
    `on_divergence='backoff'` retries a diverged chunk (up to 3 times) with the offending step size halved, instead of raising.
    `progress=True` shows a progress bar over all SGLD steps of all chunks."""
    models = list(model_or_models) if isinstance(model_or_models, (list, tuple, nn.ModuleList)) else [model_or_models]
    if not models or not all(isinstance(m, nn.Module) for m in models): raise ValueError("model_or_models must be an nn.Module or a non-empty list of them")
    device = torch.device(device) if device is not None else default_device()
    X, y = _as_data(data, device); loss_fn = resolve_loss(loss)
    h = dict(step_size=step_size, localization=localization, n_chains=n_chains, n_draws=n_draws, n_burnin=n_burnin,
             steps_between_draws=steps_between_draws, batch_size=batch_size, baseline=baseline, seed=seed,
             burnin_step_size=burnin_step_size)
    _check_hyper(h)
    if on_divergence not in ('raise', 'backoff'): raise ValueError(f"on_divergence must be 'raise' or 'backoff', got {on_divergence!r}")
    n_beta = default_n_beta(len(X)) if n_beta is None else float(n_beta)
    if not (n_beta > 0 and math.isfinite(n_beta)): raise ValueError(f"n_beta must be a positive number, got {n_beta!r}")
    modes = [m.training for m in models]
    template = models[0]; orig_device = next(template.parameters()).device
    try:
        for m in models: m.eval()                                    # batch norm uses running statistics, dropout is off
        stack = _Stack(models, device); template.to(device)
        per = max(1, (chunk_size or max(1, 256 // n_chains)))
        traces, draws, diags, base = [], [], [], []
        with tqdm(total=math.ceil(len(models) / per) * (n_burnin + n_draws * steps_between_draws), disable=not progress,
                  desc=f'SGLD, {len(models)} model(s) x {n_chains} chains', unit='step') as bar:
            for s in range(0, len(models), per):
                ids = list(range(s, min(s + per, len(models))))
                w_star, bufs = stack.flat[ids], {k: v[ids] for k, v in stack.buffers.items()}
                b = _full_loss(template, loss_fn, w_star, stack, bufs, X, y)
                if not torch.isfinite(b).all(): raise ValueError(f"the loss at w* is not finite for model(s) {[ids[i] for i in (~torch.isfinite(b)).nonzero().flatten().tolist()]}")
                tr, dr, dg, hc = _run_with_backoff(template, loss_fn, stack, w_star, bufs, X, y, ids, h, n_beta, device,
                                                   baseline == 'paired', diag_every, on_divergence, bar)
                dg['step_size'], dg['burnin_step_size'] = hc['step_size'], hc['burnin_step_size']
                traces.append(tr); draws.append(dr); diags.append(dg); base.append(b.cpu())
    finally:
        template.to(orig_device)
        for m, mode in zip(models, modes): m.train(mode)
    return _assemble(models, torch.cat(traces), torch.cat(draws), torch.cat(base).numpy(), pd.concat(diags, ignore_index=True),
                     n_beta, h, single=not isinstance(model_or_models, (list, tuple, nn.ModuleList)))

def _run_with_backoff(template, loss_fn, stack, w_star, bufs, X, y, ids, h, n_beta, device, paired, diag_every, policy, bar):
    "Run the SGLD worker; with policy 'backoff', halve the diverging phase's step size and retry (at most 3 times)."
    hc = dict(h)
    for attempt in range(4):
        start = bar.n
        try: return (*_sgld_chunk(template, loss_fn, stack, w_star, bufs, X, y, ids, hc, n_beta, device, paired, diag_every, bar), hc)
        except SGLDDivergenceError as e:
            if policy == 'raise' or attempt == 3: raise
            bar.n = start; bar.refresh()                              # the retry starts this chunk's steps again
            key = 'burnin_step_size' if '(burn-in)' in str(e) else 'step_size'
            hc = dict(hc, **{key: (hc[key] or hc['step_size']) / 2})
            warnings.warn(f"SGLD diverged; retrying models {ids} with {key}={hc[key]:.3g} ({e})", stacklevel=4)

def _assemble(models, trace, draws, base, diag, n_beta, h, single):
    M, C = len(models), h['n_chains']
    trace = trace.double().numpy().reshape(M, C, -1); draws = draws.double().numpy().reshape(M, C, -1)
    vals = n_beta * (draws if h['baseline'] == 'paired' else draws - base[:, None, None])   # [M, C, N] per-draw LLC
    per_chain = vals.mean(-1); llc = per_chain.mean(-1)
    rows = []
    for m in range(M):
        se, ess = batch_means_se(vals[m]); half = vals.shape[-1] // 2
        first, second = vals[m, :, :half].mean(), vals[m, :, half:].mean()
        drift_z = (second - first) / (2 * se) if half and se > 0 else float('nan')
        d = diag[(diag.model == m) & (diag.step >= h['n_burnin'])] if len(diag) else diag   # sampling phase only
        acc = float(d.mala_acceptance.mean()) if len(d) else float('nan')
        ss = d.step_size.iloc[0] if len(d) and 'step_size' in d else h['step_size']
        rows.append(dict(model=m, step_size=ss, llc=llc[m], llc_se=se, ess=ess, between_chain_sd=per_chain[m].std(ddof=1) if C > 1 else float('nan'),
                         baseline=base[m], mala_acceptance=acc,
                         grad_to_noise=float(d.grad_to_noise.mean()) if len(d) else float('nan'),
                         distance=float(d.distance.iloc[-C:].mean()) if len(d) else float('nan'),
                         llc_first_half=first, llc_second_half=second, drift_z=drift_z,
                         problems=_flags(llc[m], se, acc, drift_z)))
    dg = pd.DataFrame(rows)
    for r in rows:
        if r['problems']: warnings.warn(f"LLC of model {r['model']}: {r['problems']}", stacklevel=3)
    pick = (lambda a: a[0]) if single else (lambda a: a)
    return LLCResult(llc=float(llc[0]) if single else llc, llc_se=float(dg.llc_se[0]) if single else dg.llc_se.to_numpy(),
                     per_chain=pick(per_chain), loss_trace=pick(trace), baseline=float(base[0]) if single else base,
                     n_beta=n_beta, diagnostics=dg, diagnostic_trace=diag, hyper=dict(h, n_beta=n_beta))


# %% [markdown]
# ### A regular model: $\lambda = d/2$
#
# Linear regression $y = Wx$ with $W\in\mathbb R^{3\times 10}$ and Gaussian noise is a regular model, so its learning
# coefficient is half the number of parameters, $d/2 = 15$ (Lau et al. 2024, sec. 3). We sample at the true $W$ with the
# step size $\epsilon = 0.05/(n\beta\,h_{\max})$ (see *Calibration* below; here $h_{\max}\approx 1$ because $x\sim\mathcal N(0,I)$).

# %%
g = torch.Generator().manual_seed(0)
W_true = torch.randn(3, 10, generator=g)
X_reg = torch.randn(4000, 10, generator=g); y_reg = X_reg @ W_true.T
reg = nn.Linear(10, 3, bias=False); reg.weight.data.copy_(W_true)
nb = default_n_beta(len(X_reg))
t0 = time.time()
res = estimate_llc(reg, (X_reg, y_reg), 'regression', step_size=0.05 / nb, localization=1.0, n_chains=4,
                   n_draws=600, n_burnin=200, batch_size=500, seed=0)
print(f"LLC = {res.llc:.2f} +- {res.llc_se:.2f} (truth 15), {time.time() - t0:.1f} s")
# tolerance: 4 standard errors plus the ~1.3% upward discretization bias expected at eps*h = 0.05 (see Calibration)
assert abs(res.llc - 15) < 4 * res.llc_se + 0.02 * 15, res.llc
assert res.per_chain.shape == (4,) and res.loss_trace.shape == (4, 800) and res.baseline == 0.0
assert not res.diagnostics.problems[0] and res.diagnostics.mala_acceptance[0] > 0.9
res.diagnostics

# %%
fig, ax = plt.subplots(1, 2, figsize=(10, 3.2))
for c, tr in enumerate(res.loss_trace): ax[0].plot(nb * (tr - res.baseline), lw=0.6, label=f'chain {c}')
ax[0].axvline(200, color='k', ls=':', label='end of burn-in'); ax[0].axhline(15, color='r', ls='--', label='d/2')
ax[0].set(xlabel='SGLD step', ylabel=r'$n\beta\,(L_B(w_t)-L_n(w^*))$', title='loss trace (nats, scaled)')
ax[0].legend(fontsize=7)
dt = res.diagnostic_trace
ax[1].plot(dt.step, dt.mala_acceptance, '.', ms=3); ax[1].set(xlabel='SGLD step', ylabel='MALA acceptance', ylim=(0, 1.05),
                                                           title='acceptance (diagnostic only)')
plt.tight_layout()

# %% [markdown]
# ### Ensembles: many models in one call
#
# Pass a list of models and every chain of every model runs in the same vectorized step. A chain is seeded by
# `(seed, model index, chain index)`, so no number depends on how the ensemble is chunked, and the first model of an
# ensemble gets exactly the chains of a single-model call (both checked below).

# %%
ens = [nn.Linear(10, 3, bias=False) for _ in range(3)]
for i, m in enumerate(ens): m.weight.data.copy_(W_true + 0.01 * i)
kw = dict(step_size=0.05 / nb, localization=1.0, n_chains=2, n_draws=100, n_burnin=20, batch_size=500, seed=1)
with warnings.catch_warnings():
    warnings.simplefilter('ignore')                       # models 1, 2 are off the minimum: flagged, that's fine here
    many = estimate_llc(ens, (X_reg, y_reg), 'regression', chunk_size=2, **kw)
    at_once = estimate_llc(ens, (X_reg, y_reg), 'regression', chunk_size=3, **kw)
    alone = estimate_llc(ens[0], (X_reg, y_reg), 'regression', **kw)
assert many.llc.shape == (3,) and many.per_chain.shape == (3, 2) and len(many.diagnostics) == 3
assert np.allclose(many.per_chain, at_once.per_chain, rtol=1e-5) and np.allclose(many.per_chain[0], alone.per_chain, rtol=1e-5)
many.diagnostics[['model', 'llc', 'llc_se', 'baseline', 'mala_acceptance', 'problems']]

# %% [markdown]
# ### Bad input and divergence
#
# A step size far too large makes SGLD explode; the error names the step size and suggests a smaller one. Empty or
# mismatched data and invalid hyperparameters are refused with a message naming the problem. A parameter that is not a
# minimum gives a negative estimate, which is flagged.

# %%
try: estimate_llc(reg, (X_reg, y_reg), 'regression', step_size=1.0, n_draws=50, n_burnin=0); raise AssertionError
except SGLDDivergenceError as e: print(e); assert 'step_size=1' in str(e)
for bad, word in [(dict(n_chains=0), 'n_chains'), (dict(step_size=-1), 'step_size'), (dict(baseline='some'), 'baseline')]:
    try: estimate_llc(reg, (X_reg, y_reg), 'regression', **bad); raise AssertionError
    except ValueError as e: assert word in str(e)
try: estimate_llc(reg, (X_reg, y_reg[:5]), 'regression'); raise AssertionError
except ValueError as e: assert 'rows' in str(e)
off = nn.Linear(10, 3, bias=False); off.weight.data.copy_(W_true + 0.3)            # far from the minimum
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter('always')
    r_off = estimate_llc(off, (X_reg, y_reg), 'regression', step_size=0.05 / nb, n_chains=2, n_draws=100, n_burnin=0, batch_size=500)
assert r_off.llc < 0 and 'negative LLC' in r_off.diagnostics.problems[0] and any('negative LLC' in str(x.message) for x in w)


# %% [markdown]
# ## Exact ground truth: deep linear networks
#
# A deep linear network (DLN) $f(x)=W_M\cdots W_1x$ with widths $H_0$ (input), $H_1,\dots,H_M$ (output) and Gaussian
# noise has an exactly known learning coefficient (Aoyagi 2024, stated as Theorem 1 in Lau et al. 2024, appendix I).
# With $r$ the rank of the true product map and $\Delta_j = H_j - r$, one finds the index set $\Sigma$ of size $\ell+1$ made
# of the smallest $\Delta$'s that satisfies the three inequalities of the theorem; with $S=\sum_{\sigma\in\Sigma}\Delta_\sigma$
# and $a = S-\ell(\lceil S/\ell\rceil-1)\in\{1,\dots,\ell\}$,
#
# $$\lambda = \frac{-r^2+r(H_0+H_M)}{2} + \frac{a(\ell-a)}{4\ell} - \frac{\ell(\ell-1)}{4}\Big(\frac{S}{\ell}\Big)^2
#   + \frac12\sum_{i<j\in\Sigma}\Delta_i\Delta_j .$$
#
# (The appendix leaves $a$ implicit; the definition above is Aoyagi's, and it reproduces the parity term of the
# two-layer case below.) We return exact fractions.

# %%
#| export
def _aoyagi_subset(deltas: list[int]) -> list[int]:
    "The Delta values of Aoyagi's index set: the shortest ascending prefix (>= 2 entries) meeting the theorem's three conditions."
    order = sorted(deltas)
    for k in range(2, len(order) + 1):
        sub, rest = order[:k], order[k:]
        ell, S = k - 1, sum(sub)
        if rest and not max(sub) < min(rest): continue                  # condition 1 (a prefix may not split ties)
        if S >= ell * max(sub) and (not rest or S < ell * min(rest)): return sub   # conditions 2 and 3
    raise ValueError(f"no index set satisfies Aoyagi's conditions for Delta={deltas}")

def aoyagi_dln_lambda(layer_sizes: Sequence[int], rank: int) -> Fraction:
    "Aoyagi's (2024) learning coefficient of a deep linear network with widths `[H_0 (input), ..., H_M (output)]` whose true product map has rank `rank`."
    H = [int(h) for h in layer_sizes]
    if len(H) < 2 or min(H) < 1: raise ValueError(f"layer_sizes needs >= 2 positive widths (input, ..., output), got {list(layer_sizes)}")
    if not 0 <= rank <= min(H): raise ValueError(f"rank must be in [0, min(layer_sizes)={min(H)}], got {rank}")
    r = int(rank); sub = _aoyagi_subset([h - r for h in H]); ell, S = len(sub) - 1, sum(sub)
    a = S - ell * (-(-S // ell) - 1)                                   # -(-S // ell) is ceil(S / ell)
    pairs = sum(sub[i] * sub[j] for i in range(len(sub)) for j in range(i + 1, len(sub)))
    return (Fraction(-r * r + r * (H[0] + H[-1]), 2) + Fraction(a * (ell - a), 4 * ell)
            - Fraction(ell * (ell - 1), 4) * Fraction(S, ell) ** 2 + Fraction(pairs, 2))


# %% [markdown]
# Two independent checks. A one-layer network is linear regression, a regular model: $\lambda = H_0H_1/2 = d/2$ at every
# rank. A two-layer network is reduced-rank regression, whose coefficient Aoyagi & Watanabe (2005, *Stochastic complexities
# of reduced rank regression in Bayesian estimation*, Neural Networks 18, Main Theorem) derived separately, with four
# cases in input dimension $M$, hidden width $H$, output dimension $N$ and rank $r$:

# %%
#| export
def reduced_rank_regression_lambda(M: int, H: int, N: int, r: int) -> Fraction:
    "Aoyagi & Watanabe (2005): learning coefficient of reduced-rank regression x in R^M -> R^H -> R^N at true rank r."
    if not 0 <= r <= min(M, H, N): raise ValueError(f"rank r={r} must lie in [0, min(M, H, N)]")
    if N + r <= M + H and M + r <= N + H and H + r <= M + N:
        v = Fraction(2 * (H + r) * (M + N) - (M - N) ** 2 - (H + r) ** 2, 8)
        return v + (Fraction(1, 8) if (M + H + N + r) % 2 else 0)
    if M + H < N + r: return Fraction(H * M - H * r + N * r, 2)
    if N + H < M + r: return Fraction(H * N - H * r + M * r, 2)
    return Fraction(M * N, 2)


# %%
for H0 in range(1, 7):
    for H1 in range(1, 7):
        assert all(aoyagi_dln_lambda([H0, H1], r) == Fraction(H0 * H1, 2) for r in range(min(H0, H1) + 1))
checked = 0
for M in range(1, 8):
    for Hh in range(1, 8):
        for N in range(1, 8):
            for r in range(min(M, Hh, N) + 1):
                assert aoyagi_dln_lambda([M, Hh, N], r) == reduced_rank_regression_lambda(M, Hh, N, r), (M, Hh, N, r); checked += 1
print(checked, 'two-layer cases agree;', 'e.g. lambda([10, 8, 10], r=4) =', aoyagi_dln_lambda([10, 8, 10], 4))


# %% [markdown]
# ### DLNs at minimal-rank true parameters
#
# Aoyagi's $\lambda$ is the *global* coefficient: the smallest LLC over all true parameters. A true parameter whose
# layers have random, unequal ranks can have a larger LLC, so we compare at **minimal-rank** true parameters where every
# layer has rank $r$. `make_dln` builds each layer as $U\,\mathrm{diag}(s)\,V^\top$ with Haar-random orthonormal
# $U, V$ of $r$ columns and singular values $s\sim\mathcal U[0.5, 1.5]$; `dln_data` draws $x\sim\mathcal N(0,I)$ and sets
# $y=f(x,w^*)$ exactly (the noiseless limit used by Lau et al., app. J), so $L_n(w^*)=0$.

# %%
#| export
def make_dln(layer_sizes: Sequence[int], rank: int, seed: int = 0) -> nn.Sequential:
    "A bias-free deep linear network with widths `layer_sizes` whose every layer has rank `rank` (singular values in [0.5, 1.5])."
    if rank < 1 or rank > min(layer_sizes): raise ValueError(f"rank must be in [1, min(layer_sizes)={min(layer_sizes)}], got {rank}")
    g = torch.Generator().manual_seed(seed); layers = []
    for a, b in zip(layer_sizes[:-1], layer_sizes[1:]):
        U, _ = torch.linalg.qr(torch.randn(b, rank, generator=g)); V, _ = torch.linalg.qr(torch.randn(a, rank, generator=g))
        lin = nn.Linear(a, b, bias=False); lin.weight.data = (U * (0.5 + torch.rand(rank, generator=g))) @ V.T
        layers.append(lin)
    return nn.Sequential(*layers)

def dln_data(model: nn.Sequential, n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    "`n` noiseless samples `(x, f(x, w*))` with x ~ N(0, I) for a DLN built by `make_dln`."
    X = torch.randn(n, model[0].in_features, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad(): return X, model(X)


# %%
dln = make_dln([10, 8, 10], 4, seed=0)
prod = dln[1].weight @ dln[0].weight
assert all(torch.linalg.matrix_rank(l.weight) == 4 for l in dln) and torch.linalg.matrix_rank(prod) == 4
Xd, yd = dln_data(dln, 1000)
assert float(_full_loss(dln, gaussian_nll(), _Stack([dln], 'cpu').flat, _Stack([dln], 'cpu'), {}, Xd, yd)) == 0.0


# %% [markdown]
# ## Calibration
#
# The step size is the hyperparameter that matters most (Lau et al. 2024, app. H.1). In a direction where $n\beta L_n$ has
# curvature $h$, the SGLD update is an AR(1) process whose stationary variance is $1/(h(1-\epsilon h/4))$ instead of
# $1/h$: the stiffest direction is over-dispersed by about $\epsilon h/4$, and the chain becomes unstable at $\epsilon h = 4$.
# So we set $\epsilon = c/(n\beta\,h_{\max}+\gamma)$ with a *stiffness* $c$, where $h_{\max}$ is the top eigenvalue of the
# Hessian of $L_n$ at $w^*$, found by power iteration on Hessian-vector products (double backward; no Hessian is formed).
#
# The localization $\gamma$ trades bias against mixing: too large, and it competes with the likelihood and shrinks the
# estimate (app. H.3); too small, and directions held only by $\gamma$ relax slowly, in about $2/(\epsilon\gamma)$ steps.
# `localization_sweep` estimates the LLC over a grid of $\gamma$ and `plateau_test` finds the longest run of neighbouring
# values that agree within a relative tolerance or two standard errors.

# %%
#| export
def top_hessian_eigenvalue(model: nn.Module, data, loss='classification', *, n_iter: int = 50, tol: float = 1e-3,
                           max_samples: int | None = 8192, seed: int = 0, device=None) -> float:
    "Largest Hessian eigenvalue of the mean per-sample loss L_n at the model's parameters, by power iteration on Hessian-vector products."
    device = torch.device(device) if device is not None else default_device()
    X, y = _as_data(data, device); loss_fn = resolve_loss(loss)
    if max_samples and len(X) > max_samples:
        keep = torch.randperm(len(X), generator=torch.Generator().manual_seed(seed))[:max_samples].to(device); X, y = X[keep], y[keep]
    was = model.training; orig = next(model.parameters()).device
    try:
        model.eval(); model.to(device); stack = _Stack([model], device)
        f = _batched_loss(model, loss_fn); bufs = stack.buffers
        w = stack.flat.clone().requires_grad_(True)
        g, = torch.autograd.grad(f(stack.params(w), bufs, X[None], y[None]).sum(), w, create_graph=True)
        v = torch.randn(w.shape, generator=torch.Generator().manual_seed(seed)).to(device); v /= v.norm()
        est = 0.0
        for i in range(n_iter):
            hv, = torch.autograd.grad(g, w, grad_outputs=v, retain_graph=True)
            new = float((hv * v).sum())                                # Rayleigh quotient
            v = hv / hv.norm().clamp_min(1e-30)
            if i and abs(new - est) <= tol * abs(new): est = new; break
            est = new
    finally:
        model.to(orig); model.train(was)
    return est

def calibrate_step_size(model: nn.Module, data, loss='classification', *, localization: float = 1.0,
                        n_beta: float | None = None, stiffness: float = 0.05, **hess_kw) -> float:
    """SGLD step size eps = stiffness / (n_beta * h_max + localization) from the top Hessian eigenvalue h_max of L_n at w*.

    In a quadratic direction of curvature h the sampler's stationary variance is inflated by 1/(1 - eps*h/4), so
    `stiffness` = eps*h bounds the discretization bias of the stiffest direction by about stiffness/4."""
    X = _as_data(data, 'cpu')[0]
    nb = default_n_beta(len(X)) if n_beta is None else n_beta
    h = abs(top_hessian_eigenvalue(model, data, loss, **hess_kw))
    return stiffness / (nb * h + localization)


# %%
h_reg = top_hessian_eigenvalue(reg, (X_reg, y_reg), 'regression')
exact = float(torch.linalg.eigvalsh(X_reg.T @ X_reg / len(X_reg)).max())   # Hessian of 1/2 mean |Wx - y|^2 is E[xx^T] (x) I
assert abs(h_reg / exact - 1) < 1e-2, (h_reg, exact)
eps = calibrate_step_size(reg, (X_reg, y_reg), 'regression', localization=1.0, stiffness=0.05)
assert abs(eps * (nb * exact + 1.0) - 0.05) < 1e-3
h_reg, exact, eps


# %%
#| export
def localization_sweep(model: nn.Module, data, loss='classification', localizations=(1, 3, 10, 30, 100), *,
                       step_size: float | None = None, stiffness: float = 0.05, **hyper) -> pd.DataFrame:
    "LLC estimate for each localization gamma (step size calibrated per gamma unless given); one row per gamma."
    rows = []
    for g in localizations:
        eps = step_size or calibrate_step_size(model, data, loss, localization=g, n_beta=hyper.get('n_beta'),
                                               stiffness=stiffness, device=hyper.get('device'))
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            r = estimate_llc(model, data, loss, step_size=eps, localization=g, **hyper)
        d = r.diagnostics.iloc[0]
        rows.append(dict(localization=g, step_size=eps, llc=d.llc, llc_se=d.llc_se, mala_acceptance=d.mala_acceptance,
                         distance=d.distance, drift_z=d.drift_z))
    return pd.DataFrame(rows)

def plateau_test(sweep: pd.DataFrame, rel_tol: float = 0.05, n_se: float = 2.0) -> dict:
    """Find the longest run of neighbouring localizations whose LLC estimates agree within `rel_tol` (or `n_se` standard errors).

    Returns the plateau's range, the smallest gamma on it (least bias from localization) and whether a plateau exists."""
    s = sweep.sort_values('localization').reset_index(drop=True)
    if len(s) < 2: raise ValueError("plateau_test needs a sweep over at least 2 localizations")
    ok = [abs(s.llc[i + 1] - s.llc[i]) <= max(rel_tol * abs(s.llc[i:i + 2]).mean(), n_se * math.hypot(s.llc_se[i], s.llc_se[i + 1]))
          for i in range(len(s) - 1)]
    best, cur = (0, -1), None
    for i, flat in enumerate(ok):
        if flat: cur = (cur[0], i) if cur else (i, i)
        else: cur = None
        if cur and cur[1] - cur[0] > best[1] - best[0]: best = cur
    found = best[1] >= best[0]
    lo, hi = (best[0], best[1] + 1) if found else (0, 0)
    return dict(found=found, localization=float(s.localization[lo]), low=float(s.localization[lo]), high=float(s.localization[hi]),
                llc=float(s.llc[lo:hi + 1].mean()))


# %%
toy = pd.DataFrame(dict(localization=[1, 3, 10, 30, 100, 300], llc=[20.0, 15.2, 15.0, 14.9, 13.0, 9.0], llc_se=[0.1] * 6))
pt = plateau_test(toy)
assert pt['found'] and (pt['low'], pt['high']) == (3, 30) and pt['localization'] == 3
sweep = localization_sweep(reg, (X_reg, y_reg), 'regression', localizations=(1, 10, 100, 1000, 10000), stiffness=0.05,
                           n_chains=2, n_draws=200, n_burnin=50, batch_size=500)
pt = plateau_test(sweep)
assert pt['found'] and pt['low'] <= 10 and abs(pt['llc'] - 15) < 2       # the regular model plateaus at d/2 until gamma ~ n*beta
fig, ax = plt.subplots(figsize=(5, 3))
ax.errorbar(sweep.localization, sweep.llc, 2 * sweep.llc_se, marker='o', capsize=3, label='estimate ± 2 SE')
ax.axhline(15, color='r', ls='--', label='d/2 = 15'); ax.axvspan(pt['low'], pt['high'], alpha=0.15, label='plateau')
ax.set(xscale='log', xlabel=r'localization $\gamma$', ylabel=r'$\hat\lambda$', title='localization sweep'); ax.legend(fontsize=8)
sweep


# %% [markdown]
# ## During training: a recorder measurement
#
# The paper estimates the LLC every 100 training steps with its preset and reports the mean of the last 10 estimates
# (Hennick & De Baerdemacker, app. G.1). `LLCMeasurement` is a callable `fn(model) -> float` with an `every` attribute,
# which is all the displacement recorder asks of a measurement; `final_llc` reduces the recorded column. The measurement
# only reads the weights: parameters, `.grad`, train/eval mode and the global random state are unchanged afterwards.

# %%
#| export
class LLCMeasurement:
    """A displacement-recorder measurement: called as `fn(model)` every `every` training steps, returns the LLC estimate.

    Defaults to the paper's preset (`preset('paper')`); keyword arguments override it. Each call uses a fresh seed
    (`seed + number of earlier calls`). The model's parameters, gradients, train/eval mode and the global RNG are left untouched."""
    def __init__(self, data, loss='classification', every: int = 100, details: bool = False, **hyper):
        if int(every) != every or every < 1: raise ValueError(f"every must be a positive integer, got {every!r}")
        self.data, self.loss, self.every, self.details = data, loss, int(every), details
        self.hyper = {**preset('paper'), **hyper}; self.calls = 0; self.last = None

    def __call__(self, model: nn.Module):
        h = dict(self.hyper); h['seed'] = h.get('seed', 0) + self.calls; self.calls += 1
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            self.last = estimate_llc(model, self.data, self.loss, **h)
        if not self.details: return float(self.last.llc)
        d = self.last.diagnostics.iloc[0]
        return dict(llc=float(d.llc), se=float(d.llc_se), mala=float(d.mala_acceptance), flagged=float(bool(d.problems)))

def final_llc(table: pd.DataFrame, column: str = 'llc', last: int = 10) -> float:
    "The paper's final LLC: the mean of the last `last` LLC estimates in a trajectory table (appendix G.1)."
    if column not in table: raise ValueError(f"table has no column {column!r}; columns: {list(table.columns)}")
    vals = table[column].dropna()
    if len(vals) == 0: raise ValueError(f"column {column!r} holds no LLC estimates")
    return float(vals.iloc[-last:].mean())


# %%
torch.manual_seed(0)
Xc = torch.randn(512, 2); yc = (Xc[:, 0] * Xc[:, 1] > 0).long()
net = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 2))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
meas = LLCMeasurement((Xc, yc), 'classification', every=50, n_draws=40, batch_size=128)
assert meas.every == 50 and meas.hyper['localization'] == 100.0 and meas.hyper['step_size'] == 1e-5
rows = []
for step in range(1, 201):
    idx = torch.randint(0, 512, (64,)); opt.zero_grad()
    F.cross_entropy(net(Xc[idx]), yc[idx]).backward(); opt.step()
    if step % meas.every == 0:
        before = [p.detach().clone() for p in net.parameters()]; grads = [p.grad.clone() for p in net.parameters()]
        rng_state = torch.get_rng_state()
        rows.append(dict(step=step, llc=meas(net)))
        assert net.training and torch.equal(rng_state, torch.get_rng_state())
        assert all(torch.equal(a, p) for a, p in zip(before, net.parameters()))
        assert all(torch.equal(g, p.grad) for g, p in zip(grads, net.parameters()))
table = pd.DataFrame(rows)
assert final_llc(table, 'llc', last=2) == table.llc.iloc[-2:].mean()
try: final_llc(table, 'LLC'); raise AssertionError
except ValueError as e: assert 'LLC' in str(e)
table

# %% [markdown]
# ### One automatic setting
#
# `calibrate` turns these rules into a complete setting, with no per-model tuning beyond measuring $h_{\max}$:
#
# * localization $\gamma = q\,n\beta\,h_{\max}$ with $q = 10^{-4}$: far below the stiffest likelihood curvature, and
#   (in deep products, whose curvatures spread over two orders of magnitude) below the softest non-flat one too, so it
#   barely competes with the likelihood, yet it bounds the directions the likelihood leaves exactly flat;
# * step size $\epsilon = c/(n\beta h_{\max}+\gamma)$ with stiffness $c$ while drawing, and a larger stiffness during
#   the discarded burn-in so the chains reach the typical set sooner (the burn-in only has to get there, not to be exact);
# * fixed numbers of burn-in steps and draws, 4 chains, batch size 500 (Lau et al., app. J.1);
# * if a chain still diverges, the step size of the phase where it diverged is halved and the chunk rerun (`on_divergence='backoff'`,
#   reported in the diagnostics' `step_size` column and as a warning).

# %%
#| export
AUTO_SETTING = dict(stiffness=0.3, burnin_stiffness=2.0, localization_ratio=1e-4, n_chains=4, n_burnin=6000, n_draws=6000,
                    steps_between_draws=1, batch_size=500)

def calibrate(model: nn.Module, data, loss='classification', *, n_beta: float | None = None, device=None, **overrides) -> dict:
    "The automatic SGLD setting (`AUTO_SETTING`, overridable) for `model` at its current weights: pass the result to `estimate_llc(**...)`."
    a = {**AUTO_SETTING, **overrides}
    unknown = set(a) - set(AUTO_SETTING)
    if unknown: raise ValueError(f"calibrate: unknown setting(s) {sorted(unknown)}; known: {sorted(AUTO_SETTING)}")
    nb = default_n_beta(len(_as_data(data, 'cpu')[0])) if n_beta is None else float(n_beta)
    h = abs(top_hessian_eigenvalue(model, data, loss, device=device))
    gamma = a['localization_ratio'] * nb * h
    return dict(step_size=a['stiffness'] / (nb * h + gamma), burnin_step_size=a['burnin_stiffness'] / (nb * h + gamma),
                localization=gamma, n_chains=a['n_chains'], n_burnin=a['n_burnin'], n_draws=a['n_draws'],
                steps_between_draws=a['steps_between_draws'], batch_size=a['batch_size'], n_beta=nb, on_divergence='backoff')


# %%
auto = calibrate(reg, (X_reg, y_reg), 'regression')
assert abs(auto['localization'] - 1e-4 * nb * h_reg) < 1e-6 * nb * h_reg and auto['step_size'] < auto['burnin_step_size']
try: calibrate(reg, (X_reg, y_reg), 'regression', stifness=0.1); raise AssertionError
except ValueError as e: assert 'stifness' in str(e)
auto

# %% [markdown]
# ## Deep linear networks: estimate against truth
#
# `dln_table` estimates the LLC of a list of DLNs at minimal-rank true parameters with one setting for all (`'auto'`,
# `'paper'`, or a dict of hyperparameters) and reports the relative error against Aoyagi's $\lambda$.

# %%
#| export
DLN_SUITE = [([10, 8, 10], 4), ([12, 10, 8, 12], 3), ([15, 10, 15], 5), ([16, 12, 12, 16], 6), ([20, 15, 20], 5),
             ([24, 16, 16, 16, 24], 8), ([25, 20, 25], 8)]

def dln_table(suite=DLN_SUITE, setting='auto', n: int = 10_000, seed: int = 0, device=None, only=None, **extra) -> pd.DataFrame:
    "Estimated vs exact LLC of DLNs `suite` = [(layer_sizes, rank), ...] under one `setting` ('auto', 'paper' or a dict); `only` picks entries by index."
    rows = []
    for i, (sizes, r) in enumerate(suite):
        if only is not None and i not in only: continue
        model = make_dln(sizes, r, seed=seed + i); data = dln_data(model, n, seed=seed + 1000 + i)
        if setting == 'auto': h = calibrate(model, data, 'regression', device=device, **extra)
        elif setting == 'paper': h = {**preset('paper'), 'batch_size': 500, **extra}
        elif isinstance(setting, dict): h = {**setting, **extra}
        else: raise ValueError(f"setting must be 'auto', 'paper' or a dict, got {setting!r}")
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            res = estimate_llc(model, data, 'regression', seed=seed, device=device, **h)
        lam = float(aoyagi_dln_lambda(sizes, r)); d = res.diagnostics.iloc[0]
        rows.append(dict(index=i, layers='-'.join(map(str, sizes)), rank=r, d=sum(a * b for a, b in zip(sizes[:-1], sizes[1:])),
                         true_llc=lam, estimate=res.llc, se=res.llc_se, rel_error=res.llc / lam - 1,
                         mala=d.mala_acceptance, drift_z=d.drift_z, seconds=time.perf_counter() - t0))
    return pd.DataFrame(rows)


# %% [markdown]
# A quick check that runs in CI: the smallest singular DLN of interest, with the automatic rules but a quarter of the
# steps (so its tolerance is looser than the table's 5% goal).

# %%
t0 = time.time()
quick = dln_table([([8, 6, 8], 3)], setting='auto', n_burnin=1500, n_draws=1500)
print(f"{time.time() - t0:.0f} s"); quick
# tolerance 10%: the full setting averages ~3% on the DLN table below; with a quarter of the steps, burn-in is shorter
# and the Monte-Carlo error ~2x larger, so we allow twice the table's 5% goal.
assert abs(quick.rel_error[0]) < 0.10, quick

# %% [markdown]
# The full table (computed with the `#| heavy` cell below, 4 chains, $n = 10^4$ noiseless samples, seeds 0..6; on a
# 2-core CPU the automatic setting takes about 3 minutes, the paper preset a few seconds). `auto` is the one automatic
# setting above; `paper` is `preset('paper')`
# ($\epsilon=10^{-5}$, $\gamma=100$, 1 chain, 400 draws, no burn-in) with batch size 500 and the same $n\beta = n/\log n$.
#
# Measured 2026-11-22 on the 2-core development CPU (torch 2.14.1), with `dln_table(setting='auto')` and
# `dln_table(setting='paper')`, and measured again after the SGLD loop was rewritten for speed (same draws, float
# rounding aside): every entry came out the same to the digits shown except the five-layer network's, which moved
# from 187.7 ± 1.2 to the 188.0 ± 1.3 below; the auto table then took 3.0 minutes.
#
# | DLN widths | rank | d | Aoyagi λ | auto: estimate ± SE | auto: rel. error | auto: MALA | paper preset: estimate ± SE | paper: rel. error |
# |---|---|---|---|---|---|---|---|---|
# | 10-8-10 | 4 | 160 | 42 | 44.0 ± 0.2 | +4.8% | 0.82 | 25.2 ± 1.6 | -39.9% |
# | 12-10-8-12 | 3 | 296 | 47.5 | 44.6 ± 0.3 | -6.0% | 0.73 | 10.9 ± 0.8 | -77.0% |
# | 15-10-15 | 5 | 300 | 84.5 | 86.3 ± 0.3 | +2.1% | 0.81 | 47.2 ± 3.1 | -44.2% |
# | 16-12-12-16 | 6 | 528 | 95.5 | 97.9 ± 0.9 | +2.5% | 0.68 | 42.2 ± 3.1 | -55.8% |
# | 20-15-20 | 5 | 600 | 150 | 154.7 ± 0.4 | +3.1% | 0.77 | 80.1 ± 5.4 | -46.6% |
# | 24-16-16-16-24 | 8 | 1280 | 184 | 188.0 ± 1.3 | +2.2% | 0.52 | 47.0 ± 3.7 | -74.5% |
# | 25-20-25 | 8 | 1000 | 252 | 258.2 ± 0.6 | +2.4% | 0.73 | 115.5 ± 7.7 | -54.2% |
# | **mean \|relative error\|** | | | | | **3.3%** | | | **56.0%** |
#
# How to read it, honestly:
#
# * The automatic setting meets the 5% goal on average (3.3%) with one rule for all seven networks, but its constants
#   (stiffness 0.3, burn-in stiffness 2, $q=10^{-4}$, 6000 + 6000 steps) were chosen by trying a handful of values on
#   the first two networks only; the other five were not looked at before the table was run. Larger $q$ ($10^{-3}$)
#   underestimated the three-layer network by 19%; more data ($n=10^5$, i.e. larger $n\beta$) underestimated it by 30%
#   at the same number of steps, because singular directions then mix more slowly.
# * Every row is **flagged** by the estimator: the mean MALA acceptance during sampling is 0.52–0.82, below the 0.9
#   that Lau et al. recommend, and the running estimate still rises ($z$ of the half-to-half drift between 2 and 10). The
#   small remaining errors are therefore partly a cancellation between discretization bias (upwards) and incomplete
#   mixing (downwards). The 5-layer network diverged once during burn-in and was rerun by the automatic backoff with
#   half the burn-in step size.
# * A smaller sampling step does not simply fix this. With stiffness 0.12 instead of 0.3 (same steps, measured on three
#   of the networks, `dln_table(stiffness=0.12, only=[0, 1, 5])`), the MALA acceptance rises to 0.96 and 0.94 on
#   10-8-10 and 12-10-8-12 and their estimates become −0.4% and −12% (no significant drift), while the five-layer
#   network stays at 0.61 and −14%. So at this $n$ the well-mixed, nearly exact sampler itself sits below Aoyagi's
#   λ on some networks (finite $n$, $\gamma>0$), and the table's 3.3% rests on the setting as a whole, not on each
#   chain passing every diagnostic.
# * The paper's preset (Hennick & De Baerdemacker, table 3) underestimates every network by 40–77%: 400 steps of size
#   $10^{-5}$ from $w^*$ are far too few to equilibrate here, and $\gamma=100$ is large next to these networks' softer
#   curvatures. Its LLCs are useful for *comparisons* under one fixed protocol, which is how the paper uses them, not as
#   absolute values.

# %%
#| heavy
auto_table = dln_table(setting='auto')
paper_table = dln_table(setting='paper')
both = auto_table[['layers', 'rank', 'd', 'true_llc', 'estimate', 'se', 'rel_error']].merge(
    paper_table[['layers', 'estimate', 'rel_error']], on='layers', suffixes=('_auto', '_paper'))
print('mean |relative error|: auto', auto_table.rel_error.abs().mean(), 'paper', paper_table.rel_error.abs().mean())
fig, ax = plt.subplots(figsize=(4.5, 4))
ax.errorbar(both.true_llc, both.estimate_auto, 2 * both.se, fmt='o', label='automatic setting')
ax.plot(both.true_llc, both.estimate_paper, 's', label="paper preset")
lim = [0, both.true_llc.max() * 1.1]; ax.plot(lim, lim, 'k--', lw=1, label='exact (Aoyagi)')
ax.set(xlabel=r'Aoyagi $\lambda$', ylabel=r'$\hat\lambda(w^*)$', title='DLNs at minimal-rank truth'); ax.legend(fontsize=8)
both

# %%
#| hide
import nbdev; nbdev.nbdev_export()
