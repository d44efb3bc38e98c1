# %% [markdown]
# # Jumps
#
# > Sudden jumps in a trajectory table: where R(t), each layer's R, the LLC and the accuracy jump, whether they jump together, power laws between jumps, and whether the weights' steps are heavy-tailed.

# %%
#| default_exp diffusion.jumps

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import math

import numpy as np
import pandas as pd
from scipy import stats

from fracsgd.diffusion.spectral import fit_power_law

# %%
import torch
torch.set_num_threads(1)   # two cores shared with other work
import matplotlib.pyplot as plt

# %% [markdown]
# In the grokking regime the paper sees more than sub-diffusion: with small batches the weights, the LLC and the
# accuracy jump suddenly, all at the same time, and the jump runs through every layer at once (ICLR version,
# appendix F, fig. 5–6; arXiv 2503.22478, appendix D–E, fig. 6–7 and 13–14). Between jumps the displacement
# still looks like a power law. The paper reads the jumps as the mark of a space-fractional term (Lévy flights)
# that the time-fractional Fokker–Planck equation (eq. 3) lacks, and suggests that the rate of change of the LLC
# tracks the action of both fractional derivatives. It shows these as pictures only; no number is printed.
#
# This chapter turns the pictures into tests that read a trajectory table (as the [displacement
# recorder](displacement.html) writes it) and nothing else:
#
# 1. `detect_jumps` finds the jumps of one curve;
# 2. `coincidences` says whether jumps of different curves (R, each layer, the LLC, test accuracy) fall at the
#    same time;
# 3. `fits_between_jumps` fits a power law to R(t) on each stretch between jumps, with intervals;
# 4. `step_statistics` asks whether the steps of the weights are heavy-tailed, against a Gaussian of the same
#    variance;
# 5. `rate_correlation` puts the local diffusion exponent α(t) beside the rate of change of the LLC.
#
# ## A jump detector
#
# A jump is a change over a few records that is far larger than the changes around it. For each record $i$ the
# detector takes the change $d_i = y_{i+w} - y_i$ over `window` records $w$, and compares it with the changes
# in the surrounding `scale_window` records on each side: with their median $m_i$ and their scale
# $s_i = 1.4826\,\mathrm{MAD}_i + \rho\,|m_i|$, the record is a candidate when $|d_i - m_i| > \theta\, s_i$
# and $|d_i| \ge$ `min_size`. The MAD is the robust spread of noisy steps; the term $\rho|m_i|$ (`rel`, default
# ½) keeps a smooth, noiseless trend from counting as a jump, since on a smooth curve the MAD can be tiny while
# the changes still drift (a power law's early steps shrink fast). The first and last `scale_window` records
# are not judged, since their window would be one-sided (a power law's steep start would pass for a jump). Runs
# of neighbouring candidates form one jump;
# its time is where its largest single-record change happens, its size is the change of $y$ across the run.
# `min_size` is for curves that sit on a plateau (an accuracy of exactly 1.0 has MAD 0): there a change must also
# be large in absolute terms.

# %%
#| export
JUMP_COLUMNS = ('time', 'size', 'z', 't_start', 't_end')

def _check_series(t, y, name='y'):
    t, y = np.asarray(t, float), np.asarray(y, float)
    if t.ndim != 1 or y.shape != t.shape:
        raise ValueError(f"t and {name} must be 1-D and of the same length, got shapes {t.shape} and {y.shape}")
    if not np.all(np.isfinite(t)) or not np.all(np.isfinite(y)):
        raise ValueError(f"t and {name} must be finite: drop the NaN rows (records without a measurement) first")
    if len(t) > 1 and not np.all(np.diff(t) > 0):
        raise ValueError("t must be strictly increasing: sort the table by step and drop repeated steps")
    return t, y

