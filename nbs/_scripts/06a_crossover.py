# %% [markdown]
# # Crossover and late exponent
#
# > Whether R(t) changes exponent (a restart, paper eq. 32, or a smooth bend), where, and the late exponent after it.

# %%
#| default_exp diffusion.crossover

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
from dataclasses import dataclass, field
from typing import Callable
import warnings

import numpy as np
import pandas as pd
from scipy import optimize

from fracsgd.diffusion.spectral import (PowerLawFit, fit_power_law, log_spaced_indices, _check_curve, _interval_quantiles,
                              _loglog_ols)

# %%
import matplotlib.pyplot as plt


# %% [markdown]
# The [spectral chapter](spectral.html) fits one power law to a displacement curve. Real curves often have two:
# networks move faster than Brownian motion early on and slower later (paper fig. 1, appendix B.3). This chapter
# decides whether a curve has such a crossover at all, which law describes it, where it lies, and what the late
# exponent $1/d_\text{walk}$ after it is, with a bootstrap interval whose coverage is measured on synthetic curves
# with known exponents. Like the spectral chapter, it only reads numbers.
#
#
# ## The early super-diffusive crossover
#
# Networks typically move faster than Brownian motion early on and slow down later. Paper eq. 32 (appendix
# B.3) writes this as $R(t) \sim \mathbb 1[t \ge t_c]\,(t-t_c)^{1/d_\text{walk}} + r(t)$, where the early
# component $r$ is frozen at $r(t_c)$ after the crossover time $t_c$: the walk **restarts** at $t_c$. Real
# curves may instead **bend** smoothly from one exponent to the other. A fit that assumes a crossover will
# always find one, so `detect_crossover` first asks whether the data need one at all. It fits three models to
# $\log R$ against $\log t$ (on points evenly spaced in $\log t$):
#
# * **none**: one power law (2 parameters);
# * **restart**: eq. 32, a power law before $t_c$ and $r(t_c) + A(t-t_c)^{s}$ after, with $r(t_c)$ from the
#   early fit (5 parameters: early line, $t_c$, $A$, $s$), found by profiling $t_c$ over a log-spaced grid;
# * **bend**: a smoothly broken power law,
#   $\log R = c + s_1 x + (s_2-s_1)\,\delta \log(1 + e^{(x-b)/\delta})$ with $x = \log t$ (5 parameters:
#   $c, s_1, s_2$, the break $t_c = e^b$ and its width $\delta$).
#
# It compares them by the Bayesian information criterion $\text{BIC} = n \log(\text{SSE}/n) + k \log n$. Two
# details make the comparison behave on both exact and noisy curves:
#
# * **Exact curves.** A mean squared residual below $(10^{-4})^2$, i.e. a fit within 0.01 % of $R$, is numerical
#   noise, not information; it is floored there. An exact power law then fits all three models "perfectly",
#   and the extra parameters of the crossover models cost $3\log n$: the answer is *none*.
# * **Correlated residuals.** Successive points of a trajectory (or of a mean over runs) are correlated, so
#   $n$ points carry less evidence than $n$ independent ones. $n$ is replaced by the effective
#   $n_\text{eff} = n(1-\rho)/(1+\rho)$ (at least 6), with $\rho$ the lag-one autocorrelation of the single
#   power law's residuals. Under a real crossover these residuals are mostly misfit, $\rho$ is near 1 and
#   $n_\text{eff}$ small, so the test is conservative: a crossover must be plain to be declared. (Measured while
#   writing this chapter: on 40 power laws with random-walk noise in $\log R$, single curves and means of 20,
#   one of each was called a crossover; on 40 with independent 5 % noise, none. A change of exponent from 0.5
#   to 0.4 at a sharp bend, with 2 % noise, was found in 8 of 10 curves; from 0.6 to 0.4, in all.)
#
# A crossover is declared when the power law's BIC exceeds the better crossover model's by more than 10 (the
# conventional "very strong" evidence); the supported model is then the crossover model with the smaller
# residual (both have 5 parameters). The crossover time is located by `method`: the supported model's own
# $t_c$ (`'auto'`), the eq.-32 profile (`'eq32'`), the bend's break (`'bend'`), or, for curves that bend
# smoothly, the time where the local log–log slope falls below ½ for the last time (`'slope'`), the end of
# super-diffusion.
#
# Finally, the late window $[t_c, t_\text{max}]$ must be long enough to measure an exponent: under one decade
# ($t_\text{max} < 10\,t_c$), `short_late_window` is set and the late exponent is a window average, not an
# asymptotic exponent (the bias table below shows by how much).
#
# The restart profile fits $A$ and $s$ at every candidate $t_c$ (about 55 fits per curve, and again in every
# bootstrap replicate below), so each fit is kept lean: its starting lines come in closed form and MINPACK's
# Levenberg–Marquardt runs on the late points directly, as `curve_fit` would call it. Measured on one curve of the
# coverage test below (2 CPU cores, 2026-12-03), one such fit takes 0.52 ms where it took 1.0, and
# `fit_late_exponent` with 50 replicates 2.3 s where it took 3.4; the late slope at the selected $t_c$ moves by
# about $10^{-9}$ (the solver's own tolerance, from a start that differs in the last bits).

