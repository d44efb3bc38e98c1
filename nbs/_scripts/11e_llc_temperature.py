# %% [markdown]
# # When the target is not λ
#
# > The temperature slope: how far the automatic LLC moves when the posterior is made ten times colder, a flag for estimates whose finite-n target has not reached λ, and the estimator followed towards λ at n·β × 1, 10 and 100 on the validation suite.

# %%
#| default_exp llc.temperature

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import math

import numpy as np
import pandas as pd
from torch import nn

from fracsgd.llc.calibrate import estimate_llc_auto
from fracsgd.llc.estimate import estimate_llc
from fracsgd.llc.result import SENSITIVITY_FACTOR
from fracsgd.llc.settings import SGLDSettings, default_n_beta
from fracsgd.llc.sgld import SGLDDivergenceError
from fracsgd.nets.stack import as_data

# %% [markdown]
# An LLC estimator at finite $n$ measures $n\beta\,(\mathbb E_w[L_n(w)] - L_n(w^*))$ under the localized, tempered
# posterior, and that number is not $\lambda$ (Watanabe's free energy expansion, eq. 12 of the paper, is an
# expansion in $\log n$). The [validation suite](llc_suite.html) computes it exactly: at the $n$ of the suite the
# target lies between 0.2 and 1 times $\lambda$, furthest below where the multiplicity is high or the depth large.
# An estimate can therefore be exactly right about its target and far from $\lambda$.
#
# Where the data are noiseless ($L_n(w^*) = 0$, the truth is realizable and fitted), making the posterior colder is the
# same as adding data with the same empirical moments: the target at $10\,n\beta$ is the target of a ten times
# larger sample, and it rises towards $\lambda$. The **temperature slope**
#
# $$s = \frac{\hat\lambda(10\,n\beta) - \hat\lambda(n\beta)}{\ln 10}$$
#
# is how much the estimate still moves per e-fold of $n\beta$. Over the $\ln n\beta$ e-folds already behind it, a
# slope that large would have moved it by $s \ln n\beta$; when that exceeds 5% of the estimate,
# `temperature_slope` flags the estimate as **target not converged to λ**. The 5% is issue 41's rule, not a
# number tuned here. With noisy data a colder posterior is not a larger sample (it also sharpens on the noise),
# so the slope is then a property of the temperature, not a statement about $\lambda$; the function says so in
# its result and the tables below use noiseless rows only.

# %%
#| export
SLOPE_TOLERANCE = 0.05      # flag when slope x ln(n_beta) exceeds this fraction of the estimate (issue 41's rule)
COLDER = 10.0               # the second estimate is at this many times n_beta

def slope_moves(llc, llc_se, llc_colder, llc_colder_se, n_beta, factor: float = COLDER) -> tuple:
    """The slope per e-fold of n_beta between an estimate and one at `factor` x n_beta, its s.e., and `moves`
    (slope x ln n_beta / estimate) with its s.e.; numbers or arrays alike (inf where the estimate is 0)."""
    per_efold = math.log(factor)
    slope = (np.asarray(llc_colder, float) - np.asarray(llc, float)) / per_efold
    slope_se = np.hypot(llc_se, llc_colder_se) / per_efold
    with np.errstate(divide='ignore', invalid='ignore'):
        scale = np.log(n_beta) / np.asarray(llc, float)
    return slope, slope_se, slope * scale, slope_se * np.abs(scale)

