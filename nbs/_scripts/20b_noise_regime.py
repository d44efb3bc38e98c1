# %% [markdown]
# # A regime where SGD and GD differ
#
# > Converged moons nets continued by SGD at a large step and a small batch, beside full-batch GD from the same weights: the part of the motion that minibatch noise makes, its ageing (eq. 4), its returns and Theorem 3.1.

# %%
#| default_exp diffusion.noise_regime

# %%
#| hide
from nbdev.showdoc import *

# %% [markdown]
# **In the ledger.** Four of the paper's claims asked again where minibatch noise matters fail on their numbers: the
# late slope is above ½, both ageing exponents miss eq. 4's by 0.4–0.5, and Theorem 3.1's $d_{walk} -
# 2\bar\lambda/d_s$ is 0.51, not 0. The paper runs no experiment in this regime, so none is decisive (*What was
# found*, below). The rows this page puts in the [claims ledger](ledger.html), read from it; each row's
# configuration, rule and reasons are one click away:

# %%
#| echo: false
from fracsgd.ledger.checks import study_table
study_table('noise-regime')                # this study's rows of the claims ledger, read from it

# %%
#| export
from __future__ import annotations
import copy, math, time, warnings
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from fracsgd.train.ensemble import EnsembleSettings, PerChunk, train_ensemble
from fracsgd.diffusion.spectral import fit_power_law
from fracsgd.diffusion.ageing import IncrementRecorder
from fracsgd.diffusion.return_probability import (ProjectedPath, ReturnCurves, projected_paths,
    spectral_dimension_from_returns)

# %%
import json
import matplotlib.pyplot as plt
from fracsgd.core import committed_dir, read_table
from fracsgd.diffusion.ageing import (brownian_walks, ou_walks, ou_aged_msd, paired_ageing, paired_excess,
                                      paired_late_slopes, ageing_exponent, aged_msd)
from fracsgd.diffusion.return_probability import (gaussian_walks, return_curves, curves_from_table,
                                                  returns_summary)
from IPython.display import display
torch.set_num_threads(1)


# %% [markdown]
# **Why this chapter.** On moons at the paper's setting (appendix G.4: learning rate 0.01, batch 128), SGD and
# full-batch gradient descent from the same initialisations travel the same $R(t)$ to a few parts in ten thousand
# (the controls of the [moons study](moons_diffusion.html)). There the late growth of $R(t)$ is the drift of gradient
# descent, and the paper's account of it, a walk driven by minibatch noise on a fractal (eq. 4's time-fractional
# Fokker–Planck equation, Theorem 3.1's $d_{walk} = 2\lambda/d_s$), has nothing to act on. This chapter looks for a
# regime where the noise is large: the paper's nets and data, trained first to convergence, then continued with a
# five-times larger step (0.05) and a batch sixteen times smaller (8), beside full-batch GD at the same step from the
# very same weights. Whatever SGD does that GD does not is the noise's doing, and that part is what eq. 4 and
# Theorem 3.1 can be tested on.
#
# **The protocol** (`NoiseRegimeConfig`):
#
# 1. 24 nets (2×64 ReLU, the paper's 512 moons points with noise 0.2), trained by the paper's SGD (lr 0.01, batch
#    128) in blocks of 2,000 steps until **every** net's full-batch training loss changes by less than 1% of itself
#    over one block (the convergence criterion; at most 60,000 steps).
# 2. From those weights, two continuations of 20,000 steps each: (a) SGD at lr 0.05, batch 8; (b) full-batch GD at
#    lr 0.05. $R(t)$ is measured from the continuation's start. Both record the increments at ages $s$ from 10 to
#    8,000 ([ageing chapter](ageing.html)), a 32-dimensional random projection of $w_t - w_0$ at every step (the
#    same directions for both, [return probability](return_probability.html)), and the full weights at 60
#    log-spaced steps, from which the distance between each SGD net and its GD twin is exact.
# 3. The LLC of every net (the paper's table-3 SGLD setting) at the converged weights and at the end of each
#    continuation: one estimate each, for Theorem 3.1's λ.
#
# The experiment is `tools/noise_regime.py`; it writes the small tables under `nbs/noise_regime/`, which this page
# reads.

# %%
#| export
@dataclass(frozen=True)
class NoiseRegimeConfig:
    "Converge the paper's moons nets, then continue them by SGD at a large step and small batch and by full-batch GD."
    n_nets: int = 24
    n_samples: int = 512                    # the paper's moons (app. G.4)
    noise: float = 0.2
    data_seed: int = 0
    hidden: tuple = (64, 64)
    pre_lr: float = 0.01                    # convergence by the paper's SGD
    pre_batch: int = 128
    block: int = 2000                       # steps per convergence block
    tol: float = 0.01                       # converged: every net's full-batch loss moves < tol of itself per block
    max_steps: int = 60_000
    lr: float = 0.05                        # the continuation, SGD and GD alike
    batch_size: int = 8                     # SGD's batch; GD uses all n_samples
    n_steps: int = 20_000
    seed: int = 1000                        # the continuation's minibatch streams (blocks use seeds 0, 1, ...)
    ages: tuple = (10, 30, 100, 300, 1000, 2000, 4000, 8000)
    lags: tuple = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
    proj_dim: int = 32
    n_points: int = 60                      # log-spaced steps with R(t) and the full weights

NOISE_REGIME = NoiseRegimeConfig()
SMOKE = replace(NOISE_REGIME, n_nets=2, block=20, max_steps=40, n_steps=200, ages=(10, 30), lags=(1, 2, 5, 10),
                proj_dim=4, n_points=10)

def log_steps(n_steps: int, n_points: int) -> list[int]:
    "Step 0, about `n_points` integer steps log-spaced from 1 to `n_steps`, and `n_steps`."
    return sorted({0, n_steps, *np.unique(np.geomspace(1, n_steps, n_points).round().astype(int)).tolist()})


# %%
assert log_steps(1000, 4) == [0, 1, 10, 100, 1000]


# %% [markdown]
# ## Convergence
#
# `converge` trains the nets in place by blocks and stops at the first block after which every net's full-batch
# loss has moved by less than `tol` of itself. Each block draws fresh minibatch orders (seed = block number).