# %%
#| export
@dataclass
class Crossover:
    """Result of `detect_crossover`. `model`: the law the data support, 'none' (one power law; then `t_c` is
    NaN and both slopes are its slope), 'restart' (paper eq. 32) or 'bend' (smoothly broken power law).
    `delta_bic` = BIC(power law) − BIC(best crossover model). `short_late_window`: under one decade after t_c.
    `law`: the fitted model as a function, log t → log R (the centre of a single curve's bootstrap)."""
    t_c: float
    early_slope: float
    late_slope: float
    sse: float
    model: str = 'restart'
    method: str = 'eq32'
    delta_bic: float = np.nan
    t_max: float = np.nan
    late_decades: float = field(init=False)
    short_late_window: bool = field(init=False)
    law: Callable | None = field(default=None, repr=False, compare=False)  # fitted model: log t -> log R
    def __post_init__(self):
        self.late_decades = float(np.log10(self.t_max / self.t_c)) if self.found else np.nan
        self.short_late_window = bool(self.found and not self.late_decades >= 1)
    @property
    def found(self) -> bool:
        "Whether the data support a crossover at all."
        return self.model != 'none'

def _line(x, y):
    "Least-squares line y ≈ s x + c in closed form, (s, c): `_loglog_ols`'s slope and intercept to round-off, 20x sooner."
    dx = x - x.mean()
    s = (dx * (y - y.mean())).sum() / (dx * dx).sum()
    return s, y.mean() - s * x.mean()

def _eq32_fit(lt, ly, t, y, b):
    "Eq. 32 with the crossover at log-time b: SSE in log R, (early, late slope), fitted log R, law log t → log R."
    early, late = lt < b, lt >= b
    s0, c0 = _line(lt[early], ly[early])
    r_c, t_c = np.exp(c0 + s0 * b), np.exp(b)
    dt, dy = t[late] - t_c, y[late] - r_c
    ok = (dt > 0) & (dy > 0)
    if ok.sum() < 3:
        return np.inf, (s0, np.nan), None, None
    s1, c1 = _line(np.log(dt[ok]), np.log(dy[ok]))
    g = lambda tt, logA, s: np.log(r_c + np.exp(logA) * np.clip(tt - t_c, 0, None) ** s)
    dt, target = np.clip(t[late] - t_c, 0, None), ly[late]          # what `g` recomputed at every evaluation
    with warnings.catch_warnings(), np.errstate(all='ignore'):
        warnings.simplefilter('ignore')                 # MINPACK's Levenberg-Marquardt, as curve_fit calls it
        p, _, _, _, ier = optimize.leastsq(lambda p: np.log(r_c + np.exp(p[0]) * dt ** p[1]) - target, (c1, s1),
                                           full_output=True, maxfev=2000)
    if ier in (1, 2, 3, 4):                             # converged; otherwise keep the log-log start
        c1, s1 = p
    def law(x):
        with np.errstate(divide='ignore'):
            return np.where(x < b, c0 + s0 * x, g(np.exp(x), c1, s1))
    fitted = law(lt)
    return ((fitted - ly)**2).sum(), (s0, s1), fitted, law

def _fit_restart(lt, ly, t, y, min_points, n_candidates):
    "The best eq.-32 crossover: a log-spaced grid of t_c, refined by a bounded scalar search."
    sse = lambda b: _eq32_fit(lt, ly, t, y, b)[0]
    cands = np.linspace(lt[min_points], lt[-min_points - 1], n_candidates)
    i = int(np.argmin([sse(b) for b in cands]))
    lo, hi = cands[max(i - 1, 0)], cands[min(i + 1, len(cands) - 1)]
    b = optimize.minimize_scalar(sse, bounds=(lo, hi), method='bounded', options=dict(xatol=1e-4)).x
    err, slopes, fitted, law = _eq32_fit(lt, ly, t, y, b)
    return err, np.exp(b), slopes, fitted, law


# %%
#| export
def _bend_fits(lt, ly, b, log_width):
    """Smoothly broken power law c + s1·x + (s2 − s1)·h, h = δ log(1 + e^((x − b)/δ)), δ = e^log_width
    (slope s1 well before the break x = b, s2 well after), for arrays of b and log_width: it is linear in
    (c, s1, s2), which are solved exactly. Returns SSE [G], coefficients [G, 3] and fitted values [G, n]."""
    d = np.exp(np.atleast_1d(log_width))[:, None]
    h = d * np.logaddexp(0, (lt - np.atleast_1d(b)[:, None]) / d)          # [G, n]
    A = np.stack([np.ones_like(h), lt - h, h], -1)                          # [G, n, 3]
    coef = np.linalg.solve(A.transpose(0, 2, 1) @ A + 1e-12 * np.eye(3), (A.transpose(0, 2, 1) @ ly)[..., None])
    fitted = (A @ coef)[..., 0]
    return ((fitted - ly)**2).sum(1), coef[..., 0], fitted

def _fit_bend(lt, ly, min_points, rounds: int = 6):
    "Least-squares smoothly broken power law: a grid of breaks and log-widths, zoomed in `rounds` times."
    lo, hi = np.array([lt[min_points], np.log(0.02)]), np.array([lt[-min_points - 1], np.log(3.)])
    centre, span = (lo + hi) / 2, (hi - lo) / 2
    for _ in range(rounds):
        b, w = np.meshgrid(*(np.clip(c + np.linspace(-s, s, 15), l, h) for c, s, l, h in zip(centre, span, lo, hi)))
        centre = np.array([b.ravel(), w.ravel()])[:, np.argmin(_bend_fits(lt, ly, b.ravel(), w.ravel())[0])]
        span = span / 4
    (err,), ((c, s1, s2),), (fitted,) = _bend_fits(lt, ly, *centre)
    b, d = centre[0], np.exp(centre[1])
    return err, np.exp(b), (s1, s2), fitted, lambda x: c + s1 * x + (s2 - s1) * d * np.logaddexp(0, (x - b) / d)

def _bic(sse, n, n_eff, k, floor=1e-4):
    "BIC of a least-squares fit in log R with mean squared residual floored at floor² (numerical noise)."
    return n_eff * np.log(max(sse / n, floor**2)) + k * np.log(n_eff)

