# %% [markdown]
# # Ageing
#
# > The increment MSD ⟨‖w_{s+τ} − w_s‖²⟩ at several ages s, recorded while training, and the ageing exponent: the signature of the time-fractional Fokker–Planck equation, checked on walks whose answer is known.

# %%
#| default_exp diffusion.ageing

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import math
from collections import defaultdict
from typing import Iterable

import numpy as np
import pandas as pd
import torch
from scipy.special import gamma as _gamma

# %%
import matplotlib.pyplot as plt
torch.set_num_threads(1)


# %% [markdown]
# The paper models late SGD by a *time*-fractional Fokker–Planck equation (eq. 4, with the Caputo derivative of
# eq. 3 and order $0<\alpha<1$). Its walkers have memory: the free equation is solved by a Brownian motion run on
# a random clock that stalls for heavy-tailed waiting times (a continuous-time random walk, Metzler, Barkai &
# Klafter 1999, cited by the paper for eq. 4). Such a walk **ages**: how far it moves in a lag $\tau$ depends on
# how long it has already run. For the free equation with $\langle x^2(t)\rangle = 2Kt^\alpha/\Gamma(1+\alpha)$
# per coordinate, the increments are uncorrelated with the past (the walk is a martingale), so
#
# $$M(s,\tau) = \langle \lVert x_{s+\tau}-x_s\rVert^2\rangle = \langle \lVert x_{s+\tau}\rVert^2\rangle -
# \langle \lVert x_s\rVert^2\rangle = \frac{2Kd}{\Gamma(1+\alpha)}\big[(s+\tau)^\alpha - s^\alpha\big]
# \;\approx\; \frac{2Kd\,\alpha}{\Gamma(1+\alpha)}\, s^{\alpha-1}\,\tau \quad (\tau \ll s)$$
#
# (Barkai 2003, PRL 90, 104101; Schulz, Barkai & Metzler 2014, PRX 4, 011028). At a fixed lag the increment MSD
# falls with the age as $s^{\alpha-1}$: the **ageing exponent** $\beta = \partial\log M/\partial\log s$ is
# $\alpha - 1 < 0$. Brownian motion ($\alpha = 1$) does not age: $M = 2D\tau d$ at every age.
#
# The displacement from initialisation $R(t)$, which the paper fits, cannot tell these apart: a walk that ages and
# a walk that does not can have the same $\langle R^2(t)\rangle$. The increment MSD at several ages can, and so it
# is the measurement issue 25 asks for. One caution, which the checks below make concrete: relaxation ages too. A
# walker sliding into a well from a point away from its minimum moves less as it gets there, with no fractional
# dynamics at all. So an ageing exponent below 0 is necessary for eq. 4, not sufficient; the study pages put
# full-batch gradient descent (relaxation without minibatch noise) beside SGD for that reason.
#
# A second, parameter-free check comes with the martingale identity above: the **martingale ratio**
# $M(s,\tau)\,/\,\big(\langle\lVert x_{s+\tau}-x_0\rVert^2\rangle - \langle\lVert x_s-x_0\rVert^2\rangle\big)$
# is 1 for any walk whose increments are uncorrelated with its displacement so far (Brownian motion, the
# fractional walk of eq. 4), below 1 for a walk that keeps going the way it went (drift), above 1 for one that is
# pulled back.

# %% [markdown]
# ## Ages, starts and lags
#
# An age $s$ is measured on a window of start times: `per_age` starts spread evenly over $[s, s(1+w))$, whose
# increments are averaged (a time average over a window that grows with the age; $w \to 0$ gives the ensemble
# average at age $s$ alone). The windows of ages a factor 2 apart do not overlap for $w < 1$.

# %%
#| export
def age_starts(ages: Iterable[int], per_age: int = 5, window: float = 0.2) -> dict[int, list[int]]:
    "For each age s, up to `per_age` distinct integer start times spread evenly over [s, s (1 + window))."
    out = {}
    for s in sorted({int(a) for a in ages}):
        if s < 1:
            raise ValueError(f"ages must be positive integers, got {s}")
        out[s] = sorted({int(s + math.floor(j * window * s / per_age)) for j in range(per_age)})
    starts = [t for ts in out.values() for t in ts]
    if len(starts) != len(set(starts)):
        raise ValueError(f"the windows of ages {sorted(out)} overlap: use ages further apart or a smaller window")
    return out


# %%
assert age_starts([100, 10], per_age=5, window=0.2) == {10: [10, 11], 100: [100, 104, 108, 112, 116]}
assert age_starts([50], per_age=4, window=0.2) == {50: [50, 52, 55, 57]}


# %% [markdown]
# ## A running record for any training loop
#
# Storing the weights at every step is out of the question for a real net (4,482 numbers × 4,000 steps × 500
# nets for the moons study; 10⁵ weights per MNIST net). `IncrementRecorder` keeps only what it needs: a copy of
# the weights at each start time, for as long as one of its lags is still due, and $w_0$. It is fed the weights
# of an ensemble, a tensor `[members, params]` (the flat weights of the [ensemble trainer](ensemble.html), so it
# applies unchanged to the moons and the MNIST ensembles), or one net's flat weights `[params]`, after every step,
# and at each due step it records, per member, $\lVert w_{t+\tau} - w_t\rVert^2$ with
# $\lVert w_t - w_0\rVert^2$ and $\lVert w_{t+\tau} - w_0\rVert^2$ (for the martingale ratio). Its table has one
# row per member, start and lag: a few tens of thousands of numbers for a whole ensemble.