# %%
#| export
@torch.no_grad()
def full_batch_loss(models, X, y) -> np.ndarray:
    "The cross-entropy on all of (X, y) of each net [nets]."
    return np.array([F.cross_entropy(m(X), y).item() for m in models])

def converge(models, data, cfg: NoiseRegimeConfig = NOISE_REGIME) -> pd.DataFrame:
    """Train `models` in place by SGD (cfg.pre_lr, cfg.pre_batch) in blocks of cfg.block steps until every net's
    full-batch loss changes by less than cfg.tol of itself over a block, or cfg.max_steps: one row per block."""
    X, y = data
    prev = full_batch_loss(models, X, y)
    rows, step, k = [dict(step=0, loss_mean=prev.mean(), loss_max=prev.max(), rel_change_max=np.nan)], 0, 0
    while step < cfg.max_steps:
        train_ensemble(models, data, 'classification', EnsembleSettings(
            lr=cfg.pre_lr, batch_size=cfg.pre_batch, n_steps=cfg.block, every=cfg.block, groups='top', seed=k))
        step, k = step + cfg.block, k + 1
        L = full_batch_loss(models, X, y)
        rel = np.abs(L - prev) / prev
        rows.append(dict(step=step, loss_mean=L.mean(), loss_max=L.max(), rel_change_max=rel.max()))
        prev = L
        if rel.max() < cfg.tol:
            break
    out = pd.DataFrame(rows)
    return out.assign(converged=out.rel_change_max < cfg.tol)


# %% [markdown]
# ## Two continuations from the same weights
#
# `continue_from` trains copies of the nets (the originals stay at the converged weights, so both continuations
# start there), with the [ensemble trainer](ensemble.html) and three recorders: the increments, the
# return-probability chapter's `ProjectedPath` and `WeightSnapshots`, which keeps each net's full weights at a few
# steps. (This experiment found that `ProjectedPath`, then a list of small arrays, grew the process by 0.4–1.5 MB a
# step, 21 GB when its first run was killed for memory; it now writes into one buffer.)

# %%
#| export
class WeightSnapshots:
    "A recorder for `PerChunk`: each member's flat weights at the steps `steps`."
    def __init__(self, steps):
        self.want, self.steps, self.w = {int(s) for s in steps}, [], []
    def update(self, step: int, w) -> None:
        if step in self.want:
            self.steps.append(int(step))
            self.w.append(w.detach().double().cpu().clone())
    def weights(self) -> np.ndarray:
        "[members, recorded steps, params]."
        return torch.stack(self.w, 1).numpy()

def snapshots(observer) -> tuple[np.ndarray, np.ndarray]:
    "The steps and weights [members, steps, params] of a `PerChunk` of `WeightSnapshots`, members in ensemble order."
    recs = sorted(observer.recorders.items())
    if any(r.steps != recs[0][1].steps for _, r in recs):
        raise ValueError("the chunks recorded different steps")
    return np.asarray(recs[0][1].steps), np.concatenate([r.weights() for _, r in recs])

def continue_from(models, data, lr: float, batch_size: int, n_steps: int, *, ages, lags, proj_dim: int,
                  record, seed: int) -> dict:
    """Train copies of `models` by SGD at `lr` and `batch_size` (all the data: full-batch GD) for `n_steps`,
    recording R(t) and the weights at `record`, the increments at `ages` × `lags` and a `proj_dim`-dimensional
    projection at every step: trajectory, increments, paths, snap_steps, snaps, models, seconds (CPU)."""
    nets = [copy.deepcopy(m) for m in models]
    s = EnsembleSettings(optimizer='sgd', lr=lr, batch_size=batch_size, n_steps=n_steps, every=frozenset(record),
                         groups='top', seed=seed)
    inc = PerChunk(lambda: IncrementRecorder(ages, lags, n_steps))
    proj, snap = PerChunk(lambda: ProjectedPath(proj_dim)), PerChunk(lambda: WeightSnapshots(record))
    t0 = time.process_time()
    table = train_ensemble(nets, data, 'classification', s, observers=[inc, proj, snap])
    seconds = time.process_time() - t0
    paths = projected_paths(proj)[1]                                             # [members, steps + 1, dim]
    snap_steps, snaps = snapshots(snap)
    return dict(trajectory=table, increments=inc.table(), paths=paths, snap_steps=snap_steps, snaps=snaps,
                models=nets, seconds=seconds)


# %% [markdown]
# A check that the pairing is what it claims: with SGD's batch set to the whole data set, SGD *is* full-batch GD
# (the trainer then feeds every net all the data at every step), so two such continuations must agree, while a
# real minibatch pulls them apart at once.

# %%
from fracsgd.datasets.moons import load_moons
from fracsgd.nets.models import make_mlp
X, y, _ = load_moons(SMOKE.n_samples, SMOKE.noise, seed=SMOKE.data_seed)
nets = [make_mlp([2, *SMOKE.hidden, 2], seed=s) for s in range(SMOKE.n_nets)]
conv = converge(nets, (X, y), SMOKE)
assert conv.step.max() <= SMOKE.max_steps and conv.loss_mean.iloc[-1] < conv.loss_mean.iloc[0]
run = lambda b: continue_from(nets, (X, y), 0.05, b, 50, ages=(10,), lags=(1, 5), proj_dim=4,
                              record=log_steps(50, 5), seed=7)
gd, full, small = run(SMOKE.n_samples), run(SMOKE.n_samples), run(8)
assert np.allclose(gd['snaps'][:, 0], full['snaps'][:, 0]) and np.allclose(gd['snaps'][:, 0], small['snaps'][:, 0])
assert np.abs(gd['snaps'] - full['snaps']).max() < 1e-5 < np.abs(gd['snaps'] - small['snaps'])[:, -1].max()
assert gd['paths'].shape == (2, 51, 4) and list(gd['snap_steps']) == log_steps(50, 5)


