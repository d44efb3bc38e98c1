# %% [markdown]
# # A reference posterior that converges
#
# > Full-batch MALA with replica exchange over a temperature ladder, vectorised over chains and rungs: the global posterior of the paper's moons net sampled from every function-space cluster of SGD's solutions, its convergence diagnosed, and table 2 and fig. 3 recomputed against it.

# %%
#| default_exp posterior.replica

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import math, time
from dataclasses import dataclass, field, replace
from typing import Callable, Protocol

import numpy as np
import pandas as pd
import torch
from torch import nn

from fracsgd.nets.stack import ModelStack, batched_forward
from fracsgd.posterior.clusters import split_rhat

# %%
#| export
@dataclass(frozen=True)
class ReplicaSettings:
    """Full-batch MALA with replica exchange. `betas`: inverse temperatures of the likelihood, descending, the first
    1 (the target itself), a last 0 samples the prior; `step_size`: the MALA step ε at β = 1 (x' = x + ε/2 ∇log π + N(0, ε)),
    hotter rungs start at ε/β capped at `max_step`, and every rung's step is adapted towards `target_accept` during
    the `n_burnin` steps only (then fixed: the kernel that is recorded leaves the target exactly invariant)."""
    betas: tuple = (1.0, 0.5, 0.25, 0.0)
    step_size: float = 1e-3
    max_step: float = 1.0
    n_burnin: int = 500
    n_draws: int = 500
    thin: int = 10
    swap_every: int = 1
    target_accept: float = 0.574
    adapt_rate: float = 0.05
    seed: int = 0

    def __post_init__(self):
        b = np.asarray(self.betas, float)
        if b.ndim != 1 or len(b) < 1 or b[0] != 1 or np.any(np.diff(b) >= 0) or b[-1] < 0:
            raise ValueError(f"betas must start at 1 and fall strictly, ending at 0 or above, got {self.betas}")
        if not (self.step_size > 0 and self.max_step >= self.step_size):
            raise ValueError(f"step_size must be positive and at most max_step, got {self.step_size}, {self.max_step}")
        for name in ('n_draws', 'thin', 'swap_every'):
            if not (isinstance(getattr(self, name), (int, np.integer)) and getattr(self, name) >= 1):
                raise ValueError(f"{name} must be a whole number ≥ 1, got {getattr(self, name)!r}")
        if not (isinstance(self.n_burnin, (int, np.integer)) and self.n_burnin >= 0):
            raise ValueError(f"n_burnin must be a whole number ≥ 0, got {self.n_burnin!r}")
        if not 0 < self.target_accept < 1:
            raise ValueError(f"target_accept must lie in (0, 1), got {self.target_accept}")

    @property
    def n_steps(self) -> int: return self.n_burnin + self.n_draws * self.thin

    def replace(self, **kw) -> 'ReplicaSettings': return replace(self, **kw)

def geometric_ladder(n: int, beta_min: float, prior: bool = True) -> tuple:
    "`n` inverse temperatures from 1 down to `beta_min`, evenly spaced in log β, and a last rung β = 0 if `prior`."
    if not (isinstance(n, (int, np.integer)) and n >= 2 and 0 < beta_min < 1):
        raise ValueError(f"a ladder needs n ≥ 2 rungs and 0 < beta_min < 1, got n={n!r}, beta_min={beta_min!r}")
    b = np.geomspace(1.0, beta_min, n)
    return tuple(float(x) for x in b) + ((0.0,) if prior else ())

# %%
#| export
class Target(Protocol):
    "A density π_β(x) ∝ exp(log_prior(x) + β·log_lik(x)); both map states [R, d] to [R] and are differentiable."
    def log_prior(self, x: torch.Tensor) -> torch.Tensor: ...
    def log_lik(self, x: torch.Tensor) -> torch.Tensor: ...

def _evaluate(target, x: torch.Tensor):
    "log prior, log likelihood [R] of states `x` [R, d] and their gradients [R, d] (two cheap graphs, not one)."
    out = []
    for f in (target.log_prior, target.log_lik):
        z = x.detach().requires_grad_(True)
        v = f(z)
        if v.shape != x.shape[:1]:
            raise ValueError(f"the target must give one value per state, shape [{len(x)}], got {tuple(v.shape)}")
        g, = torch.autograd.grad(v.sum(), z)
        out += [v.detach(), g]
    lp, glp, ll, gll = out
    bad = ~(torch.isfinite(lp) & torch.isfinite(ll))
    return lp.masked_fill(bad, -math.inf), glp, ll.masked_fill(bad, -math.inf), gll