def detect_jumps(t, y, window: int = 1, threshold: float = 6.0, min_size: float = 0.0, scale_window: int = 50,
                 rel: float = 0.5) -> pd.DataFrame:
    """Jumps of the curve `y(t)`: changes over `window` records more than `threshold` local scales away from
    the local median change (and at least `min_size`); one row per jump: time, size, z, t_start, t_end."""
    t, y = _check_series(t, y)
    if not (isinstance(window, (int, np.integer)) and window >= 1):
        raise ValueError(f"window must be a whole number of records ≥ 1, got {window!r}")
    if not threshold > 0 or not scale_window >= 2 or not rel >= 0 or not min_size >= 0:
        raise ValueError(f"threshold must be > 0, scale_window ≥ 2, rel ≥ 0 and min_size ≥ 0; got {threshold}, "
                         f"{scale_window}, {rel}, {min_size}")
    if len(y) < window + 3:
        return pd.DataFrame(columns=JUMP_COLUMNS)
    d = pd.Series(y[window:] - y[:-window])                            # [records - window]
    full = dict(window=2 * scale_window + 1, center=True, min_periods=2 * scale_window + 1)
    med = d.rolling(**full).median()                                    # NaN where the window is cut off
    mad = (d - med).abs().rolling(**full).median()
    scale = (1.4826 * mad + rel * med.abs()).to_numpy()
    dev = np.abs(d - med).to_numpy()
    z = dev / np.where(scale > 0, scale, np.inf)
    big = (np.abs(d.to_numpy()) >= min_size) & ((z > threshold) | ((scale == 0) & (dev > 0)))
    if min_size > 0:
        z = np.where(scale > 0, z, np.abs(d.to_numpy()) / min_size)
    rows, idx = [], np.flatnonzero(big)
    for group in np.split(idx, np.flatnonzero(np.diff(idx) > window) + 1) if len(idx) else []:
        a, b = group[0], group[-1] + window                             # the records the jump spans
        step = np.argmax(np.abs(np.diff(y[a:b + 1]))) + a + 1           # the largest one-record change in it
        rows.append(dict(time=t[step], size=y[b] - y[a], z=float(np.max(z[group])), t_start=t[a], t_end=t[b]))
    return pd.DataFrame(rows, columns=JUMP_COLUMNS)


# %% [markdown]
# **Checks on curves with known answers.** A noisy power law (slope 0.3, 0.5% multiplicative noise, 4,000 steps)
# with two jumps put in at steps 900 and 2,500 gives those two jumps and nothing else; the same curve without the
# jumps gives none, and so do a noiseless power law (its steep start is no jump) and a Gaussian random walk. A
# Lévy flight (Cauchy steps) gives many. The noise seed is not tuned: `tests/test_grokking.py` repeats this
# over 20 seeds and other slopes and sizes.

# %%
def synthetic(jumps=(), n=4000, slope=0.3, noise=0.005, seed=0, size=1.0):
    "A noisy power law t^slope on 1..n with steps of `size` added at the times in `jumps`."
    rng = np.random.default_rng(seed)
    t = np.arange(1, n + 1, dtype=float)
    y = t ** slope * (1 + noise * rng.standard_normal(n)) + sum(size * (t >= j) for j in jumps)
    return t, y

t, y = synthetic(jumps=(900, 2500))
found = detect_jumps(t, y)
assert list(found.time) == [900, 2500], found
assert np.allclose(found['size'], 1.0, atol=0.25)
assert detect_jumps(*synthetic()).empty
assert detect_jumps(*synthetic(noise=0.0)).empty
walk = np.cumsum(np.random.default_rng(1).standard_normal(4000))
assert detect_jumps(t, walk).empty
levy = np.cumsum(np.random.default_rng(1).standard_cauchy(4000))
assert len(detect_jumps(t, levy)) > 20
found

# %%
fig, ax = plt.subplots(figsize=(6, 3))
ax.plot(t, y, lw=.6, label='power law + 2 jumps')
for j in found.time:
    ax.axvline(j, color='C3', ls=':', lw=1)
