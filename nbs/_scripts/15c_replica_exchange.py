# %% [markdown]
# # A reference posterior that converges
#
# > Full-batch MALA with replica exchange over a temperature ladder, vectorised over chains and rungs: the global posterior of the paper's moons net sampled from every function-space cluster of SGD's solutions, its convergence diagnosed, and table 2 and fig. 3 recomputed against it.

# %%
#| default_exp posterior.replica

# %%
#| hide
from nbdev.showdoc import *

# %% [markdown]
# **In the ledger.** Measured against this posterior, table 2's distances and fig. 3's ξ support the questions the
# moons run answers ([one verdict per question](ledger_questions.html)); none decides, since the prior and $n$ are
# our choice and the SGD nets are the 200-epoch ones App. G.4 would discard. The rows this page puts in the [claims
# ledger](ledger.html), read from it; each row's configuration, rule and reasons are one click away:

# %%
#| echo: false
from fracsgd.ledger.checks import study_table
study_table('reference-posterior')                # this study's rows of the claims ledger, read from it

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
import json
import matplotlib.pyplot as plt
from fracsgd.core import committed_dir, read_table
_t0 = time.perf_counter()
RESULTS = committed_dir('replica_exchange')             # nbs/replica_exchange: one folder per run of the tool
RUNS = ['seed0', 'seed1', 'seed0-prior4x', 'seed0-ladder', 'seed0-mala']
res = {r: {n: read_table(RESULTS / r / f'{n}.csv') for n in ('summary', 'rhat', 'masses', 'ladder', 'scan', 'table2',
                                                             'draws', 'starts')} | {'run': json.loads((RESULTS / r / 'run.json').read_text())}
       for r in RUNS}
value = lambda r, q: float(res[r]['summary'].set_index('quantity').value[q])
RHAT = 'split R-hat, cluster indicators (max over clusters)'


# %% [markdown]
# ## What it found
#
# **It converges.** Chains started four to a cluster in every function-space cluster of the committed SGD solutions,
# all sampling one global posterior, agree: the split R-hat of the cluster indicators is **1.002** on data seed 0
# (8 chains, 2 clusters) and **1.004** on data seed 1 (12 chains, 3 clusters), and of the energy 1.015 and 1.006;
# every chain changes cluster more than a hundred times in its 600 draws. The study's localized SGLD chains
# ([moons posterior](moons_posterior.html)) reached 1.22 and 1.46.
#
# **Table 2 does not come out as printed.** The paper reports KL 0.009, Wasserstein 0.002 and JS 0.003 between its
# posterior and SGD tempered at $\xi = 0.5$ (§4.2, table 2; fig. 3 picks $\xi = 0.5$). Against this posterior:
#
# * data seed 0: KL(Bayes‖tempered SGD) **0.047 [0.001, 0.17]** nats, JS **0.017 [0.0002, 0.062]** bits, W1
#   **0.152 [0.016, 0.29]**. The paper's KL and JS lie inside our intervals, but so does raw, untempered SGD
#   (KL 0.071 [0.013, 0.17]): two clusters' masses cannot tell tempered from raw SGD here. The W1 interval excludes the
#   paper's 0.002. The posterior puts 0.32 of its mass in C1, SGD 0.51, tempered SGD 0.47.
# * data seed 1: KL **1.01 [0.63, 1.58]**, W1 1.11, JS 0.36: the posterior puts 0.84 of its mass in the cluster where
#   SGD puts 0.19, and tempering at $\xi = 0.5$ hardly moves SGD's masses (raw SGD: KL 1.05).
# * fig. 3's criterion picks $\xi^* = 0.05$ on both seeds, the lower edge of the grid 0.05–2 (a bound, not an estimate),
#   not 0.5; chosen on seed 0 and applied to seed 1 (out of sample), the KL is 1.30 [0.62, 2.56].
#
# **Three caveats that matter more than the intervals.** (1) The posterior's draws are not inside any SGD cluster:
# their median squared probe distance to the nearest SGD centroid is 15.6 (seed 0), against 0.64 for SGD's own nets
# to theirs, and the nearest centroid is only 10–15% nearer than the next; the posterior's "cluster masses" are a
# partition, by SGD's centroids, of functions that fit the data less well (train loss 0.38 against SGD's 0.28).
# (2) The answer depends on the prior, which is our choice: with four times the prior variance the chains still agree
# (R-hat 1.011, energy 1.027), but C1's mass falls from 0.32 to 0.11 and the KL rises to 0.31 [0.13, 0.57].
# (3) The SGD nets are the study's 200-epoch ones, none of which meets App. G.4's convergence criterion.
# What made the chains agree is one exact target, not the exchange: MALA alone, without a ladder, gives the same
# masses (0.31 in C1, R-hat 1.008), and a coarser ladder down to the prior as well (0.32, R-hat 1.009).
# The [ledger](ledger.html) files all five claims asked again here at scale `assumed`, none decisive.
#
# The runs, their diagnostics and their posterior masses (SGD's masses beside them):