def temperature_slope(model: nn.Module, data, loss='classification', *, n_beta: float | None = None,
                      factor: float = COLDER, tolerance: float = SLOPE_TOLERANCE, device=None, **auto) -> dict:
    """`estimate_llc_auto` at `n_beta` (default n/log n) and at `factor` x `n_beta` on the same data and weights.
    Returns both estimates, the slope (their difference per e-fold of n_beta, with its s.e.), `moves`
    (slope x ln n_beta / estimate, with its s.e. `moves_se`) and `not_lambda`: True when |moves| exceeds `tolerance`, i.e. the finite-n target
    has not converged to lambda. Meaningful for noiseless (realizable, fitted) data only: with noise a colder
    posterior is not a larger sample. `auto` goes to `estimate_llc_auto` (both runs)."""
    if not factor > 1:
        raise ValueError(f"temperature_slope: factor must be > 1, got {factor}")
    nb = default_n_beta(len(as_data(data)[0])) if n_beta is None else float(n_beta)
    runs = [estimate_llc_auto(model, data, loss, n_beta=b, device=device, **auto) for b in (nb, factor * nb)]
    (hot, hot_done), (cold, cold_done) = runs
    slope, slope_se, moves, moves_se = (float(v) for v in slope_moves(hot.llc, hot.llc_se, cold.llc, cold.llc_se,
                                                                      nb, factor))
    return dict(llc=hot.llc, llc_se=hot.llc_se, llc_colder=cold.llc, llc_colder_se=cold.llc_se, n_beta=nb,
                factor=factor, slope=slope, slope_se=slope_se, moves=moves, moves_se=moves_se,
                not_lambda=bool(abs(moves) > tolerance), result=hot, colder=cold, done=hot_done,
                colder_done=cold_done, note='meaningful for noiseless data only')


# %% [markdown]
# Two cases whose targets are known in closed form. The regular one, $f_w(x) = x\,w$ fitted exactly at $w^*=0$:
# its posterior is Gaussian and its target $\tfrac12\,n\beta S_{xx}/(n\beta S_{xx}+\gamma)$ is within a fraction of
# a percent of $\lambda = \tfrac12$, so the slope must be small and the flag clear. The scalar chain of depth 2,
# $f_w(x) = x\,w_1 w_2$ at 0: $\lambda = \tfrac12$ with multiplicity 2, its target at $n = 1000$ is far below
# (`chain_llc`), and it rises with $n\beta$, so the flag must fire. Both are also computed exactly by quadrature at
# $n\beta$ and $10\,n\beta$ (`crossing_target`), so the rule can be applied to the exact targets and the estimated
# slope held to the exact one.
#
# The slope is a difference of two estimates, multiplied by $\ln n\beta/\ln 10$, so the flag inherits their noise
# amplified: at the default precision (each s.e. ≤ 2.5% of its estimate) `moves` carries an s.e. of about
# $0.015\,\ln n\beta$, 7–12% at the suite's $n$, more than the 5% the rule tests. A row near λ is then cleared
# only when its noise is kind: pass `precision=` (to both runs) for a flag that can clear, at the cost of
# $(2.5\%/\text{precision})^2$ times the draws. The cell runs at 5% to stay fast, so it checks the slope
# against the exact one within its s.e., and the rule on the exact targets.

# %%
import torch, warnings
import pandas as pd
from fracsgd.llc.calibrate import NormalCrossing, crossing_data, crossing_target
from fracsgd.llc.exact_chain import chain_llc

torch.manual_seed(0)
data = crossing_data(1000, sigma=0.0, seed=3)           # noiseless: y = f_{w*}(x) = 0
X = data[0]
nb = default_n_beta(1000)
rows = {}
for name, (p, q) in dict(regular=(1, 0), chain=(1, 1)).items():
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')                  # the reach warning fires at a weak localization: see calibrate
        rows[name] = temperature_slope(NormalCrossing(p, q), data, 'regression', precision=0.05)
    rows[name]['exact'] = crossing_target(p, q, data, nb, rows[name]['done']['localization'])
    rows[name]['exact_colder'] = crossing_target(p, q, data, 10 * nb, rows[name]['colder_done']['localization'])
    rows[name]['exact_slope'] = (rows[name]['exact_colder'] - rows[name]['exact']) / math.log(10)
    rows[name]['exact_moves'] = rows[name]['exact_slope'] * math.log(nb) / rows[name]['exact']
sxx = float(X.pow(2).mean())
assert abs(rows['regular']['exact'] - 0.5 * nb * sxx / (nb * sxx + 1.0)) < 1e-4
assert abs(rows['chain']['exact'] - chain_llc(2, nb, 1.0, sxx / 2)) < 2e-3
assert rows['regular']['exact_moves'] < SLOPE_TOLERANCE < rows['chain']['exact_moves']   # the rule on exact targets
assert rows['chain']['not_lambda']                                                        # and on the estimates
for r in rows.values():
    assert abs(r['slope'] - r['exact_slope']) < 3 * r['slope_se'], r