ax.set(xlabel='t', ylabel='y', title='detected jumps (dotted)')
ax.legend(fontsize=8)
plt.show()


# %% [markdown]
# ## Do jumps coincide?
#
# `coincidences` takes the jump times of several curves (a dict name → times) and a reference curve, and for each
# jump of the reference names the nearest jump of every other curve and whether it lies within `tol` steps. The
# tolerance must be at least the spacing of the coarsest curve: an LLC estimated every 100 steps cannot place a
# jump more finely than that. `all_at_once` asks the per-layer question of the paper: for each jump of R, the
# fraction of layers with a jump within `tol`.

# %%
#| export
def coincidences(jumps: dict, reference: str, tol: float) -> pd.DataFrame:
    """For each jump time of `jumps[reference]`: the nearest jump of every other curve in `jumps` (name → times),
    its distance in steps and whether it is within `tol`."""
    if reference not in jumps:
        raise ValueError(f"no curve {reference!r} among the jumps; they are {list(jumps)}")
    if not tol >= 0:
        raise ValueError(f"tol must be a non-negative number of steps, got {tol}")
    rows = []
    for t0 in np.asarray(jumps[reference], float):
        row = {reference: t0}
        for name, times in jumps.items():
            if name == reference:
                continue
            times = np.asarray(times, float)
            near = times[np.argmin(np.abs(times - t0))] if len(times) else np.nan
            row[name], row[f'{name} within tol'] = near, bool(abs(near - t0) <= tol) if len(times) else False
        rows.append(row)
    return pd.DataFrame(rows)

def all_at_once(jumps: dict, reference: str, layers: list[str], tol: float) -> pd.DataFrame:
    "For each jump of `reference`: how many of `layers` (names in `jumps`) jump within `tol` steps, and which."
    if not layers:
        raise ValueError("all_at_once needs at least one layer")
    c = coincidences({reference: jumps[reference], **{k: jumps[k] for k in layers}}, reference, tol)
    if c.empty:
        return pd.DataFrame(columns=[reference, 'layers jumping', 'layers', 'all'])
    hits = c[[f'{k} within tol' for k in layers]]
    return pd.DataFrame({reference: c[reference], 'layers jumping': hits.sum(1).astype(int), 'layers': len(layers),
                         'all': hits.all(1)})


# %%
j = dict(R=[900., 2500.], llc=[1000., 3500.], acc=[880.])
c = coincidences(j, 'R', tol=150)
assert c['llc within tol'].tolist() == [True, False] and c['acc within tol'].tolist() == [True, False]
layers = all_at_once(dict(R=[900.], a=[905.], b=[950.], c=[2000.]), 'R', ['a', 'b', 'c'], tol=100)
assert layers['layers jumping'].item() == 2 and not layers['all'].item()
c


# %% [markdown]
# ## Power laws between jumps
#
# Between jumps, R(t) should still grow as a power law (the paper's fig. 13–14 of the arXiv version). The stretch
# from one jump's end to the next jump's start is fitted on its own, in the absolute step count $t$ (as eq. 17
# does for a whole run), with `fit_power_law` of the [spectral chapter](spectral.html) and its bootstrap
# interval. A stretch spanning less than `min_decades` of $t$ or fewer than `min_points` records gets no
# fit: its slope would only measure the noise. Note what the fit in absolute $t$ means after a jump: a walk that
# restarts at the jump would bend in absolute $t$, and a slope near 0 after a late jump says the weights hardly
# move on that stretch.