# %%
#| export
class IncrementRecorder:
    "Record ‖w_{t+τ} − w_t‖² for start times t at the given ages and lags τ; feed it weights after each step."
    def __init__(self, ages, lags, n_steps: int | None = None, per_age: int = 5, window: float = 0.2):
        self.starts = age_starts(ages, per_age, window)
        self.age_of = {t: s for s, ts in self.starts.items() for t in ts}
        self.lags = sorted({int(l) for l in lags})
        if not self.lags or self.lags[0] < 1:
            raise ValueError(f"lags must be positive integers, got {list(lags)}")
        self.due = defaultdict(list)                       # step -> starts t with t + τ = step
        self.last = {}                                     # start -> the last step it is needed at
        for t in self.age_of:
            for lag in self.lags:
                if n_steps is None or t + lag <= n_steps:
                    self.due[t + lag].append(t)
                    self.last[t] = t + lag
        self.w0, self.snap, self.sq0, self.rows = None, {}, {}, []

    @torch.no_grad()
    def update(self, step: int, w: torch.Tensor) -> None:
        "Weights `w` [members, params] (or [params]) after step `step`; call it with step 0 first, then every step."
        w = w.detach()
        w = w[None] if w.dim() == 1 else w
        if step == 0:
            self.w0 = w.clone()
        if self.w0 is None:
            raise ValueError("feed the initial weights first: update(0, w0)")
        if step in self.due or step in self.age_of:
            to0 = (w - self.w0).double().pow_(2).sum(1).cpu()                   # [members]
        for t in self.due.get(step, ()):
            sq = (w - self.snap[t]).double().pow_(2).sum(1).cpu()               # [members]
            self.rows.append((self.age_of[t], t, step - t, sq, self.sq0[t], to0))
        if step in self.age_of and step in self.last:
            self.snap[step], self.sq0[step] = w.clone(), to0
        for t in [t for t in self.snap if self.last[t] <= step]:
            del self.snap[t]

    def table(self) -> pd.DataFrame:
        "One row per member, start and lag: member, age, start, lag, sq = ‖w_{t+τ} − w_t‖², sq_start, sq_end."
        if not self.rows:
            return pd.DataFrame(columns=['member', 'age', 'start', 'lag', 'sq', 'sq_start', 'sq_end'])
        M = len(self.rows[0][3])
        cols = list(zip(*self.rows))
        return pd.DataFrame({'member': np.tile(np.arange(M), len(self.rows)),
                             'age': np.repeat(cols[0], M), 'start': np.repeat(cols[1], M),
                             'lag': np.repeat(cols[2], M), 'sq': torch.cat(cols[3]).numpy(),
                             'sq_start': torch.cat(cols[4]).numpy(), 'sq_end': torch.cat(cols[5]).numpy()})

def record_paths(paths, recorder: IncrementRecorder) -> pd.DataFrame:
    "Feed walks `paths` [members, steps + 1, dims] (step 0 first) to `recorder`; its table."
    P = torch.as_tensor(np.asarray(paths, dtype=np.float64))
    for step in range(P.shape[1]):
        recorder.update(step, P[:, step].reshape(len(P), -1))
    return recorder.table()


# %% [markdown]
# On a walk written by hand, two members in one dimension, the recorder must give the squared increments
# exactly, and it must not keep a snapshot after its last lag:

# %%
x = np.array([[0, 1, 3, 6, 10, 15], [0, -1, -1, 2, 2, 2]], float)[..., None]       # [members, steps, 1]
rec = IncrementRecorder(ages=[1], lags=[1, 3], n_steps=5, per_age=2, window=2.0)     # starts 1 and 2
tab = record_paths(x, rec).set_index(['member', 'start', 'lag'])
assert rec.starts == {1: [1, 2]} and not rec.snap
assert tab.sq[(0, 1, 3)] == (10 - 1) ** 2 and tab.sq[(1, 2, 1)] == (2 + 1) ** 2 and tab.sq[(0, 2, 3)] == (15 - 3) ** 2
assert tab.sq_start[(0, 2, 1)] == 9 and tab.sq_end[(1, 1, 3)] == 4
tab.reset_index()


# %% [markdown]
# ## From the record to M(s, τ), the ageing exponent and the martingale ratio
#
# `aged_msd` averages each member's squared increments over the starts of an age, then over members, with a
# percentile bootstrap interval over members (members are independent; the starts of one member are not). The
# martingale ratio divides by the growth of the mean squared displacement between the two ends.
# `ageing_exponent` fits $\log M(s,\tau)$ against $\log s$ at one lag, over the ages given, and resamples members
# for its interval.

# %%
#| export
def _per_member(table: pd.DataFrame, column: str = 'sq') -> pd.DataFrame:
    "Mean of `column` over the starts of each age: [members] × (age, lag)."
    return table.groupby(['member', 'age', 'lag'])[column].mean().unstack(['age', 'lag'])

def _quantiles(boots, level: float) -> tuple[np.ndarray, np.ndarray]:
    a = (1 - level) / 2
    return np.nanquantile(boots, a, axis=0), np.nanquantile(boots, 1 - a, axis=0)

def aged_msd(table: pd.DataFrame, n_boot: int = 200, seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """M(s, τ): the increment MSD at each age and lag, averaged over the age's starts and over members, with a
    bootstrap interval over members, and the martingale ratio M / (⟨‖w_{s+τ}−w_0‖²⟩ − ⟨‖w_s−w_0‖²⟩)."""
    sq, end, start = (_per_member(table, c) for c in ('sq', 'sq_end', 'sq_start'))
    A, E, S = sq.to_numpy(), end.to_numpy(), start.to_numpy()            # [members, (age, lag)]
    ratio = lambda a, e, s: a / np.where(e - s > 0, e - s, np.nan)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(A), (n_boot, len(A)))
    lo, hi = _quantiles(A[idx].mean(1), level)
    with np.errstate(invalid='ignore'):
        r_lo, r_hi = _quantiles(ratio(A[idx].mean(1), E[idx].mean(1), S[idx].mean(1)), level)
    out = pd.DataFrame({'msd': A.mean(0), 'ci_low': lo, 'ci_high': hi,
                        'martingale_ratio': ratio(A.mean(0), E.mean(0), S.mean(0)),
                        'ratio_ci_low': r_lo, 'ratio_ci_high': r_hi, 'members': len(A)}, index=sq.columns)
    return out.reset_index()

def ageing_exponent(table: pd.DataFrame, lag: int, ages=None, n_boot: int = 200, seed: int = 0,
                    level: float = 0.95) -> dict:
    """β = d log M(s, τ) / d log s at lag `lag` over `ages` (default: every age recorded with that lag): the
    least-squares slope over ages, with a bootstrap interval over members. 0: no ageing; α − 1 for eq. 4."""
    sq = _per_member(table[table.lag == lag])
    if sq.empty:
        raise ValueError(f"lag {lag} was not recorded; recorded lags: {sorted(table.lag.unique())}")
    sq.columns = sq.columns.get_level_values('age')
    if ages is not None:
        missing = sorted(set(ages) - set(sq.columns))
        if missing:
            raise ValueError(f"ages {missing} have no increments at lag {lag}; recorded: {sorted(sq.columns)}")
        sq = sq[sorted(ages)]
    if sq.shape[1] < 2:
        raise ValueError(f"an ageing exponent needs at least two ages at lag {lag}, got {list(sq.columns)}")
    ls, A = np.log(sq.columns.to_numpy(float)), sq.to_numpy()
    slope = lambda m: np.polyfit(ls, np.log(m), 1)[0]
    rng = np.random.default_rng(seed)
    boots = np.array([slope(A[rng.integers(0, len(A), len(A))].mean(0)) for _ in range(n_boot)])
    lo, hi = _quantiles(boots, level)
    return dict(value=float(slope(A.mean(0))), ci_low=float(lo), ci_high=float(hi), lag=int(lag),
                ages=[int(a) for a in sq.columns], members=len(A))


