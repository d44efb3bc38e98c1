# %% [markdown]
# # Localization
#
# > How an LLC estimate depends on the localization γ: the systematic error `estimate_llc` measures with every automatic estimate, a sweep over γ, the plateau test, and the sensitivity check.

# %%
#| default_exp llc.localization

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import math, warnings

import pandas as pd
from torch import nn

from fracsgd.llc.estimate import calibrate_step_size, estimate_llc
from fracsgd.llc.result import MIN_RELAXATIONS, SENSITIVITY_FACTOR
from fracsgd.llc.sgld import SGLDSettings

# %%
import numpy as np
import matplotlib.pyplot as plt
from fracsgd.nets.models import make_dln, dln_data
from fracsgd.llc.sgld import default_n_beta
from fracsgd.llc.estimate import calibrate_at_curvature

# %% [markdown]
# The [LLC chapter](llc.html) samples the localized tempered posterior
# $p(w)\propto\exp\{-n\beta L_n(w)-\tfrac\gamma2\|w-w^*\|^2\}$ (Lau et al. 2024, eq. 7). The learning coefficient
# is a property of $w^*$; $\gamma$ is ours. This chapter measures how much an estimate depends on it. The
# example throughout is linear regression $\mathbb R^{10}\to\mathbb R^3$ at its true weights (a one-layer DLN,
# $d/2 = 15$), as in the LLC chapter.

# %%
reg = make_dln([10, 3], 3, seed=0)                     # one layer: linear regression at its true weights
X_reg, y_reg = dln_data(reg, 4000)
nb = default_n_beta(len(X_reg))

# %% [markdown]
# On the regular model of this chapter (noiseless targets, so $\lambda = d/2 = 15$ exactly) the automatic setting's
# two estimates hardly differ: the localization holds no direction the likelihood does not, and the interval is
# the Monte-Carlo one plus a little:

# %%
auto = calibrate_at_curvature(reg, (X_reg, y_reg), 'regression', n_burnin=1000, n_draws=2000)
with_sys = estimate_llc(reg, (X_reg, y_reg), 'regression', auto)
d_sys = with_sys.diagnostics.iloc[0]
print(f"LLC {with_sys.llc:.2f} [{with_sys.llc_low:.2f}, {with_sys.llc_high:.2f}] (truth 15); at gamma {d_sys.llc_raw:.2f}, "
      f"at 3 gamma {d_sys.llc_stronger:.2f}")
assert auto.systematic and with_sys.llc_low <= 15 <= with_sys.llc_high and abs(d_sys.llc_shift) < 0.05
with_sys.diagnostics[['llc_raw', 'llc_raw_se', 'llc_stronger', 'llc_shift', 'llc', 'llc_low', 'llc_high',
                      'systematic', 'flagged']]


# %% [markdown]
# The localization $\gamma$ trades bias against mixing: too large, and it competes with the likelihood and
# shrinks the estimate (app. H.3); too small, and directions held only by $\gamma$ relax slowly, in about
# $2/(\epsilon\gamma)$ steps. `localization_sweep` estimates the LLC over a grid of $\gamma$ (the step size
# calibrated for each, unless `step_size=` fixes it) and `plateau_test` finds the longest run of neighbouring
# values that agree within a relative tolerance or two standard errors.

# %%
#| export
def localization_sweep(model: nn.Module, data, loss='classification', localizations=(1, 3, 10, 30, 100), *,
                       stiffness: float = 0.05, settings: SGLDSettings | None = None, device=None,
                       **changes) -> pd.DataFrame:
    """The LLC for each localization gamma, one row each.
    `changes` go to `settings` (default `SGLDSettings()`); the step size is calibrated for each gamma with
    `stiffness`, unless `settings` is given (its step sizes are kept) or `changes` hold a `step_size`."""
    rows = []
    for gamma in localizations:
        eps = changes.get('step_size') or (settings.step_size if settings is not None else None)
        if not eps:
            eps = calibrate_step_size(model, data, loss, localization=gamma, stiffness=stiffness,
                                      n_beta=changes.get('n_beta'), device=device)
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            r = estimate_llc(model, data, loss, settings, device=device,
                             **{**changes, 'step_size': eps, 'localization': gamma})
        d = r.diagnostics.iloc[0]
        rows.append(dict(localization=gamma, step_size=eps, llc=d.llc, llc_se=d.llc_se,
                         mala_acceptance=d.mala_acceptance, distance=d.distance, drift_z=d.drift_z))
    return pd.DataFrame(rows)