# %%
#| export
def fits_between_jumps(t, R, jumps: pd.DataFrame, min_points: int = 20, min_decades: float = 0.1,
                       n_boot: int = 200, seed: int = 0) -> pd.DataFrame:
    "Power-law fits of `R(t)` on each stretch between the `jumps` of `detect_jumps`, with bootstrap intervals."
    t, R = _check_series(t, R, 'R')
    keep = (t > 0) & (R > 0)
    t, R = t[keep], R[keep]
    if len(t) == 0:
        raise ValueError("R(t) has no record with t > 0 and R > 0 to fit")
    edges = [(t[0], None)] + [(r.t_end, r.t_start) for r in jumps.sort_values('time').itertuples()] + [(None, t[-1])]
    rows = []
    for k in range(len(edges) - 1):
        lo, hi = edges[k][0], edges[k + 1][1]
        inside = (t > lo if k else t >= lo) & (t < hi if k < len(edges) - 2 else t <= hi)
        n, decades = int(inside.sum()), (np.log10(t[inside][-1] / t[inside][0]) if inside.any() else 0.0)
        row = dict(segment=k, t_min=lo, t_max=hi, n=n, decades=decades)
        if n >= min_points and decades >= min_decades:
            f = fit_power_law(t[inside], R[inside], n_boot=n_boot, seed=seed)
            row.update(slope=f.slope, ci_low=f.ci_low, ci_high=f.ci_high, r2=f.r2)
        else:
            row.update(slope=np.nan, ci_low=np.nan, ci_high=np.nan, r2=np.nan)
        rows.append(row)
    return pd.DataFrame(rows)


# %%
t, y = synthetic(jumps=(900,), slope=0.3, size=0.5)
fits = fits_between_jumps(t, y, detect_jumps(t, y), n_boot=100)
assert len(fits) == 2 and abs(fits.slope[0] - 0.3) < 0.02 and fits.ci_low[0] <= fits.slope[0] <= fits.ci_high[0]
fits.round(3)


# %% [markdown]
# ## Heavy-tailed steps?
#
# If a space-fractional term (a Lévy-noise Langevin equation) drives the jumps, the steps of the weights should
# have heavy, power-law tails: $P(|x| > u) \sim u^{-\mu}$ with a tail index $\mu < 2$, where a Gaussian's tail
# falls faster than any power. `step_statistics` reads a series of steps $x_t$ (in the grokking study: the
# weights' change per SGD step projected on a fixed random direction, so that a step of the whole weight vector,
# not of one coordinate, is measured) and reports, each with a 95% interval:
#
# * the **excess kurtosis** (0 for a Gaussian; Cauchy-like steps give a large value that grows with the sample);
#   its interval comes from a moving-block bootstrap (blocks of `block` steps keep the steps' correlation in time);
# * the **Hill tail index** $\hat\mu = k / \sum_{i \le k} \ln(|x|_{(i)} / |x|_{(k+1)})$ over the largest
#   $k$ = `tail_fraction` of $|x|$, with the asymptotic interval $\hat\mu(1 \pm 1.96/\sqrt{k})$. Below 2 is
#   Lévy-like. A Gaussian sample also gives a finite Hill index (around 4–6 for its top 2%), so the number must be
#   read beside the Gaussian's;
# * the **fraction of steps beyond 4 standard deviations**, against a Gaussian's $6.3\times10^{-5}$, with a
#   Clopper–Pearson interval.
#
# The same three numbers are computed on a Gaussian sample of the same length and variance (seeded), the
# reference a reader compares with. Steps whose scale drifts slowly (an optimizer whose steps shrink over training)
# look heavy-tailed when pooled, though each stretch is Gaussian; `standardize=True` (default) first divides each
# step by a rolling robust scale of its neighbours (`scale_window` steps each side), so that only heavy tails at a
# given time count.

# %%
#| export
def _kurtosis(x):
    return float(stats.kurtosis(x, fisher=True, bias=False))

def _hill(x, tail_fraction):
    a = np.sort(np.abs(x))[::-1]
    k = max(int(tail_fraction * len(a)), 5)
    if k + 1 > len(a) or a[k] <= 0:
        return np.nan, np.nan, np.nan, k
    mu = k / np.sum(np.log(a[:k] / a[k]))
    return float(mu), float(mu * (1 - 1.96 / math.sqrt(k))), float(mu * (1 + 1.96 / math.sqrt(k))), k