def _effective_n(residuals, floor=1e-4):
    "n(1 − ρ)/(1 + ρ), ρ the lag-one autocorrelation of the residuals; n when they are at the numerical floor."
    n = len(residuals)
    if np.sqrt(np.mean(residuals**2)) <= floor:
        return float(n)
    rho = np.corrcoef(residuals[:-1], residuals[1:])[0, 1]
    return float(np.clip(n * (1 - rho) / (1 + rho), 6, n)) if np.isfinite(rho) else float(n)


# %%
#| export
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

def _compare_models(lt, ly, t, ym, min_points, n_candidates, model, min_delta_bic):
    "Fit the crossover models (all, or only `model`); the supported model, ΔBIC and each model's fit."
    fits = {}
    if model in (None, 'restart'):
        fits['restart'] = _fit_restart(lt, ly, t, ym, min_points, n_candidates)
    if model in (None, 'bend'):
        fits['bend'] = _fit_bend(lt, ly, min_points)
    best = min(fits, key=lambda k: fits[k][0])
    if model is not None:
        return model, np.nan, fits
    s, c, _, res = _loglog_ols(lt, ly)
    fits['none'] = ((res**2).sum(), np.nan, (s, s), c + s * lt, lambda x: c + s * x)
    n, n_eff = len(lt), _effective_n(res)
    delta = _bic(fits['none'][0], n, n_eff, 2) - _bic(fits[best][0], n, n_eff, 5)
    return (best if delta > min_delta_bic else 'none'), float(delta), fits

def detect_crossover(t, y, method: str = 'auto', n_candidates: int = 40, min_points: int = 5,
                     n_log_points: int | None = 150, window: float = 0.3, model: str | None = None,
                     min_delta_bic: float = 10.) -> Crossover:
    """Whether R(t) has a crossover (BIC: one power law against eq.-32 restart and smooth bend), which model the
    data support, and where: the supported model's t_c (`method='auto'`), the eq.-32 fit ('eq32'), the bend's
    break ('bend'), or where the local slope last falls below ½ ('slope'). `model` skips the comparison."""
    if method not in ('auto', 'eq32', 'bend', 'slope'):
        raise ValueError(f"method must be 'auto', 'eq32', 'bend' or 'slope', got {method!r}")
    if model not in (None, 'restart', 'bend'):
        raise ValueError(f"model must be None, 'restart' or 'bend', got {model!r}")
    t, y = _check_curve(t, y)
    ym = y.mean(0) if y.ndim == 2 else y
    m = (t > 0) & (ym > 0)
    t, ym = t[m], ym[m]
    idx = log_spaced_indices(t, n_log_points) if n_log_points else np.arange(len(t))
    tf, yf = t[idx], ym[idx]
    if len(tf) < 2 * min_points + 1:
        raise ValueError(f"need at least {2*min_points+1} positive points, got {len(tf)}")
    if model is not None and method == 'slope':      # the model is given: only the local slopes are needed
        return Crossover(*_slope_crossover(t, ym, window), np.nan, model, method, t_max=float(t[-1]))
    lt, ly = np.log(tf), np.log(yf)
    supported, delta, fits = _compare_models(lt, ly, tf, yf, min_points, n_candidates, model, min_delta_bic)
    common = dict(model=supported, method=method, delta_bic=delta, t_max=float(t[-1]))
    if supported == 'none':
        sse, _, (s, _), _, law = fits['none']
        return Crossover(np.nan, float(s), float(s), float(sse), **common, law=law)
    if method == 'slope':
        t_c, s0, s1 = _slope_crossover(t, ym, window)
        return Crossover(t_c, s0, s1, np.nan, **common, law=fits[supported][4])
    located = {'auto': supported, 'eq32': 'restart', 'bend': 'bend'}[method]
    if located not in fits:
        fits[located] = (_fit_restart(lt, ly, tf, yf, min_points, n_candidates) if located == 'restart'
                         else _fit_bend(lt, ly, min_points))
    sse, t_c, (s0, s1), _, law = fits[located]
    return Crossover(float(t_c), float(s0), float(s1), float(sse), **common, law=law)


# %%
#| export
def _slope_crossover(t, ym, window):
    "t_c where the local slope last falls below ½, with the mean local slope before and after it."
    ls = local_slope(t, ym, window)
    if len(ls) < 3:
        raise ValueError("too few points for local slopes: record more steps")
    above = ls.slope.to_numpy() > 0.5
    if above.all() or not above.any():
        raise ValueError(f"no crossover through 1/2: the local slope stays {'above' if above.all() else 'below'} "
                         f"1/2 (range {ls.slope.min():.2f}–{ls.slope.max():.2f})")
    i = np.flatnonzero(above)[-1]                      # last window still super-diffusive
    if i == len(ls) - 1:
        raise ValueError(f"no last crossover through 1/2: the local slope ends above 1/2 ({ls.slope.iloc[-1]:.2f} "
                         f"at t = {ls.t.iloc[-1]:.0f}) after having been below it")
    s0, s1, t0, t1 = ls.slope[i], ls.slope[i + 1], np.log(ls.t[i]), np.log(ls.t[i + 1])
    t_c = float(np.exp(t0 + (s0 - 0.5) / (s0 - s1) * (t1 - t0)))   # linear interpolation in log t
    early, late = ls[ls.t <= t_c].slope, ls[ls.t > t_c].slope
    return t_c, float(early.mean()), float(late.mean())


# %% [markdown]
# The question the issue started from: an exact power law has no crossover, whatever method is asked for.

# %%
t = np.arange(1, 500.)
c = detect_crossover(t, t ** 0.4, method='eq32')
assert not c.found and np.isnan(c.t_c) and abs(c.late_slope - 0.4) < 1e-12, c
c