def plateau_test(sweep: pd.DataFrame, rel_tol: float = 0.05, n_se: float = 2.0) -> dict:
    """The longest run of neighbouring localizations whose estimates agree within `rel_tol` or `n_se`
    standard errors: its range, its smallest gamma (least bias from localization), its mean LLC, and
    whether there is one."""
    s = sweep.sort_values('localization').reset_index(drop=True)
    if len(s) < 2:
        raise ValueError("plateau_test needs a sweep over at least 2 localizations")
    def agree(i):
        scale = rel_tol * abs(s.llc[i:i + 2]).mean()
        return abs(s.llc[i + 1] - s.llc[i]) <= max(scale, n_se * math.hypot(s.llc_se[i], s.llc_se[i + 1]))
    best, run = (0, -1), None
    for i in range(len(s) - 1):
        run = ((run[0] if run else i), i) if agree(i) else None
        if run and run[1] - run[0] > best[1] - best[0]:
            best = run
    found = best[1] >= best[0]
    lo, hi = (best[0], best[1] + 1) if found else (0, 0)
    return dict(found=found, localization=float(s.localization[lo]), low=float(s.localization[lo]),
                high=float(s.localization[hi]), llc=float(s.llc[lo:hi + 1].mean()))


# %%
toy = pd.DataFrame(dict(localization=[1, 3, 10, 30, 100, 300], llc=[20.0, 15.2, 15.0, 14.9, 13.0, 9.0],
                        llc_se=[0.1] * 6))
pt = plateau_test(toy)
assert pt['found'] and (pt['low'], pt['high']) == (3, 30) and pt['localization'] == 3
sweep = localization_sweep(reg, (X_reg, y_reg), 'regression', localizations=(1, 10, 100, 1000, 10000),
                           stiffness=0.05, n_chains=2, n_draws=200, n_burnin=50, batch_size=500)
pt = plateau_test(sweep)
assert pt['found'] and pt['low'] <= 10 and abs(pt['llc'] - 15) < 2   # regular model: d/2 until gamma ~ n*beta
fig, ax = plt.subplots(figsize=(5, 3))
ax.errorbar(sweep.localization, sweep.llc, 2 * sweep.llc_se, marker='o', capsize=3, label='estimate ± 2 SE')
ax.axhline(15, color='r', ls='--', label='d/2 = 15')
ax.axvspan(pt['low'], pt['high'], alpha=0.15, label='plateau')
ax.set(xscale='log', xlabel=r'localization $\gamma$', ylabel=r'$\hat\lambda$', title='localization sweep')
ax.legend(fontsize=8)
sweep

# %% [markdown]
# ### Is the estimate on a plateau? Localization sensitivity
#
# A sweep is the thorough check; `localization_sensitivity` is the cheap one, meant for every estimate one
# reports. It repeats the estimate with the localization multiplied by each of a few `factors` (same step
# sizes, chains, draws and seed) and flags the estimate when one of them moves it by more than `tolerance`, or
# when the run is too short for the check to mean anything: below `MIN_RELAXATIONS` relaxation times
# $1/(\epsilon\gamma)$ (with RMSprop, of its largest step) the chains have not yet felt the localization, and no
# factor moves them much.
# The reasoning: the LLC is a property of $w^*$, not of $\gamma$. An estimate that sits on a plateau in
# $\gamma$ hardly moves when $\gamma$ changes by a factor of a few; one that moves by more than the accuracy
# one wants cannot be trusted to that accuracy at either $\gamma$, whichever way the error goes: a chain that
# drifts along the singular set to less singular points overestimates and is pulled back by a stronger
# localization; a chain squeezed by the localization underestimates and is squeezed further. A larger factor
# (rather than a smaller one) keeps the run's length enough: directions held only by $\gamma$ relax in
# $2/(\epsilon\gamma)$ steps, so the chains of the stronger localization relax faster than those of the
# estimate itself. It costs one more estimate per factor (and one more for the estimate itself, unless `base`
# gives it). `SENSITIVITY_FACTOR` and `SENSITIVITY_TOLERANCE` were chosen on the tuning part of the
# [validation set](llc_validation.html), which also reports how often the flag is right on the held-out part.