# %%
def headline(run):
    "One row per run: the convergence diagnostics and the posterior's cluster masses."
    s, m = res[run]['summary'].set_index('quantity'), res[run]['run']
    k = int(s.value['clusters k'])
    return {'run': run, 'data seed': m['data_seed'], 'prior variance': f"{m['prior_scale'] ** 2:g}× default",
            'chains': int(s.value['chains']), 'rungs': len(m['settings']['betas']),
            'R-hat (clusters, max)': s.value[RHAT], 'R-hat (energy)': s.value['split R-hat, energy'],
            'MALA accept (β = 1)': s.value['MALA acceptance at β = 1'],
            'lowest swap rate': s.value['swap rate, lowest over adjacent rungs'],
            'posterior masses': ', '.join(f"{s.value[f'posterior mass of cluster C{c + 1}']:.3f}" for c in range(k)),
            'SGD masses': ', '.join(f"{s.value[f'raw SGD mass of cluster C{c + 1}']:.2f}" for c in range(k)),
            'minutes': m['seconds_sampling'] / 60}
runs_table = pd.DataFrame([headline(r) for r in RUNS]).set_index('run')
runs_table.round(3)

# %% [markdown]
# Table 2 of the paper (§4.2) against this posterior, on data seed 0 (the committed `reference` SGD solutions) and data
# seed 1 (`reference-test`): SGD's cluster masses tempered by $mD_\xi$ with $m = 1$ and eq. 13's per-cluster $D_\xi$ (the
# study's choice), at the paper's $\xi = 0.5$ and at the $\xi^*$ that fig. 3's criterion picks on the grid 0.05–2, with
# raw SGD as the baseline. Intervals are 95% bootstrap intervals (SGD solutions resampled singly, posterior draws in
# blocks of 20). A run whose chains do not reach split R-hat 1.05 would print *inconclusive* in the last column.

# %%
PAPER = {'KL(Bayes‖Q) [nats]': ('KL(Bayes‖tempered SGD)', 0.009), 'JS divergence [bits]': ('JS(Bayes, tempered SGD)', 0.003),
         'W1 [ground |x_i − x_j|, x = cluster index]': ('Wass(Bayes, tempered SGD)', 0.002)}
def table2(run):
    t, s = res[run]['table2'], res[run]['summary'].set_index('quantity')
    converged = s.value[RHAT] <= 1.05
    rows = []
    for metric, (name, paper) in PAPER.items():
        for at in t['at'].unique():
            for comp in ('Q = tempered SGD', 'Q = raw SGD'):
                if comp == 'Q = raw SGD' and at != 'paper ξ':
                    continue
                r = t[(t['at'] == at) & (t.comparison == comp) & (t.metric == metric)].iloc[0]
                rows.append({'run': run, 'metric': name, 'Q': comp[4:], 'ξ': f"{r.xi:g} ({at})" if comp != 'Q = raw SGD' else '—',
                             'value': r.value, '95% interval': f'[{r.ci_low:.3f}, {r.ci_high:.3f}]', 'paper': paper,
                             'paper inside': r.ci_low <= paper <= r.ci_high,
                             'verdict': 'measured' if converged else 'inconclusive'})
    return pd.DataFrame(rows)
tab2 = pd.concat([table2(r) for r in ('seed0', 'seed1')], ignore_index=True)
tab2.round(3)

# %% [markdown]
# Where the posterior's draws are, beside SGD's nets: their training loss, and their distance (squared, over the
# class probabilities on the probe grid, the features the clusters are formed on) to the nearest SGD centroid.