# %% [markdown]
# Three curves with a known answer, exact and with 2 % multiplicative noise (seed 0): a power law, a restart at
# $t_c = 300$ (eq. 32, ballistic-ish $t^{0.9}$ before, late exponent 0.3), and a smooth bend
# $R = t\,(1 + t/t_0)^{s-1}$ with $s = 0.3$, $t_0 = 100$, whose two asymptotes meet at $t_0$. Each must be
# recognised for what it is, with its break where it was put.

# %%
def restart_curve(t, t_c=300., early=0.9, late=0.3):
    "Paper eq. 32: t^early, frozen at t_c, plus a new walk (t − t_c)^late that starts there."
    return np.minimum(t, t_c) ** early + 1.5 * t_c ** (early - late) * np.clip(t - t_c, 0, None) ** late

def bend_curve(t, t0=100., late=0.3):
    "A smooth bend from slope 1 to slope `late` around t0."
    return t * (1 + t / t0) ** (late - 1)

t = np.arange(1, 20001.)
rng = np.random.default_rng(0)
rows = []
for noise in (0, 0.02):
    for truth, t_c, R in [('none', np.nan, 2 * t ** 0.3), ('restart', 300, restart_curve(t)),
                          ('bend', 100, bend_curve(t))]:
        c = detect_crossover(t, R * np.exp(noise * rng.standard_normal(len(t))))
        assert c.model == truth and (truth == 'none' or abs(c.t_c / t_c - 1) < 0.05), (truth, noise, c)
        rows.append(dict(noise=noise, truth=truth, found=c.model, t_c=c.t_c, delta_bic=c.delta_bic,
                         late_slope=c.late_slope, late_decades=c.late_decades))
pd.DataFrame(rows).round(3)

# %% [markdown]
# A late window shorter than a decade is flagged: the same restart, recorded only up to $t = 2000$ (0.82
# decades after $t_c$):

# %%
t = np.arange(1, 2001.)
c = detect_crossover(t, restart_curve(t))
assert c.model == 'restart' and c.short_late_window and 0.8 < c.late_decades < 0.85, c
c


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
    """Fit paper eq. 32 after `t_c`: R(t) − r(t_c) ~ (t − t_c)^slope, skipping the first `skip` of log-time.
    Its interval holds t_c and r(t_c) fixed; `fit_late_exponent` gives one that does not."""
    t, y = _check_curve(t, y)
    if not np.isfinite(t_c):
        raise ValueError("t_c is not finite: no crossover was found, so fit the whole curve with fit_power_law")
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
# On the restart curve, the eq.-32 fit recovers the late exponent, while a plain log–log fit after $t_c$ does not,
# because of the frozen offset $r(t_c)$:

# %%
t = np.arange(1, 20001.)
R = restart_curve(t)
c = detect_crossover(t, R, method='eq32')
late = fit_after_crossover(t, R, c.t_c)
naive = fit_power_law(t, R, t_min=c.t_c)
assert abs(c.t_c / 300 - 1) < 0.05 and abs(late.slope - 0.3) < 0.01, (c, late.slope)
assert abs(naive.slope - 0.3) > 0.03, naive.slope
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.loglog(t, R, 'k', lw=2, label='restart at $t_c$ = 300, late exponent 0.3')
ax.axvline(c.t_c, ls=':', c='gray', label=f'detected $t_c$ = {c.t_c:.0f}')
tt = t[t > c.t_c]
ax.loglog(tt, np.interp(c.t_c, t, R) + np.exp(late.intercept) * (tt - c.t_c) ** late.slope, 'C1--',
          label=f'eq. 32 fit, slope {late.slope:.3f}')
ax.loglog(tt, naive.predict(tt), 'C0:', label=f'log-log fit after $t_c$, slope {naive.slope:.3f}')
ax.set_xlabel('t (SGD steps)')
ax.set_ylabel('R(t) (weight-space distance)')
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# On a smooth bend, `method='slope'` puts $t_c$ where the local slope $1 - (1-s)\frac{t/t_0}{1+t/t_0}$ equals ½,
# at $t = t_0/(1-2s)$, i.e. 250 for $s = 0.3$, $t_0 = 100$:

# %%
ts = np.arange(1, 50001.)
cs = detect_crossover(ts, bend_curve(ts), method='slope')
assert cs.model == 'bend' and abs(cs.t_c / 250 - 1) < 0.02, cs
assert abs(fit_power_law(ts, bend_curve(ts), t_min=100 * cs.t_c).slope - 0.3) < 0.01
cs

# %% [markdown]
# ## One late exponent, with an honest interval
#
# After $t_c$ there are two estimators of the late exponent $1/d_\text{walk}$, and they answer different
# questions. The **log–log slope** on $t \ge t_c$ (paper eq. 17, restricted) is right when the curve is a power
# law there, as after a bend that has finished bending. The **eq.-32 fit** subtracts the frozen $r(t_c)$ and is
# right when the walk restarts at $t_c$; on a smooth bend it reads the still-steep stretch after $t_c$ as the
# start of a new walk and comes out too high. `fit_late_exponent` therefore reports the estimator of the model
# the data support (eq. 32 after a restart, the log–log slope after a bend) and gives the other as a check.
#
# Its interval must include the uncertainty of where the late window starts. Each bootstrap replicate redraws
# the data (whole runs when `y` holds several, otherwise moving blocks of the residuals about the fitted
# crossover model), **re-detects $t_c$** on the replicate with the same model and method, and refits both
# estimators after that $t_c$. A fit that holds $t_c$ and $r(t_c)$ fixed (as `fit_power_law` and
# `fit_after_crossover` alone do) leaves that part out.

# %%
#| export
LATE_ESTIMATORS = {'loglog': 'log-log slope after t_c (eq. 17)', 'eq32': 'eq. 32 fit after t_c'}

