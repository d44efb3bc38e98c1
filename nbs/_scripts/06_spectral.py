# %% [markdown]
# # Spectral dimension
#
# > Diffusion exponents of a displacement curve R(t): power-law fits, exponents and regimes, growth laws, d_s.

# %%
#| default_exp diffusion.spectral

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
from dataclasses import dataclass, asdict
import warnings

import numpy as np
import pandas as pd
from scipy import optimize, stats

from fracsgd.diffusion.theory import spectral_dimension_from_slope, msd_exponent


# %% [markdown]
# This chapter only reads numbers: a vector of times and a vector (or a runs × times array) of displacements,
# usually columns of the trajectory table that the [displacement recorder](displacement.html) writes. Nothing
# here touches a model. A curve that changes exponent (fast early, slow late, paper fig. 1) has its own
# chapter: the [crossover chapter](crossover.html) decides whether there is a crossover, where, and what the late
# exponent after it is; it builds on the fits of this one.
#
# ## Power-law fit
#
# A displacement that grows as $R(t) \sim t^{1/d_\text{walk}}$ (paper eq. 11) is a straight line in log–log
# coordinates, and the paper estimates its slope by ordinary least squares of $\log R$ on $\log t$ (eq. 17). Two
# practical points decide whether that slope is trustworthy.
#
# * **Where the points sit.** Curves recorded at every step have most of their points at late times, so a fit
#   on them is dominated by the last decade. `n_log_points` thins the curve to points evenly spaced in
#   $\log t$ first.
# * **How uncertain the slope is.** Successive points of one trajectory are strongly correlated, so textbook
#   OLS errors are far too small. With several runs (a 2-D `y`, runs × times) we bootstrap whole runs and
#   refit the mean curve, which is honest about run-to-run variation. A plain percentile interval over $n$
#   runs is too narrow when $n$ is small (it uses the plug-in variance and normal tails); we use Hesterberg's
#   *expanded* percentile interval, whose tail probability $\Phi(-\sqrt{n/(n-1)}\,t_{n-1,(1+\text{level})/2})$
#   replaces $(1-\text{level})/2$ (for 20 runs at 90 %: the 3.8 % and 96.2 % quantiles instead of 5 % and 95 %).
#   With a single curve we use a
#   moving-block bootstrap of the log-log residuals (blocks of about $n^{1/3}$ points), which keeps
#   short-range correlation.

# %%
#| export
def log_spaced_indices(t, num: int) -> np.ndarray:
    "Indices of the (unique) points of increasing positive `t` closest to `num` log-uniformly spaced times."
    t = np.asarray(t, float)
    if len(t) <= num: return np.arange(len(t))
    targets = np.geomspace(t[0], t[-1], num)
    return np.unique(np.clip(np.searchsorted(t, targets), 0, len(t) - 1))

@dataclass
class PowerLawFit:
    "Result of `fit_power_law`: y ≈ exp(intercept)·t^slope, with a bootstrap interval for the slope."
    slope: float
    intercept: float
    r2: float
    ci_low: float
    ci_high: float
    t_min: float
    t_max: float
    n: int
    def predict(self, t):
        "The fitted power law evaluated at `t`."
        return np.exp(self.intercept) * np.asarray(t, float) ** self.slope
    def as_dict(self): return asdict(self)


# %%
#| export
def _loglog_ols(lt, ly):
    A = np.vstack([lt, np.ones_like(lt)]).T
    (s, c), *_ = np.linalg.lstsq(A, ly, rcond=None)
    res = ly - (s * lt + c)
    ss = ((ly - ly.mean())**2).sum()
    return s, c, (1 - (res**2).sum() / ss) if ss > 0 else 1.0, res

def _check_curve(t, y):
    t = np.asarray(t, float)
    y = np.asarray(y, float)
    if t.ndim != 1:
        raise ValueError(f"t must be 1-D, got shape {t.shape}")
    if y.shape[-1] != len(t):
        raise ValueError(f"shape mismatch: t has {len(t)} points but y has shape {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or inf: drop diverged runs before fitting")
    return t, y


# %%
#| export
def _interval_quantiles(level: float, n_units: int | None = None) -> list:
    "Quantiles of a percentile bootstrap interval; expanded (Hesterberg) when `n_units` runs are resampled."
    a = (1 - level) / 2
    if n_units and n_units > 1:
        a = stats.norm.cdf(-np.sqrt(n_units / (n_units - 1)) * stats.t.ppf(1 - a, n_units - 1))
    return [a, 1 - a]