def _block_boot(x, stat, block, n_boot, rng):
    n = len(x)
    starts = rng.integers(0, max(n - block, 1), (n_boot, math.ceil(n / block)))
    reps = [stat(np.concatenate([x[s:s + block] for s in row])[:n]) for row in starts]
    return np.quantile(reps, [0.025, 0.975])

def _standardize(x, scale_window):
    s = pd.Series(x)
    mad = (s - s.rolling(2 * scale_window + 1, center=True, min_periods=5).median()).abs()
    scale = 1.4826 * mad.rolling(2 * scale_window + 1, center=True, min_periods=5).median()
    z = (s / scale.replace(0, np.nan)).to_numpy()
    return z[np.isfinite(z)]

def _tail_stats(x, tail_fraction, block, n_boot, rng) -> dict:
    x = x - np.median(x)
    sd = x.std(ddof=1)
    beyond = int((np.abs(x) > 4 * sd).sum())
    ci = stats.binomtest(beyond, len(x)).proportion_ci(0.95, method='exact')
    k_lo, k_hi = _block_boot(x, _kurtosis, block, n_boot, rng)
    mu, mu_lo, mu_hi, k = _hill(x, tail_fraction)
    kurt = _kurtosis(x)
    return dict(n=len(x), excess_kurtosis=kurt, kurtosis_ci_low=min(k_lo, kurt), kurtosis_ci_high=max(k_hi, kurt),
                hill_index=mu, hill_ci_low=mu_lo, hill_ci_high=mu_hi, hill_k=k, beyond_4sd=beyond / len(x),
                beyond_4sd_ci_low=ci.low, beyond_4sd_ci_high=ci.high)

GAUSS_BEYOND_4SD = 2 * stats.norm.sf(4)

def step_statistics(x, standardize: bool = True, scale_window: int = 100, tail_fraction: float = 0.02,
                    block: int = 50, n_boot: int = 200, seed: int = 0) -> pd.DataFrame:
    """Heavy tails of the steps `x`: excess kurtosis, Hill tail index and the fraction beyond 4 sd, with 95%
    intervals, beside the same numbers for a Gaussian sample of the same length and variance."""
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    if len(x) < 200:
        raise ValueError(f"step_statistics needs at least 200 finite steps for a tail estimate, got {len(x)}")
    if not 0 < tail_fraction < 0.5:
        raise ValueError(f"tail_fraction must lie in (0, 0.5), got {tail_fraction}")
    if standardize:
        x = _standardize(x, scale_window)
    rng = np.random.default_rng(seed)
    gauss = rng.normal(0, x.std(ddof=1), len(x))
    rows = [dict(sample='steps', **_tail_stats(x, tail_fraction, block, n_boot, rng)),
            dict(sample='Gaussian, same n and variance', **_tail_stats(gauss, tail_fraction, block, n_boot, rng))]
    return pd.DataFrame(rows).set_index('sample')


# %% [markdown]
# On Gaussian steps the two rows agree; on Student-t steps with 1.5 degrees of freedom (tail index 1.5, Lévy-like)
# the Hill index lands near 1.5, far below the Gaussian's, and the kurtosis and the 4-sd fraction are far above.
# On Gaussian steps whose scale shrinks tenfold along the run, pooling would fake heavy tails; the rolling
# standardization removes them.

# %%
rng = np.random.default_rng(3)
g = step_statistics(rng.standard_normal(20000))
assert abs(g.excess_kurtosis['steps']) < 0.3 and g.hill_index['steps'] > 3
heavy = step_statistics(rng.standard_t(1.5, 20000))
assert heavy.hill_ci_low['steps'] < 1.5 < heavy.hill_ci_high['steps']
assert heavy.hill_ci_high['steps'] < heavy.hill_ci_low['Gaussian, same n and variance']
assert heavy.beyond_4sd_ci_low['steps'] > heavy.beyond_4sd_ci_high['Gaussian, same n and variance']
drifting = rng.standard_normal(20000) * np.geomspace(1, 0.1, 20000)
assert step_statistics(drifting, standardize=False).excess_kurtosis['steps'] > 1
assert abs(step_statistics(drifting).excess_kurtosis['steps']) < 0.3
heavy.round(4)