@dataclass
class LateExponent:
    """Result of `fit_late_exponent`: the reported late exponent (`estimator`) with its bootstrap interval, the
    other estimator as a check, t_c with its interval, and whether the late window is too short (< 1 decade)."""
    slope: float
    ci_low: float
    ci_high: float
    estimator: str
    check_slope: float
    check_ci_low: float
    check_ci_high: float
    check_estimator: str
    t_c: float
    t_c_ci_low: float
    t_c_ci_high: float
    model: str
    late_decades: float
    short_late_window: bool
    n_boot: int                                   # replicates in which t_c could be re-detected

def _late_slopes(t, y, t_c):
    "Both late estimators after t_c."
    return dict(loglog=fit_power_law(t, y, t_min=t_c, n_boot=0).slope,
                eq32=fit_after_crossover(t, y, t_c, n_boot=0).slope)

def _model_curve(t, y, c):
    "The fitted crossover model of `c` at every positive point of one curve `y`: the centre of its bootstrap."
    keep = (t > 0) & (y > 0)
    return t[keep], y[keep], np.exp(c.law(np.log(t[keep])))

def _replicates(t, y, c, n_boot, rng):
    "Bootstrap copies of the data: whole runs resampled, or moving blocks of log residuals about the fitted model."
    if y.ndim == 2:
        for _ in range(n_boot):
            yield t, y[rng.integers(0, len(y), len(y))]
        return
    t, y, fitted = _model_curve(t, y, c)
    res, b = np.log(y / fitted), max(1, int(round(len(t) ** (1 / 3))))
    for _ in range(n_boot):
        starts = rng.integers(0, len(t) - b + 1, int(np.ceil(len(t) / b)))
        yield t, fitted * np.exp(np.concatenate([res[i:i + b] for i in starts])[:len(t)])

def _estimates(t, y, c):
    "t_c re-detected with the model and method of `c`, and both late estimators after it."
    cb = detect_crossover(t, y, method=c.method, model=c.model)
    return dict(t_c=cb.t_c, **_late_slopes(t, y, cb.t_c))


# %%
#| export
def fit_late_exponent(t, y, crossover: Crossover | None = None, estimator: str | None = None, n_boot: int = 200,
                      seed: int = 0, level: float = 0.95, method: str = 'auto') -> LateExponent:
    """The late exponent by the estimator the crossover model calls for ('eq32' after a restart, 'loglog' after a
    bend; or `estimator`), the other as a check; bootstrap intervals that re-detect t_c in every replicate."""
    t, y = _check_curve(t, y)
    c = crossover if crossover is not None else detect_crossover(t, y, method=method)
    if not c.found:
        raise ValueError("no crossover: the data support one power law, whose exponent is fit_power_law(t, y)")
    if y.ndim == 1 and c.law is None:
        raise ValueError("a single curve is bootstrapped about its fitted crossover model: pass the Crossover "
                         "returned by detect_crossover")
    est = estimator or ('eq32' if c.model == 'restart' else 'loglog')
    if est not in LATE_ESTIMATORS:
        raise ValueError(f"estimator must be one of {list(LATE_ESTIMATORS)}, got {est!r}")
    other = 'eq32' if est == 'loglog' else 'loglog'
    point = dict(t_c=c.t_c, **_late_slopes(t, y, c.t_c))
    shift = {k: 0. for k in point}                  # one curve: its replicates scatter about the fitted model,
    if y.ndim == 1 and n_boot:                      # so their spread is centred on the model's own estimates
        centre = _estimates(*_model_curve(t, y, c)[::2], c)
        shift = {k: point[k] - centre[k] for k in point}
    boots = []
    for tb, yb in _replicates(t, y, c, n_boot, np.random.default_rng(seed)):
        try:
            boots.append({k: v + shift[k] for k, v in _estimates(tb, yb, c).items()})
        except ValueError:
            continue                                  # no t_c in this replicate: counted in n_boot
    if n_boot and len(boots) < 0.9 * n_boot:
        warnings.warn(f"t_c was re-detected in only {len(boots)} of {n_boot} bootstrap replicates: "
                      "the interval is unreliable")
    q = _interval_quantiles(level, len(y) if y.ndim == 2 else None)
    ci = (pd.DataFrame(boots).quantile(q) if boots else pd.DataFrame(np.nan, q, ['t_c', *LATE_ESTIMATORS]))
    return LateExponent(float(point[est]), *map(float, ci[est]), LATE_ESTIMATORS[est],
                        float(point[other]), *map(float, ci[other]), LATE_ESTIMATORS[other],
                        float(c.t_c), *map(float, ci['t_c']), c.model, c.late_decades, c.short_late_window,
                        len(boots))


# %% [markdown]
# Twenty noisy runs of the restart curve (each run scaled by its own factor $e^{0.1 z}$, times 3 % noise per
# point; seed 0): the supported model is the restart, so eq. 32 is the reported estimator and its interval must
# hold the true 0.3; the log–log slope, which is biased here, comes as the check. (Whether such intervals hold
# the truth as often as they say is measured below.)

# %%
t = np.unique(np.geomspace(1, 2e4, 120).round())
rng = np.random.default_rng(0)
runs = restart_curve(t) * np.exp(0.1 * rng.standard_normal((20, 1)) + 0.03 * rng.standard_normal((20, len(t))))
late = fit_late_exponent(t, runs, n_boot=100)
assert late.model == 'restart' and late.estimator == LATE_ESTIMATORS['eq32'], late
assert late.ci_low < 0.3 < late.ci_high and abs(late.t_c / 300 - 1) < 0.05, late
assert not late.ci_low < late.check_slope < late.ci_high and not late.short_late_window, late
late