def _tempered(lp, ll, betas):
    "log prior + β·log likelihood per rung (β = 0: the prior alone, whatever the likelihood)."
    return lp + torch.where(betas > 0, betas * ll, torch.zeros_like(ll))

def swap_log_acceptance(log_lik_i, log_lik_j, beta_i: float, beta_j: float):
    "log of the swap acceptance of the states of rungs i and j: (β_i − β_j)(ℓ_j − ℓ_i), the ratio of the two products."
    return (beta_i - beta_j) * (log_lik_j - log_lik_i)

@dataclass
class ReplicaRun:
    "What `replica_exchange` recorded at β = 1 (one row per chain) and its diagnostics."
    recorded: list            # record(cold states) at every draw
    log_lik: np.ndarray       # [chains, draws] at β = 1
    log_prior: np.ndarray     # [chains, draws]
    accept: np.ndarray        # [rungs] MALA acceptance after burn-in (mean over chains and steps)
    swap: np.ndarray          # [rungs − 1] swap acceptance of each adjacent pair after burn-in
    steps: np.ndarray         # [rungs] the fixed MALA steps after burn-in
    betas: tuple
    seconds: float
    final: torch.Tensor = field(repr=False, default=None)   # states [chains, rungs, d] at the end

    @property
    def energy(self) -> np.ndarray:
        "U = −log prior − log likelihood [chains, draws] of the β = 1 draws (the posterior's negative log density)."
        return -(self.log_lik + self.log_prior)

