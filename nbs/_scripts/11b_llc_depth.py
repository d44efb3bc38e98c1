# %% [markdown]
# # LLC at depth
#
# > Why the automatic LLC setting fell short on deep networks, a validation set whose truths are resolved at every depth from 2 to 7, the localization's systematic error measured with every estimate, coverage, and devinterp side by side.

# %%
#| default_exp llc.depth

# %%
#| hide
from nbdev.showdoc import *

# %% [markdown]
# **In the ledger.** Table 3's settings give a median estimate of 0.51 [0.36, 0.64] of the exact λ on the held-out
# deep linear networks, against the 'sufficient' the paper reads as above ½: a stand-in, since the paper's own models
# have no known λ. The rows this page puts in the [claims ledger](ledger.html), read from it; each row's
# configuration, rule and reasons are one click away:

# %%
#| echo: false
from fracsgd.ledger.checks import study_table
study_table('dln')                # this study's rows of the claims ledger, read from it

# %%
#| export
from __future__ import annotations
import contextlib, io, re, tempfile, time, warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

from fracsgd.core import write_table
from fracsgd.llc.dln import aoyagi_dln_lambda, regression_settings
from fracsgd.llc.estimate import calibrate_at_curvature, estimate_llc
from fracsgd.llc.validation import validation_problem
from fracsgd.llc.result import INTERVAL_LIMIT, localization_interval
from fracsgd.nets.models import make_balanced_dln
from fracsgd.llc.sgld import SGLDDivergenceError, default_n_beta
from fracsgd.nets.stack import gaussian_nll

# %% [markdown]
# **What this chapter found** (details and the tables below):
#
# * The first validation set's deep networks had truths the data cannot see: 37 of its 40 networks (every one of
#   depth 3 to 5) have an end-to-end singular value worth less than 10 posterior loss scales. On networks whose
#   truth is resolved, the automatic setting's estimate at $\gamma$ is not systematically low at depth: mean
#   |error| 5.6% on 12 held-out noiseless networks of depth 2 to 7, worst 15.4%.
# * `estimate_llc` now measures the localization's systematic error with every automatic estimate (a repeat at
#   $3\gamma$, a third more cost) and reports an interval that includes it. On the held-out part it covers
#   Aoyagi's $\lambda$ on 12 of 12 noiseless networks (the Monte-Carlo interval alone: 3 of 12), at a median
#   half-width of 16%.
# * The accuracy target (mean |error| ≤ 5% at every depth, no network above 15%) is **not met**: the
#   extrapolated estimate has a mean |error| of 6.1%, above 5% at depths 4 and 5, and one network at +27.5%
#   (flagged, covered by its interval).
# * A second held-out set, drawn afresh (`depth_set(2028)`, 18 networks no rule had seen), confirms it: mean
#   |error| 5.6%, above 5% at depths 4 to 7, worst 13.2%, coverage 11 of 12. Probes on the first set's networks
#   show two opposing biases: the step size raises every estimate (most at $n = 3000$, where MALA acceptance is
#   low), the localization lowers it; at $n = 3\cdot10^4$ a gap of about 10% stays that neither longer burn-in
#   nor a third of the localization closes. Estimating at half the step gains less than a point for 2.5 times the
#   cost, so the default is unchanged.
# * devinterp 2.0.1 at the same setting samples the same posterior and lands a little below our estimate at
#   $\gamma$ (it averages its burn-in too): mean |error| 7.1%, and its chain spread covers $\lambda$ on 2 of 12
#   noiseless networks (table at the end); on the fresh set 10.4%, also 2 of 12.
# * Is the gap that stays at $n = 3\cdot10^4$ the sampler's? The next chapter, [An exact truth at finite
#   n](exact_chain.html), computes what an exact sampler of the localized posterior returns on the scalar chain
#   (λ = ½ at every depth). At γ = 1 and these sample sizes it lies 21–27% below λ at depth 2 and 74–80% below at
#   depth 7. Our estimator finds that value rather than λ, and a third of the localization closes about a quarter
#   of the gap, as it did on the two deep networks probed here. So part of the deep networks' error is likely the
#   target, not the estimator; for these networks no exact value can be computed to say how much. The same chapter
#   shows why the extrapolation overshoots at $n = 3000$: at γ/3 the deep networks of that size land 28–38% above
#   λ with MALA acceptance near 0.55, so there the estimate's dependence on γ is the step-size bias.
# * What sets the gap is measured in the same chapter: the automatic setting ties γ to $n\beta$, and with $n\beta$
#   multiplied by $10^4$ on the same data every fresh noiseless network's estimate lies within 2% of the regular
#   part of Aoyagi's formula, $r(H_0+H_M-r)/2$, up to 74% below λ. At the set's own $n$ the estimate keeps a share of
#   the singular part λ − $r(H_0+H_M-r)/2$ that is smaller on deep networks: the low errors at depth are the
#   target of a localization tied to $n\beta$, not a sampler missing its target, and under that rule the estimate
#   does not tend to λ as $n$ grows.

# %%
import fracsgd
import matplotlib.pyplot as plt
torch.set_num_threads(1)   # small models: one thread avoids contention on small CPUs


# %% [markdown]
# ## What went wrong at depth
#
# The first [validation set](llc_validation.html) draws minimal-rank deep linear networks (DLNs) with
# `make_dln`, whose layers have random rank-$r$ row and column spaces. Aoyagi's $\lambda$ is the learning
# coefficient of such a network as $n\to\infty$. At the $n$ of the set it is not what any estimator can see:
# where the rank-$r$ subspaces of neighbouring layers meet at random angles, the end-to-end map
# $M = W_L\cdots W_1$ loses a factor at every layer, and at depth 4–5 its smallest nonzero singular value is
# often $10^{-3}$ or less. The data tell a rank-$r$ map from a rank-$(r-1)$ one only when the loss of dropping
# that singular value, about $\tfrac12\sigma_r^2$ per sample, is large against the posterior's loss scale
# $1/(n\beta)$, that is when $n\beta\,\sigma_r^2 \gg 1$. `end_to_end_singular_values` computes $\sigma$;
# `resolution` the number $n\beta\,\sigma_r^2$ of a network at its $n$.

# %%
#| export
def end_to_end_singular_values(model: nn.Sequential) -> np.ndarray:
    "The singular values of a DLN's end-to-end map W_L ... W_1, largest first (float64)."
    M = None
    for layer in model:
        W = layer.weight.detach().double()
        M = W if M is None else W @ M
    return torch.linalg.svdvals(M).numpy()

def resolution(model: nn.Sequential, rank: int, n: int) -> float:
    "n*beta * sigma_r^2: how many posterior loss scales the smallest of the `rank` singular values is worth."
    return default_n_beta(n) * float(end_to_end_singular_values(model)[rank - 1]) ** 2