cols = ('llc', 'exact', 'llc_colder', 'exact_colder', 'slope', 'slope_se', 'exact_slope', 'moves', 'moves_se',
        'exact_moves', 'not_lambda')
pd.DataFrame({k: {c: v[c] for c in cols} for k, v in rows.items()}).T

# %% [markdown]
# ## Both systematic parts, at a setting one is given
#
# A study that must keep the paper's setting (table 3: a fixed step, γ and $n\beta$) cannot let
# `estimate_llc_auto` choose, yet the two systematic parts can still be measured at its weights.
# `llc_systematics` runs the given setting three times on the same models: as given, with the localization
# multiplied by `SENSITIVITY_FACTOR` (the localization shift of the [localization chapter](localization.html)),
# and with $n\beta$ multiplied by ten (the temperature slope above). The colder run's step is divided by ten as
# well. At a fixed step the drift $\epsilon\, n\beta\, \nabla L$ grows with $n\beta$, and so does the
# discretisation bias: we first tried the regular crossing at one step for both temperatures, and the colder
# run read 0.694 against an exact 0.500, which would have flagged a regular point. With step × $n\beta$ held,
# the bias is the same fraction at both temperatures and drops out of the slope. The number of steps, the draws
# and the seed stay the same, so a short run that never relaxes is measured as it is, not lengthened. One
# vectorized pass per run covers every model. The result has one row per model, and the ledger widens a study's
# LLC intervals by the shift and carries the flag.

# %%
#| export
MOVES_ROW = 'mean LLC temperature slope at the final weights (moves)'   # the summary rows a study writes from
NOT_LAMBDA_ROW = 'nets whose LLC target is not converged to λ'          # `llc_systematics` (the ledger reads them)

def _per_model(models, data, loss, settings, device) -> tuple:
    "(llc, llc_se, flagged) arrays of `estimate_llc` under `settings`; NaN (and 'diverged') when SGLD diverges."
    try:
        d = estimate_llc(models, data, loss, settings, device=device).diagnostics
        return d.llc.to_numpy(float), d.llc_se.to_numpy(float), d.flagged.astype(bool).to_numpy(), ''
    except SGLDDivergenceError as e:
        k = len(models) if isinstance(models, (list, tuple)) else 1
        return np.full(k, np.nan), np.full(k, np.nan), np.ones(k, bool), str(e).split(':')[0]

def llc_systematics(models, data, loss='classification', settings: SGLDSettings | None = None, *,
                    localization_factor: float = SENSITIVITY_FACTOR, factor: float = COLDER,
                    tolerance: float = SLOPE_TOLERANCE, device=None) -> pd.DataFrame:
    """The LLC of each of `models` under `settings` (`llc`, `llc_se`), again at `localization_factor` x its
    localization (`llc_stronger`, `localization_shift` = llc_stronger / llc - 1) and at `factor` x its n_beta
    (`llc_colder`, its step divided by `factor` so that step x n_beta, and with it the discretisation, stays the
    same), with the temperature slope's `moves`, `moves_se` and `not_lambda` (|moves| > `tolerance`). The runs
    share steps, draws and seed. A run that diverges gives NaN and says so in `diverged`. One row per model."""
    s = (settings or SGLDSettings()).replace(systematic=False)
    if not (localization_factor > 0 and localization_factor != 1 and factor > 1):
        raise ValueError(f"llc_systematics: localization_factor must be > 0 and != 1, and factor > 1; got "
                         f"{localization_factor} and {factor}")
    nb = default_n_beta(len(as_data(data)[0])) if s.n_beta is None else float(s.n_beta)
    burnin = None if s.burnin_step_size is None else s.burnin_step_size / factor
    runs = dict(base=s.replace(n_beta=nb),
                colder=s.replace(n_beta=factor * nb, step_size=s.step_size / factor, burnin_step_size=burnin),
                stronger=s.replace(n_beta=nb, localization=s.localization * localization_factor))
    (llc, se, flagged, d0), (cold, cold_se, _, d1), (strong, strong_se, _, d2) = (
        _per_model(models, data, loss, v, device) for v in runs.values())
    _, _, moves, moves_se = slope_moves(llc, se, cold, cold_se, nb, factor)
    diverged = '; '.join(f'{k} run: {m}' for k, m in zip(runs, (d0, d1, d2)) if m)
    return pd.DataFrame(dict(llc=llc, llc_se=se, llc_stronger=strong, llc_stronger_se=strong_se,
                             localization_shift=strong / llc - 1, llc_colder=cold, llc_colder_se=cold_se,
                             moves=moves, moves_se=moves_se, not_lambda=np.abs(moves) > tolerance, flagged=flagged,
                             diverged=diverged, n_beta=nb, localization=s.localization,
                             localization_factor=localization_factor, factor=factor))