# %% [markdown]
# ## Walks whose answers are known
#
# Three reference walks, each with a closed form for $M(s,\tau)$ on the same discrete time grid as a training
# run (integer steps):
#
# * **Brownian motion** in $\mathbb R^d$, Gaussian steps of variance $2D$ per coordinate: $M = 2D\tau d$ at
#   every age, exactly; ratio 1; no ageing.
# * **A continuous-time random walk** with Pareto waiting times $\psi(t) = \alpha t^{-1-\alpha}$ ($t \ge 1$,
#   $0<\alpha<1$) and Gaussian jumps of variance $\sigma^2$ per coordinate, the walk behind eq. 4. Its increments
#   are uncorrelated, so $M(s,\tau) = \sigma^2 d\,[m(s+\tau) - m(s)]$ with $m$ the mean number of jumps, which
#   grows as $t^\alpha / (\Gamma(1-\alpha)\Gamma(1+\alpha))$ (Feller's renewal theorem for infinite mean):
#   ratio 1, ageing exponent $\alpha - 1$ for $\tau \ll s$.
# * **Brownian motion in a harmonic well** (Ornstein–Uhlenbeck) started at $x_0$ away from the minimum, in its
#   exact discretisation $x_{t+1} = a x_t + \sqrt{q}\,\xi_t$ with $a = e^{-k}$ and $q = (D/k)(1-a^2)$. With
#   $v_t = (D/k)(1 - a^{2t})$ the variance and $x_0 a^t$ the mean,
#   $M(s,\tau) = d\,[v_{s+\tau} + v_s(1 - 2a^\tau) + x_0^2(a^{s+\tau} - a^s)^2]$. It ages while it relaxes
#   ($s \lesssim 1/k$) and stops ageing once it has (relaxation, not memory), and its ratio is not 1.

# %%
#| export
def brownian_walks(n: int, steps: int, d: int = 1, D: float = 0.5, seed: int = 0) -> np.ndarray:
    "Brownian walks [n, steps + 1, d] from 0: Gaussian steps of variance 2D per coordinate."
    rng = np.random.default_rng(seed)
    steps_ = rng.normal(0, math.sqrt(2 * D), (n, steps, d))
    return np.concatenate([np.zeros((n, 1, d)), steps_.cumsum(1)], 1)