# %%
from fracsgd.llc.validation import validation_problem, validation_results, validation_set
old = validation_set()
old['depth'] = old.layers.str.count('-')
old['resolution'] = [resolution(validation_problem(r)[0], int(r['rank']), int(r.n)) for _, r in old.iterrows()]
committed = pd.concat([validation_results('tune'), validation_results('held-out')])
default_rows = committed[committed.setting == 'SGLD q=3e-3 c=0.1 5000+5000'].set_index('net')
old['default_error'] = default_rows.rel_error.reindex(old.net).to_numpy()
old['resolved'] = old.resolution > 10
summary_old = old.groupby('depth').agg(nets=('net', 'size'), resolved=('resolved', 'sum'),
                                       median_resolution=('resolution', 'median'))
print(summary_old.round(3).to_string())
err = old.default_error.abs()
print(f"old default, |error| where resolved (n beta sigma_r^2 > 10): mean {err[old.resolved].mean():.1%} "
      f"over {err[old.resolved].notna().sum()} nets; where not: {err[~old.resolved].mean():.1%} "
      f"over {err[~old.resolved].notna().sum()}")
assert (summary_old.loc[[4, 5], 'resolved'] == 0).all()          # no network of depth 4-5 is resolved
assert err[old.resolved].mean() < err[~old.resolved].mean()

# %%
fig, ax = plt.subplots(figsize=(6, 3.6))
for depth, rows in old.groupby('depth'):
    ax.scatter(rows.resolution, rows.default_error, label=f'depth {depth}', s=25)
ax.axhspan(-0.15, 0.15, color='0.88', label='|error| ≤ 15%')
ax.axvline(10, color='k', ls=':', lw=1)
ax.set(xscale='log', xlabel=r'resolution $n\beta\,\sigma_r^2$ of the truth', ylabel='relative error (old default)',
       title='first validation set: error against how well the data resolve the truth')
ax.legend(fontsize=7, ncol=2)
plt.tight_layout()


# %% [markdown]
# So the first set measured, at depth, mostly how an estimator behaves when the truth is below what the data
# can see: 37 of its 40 networks have $n\beta\sigma_r^2 < 10$, all of depth 3 and more among them, and the old
# default's mean |error| is 7% on the three resolved networks and 30% on the others. That is a fact about the
# set, not an excuse for the estimator: the localization's pull, which the next sections measure and correct,
# is there at every depth. On the worst deep network of the held-out part (13-11-8-20-13-20, rank 5,
# $n = 3\cdot10^4$, error −59%) the Gauss–Newton Hessian at $w^*$ has 140 nonzero eigenvalues spread over eight
# decades below $h_{\max}$; the localization $\gamma = q\,n\beta h_{\max}$ with $q = 3\cdot10^{-3}$ holds every
# direction whose curvature is below $\gamma/(n\beta)$, and the lost half-units of those directions alone,
# $\tfrac12\sum_i \gamma/(n\beta h_i+\gamma) = 41$ of $\lambda = 79$, account for most of the error. Those tiny
# curvatures are the unresolved singular values again.
#
# ## A validation set resolved at every depth
#
# `depth_set` draws minimal-rank DLNs of depth 2 to 7 with widths 5–20, a rank between 1 and the smallest width
# minus one, $n \in\{3\cdot10^3, 10^4, 3\cdot10^4\}$, built by `make_balanced_dln`: the end-to-end map has its
# $r$ singular values in $[0.5, 1.5]$, so $n\beta\sigma_r^2 \ge 94$ for every network, and every layer still has
# rank $r$ (the minimal-rank truth whose local coefficient is Aoyagi's). Four networks per depth; **the split was
# fixed in the generator before any estimate was made**: the first network of each depth is the tuning part
# (noiseless, except at depths 3 and 6), the other three are held out, two with noiseless targets and one with
# Gaussian noise $\sigma = 1$. Draws that are not singular ($\lambda = d/2$) are skipped.

# %%
#| export
def depth_set(seed: int = 2027) -> pd.DataFrame:
    """Minimal-rank balanced DLNs of depth 2-7, four per depth, with Aoyagi's lambda: one row per network
    (`net`, `depth`, `layers`, `rank`, `d`, `true_llc`, `noise`, `n`, `part`)."""
    rng, rows = np.random.default_rng(seed), []
    for depth in range(2, 8):
        k = 0
        while k < 4:
            sizes = [int(h) for h in rng.integers(5, 21, depth + 1)]
            r = int(rng.integers(1, min(sizes)))
            lam = float(aoyagi_dln_lambda(sizes, r))
            d = sum(a * b for a, b in zip(sizes[:-1], sizes[1:]))
            n = int(rng.choice([3000, 10_000, 30_000]))
            if lam >= d / 2:                                          # regular: not what this set is for
                continue
            noise = float(depth in (3, 6)) if k == 0 else (0.0 if k < 3 else 1.0)
            rows.append(dict(net=len(rows), depth=depth, layers='-'.join(map(str, sizes)), rank=r, d=d,
                             true_llc=lam, noise=noise, n=n, part='tune' if k == 0 else 'held-out'))
            k += 1
    return pd.DataFrame(rows)

def depth_problem(row) -> tuple:
    "The balanced network (at its true weights) and the data `(X, y)` of one row of `depth_set`."
    return validation_problem(row, build=make_balanced_dln)


# %%
depth_specs = depth_set()
assert len(depth_specs) == 24 and (depth_specs.part == 'tune').sum() == 6 and depth_specs.depth.nunique() == 6
assert (depth_specs.true_llc < depth_specs.d / 2).all() and depth_specs.equals(depth_set())
held_noise = depth_specs[depth_specs.part == 'held-out'].groupby('depth').noise.agg(['size', 'sum'])
assert (held_noise['size'] == 3).all() and (held_noise['sum'] == 1).all()     # 2 noiseless + 1 noisy per depth
res_new = [resolution(depth_problem(r)[0], int(r['rank']), int(r.n)) for _, r in depth_specs.iterrows()]
assert min(res_new) > 0.25 * default_n_beta(3000) * 0.99                        # n beta sigma_r^2 >= 94
depth_specs


# %% [markdown]
# ## Running the set
#
# `run_depth` estimates every network of a part with the automatic setting (`calibrate_at_curvature`, `systematic=True`:
# the estimate at $\gamma$ and the repeat at $3\gamma$ of the [localization chapter](localization.html)) and records both raw
# estimates with their errors, so that `apply_rule` can recompute the extrapolated estimate and its interval for
# any $k$ and $w$ without sampling again.