def fit_power_law(t, y, t_min=None, t_max=None, n_boot: int = 200, seed: int = 0, level: float = 0.95,
                  n_log_points: int | None = None) -> PowerLawFit:
    "Fit y ~ t^slope by least squares in log-log on t_min ≤ t ≤ t_max; `y` is one curve or runs × times."
    t, y = _check_curve(t, y)
    lower = t_min if t_min is not None else -np.inf
    upper = t_max if t_max is not None else np.inf
    keep = (t > 0) & (t >= lower) & (t <= upper)
    t, y = t[keep], y[..., keep]                          # the fit window: y is [times] or [runs, times]
    if n_log_points:
        idx = log_spaced_indices(t, n_log_points)
        t, y = t[idx], y[..., idx]
    ym = y.mean(0) if y.ndim == 2 else y                  # [times]: the mean curve
    if len(t) < 3:
        raise ValueError(f"need at least 3 points with t > 0 in the fit window, got {len(t)}")
    if np.any(ym <= 0):
        raise ValueError("y must be positive on the fit window (a displacement of 0 has no logarithm)")
    lt = np.log(t)
    s, c, r2, res = _loglog_ols(lt, np.log(ym))
    rng, boots = np.random.default_rng(seed), []
    for _ in range(n_boot):
        if y.ndim == 2:  # resample whole runs
            yb = y[rng.integers(0, len(y), len(y))].mean(0)
            if np.any(yb <= 0):
                continue
            boots.append(_loglog_ols(lt, np.log(yb))[0])
        else:            # moving-block bootstrap of residuals
            b = max(1, int(round(len(t) ** (1 / 3))))
            starts = rng.integers(0, len(t) - b + 1, int(np.ceil(len(t) / b)))
            rb = np.concatenate([res[i:i + b] for i in starts])[:len(t)]
            boots.append(_loglog_ols(lt, s * lt + c + rb)[0])
    q = _interval_quantiles(level, len(y) if y.ndim == 2 else None)
    lo, hi = np.quantile(boots, q) if boots else (np.nan, np.nan)
    return PowerLawFit(float(s), float(c), float(r2), float(lo), float(hi), float(t[0]), float(t[-1]), len(t))


# %% [markdown]
# A noiseless power law must come back exactly, and a noisy one must land inside its interval:

# %%
t = np.arange(1, 2001.)
f = fit_power_law(t, 3 * t**0.3)
assert abs(f.slope - 0.3) < 1e-12 and abs(f.r2 - 1) < 1e-12 and np.allclose(f.predict(t), 3 * t**0.3)
rng = np.random.default_rng(0)
runs = 2 * t**0.25 * np.exp(0.05 * rng.standard_normal((40, len(t))))  # 40 runs, 5% multiplicative noise
f = fit_power_law(t, runs, n_log_points=60)
assert f.ci_low < 0.25 < f.ci_high and f.ci_high - f.ci_low < 0.01, f
f


# %% [markdown]
# ## Exponents and the bound $d_s \le \bar\lambda$
#
# From the slope $s = 1/d_\text{walk}$ follow the walk dimension, the mean-squared-displacement exponent
# $\alpha = 2s$ of the fractional Fokker–Planck equation (MSD $\sim t^\alpha$, paper eq. 4), and, given the
# mean LLC $\bar\lambda$, the spectral dimension $d_s = 2\bar\lambda s$ (paper eq. 12 and 17). The conversions
# themselves live in the [theory chapter](theory.html).
#
# **A plain warning about the bound.** Corollary 3.3 states $d_s \le \bar\lambda$. With $d_s$ *estimated* as
# $2\bar\lambda s$, the inequality reads $2\bar\lambda s \le \bar\lambda$, that is $s \le 1/2$: it checks that
# the motion is sub-diffusive (or at most diffusive) and says nothing about the value of $\bar\lambda$. A test
# of the bound that is not circular needs a $d_s$ measured without $\lambda$, which is what the
# explored-volume estimate at the end of this chapter is for. Note also that the paper's tables report a
# column "α" equal to the slope $s$ (e.g. TinyStories-1M: $21.4/(2\cdot 32) \approx 0.33$); here `alpha`
# always means the MSD exponent $2s$.