# %%
WHERE = ['posterior draws: mean train loss (−log likelihood / n)',
         'posterior draws: median squared probe distance to the nearest SGD centroid',
         'SGD nets: median squared probe distance to their own centroid',
         'posterior draws: median ratio of the nearest to the second-nearest centroid distance']
where = pd.DataFrame({r: res[r]['summary'].set_index('quantity').value[WHERE] for r in RUNS}).T
where.insert(1, 'SGD nets: mean train loss', [float(res[r]['summary'].set_index('quantity').note[WHERE[0]].split(': ')[1]) for r in RUNS])
assert (where[WHERE[1]] > 5 * where[WHERE[2]]).all()        # the draws are far outside SGD's clusters
where.round(3)

# %%
fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
for ax, run in zip(axes[:2], ('seed0', 'seed1')):
    s = res[run]['summary'].set_index('quantity').value
    k = int(s['clusters k'])
    x = np.arange(k)
    for j, (what, label) in enumerate([('raw SGD mass of cluster', 'SGD'), ('posterior mass of cluster', 'posterior (replica exchange)'),
                                       ('tempered SGD mass of cluster', 'tempered SGD, ξ = 0.5')]):
        v = [s[q] for q in s.index if q.startswith(what) and q.split(what + ' ')[1].split(',')[0] in [f'C{c + 1}' for c in range(k)]]
        ax.bar(x + (j - 1) * 0.27, v, 0.27, label=label)
    pm = res[run]['masses']
    for c in range(k):                                   # each chain's own mass: the spread R-hat summarises
        ax.plot(np.full(len(pm), c) + np.linspace(0.05, 0.15, len(pm)), pm[f'C{c + 1}'], 'k.', ms=3)
    ax.set(xticks=x, xticklabels=[f'C{c + 1}' for c in range(k)], ylabel='mass', ylim=(0, 1),
           title=f"fig. 4b analogue, data seed {res[run]['run']['data_seed']}")
    ax.legend(fontsize=7)
for run, style in (('seed0', '-'), ('seed1', '--')):
    sc = res[run]['scan']
    u = sc[sc.comparison == 'untempered']
    axes[2].plot(u.xi, u['KL(SGD‖theoretical SGD) [nats]'], style, label=f'{run}: KL(SGD‖theoretical SGD)')
axes[2].axvline(0.5, color='grey', lw=0.8)
axes[2].set(xlabel='ξ', ylabel='KL [nats]', yscale='log', title='fig. 3 analogue against the converged posterior')
axes[2].legend(fontsize=7)
plt.tight_layout()