# %%
#| export
def run_depth(specs: pd.DataFrame, out=None, setting: str = 'auto', **rules) -> pd.DataFrame:
    """The estimate under `setting` ('auto': `calibrate_at_curvature` with `rules` changed; 'paper': table 3's preset) of every
    network of `specs`: for 'auto' both raw estimates and the extrapolated one with its interval; the diagnostics
    and the seconds (written to `out` after each network)."""
    rows = []
    for _, row in specs.iterrows():
        model, data = depth_problem(row)
        t0 = time.perf_counter()
        settings = regression_settings(setting, model, data, **rules)
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')                 # the flags are in the row
            try:
                res = estimate_llc(model, data, 'regression', settings)
            except SGLDDivergenceError as e:
                res = e
        base = dict(row.to_dict(), setting='paper preset' if setting == 'paper' else 'automatic',
                    localization=settings.localization, seconds=time.perf_counter() - t0)
        if isinstance(res, SGLDDivergenceError):
            rows.append(dict(base, llc=np.nan, flagged=True, problems=f'diverged: {res}'))
        else:
            d = res.diagnostics.iloc[0]
            keep = ['llc', 'llc_se', 'llc_low', 'llc_high', 'llc_raw', 'llc_raw_se', 'llc_stronger',
                    'llc_stronger_se', 'llc_shift', 'systematic', 'mala_acceptance', 'drift_z', 'rhat', 'ess',
                    'reach_used', 'relaxations', 'flagged', 'problems']
            rows.append(dict(base, estimate=d.llc, **{k: d[k] for k in keep if k in d}))
        if out is not None:
            write_table(pd.DataFrame(rows), out)            # whole or not at all
    return pd.DataFrame(rows)


# %% [markdown]
# ## Choosing $k$ and $w$ on the tuning part
#
# `apply_rule` recomputes, from the raw estimates of `run_depth`'s rows, the extrapolated estimate
# $\hat\lambda(\gamma) + k\Delta$ and its interval $\pm(w|\Delta| + 2\,\mathrm{se})$ with
# `localization_interval` (the function `estimate_llc` uses), the relative error against Aoyagi's $\lambda$,
# whether the interval covers it, its relative half-width and the flag. `score` sums a part up per depth.

# %%
#| export
def apply_rule(rows: pd.DataFrame, extrapolation: float, spread: float) -> pd.DataFrame:
    """`rows` of `run_depth` with the estimate and interval recomputed for `extrapolation` k and `spread` w:
    `estimate`, `rel_error`, `covered`, `half_width` (relative) and `flagged` (any chain problem, or an
    interval wider than `INTERVAL_LIMIT` on either side)."""
    out = localization_interval(rows.llc_raw, rows.llc_raw_se, rows.llc_stronger, rows.llc_stronger_se,
                                extrapolation, spread)
    t = rows.assign(estimate=out['llc'], low=out['llc_low'], high=out['llc_high'])
    t['rel_error'] = t.estimate / t.true_llc - 1
    t['covered'] = (t.low <= t.true_llc) & (t.true_llc <= t.high)
    t['half_width'] = (t.high - t.low) / 2 / t.estimate.abs()
    chains = t.problems.fillna('').map(lambda p: bool(_LOCALIZATION_NOTES.sub('', p).strip('; ')))
    t['flagged'] = chains | ~(t.half_width <= INTERVAL_LIMIT)
    return t

# the notes about the localization itself, which `apply_rule` replaces by its own width test (rows run before the
# reach note was left out of measured estimates still carry it)
_LOCALIZATION_NOTES = re.compile(
    r'(at 3 x the localization: )?the localization, not the likelihood, holds the chains in most directions '
    r'\(reach used [0-9.]+ > [0-9.]+\): the estimate may depend on the localization; check with '
    r'localization_sensitivity, or compare several with localization_sweep'
    r'|the estimate depends on the localization: .*? may settle it')

def score(table: pd.DataFrame, by='depth') -> pd.DataFrame:
    "Per group: networks, mean and max |relative error|, coverage, median relative half-width, flagged."
    err = table.rel_error.abs()
    return (table.assign(abs_error=err).groupby(by)
            .agg(nets=('net', 'size'), mean_abs_error=('abs_error', 'mean'), max_abs_error=('abs_error', 'max'),
                 coverage=('covered', 'mean'), median_half_width=('half_width', 'median'),
                 flagged=('flagged', 'sum')))


# %%
DEPTH_RESULTS = Path('llc_validation')
tune_rows = pd.read_csv(DEPTH_RESULTS / 'depth_tune.csv')
noiseless_tune = tune_rows[tune_rows.noise == 0]
K_GRID, W_GRID = (0, 0.25, 0.5, 0.75, 1, 1.5, 2), (0.5, 1, 1.5, 2, 3)
k_scores = pd.Series({k: apply_rule(noiseless_tune, k, 1.0).rel_error.abs().mean() for k in K_GRID},
                     name='mean |error|, noiseless tuning nets')
k_best = float(k_scores.idxmin())
w_best = next(w for w in W_GRID if apply_rule(noiseless_tune, k_best, w).covered.all())
print(k_scores.round(3).to_string())
print(f'chosen on the tuning part: k = {k_best:g}, w = {w_best:g}')
from fracsgd.llc.result import LOCALIZATION_EXTRAPOLATION, LOCALIZATION_SPREAD
assert (k_best, w_best) == (LOCALIZATION_EXTRAPOLATION, LOCALIZATION_SPREAD)      # the package's constants
tuned = apply_rule(tune_rows, k_best, w_best)
tuned[['net', 'depth', 'layers', 'rank', 'noise', 'n', 'true_llc', 'llc_raw', 'llc_stronger', 'estimate', 'low',
       'high', 'rel_error', 'covered', 'flagged', 'seconds']].round(3)


# %% [markdown]
# ## Noisy targets: what to expect at $w^*$
#
# With noisy targets the baseline of the estimate is $L_n(w^*)$ at the true parameter, and the sample's own
# minimum $\hat w$ lies below it: the chains, held near $w^*$ by the localization but free to follow the
# likelihood, settle around $\hat w$ and their mean loss is lower by the amount the sample lets the model fit
# its noise. The estimate at $w^*$ therefore targets $\lambda - n\beta\,(L_n(w^*) - L_n(\hat w))$, not
# $\lambda$ (for a regular model the offset is about $\beta d/2 = d/(2\log n)$, as the
# [LLC validation page](llc_validation.html) shows). `noise_offset` measures it on the sample: it minimizes
# $L_n$ from $w^*$ with full-batch L-BFGS and returns $n\beta(L_n(w^*) - L_n(\hat w))$. We report the error of
# noisy rows against both $\lambda$ and $\lambda$ minus this offset.

# %%
#| export
def noise_offset(model: nn.Module, data, max_iter: int = 500) -> float:
    """n*beta * (L_n(w*) - L_n(w_hat)): how far below the loss at the true weights `model` the sample's own
    minimum w_hat lies (full-batch L-BFGS from w*, Gaussian loss)."""
    X, y = data
    fit = type(model)(*[nn.Linear(l.in_features, l.out_features, bias=False) for l in model])
    fit.load_state_dict(model.state_dict())
    nll = gaussian_nll()
    loss = lambda m: nll(m(X), y).mean()
    with torch.no_grad():
        at_truth = float(loss(model))
    opt = torch.optim.LBFGS(fit.parameters(), max_iter=max_iter, tolerance_grad=1e-10, tolerance_change=1e-14,
                            line_search_fn='strong_wolfe')
    def closure():
        opt.zero_grad()
        value = loss(fit)
        value.backward()
        return value
    opt.step(closure)
    with torch.no_grad():
        return default_n_beta(len(X)) * (at_truth - float(loss(fit)))


