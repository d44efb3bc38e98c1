# %% [markdown]
# # Spectral dimension
#
# > Diffusion exponents of a displacement curve R(t): power-law fits, crossover, growth laws, d_s, prediction.

# %%
#| default_exp spectral

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
from scipy import optimize

from fracsgd.theory import spectral_dimension_from_slope, msd_exponent

# %%
import matplotlib.pyplot as plt


# %% [markdown]
# This chapter only reads numbers: a vector of times and a vector (or a runs × times array) of displacements,
# usually columns of the trajectory table that the [displacement recorder](displacement.html) writes. Nothing
# here touches a model.
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
#   refit the mean curve, which is honest about run-to-run variation. With a single curve we use a
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
    lo, hi = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2]) if boots else (np.nan, np.nan)
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
# ## The early super-diffusive crossover
#
# Networks typically move faster than Brownian motion early on and slow down later. Paper eq. 32 (appendix
# B.3) writes this as $R(t) \sim \mathbb 1[t \ge t_c]\,(t-t_c)^{1/d_\text{walk}} + r(t)$, where the early
# component $r$ is frozen at $r(t_c)$ after the crossover time $t_c$. Two consequences for fitting:
#
# 1. $t_c$ must be found. `detect_crossover` fits eq. 32 itself for each candidate $t_c$ on a log-spaced grid
#    (a power law before $t_c$; $r(t_c) + A(t-t_c)^{s}$ after, with $r(t_c)$ taken from the early fit) and
#    keeps the candidate with the smallest squared error in $\log R$, refined by a bounded scalar search.
# 2. After $t_c$, a plain log–log fit of $R$ against $t$ is biased by the offset $r(t_c)$.
#    `fit_after_crossover` fits eq. 32 directly: it estimates the offset $r(t_c)$ by least squares (starting
#    from $R(t_c)$, so a slightly misplaced $t_c$ does not bias it) and then fits $R(t) - r(t_c)$ against
#    $t - t_c$ in log–log, with the usual bootstrap interval.

# %%
#| export
@dataclass
class Crossover:
    "Result of `detect_crossover`: crossover time, early log-log slope, late eq.-32 exponent, the fit's SSE."
    t_c: float
    early_slope: float
    late_slope: float
    sse: float

def _eq32_sse(lt, ly, t, y, b):
    "SSE in log R of eq. 32 with the crossover at log-time b: power law before, r(t_c) + A(t − t_c)^s after."
    early, late = lt < b, lt >= b
    s0, c0, _, res0 = _loglog_ols(lt[early], ly[early])
    r_c, t_c = np.exp(c0 + s0 * b), np.exp(b)
    dt, dy = t[late] - t_c, y[late] - r_c
    ok = (dt > 0) & (dy > 0)
    if ok.sum() < 3:
        return np.inf, (s0, np.nan)
    s1, c1, *_ = _loglog_ols(np.log(dt[ok]), np.log(dy[ok]))
    g = lambda tt, logA, s: np.log(r_c + np.exp(logA) * np.clip(tt - t_c, 0, None) ** s)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            (c1, s1), _ = optimize.curve_fit(g, t[late], ly[late], p0=(c1, s1), maxfev=2000)
    except (RuntimeError, ValueError):
        pass
    return (res0**2).sum() + ((g(t[late], c1, s1) - ly[late])**2).sum(), (s0, s1)

def local_slope(t, y, window: float = 0.3, n_points: int = 60) -> pd.DataFrame:
    "The local log-log slope d log y / d log t, from least-squares lines over windows of `window` decades."
    t, y = _check_curve(t, y)
    ym = y.mean(0) if y.ndim == 2 else y
    m = (t > 0) & (ym > 0)
    lt, ly = np.log10(t[m]), np.log10(ym[m])
    centres = np.linspace(lt[0] + window / 2, lt[-1] - window / 2, n_points)
    rows = []
    for c in centres:
        w = np.abs(lt - c) <= window / 2
        if w.sum() >= 3:
            rows.append((10**c, np.polyfit(lt[w], ly[w], 1)[0]))
    return pd.DataFrame(rows, columns=['t', 'slope'])