def replica_exchange(target, x0, settings: ReplicaSettings, record: Callable | None = None,
                     generator: torch.Generator | None = None) -> ReplicaRun:
    """Sample π_1 from chains started at `x0` [chains, d] (every rung of a chain starts there): MALA on every rung of
    every chain at once, then swaps of adjacent rungs within each chain, even and odd pairs in turn."""
    s = settings
    x0 = torch.as_tensor(x0)
    if x0.ndim != 2 or len(x0) < 1 or not torch.isfinite(x0).all():
        raise ValueError(f"x0 must be finite starting states [chains, d], got shape {tuple(x0.shape)}")
    C, d, T = x0.shape[0], x0.shape[1], len(s.betas)
    dev, dt = x0.device, x0.dtype
    g = generator or torch.Generator(device=dev).manual_seed(s.seed)
    betas = torch.tensor(s.betas, dtype=dt, device=dev)                      # [T]
    x = x0[:, None, :].expand(C, T, d).clone()                               # [C, T, d]
    lp, glp, ll, gll = (v.view(C, T, *v.shape[1:]) for v in _evaluate(target, x.reshape(C * T, d)))
    if not torch.isfinite(ll[:, 0]).all():
        raise ValueError("the target's log density is not finite at some starting state")
    log_eps = torch.log(torch.clamp(s.step_size / torch.clamp(betas, min=1e-12), max=s.max_step))   # [T]
    rec, rec_ll, rec_lp = [], [], []
    acc_sum, swap_sum, swap_n = torch.zeros(T, dtype=torch.float64), torch.zeros(max(T - 1, 0), dtype=torch.float64), \
        torch.zeros(max(T - 1, 0), dtype=torch.float64)
    t0 = time.perf_counter()
    for step in range(s.n_steps):
        eps = log_eps.exp()[None, :, None]                                   # [1, T, 1]
        grad = glp + betas[None, :, None] * gll
        noise = torch.randn(x.shape, generator=g, device=dev, dtype=dt)
        prop = x + eps / 2 * grad + eps.sqrt() * noise
        plp, pglp, pll, pgll = (v.view(C, T, *v.shape[1:]) for v in _evaluate(target, prop.reshape(C * T, d)))
        pgrad = pglp + betas[None, :, None] * pgll
        back = ((x - prop - eps / 2 * pgrad) ** 2).sum(-1) / (2 * eps[..., 0])
        logp, plogp = _tempered(lp, ll, betas), _tempered(plp, pll, betas)
        log_a = (plogp - logp - back + (noise ** 2).sum(-1) / 2).double()
        log_a = torch.nan_to_num(log_a, nan=-math.inf)
        u = torch.rand(log_a.shape, generator=g, device=dev, dtype=torch.float64)
        take = torch.log(u) < log_a                                          # [C, T]
        x = torch.where(take[..., None], prop, x)
        lp, ll = torch.where(take, plp, lp), torch.where(take, pll, ll)
        glp, gll = torch.where(take[..., None], pglp, glp), torch.where(take[..., None], pgll, gll)
        p_acc = torch.clamp(log_a, max=0).exp()                              # [C, T]
        if step < s.n_burnin:
            log_eps = log_eps + s.adapt_rate * (p_acc.mean(0).to(dt) - s.target_accept)
            log_eps = torch.clamp(log_eps, max=math.log(s.max_step))
        else:
            acc_sum += p_acc.mean(0).cpu()
        if T > 1 and step % s.swap_every == 0:                               # deterministic even-odd swaps
            first = torch.arange((step // s.swap_every) % 2, T - 1, 2, device=dev)
            if len(first):
                la = swap_log_acceptance(ll[:, first], ll[:, first + 1], betas[first], betas[first + 1]).double()
                la = torch.nan_to_num(la, nan=-math.inf)
                ok = torch.log(torch.rand(la.shape, generator=g, device=dev, dtype=torch.float64)) < la    # [C, pairs]
                perm = torch.arange(T, device=dev).repeat(C, 1)              # [C, T]
                perm[:, first] = torch.where(ok, first + 1, first)
                perm[:, first + 1] = torch.where(ok, first, first + 1)
                pick = lambda v: torch.gather(v, 1, perm if v.ndim == 2 else perm[..., None].expand_as(v))
                x, lp, ll, glp, gll = map(pick, (x, lp, ll, glp, gll))
                if step >= s.n_burnin:
                    swap_sum[first.cpu()] += torch.clamp(la, max=0).exp().mean(0).cpu()
                    swap_n[first.cpu()] += 1
        if step >= s.n_burnin and (step - s.n_burnin + 1) % s.thin == 0:
            rec_ll.append(ll[:, 0].double().cpu())
            rec_lp.append(lp[:, 0].double().cpu())
            if record is not None:
                with torch.no_grad():
                    rec.append(record(x[:, 0].detach()))
    n_after = max(s.n_steps - s.n_burnin, 1)
    return ReplicaRun(recorded=rec, log_lik=torch.stack(rec_ll, 1).numpy(), log_prior=torch.stack(rec_lp, 1).numpy(),
                      accept=(acc_sum / n_after).numpy(), swap=(swap_sum / swap_n.clamp(min=1)).numpy(),
                      steps=log_eps.exp().double().cpu().numpy(), betas=tuple(s.betas),
                      seconds=time.perf_counter() - t0, final=x.detach())

# %%
#| export
def default_prior_std(model: nn.Module) -> torch.Tensor:
    """Per parameter [params], the standard deviation of PyTorch's default initialisation of `nn.Linear`: weight and
    bias uniform on ±1/√fan_in, variance 1/(3·fan_in) (our choice of Gaussian prior; the paper leaves ρ arbitrary)."""
    out = []
    for name, p in model.named_parameters():
        layer = model.get_submodule(name.rsplit('.', 1)[0]) if '.' in name else model
        if not isinstance(layer, nn.Linear):
            raise ValueError(f"default_prior_std knows nn.Linear layers only; {name} belongs to {type(layer).__name__}")
        out.append(torch.full((p.numel(),), 1 / math.sqrt(3 * layer.in_features)))
    return torch.cat(out)

class NetPosterior:
    """The global posterior of `template`'s net on all of (X, y) at temperature 1: a Gaussian prior N(0, diag(std²)) on
    the weights and the log likelihood −Σ_i CE(f_w(x_i), y_i), in whitened coordinates z = w/std (the prior N(0, I))."""
    def __init__(self, template: nn.Module, X, y, std=None, prior_scale: float = 1.0):
        if not prior_scale > 0:
            raise ValueError(f"prior_scale (a factor on the prior's standard deviation) must be positive, got {prior_scale}")
        self.stack = ModelStack([template], next(template.parameters()).device)
        self.forward = batched_forward(self.stack.template)
        self.X, self.y = torch.as_tensor(X), torch.as_tensor(y)
        if self.X.ndim != 2 or self.y.shape != self.X.shape[:1]:
            raise ValueError(f"X must be [n, inputs] and y [n], got {tuple(self.X.shape)} and {tuple(self.y.shape)}")
        std = default_prior_std(template) if std is None else torch.as_tensor(std, dtype=torch.float32)
        if std.shape != (self.stack.n_params,) or not (std > 0).all():
            raise ValueError(f"std must be {self.stack.n_params} positive numbers, got shape {tuple(std.shape)}")
        self.std = (std * prior_scale).to(self.X.dtype)
        self.n = len(self.X)

    def weights(self, z): return z * self.std
    def whiten(self, w): return torch.as_tensor(w, dtype=self.std.dtype) / self.std
    def log_prior(self, z): return -0.5 * (z ** 2).sum(-1)
    def outputs(self, z, x):
        "Outputs [R, points, classes] of the nets with whitened weights `z` [R, d] on inputs `x` [points, inputs]."
        w = self.weights(z)
        return self.forward(self.stack.params(w), {}, x.expand(len(z), *x.shape))
    def log_lik(self, z):
        out = self.outputs(z, self.X)
        return -nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), self.y.repeat(len(z)),
                                            reduction='none').view(len(z), -1).sum(1)