# %% [markdown]
# ## The noise part
#
# Three measurements of what SGD adds, all paired net by net with the GD twin and resampled over nets:
#
# * the **twin distance** $\Delta^2(t) = \lVert w^{SGD}_t - w^{GD}_t\rVert^2$, exact from the weight snapshots. If
#   SGD were GD plus a free walk of diffusion constant $D$ in $d$ coordinates, $\langle\Delta^2\rangle = 2Ddt$;
#   plus a fluctuation held in a well of stiffness $k$, $\langle\Delta^2\rangle = (Dd/k)(1 - e^{-2kt})$, which
#   levels off. Its growth exponent (`growth_exponent`) reads which;
# * the gap $R_{SGD}(t) - R_{GD}(t)$ (`paired_difference`), and its squared version, which for GD plus independent
#   noise is the noise's variance, $2Ddt$ for a free walk;
# * $M_{SGD}(s,\tau) - M_{GD}(s,\tau)$, the increments the noise adds (`paired_excess` of the ageing chapter).

# %%
#| export
def paired_difference(t, A, B, n_boot: int = 200, seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    "Mean over pairs of A − B ([pairs, times] each) at each t, with a percentile interval over resampled pairs."
    A, B = np.asarray(A, float), np.asarray(B, float)
    if A.shape != B.shape or A.shape[-1] != len(t):
        raise ValueError(f"A and B must both be [pairs, {len(t)} times], got {A.shape} and {B.shape}")
    D, rng = A - B, np.random.default_rng(seed)
    boots = np.array([D[rng.integers(0, len(D), len(D))].mean(0) for _ in range(n_boot)])
    a = (1 - level) / 2
    return pd.DataFrame({'t': np.asarray(t, float), 'value': D.mean(0), 'ci_low': np.quantile(boots, a, axis=0),
                         'ci_high': np.quantile(boots, 1 - a, axis=0), 'pairs': len(D)})

def growth_exponent(t, Y, t_min: float, t_max: float | None = None, n_boot: int = 200, seed: int = 0) -> dict:
    "Log-log slope of the mean of Y [members, times] on t_min ≤ t ≤ t_max, with an interval over resampled members."
    f = fit_power_law(t, Y, t_min=t_min, t_max=t_max, n_boot=n_boot, seed=seed)
    return dict(value=f.slope, ci_low=f.ci_low, ci_high=f.ci_high, t_min=f.t_min, t_max=f.t_max, r2=f.r2,
                decades=math.log10(f.t_max / f.t_min))


# %% [markdown]
# On walks whose answer is known: a drift shared by both twins plus Brownian noise for "SGD" gives
# $\langle\Delta^2\rangle = 2Ddt$ and an exponent of 1; an Ornstein–Uhlenbeck fluctuation gives the closed form
# `ou_aged_msd(0, t, k)` of the ageing chapter and an exponent near 0 once $t \gg 1/k$.

# %%
T, d, D = 2000, 3, 0.5
drift = np.linspace(0, 50, T + 1)[None, :, None] * np.ones((400, 1, d))
tt = np.array([10, 30, 100, 300, 1000, 2000])
bm = drift + brownian_walks(400, T, d=d, D=D, seed=1)
ou = drift + ou_walks(400, T, k=0.05, D=D, d=d, seed=2)
for walk, truth in ((bm, 2 * D * d * tt), (ou, ou_aged_msd(0, tt, k=0.05, D=D, d=d))):
    sq = ((walk - drift) ** 2).sum(-1)[:, tt]
    gap = paired_difference(tt, sq, 0 * sq)
    assert ((gap.ci_low < truth) & (truth < gap.ci_high)).mean() >= 0.8, (gap, truth)
    assert np.allclose(gap.value, truth, rtol=0.15)
g_bm = growth_exponent(tt, ((bm - drift) ** 2).sum(-1)[:, tt], t_min=100)
g_ou = growth_exponent(tt, ((ou - drift) ** 2).sum(-1)[:, tt], t_min=100)
assert abs(g_bm['value'] - 1) < 0.05 and g_bm['ci_low'] < 1 < g_bm['ci_high'] + 0.02
assert abs(g_ou['value']) < 0.05


# %% [markdown]
# ## Theorem 3.1 on one ensemble, each quantity measured apart
#
# Theorem 3.1 (eq. 12) states $d_{walk} = 2\lambda/d_s$ near critical points. Eq. 17 of the paper *computes* $d_s$ from it, so it cannot test it;
# here the three are measured separately: $d_{walk} = 1/s$ from the late log-log slope $s$ of the mean $R(t)$;
# $d_s$ from the return probability $P_\varepsilon(\tau) \sim \tau^{-d_s/2}$ of a path
# ([return probability](return_probability.html)); λ from the LLC. `theorem31` resamples nets once for all three,
# and gives $d_{walk} - 2\bar\lambda/d_s$ and the λ the theorem would need, $d_{walk} d_s / 2$, with intervals.
# The return window is the one `spectral_dimension_from_returns` chooses on all nets; a resample fits the pooled
# return probability on that window.

# %%
#| export
def theorem31(t, R, curves: ReturnCurves, eps: float, lam=None, t_min: float = 1.0, t_max: float | None = None,
              n_boot: int = 200, seed: int = 0, level: float = 0.95, **window) -> pd.DataFrame:
    """d_walk (1 / late slope of mean R [nets, times]), d_s (returns within `eps` of `curves`, one unit per net), λ̄
    (`lam` [nets] or None), 2λ̄/d_s, d_walk − 2λ̄/d_s and d_walk·d_s/2, resampled over nets together."""
    t, R = np.asarray(t, float), np.asarray(R, float)
    if curves.hits.shape[0] != len(R):
        raise ValueError(f"the return counts need one unit per net: {curves.hits.shape[0]} units, {len(R)} nets")
    lam = None if lam is None else np.asarray(lam, float)
    fit = spectral_dimension_from_returns(curves, eps, n_boot=2, **window)
    w = (t >= t_min) & (t <= (t_max or t.max())) & (t > 0)
    j = int(np.argmin(np.abs(np.log(curves.eps / fit.eps))))
    sel = (curves.tau >= fit.tau_min) & (curves.tau <= fit.tau_max) if math.isfinite(fit.d_s) else None
    def f(i):
        d_walk = 1 / np.polyfit(np.log(t[w]), np.log(R[i][:, w].mean(0)), 1)[0]
        d_s = np.nan
        if sel is not None:
            P = curves.hits[i][:, j, sel].sum(0) / curves.pairs[i][:, sel].sum(0)
            d_s = -2 * np.polyfit(np.log(curves.tau[sel]), np.log(P), 1)[0] if (P > 0).all() else np.nan
        l = np.nan if lam is None else lam[i].mean()
        return np.array([d_walk, d_s, l, 2 * l / d_s, d_walk - 2 * l / d_s, d_walk * d_s / 2])
    rng = np.random.default_rng(seed)
    boots = np.array([f(rng.integers(0, len(R), len(R))) for _ in range(n_boot)])
    a = (1 - level) / 2
    names = ['d_walk = 1 / late slope of R', 'd_s from returns', 'λ̄ (LLC)', '2 λ̄ / d_s (Theorem 3.1)',
             'd_walk − 2 λ̄ / d_s', 'd_walk · d_s / 2 (the λ Theorem 3.1 needs)']
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', RuntimeWarning)                 # a quantity that is NaN in every resample
        lo, hi = np.nanquantile(boots, a, axis=0), np.nanquantile(boots, 1 - a, axis=0)
    return pd.DataFrame({'quantity': names, 'value': f(np.arange(len(R))), 'ci_low': lo, 'ci_high': hi,
                         'eps': fit.eps, 'tau_min': fit.tau_min, 'tau_max': fit.tau_max, 'reason': fit.reason,
                         't_min': t[w].min(), 't_max': t[w].max(), 'nets': len(R)})


# %% [markdown]
# On Gaussian walks in two dimensions the answer is known: $R \sim t^{1/2}$ ($d_{walk} = 2$) and
# $P_\varepsilon(\tau) \sim \tau^{-1}$ ($d_s = 2$), so the λ the theorem needs is $d_{walk} d_s / 2 = 2$; with a
# made-up λ of 2 per walker, the difference $d_{walk} - 2\lambda/d_s$ is 0.

# %%
walks = gaussian_walks(200, 4000, 2, seed=3)
steps_ = np.array(log_steps(4000, 40)[1:])
R_walk = np.linalg.norm(walks[:, steps_], axis=-1)
curves = return_curves(walks, [1.0], tau=np.unique(np.geomspace(1, 1000, 30).round().astype(int)))
th = theorem31(steps_, R_walk, curves, 1.0, lam=np.full(200, 2.0), t_min=100, n_boot=100).set_index('quantity')
assert abs(th.value['d_walk = 1 / late slope of R'] - 2) < 0.15, th
assert abs(th.value['d_s from returns'] - 2) < 0.15, th
assert th.ci_low['d_walk − 2 λ̄ / d_s'] < 0 < th.ci_high['d_walk − 2 λ̄ / d_s'], th
assert abs(th.value['d_walk · d_s / 2 (the λ Theorem 3.1 needs)'] - 2) < 0.3, th
th[['value', 'ci_low', 'ci_high']]

# %% [markdown]
# ## The run
#
# Read from the committed tables (`tools/noise_regime.py` wrote them; the page never trains). Its date, machine and
# CPU seconds, single-threaded on a shared 2-core machine. The seconds of convergence and of the first LLC are
# those of a first run, killed for memory during GD's continuation (above) after it had saved the converged
# weights; the run that wrote the tables started from them.

# %%
folder = committed_dir('noise_regime')
meta = json.loads((folder / 'meta.json').read_text())
cfg = NoiseRegimeConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in meta['config'].items()})
assert cfg == NOISE_REGIME, 'the committed run is the configuration above'
conv, nets_t = read_table(folder / 'convergence.csv'), read_table(folder / 'nets.csv')
curves_t, inc, ret = (read_table(folder / f) for f in ('curves.csv', 'increments.csv', 'returns.csv'))
print(meta['date'], meta['machine']['platform'], f"{meta['machine']['cpu_count']} CPUs;",
      f"{sum(meta['cpu_seconds'].values()):.0f} CPU s in all:", meta['cpu_seconds'])