# %% [markdown]
# ## How biased is each estimator on a short window?
#
# A late window of a fraction of a decade is common (the moons study of paper fig. 1 has about 0.35 decades
# after $t_c$). The table below measures each estimator's bias, estimate minus true late exponent 0.3, on exact
# curves recorded at every step from $t = 1$ to $10^{L}$ decades after $t_c = 100$: a pure power law $t^{0.3}$
# (the "crossover" is just where the window starts), a sharp restart (eq. 32, $t^{0.9}$ before), and a smooth
# bend $t(1 + t/t_0)^{-0.7}$ with $t_0 = 40$, whose local slope falls through ½ at $t_c = 100$ and tends to 0.3.
# The first two columns use the true $t_c$; the third is what `fit_late_exponent` reports when it must find the
# crossover, the model and the estimator itself (`method='auto'`).

# %%
LATE, T_C = 0.3, 100.
SHAPES = {
    'power law': lambda t: t ** LATE,
    'sharp restart': lambda t: restart_curve(t, T_C, 0.9, LATE),
    'smooth bend': lambda t: t * (1 + t / (T_C * (1 - 2 * LATE))) ** (LATE - 1),
}
rows = []
for shape, curve in SHAPES.items():
    for decades in [0.35, 0.5, 1, 1.5, 2, 3]:
        t = np.arange(1, T_C * 10 ** decades + 1)
        R, c = curve(t), detect_crossover(t, curve(t))
        reported = fit_late_exponent(t, R, c, n_boot=0) if c.found else None
        rows.append({'curve': shape, 'late decades': decades,
                     'log-log (eq. 17)': fit_power_law(t, R, t_min=T_C, n_boot=0).slope - LATE,
                     'eq. 32': fit_after_crossover(t, R, T_C, n_boot=0).slope - LATE,
                     'reported': (reported.slope if c.found else c.late_slope) - LATE, 'model found': c.model,
                     'estimator': reported.estimator if c.found else 'fit_power_law (no crossover)'})
bias = pd.DataFrame(rows)
exact = bias['curve'] == 'power law'
assert (bias[exact]['model found'] == 'none').all()
assert np.allclose(bias[exact][['log-log (eq. 17)', 'reported']], 0, atol=1e-9)
restart = bias[bias['curve'] == 'sharp restart']
assert (restart['model found'] == 'restart').all() and (restart['reported'].abs() < 0.01).all(), restart
bend = bias[bias['curve'] == 'smooth bend']
assert (bend['model found'] == 'bend').all() and (bend['log-log (eq. 17)'] < bend['eq. 32']).all(), bend
bias.round(3)

# %%
fig, axes = plt.subplots(1, 3, figsize=(10, 3.2), sharey=True)
for ax, (shape, d) in zip(axes, bias.groupby('curve', sort=False)):
    for col, style in [('log-log (eq. 17)', 'C0o-'), ('eq. 32', 'C1s-'), ('reported', 'kx')]:
        ax.plot(d['late decades'], d[col], style, label=col + (' (true $t_c$)' if col != 'reported' else ''))
    ax.axhline(0, color='gray', lw=1)
    ax.axvline(1, color='gray', ls=':', lw=1)
    ax.set(title=shape, xlabel='late window (decades after $t_c$)')
axes[0].set_ylabel('bias of the late exponent')
axes[0].legend(fontsize=7)
fig.tight_layout()
plt.show()


# %% [markdown]
# How to read it:
#
# * **Power law.** The log–log slope is exact on any window; eq. 32 subtracts an offset the curve does not
#   have and is badly biased upwards (+0.5 on 0.35 decades, still +0.03 on three). `detect_crossover` finds no
#   crossover here, so what is reported is the slope of the one power law, exact.
# * **Sharp restart.** Eq. 32 is exact on every window; the log–log slope is off in either direction (+0.32 on
#   0.35 decades, −0.04 on two) because of the frozen $r(t_c)$. The model comparison picks the restart, and
#   the reported value is eq. 32's, within 0.006 of the truth.
# * **Smooth bend.** Neither estimator is unbiased on a short window, because the curve is still bending: the
#   local slope only approaches its asymptote over about two decades. The log–log slope is the lesser evil
#   (+0.15 on 0.35 decades against eq. 32's +0.47) and is what is reported; the reported value uses the bend's
#   own break ($t_0 = 40$ here), earlier than the slope-½ time, and is a little more biased still (+0.20).
#   Under one decade, the late exponent of a bend is the mean slope over the window; while the local slope is
#   still falling, that is an upper bound on the asymptotic exponent rather than a measurement of it. This is
#   what `short_late_window` warns about.

# %% [markdown]
# ## Do the intervals cover the truth?
#
# An interval is honest when a nominal 90 % interval holds the true exponent in 90 % of repeated experiments.
# `coverage_experiment` builds such experiments: ensembles of 20 runs, each the exact curve times its own
# factor $e^{0.1 z}$ (run-to-run scale) and 3 % independent noise per point, recorded at 100 log-spaced times
# up to $10^4$, with a crossover at $t_c = 100$ and true late exponent 0.3. Two shapes: a sharp restart (eq. 32,
# where the reported estimator is eq. 32) and a sharp bend (a broken power law, where it is the log–log slope).
# For each ensemble it records whether `fit_late_exponent`'s interval holds 0.3, and whether the interval of
# the same estimator with $t_c$ and $r(t_c)$ held fixed (`fit_after_crossover` / `fit_power_law` alone) does.