# %%
#| export
class GaussianTarget:
    """A closed-form check: prior N(0, I) in `d` dimensions and log likelihood −½(x − m)ᵀP(x − m), so that π_β is
    Gaussian with precision I + βP and mean (I + βP)⁻¹βPm."""
    def __init__(self, mean, precision):
        self.m = torch.as_tensor(mean, dtype=torch.float64)
        self.P = torch.as_tensor(precision, dtype=torch.float64)
        if self.m.ndim != 1 or self.P.shape != (len(self.m), len(self.m)):
            raise ValueError(f"mean must be [d] and precision [d, d], got {tuple(self.m.shape)} and {tuple(self.P.shape)}")
    def log_prior(self, x): return -0.5 * (x ** 2).sum(-1)
    def log_lik(self, x):
        r = x - self.m
        return -0.5 * ((r @ self.P) * r).sum(-1)
    def moments(self, beta: float = 1.0):
        "The exact mean [d] and covariance [d, d] of π_β."
        prec = torch.eye(len(self.m), dtype=torch.float64) + beta * self.P
        cov = torch.linalg.inv(prec)
        return (cov @ (beta * self.P @ self.m)).numpy(), cov.numpy()

class MixtureTarget:
    """A closed-form check with modes: π_1 is the mixture Σ_j w_j N(μ_j, s²I) exactly (prior N(0, τ²I), the
    likelihood the mixture over the prior), so the mass of each mode is its weight w_j; π_0 is the prior."""
    def __init__(self, weights, means, s: float = 0.3, tau: float = 4.0):
        self.w = torch.as_tensor(weights, dtype=torch.float64)
        self.mu = torch.as_tensor(means, dtype=torch.float64)
        if self.mu.ndim == 1:
            self.mu = self.mu[:, None]
        if self.w.ndim != 1 or len(self.w) != len(self.mu) or (self.w <= 0).any() or abs(float(self.w.sum()) - 1) > 1e-9:
            raise ValueError("weights must be positive, sum to 1 and give one weight per mean")
        if not (s > 0 and tau > 0):
            raise ValueError(f"s and tau must be positive, got {s}, {tau}")
        self.s, self.tau = s, tau
    def log_prior(self, x): return -0.5 * (x ** 2).sum(-1) / self.tau ** 2 - x.shape[-1] * math.log(self.tau)
    def log_mixture(self, x):
        d = x.shape[-1]
        comp = -0.5 * ((x[:, None, :] - self.mu[None]) ** 2).sum(-1) / self.s ** 2 - d * math.log(self.s)
        return torch.logsumexp(comp + self.w.log()[None], 1)
    def log_lik(self, x): return self.log_mixture(x) - self.log_prior(x)
    def mode_of(self, x) -> np.ndarray:
        "The index of the nearest mean of each state [R, d]."
        return ((torch.as_tensor(x)[:, None, :] - self.mu[None]) ** 2).sum(-1).argmin(1).numpy()

# %%
#| export
def convergence_table(labels, k: int, energy=None) -> pd.DataFrame:
    """Split R-hat over chains of every cluster indicator of `labels` [chains, draws] (values 0..k−1) and of the
    `energy` [chains, draws] if given; with each cluster's pooled mass and the spread of the chains' masses."""
    labels = np.asarray(labels)
    if labels.ndim != 2 or labels.shape[1] < 4 or len(labels) < 2:
        raise ValueError(f"labels must be [chains ≥ 2, draws ≥ 4], got shape {labels.shape}")
    if labels.min() < 0 or labels.max() >= k:
        raise ValueError(f"labels must lie in 0..{k - 1}, got {labels.min()} to {labels.max()}")
    rows = []
    for c in range(k):
        per_chain = (labels == c).mean(1)
        rows.append(dict(quantity=f'C{c + 1} indicator', rhat=split_rhat(labels == c), mass=float((labels == c).mean()),
                         chain_min=float(per_chain.min()), chain_max=float(per_chain.max())))
    if energy is not None:
        e = np.asarray(energy, float)
        if e.shape != labels.shape:
            raise ValueError(f"energy must have the shape of labels {labels.shape}, got {e.shape}")
        rows.append(dict(quantity='energy U = −log posterior', rhat=split_rhat(e), mass=np.nan,
                         chain_min=float(e.mean(1).min()), chain_max=float(e.mean(1).max())))
    return pd.DataFrame(rows)