def ctrw_walks(n: int, steps: int, alpha: float, d: int = 1, sigma: float = 1.0, seed: int = 0) -> np.ndarray:
    """Continuous-time random walks [n, steps + 1, d] at integer times: Pareto(α) waiting times (t ≥ 1), the first
    counted from t = 0, and a Gaussian jump of variance σ² per coordinate at each renewal."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    rng = np.random.default_rng(seed)
    renewals = (rng.pareto(alpha, (n, steps)) + 1).cumsum(1)            # at most `steps` renewals by time `steps`
    counts = np.zeros((n, steps + 2), dtype=np.int64)
    rows = np.repeat(np.arange(n), steps)
    np.add.at(counts, (rows, np.minimum(np.floor(renewals), steps + 1).astype(np.int64).ravel()), 1)
    jumps_by = counts.cumsum(1)[:, :steps + 1]                           # [n, steps + 1] jumps made by time t
    S = np.concatenate([np.zeros((n, 1, d)), rng.normal(0, sigma, (n, steps, d)).cumsum(1)], 1)
    return np.take_along_axis(S, jumps_by[..., None].repeat(d, -1), 1)

def ou_walks(n: int, steps: int, k: float, D: float = 0.5, x0: float = 0.0, d: int = 1, seed: int = 0) -> np.ndarray:
    "Exactly discretised Ornstein–Uhlenbeck walks [n, steps + 1, d]: well stiffness k, diffusion D, start x0."
    rng = np.random.default_rng(seed)
    a, q = math.exp(-k), D / k * (1 - math.exp(-2 * k))
    x = np.empty((n, steps + 1, d))
    x[:, 0] = x0
    noise = rng.normal(0, math.sqrt(q), (n, steps, d))
    for t in range(steps):
        x[:, t + 1] = a * x[:, t] + noise[:, t]
    return x

def brownian_aged_msd(s, tau, d: int = 1, D: float = 0.5):
    "M(s, τ) of Brownian motion: 2Dτd at every age."
    return 2 * D * np.asarray(tau, float) * d + 0 * np.asarray(s, float)

def ctrw_aged_msd(s, tau, alpha: float, d: int = 1, sigma: float = 1.0):
    "M(s, τ) of the Pareto CTRW from the asymptotic renewal function: σ² d [(s+τ)^α − s^α] / (Γ(1−α)Γ(1+α))."
    s, tau = np.asarray(s, float), np.asarray(tau, float)
    return sigma ** 2 * d * ((s + tau) ** alpha - s ** alpha) / (_gamma(1 - alpha) * _gamma(1 + alpha))

def ou_aged_msd(s, tau, k: float, D: float = 0.5, x0: float = 0.0, d: int = 1):
    "M(s, τ) of the discretised Ornstein–Uhlenbeck walk from x0, exactly."
    s, tau, a = np.asarray(s, float), np.asarray(tau, float), math.exp(-k)
    v = lambda t: D / k * (1 - a ** (2 * t))
    return d * (v(s + tau) + v(s) * (1 - 2 * a ** tau) + x0 ** 2 * (a ** (s + tau) - a ** s) ** 2)

def expected_msd(closed_form, recorder: IncrementRecorder, **kw) -> pd.DataFrame:
    "A closed form M(s, τ) averaged over the recorder's starts of each age, as `aged_msd` averages the data."
    rows = [dict(age=s, lag=lag, expected=float(np.mean(closed_form(np.array(ts), lag, **kw))))
            for s, ts in recorder.starts.items() for lag in recorder.lags]
    return pd.DataFrame(rows)


# %% [markdown]
# **Brownian motion, d = 3.** 2,000 walks of 3,000 steps, ages 10 to 1,000: $M = 2D\tau d$ at every age and lag
# within the bootstrap interval (or 3% where the interval is narrower), the martingale ratio's interval holds 1
# almost everywhere, and the ageing exponent's interval holds 0.

# %%
AGES, LAGS = [10, 30, 100, 300, 1000], [1, 3, 10, 30, 100, 300, 1000]
def msd_of(paths, closed_form, n_steps, **kw):
    rec = IncrementRecorder(AGES, LAGS, n_steps=n_steps)
    tab = record_paths(paths, rec)
    return tab, aged_msd(tab, n_boot=200).merge(expected_msd(closed_form, rec, **kw), on=['age', 'lag'])

def holds(res, column='expected', lo='ci_low', hi='ci_high', rel=None):
    "Rows whose interval holds the expected value (or, with `rel`, whose value is within that fraction of it)."
    ok = (res[lo] <= res[column]) & (res[column] <= res[hi])
    return ok | (abs(res.msd / res[column] - 1) < rel) if rel else ok

bm_tab, bm = msd_of(brownian_walks(2000, 3000, d=3), brownian_aged_msd, 3000, d=3)
assert holds(bm, rel=0.03).mean() >= 0.9 and (abs(bm.msd / bm.expected - 1) < 0.08).all(), bm
assert holds(bm.assign(one=1.0), 'one', 'ratio_ci_low', 'ratio_ci_high').mean() >= 0.85, bm
bm_beta = ageing_exponent(bm_tab, lag=10)
assert bm_beta['ci_low'] < 0 < bm_beta['ci_high'] and abs(bm_beta['value']) < 0.02, bm_beta
bm_beta

# %% [markdown]
# **The fractional walk, α = 0.5.** 2,000 walks of 3,000 steps. At lags well below the age ($\tau \le s/10$,
# ages ≥ 100) $M$ follows the closed form (it is asymptotic in $s$) within its interval or 10% at most points
# and within 20% at all of them (at lag 1 only a few percent of the walkers jump); the martingale ratio's interval holds 1 almost everywhere; the ageing exponent at $\tau = 10$
# over ages 100–1,000 is $\alpha - 1 = -0.5$ within 0.05, and its interval holds the closed form's slope on the
# same grid (which the finite $\tau/s$ moves a little from $\alpha - 1$).

# %%
alpha = 0.5
ct_tab, ct = msd_of(ctrw_walks(2000, 3000, alpha), ctrw_aged_msd, 3000, alpha=alpha)
far = ct[(ct.lag <= ct.age / 10) & (ct.age >= 100)]
assert holds(far, rel=0.1).mean() >= 0.8 and (abs(far.msd / far.expected - 1) < 0.2).all(), far
assert holds(ct.assign(one=1.0), 'one', 'ratio_ci_low', 'ratio_ci_high').mean() >= 0.85, ct
ct_beta = ageing_exponent(ct_tab, lag=10, ages=[100, 300, 1000])
exact = expected_msd(ctrw_aged_msd, IncrementRecorder(AGES, LAGS, 3000), alpha=alpha).query('lag == 10 and age >= 100')
exact_beta = np.polyfit(np.log(exact.age), np.log(exact.expected), 1)[0]
assert abs(ct_beta['value'] - (alpha - 1)) < 0.05 and ct_beta['ci_high'] < -0.4, ct_beta
assert ct_beta['ci_low'] <= exact_beta <= ct_beta['ci_high'], (ct_beta, exact_beta)
ct_beta

# %% [markdown]
# **Relaxation in a harmonic well.** Stiffness $k = 0.01$ (relaxation time $1/k = 100$ steps), little noise
# ($D = 0.001$), started at $x_0 = 5$ in $d = 2$: $M$ is the exact expression at every age and lag; at $\tau = 10$
# it falls with the age while the walker slides in ($s \lesssim 1/k$: ageing exponent clearly negative over ages
# 10–100) and all but stops once it has arrived (ages 300–1,000: within 0.06 of 0, its interval holding the closed
# form's slope on the same grid). While it slides, its increments point the way it has already gone, so the
# martingale ratio is well below 1.

# %%
OU = dict(k=0.01, D=0.001, x0=5.0, d=2)
ou_tab, ou = msd_of(ou_walks(2000, 3000, **OU), ou_aged_msd, 3000, **OU)
assert holds(ou, rel=0.05).mean() >= 0.9 and (abs(ou.msd / ou.expected - 1) < 0.1).all(), ou
early, late = (ageing_exponent(ou_tab, lag=10, ages=a) for a in ([10, 30, 100], [300, 1000]))
closed = expected_msd(ou_aged_msd, IncrementRecorder(AGES, LAGS, 3000), **OU).query('lag == 10 and age >= 300')
late_exact = np.polyfit(np.log(closed.age), np.log(closed.expected), 1)[0]
assert early['ci_high'] < -0.3 and late['ci_low'] <= late_exact <= late['ci_high'] and abs(late['value']) < 0.06
assert (ou.query('age <= 30 and lag <= 30').ratio_ci_high < 0.6).all(), ou
pd.DataFrame({'Brownian': bm_beta, 'CTRW α = 0.5 (α − 1 = −0.5)': ct_beta, 'harmonic well, ages ≤ 1/k': early,
              'harmonic well, ages ≫ 1/k': late}).T[['value', 'ci_low', 'ci_high', 'lag', 'ages']]


# %%
def plot_aged(ax, res, title, expected=True):
    for i, (s, g) in enumerate(res.groupby('age')):
        ax.loglog(g.lag, g.msd, 'o', ms=3, color=f'C{i}', label=f's = {s}')
        if expected:
            ax.loglog(g.lag, g.expected, '-', lw=1, color=f'C{i}')
    ax.set(title=title, xlabel='lag τ (steps)')

fig, axes = plt.subplots(1, 3, figsize=(12, 3.4), sharey=False)
plot_aged(axes[0], bm, 'Brownian motion: no ageing')
plot_aged(axes[1], ct, 'CTRW α = ½: ageing, M ∝ s^(α−1) τ')
plot_aged(axes[2], ou, 'harmonic well from x₀ = 5: relaxation, then none')
axes[0].set_ylabel('M(s, τ) = ⟨‖x_{s+τ} − x_s‖²⟩')
axes[0].legend(fontsize=7, title='age')
fig.suptitle('points: recorded; lines: closed forms', fontsize=9)
fig.tight_layout()
plt.show()


# %% [markdown]
# **Where it fails.** The ageing exponent is a slope across ages at one lag, so it needs lags well below the
# youngest age ($\tau \ll s$): at $\tau \sim s$ even the fractional walk's $M$ is close to $\tau^\alpha$ whatever
# $s$, and the exponent shrinks towards 0. It also needs many independent members: at one lag the increments of
# one walk are strongly correlated across the starts of an age, and with few members the interval is wide. And it
# does not tell memory from relaxation: both age (the well above), which is why every study reading compares SGD
# with full-batch gradient descent from the same initialisations.

# %% [markdown]
# ## While an ensemble trains
#
# `train_with_increments` is `train_ensemble` of the [ensemble chapter](ensemble.html) with the recorder attached (a `PerChunk` observer):
# the same chunks of members, the same minibatch streams, the same trajectory table (`train_ensemble`'s, to the
# last digit), and beside it the increments table, whose `member` is the member's index in the whole ensemble.
# The moons diffusion study calls it; the MNIST studies build the same `EnsembleTrainer` and can call it the same
# way. A control without minibatch noise is the same call with `batch_size` at least the number of data points:
# every step then sees all the data in one fixed order, which is full-batch gradient descent.
#
# The check has a closed form nobody chose: a linear least-squares model $f(x) = w^\top x$, trained by full-batch
# gradient descent on the loss $\frac1{2n}\lVert Xw - y\rVert^2$, follows
# $w_t - w^* = (I - \eta H)^t (w_0 - w^*)$ with $H = X^\top X/n$ and $w^*$ the least-squares solution, so every
# recorded increment is $\lVert[(I-\eta H)^{t+\tau} - (I-\eta H)^t](w_0 - w^*)\rVert^2$.

# %%
#| export
def train_with_increments(models, data, loss='classification', settings=None, *, ages, lags, per_age: int = 5,
                          window: float = 0.2, device=None, **changes) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train `models` as `train_ensemble` does (same chunks, streams and table), recording their increments at
    `ages` and `lags`: (trajectory table, increments table with `member` = index in the ensemble)."""
    from fracsgd.train.ensemble import EnsembleSettings, PerChunk, train_ensemble
    s = (settings or EnsembleSettings()).replace(**changes)
    increments = PerChunk(lambda: IncrementRecorder(ages, lags, s.n_steps, per_age, window))
    table = train_ensemble(models, data, loss, s, device=device, observers=[increments])
    return table, increments.table()