# %%
#| export
def diffusion_exponents(fit: PowerLawFit, llc: float | None = None) -> dict:
    """Slope, walk dimension, MSD exponent α and (given the mean LLC `llc`) d_s with its interval and the
    d_s ≤ λ check."""
    d_walk = 1 / fit.slope if fit.slope > 0 else np.inf
    out = dict(slope=fit.slope, slope_ci=(fit.ci_low, fit.ci_high), d_walk=d_walk,
               alpha=msd_exponent(fit.slope), r2=fit.r2, regime=diffusion_regime(fit.slope))
    if llc is not None:
        if not np.isfinite(llc) or llc <= 0:
            raise ValueError(f"the LLC must be positive and finite, got {llc}")
        out.update(llc=llc, d_s=spectral_dimension_from_slope(fit.slope, llc),
                   d_s_ci=tuple(spectral_dimension_from_slope(v, llc) for v in (fit.ci_low, fit.ci_high)),
                   ds_le_llc=bool(fit.slope <= 0.5))  # d_s ≤ λ̄  ⇔  slope ≤ 1/2 for this estimator
    return out

def diffusion_regime(slope: float, tol: float = 0.02) -> str:
    "The regime of a slope of R(t): 'sub-diffusive' (< ½), 'diffusive' (≈ ½), 'super-diffusive' (> ½)."
    return 'diffusive' if abs(slope - 0.5) <= tol else ('sub-diffusive' if slope < 0.5 else 'super-diffusive')


# %%
e = diffusion_exponents(fit_power_law(t, t**0.25), llc=40.)
assert np.isclose(e['d_walk'], 4) and np.isclose(e['alpha'], 0.5)
assert np.isclose(e['d_s'], 20) and e['ds_le_llc']
assert diffusion_regime(0.7) == 'super-diffusive' and diffusion_regime(0.5) == 'diffusive'
e

# %% [markdown]
# ## Power law, logarithm or linear drift?
#
# A power law is not the only candidate. The paper (§3.1) recalls that SGD with momentum and weight decay has
# been seen to move as $R \propto \ln t$ (ultra-slow diffusion, the $\alpha \to 0$ limit), and Proposition D.1
# shows that a small linear drift, $R \sim t^{1/d_\text{walk}} + ct$, eventually dominates and rules out a
# steady state. `compare_growth_laws` fits each candidate by least squares on $\log R$ (so every decade counts
# alike) and ranks them by AIC; the winner is the lowest AIC, and a difference below about 2 means the data
# cannot tell them apart.

# %%
#| export
GROWTH_LAWS = {
    'power law':         (lambda t, a, s: a * t**s,                   (1., .5)),
    'logarithmic':       (lambda t, a, b: a + b * np.log(t),          (0., 1.)),
    'linear drift':      (lambda t, a, c: a + c * t,                  (0., 1e-3)),
    'power + drift':     (lambda t, a, s, c: a * t**s + c * t,        (1., .5, 0.)),
}

def compare_growth_laws(t, y, t_min=None, n_log_points: int | None = 100) -> pd.DataFrame:
    "Fit power-law, logarithmic, linear-drift and power+drift growth to R(t); rank by AIC on log R."
    t, y = _check_curve(t, y)
    ym = y.mean(0) if y.ndim == 2 else y
    m = (t > 0) & (ym > 0) & (t >= (t_min or 0))
    t, ym = t[m], ym[m]
    if n_log_points:
        idx = log_spaced_indices(t, n_log_points)
        t, ym = t[idx], ym[idx]
    rows = []
    for name, (f, start) in GROWTH_LAWS.items():
        g = lambda tt, *p: np.log(np.clip(f(tt, *p), 1e-300, None))
        p0 = list(start)
        if name in ('power law', 'power + drift'):
            p0[0] = ym[0]                                  # start the prefactor at the first point
        try:
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')
                p, _ = optimize.curve_fit(g, t, np.log(ym), p0=p0, maxfev=20000)
            sse = ((g(t, *p) - np.log(ym))**2).sum()
        except (RuntimeError, ValueError):
            p, sse = [np.nan] * len(p0), np.inf
        k, n = len(p0), len(t)
        rows.append(dict(law=name, params=tuple(float(v) for v in np.round(p, 6)), sse=sse, n_params=k,
                         aic=n * np.log(sse / n + 1e-300) + 2 * k))
    df = pd.DataFrame(rows).sort_values('aic').reset_index(drop=True)
    df['delta_aic'] = df.aic - df.aic.iloc[0]
    return df