# %%
def coverage_experiment(shape: str, n_sets: int, n_boot: int, seed: int = 0, level: float = 0.9, n_runs: int = 20):
    """Coverage of the late-exponent interval on `n_sets` synthetic ensembles of `n_runs` noisy runs (true late
    exponent 0.3, crossover at 100): `fit_late_exponent` (t_c re-detected per replicate) against the interval of
    the same estimator with t_c and r(t_c) held fixed."""
    curve = {'sharp restart': lambda t: restart_curve(t, 100., 0.9, 0.3),
             'sharp bend': lambda t: np.where(t < 100, t ** 0.9, 100 ** 0.9 * (t / 100) ** 0.3)}[shape]
    t = np.unique(np.geomspace(1, 1e4, 100).round())
    rng, rows = np.random.default_rng(seed), []
    for i in range(n_sets):
        noise = 0.1 * rng.standard_normal((n_runs, 1)) + 0.03 * rng.standard_normal((n_runs, len(t)))
        runs = curve(t) * np.exp(noise)                                   # [runs, times]
        c = detect_crossover(t, runs)
        late = fit_late_exponent(t, runs, c, n_boot=n_boot, seed=i, level=level)
        kw = dict(n_boot=n_boot, seed=i, level=level)
        fixed = (fit_after_crossover(t, runs, c.t_c, **kw) if late.estimator == LATE_ESTIMATORS['eq32']
                 else fit_power_law(t, runs, t_min=c.t_c, **kw))
        rows.append(dict(curve=shape, model=c.model, slope=late.slope, ci_low=late.ci_low, ci_high=late.ci_high,
                         fixed_ci_low=fixed.ci_low, fixed_ci_high=fixed.ci_high))
    d = pd.DataFrame(rows)
    d['covered'] = (d.ci_low <= 0.3) & (0.3 <= d.ci_high)
    d['fixed_covered'] = (d.fixed_ci_low <= 0.3) & (0.3 <= d.fixed_ci_high)
    return d


# %%
#| heavy
coverage = pd.concat([coverage_experiment(shape, n_sets=100, n_boot=100, seed=0, level=0.9)
                      for shape in ('sharp restart', 'sharp bend')])
coverage.groupby('curve').agg(covered=('covered', 'mean'), fixed_covered=('fixed_covered', 'mean'),
                              sd_of_estimates=('slope', 'std'))


# %% [markdown]
# Measured with the cell above (100 ensembles per shape, 100 bootstrap replicates each, nominal level 90 %,
# data seed 0, bootstrap seed = ensemble index; 9 minutes for the restart and 6 for the bend on the shared
# 2-core development CPU, 2026-11-23). If an interval covers at its stated 90 %, the number of hits out of 100
# lies in [82, 97] with probability 99 % (binomial).
#
# | curve | reported estimator | covered (t_c re-detected) | covered (t_c, r(t_c) fixed) | SD of estimates | mean width, re-detected | mean width, fixed | width a 90 % interval needs (2 × 1.645 × SD) |
# |---|---|---|---|---|---|---|---|
# | sharp restart | eq. 32 | 85 / 100 | 100 / 100 | 0.00133 | 0.00437 | 0.01025 | 0.00438 |
# | sharp bend | log-log | 82 / 100 | 82 / 100 | 0.00074 | 0.00231 | 0.00231 | 0.00245 |
#
# How to read it:
#
# * **Width.** Re-detecting $t_c$ and refitting $r(t_c)$ in every replicate gives intervals of the right width
#   on average (1.00 and 0.94 of what the spread of the estimates calls for). Holding them fixed gives, on the
#   restart, intervals 2.3 times too wide: each resampled ensemble has its own overall scale, and subtracting
#   the original $r(t_c)$ from it bends the late curve. On the sharp bend the two agree, because $t_c$ is
#   found to within a step of the log-spaced record and the same points enter the late window either way.
# * **Coverage** is 85 % and 82 % where 90 % is stated: inside the binomial range, but at its lower end, and
#   both misses are balanced between the two sides (8 above / 7 below; 11 / 7), so the estimates are not
#   biased. The shortfall comes from the interval's width varying from ensemble to ensemble: with 20 runs the
#   bootstrap spread is itself uncertain, and with 100 replicates the 3.8 % tails rest on about four
#   replicates each. More replicates (the default is 200) and more runs narrow the gap; the expanded interval
#   already corrects the plug-in variance of 20 runs. Re-measured on the bend with the default 200 replicates
#   (`coverage_experiment('sharp bend', 100, 200)`, same seeds; 11 minutes, 2026-11-23): 85 / 100, mean width
#   0.00234 (0.95 of what is needed), misses 9 above and 6 below. At a true 90 %, 85 or fewer hits has binomial
#   probability 7 %, and 82 or fewer 1 %: what remains is a width a few percent short, within what 100
#   ensembles can resolve, and not pinned down further here.
#
# `tests/test_crossover.py` checks the coverage on a smaller experiment of the same kind (40 ensembles, seed 3;
# pass if at least 31 of 40 nominal 90 % intervals hold the truth, a shortfall with binomial probability 0.5 %
# at the stated rate) and that the intervals are not bought by width.

# %% [markdown]
# ### One curve
#
# A single curve has no runs to resample. Its replicates are the fitted crossover model plus moving blocks
# (about $n^{1/3}$ points long) of the log residuals about it, and the spread of the estimates over replicates is
# centred on the estimates of the model itself. `single_curve_coverage` measures how often such intervals hold
# the truth: curves recorded at every step to $t_\text{max}$ with 2 % independent noise, either the restart of
# `restart_curve` ($t_c = 300$, $t^{0.9}$ then late exponent 0.3) or a sharp bend at 300 with the same
# exponents.