# %%
from torch import nn
from fracsgd.train.ensemble import EnsembleSettings, train_ensemble
g = torch.Generator().manual_seed(0)
Xr = torch.randn(64, 3, generator=g, dtype=torch.float64)
yr = Xr @ torch.tensor([[1.0], [-2.0], [0.5]], dtype=torch.float64) + 0.3 * torch.randn(64, 1, generator=g, dtype=torch.float64)
half_sq = lambda out, target: ((out - target) ** 2).sum(-1) / 2            # per sample: L = ‖Xw − y‖² / 2n
lines = lambda: [nn.Linear(3, 1, bias=False).double() for _ in range(3)]
torch.manual_seed(1); nets = lines()
torch.manual_seed(1); twins = lines()
w0 = torch.stack([n.weight.detach().reshape(-1).clone() for n in nets])    # [members, 3]
gd = EnsembleSettings(lr=0.05, batch_size=64, n_steps=300, every=10)      # batch = all 64 points: gradient descent
traj, inc = train_with_increments(nets, (Xr, yr), half_sq, gd, ages=[5, 20, 80], lags=[1, 7, 50], per_age=3, window=0.5)
pd.testing.assert_frame_equal(traj, train_ensemble(twins, (Xr, yr), half_sq, gd))   # the same training, to the digit
H, w_star = Xr.T @ Xr / 64, torch.linalg.lstsq(Xr, yr).solution[:, 0]
A = torch.eye(3, dtype=torch.float64) - gd.lr * H
at = lambda t: (torch.linalg.matrix_power(A, t) @ (w0 - w_star).T).T       # w_t − w* [members, 3]
closed = np.array([float(((at(r.start + r.lag) - at(r.start))[r.member] ** 2).sum()) for r in inc.itertuples()])
assert sorted(inc.start.unique()) == [5, 6, 20, 23, 26, 80, 93, 106]                # 3 per age, 2 distinct at 5
assert np.allclose(inc.sq, closed, rtol=1e-9, atol=1e-15) and len(inc) == 8 * 3 * 3, len(inc)   # starts × lags × members
inc.head()


# %% [markdown]
# ## Two ensembles from the same initialisations
#
# The controls compare SGD with full-batch gradient descent started from the *same* initialisations, so the nets
# come in pairs, and the intervals below resample pairs: the difference between the two is estimated with the
# variation it shares. `paired_late_slopes` gives the log–log slope of each ensemble's mean $R(t)$ over one window
# (eq. 17 on $t_\text{min} \le t \le t_\text{max}$) and their difference; `paired_ageing` gives each ensemble's
# ageing exponent at one lag and their difference.

# %%
#| export
def _slope(t, y) -> float:
    return float(np.polyfit(np.log(t), np.log(y), 1)[0])