# %% [markdown]
# Each law, generated exactly, must win its own comparison (power + drift is allowed to tie the law it
# contains):

# %%
t = np.arange(1, 5001.)
rng = np.random.default_rng(1)
noisy = lambda R: R * np.exp(0.01 * rng.standard_normal(len(t)))
laws = {'power law': 2 * t**0.3, 'logarithmic': 1 + 0.5 * np.log(t), 'linear drift': 5 + 0.01 * t}
for truth, R in laws.items():
    d = compare_growth_laws(t, noisy(R))
    best = d.law.iloc[0]
    assert best == truth or (best == 'power + drift' and d.set_index('law').delta_aic[truth] < 4), (truth, d)
d = compare_growth_laws(t, noisy(2 * t**0.25 + 0.01 * t))
assert d.law.iloc[0] == 'power + drift', d
d


# %% [markdown]
# ## A spectral dimension that does not go through λ
#
# The definition of $d_s$ (paper eq. 8, 28) is about volume: the number of distinct states a walk has visited
# grows as $V_s(t) \sim t^{d_s/2}$. Measuring that volume needs no learning coefficient, so it gives the
# independent check the bound above lacks. `spectral_dimension_from_volume` fits that law to any volume curve:
# the number of distinct lattice sites visited by walkers on a graph (see the [random-walk
# chapter](walks.html), where it is checked against the Sierpinski gasket's known $d_s$), or the number of
# distinct $\varepsilon$-cells of weight space a training run has entered, which the recorder can count with
# `ExploredVolume`.
#
# Its limits, stated plainly:
#
# * The count of distinct sites scales as $t^{d_s/2}$ only for *recurrent* walks, $d_s < 2$. A transient walk
#   ($d_s > 2$) keeps finding new sites at a constant rate, $V_s \sim t$, so this estimate saturates at
#   $d_s = 2$ (with a logarithmic correction at exactly 2). Values near 2 are a lower bound, not a
#   measurement.
# * In weight space the answer depends on the cell size $\varepsilon$: cells much smaller than one SGD step
#   make every step a new cell ($V_s \sim t$); cells larger than the whole excursion give $V_s = 1$. The
#   scaling regime lies between; report $\varepsilon$ with the result and check that the exponent is stable
#   across a range of it.
# * The paper's fits give $d_s$ of tens for language models (table 1), far above 2, where the volume count can
#   only say "at least 2". For such models, this estimate is a consistency check of the regime, not a
#   replacement.

# %%
#| export
def spectral_dimension_from_volume(t, volume, **kw) -> dict:
    "d_s = 2 × slope of log V_s(t) against log t (paper eq. 8); saturates at 2 for transient walks."
    fit = fit_power_law(t, volume, **kw)
    d_s = 2 * fit.slope
    return dict(d_s=d_s, d_s_ci=(2 * fit.ci_low, 2 * fit.ci_high), r2=fit.r2, fit=fit,
                saturated=bool(fit.ci_high >= 0.975))  # slope ≈ 1: transient walk, d_s ≥ 2 only


# %% [markdown]
# A walk on a line ($d_s = 1$) visits about $\sqrt{8t/\pi}$ distinct sites, and a walk on a cubic lattice
# (transient) visits a number proportional to $t$, so the estimate must return 1 for the first and report
# saturation for the second:

# %%
rng = np.random.default_rng(3)
def distinct_sites(steps):
    "Mean number of distinct sites visited by walkers given as (walkers, t, dim) integer steps."
    pos = np.cumsum(steps, axis=1)
    return np.array([[len({tuple(p) for p in w[:k]}) for k in ts] for w in pos]).mean(0)
ts = np.unique(np.geomspace(10, 4000, 15).astype(int))
line = distinct_sites(rng.choice([-1, 1], size=(100, 4000, 1)))
axes_steps = np.eye(3, dtype=int)[rng.integers(0, 3, (30, 4000))]            # [walkers, t, 3]: unit axis steps
cubic = distinct_sites(axes_steps * rng.choice([-1, 1], (30, 4000, 1)))
d1, d3 = spectral_dimension_from_volume(ts, line), spectral_dimension_from_volume(ts, cubic)
assert abs(d1['d_s'] - 1) < 0.1 and not d1['saturated'], d1
assert d3['d_s'] > 1.8, d3
d1['d_s'], d3['d_s']

# %%
#| hide
import nbdev
nbdev.nbdev_export()