conv.tail(3)

# %%
last = conv.iloc[-1]
assert last.converged and not conv.converged.iloc[:-1].any() and last.step == 30_000, conv
assert last.rel_change_max < cfg.tol and 0.07 < last.loss_mean < 0.08
assert np.allclose(nets_t.loss_converged.mean(), last.loss_mean)
assert 0.004 < 1 - last.loss_mean / conv.loss_mean.iloc[-2] < 0.006


# %% [markdown]
# **Convergence.** The criterion held first after 30,000 steps (7,500 epochs, 37.5 times the paper's 200): over the
# last 2,000-step block no net's full-batch loss moved by more than 0.95% of itself, at a mean loss of 0.0747. The
# mean loss is still falling slowly (by 0.5% over that block): a ReLU net on 512 points can keep sharpening its
# boundary, so "converged" here means "flat to 1% per block", not "at a minimum".

# %%
def matrix(opt: str, col: str) -> np.ndarray:
    m = curves_t[curves_t.optimizer == opt].pivot(index='member', columns='step', values=col)
    return m.loc[:, m.columns > 0].to_numpy()
t = np.sort(curves_t.step.unique())[1:].astype(float)
R_sgd, R_gd, twin = matrix('sgd', 'R'), matrix('gd', 'R'), matrix('sgd', 'twin_sq')
late_window = cfg.n_steps / 10                                  # the last decade, fixed before the run was seen
slopes = paired_late_slopes(t, R_sgd, R_gd, t_min=late_window, names=('SGD', 'GD')).set_index('quantity')
gap = paired_difference(t, R_sgd, R_gd)
twin_late = growth_exponent(t, twin, t_min=late_window)
twin_early = growth_exponent(t, twin, t_min=1, t_max=100)
end = lambda A: A[:, -1].mean()
print(f"R(T): SGD {end(R_sgd):.3f}, GD {end(R_gd):.3f}; twin distance Δ(T) = {np.sqrt(end(twin)):.3f}")
print(f"Δ² growth exponent, t ≤ 100: {twin_early['value']:.2f} [{twin_early['ci_low']:.2f}, {twin_early['ci_high']:.2f}]; "
      f"last decade: {twin_late['value']:.3f} [{twin_late['ci_low']:.3f}, {twin_late['ci_high']:.3f}]")