# %%
regular = make_balanced_dln([8, 3], 3, seed=0)                # one layer: linear regression, d = 24, regular
Xo = torch.randn(20_000, 8, generator=torch.Generator().manual_seed(0))
yo = regular(Xo).detach() + torch.randn(20_000, 3, generator=torch.Generator().manual_seed(1))
offset = noise_offset(regular, (Xo, yo))
# n(L(w*) - L(w_hat)) is half a chi-square with d = 24 degrees of freedom: offset = beta * chi2_24 / 2
beta = 1 / np.log(20_000)
print(f'regular model: offset {offset:.2f}, expected beta*d/2 = {beta * 24 / 2:.2f} (sd {beta * np.sqrt(2 * 24) / 2:.2f})')
assert abs(offset - beta * 24 / 2) < 3 * beta * np.sqrt(2 * 24) / 2

# %% [markdown]
# ## The held-out part
#
# The automatic setting with $k$ and $w$ as chosen above, run once on the 18 held-out networks (the rows were
# sampled while the constants were still placeholders; `apply_rule` applies the chosen ones to the raw
# estimates, which do not depend on them, and the chosen constants were committed before these rows were
# read). Each row's noise offset (above) is measured on its sample.

# %%
held_rows = pd.read_csv(DEPTH_RESULTS / 'depth_held_out.csv')
held = apply_rule(held_rows, LOCALIZATION_EXTRAPOLATION, LOCALIZATION_SPREAD)
held['offset'] = [noise_offset(*depth_problem(r)) if r.noise else 0.0 for _, r in held.iterrows()]
held['target'] = held.true_llc - held.offset                   # what an estimate at w* can see
held['rel_error_vs_target'] = held.estimate / held.target - 1
held['covers_target'] = (held.low <= held.target) & (held.target <= held.high)
noiseless, noisy = held[held.noise == 0], held[held.noise == 1]
by_depth = score(noiseless)
print('held-out, noiseless targets, per depth:')
print(by_depth.round(3).to_string())
print(f"all noiseless: mean |error| {noiseless.rel_error.abs().mean():.1%}, max {noiseless.rel_error.abs().max():.1%}, "
      f"coverage {noiseless.covered.mean():.0%}, median half-width {noiseless.half_width.median():.1%}")
print(f"noisy (one per depth): mean |error| against lambda {noisy.rel_error.abs().mean():.1%}, against lambda minus "
      f"the offset {noisy.rel_error_vs_target.abs().mean():.1%}; coverage of lambda {noisy.covered.mean():.0%}")
raw_error = (noiseless.llc_raw / noiseless.true_llc - 1).abs()
mc_covers = ((noiseless.llc_raw - 2 * noiseless.llc_raw_se <= noiseless.true_llc)
             & (noiseless.true_llc <= noiseless.llc_raw + 2 * noiseless.llc_raw_se))
print(f"the estimate at gamma alone: mean |error| {raw_error.mean():.1%}, max {raw_error.max():.1%}; "
      f"its Monte-Carlo interval covers {mc_covers.sum()} of {len(noiseless)}")
# what the prose below says
assert noiseless.covered.all() and noisy.covered.sum() == 5 and mc_covers.sum() == 3
assert round(noiseless.rel_error.abs().mean(), 3) == 0.061 and round(raw_error.mean(), 3) == 0.056
assert (by_depth.loc[[4, 5], 'mean_abs_error'] > 0.05).all() and (noiseless.rel_error.abs() > 0.15).sum() == 1
held[['net', 'depth', 'layers', 'rank', 'noise', 'n', 'true_llc', 'offset', 'llc_raw', 'llc_stronger', 'estimate',
      'low', 'high', 'rel_error', 'covered', 'half_width', 'flagged', 'seconds']].round(3)

# %%
fig, axes = plt.subplots(2, 1, figsize=(7.5, 8))
ax = axes[0]
for i, r in enumerate(held.sort_values(['depth', 'noise', 'net']).itertuples()):
    colour = 'C3' if r.noise else 'C0'
    ax.errorbar(i, r.estimate / r.true_llc, yerr=[[(r.estimate - r.low) / r.true_llc], [(r.high - r.estimate) / r.true_llc]],
                fmt='o', color=colour, mfc='white' if not r.flagged else colour, capsize=2)
    ax.plot(i, r.llc_raw / r.true_llc, 'x', color='0.4', ms=5)
ax.axhline(1, color='k', lw=0.8)
ax.axhspan(0.95, 1.05, color='C2', alpha=0.15, label='within 5%')
ax.set_xticks(range(len(held)), [f"{r.depth}" for r in held.sort_values(['depth', 'noise', 'net']).itertuples()])
ax.set(xlabel='depth (blue: noiseless, red: noisy; filled: flagged; x: estimate at γ alone)',
       ylabel='estimate / Aoyagi λ', title='held-out networks: estimate and interval')
ax.legend(fontsize=7, loc='upper left')
ax = axes[1]
points = ax.scatter(noiseless.llc_shift * 100, noiseless.rel_error * 100, c=noiseless.depth, cmap='viridis')
fig.colorbar(points, ax=ax, label='depth')
ax.axhline(0, color='k', lw=0.8)
ax.set(xlabel='shift at 3γ (% of the estimate at γ)', ylabel='error of the extrapolated estimate (%)',
       title='noiseless held-out: error against the shift')
plt.tight_layout()


# %% [markdown]
# What the held-out part says (the constants were fixed before these rows were read; nothing below changed them):
#
# * **Coverage: met.** The interval covers Aoyagi's $\lambda$ on all 12 noiseless held-out networks (and on 5 of
#   the 6 noisy ones). The Monte-Carlo interval alone, $\hat\lambda(\gamma)\pm2\,$se, covers 3 of the 12.
# * **Width: met only as a half-width.** The median relative half-width is 16% (the full width 31%); the
#   intervals are wide where the estimate moves most with $\gamma$, which is where it should be uncertain.
# * **Accuracy: not met.** Mean |error| 6.1% on the noiseless held-out networks, with depths 4 and 5 above 5%
#   (15.6% and 9.1%) and one network above 15% (8-8-17-16-6 at rank 1, $n = 3000$: +27.5%, flagged, its
#   interval ±43% covers $\lambda$). The estimate at $\gamma$ alone (today's default without the step) does about
#   as well or better here: mean 5.6%, worst 15.4%. On the tuning part the half-shift step had lowered the
#   mean error from 7.4% to 3.9%; on the held-out part it did not help the point estimate. So the step stays for
#   what it does well, the interval; whether $k = 0$ is the better point estimate is a question for a fresh
#   held-out set (choosing it from these rows would make them a training set).
# * **Most of the old set's depth error was the set.** On networks whose truth the data resolve, the estimate at
#   $\gamma$ has a mean |error| of 0.8%, 6.6%, 8.6%, 13%, 0.6% and 3.9% at depths 2 to 7: no longer the −15% to −34%
#   of the unresolved deep networks, and not systematically low.
# * **Noisy targets.** Against $\lambda$, mean |error| 7.2%; against $\lambda$ minus the measured noise offset,
#   7.0%. The offset `noise_offset` measures is a first-order one (L-BFGS from $w^*$ fits the noise in the
#   directions with curvature; the degenerate directions have no gradient at $w^*$), so it is a lower bound on
#   what the chains can fit.
#
# ### Do the diagnostics notice?
#
# The confusion of flagged against wrong on the noiseless held-out rows, with every diagnostic (the chain checks
# and the interval-width test), and with the width test alone:

# %%
def error_class(t: pd.DataFrame) -> pd.Series:
    err = t.rel_error.abs()
    return pd.Series(np.where(err > 0.15, '|error| > 15%', np.where(err <= 0.05, '|error| <= 5%', '5-15%')),
                     index=t.index, name='truth')
width_only = noiseless.half_width > INTERVAL_LIMIT
confusion = pd.concat({name: pd.crosstab(pd.Series(np.where(flags, 'flagged', 'not flagged'), index=noiseless.index,
                                                   name='diagnostics'), error_class(noiseless))
                       for name, flags in [('all diagnostics', noiseless.flagged), ('interval width alone', width_only)]},
                      names=['rule'])
assert noiseless[noiseless.rel_error.abs() > 0.15].flagged.all()            # every bad one is flagged
good = noiseless.rel_error.abs() <= 0.05
print(f'within 5% and cleared: all diagnostics {(~noiseless.flagged[good]).sum()} of {good.sum()}, '
      f'width alone {(~width_only[good]).sum()} of {good.sum()}')
confusion


# %% [markdown]
# Every estimate off by more than 15% is flagged, by either rule. The interval-width test alone clears 5 of
# the 7 estimates within 5%; with the chain checks (MALA acceptance, $\hat R$, ESS, drift, whose limits were
# set on the first set) only 2 of 7 are cleared, because on deep networks the chains at these lengths often
# show $\hat R$ of 1.05–1.12 or acceptance 0.7–0.9 while the estimate is right. "Clear most good rows" holds for the
# width test, not for the chain checks; we leave their limits as they are rather than set them on these rows.

# %% [markdown]
# ## What it costs
#
# `cost_of_default` times `calibrate_at_curvature` + `estimate_llc` under the automatic setting with and without the
# systematic step, in one process on the same model and data, shortened to `n_steps` burn-in and draw steps
# each (the ratio does not depend on the length: the repeat runs a third of the steps).

# %%
#| export
def cost_of_default(model: nn.Module, data, loss='classification', n_steps: int = 500, repeats: int = 2) -> dict:
    """Seconds per estimate of the automatic setting without and with `systematic` (best of `repeats`, taken in
    turn), shortened
    to `n_steps` burn-in + `n_steps` draws, and their ratio."""
    def once(systematic: bool) -> float:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            s = calibrate_at_curvature(model, data, loss, n_burnin=n_steps, n_draws=n_steps, systematic=systematic)
            estimate_llc(model, data, loss, s)
        return time.perf_counter() - t0
    times = [(once(False), once(True)) for _ in range(repeats)]          # interleaved: load changes hit both
    old, new = min(t[0] for t in times), min(t[1] for t in times)
    return dict(without_systematic_s=old, with_systematic_s=new, ratio=new / old, n_steps=n_steps)


# %%
cost = pd.read_csv(DEPTH_RESULTS / 'depth_cost.csv')
assert (cost.ratio > 1).all() and (cost.ratio < 2).all()
cost


# %% [markdown]
# The repeat at $3\gamma$ runs a third of the steps, so by step count the default costs a third more than it did
# (plus a second full-data baseline). The measured ratios above (best of three, taken in turn, one thread, in one
# process, chains shortened to `n_steps`) are 1.69 on the MNIST MLP and 1.34 on the depth-6 DLN; the machine was
# shared with other jobs (load 6–9), and an earlier measurement of the same two gave 1.42 and 2.25, so read them
# as "between a third and two thirds more", not to the digit. Timed separately on the depth-6 DLN, the estimate at
# $\gamma$ took 9.2 s and the repeat 2.3 s. At full length the automatic setting took 37–57 s per network of
# this set on the loaded CPU (the `seconds` column of the tables above).

# %% [markdown]
# ## devinterp on the same networks
#
# devinterp 2.0.1's `llc()` on the 18 held-out networks, with the step size, $n\beta$, localization, chains,
# burn-in, draws and batch size of our automatic setting (`devinterp_llc`; `depth_devinterp.csv`, rebuilt by the
# `#| heavy` cell below). It samples the same posterior with the same update, so it should agree with our estimate
# at $\gamma$ up to Monte-Carlo error and its own averaging; it has no repeat at $3\gamma$ and reports no interval
# beyond the spread of its chains.

# %% [markdown]
# `devinterp_llc` runs devinterp 2.0.1's `llc()` as its documentation shows it (a model, a dataset of
# `input_ids`, a per-token loss, `lr`, `n_beta`, `localization`, chains, burn-in and draws), with a Gaussian
# regression loss on the same data. devinterp has no automatic setting: we give it the step size, $n\beta$,
# localization, chains, batch size and steps that `calibrate_at_curvature` gives our estimator, so the two sample the same
# localized posterior with the same SGLD update ($\Delta w = -\tfrac\epsilon2(n\beta\nabla L_B + \gamma(w-w^*)) +
# \sqrt\epsilon\,\xi$ in both). It returns devinterp's mean LLC over chains and the seconds it took.