def detect_crossover(t, y, method: str = 'eq32', n_candidates: int = 40, min_points: int = 5,
                     n_log_points: int | None = 150, window: float = 0.3) -> Crossover:
    """Crossover time t_c: the best eq.-32 break (`method='eq32'`), or where the local slope last falls below ½
    (`method='slope'`)."""
    t, y = _check_curve(t, y)
    ym = y.mean(0) if y.ndim == 2 else y
    m = (t > 0) & (ym > 0)
    t, ym = t[m], ym[m]
    if method == 'slope':
        return _slope_crossover(t, ym, window)
    if method != 'eq32':
        raise ValueError(f"method must be 'eq32' or 'slope', got {method!r}")
    if n_log_points:
        idx = log_spaced_indices(t, n_log_points)
        t, ym = t[idx], ym[idx]
    if len(t) < 2 * min_points + 1:
        raise ValueError(f"need at least {2*min_points+1} positive points, got {len(t)}")
    lt, ly = np.log(t), np.log(ym)
    sse = lambda b: _eq32_sse(lt, ly, t, ym, b)[0]
    cands = np.linspace(lt[min_points], lt[-min_points - 1], n_candidates)
    i = int(np.argmin([sse(b) for b in cands]))
    lo, hi = cands[max(i - 1, 0)], cands[min(i + 1, len(cands) - 1)]
    b = optimize.minimize_scalar(sse, bounds=(lo, hi), method='bounded', options=dict(xatol=1e-4)).x
    err, (s0, s1) = _eq32_sse(lt, ly, t, ym, b)
    return Crossover(float(np.exp(b)), float(s0), float(s1), float(err))


# %%
#| export
def _slope_crossover(t, ym, window):
    ls = local_slope(t, ym, window)
    if len(ls) < 3:
        raise ValueError("too few points for local slopes: record more steps")
    above = ls.slope.to_numpy() > 0.5
    if above.all() or not above.any():
        raise ValueError(f"no crossover: the local slope stays {'above' if above.all() else 'below'} 1/2 "
                         f"(range {ls.slope.min():.2f}–{ls.slope.max():.2f})")
    i = np.flatnonzero(above)[-1]                      # last window still super-diffusive
    s0, s1, t0, t1 = ls.slope[i], ls.slope[i + 1], np.log(ls.t[i]), np.log(ls.t[i + 1])
    t_c = float(np.exp(t0 + (s0 - 0.5) / (s0 - s1) * (t1 - t0)))   # linear interpolation in log t
    early, late = ls[ls.t <= t_c].slope, ls[ls.t > t_c].slope
    return Crossover(t_c, float(early.mean()), float(late.mean()), np.nan)


# %%
#| export
def _eq32_offset(t, ym, t_c):
    "Least-squares r(t_c) of eq. 32 after t_c (log-space fit of r_c + A(t − t_c)^s), started from R(t_c)."
    after = t > t_c
    g = lambda tt, r_c, logA, s: np.log(np.abs(r_c) + np.exp(logA) * (tt - t_c) ** s)
    r0 = np.interp(t_c, t, ym)
    log_A0 = np.log(max(ym[-1] - r0, 1e-12)) - 0.5 * np.log(t[-1] - t_c)   # through the last point, slope ½
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            (r_c, *_), _ = optimize.curve_fit(g, t[after], np.log(ym[after]), p0=(r0, log_A0, 0.5), maxfev=5000)
        return abs(r_c) if abs(r_c) < ym[after].min() else r0
    except (RuntimeError, ValueError):
        return r0

def fit_after_crossover(t, y, t_c: float, skip: float = 0.05, **kw) -> PowerLawFit:
    "Fit paper eq. 32 after `t_c`: R(t) − r(t_c) ~ (t − t_c)^slope, skipping the first `skip` of log-time."
    t, y = _check_curve(t, y)
    if not t[0] <= t_c < t[-1]:
        raise ValueError(f"t_c={t_c} lies outside the recorded times [{t[0]}, {t[-1]}]")
    Y = np.atleast_2d(y)
    r_c = _eq32_offset(t, Y.mean(0), t_c)
    after = t > t_c
    dt, dy = t[after] - t_c, Y[:, after] - r_c
    lo = np.exp(np.log(dt[0]) + skip * (np.log(dt[-1]) - np.log(dt[0])))
    ok = (dt >= lo) & (dy.mean(0) > 0)
    return fit_power_law(dt[ok], dy[:, ok] if y.ndim == 2 else dy[0, ok], **kw)


# %% [markdown]
# A synthetic curve with a known answer: ballistic-ish growth ($t^{0.9}$) up to $t_c = 300$, then eq. 32 with
# a late exponent 0.3. The eq.-32 profile finds the crossover; eq. 32 recovers the late exponent, which a
# naive log–log fit after $t_c$ underestimates because of the frozen offset.

# %%
def synthetic_crossover(t, t_c=300., early=0.9, late=0.3, A=0.5):
    "Super-diffusive until t_c, then eq. 32 with exponent `late`."
    r = np.minimum(t, t_c) ** early
    return r + A * np.where(t >= t_c, np.abs(t - t_c), 0) ** late * 3 * t_c ** (early - late)