slopes[['value', 'ci_low', 'ci_high', 't_min', 't_max', 'decades', 'pairs']]

# %%
v, lo, hi = slopes.value, slopes.ci_low, slopes.ci_high
assert hi['SGD minus GD'] < -0.3 and lo['GD'] > 0.9 and 0.5 < lo['SGD'] < hi['SGD'] < 0.65, slopes
assert (gap.ci_low > 0).all(), gap                              # SGD is further from the start at every step
assert gap.ci_low.iloc[-1] > 0.1 and end(R_sgd) > end(R_gd)
assert twin_late['ci_low'] > 1.15 and twin_late['ci_high'] < 1.3 and twin_early['ci_high'] < 1
assert np.sqrt(end(twin)) > end(R_sgd)                          # the twins end further apart than SGD went

# %% [markdown]
# **SGD and GD differ here, from the first step to the last.** At every recorded step SGD is further from the
# converged weights than its GD twin, with a bootstrap interval over the 24 pairs that excludes 0 (at $T$ = 20,000:
# $R$ = 4.15 against 3.79, gap 0.36 [0.19, 0.51]). Over the last decade GD's $R(t)$ grows as $t^{0.95}$: the
# slow fall of the loss is a steady, nearly ballistic drift. SGD's grows as $t^{0.58}$ [0.56, 0.59]; the paired
# difference is −0.37 [−0.39, −0.35]. So this regime has what the paper's setting lacks: a late $R(t)$ that
# minibatch noise changes.
#
# **The noise part is not GD plus a small jitter.** The twins separate: $\Delta(t) = \lVert w^{SGD}_t -
# w^{GD}_t\rVert$ ends at 4.7, larger than either's own distance from the start, so the two end in different
# places, about as far from each other as from where they began. Early (t ≤ 100) $\Delta^2$ grows as
# $t^{0.44}$ [0.33, 0.62], below the free walk's 1 (a fluctuation filling a well); over the last decade as $t^{1.23}$
# [1.20, 1.26], faster than a free walk.

# %%
fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4))
for R, label, c in ((R_sgd, f'SGD, lr {cfg.lr}, batch {cfg.batch_size}', 'C0'),
                    (R_gd, f'full-batch GD, lr {cfg.lr}', 'C3'), (np.sqrt(twin), 'twin distance Δ(t)', 'k')):
    ax.fill_between(t, np.quantile(R, .1, 0), np.quantile(R, .9, 0), color=c, alpha=.15)
    ax.loglog(t, R.mean(0), color=c, lw=2, ls='--' if c == 'k' else '-', label=label)
ax.axvline(late_window, color='gray', ls=':', label='last decade')
ax.set(xlabel='t (steps from the converged weights)', ylabel='R(t), Δ(t): mean, 10–90% of nets',
       title='from the same converged weights')
ax.legend(fontsize=8)
inc_sgd, inc_gd = (inc[inc.optimizer == o] for o in ('sgd', 'gd'))
msd_t = {o: aged_msd(i).query('lag == 10') for o, i in (('sgd', inc_sgd), ('gd', inc_gd))}
for o, c in (('sgd', 'C0'), ('gd', 'C3')):
    m = msd_t[o]
    bx.errorbar(m.age, m.msd, yerr=[m.msd - m.ci_low, m.ci_high - m.msd], color=c, marker='o', label=o.upper())
bx.set(xscale='log', yscale='log', xlabel='age s (steps)', ylabel='M(s, τ = 10)', title='increments at a lag of 10 steps')
bx.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Ageing (eq. 4)
#
# For the free time-fractional walk of eq. 4, $M(s,\tau) \propto s^{\alpha-1}\tau$ at $\tau \ll s$, with $\alpha =
# 2\times$ the slope of $R(t)$ ([ageing chapter](ageing.html)). The late ages $s \ge 1{,}000$ (1,000 to 8,000, 0.9
# decades, all inside or just before the last decade) at $\tau = 10$:

# %%
late_ages = [a for a in cfg.ages if a >= 1000]
ageing = paired_ageing(inc_sgd, inc_gd, 10, late_ages, names=('SGD', 'GD')).set_index('quantity')
excess = paired_excess(inc_sgd, inc_gd, late_ages, (1, 2, 5, 10), lag=10)
s_sgd = slopes.loc['SGD']
predicted = {k: 2 * s_sgd[k] - 1 for k in ('value', 'ci_low', 'ci_high')}
predicted_noise = {k: twin_late[k] - 1 for k in ('value', 'ci_low', 'ci_high')}   # α of the noise walk: Δ²'s exponent
ratio = pd.concat([aged_msd(i).assign(optimizer=o) for o, i in (('SGD', inc_sgd), ('GD', inc_gd))])
ratio = ratio[ratio.age.isin(late_ages) & ratio.lag.isin([10, 1000])]
rows = [('SGD, ageing exponent β at τ = 10', ageing.loc['SGD']), ('GD, ageing exponent β at τ = 10', ageing.loc['GD']),
        ('SGD minus GD (paired)', ageing.loc['SGD minus GD']),
        ('eq. 4 from SGD\'s late slope s: 2s − 1', pd.Series(predicted)),
        ('noise part M_SGD − M_GD: ageing exponent at τ = 10', pd.Series(excess['ageing'])),
        ('noise part: lag exponent, τ = 1–10 (1: free walk, 0: held)', pd.Series(excess['lags'])),
        ('eq. 4 for the noise walk, from Δ²\'s late exponent α: α − 1', pd.Series(predicted_noise))]
ageing_table = pd.DataFrame([dict(quantity=q, value=r['value'], ci_low=r['ci_low'], ci_high=r['ci_high'])
                             for q, r in rows]).set_index('quantity')
ageing_table