# %%
#| export
def devinterp_llc(model: nn.Module, data, settings) -> dict:
    """devinterp 2.0.1's `llc()` on a regression `model` at its weights with `data` = (X, y) under the step size,
    n_beta, localization, chains, burn-in, draws and batch size of `settings`: its LLC and seconds."""
    from datasets import Dataset
    from devinterp.slt.llc import llc
    X, y = data
    nll = gaussian_nll()
    ds = Dataset.from_dict({'input_ids': [[i, i] for i in range(len(X))]}).with_format('torch')
    def loss_fn(m, input_ids):                                     # per-sample loss as one "token" per row
        idx = input_ids[:, 0]
        return nll(m(X[idx]), y[idx])[:, None]
    t0 = time.perf_counter()
    quiet = contextlib.redirect_stderr(io.StringIO())             # its per-chain bars go to a string
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings(), quiet:
        warnings.simplefilter('ignore')
        out = llc(model, ds, {}, lr=settings.step_size, n_beta=settings.n_beta, localization=settings.localization,
                  num_chains=settings.n_chains, num_draws=settings.n_draws, num_burnin_steps=settings.n_burnin,
                  num_steps_bw_draws=settings.steps_between_draws, batch_size=settings.batch_size,
                  num_init_loss_batches=max(1, len(X) // settings.batch_size), loss_fn=loss_fn,
                  device=str(X.device), output_path=str(Path(tmp) / 'samples.zarr'), init_seed=100 + settings.seed)
    return dict(llc=float(out.llc_mean), llc_chain_sd=float(out.llc_std), seconds=time.perf_counter() - t0)


# %%
dev = pd.read_csv(DEPTH_RESULTS / 'depth_devinterp.csv')
side = held.merge(dev[['net', 'llc', 'llc_chain_sd', 'seconds']].rename(
    columns={'llc': 'devinterp', 'llc_chain_sd': 'devinterp_chain_sd', 'seconds': 'devinterp_seconds'}), on='net')
side['devinterp_error'] = side.devinterp / side.true_llc - 1
side['devinterp_covers'] = ((side.devinterp - 2 * side.devinterp_chain_sd / 2 <= side.true_llc)
                            & (side.true_llc <= side.devinterp + 2 * side.devinterp_chain_sd / 2))   # 4 chains: se = sd/2
comparison = pd.DataFrame({
    'mean |error|, noiseless': [side[side.noise == 0].rel_error.abs().mean(),
                                (side[side.noise == 0].llc_raw / side[side.noise == 0].true_llc - 1).abs().mean(),
                                side[side.noise == 0].devinterp_error.abs().mean()],
    'max |error|, noiseless': [side[side.noise == 0].rel_error.abs().max(),
                               (side[side.noise == 0].llc_raw / side[side.noise == 0].true_llc - 1).abs().max(),
                               side[side.noise == 0].devinterp_error.abs().max()],
    'mean |error|, noisy': [side[side.noise == 1].rel_error.abs().mean(),
                            (side[side.noise == 1].llc_raw / side[side.noise == 1].true_llc - 1).abs().mean(),
                            side[side.noise == 1].devinterp_error.abs().mean()],
    'coverage, noiseless': [side[side.noise == 0].covered.mean(), float('nan'),
                            side[side.noise == 0].devinterp_covers.mean()],
    'seconds per network': [side.seconds.mean(), float('nan'), side.devinterp_seconds.mean()]},
    index=['ours: automatic (extrapolated, interval)', 'ours: estimate at γ alone', 'devinterp llc(), same setting'])
comparison.round(3)

# %% [markdown]
# devinterp lands a little below our estimate at $\gamma$ on 17 of the 18 networks (by 2.1% in the median): its
# documented `llc()` averages the loss over every step, the burn-in included, and a burn-in that starts at
# $w^*$ sits at low loss. Its mean |error| on the noiseless networks is 7.1% (worst 18%), against 5.6% for our
# estimate at $\gamma$ and 6.1% for the extrapolated one; its chain spread covers $\lambda$ on 2 of the 12, ours
# with the systematic part on 12. It took 82 s per network where ours took 37 s with the repeat (one thread, the
# same loaded CPU, batch 500, 4 chains of 10,000 steps).

# %%
assert (side.devinterp < side.llc_raw).sum() == 17 and side[side.noise == 0].devinterp_covers.sum() == 2
side[['net', 'depth', 'layers', 'noise', 'true_llc', 'estimate', 'low', 'high', 'llc_raw', 'devinterp',
      'rel_error', 'devinterp_error', 'seconds', 'devinterp_seconds']].round(3)

# %% [markdown]
# ## A second look: two biases, and a fresh held-out set
#
# The held-out part above has been read, so it can no longer judge a new rule. We made it part of a tuning pool
# (the 16 noiseless networks of both parts) and asked two questions of it, each by changing one thing and
# sampling again with `run_depth` (`depth_probes.csv`):
#
# * **Is there a step-size bias?** SGLD with a finite step samples a slightly wider distribution than the
#   posterior, which raises the mean loss. Halving the stiffness ($c = 0.05$, twice the steps, so the same
#   relaxation times) on all 16 networks shows its size.
# * **Is the low estimate at large $n$ a localization effect, or chains that have not settled?** On the networks
#   with $n = 3\cdot10^4$ that are 7–15% low, a third of the localization ($\gamma/3$, three times the steps), and
#   five times the burn-in at the same $\gamma$.
#
# Then a new draw of the set, `depth_set(2028)`, whose 18 held-out networks no rule has seen, judges today's rule
# once, and beside it the one change the probes suggested (written down before any of its rows was read): the
# estimate at half the step size, $\hat\lambda_{c/2}(\gamma) + k\Delta$ with the same $k$ and $w$, whose interval
# also counts the step's move $|\hat\lambda_{c/2} - \hat\lambda_c|$ as systematic. `run_with_half_step` records
# all three raw estimates of a network.

# %%
#| export
HALF_STEP = dict(stiffness=0.05, burnin_stiffness=0.05, n_burnin=10_000, n_draws=10_000, systematic=False)

def run_with_half_step(specs: pd.DataFrame, out=None) -> pd.DataFrame:
    """Per network of `specs`: the automatic setting's estimates at gamma and 3*gamma (`llc_raw`, `llc_stronger`),
    the estimate at half the step size with twice the steps (`llc_half`, `HALF_STEP`), their standard errors and
    seconds, and the noise offset of noisy rows (written to `out` after each network)."""
    rows = []
    for _, row in specs.iterrows():
        model, data = depth_problem(row)
        rec = row.to_dict()
        for label, rules in [('auto', {}), ('half', HALF_STEP)]:
            t0 = time.perf_counter()
            s = regression_settings('auto', model, data, **rules)
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')
                d = estimate_llc(model, data, 'regression', s).diagnostics.iloc[0]
            if label == 'auto':
                rec.update(llc_raw=d.llc_raw, llc_raw_se=d.llc_raw_se, llc_stronger=d.llc_stronger,
                           llc_stronger_se=d.llc_stronger_se, acc=d.mala_acceptance, rhat=d.rhat, ess=d.ess,
                           problems=d.problems, auto_seconds=time.perf_counter() - t0)
            else:
                rec.update(llc_half=d.llc, llc_half_se=d.llc_se, acc_half=d.mala_acceptance, rhat_half=d.rhat,
                           half_seconds=time.perf_counter() - t0)
        rec['offset'] = noise_offset(model, data) if row.noise else 0.0
        rows.append(rec)
        if out is not None:
            write_table(pd.DataFrame(rows), out)            # whole or not at all
    return pd.DataFrame(rows)


# %% [markdown]
# ### What the probes found

# %%
pool = pd.concat([tune_rows, held_rows])
probes = pd.read_csv(DEPTH_RESULTS / 'depth_probes.csv')
probes['at_default'] = pool.set_index('net').llc_raw.reindex(probes.net).to_numpy()
probes['acc_default'] = pool.set_index('net').mala_acceptance.reindex(probes.net).to_numpy()
probes['default_error'] = probes.at_default / probes.true_llc - 1
probes['probe_error'] = probes.llc / probes.true_llc - 1
probes['move'] = probes.llc / probes.at_default - 1
half_probe = probes[probes.probe == 'half step']
by_n = half_probe.groupby('n').agg(nets=('net', 'size'), acceptance=('acc_default', 'mean'),
                                   move=('move', 'mean'), default_error=('default_error', 'mean'),
                                   half_step_error=('probe_error', 'mean'))
print('halving the step, by n (means):')
print(by_n.round(3).to_string())
print(probes[probes.probe != 'half step'][['net', 'n', 'depth', 'probe', 'default_error', 'probe_error']]
      .round(3).to_string(index=False))
assert (by_n.move < 0).all() and by_n.move.idxmin() == 3000                      # the step raises every estimate
g3 = probes[probes.probe == 'gamma/3']
assert (g3.probe_error > g3.default_error).all()                                # a weaker localization: higher
longer = probes[(probes.probe == 'long burn-in') & probes.net.isin([13, 14])]
assert (longer.probe_error < longer.default_error).all()                        # longer burn-in: not higher


# %% [markdown]
# * **The step size raises every estimate, most where MALA acceptance is low.** Halving it lowered the estimate
#   on all 16 networks: by 2.4% on average at $n = 3000$ (mean acceptance 0.82), 1.3% at $10^4$ and 0.9% at
#   $3\cdot10^4$ (acceptance 0.99). On 8-8-17-16-6, the held-out network at +27.5%, the estimate at $\gamma$ went
#   from +10% to +2%. So at $n = 3000$ the estimate at $\gamma$ was close partly because an upward step bias
#   cancelled the localization's downward pull, and the extrapolation step, which corrects only the pull,
#   overshot there.
# * **The large-$n$ gap is not burn-in.** Five times the burn-in did not raise the two networks that are 11% and
#   15% low at $n = 3\cdot10^4$ (they came out at −12% and −19%); a third of the localization raised them by 3 and
#   3.5 points only. The chains have settled; what remains is either a pull that keeps going at much weaker
#   localizations than we can afford to sample, or a finite-$n$ difference between the localized posterior's mean
#   loss and Aoyagi's asymptotic $\lambda$. These probes cannot tell the two apart; we leave it open.

# %% [markdown]
# ### The fresh held-out set
#
# `half_step_rule` is the candidate: the estimate at half the step size, moved by $k$ times the shift at
# $3\gamma$, with an interval of $\pm(w|\Delta| + |\hat\lambda_{c/2} - \hat\lambda_c| + 2\,\mathrm{se})$. Both rules
# keep the package's $k$ and $w$.

# %%
def half_step_rule(rows: pd.DataFrame, extrapolation: float = LOCALIZATION_EXTRAPOLATION,
                   spread: float = LOCALIZATION_SPREAD) -> pd.DataFrame:
    "`rows` of `run_with_half_step` judged by the half-step candidate, with the columns of `apply_rule`."
    shift = rows.llc_raw - rows.llc_stronger
    point = rows.llc_half + extrapolation * shift
    se = np.sqrt(rows.llc_half_se ** 2 + (extrapolation * rows.llc_raw_se) ** 2
                 + (extrapolation * rows.llc_stronger_se) ** 2)
    half = spread * shift.abs() + (rows.llc_half - rows.llc_raw).abs() + 2 * se
    t = rows.assign(estimate=point, low=point - half, high=point + half)
    t['rel_error'] = t.estimate / t.true_llc - 1
    t['covered'] = (t.low <= t.true_llc) & (t.true_llc <= t.high)
    t['half_width'] = half / t.estimate.abs()
    t['flagged'] = ~(t.half_width <= INTERVAL_LIMIT)
    return t

fresh_rows = pd.read_csv(DEPTH_RESULTS / 'depth_fresh.csv')
assert set(fresh_rows.net) == set(depth_set(2028).query("part == 'held-out'").net)
judged = {'today (extrapolated)': apply_rule(fresh_rows, LOCALIZATION_EXTRAPOLATION, LOCALIZATION_SPREAD),
          'today, estimate at γ alone': apply_rule(fresh_rows, 0.0, LOCALIZATION_SPREAD),
          'half step (candidate)': half_step_rule(fresh_rows)}
def fresh_summary(t: pd.DataFrame) -> dict:
    clean, noisy = t[t.noise == 0], t[t.noise == 1]
    per_depth = clean.assign(a=clean.rel_error.abs()).groupby('depth').a.mean()
    target = noisy.true_llc - noisy.offset
    return {'mean |error|, noiseless': clean.rel_error.abs().mean(), 'max |error|, noiseless': clean.rel_error.abs().max(),
            'depths above 5%': ', '.join(str(d) for d in per_depth.index[per_depth > 0.05]) or 'none',
            'rows above 15%': int((clean.rel_error.abs() > 0.15).sum()),
            'coverage, noiseless': clean.covered.mean(), 'median half-width': clean.half_width.median(),
            'within 5%, cleared by the width test': f"{int((~clean.flagged[clean.rel_error.abs() <= 0.05]).sum())} of "
                                                    f"{int((clean.rel_error.abs() <= 0.05).sum())}",
            'mean |error|, noisy vs λ': noisy.rel_error.abs().mean(),
            'mean |error|, noisy vs λ − offset': (noisy.estimate / target - 1).abs().mean()}
fresh_table = pd.DataFrame({name: fresh_summary(t) for name, t in judged.items()}).T
fresh_table.loc['today, estimate at γ alone', ['coverage, noiseless', 'median half-width',
                                                'within 5%, cleared by the width test']] = np.nan   # no interval of its own
today_fresh, half_fresh = fresh_table.loc['today (extrapolated)'], fresh_table.loc['half step (candidate)']
# what the prose below says
assert round(today_fresh['mean |error|, noiseless'], 3) == 0.056 and today_fresh['rows above 15%'] == 0
assert today_fresh['coverage, noiseless'] == 11 / 12 and today_fresh['depths above 5%'] == '4, 5, 6, 7'
assert round(half_fresh['mean |error|, noiseless'], 3) == 0.048 and half_fresh['rows above 15%'] == 1
assert today_fresh['within 5%, cleared by the width test'] == '2 of 6'
assert judged['today (extrapolated)'].query('noise == 1').covered.all()        # the six noisy rows: covered
fresh_table.map(lambda v: round(v, 3) if isinstance(v, float) else v)

# %%
fig, ax = plt.subplots(figsize=(7.5, 3.8))
shown = judged['today (extrapolated)'].sort_values(['depth', 'noise', 'net']).reset_index(drop=True)
for i, r in shown.iterrows():
    colour = 'C3' if r.noise else 'C0'
    ax.errorbar(i, r.estimate / r.true_llc, yerr=[[(r.estimate - r.low) / r.true_llc], [(r.high - r.estimate) / r.true_llc]],
                fmt='o', color=colour, capsize=2)
    ax.plot(i, r.llc_half / r.true_llc, 'x', color='0.4', ms=5)
ax.axhline(1, color='k', lw=0.8)
ax.axhspan(0.95, 1.05, color='C2', alpha=0.15, label='within 5%')
ax.set_xticks(range(len(shown)), shown.depth.astype(str))
ax.set(xlabel='depth (blue: noiseless, red: noisy; x: estimate at half the step)', ylabel='estimate / Aoyagi λ',
       title='a fresh held-out set (depth_set(2028)): today\'s estimate and interval')
ax.legend(fontsize=7, loc='upper left')
plt.tight_layout()

# %% [markdown]
# On 18 networks that no rule had seen (12 noiseless, 6 noisy), today's automatic setting, unchanged:
#
# * **No noiseless estimate is off by more than 15%** (worst 13.2%, a depth-5 network at $n = 10^4$): met.
# * **Mean |error| 5.6%**, above 5% at depths 4 to 7: the 5%-at-every-depth target is **not met**, as on the first
#   held-out part (6.1%). Two independent held-out sets now agree that the default is good to about 6% in the mean
#   and not 5%.
# * **Coverage 11 of 12 (92%)**, at a median half-width of 17% (a full width of 34%): the coverage target (90%) is
#   met; the width target (a median width of 20%) is met only if read as a half-width. The width test clears
#   2 of the 6 estimates within 5% (on the first held-out part, 5 of 7): "clear most good rows" is not met here.
# * The half-step candidate gains less than a point (mean 4.8%, one row at 15.4%) for 2.5 times the cost
#   (29 s more per network on top of 19 s). Neither rule reaches the target; we keep today's and do not change the
#   default.
# * Noisy targets: the extrapolated estimate is 17% off $\lambda$ in the mean (21% off $\lambda$ minus the
#   measured offset), the estimate at $\gamma$ alone 10%. Three of the four noisy rows at $n = 3000$ are 19–31% above:
#   with noise, the chains fit the sample's noise, the repeat at $3\gamma$ moves far, and the extrapolation
#   overshoots. The interval is wide there and covers $\lambda$ on all six noisy networks.
#
# The cost of the default is unchanged by this section. To rebuild its rows: `run_depth` on the pool with
# `HALF_STEP` (and with `localization_ratio=1e-3` or `n_burnin=25_000`) for the probes, `run_with_half_step` on
# the fresh held-out part (about 15 minutes of two processes, one thread each, on the idle development CPU,
# 2026-11-27).

# %% [markdown]
# devinterp 2.0.1's `llc()` on the same 18 fresh networks, at our automatic setting (`run_devinterp`,
# `depth_fresh_devinterp.csv`), in the columns of the first comparison:

# %%
dev_fresh = pd.read_csv(DEPTH_RESULTS / 'depth_fresh_devinterp.csv')
fresh_side = judged['today (extrapolated)'].merge(dev_fresh[['net', 'llc', 'llc_chain_sd', 'seconds']].rename(
    columns={'llc': 'devinterp', 'llc_chain_sd': 'devinterp_chain_sd', 'seconds': 'devinterp_seconds'}), on='net')
fresh_side['devinterp_error'] = fresh_side.devinterp / fresh_side.true_llc - 1
fresh_side['raw_error'] = fresh_side.llc_raw / fresh_side.true_llc - 1
fresh_side['devinterp_covers'] = ((fresh_side.devinterp - fresh_side.devinterp_chain_sd <= fresh_side.true_llc)
                                  & (fresh_side.true_llc <= fresh_side.devinterp + fresh_side.devinterp_chain_sd))
fc, fn = fresh_side[fresh_side.noise == 0], fresh_side[fresh_side.noise == 1]
fresh_comparison = pd.DataFrame({
    'mean |error|, noiseless': [fc.rel_error.abs().mean(), fc.raw_error.abs().mean(), fc.devinterp_error.abs().mean()],
    'max |error|, noiseless': [fc.rel_error.abs().max(), fc.raw_error.abs().max(), fc.devinterp_error.abs().max()],
    'mean |error|, noisy': [fn.rel_error.abs().mean(), fn.raw_error.abs().mean(), fn.devinterp_error.abs().mean()],
    'coverage, noiseless': [fc.covered.mean(), float('nan'), fc.devinterp_covers.mean()],
    'seconds per network': [fresh_side.auto_seconds.mean(), float('nan'), fresh_side.devinterp_seconds.mean()]},
    index=['ours: automatic (extrapolated, interval)', 'ours: estimate at γ alone', 'devinterp llc(), same setting'])
assert (fresh_side.devinterp < fresh_side.llc_raw).sum() == 17 and fc.devinterp_covers.sum() == 2
assert round(fc.devinterp_error.abs().mean(), 3) == 0.104
fresh_comparison.round(3)

# %% [markdown]
# As on the first held-out part, devinterp lands below our estimate at $\gamma$ on 17 of the 18 networks (by 3.6%
# in the median; it averages its burn-in too): mean |error| 10.4% on the noiseless networks (worst 38%), against
# 7.3% for our estimate at $\gamma$ and 5.6% for the extrapolated one. Its chain spread covers $\lambda$ on 2 of
# the 12; our interval covers 11. It took 44 s per network where ours took 19 s with the repeat (one thread,
# two processes on the idle 2-core CPU, 2026-11-27). On the noisy networks it does best (9.5%, our estimate at
# $\gamma$ 10.1%): there our extrapolation overshoots, and devinterp's lower reading lands closer.

# %%
#| heavy
from fracsgd.llc.depth import run_devinterp              # defined further down this page
fresh_specs = depth_set(2028).query("part == 'held-out'")
run_with_half_step(fresh_specs, out=DEPTH_RESULTS / 'depth_fresh.csv')
run_devinterp(fresh_specs, out=DEPTH_RESULTS / 'depth_fresh_devinterp.csv')


# %% [markdown]
# To rebuild the committed rows (the `#| heavy` cells, not run in the tests): the tuning and held-out parts take
# about 5 and 15 minutes of one thread, devinterp about 25 (on the loaded development CPU, 2026-11-26).

# %%
#| export
def run_devinterp(specs: pd.DataFrame, out=None) -> pd.DataFrame:
    "`devinterp_llc` under the automatic setting of every network of `specs` (written to `out` after each)."
    rows = []
    for _, row in specs.iterrows():
        model, data = depth_problem(row)
        s = calibrate_at_curvature(model, data, 'regression')
        rows.append(dict(row.to_dict(), localization=s.localization, step_size=s.step_size, n_beta=s.n_beta,
                         n_burnin=s.n_burnin, n_draws=s.n_draws, **devinterp_llc(model, data, s)))
        if out is not None:
            write_table(pd.DataFrame(rows), out)            # whole or not at all
    return pd.DataFrame(rows)


# %%
#| heavy
run_depth(depth_specs[depth_specs.part == 'tune'], out=DEPTH_RESULTS / 'depth_tune.csv')
run_devinterp(depth_specs[depth_specs.part == 'held-out'], out=DEPTH_RESULTS / 'depth_devinterp.csv')
run_depth(depth_specs[depth_specs.part == 'held-out'], out=DEPTH_RESULTS / 'depth_held_out.csv')