# %% [markdown]
# ## The rate of change of the LLC and the local exponent
#
# The paper's last hypothesis in appendix F (arXiv appendix D) is qualitative: the rate of change of the LLC should
# roughly capture the action of the time- and space-fractional derivatives, sharp changes the spatial one (the
# jumps), slow changes the temporal one. We read it as: where the LLC changes fast, the walk's local exponent
# $\alpha(t) = 2\,d\log R/d\log t$ is high. The sign of the proportionality is not stated and the LLC falls at a
# grokking jump in the paper's fig. 5, so the test uses the magnitude $|d\lambda/dt|$. `rate_correlation`
# computes, at each LLC record $t_j$, $\alpha_j$ from the log-log slope of R over $[t_{j-1}, t_{j+1}]$ and
# $|d\lambda/dt|_j$ by central differences, and returns their Spearman correlation with a 95% bootstrap interval
# (records resampled; neighbouring records are correlated, so the interval is optimistic).

# %%
#| export
def rate_correlation(t, R, t_llc, llc, n_boot: int = 500, seed: int = 0) -> dict:
    """Spearman correlation, with a bootstrap interval, between the local exponent α(t) = 2 dlogR/dlogt and
    |dλ/dt| at the LLC records `t_llc` (R sampled at the steps `t`)."""
    t, R = _check_series(t, R, 'R')
    t_llc, llc = _check_series(t_llc, llc, 'llc')
    if len(t_llc) < 5:
        raise ValueError(f"rate_correlation needs at least 5 LLC records, got {len(t_llc)}")
    alpha, rate = [], []
    for j in range(1, len(t_llc) - 1):
        inside = (t >= t_llc[j - 1]) & (t <= t_llc[j + 1]) & (t > 0) & (R > 0)
        if inside.sum() < 3:
            continue
        alpha.append(2 * np.polyfit(np.log(t[inside]), np.log(R[inside]), 1)[0])
        rate.append(abs(llc[j + 1] - llc[j - 1]) / (t_llc[j + 1] - t_llc[j - 1]))
    alpha, rate = np.array(alpha), np.array(rate)
    if len(alpha) < 4:
        raise ValueError("fewer than 4 LLC records have R(t) records around them: record R more often")
    rho = float(stats.spearmanr(alpha, rate).statistic)
    rng = np.random.default_rng(seed)
    reps = [stats.spearmanr(alpha[i], rate[i]).statistic for i in rng.integers(0, len(alpha), (n_boot, len(alpha)))]
    lo, hi = np.nanquantile(reps, [0.025, 0.975])
    return dict(rho=rho, ci_low=float(min(lo, rho)), ci_high=float(max(hi, rho)), n=len(alpha),
                alpha=alpha, rate=rate)


# %% [markdown]
# A check with a known answer: a curve whose local exponent is high exactly where a made-up LLC changes fast gives
# a strong positive correlation; an LLC changing at random times gives one near zero.

# %%
t = np.arange(1, 5001, dtype=float)
t_llc = t[::100]
burst = lambda s: np.exp(-((s - 2500) / 400) ** 2)
R = np.exp(np.cumsum((0.2 + 2 * burst(t)) / t))                  # local exponent dlogR/dlogt = 0.2 + 2·burst
llc = 10 - 5 * np.tanh((t_llc - 2500) / 400)                     # changes fastest at 2500
r = rate_correlation(t, R, t_llc, llc)
assert r['rho'] > 0.8 and r['ci_low'] > 0.5
llc_random = 10 + np.cumsum(np.random.default_rng(0).standard_normal(len(t_llc)))
assert rate_correlation(t, R, t_llc, llc_random)['ci_low'] < 0
round(r['rho'], 3), round(r['ci_low'], 3)