# %%
a = ageing_table
assert a.ci_high.iloc[0] < -0.1 and a.ci_low.iloc[1] < 0 < a.ci_high.iloc[1] and a.ci_high.iloc[2] < 0
assert a.ci_low.iloc[3] > 0.1 and a.ci_high.iloc[0] < a.ci_low.iloc[3]          # eq. 4: the other sign
assert a.ci_high.iloc[4] < 0 < a.ci_low.iloc[6] and excess['failed_resamples'] == 0
assert 0.55 < a.ci_low.iloc[5] < a.ci_high.iloc[5] < 0.8
assert (excess['table'].ci_low > 0).all()                                           # the noise adds at every (s, τ)
sgd_r, gd_r = (ratio[ratio.optimizer == o].set_index(['age', 'lag']) for o in ('SGD', 'GD'))
assert (gd_r.ratio_ci_high < 0.5).all() and (sgd_r.xs(1000, level='lag').ratio_ci_high < 0.35).all()
assert (sgd_r.xs(10, level='lag').martingale_ratio > 1).all()


# %% [markdown]
# **SGD's increments age; GD's do not; neither as eq. 4 says.** At $\tau = 10$, SGD's increment MSD falls with the
# age as $s^{-0.25}$ [−0.33, −0.15]; GD's, a steady drift, stays flat (−0.04 [−0.09, 0.01]); the paired
# difference is −0.20 [−0.30, −0.09]. The part the noise adds, $M_{SGD} - M_{GD}$, is positive at every age and lag
# and, GD's increments being about 2,000–3,000 times smaller at these ages (figure), ages the same way (−0.25 [−0.33, −0.15]). Eq. 4 asks for $\beta = \alpha - 1$; from SGD's late slope that is
# $2s - 1 = +0.15$ [0.12, 0.18], and from the noise walk's own exponent $+0.23$ [0.20, 0.26]: the late growth
# is faster than diffusion ($\alpha > 1$), outside eq. 4's range $0 < \alpha < 1$, and the measured ageing has the
# other sign. So the premise and the prediction of eq. 4 both fail here, as measured.
#
# What the ageing is instead, from the martingale ratio: at $\tau = 10$ SGD's ratio is above 1 at every late age
# (its short increments are pulled back: a fluctuation in a well), at $\tau = 1{,}000$ well below 1 (the long ones
# keep their direction: drift), and GD's is below 0.5 at these ages and lags. The noise's lag exponent at $\tau$ = 1–10 is
# 0.69 [0.63, 0.73], between a held fluctuation (0) and a free walk (1). A noise that shrinks as the loss and its
# gradient noise fall along the run would age this way without any memory; this page does not separate the two.

# %% [markdown]
# ## Returns and Theorem 3.1
#
# The low-dimensional observable is the path's projection on the first $k$ of the 32 random directions, for SGD and
# for the noise walk $P(w^{SGD}_t - w^{GD}_t)$ (the same directions for both twins, so the drift they share
# cancels). ε is measured in units of the path's own root-mean-square one-step move. One caution about what a
# projection can show: a free walk projected on $k$ directions is a free walk in $k$ dimensions, so its return
# exponent is $k$ whatever the weights do, and a smooth path without noise can come back near itself in a
# projection too. A $d_s$ read in $k = 2$ describes the observable, not the landscape's spectral dimension. It is
# what can be measured: in $k = 32$ no path comes back within ε at any lag where the power law may be read.

# %%
def returns_of(path: str, dims: int) -> pd.DataFrame:
    g = ret[(ret.path == path) & (ret.dims == dims)].drop(columns=['path', 'dims']).rename(columns={'member': 'unit'})
    return returns_summary(g).assign(path=path, dims=dims)
ret_summary = pd.concat([returns_of(p, k) for p in ('sgd', 'noise', 'gd') for k in (2, 32)], ignore_index=True)
def halves(path: str) -> pd.DataFrame:
    "The 2-D return fit at the three smallest ε: d_s on the whole window and on each half of it, r²."
    g = ret[(ret.path == path) & (ret.dims == 2)].drop(columns=['path', 'dims', 'eps_factor'])
    cv = curves_from_table(g.rename(columns={'member': 'unit'}))
    fits = [spectral_dimension_from_returns(cv, e, n_boot=2) for e in cv.eps[:3]]
    return pd.DataFrame([dict(path=path, eps_factor=f, d_s=x.d_s, first_half=x.d_s_first_half,
                              second_half=x.d_s_second_half, r2=x.r2, tau_min=x.tau_min, tau_max=x.tau_max)
                         for f, x in zip((0.25, 0.5, 1.0), fits)])
shape = pd.concat([halves(p) for p in ('sgd', 'noise', 'gd')], ignore_index=True)
display(ret_summary[['path', 'dims', 'eps_factor', 'd_s', 'ci_low', 'ci_high', 'returns_far', 'pairs_far',
                     'gaussian_equivalent_d', 'reason']].round(3))
shape.round(2)

# %%
rs = ret_summary.set_index(['path', 'dims', 'eps_factor']).sort_index()
for p in ('sgd', 'noise'):
    assert rs.loc[(p, 32), 'd_s'].isna().all() and rs.loc[(p, 32), 'gaussian_equivalent_d'].min() > 5
    small = rs.loc[(p, 2)].loc[[0.25, 0.5]]
    assert small.d_s.between(1.2, 1.6).all() and (small.ci_high < 2.1).all(), small
    assert rs.loc[(p, 2, 1.0), 'd_s'] > rs.loc[(p, 2, 0.25), 'ci_high'] + 0.5        # not one power law in ε
assert rs.loc[('gd', 2), 'd_s'].between(2.3, 3.6).all() and rs.loc[('gd', 32), 'd_s'].isna().all()
sh = shape.set_index(['path', 'eps_factor'])
for p in ('sgd', 'noise'):
    assert sh.second_half[p, 0.5] - sh.first_half[p, 0.5] > 1.5 and sh.r2[p, 0.5] < 0.9    # no single power law
    assert sh.r2[p, 0.25] < 0.95 and sh.d_s[p, 0.25] < min(sh.first_half[p, 0.25], sh.second_half[p, 0.25]) - 0.3