def _boot(f, n: int, n_boot: int, seed: int, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    "The value of f on all pairs and its percentile interval over resampled pairs; f(index) -> array."
    rng = np.random.default_rng(seed)
    boots = np.array([f(rng.integers(0, n, n)) for _ in range(n_boot)])
    lo, hi = _quantiles(boots, level)
    return f(np.arange(n)), lo, hi

def _rows(names, value, lo, hi, **extra) -> pd.DataFrame:
    return pd.DataFrame({'quantity': names, 'value': value, 'ci_low': lo, 'ci_high': hi, **extra})

def paired_late_slopes(t, R_a, R_b, t_min: float, t_max: float | None = None, names=('a', 'b'), n_boot: int = 200,
                       seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """Log-log slope of the mean R(t) of paired ensembles `R_a`, `R_b` [pairs, times] on t_min ≤ t ≤ t_max, and
    a − b, with percentile intervals over resampled pairs."""
    t, R_a, R_b = np.asarray(t, float), np.asarray(R_a, float), np.asarray(R_b, float)
    if R_a.shape != R_b.shape or R_a.shape[-1] != len(t):
        raise ValueError(f"R_a and R_b must both be [pairs, {len(t)} times], got {R_a.shape} and {R_b.shape}")
    w = (t >= t_min) & (t <= (t_max if t_max is not None else t.max())) & (t > 0)
    if w.sum() < 3:
        raise ValueError(f"the window [{t_min}, {t_max}] holds {w.sum()} recorded times; a slope needs 3")
    def f(i):
        a, b = _slope(t[w], R_a[i][:, w].mean(0)), _slope(t[w], R_b[i][:, w].mean(0))
        return np.array([a, b, a - b])
    value, lo, hi = _boot(f, len(R_a), n_boot, seed, level)
    return _rows([names[0], names[1], f'{names[0]} minus {names[1]}'], value, lo, hi,
                 t_min=t[w].min(), t_max=t[w].max(), decades=np.log10(t[w].max() / t[w].min()), pairs=len(R_a))

def paired_ageing(inc_a: pd.DataFrame, inc_b: pd.DataFrame, lag: int, ages, names=('a', 'b'), n_boot: int = 200,
                  seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """Ageing exponents at `lag` over `ages` of two increment tables whose members are paired by their `member`
    label, and a − b, with percentile intervals over resampled pairs."""
    ages = sorted(ages)
    def matrix(inc):
        m = _per_member(inc[(inc.lag == lag) & inc.age.isin(ages)])
        m.columns = m.columns.get_level_values('age')
        if list(m.columns) != ages:
            raise ValueError(f"lag {lag} is not recorded at every age {ages}: found {list(m.columns)}")
        return m
    A, B = matrix(inc_a), matrix(inc_b)
    if set(A.index) != set(B.index):
        raise ValueError(f"the two tables must hold the same members: {len(A)} and {len(B)}, "
                         f"{len(set(A.index) ^ set(B.index))} unmatched")
    A, B, ls = A.to_numpy(), B.loc[A.index].to_numpy(), np.log(ages)
    def f(i):
        a, b = np.polyfit(ls, np.log(A[i].mean(0)), 1)[0], np.polyfit(ls, np.log(B[i].mean(0)), 1)[0]
        return np.array([a, b, a - b])
    value, lo, hi = _boot(f, len(A), n_boot, seed, level)
    return _rows([names[0], names[1], f'{names[0]} minus {names[1]}'], value, lo, hi, lag=lag,
                 ages=' '.join(map(str, ages)), pairs=len(A))


# %% [markdown]
# Checks with answers by construction. Thirty pairs of exact power laws $c_i t^{0.45}$ and $c_i t^{0.30}$ (each
# pair with its own constant) give slopes 0.45 and 0.30 and a difference of 0.15, to rounding, with intervals of
# zero width. The increments of Brownian motion paired with those of the fractional walk (α = ½) give ageing
# exponents near 0 and −½, and a difference near ½.

# %%
tt = np.arange(1, 1001.)
c = np.linspace(1, 2, 30)[:, None]
sl = paired_late_slopes(tt, c * tt ** 0.45, c * tt ** 0.30, t_min=100, names=('sgd', 'gd'), n_boot=50)
assert np.allclose(sl.value, [0.45, 0.30, 0.15]) and np.allclose(sl.ci_low, sl.value) and np.allclose(sl.ci_high, sl.value)
pa = paired_ageing(bm_tab, ct_tab, lag=10, ages=[100, 300, 1000], names=('Brownian', 'CTRW'), n_boot=100)
assert abs(pa.value[0]) < 0.03 and abs(pa.value[1] + 0.5) < 0.05 and pa.ci_low[2] > 0.35, pa
pd.concat([sl, pa])


# %% [markdown]
# ## What the noise adds
#
# When SGD and gradient descent start from the same weights and share their drift, the difference of their
# increment MSDs, $M_\text{SGD}(s,\tau) - M_\text{GD}(s,\tau)$, is what the minibatch noise adds (exactly so when
# the noise is uncorrelated with the drift's increments). Its two exponents say what kind of motion that is:
#
# * its **ageing exponent** at a fixed lag: 0 for Brownian noise, $\alpha - 1 < 0$ for the walk of eq. 4;
# * its **lag exponent** $\partial\log(M_\text{SGD}-M_\text{GD})/\partial\log\tau$ at lags well below the age: 1 for
#   both of those (a free walk, aged or not, spreads linearly in $\tau \ll s$), 0 for a fluctuation held in a well
#   around the drift's path (an Ornstein–Uhlenbeck displacement saturates once $\tau \gg 1/k$).
#
# `paired_excess` estimates both with intervals over resampled pairs (a resample in which the excess is not
# positive at some point of the fit gives no exponent, and the count of such resamples is returned). Its checks: a
# common deterministic drift plus Brownian noise against the drift alone (ageing 0, lag exponent 1), plus the
# fractional walk (ageing $\alpha - 1$), plus an Ornstein–Uhlenbeck fluctuation in equilibrium (lag exponent near 0).

# %%
#| export
def paired_excess(inc_a: pd.DataFrame, inc_b: pd.DataFrame, ages, lags, lag: int, n_boot: int = 200, seed: int = 0,
                  level: float = 0.95) -> dict:
    """M_a − M_b of paired increment tables: a table per (age, lag) with intervals; its ageing exponent at `lag`
    over `ages` and its lag exponent over `lags` (M pooled over `ages`), with intervals over resampled pairs."""
    ages, lags = sorted(ages), sorted(lags)
    def cube(inc):
        m = _per_member(inc[inc.age.isin(ages) & inc.lag.isin(lags)])
        want = pd.MultiIndex.from_product([ages, lags], names=['age', 'lag'])
        missing = want.difference(m.columns)
        if len(missing):
            raise ValueError(f"(age, lag) {list(missing)[:3]} not recorded")
        return m[want]
    A, B = cube(inc_a), cube(inc_b)
    if set(A.index) != set(B.index):
        raise ValueError("the two tables must hold the same members")
    A, B = A.to_numpy().reshape(len(A), len(ages), len(lags)), B.loc[A.index].to_numpy().reshape(len(A), len(ages), len(lags))
    j = lags.index(lag)
    def f(i):
        ex = A[i].mean(0) - B[i].mean(0)                                   # [ages, lags]
        fit = lambda x, y: np.polyfit(np.log(x), np.log(y), 1)[0] if (y > 0).all() else np.nan
        return np.concatenate([ex.ravel(), [fit(ages, ex[:, j]), fit(lags, ex.mean(0))]])
    value, lo, hi = _boot(f, len(A), n_boot, seed, level)
    rng = np.random.default_rng(seed)
    failed = sum(np.isnan(f(rng.integers(0, len(A), len(A)))[-2:]).any() for _ in range(n_boot))
    k = len(ages) * len(lags)
    table = pd.DataFrame({'age': np.repeat(ages, len(lags)), 'lag': np.tile(lags, len(ages)), 'excess': value[:k],
                          'ci_low': lo[:k], 'ci_high': hi[:k]})
    pick = lambda n: dict(value=float(value[n]), ci_low=float(lo[n]), ci_high=float(hi[n]))
    return dict(table=table, ageing=pick(k) | dict(lag=lag, ages=ages), lags=pick(k + 1) | dict(lags=lags, ages=ages),
                failed_resamples=int(failed), pairs=len(A))


# %%
def drift_plus(noise, t_steps):
    "Each walk of `noise` [n, T+1, d] plus a common deterministic drift 3 t^0.43 along the first axis."
    drift = np.zeros_like(noise)
    drift[..., 0] = 3 * np.arange(t_steps + 1) ** 0.43
    return drift + noise, drift

def excess_of(noise, lags=(1, 2, 3, 5, 10), ages=(100, 300, 1000)):
    with_noise, drift = drift_plus(noise, noise.shape[1] - 1)
    rec = lambda: IncrementRecorder(AGES, LAGS + [2, 5], n_steps=noise.shape[1] - 1)
    return paired_excess(record_paths(with_noise, rec()), record_paths(drift, rec()), ages, lags, lag=1, n_boot=100)

bm_ex = excess_of(brownian_walks(1000, 2000, seed=5))
ct_ex = excess_of(ctrw_walks(1000, 2000, 0.5, seed=6))
ou_ex = excess_of(ou_walks(1000, 2000, k=0.5, D=0.5, seed=7))        # relaxed after a few steps: stationary at ages ≥ 100
assert bm_ex['ageing']['ci_low'] < 0 < bm_ex['ageing']['ci_high'] and abs(bm_ex['lags']['value'] - 1) < 0.05
assert abs(ct_ex['ageing']['value'] + 0.5) < 0.15 and abs(ct_ex['lags']['value'] - 1) < 0.15, ct_ex['ageing']
assert ou_ex['lags']['value'] < 0.5 and abs(ou_ex['ageing']['value']) < 0.05, ou_ex['lags']
pd.DataFrame({'drift + Brownian': [bm_ex['ageing']['value'], bm_ex['lags']['value']],
              'drift + CTRW α = ½': [ct_ex['ageing']['value'], ct_ex['lags']['value']],
              'drift + fluctuation in a well (k = ½)': [ou_ex['ageing']['value'], ou_ex['lags']['value']]},
             index=['ageing exponent of the excess, τ = 1', 'lag exponent of the excess, τ = 1–10'])


# %% [markdown]
# ## The controls of a study, in one table
#
# A study that trains the same initialisations twice, by SGD and by full-batch gradient descent, and records their
# increments, reads its controls with `sgd_gd_controls` (the moons and MNIST studies both do): on the window from
# `t_c` (the study says which step that is) the paired late slopes of $R(t)$, the early slopes before it, the ratio
# of the distances travelled, the ageing exponents at `ageing_lag` over the ages at or after `t_c` with their paired
# difference, and the noise part $M_\text{SGD} - M_\text{GD}$ with its ageing and lag exponents. It returns the
# summary rows (quantity, value, interval, note), the mean curves with a 10–90% band, $M(s,\tau)$ of both, and the
# noise table. The check: gradient descent as the drift $3t^{0.43}$ alone, SGD as the same drift plus Brownian
# noise. GD's late slope is 0.43 and its ageing exponent is that of the closed form $M(s,\tau) = 9((s+\tau)^{0.43} -
# s^{0.43})^2$ averaged over the recorder's starts, both with intervals of zero width (GD has no noise); the noise
# part is Brownian: lag exponent 1, ageing exponent 0.

# %%
#| export
def _band(R) -> dict:
    return dict(mean=R.mean(0), q10=np.quantile(R, .1, axis=0), q90=np.quantile(R, .9, axis=0))

def _summary_row(quantity, value, lo=np.nan, hi=np.nan, note=''):
    return dict(quantity=quantity, value=value, ci_low=lo, ci_high=hi, note=note)

def sgd_gd_controls(table: pd.DataFrame, increments: pd.DataFrame, t_c: float, late_slope, *, ages, ageing_lag: int,
                    noise_lags, n_boot: int = 200, seed: int = 0, start: str = 't_c') -> dict:
    """SGD against full-batch GD from the same initialisations (the `optimizer` column, 'sgd' or 'gd', of `table`
    [run, step, R] and `increments` [run, age, start, lag, sq, ...]): late slopes from `t_c`, R(T), ageing exponents
    at `ageing_lag` over the `ages` ≥ t_c, M(s, τ), the noise part at `noise_lags`; the summary rows. `late_slope`
    is SGD's late exponent (value, low, high), for eq. 4's prediction β = 2 s − 1; `start` names t_c in the notes."""
    from fracsgd.train.displacement import runs_matrix
    R = {}
    for opt in ('sgd', 'gd'):
        steps, M = runs_matrix(table[table.optimizer == opt].drop(columns='optimizer'), 'R')
        R[opt] = M[:, steps > 0]
    t = steps[steps > 0].astype(float)
    if R['sgd'].shape != R['gd'].shape:
        raise ValueError(f"SGD and GD must have the same nets and steps: {R['sgd'].shape} and {R['gd'].shape}")
    names = ('SGD', 'full-batch GD')
    late = paired_late_slopes(t, R['sgd'], R['gd'], t_min=t_c, names=names, n_boot=n_boot, seed=seed)
    early = paired_late_slopes(t, R['sgd'], R['gd'], t_min=t.min(), t_max=t_c, names=names, n_boot=n_boot, seed=seed)
    n, rng = len(R['sgd']), np.random.default_rng(seed)
    end = lambda i: R['gd'][i, -1].mean() / R['sgd'][i, -1].mean()
    ends = [end(rng.integers(0, n, n)) for _ in range(n_boot)]
    inc = {opt: increments[increments.optimizer == opt].rename(columns={'run': 'member'}) for opt in ('sgd', 'gd')}
    late_ages = [a for a in ages if a >= t_c]
    ageing = paired_ageing(inc['sgd'], inc['gd'], ageing_lag, late_ages, names, n_boot=n_boot, seed=seed)
    msd = pd.concat([aged_msd(inc[opt], n_boot=n_boot, seed=seed).assign(optimizer=opt) for opt in ('sgd', 'gd')])
    noise = paired_excess(inc['sgd'], inc['gd'], late_ages, noise_lags, lag=noise_lags[0], n_boot=n_boot, seed=seed)
    failed = f"; {noise['failed_resamples']} of {n_boot} resamples not positive everywhere: no exponent" if noise['failed_resamples'] else ''
    window = f"t from {late.t_min[0]:.0f} ({start}) to {late.t_max[0]:.0f}, {late.decades[0]:.2f} decades; {n} nets in pairs"
    at_ages = f"ages {' '.join(map(str, late_ages))} (≥ t_c), 5 starts each in [s, 1.2 s); {n} nets in pairs"
    s, s_lo, s_hi = late_slope
    rows = [('late exponent, SGD, t ≥ t_c (paired with GD)', late.iloc[0], window),
            ('late exponent, full-batch GD from the same initialisations, t ≥ t_c', late.iloc[1], window),
            ('late exponent, SGD minus full-batch GD, t ≥ t_c (paired)', late.iloc[2],
             window + '; above 0: minibatch noise steepens the late growth; 0: the late exponent is drift'),
            ('early exponent, full-batch GD, t < t_c', early.iloc[1], f't up to {start} = {t_c:.0f}'),
            (f'ageing exponent, SGD, τ = {ageing_lag}, ages ≥ t_c', ageing.iloc[0],
             at_ages + '; below 0: M(s, τ) falls with the age s'),
            (f'ageing exponent, full-batch GD, τ = {ageing_lag}, ages ≥ t_c', ageing.iloc[1], at_ages),
            (f'ageing exponent, SGD minus full-batch GD, τ = {ageing_lag}, ages ≥ t_c', ageing.iloc[2], at_ages),
            (f'noise part M_SGD − M_GD: ageing exponent, τ = {noise_lags[0]}, ages ≥ t_c', pd.Series(noise['ageing']),
             at_ages + f'; eq. 4: α − 1 < 0; Brownian noise: 0{failed}'),
            (f'noise part M_SGD − M_GD: lag exponent, τ = {noise_lags[0]}–{noise_lags[-1]}, ages ≥ t_c',
             pd.Series(noise['lags']), at_ages + f'; 1: a free walk (aged or not, τ ≪ s); 0: a fluctuation held around '
             f'the drift\'s path{failed}')]
    summary = pd.DataFrame([_summary_row(q, r.value, r.ci_low, r.ci_high, note) for q, r, note in rows] + [
        _summary_row('ageing exponent predicted by eq. 4 from the late SGD slope, 2 s − 1', 2 * s - 1, 2 * s_lo - 1,
                     2 * s_hi - 1, 'α = 2 s (free time-fractional walk, τ ≪ s); 0 for Brownian motion'),
        _summary_row('R(T) of full-batch GD over R(T) of SGD (mean over nets)', end(np.arange(n)),
                     *np.quantile(ends, [0.025, 0.975]), f'T = {t.max():.0f} steps; 1: GD travels as far as SGD')])
    curves = pd.DataFrame({'t': t, **{f'{o}_{k}': v for o in ('sgd', 'gd') for k, v in _band(R[o]).items()}})
    return dict(summary=summary, late=late, early=early, ageing=ageing, msd=msd, curves=curves, t_c=t_c,
                late_ages=late_ages, noise=noise)


# %%
T_ctl, AGES_ctl = 2000, (25, 50, 100, 200, 400, 800, 1600)
noise_w = brownian_walks(60, T_ctl, d=2, D=0.05, seed=8)
sgd_w, gd_w = drift_plus(noise_w, T_ctl)
def as_study(paths, opt):
    "A trajectory table and an increments table of walks [n, T+1, d], as a study stores them."
    R_w = np.linalg.norm(paths - paths[:, :1], axis=2)
    traj = pd.DataFrame({'run': np.repeat(np.arange(len(paths)), T_ctl + 1), 'step': np.tile(np.arange(T_ctl + 1), len(paths)),
                         'R': R_w.ravel(), 'optimizer': opt})
    rec = IncrementRecorder(AGES_ctl, [1, 2, 3, 5, 10, 100], n_steps=T_ctl)
    return traj, record_paths(paths, rec).rename(columns={'member': 'run'}).assign(optimizer=opt), rec
(t_s, i_s, _), (t_g, i_g, rec_g) = as_study(sgd_w, 'sgd'), as_study(gd_w, 'gd')
ctl = sgd_gd_controls(pd.concat([t_s, t_g]), pd.concat([i_s, i_g]), 200, (0.45, 0.44, 0.46), ages=AGES_ctl,
                      ageing_lag=10, noise_lags=(1, 2, 3, 5, 10), n_boot=100)
cv = ctl['summary'].set_index('quantity')
drift_M = lambda s_, tau: 9 * ((s_ + tau) ** 0.43 - s_ ** 0.43) ** 2
exact = expected_msd(drift_M, rec_g).query('lag == 10 and age >= 200')
beta_gd = np.polyfit(np.log(exact.age), np.log(exact.expected), 1)[0]
gd_row = cv.loc['ageing exponent, full-batch GD, τ = 10, ages ≥ t_c']
assert abs(cv.value['late exponent, full-batch GD from the same initialisations, t ≥ t_c'] - 0.43) < 1e-9
assert abs(gd_row.value - beta_gd) < 1e-6 and gd_row.ci_high - gd_row.ci_low < 1e-9, (gd_row, beta_gd)
noise_lag = cv.loc['noise part M_SGD − M_GD: lag exponent, τ = 1–10, ages ≥ t_c']
noise_age = cv.loc['noise part M_SGD − M_GD: ageing exponent, τ = 1, ages ≥ t_c']
assert noise_lag.ci_low < 1 < noise_lag.ci_high and noise_age.ci_low < 0 < noise_age.ci_high, (noise_lag, noise_age)
cv[['value', 'ci_low', 'ci_high']].round(4)


# %% [markdown]
# `plot_sgd_gd` draws the curves of `sgd_gd_controls`: the mean $R(t)$ of both ensembles with the band of their nets,
# and their local log–log slopes beside ½; both studies' pages use it.

# %%
#| export
def plot_sgd_gd(curves: pd.DataFrame, mark: float, mark_label: str, sgd_label: str = 'SGD',
                title: str = 'same initialisations, same lr and steps'):
    "Mean R(t) of SGD and of full-batch GD (the `curves` of `sgd_gd_controls`), and their local log-log slopes."
    import matplotlib.pyplot as plt
    from fracsgd.diffusion.crossover import local_slope
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 3.8))
    for opt, label, color in (('sgd', sgd_label, 'C0'), ('gd', 'full-batch GD (no minibatch noise)', 'C3')):
        ax.fill_between(curves.t, curves[f'{opt}_q10'], curves[f'{opt}_q90'], color=color, alpha=.2)
        ax.loglog(curves.t, curves[f'{opt}_mean'], color=color, lw=2, label=label)
        ls = local_slope(curves.t.to_numpy(), curves[f'{opt}_mean'].to_numpy())
        bx.semilogx(ls.t, ls.slope, '.-', color=color, label=label)
    for a in (ax, bx):
        a.axvline(mark, color='gray', ls=':', label=mark_label)
    bx.axhline(0.5, color='k', ls='--', lw=1, label='½: diffusion')
    ax.set(xlabel='t (steps)', ylabel='R(t) (mean, 10–90% of nets)', title=title)
    bx.set(xlabel='t (steps)', ylabel='local slope d log R / d log t')
    ax.legend(fontsize=8); bx.legend(fontsize=8)
    fig.tight_layout()
    return fig


# %%
#| hide
import nbdev
nbdev.nbdev_export()