# %% [markdown]
# On the two crossings above, at one fixed setting (a tenth of the regular case's calibrated step and a full
# batch), both
# parts are held to their exact values by quadrature: the shift to `crossing_target` at 3γ, the slope to it at
# $10\,n\beta$. The chain's flag must fire and the regular case's must clear. The regular target moves by
# about $-2\gamma/(n\beta S_{xx})$ under the stronger localization, a fraction of a percent here.

# %%
given = SGLDSettings(**{k: v for k, v in rows['regular']['done'].items() if k in SGLDSettings.__dataclass_fields__})
given = given.replace(step_size=given.step_size / 10, n_draws=6000, n_burnin=3000, n_chains=4, batch_size=None)
with warnings.catch_warnings():
    warnings.simplefilter('ignore')
    sys_rows = {name: llc_systematics(NormalCrossing(p, q), data, 'regression', given).iloc[0]
                for name, (p, q) in dict(regular=(1, 0), chain=(1, 1)).items()}
sys_table = pd.DataFrame(sys_rows).T
for name, (p, q) in dict(regular=(1, 0), chain=(1, 1)).items():
    exact = [crossing_target(p, q, data, b, g) for b, g in ((nb, given.localization), (nb, 3 * given.localization),
                                                             (10 * nb, given.localization))]
    sys_table.loc[name, ['exact', 'exact_stronger', 'exact_colder']] = exact
    sys_table.loc[name, 'exact_shift'] = exact[1] / exact[0] - 1
    sys_table.loc[name, 'exact_moves'] = slope_moves(exact[0], 0, exact[2], 0, nb)[2]
    r = sys_table.loc[name]
    assert abs(r.llc - exact[0]) < 4 * r.llc_se and abs(r.llc_stronger - exact[1]) < 4 * r.llc_stronger_se, r
    assert abs(r.llc_colder - exact[2]) < 4 * r.llc_colder_se, r
    assert abs(r.localization_shift - r.exact_shift) < 0.02 and abs(r.moves - r.exact_moves) < 0.05, r
assert sys_table.loc['chain', 'not_lambda'] and not sys_table.loc['regular', 'not_lambda'], sys_table
try:
    llc_systematics(NormalCrossing(1, 0), data, 'regression', given, factor=1.0)
    raise AssertionError('factor 1 accepted')
except ValueError as e:
    assert 'factor' in str(e)
blown = llc_systematics(NormalCrossing(1, 0), data, 'regression', given.replace(step_size=given.step_size * 1000))
assert blown.llc.isna().all() and blown.diverged.str.startswith('base run').all(), blown   # named, not raised
sys_table[['llc', 'exact', 'llc_stronger', 'exact_stronger', 'localization_shift', 'exact_shift', 'llc_colder',
           'exact_colder', 'moves', 'moves_se', 'exact_moves', 'not_lambda']].astype(float).round(4)

# %% [markdown]
# Both parts land on their quadrature values: a shift of −1.3% and −19.1% against −1.4% and −18.8%, and `moves`
# of 0.013 and 0.216 against 0.013 and 0.242. The reported `moves_se` (0.11 and 0.18 here) is far larger than
# these errors. It treats the runs as independent, but they share a seed, so most of their noise cancels in the
# difference. Read it as an upper bound. The flag compares the point value with the tolerance.