# %% [markdown]
# In two dimensions both paths return, but not as a power law. The figure below shows three regimes at ε = ¼ step:
# a fast fall over the first ten steps, a plateau from about 10 to 300 steps (the projected position is held, as a
# fluctuation in a well is), and a fall that steepens as the drift carries the path away. A line fitted through all
# of it gives "$d_s$" = 1.3 (SGD) and 1.4 (noise walk) at ε = ¼ step, with r² of 0.91; at ε = ½ step its two
# halves give 0.5 and 2.5 (SGD), 0.5 and 3.1 (noise walk); at ε of one step the window starts at lags of 600–900
# and the slope is 2.9 and 4.4. So no return exponent exists here in the sense of Theorem 3.1: each number is the
# mean slope of a bent curve over a window the data choose. In 32 dimensions there is no $d_s$ to read: no returns where the fit is allowed,
# and a Gaussian walk with the same MSD would have needed at least 5.6 dimensions not to return. GD's path, which
# has no noise, has a 2-D return exponent as well (2.4–3.5 across ε): returns in a projection do not by themselves
# show a walk.
#
# **Theorem 3.1 on these numbers.** $d_{walk}$ from the late slope of $R(t)$ (for the noise walk, of $\Delta(t)$),
# "$d_s$" the fitted slope of the 2-D returns at ε = ¼ step (with the warning above), and λ̄ the mean LLC at the
# converged weights (the paper's table-3 setting), all resampled together over the 24 nets:

# %%
lam = nets_t.llc_converged.to_numpy()
def check(path: str, R) -> pd.DataFrame:
    g = ret[(ret.path == path) & (ret.dims == 2)].drop(columns=['path', 'dims', 'eps_factor'])
    cv = curves_from_table(g.rename(columns={'member': 'unit'}))
    return theorem31(t, R, cv, float(cv.eps[0]), lam=lam, t_min=late_window).assign(path=path)
thm = pd.concat([check('sgd', R_sgd), check('noise', np.sqrt(twin))], ignore_index=True)
thm[['path', 'quantity', 'value', 'ci_low', 'ci_high', 'tau_min', 'tau_max', 't_min', 't_max']].round(3)

# %%
T31 = thm.set_index(['path', 'quantity'])
for p in ('sgd', 'noise'):
    x = T31.loc[p]
    assert x.ci_high['d_walk = 1 / late slope of R'] < 2                      # faster than diffusion: no sub-diffusion
    assert x.ci_low['d_walk − 2 λ̄ / d_s'] > 0, x                              # the theorem's equality fails
    assert x.value['λ̄ (LLC)'] < x.ci_low['d_walk · d_s / 2 (the λ Theorem 3.1 needs)'], x
assert np.isclose(T31.value['sgd', 'd_walk = 1 / late slope of R'], 1 / slopes.value['SGD'])
nets_t[['llc_converged', 'llc_sgd_end', 'llc_gd_end']].describe().loc[['mean', 'std', 'min', 'max']].round(3)

# %% [markdown]
# As measured, the premise of Theorem 3.1 does not hold here. $d_{walk}$ is 1.73 [1.70, 1.78] for SGD and 1.63
# [1.59, 1.66] for the noise walk, below 2: the late motion is faster than diffusion, where the theorem is about
# sub-diffusion ($d_{walk} > 2$); and the returns have no power law to give $d_s$. Taking the fitted slope anyway,
# with λ̄ = 0.81, $2\bar\lambda/d_s$ is 1.2 and $d_{walk} - 2\bar\lambda/d_s$ is 0.51 [0.28, 0.75] (SGD) and 0.46
# [0.27, 0.66] (noise walk), above 0; the λ the relation would need, $d_{walk}d_s/2 \approx 1.1$, is above the
# measured λ̄. That is a failure of the relation on numbers that do not mean what the theorem's do: the 2-D "$d_s$"
# is the observable's, not the landscape's, and no power law's; and λ̄ is one paper-preset estimate per net, whose chains the
# estimator flags as drifting and not stationary, and which moves along the run (mean 0.81 at the converged
# weights, 0.53 at the end of the SGD continuation with some estimates below 0, 1.43 at the end of GD's).

# %%
fig, ax = plt.subplots(figsize=(6, 4))
for p, c in (('sgd', 'C0'), ('noise', 'k')):
    g = ret[(ret.path == p) & (ret.dims == 2) & (ret.eps_factor == 0.25)].groupby('tau')[['hits', 'pairs']].sum()
    ax.loglog(g.index, g.hits / g.pairs, 'o-', color=c, ms=3,
              label=f"{'SGD' if p == 'sgd' else 'noise walk'}: d_s = {T31.loc[(p, 'd_s from returns'), 'value']:.2f}")
tau_ = np.array([3, 3000.])
ax.loglog(tau_, 0.5 * tau_ ** -1.0, 'C2--', label='free walk in 2-D: τ^(−1)')
ax.set(xlabel='lag τ (steps)', ylabel='P(‖P(w_{s+τ} − w_s)‖ < ε), ε = ¼ step', title='returns in a 2-D projection')
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# ## What was found
#
# * **A regime where SGD and GD differ** exists on the paper's moons nets: from weights converged by the paper's SGD
#   (flat to 1% per 2,000 steps), SGD at lr 0.05, batch 8, ends 0.36 [0.19, 0.51] further from the start than GD at
#   the same step after 20,000 steps, is further at every step, and its late slope is lower by 0.37 [0.35, 0.39].
#   The twins end 4.7 apart.
# * **Eq. 4** is not borne out: the late growth is faster than diffusion (slope 0.58, so $\alpha > 1$), and SGD's
#   increments and the noise part age as $s^{-0.25}$ where eq. 4 with the measured slopes asks for $s^{+0.15}$
#   (SGD) or $s^{+0.23}$ (noise walk). GD does not age.
# * **Returns** exist only in a 2-D projection, and there not as a power law (a fall, a plateau from about 10 to 300
#   steps, a steeper fall; fitted slopes from 0.5 to 4.4 by ε and window); in 32 dimensions none where a power law
#   may be read. GD's noiseless path also returns in 2-D.
# * **Theorem 3.1**: its premise fails ($d_{walk}$ = 1.73 < 2, no return power law). Forced through the fitted 2-D
#   slope and the paper-preset λ̄, $d_{walk} - 2\bar\lambda/d_s$ = 0.51 [0.28, 0.75], not 0.
#
# Not done here: a second learning rate or batch (so no scan of how the noise part grows with lr/B), more than 24
# nets, and an LLC beyond one paper-preset estimate per net.