t = np.arange(1, 20001.)
R = synthetic_crossover(t)
c = detect_crossover(t, R)
late = fit_after_crossover(t, R, c.t_c)
naive = fit_power_law(t, R, t_min=c.t_c)
assert abs(c.t_c / 300 - 1) < 0.25, c
assert abs(late.slope - 0.3) < 0.03, late.slope
assert abs(naive.slope - 0.3) > abs(late.slope - 0.3), (late.slope, naive.slope)
c, late.slope, naive.slope

# %% [markdown]
# Real curves often bend smoothly instead of switching abruptly. For them, `method='slope'` defines the
# crossover as the time where the local log–log slope (`local_slope`) falls below ½ for the last time, that
# is, where the motion stops being super-diffusive. A smooth crossover with a known answer:
# $R = t\,(1+t/t_0)^{s-1}$ has local slope $1 - (1-s)\frac{t/t_0}{1+t/t_0}$, which equals ½ at
# $t = t_0/(1-2s)$; for $s = 0.3$, $t_0 = 100$ that is $t_c = 250$.

# %%
ts = np.arange(1, 50001.)
smooth = ts * (1 + ts / 100) ** (0.3 - 1)
cs = detect_crossover(ts, smooth, method='slope')
assert abs(cs.t_c / 250 - 1) < 0.02, cs
assert abs(fit_power_law(ts, smooth, t_min=100 * cs.t_c).slope - 0.3) < 0.01
cs

# %%
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.loglog(t, R, 'k', lw=2, label='synthetic R(t)')
ax.axvline(c.t_c, ls=':', c='gray', label=f'detected $t_c$ = {c.t_c:.0f}')
tt = t[t > c.t_c]
ax.loglog(tt, np.interp(c.t_c, t, R) + np.exp(late.intercept) * (tt - c.t_c) ** late.slope, 'C1--',
          label=f'eq. 32 fit, slope {late.slope:.3f}')
ax.loglog(tt, naive.predict(tt), 'C0:', label=f'naive log-log fit, slope {naive.slope:.3f}')
ax.set_xlabel('t (SGD steps)')
ax.set_ylabel('R(t) (weight-space distance)')
ax.legend(fontsize=8)
plt.show()

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
# ## Predicting the displacement
#
# If late SGD is a fractal walk, the exponent fitted on the early part of a run should predict where the run
# goes next (paper appendix I.1, fig. 14–15, 18). `predict_displacement` fits the first `fit_fraction` of the
# recorded time span (after an optional crossover `t_c`, following eq. 32), extrapolates the rest, and scores
# the prediction with $R^2$ on the held-out part.

# %%
#| export
def predict_displacement(t, y, fit_fraction: float = 0.5, t_c: float | None = None) -> pd.DataFrame:
    """Fit R(t) on the first `fit_fraction` of the run and predict the rest: a table of t, R, R_pred, held_out,
    with the held-out r2 in its `attrs`."""
    t, y = _check_curve(t, y)
    ym = y.mean(0) if y.ndim == 2 else y
    if not 0 < fit_fraction < 1:
        raise ValueError(f"fit_fraction must be in (0, 1), got {fit_fraction}")
    t_split = t[0] + fit_fraction * (t[-1] - t[0])
    if t_c is None:
        fit = fit_power_law(t, ym, t_max=t_split, n_boot=0)
        pred = fit.predict(np.maximum(t, 1e-12))
    else:
        fit = fit_after_crossover(t[t <= t_split], ym[t <= t_split], t_c, n_boot=0)
        r_c = np.interp(t_c, t, ym)
        pred = np.where(t > t_c, r_c + np.exp(fit.intercept) * np.clip(t - t_c, 0, None) ** fit.slope, np.nan)
    held = t > t_split
    ss = ((ym[held] - ym[held].mean())**2).sum()
    df = pd.DataFrame(dict(t=t, R=ym, R_pred=pred, held_out=held))
    df.attrs.update(slope=fit.slope, t_split=t_split,
                    r2=float(1 - ((ym[held] - pred[held])**2).sum() / ss) if ss > 0 else np.nan)
    return df


# %%
t = np.arange(1, 4001.)
p = predict_displacement(t, 1.5 * t**0.3 * np.exp(0.01 * np.random.default_rng(2).standard_normal(len(t))))
assert p.attrs['r2'] > 0.95 and abs(p.attrs['slope'] - 0.3) < 0.01, p.attrs
p.attrs


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