# %%
def single_curve_coverage(shape: str, n_curves: int, n_boot: int, seed: int = 0, level: float = 0.9,
                          t_max: float = 2e4, noise: float = 0.02) -> pd.DataFrame:
    """Coverage of `fit_late_exponent`'s interval on `n_curves` single noisy curves of `shape` ('sharp restart'
    or 'sharp bend', crossover at 300, true late exponent 0.3), with t_c and its interval too."""
    curve = {'sharp restart': lambda t: restart_curve(t, 300., 0.9, 0.3),
             'sharp bend': lambda t: np.where(t < 300, t ** 0.9, 300 ** 0.9 * (t / 300) ** 0.3)}[shape]
    t = np.arange(1, t_max + 1)
    rng, rows = np.random.default_rng(seed), []
    for i in range(n_curves):
        y = curve(t) * np.exp(noise * rng.standard_normal(len(t)))
        late = fit_late_exponent(t, y, detect_crossover(t, y), n_boot=n_boot, seed=i, level=level)
        rows.append(dict(curve=shape, model=late.model, slope=late.slope, ci_low=late.ci_low, ci_high=late.ci_high,
                         t_c=late.t_c, t_c_ci_low=late.t_c_ci_low, t_c_ci_high=late.t_c_ci_high))
    d = pd.DataFrame(rows)
    d['covered'] = (d.ci_low <= 0.3) & (0.3 <= d.ci_high)
    d['t_c_covered'] = (d.t_c_ci_low <= 300) & (300 <= d.t_c_ci_high)
    d['width'] = d.ci_high - d.ci_low
    return d


# %%
#| heavy
single = pd.concat([single_curve_coverage('sharp restart', 40, 50, seed=0),
                    single_curve_coverage('sharp bend', 40, 50, seed=1)])
single.groupby('curve').agg(covered=('covered', 'sum'), t_c_covered=('t_c_covered', 'sum'),
                            sd_of_estimates=('slope', 'std'), mean_width=('width', 'mean'))


# %% [markdown]
# Measured with the cell above (40 curves per shape, 50 replicates each, nominal 90 %, bootstrap seed = curve
# index; 6 minutes for the restart and 2 for the bend on the shared 2-core development CPU, 2026-11-23). If
# the intervals cover at their stated 90 %, 31 or more of 40 hold the truth with probability 99.5 %.
#
# | curve | data seed | covered | t_c interval holds 300 | SD of estimates | mean width | width a 90 % interval needs (2 × 1.645 × SD) |
# |---|---|---|---|---|---|---|
# | sharp restart | 0 | 35 / 40 | 36 / 40 | 0.00189 | 0.00793 | 0.00621 |
# | sharp bend | 1 | 35 / 40 | 34 / 40 | 0.00019 | 0.00057 | 0.00061 |
# | sharp restart, recorded to 10⁴ only | 1 | 33 / 40 | not recorded | 0.0093 | 0.0263 | 0.0307 |
#
# **What was wrong, and what changed.** Until this version the restart row read 30 / 40 (75 %), with intervals
# 0.86 of the width they need, while the interval of $t_c$ itself held 300 in 36 of 40 curves. On a restart the
# estimates of $t_c$ and of the late exponent are tightly linked (correlation 0.85 over the 40 curves): eq. 32
# fits $\log(t - t_c)$, so the first points after $t_c$ weigh most, and a $t_c$ off by one step moves the
# exponent by about 0.002. The interval has to carry that, and so the replicates must reproduce the curve just
# after $t_c$. They did not: their centre was the fitted model *interpolated* in log–log between the 150
# points of the fit grid (about 20 steps apart at $t = 300$), which rounds off the sharp rise right after a
# restart. On that rounded curve the replicates found $t_c$ as precisely as the data allow, but their late
# exponent depended less on it, and its spread came out too small. A `Crossover` now keeps the fitted model
# as a function of $\log t$ (its field `law`), and the replicates are built on it at every recorded point.
# Nothing was widened or tuned: no factor was fitted to these curves, and the intervals are now a little wider
# than needed on average (1.28 times). The remaining misses are curves whose $t_c$ is itself off by one to two
# steps, where the interval of $t_c$ misses too. The residual block length (about $n^{1/3}$ = 27 points) was
# left as it was: with independent noise it is not what limits the interval.
#
# **Where $t_c$ can be located limits the exponent.** `detect_crossover` fits its models on 150 log-spaced
# points, and what pins a restart's $t_c$ is the first of them after it. Recorded to $2\cdot 10^4$, that point
# is $t = 304$; recorded only to $10^4$, it is 314, $t_c$ is found less precisely, and the eq.-32 exponent,
# sensitive to $t_c$ as above, scatters five times more (last row). The interval widens with it, though not
# quite enough (0.86 of the width needed), and held the truth in 33 of 40 (33 or fewer has probability 10 % at
# a true 90 %).
#
# `tests/test_crossover.py` checks single-curve coverage on 40 restart curves of data seed 1 (pass at 31 or more
# of 40).

# %% [markdown]
# ## Predicting the displacement
#
# If late SGD is a fractal walk, the exponent fitted on the early part of a run should predict where the run
# goes next (paper appendix I.1, fig. 14–15, 18). `predict_displacement` fits the first `fit_fraction` of the
# recorded time span, extrapolates the rest, and scores the prediction with $R^2$ on the held-out part. Without
# `t_c` the fit is one power law (the spectral chapter's `fit_power_law`); with it, the fit follows eq. 32 after
# the crossover (`fit_after_crossover`, offset $r(t_c)$ included), which is why the function lives here.

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
        r_c = _eq32_offset(t[t <= t_split], ym[t <= t_split], t_c)     # the offset the fit subtracted
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
R = restart_curve(t, 300.)                               # late exponent 0.3 after a restart at 300
q = predict_displacement(t, R, t_c=300.)
assert q.attrs['r2'] > 0.999 and abs(q.attrs['slope'] - 0.3) < 0.01, q.attrs
assert predict_displacement(t, R).attrs['r2'] < q.attrs['r2']
p.attrs, q.attrs

# %%
#| hide
import nbdev
nbdev.nbdev_export()