# %% [markdown]
# ## In the ledger
#
# Four claims of the paper are asked again here, where the noise matters: fig. 1's late sub-diffusion (a late slope
# of at most ½), eq. 4's ageing of SGD and of the part the noise adds (the measured exponent within 0.1 of eq. 4's,
# as the moons study's rows read it), and Theorem 3.1's $d_{walk} = 2\bar\lambda/d_s$. The summary below is built
# from the tables above; its committed copy in the ledger's `compact/noise-regime/full/` must be the same, so the
# rows cannot drift from this page. The paper runs moons only at its own step and batch, so the scale is `assumed`
# and no row is decisive: what the rule says on the numbers is in each note.

# %%
NOISE_REGIME_SCALE = ('assumed: the paper runs moons only at lr 0.01, batch 128 (App. G.4), where SGD and GD agree; '
                      'its nets, converged, continued 20,000 steps at lr 0.05, batch 8, beside GD (24 nets)')
def ledger_summary() -> pd.DataFrame:
    "The compact summary of this page: the ledger's quantities, from the tables above."
    last, sl, ag, th = gap.iloc[-1], slopes, ageing_table, T31.loc['sgd']
    win = (f"t {sl.t_min['SGD']:.0f}..{sl.t_max['SGD']:.0f} steps, {sl.decades['SGD']:.2f} decades (the recorded steps "
           f"in the last decade of the continuation), {int(sl.pairs['SGD'])} nets")
    rows = [('late exponent, log-log slope of mean R(t), SGD', *sl.loc['SGD', ['value', 'ci_low', 'ci_high']], win),
            ('late exponent, log-log slope of mean R(t), GD', *sl.loc['GD', ['value', 'ci_low', 'ci_high']], win),
            ('late slope, SGD minus GD (paired)', *sl.loc['SGD minus GD', ['value', 'ci_low', 'ci_high']], win),
            ('R_SGD − R_GD at the end of the continuation', last.value, last.ci_low, last.ci_high,
             f"step {last.t:.0f}; paired over {int(last.pairs)} nets")]
    ages = f'ages {late_ages[0]}..{late_ages[-1]} steps, τ = 10'
    for q, name in ((ag.index[0], 'ageing exponent, SGD'), (ag.index[3], 'ageing exponent eq. 4 predicts, 2 s − 1'),
                    (ag.index[4], 'ageing exponent, noise part M_SGD − M_GD'),
                    (ag.index[6], 'ageing exponent eq. 4 predicts for the noise walk, α − 1')):
        rows.append((name, *ag.loc[q, ['value', 'ci_low', 'ci_high']], f'{ages}; {q}'))
    ret_note = (f"2-D projection, ε = ¼ step, τ {th.tau_min.iloc[0]:g}..{th.tau_max.iloc[0]:g}: the returns are not a "
                "power law (fall, plateau, steeper fall), so d_s is a fitted slope; λ̄ the mean paper-preset LLC at the "
                "converged weights, chains flagged as drifting")
    for q in ('d_walk = 1 / late slope of R', 'd_s from returns', 'λ̄ (LLC)', 'd_walk − 2 λ̄ / d_s'):
        rows.append((f'Theorem 3.1, SGD: {q}', *th.loc[q, ['value', 'ci_low', 'ci_high']], ret_note))
    return pd.DataFrame(rows, columns=['quantity', 'value', 'ci_low', 'ci_high', 'note'])

from fracsgd.ledger.checks import chapter_result, same_summary
from fracsgd.ledger.claims import read_ledger, rebuild_ledger, stale_rows
from fracsgd.ledger.provenance import COMPACT
from fracsgd.experiment.protocol import NBETA_NAMES
summary = ledger_summary()
committed_summary = COMPACT / 'noise-regime' / 'full' / 'summary.csv'
assert committed_summary.exists() and same_summary(summary, read_table(committed_summary)), \
    'this page and its ledger rows differ: run the heavy cell below'
summary.round(3)

# %%
#| heavy
# Writes the compact result from the committed tables, then every ledger row.
chapter_result('noise-regime', 'full', summary, [folder / f for f in ('meta.json', 'curves.csv', 'increments.csv',
               'returns.csv', 'nets.csv')], NOISE_REGIME_SCALE, sum(meta['cpu_seconds'].values()),
               device=f"cpu ({meta['machine']['cpu_count']} CPUs shared, one thread)", when=meta['date'],
               llc_nbeta=NBETA_NAMES['paper'],                    # the paper preset, n_beta unset: n/ln n
               parameters={'': sum(p.numel() for p in make_mlp([2, *cfg.hidden, 2], seed=0).parameters())})
rebuild_ledger()

# %%
assert stale_rows() == [], stale_rows()
rows = read_ledger()
rows = rows[rows.source == 'compact/noise-regime/full'].set_index('claim_id')
assert set(rows.index) == {'fig1-late-noise-regime', 'eq4-ageing-noise-regime', 'eq4-noise-ageing-noise-regime',
                           'thm31-eq12-noise-regime', 'appD-llc-le-half-d'}      # the last: λ̄ against d/2 (d = 4,482)
assert (rows.rule.drop('appD-llc-le-half-d') == 'not reproduced').all() and (rows.verdict == 'not run at paper scale').all()
rows[['value', 'ci_low', 'ci_high', 'rule', 'verdict']].round(3)

# %% [markdown]
# All four fail on their numbers (the fifth row checks the LLC against the bound d/2 of App. D.3, far below it): the late slope is above ½; both ageing exponents have the other sign from eq. 4's,
# and lie 0.4 and 0.5 from it; and $d_{walk} - 2\bar\lambda/d_s$ is 0.5, not 0, on a premise that does not hold. The
# ledger files them as not run at paper scale, since the paper states no experiment in this regime.