# %% [markdown]
# ## How: one target, exact moves, a ladder
#
# **The target.** The paper compares SGD with "the (local) Bayesian posterior" and seeds its SGLD chains at two SGD
# solutions (§4.2, App. G.4: 1,000 draws, 200 burn-in, 10 steps between draws, step $10^{-5}$); its prior $\rho$ is
# "some arbitrary choice" (eqs. 15 and 55) and is never named. The study's chains were localized (a pull towards their
# own start), so chains from different starts sampled different distributions and could not agree. Here there is
# one target for every chain: the global posterior of the paper's 2-64-64-2 ReLU net on all $n = 512$ training points
# at temperature 1,
# $$\pi(w)\propto\rho(w)\prod_{i=1}^{n}p(y_i\mid x_i,w),\qquad \rho=\mathcal N\big(0,\operatorname{diag}(\sigma^2)\big),
# \quad \sigma^2 = \frac{1}{3\,\mathrm{fan_{in}}},$$
# the variance of PyTorch's default initialisation of `nn.Linear` (weights and biases uniform on $\pm1/\sqrt{\mathrm{fan_{in}}}$).
# That prior is **our choice**, as are $n$ (all 512 points) and the temperature; nothing is localized. A run at 4× the
# prior variance measures how much the answer owes to it.
#
# **The moves.** The sampler works in whitened coordinates $z = w/\sigma$, where the prior is $\mathcal N(0, I)$. Each rung
# $r$ of a ladder $1=\beta_0>\beta_1>\dots$ targets the power posterior $\pi_{\beta}(z)\propto\rho(z)\,p(y\mid z)^{\beta}$.
# On every rung, one Metropolis-adjusted Langevin step (MALA: a Langevin proposal $z' = z + \tfrac{\epsilon}{2}\nabla\log
# \pi_\beta(z) + \mathcal N(0,\epsilon I)$, accepted with the Metropolis–Hastings ratio including both proposal densities),
# so each rung's kernel leaves its $\pi_\beta$ exactly invariant, whatever the step. Then adjacent rungs of a chain
# propose to trade states, accepted with probability $\min\{1, e^{(\beta_i-\beta_j)(\ell_j-\ell_i)}\}$ ($\ell$ the log
# likelihood), even pairs on even steps and odd pairs on odd ones. The product of all rungs' targets is invariant under
# both moves, so the $\beta=1$ rung samples $\pi$; hotter rungs, where the likelihood is flattened, cross between regions
# of function space more easily and pass their states down. Steps are adapted towards acceptance 0.574 during burn-in
# only and then fixed, so the recorded chain is a time-homogeneous Markov chain with the right target.
#
# **Vectorised.** All chains and rungs are one batch: the net's parameters for every replica are rows of one tensor,
# evaluated by the [model stack](stack.html)'s `ModelStack` and `batched_forward` (batched matrix products), and the
# log density and its gradient come from one backward pass over the sum (replicas are independent). On one CPU thread
# a step of 64 replicas of the 4,482-parameter net on 512 points takes about 0.1 s.
#
# **Chains from every cluster.** The SGD solutions are the committed study's (`nbs/moons_posterior/reference` and
# `reference-test`: 100 nets, 200 epochs, the paper's settings); `tools/reference_posterior.py` retrains them from their
# seeds with the study's code, checks that every net lands in its committed cluster, and starts chains (every rung at
# once) at the nets nearest each cluster's centre. A posterior draw is assigned to the cluster whose SGD centroid is
# nearest its predictions on the study's 20×20 probe grid, exactly as the study assigns its SGLD draws.

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


# %% [markdown]
# ## A live check where the answer is known
#
# A one-dimensional mixture $0.25\,\mathcal N(-3, 0.3^2) + 0.75\,\mathcal N(3, 0.3^2)$ (prior $\mathcal N(0, 4^2)$, the
# likelihood the mixture divided by the prior, so that $\pi_1$ is the mixture exactly). Sixteen chains all start in the
# light mode. The modes are 20 standard deviations apart: MALA alone never leaves; with a ladder down to the prior the
# cold rung's mass of the right mode must come out at 0.75, and the R-hat of the mode indicators below 1.05.

# %%
mix = MixtureTarget([0.25, 0.75], [[-3.0], [3.0]])
x0 = torch.full((16, 1), -3.0, dtype=torch.float64)
toy = ReplicaSettings(betas=(1.0,), step_size=0.05, n_burnin=300, n_draws=500, thin=2, seed=1)
alone = replica_exchange(mix, x0, toy, record=lambda x: x.clone())
ladder = replica_exchange(mix, x0, toy.replace(betas=geometric_ladder(6, 0.02)), record=lambda x: x.clone())
modes = {name: np.stack([mix.mode_of(v) for v in run.recorded], 1) for name, run in (('MALA alone', alone), ('replica exchange', ladder))}
toy_table = pd.DataFrame({name: {'mass of the right mode (exact 0.75)': (m == 1).mean(),
                                 'R-hat of the mode indicator': convergence_table(m, 2).rhat.max()} for name, m in modes.items()}).T
assert (modes['MALA alone'] == 0).all()
assert abs((modes['replica exchange'] == 1).mean() - 0.75) < 0.05 and toy_table.iloc[1, 1] < 1.05, toy_table
gauss = GaussianTarget([1.0, -2.0], [[4.0, 1.0], [1.0, 2.0]])
g_run = replica_exchange(gauss, torch.zeros(64, 2, dtype=torch.float64),
                         ReplicaSettings(betas=(1.0, 0.5, 0.0), step_size=0.3, n_burnin=200, n_draws=300, thin=2),
                         record=lambda x: x.clone())
g_draws = torch.stack(g_run.recorded, 1).reshape(-1, 2).numpy()
assert np.allclose(g_draws.mean(0), gauss.moments()[0], atol=0.03) and np.allclose(np.cov(g_draws.T), gauss.moments()[1], atol=0.03)
toy_table.round(3)