# %% [markdown]
# ## Transition times
#
# A grokking transition can be fast without being a step, and then `detect_jumps` rightly finds nothing. The softer
# question is whether weights, LLC and accuracy change most at the same time. `transition_times` reads a run's
# trajectory table and returns the step of the largest rise of test accuracy over `window` steps, of the largest
# fall of the LLC between two records, and of the largest local log-log slope of R and of each layer's R over
# `window` steps, after the first 10% of the run (whose fast start is no transition). When R's local slope only
# falls, its largest value sits at the edge of the window and the time is NaN: R has no transition.
#
# Checked on a made-up run: accuracy rising as a logistic centred at step 1,500, an LLC falling fastest at step
# 1,200, and an R that grows as $t^{0.3}$ with an extra burst of growth around step 2,000.

# %%
#| export
def _steepest_slope(t, R, window, skip=0.1):
    "Step of the largest log-log slope of R over `window` steps, after the first `skip` of the run."
    keep = (t >= max(skip * t[-1], window)) & (R > 0)
    t, R = t[keep], R[keep]
    if len(t) <= window:
        return np.nan
    slope = np.log(R[window:] / R[:-window]) / np.log(t[window:] / t[:-window])
    top = int(np.argmax(slope))
    return float(t[top + window // 2]) if 0 < top < len(slope) - 1 else np.nan   # at an edge: only slowing

def transition_times(run: pd.DataFrame, window: int = 200, acc: str = 'acc/test', llc: str = 'llc/llc') -> dict:
    """Steps of the steepest rise of the accuracy column `acc` over `window` steps, the steepest fall of the LLC
    column `llc` between records and the steepest log-log growth of R and of each R/<layer> (NaN: none inside)."""
    for c in (acc, llc, 'R', 'step'):
        if c not in run:
            raise ValueError(f"the table has no column {c!r}; it has {list(run.columns)}")
    rows = run.dropna(subset=[acc])
    ta, a = rows.step.to_numpy(float), rows[acc].to_numpy()
    k = max(1, int(round(window / max(np.diff(ta).min(), 1)))) if len(ta) > 1 else 1
    out = {'acc/test': float(ta[np.argmax(a[k:] - a[:-k]) + k // 2]) if len(a) > k else np.nan}
    rows = run.dropna(subset=[llc])
    tl, lam = rows.step.to_numpy(float), rows[llc].to_numpy()
    out['llc'] = float((tl[1:] + tl[:-1])[np.argmin(np.diff(lam))] / 2) if len(lam) > 1 else np.nan
    steps = run.step.to_numpy(float)
    for c in [c for c in run if c == 'R' or c.startswith('R/')]:
        out[c] = _steepest_slope(steps, run[c].to_numpy(), window)
    return out


# %%
t = np.arange(0, 3001, dtype=float)
made_up = pd.DataFrame({'step': t, 'acc/test': np.where(t % 10 == 0, 1 / (1 + np.exp(-(t - 1500) / 60)), np.nan),
                        'llc/llc': np.where(t % 100 == 0, 20 - 10 * np.tanh((t - 1200) / 150), np.nan),
                        'R': (1 + t) ** 0.3 * (1 + 0.3 / (1 + np.exp(-(t - 2000) / 50)))})
made_up['R/a'], made_up['R/b'] = made_up.R * 0.6, (1 + t) ** 0.3
tt = transition_times(made_up)
assert abs(tt['acc/test'] - 1500) <= 20 and abs(tt['llc'] - 1200) <= 50 and abs(tt['R'] - 2000) <= 100
assert np.isnan(tt['R/b'])                                  # a plain power law: its slope only falls
tt

# %%
#| hide
import nbdev
nbdev.nbdev_export()