# %%
#| export
SENSITIVITY_TOLERANCE = 0.1     # relative change of the estimate above which it is flagged (set on the tuning part)

def localization_sensitivity(model: nn.Module, data, loss='classification', settings: SGLDSettings | None = None,
                             *, factors=(SENSITIVITY_FACTOR,), tolerance: float = SENSITIVITY_TOLERANCE,
                             base: float | None = None, device=None, **changes) -> dict:
    """How much the LLC estimate under `settings` (with `changes`) moves when its localization is multiplied by
    each of `factors`: the relative `shifts`, their largest size, `flagged` when it exceeds `tolerance`, the
    advice, and the sweep. Costs one more `estimate_llc` per factor, plus one when `base` (the estimate at
    `settings`) is not given."""
    settings = (settings or SGLDSettings()).replace(**changes)
    factors = tuple(float(f) for f in factors)
    if not factors or any(not (math.isfinite(f) and f > 0 and f != 1) for f in factors):
        raise ValueError(f"factors must be positive numbers other than 1, got {factors}")
    if not (math.isfinite(tolerance) and tolerance > 0):
        raise ValueError(f"tolerance must be a positive relative change, got {tolerance!r}")
    gammas = ([] if base is not None else [settings.localization]) + [settings.localization * f for f in factors]
    sweep = localization_sweep(model, data, loss, gammas, settings=settings, device=device)
    llc = float(base) if base is not None else float(sweep.llc.iloc[0])
    shifts = {f: float(v) / llc - 1 if llc > 0 else float('nan') for f, v in zip(factors, sweep.llc.iloc[-len(factors):])}
    worst = max(shifts.items(), key=lambda kv: abs(kv[1]) if math.isfinite(kv[1]) else math.inf)
    relax = settings.flat_step_size * settings.localization * settings.n_steps
    moved, blind = not math.isfinite(worst[1]) or abs(worst[1]) > tolerance, relax < MIN_RELAXATIONS
    problem = '; '.join(
        ([f'localization sensitivity: the estimate moves by {worst[1]:+.0%} when the localization is multiplied '
          f'by {worst[0]:g} (tolerance {tolerance:.0%}): it is not on a plateau in the localization and cannot be '
          f'trusted to better than that; find a plateau with localization_sweep and plateau_test (with >= 3 '
          f'relaxation times 2/(step_size*localization) at the smallest)'] if moved else [])
        + ([f'localization sensitivity cannot be judged: the run covers {relax:.2g} < {MIN_RELAXATIONS:g} '
            f'relaxation times 1/(step_size*localization), so the chains have not felt the localization; run more '
            f'steps'] if blind else []))
    return dict(llc=llc, shifts=shifts, max_shift=abs(worst[1]), relaxations=relax, flagged=moved or blind,
                problem=problem, sweep=sweep)


# %% [markdown]
# On the regular model above, whose $\lambda = d/2 = 15$ does not depend on $\gamma$ while $\gamma\ll n\beta h$
# ($\approx 480$ here), a threefold localization leaves the estimate where it is (it moves by about
# $-\gamma/(n\beta h) \approx -2\%$), over a run of 3 relaxation times; a run of a tenth of that is flagged as too
# short to judge:

# %%
sens = localization_sensitivity(reg, (X_reg, y_reg), 'regression', step_size=0.1 / nb, localization=5.0,
                                n_chains=4, n_draws=2500, n_burnin=500, batch_size=500)
assert not sens['flagged'] and sens['max_shift'] < 0.05 and sens['problem'] == '' and sens['relaxations'] > 3, sens
short_run = localization_sensitivity(reg, (X_reg, y_reg), 'regression', step_size=0.1 / nb, localization=5.0,
                                     n_chains=2, n_draws=250, n_burnin=50, batch_size=500)
assert short_run['flagged'] and 'cannot be judged' in short_run['problem']
for bad in (dict(factors=()), dict(factors=(1,)), dict(factors=(-3,)), dict(tolerance=0)):
    try:
        localization_sensitivity(reg, (X_reg, y_reg), 'regression', n_draws=10, **bad)
        raise AssertionError(bad)
    except ValueError as e:
        assert 'factors' in str(e) or 'tolerance' in str(e)
sens['shifts'], sens['sweep'][['localization', 'llc', 'llc_se']]