# %% [markdown]
# (The same checks, and detailed balance of a swap against exact draws on two rungs, are `tests/test_replica.py`.)
#
# ## The diagnostics of the net runs
#
# Per rung of each run: the fixed MALA step after burn-in (whitened units), its acceptance, and the swap rate to the
# next hotter rung. Then the split R-hat (each chain cut in halves, so 2 × chains sequences) of every cluster
# indicator and of the energy $U = -\log\pi$, with the pooled mass and the smallest and largest mass over chains.

# %%
pd.concat({r: res[r]['ladder'].set_index('rung') for r in RUNS}).round(4)

# %%
pd.concat({r: res[r]['rhat'].set_index('quantity') for r in RUNS}).round(4)

# %%
fig, axes = plt.subplots(2, 2, figsize=(13, 5.5), sharex='col')
for j, run in enumerate(('seed0', 'seed1')):
    d = res[run]['draws']
    st = res[run]['starts'].set_index('chain').start_cluster
    for c, part in d.groupby('chain'):
        axes[0, j].plot(part.draw, part.cluster + 1 + 0.06 * (c - d.chain.nunique() / 2), lw=0.4, color=f'C{st[c]}')
        axes[1, j].plot(part.draw, -(part.log_lik + part.log_prior), lw=0.4, color=f'C{st[c]}')
    axes[0, j].set(ylabel='cluster of the draw', title=f'{run}: chains coloured by their start cluster')
    axes[1, j].set(xlabel='draw (every 5 MALA steps after burn-in)', ylabel='energy U = −log π')
plt.tight_layout()

# %% [markdown]
# ## How much the answer owes to the prior and the ladder
#
# The same data seed 0 with the prior's variance four times PyTorch's default (σ doubled), and with a different
# ladder (six rungs from β = 1 to 0.05 plus the prior itself, β = 0), and with no ladder at all (MALA alone);
# KL(Bayes‖tempered SGD) at ξ = 0.5:

# %%
KLQ = 'KL(Bayes‖Q) [nats], tempered SGD vs Bayes, ξ = 0.5'
sens = pd.DataFrame({r: {'R-hat (clusters)': value(r, RHAT), 'R-hat (energy)': value(r, 'split R-hat, energy'),
                         'posterior mass C1': value(r, 'posterior mass of cluster C1'), 'KL at ξ = 0.5': value(r, KLQ),
                         'KL 95% interval': '[{:.3f}, {:.3f}]'.format(*res[r]['summary'].set_index('quantity').loc[KLQ, ['ci_low', 'ci_high']])}
                     for r in ('seed0', 'seed0-prior4x', 'seed0-ladder', 'seed0-mala')}).T
sens

# %% [markdown]
# The prior moves the answer, the ladder does not: four times the prior variance (σ doubled) sends C1's posterior mass
# from 0.32 to 0.11 and the KL from 0.05 to 0.31, with chains that still agree; a different ladder, and no ladder at
# all, give the main run's masses within their chains' spread. With this prior the posterior's clusters are not
# separated by barriers that MALA's full-batch steps (about 0.09 in whitened units, against SGLD's $10^{-5}$ in the
# study) cannot cross; the ladder is insurance that costs eight times the compute here, and a check that it was not
# needed. A sharper posterior (more data, a larger prior variance, a converged SGD) could need it.

# %% [markdown]
# ## In the ledger
#
# Five claims are asked again against this posterior: table 2's three distances at ξ = 0.5 (KL 0.009, JS 0.003,
# W1 0.002), fig. 3's ξ = 0.5, and the out-of-sample control (ξ chosen on data seed 0, the KL measured on data seed 1).
# The summary is built on this page from the committed run tables (`nbs/replica_exchange/seed0/` and `seed1/`, and the
# variants), and its committed copy in `compact/reference-posterior/full/` must be the same. The prior, the number of
# points and the temperature are our choices and the SGD nets are the 200-epoch ones, so the scale is `assumed` and no
# row can be decisive.

# %%
REFERENCE_SCALE = ("assumed: the paper names no prior (rho arbitrary, eq. 15) and samples a local posterior from two SGD "
                   "seeds (App. G.4); here the global posterior at temperature 1 on all n = 512 points with a Gaussian prior "
                   "of PyTorch's default-init variance, replica-exchange MALA from every SGD cluster of the committed "
                   "200-epoch reference solutions (100 nets per data seed, none converged by App. G.4's criterion)")