# %% [markdown]
# ## On the validation suite
#
# `tools/suite_temperature.py` runs the automatic LLC on every noiseless row of the suite at $n\beta$ and
# $10\,n\beta$ (the temperature slope), and on the noiseless held-out deep linear networks also at $100\,n\beta$
# (consistency in $n$), all on the same data and at the default's own localization. Like the suite's held-out
# report it feeds the estimator `equivalent_data`, the same loss on ≤ 10 rows, so a step does not pay for the
# samples; the cost of a colder posterior is in the number of steps, since the step shrinks as $1/(n\beta)$ while
# the localization's relaxation time $1/(\epsilon\gamma)$ grows with it. The burn-in and the first draws are capped
# at 10,000 steps (`MAIN_STEPS`), so at $100\,n\beta$ the chains may not have relaxed in the weakest directions;
# such runs carry the estimator's own flag, and the table says how many steps each took.

# %%
import numpy as np
from fracsgd.core import committed_dir
TEMPERATURE = committed_dir('llc_validation', 'suite_temperature.csv')
ESTIMATES = committed_dir('llc_validation', 'suite_estimates.csv')
cols = ['case', 'kind', 'part', 'n', 'lam', 'mult', 'factor', 'llc', 'se', 'n_burnin', 'n_draws', 'flagged', 'seconds']
if TEMPERATURE.exists():
    x1 = pd.read_csv(ESTIMATES).query("data == 'equivalent' and noise == 0").assign(factor=1.0)
    x1 = x1[x1.part != 'fresh']                                   # the fresh part was not run at 10 nβ
    runs = pd.concat([x1[cols], pd.read_csv(TEMPERATURE)[cols]], ignore_index=True)
    wide = runs.pivot_table(index=['case', 'kind', 'part', 'n', 'lam', 'mult'], columns='factor',
                            values=['llc', 'se', 'seconds'])
    wide.columns = [f'{v}_x{f:g}' for v, f in wide.columns]
    wide = wide.reset_index().merge(x1[['case', 'target']], on='case')
    n_beta = wide.n / np.log(wide.n)                              # default_n_beta, per row
    wide['slope'], _, wide['moves'], wide['moves_se'] = slope_moves(wide.llc_x1, wide.se_x1, wide.llc_x10,
                                                                    wide.se_x10, n_beta, 10.0)
    wide['not_lambda'] = wide.moves.abs() > SLOPE_TOLERANCE
    wide['off_lambda'] = wide.llc_x1 / wide.lam - 1
    wide['target_off_lambda'] = wide.target / wide.lam - 1
    shown = wide[['case', 'part', 'n', 'lam', 'mult', 'target', 'llc_x1', 'llc_x10', 'slope', 'moves', 'moves_se',
                  'not_lambda', 'off_lambda']]
else:
    shown = 'not run yet: python tools/suite_temperature.py'
shown.round(4) if TEMPERATURE.exists() else shown

# %% [markdown]
# ### The flag against λ
#
# Rows by how far their estimate at $n\beta$ lies from λ, against whether the flag fired:

# %%
if TEMPERATURE.exists():
    band = pd.cut(wide.off_lambda.abs(), [0, 0.05, 0.15, np.inf], labels=['within 5%', '5-15%', 'over 15%'])
    confusion = pd.crosstab(band, wide.not_lambda.map({True: 'flagged', False: 'cleared'}), dropna=False)
    caught = wide[wide.off_lambda.abs() > 0.15].not_lambda
if TEMPERATURE.exists():
    assert caught.all()                                          # every row more than 15% off lambda is flagged
    assert not wide[wide.off_lambda.abs() <= 0.05].not_lambda.any()
confusion if TEMPERATURE.exists() else None

# %% [markdown]
# On the 21 noiseless rows, the flag fires on all 17 whose estimate is more than 15% below λ. The smallest of
# their `moves` is 16%, against the 5% threshold. It clears both rows within 5%: the crossing $x\,w_2^3$ at
# n = 30,000 (`moves` 1.7%) and the regular-like `dln-5-3-4-r2` (0.0%). It fires on both rows in between. The
# issue's criterion is met, with one caveat visible in the `moves_se` column: the flag's own noise is 7–25% of the
# estimate at the default precision, so the two cleared rows are cleared by a margin smaller than that noise. Only
# two rows lie within 5% of λ, because at these n most singular targets are far below λ. "Clears most rows within
# 5%" therefore rests on two rows.

# %% [markdown]
# ### Consistent in n
#
# The noiseless held-out deep linear networks at $n\beta$ × 1, 10 and 100 on the same data, against λ, with the
# seconds each estimate took (one thread, equivalent data):

# %%
if TEMPERATURE.exists():
    dln = wide[(wide.kind == 'dln') & (wide.part == 'held-out')].copy()
    for f in (1, 10, 100):
        dln[f'err_x{f}'] = dln[f'llc_x{f}'] / dln.lam - 1
    dln['rises'] = (dln.llc_x10 > dln.llc_x1) & (dln.llc_x100 > dln.llc_x10)
    dln['within_5pct_x100'] = dln.err_x100.abs() <= 0.05
    dln['no_further_x100'] = dln.err_x100.abs() <= dln.err_x1.abs()
    consistency = dln[['case', 'n', 'lam', 'mult', 'target', 'llc_x1', 'llc_x10', 'llc_x100', 'err_x1', 'err_x10',
                       'err_x100', 'rises', 'within_5pct_x100', 'no_further_x100', 'seconds_x1', 'seconds_x10',
                       'seconds_x100']]
if TEMPERATURE.exists():
    assert len(dln) == 5 and dln.within_5pct_x100.sum() == 2 and dln.no_further_x100.sum() == 4 and dln.rises.sum() == 4
consistency.round(4) if TEMPERATURE.exists() else None

# %% [markdown]
# **Not consistent at this cost: issue 41's goal is not met.** The goal is that at ×100 the estimate lies within 5%
# of λ on ≥ 80% of rows and is never further from λ than at ×1.
#
# * It comes within 5% of λ on 2 of the 5 rows, `dln-5-3-4-r2` (m = 1; −1.2%) and `dln-2-2-4-4-5-r1` (m = 1;
#   +2.7%). Both already have targets within 9% of λ at ×1.
# * It rises with $n\beta$ on four rows. On the multiplicity-5 `dln-3-4-3-3-3-3-r1` it rises at ×10 and then
#   falls at ×100: 2.92, 3.10, 2.51 against λ = 4, further from λ than at ×1. The estimator did not flag that run.
# * The multiplicity-5 and -7 rows stay 23–37% below λ at ×100.
#
# Two things combine:
#
# * **The cost.** The step shrinks about as $1/(n\beta)$, while the localization's relaxation time
#   $1/(\epsilon\gamma)$ grows with it. The runs at ×100 hit the 10,000-step cap on burn-in, a fifth to two thirds
#   of one relaxation time where the reach check measured it. The chains start at $w^*$, where the loss is lowest,
#   so a run stopped early reads low. Three of the five runs were flagged for it; the one that fell was not. A relaxed run at
#   ×100 needs about 100 times the steps of one at ×1, so $10^5$–$10^6$ steps of eight chains. That is hours per
#   estimate here even on the equivalent few rows, and on the full $n$ = 30,000 rows (about 30 ms a step on this CPU) it is days.
# * **The target.** Even with exact sampling, the finite-$n$ target of a high-multiplicity singularity approaches
#   λ only as $1/\log n\beta$. The [exact chain](exact_chain.html) reaches 0.114 of ½ at depth 7 and $n$ = 10⁴.
#   So "within 5% at ×100" is out of reach for m = 5–7 at these $n$, whatever the sampler. That part of the goal
#   is ill-posed for such rows; the rise is not.
#
# The flag above does what can be checked here: at ×1 it reports "target not converged to λ" on each of the three
# rows that stay far below λ, so the reader is told.

# %%
#| hide
import nbdev; nbdev.nbdev_export()