SEEDS = {'seed0': 'data seed 0', 'seed1': 'data seed 1'}
OOS = 'KL(Bayes‖Q) [nats], tempered SGD vs Bayes, ξ chosen on data seed 0, measured on data seed 1 (out of sample)'

def ledger_summary() -> pd.DataFrame:
    "The compact summary of this page: every row of both seeds' summaries, named by seed, the out-of-sample KL and the variants."
    s0 = res['seed0']['summary'].set_index('quantity')
    rows = [('nets analysed', s0.value['nets analysed'], np.nan, np.nan, 'per data seed')]
    for run, label in SEEDS.items():
        for r in res[run]['summary'].itertuples():
            if r.quantity == 'nets analysed':
                continue
            q = r.quantity
            if 'chosen on the other data seed' in q:
                continue
            rows.append((f'{q}, {label}', r.value, r.ci_low, r.ci_high, '' if pd.isna(r.note) else r.note))
    s1 = res['seed1']['summary']
    oos = s1[s1.quantity.str.startswith('KL(Bayes‖Q) [nats], tempered SGD vs Bayes') & s1.quantity.str.contains('other data seed')].iloc[0]
    rows.append((OOS, oos.value, oos.ci_low, oos.ci_high, f"{'' if pd.isna(oos.note) else oos.note}; ξ = {value('seed0', 'ξ minimising KL(SGD‖theoretical SGD)'):g}, ξ* of data seed 0"))
    for run in ('seed0-prior4x', 'seed0-ladder', 'seed0-mala'):
        s = res[run]['summary'].set_index('quantity')
        for q in (KLQ, RHAT, 'split R-hat, energy'):
            rows.append((f'{q}, {run}', s.value[q], s.ci_low[q], s.ci_high[q], '' if pd.isna(s.note[q]) else s.note[q]))
    return pd.DataFrame(rows, columns=['quantity', 'value', 'ci_low', 'ci_high', 'note']).astype(
        {'value': float, 'ci_low': float, 'ci_high': float})

from fracsgd.ledger.checks import chapter_result, same_summary
from fracsgd.ledger.claims import read_ledger, rebuild_ledger, stale_rows
from fracsgd.ledger.provenance import COMPACT
SOURCES = [RESULTS / r / n for r in RUNS for n in ('summary.csv', 'draws.csv')]
ledger_table = ledger_summary()
committed_summary = COMPACT / 'reference-posterior' / 'full' / 'summary.csv'
assert committed_summary.exists() and same_summary(ledger_table, read_table(committed_summary)), \
    'this page and its ledger rows differ: run the heavy cell below'
ledger_table.round(4)

# %%
#| heavy
# The run tables must be committed first: the result records the commit that holds them.
chapter_result('reference-posterior', 'full', ledger_table, SOURCES, REFERENCE_SCALE,
               sum(res[r]['run']['seconds_sampling'] for r in RUNS), device='cpu (2 cores shared, one thread)',
               when=max(res[r]['run']['date'] for r in RUNS))
rebuild_ledger()

# %%
assert stale_rows() == [], stale_rows()
rows = read_ledger()
rows = rows[rows.source == 'compact/reference-posterior/full'].set_index('claim_id')
assert set(rows.index) == {'tab2-kl-converged', 'tab2-js-converged', 'tab2-wasserstein-converged', 'fig3-xi-converged',
                           'tab2-kl-out-of-sample-converged'}
assert (rows.verdict == 'not run at paper scale').all()
rows[['value', 'ci_low', 'ci_high', 'rule', 'verdict']].round(4)

# %% [markdown]
# On the rule's numbers, W1 and fig. 3's ξ are not reproduced (W1's interval excludes 0.002; ξ* = 0.05 is at the grid's
# edge, far from 0.5), the KL and JS of seed 0 are inconclusive (intervals that hold the paper's value and raw SGD's
# alike), and the out-of-sample KL is not reproduced. The ledger files every one as not run at paper scale: the prior,
# $n$ and the temperature are ours, and App. G.4's protocol would have discarded these SGD nets.

# %%
print(f"notebook body: {time.perf_counter() - _t0:.0f} s")
