# %% [markdown]
# # LLC validation
#
# > The LLC estimator on forty random deep linear networks it was not tuned for: a validation set with a tuning part and a held-out part fixed in advance, an exact full-batch MALA reference, the experiment table, and how often the diagnostics catch a bad estimate.

# %%
#| default_exp llc.validation

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import math, time, warnings

import numpy as np
import pandas as pd
import torch

from fracsgd.llc.dln import aoyagi_dln_lambda, regression_settings
from fracsgd.core import committed_dir, write_table
from fracsgd.llc.estimate import estimate_llc, top_hessian_eigenvalue
from fracsgd.llc.result import MIN_RELAXATIONS, chain_statistics, llc_problems
from fracsgd.llc.localization import SENSITIVITY_TOLERANCE, localization_sensitivity
from fracsgd.nets.models import make_dln
from fracsgd.llc.sgld import LangevinState, SGLDDivergenceError, default_n_beta, mala_acceptance
from fracsgd.nets.stack import ModelStack, batched_loss, full_data_loss, gaussian_nll

# %%
import matplotlib.pyplot as plt
torch.set_num_threads(1)   # the models on this page are small: one thread avoids contention on small CPUs

# %% [markdown]
# ## Why a validation set
#
# The [DLN chapter](dln.html) checks the estimator on seven networks, and the automatic setting of the
# [LLC chapter](llc.html) was first chosen by looking at two of them. Seven shapes that all widen and narrow
# the same way hide what a new user meets: on other minimal-rank networks the same setting was off by up to
# +182%. So we judge the estimator the way one judges a model, on data it was not fitted to: a generator of
# random deep linear networks whose exact learning coefficient is Aoyagi's $\lambda$ (Aoyagi 2024; Lau et al.
# 2024, appendix I), split **before any tuning** into a tuning part and a held-out part.
#
# `validation_set` draws, with a seeded generator, networks of 2 to 5 layers with widths 5 to 20, a rank $r$
# between 1 and the smallest width minus one (every layer of the true parameter has rank $r$: a minimal-rank
# truth, whose local coefficient is Aoyagi's), targets without noise or with Gaussian noise $\sigma=1$, and
# $n\in\{3000, 10^4, 3\cdot10^4\}$ samples. Draws that are not singular ($\lambda = d/2$) are skipped.
#
# **Read this page with the [LLC-at-depth chapter](llc_depth.html).** It shows that 37 of the 40 networks of
# this set (all of depth 3 to 5) have truths the data cannot resolve at their $n$: the end-to-end map's smallest
# singular value is worth less than 10 posterior loss scales. Their errors measure that as much as the
# estimator. That chapter builds a depth-covering set whose truths are resolved, and the localization's
# systematic error that `estimate_llc` now reports. The automatic setting is now `calibrate_at_curvature` with
# `systematic=True`: where this page reruns it, its estimate is the extrapolated one; the committed rows below
# were made without the step.
#
# **The split, written down before tuning:** the first 16 networks the generator draws (seed 2026) are the
# tuning part; the next 24 are held out. Every choice of setting on this page was made on the tuning part
# only; the held-out numbers were computed once, after the default was fixed.

# %%
#| export
N_TUNE, N_HELD_OUT = 16, 24

def validation_set(n_nets: int = N_TUNE + N_HELD_OUT, seed: int = 2026) -> pd.DataFrame:
    """Random minimal-rank DLNs with their exact lambda: one row per network (`layers`, `rank`, `d`,
    `true_llc`, `noise`, `n`, `part`). The first `N_TUNE` are the tuning part, the rest are held out."""
    rng, rows = np.random.default_rng(seed), []
    while len(rows) < n_nets:
        depth = int(rng.integers(2, 6))
        sizes = [int(h) for h in rng.integers(5, 21, depth + 1)]
        r = int(rng.integers(1, min(sizes)))
        d = sum(a * b for a, b in zip(sizes[:-1], sizes[1:]))
        lam = float(aoyagi_dln_lambda(sizes, r))
        if lam >= d / 2:                                    # regular: not what this set is for
            continue
        i = len(rows)
        rows.append(dict(net=i, layers='-'.join(map(str, sizes)), rank=r, d=d, true_llc=lam,
                         noise=float(rng.choice([0.0, 1.0])), n=int(rng.choice([3000, 10_000, 30_000])),
                         part='tune' if i < N_TUNE else 'held-out'))
    return pd.DataFrame(rows)

def validation_problem(row, build=make_dln) -> tuple:
    """The network (at its true weights, made by `build(sizes, rank, seed=net)`) and the data `(X, y)` of one row
    of `validation_set` (or of another set with its columns)."""
    sizes = [int(h) for h in str(row['layers']).split('-')]
    model = build(sizes, int(row['rank']), seed=int(row['net']))
    g = torch.Generator().manual_seed(10_000 + int(row['net']))
    X = torch.randn(int(row['n']), sizes[0], generator=g)                       # [n, H_0]
    with torch.no_grad():
        y = model(X)
    return model, (X, y + float(row['noise']) * torch.randn(y.shape, generator=g))


# %%
specs = validation_set()
assert len(specs) == 40 and (specs.part == 'tune').sum() == 16 and specs.net.is_unique
assert (specs.true_llc < specs.d / 2).all() and set(specs.noise) == {0.0, 1.0} and specs.n.nunique() == 3
assert validation_set().equals(specs)                                   # the same set on every machine
m0, (X0, y0) = validation_problem(specs.iloc[0])
assert X0.shape == (specs.n[0], int(specs.layers[0].split('-')[0])) and len(m0) == specs.layers[0].count('-')
print(specs.groupby('part')[['d', 'true_llc', 'noise', 'n']].describe().T.round(1).to_string())
specs


# %% [markdown]
# ## An exact reference: full-batch MALA
#
# SGLD has two sources of error besides the Monte-Carlo one: its discretization (minibatch gradients, no
# rejection) and the target itself, the localized tempered posterior
# $p(w)\propto\exp\{-n\beta L_n(w)-\tfrac\gamma2\|w-w^*\|^2\}$ at finite $n$ and $\gamma>0$. To tell them apart,
# `mala_llc` samples the same target exactly: full-batch Langevin proposals with a Metropolis accept/reject step
# (the acceptance of the [SGLD chapter](sgld.html)), every chain of one model in one vectorized step. What is
# left between its estimate and Aoyagi's $\lambda$ belongs to the target, not to SGLD. It is affordable for
# small models only (a full pass over the data per step).

# %%
#| export
def mala_llc(model, data, localization: float, step_size: float, n_draws: int = 4000, n_burnin: int = 2000,
             n_chains: int = 4, n_beta: float | None = None, seed: int = 0) -> dict:
    """The LLC of `model` at its weights by full-batch MALA on the localized tempered posterior of the
    Gaussian-noise regression loss: the estimate, its statistics and the mean acceptance."""
    X, y = data
    nb = n_beta or default_n_beta(len(X))
    stack = ModelStack([model], 'cpu')
    f = batched_loss(stack.template, gaussian_nll())
    w_star = stack.flat.repeat(n_chains, 1)                                    # [chains, params]
    Xc, yc = X.expand(n_chains, *X.shape), y.expand(n_chains, *y.shape)
    g = torch.Generator().manual_seed(seed)

    def state(w):
        w = w.detach().requires_grad_(True)
        loss = f(stack.params(w), {}, Xc, yc)                                  # [chains], L_n(w)
        potential = nb * loss + localization / 2 * (w - w_star).pow(2).sum(1)
        grad, = torch.autograd.grad(potential.sum(), w)
        return LangevinState(w.detach(), potential.detach(), grad), loss.detach()

    (cur, cur_loss), losses, accepted = state(w_star), [], []
    for t in range(n_burnin + n_draws):
        proposal = cur.w - step_size / 2 * cur.grad + math.sqrt(step_size) * torch.randn(cur.w.shape, generator=g)
        new, new_loss = state(proposal)
        acc = mala_acceptance(LangevinState(*(v.double() for v in cur)),
                              LangevinState(*(v.double() for v in new)), step_size)
        take = torch.rand(n_chains, generator=g, dtype=torch.float64) < acc      # [chains]
        cur = LangevinState(*(torch.where(take[:, None] if a.ndim == 2 else take, b, a)
                              for a, b in zip(cur, new)))
        cur_loss = torch.where(take, new_loss, cur_loss)
        if t >= n_burnin:
            losses.append(cur_loss.double())
            accepted.append(acc)
    base = float(full_data_loss(f, stack.params(stack.flat), {}, X, y))
    values = nb * (torch.stack(losses, 1).numpy() - base)                      # [chains, draws]
    return dict(chain_statistics(values), mala_acceptance=float(torch.stack(accepted).mean()))


# %% [markdown]
# On a regular model the exact sampler must give $d/2$ up to the localization's small pull: linear regression
# $\mathbb R^4\to\mathbb R^2$ (a one-layer DLN, $d=8$, $\lambda=4$) with noisy targets:

# %%
reg = make_dln([4, 2], 2, seed=0)
Xr = torch.randn(2000, 4, generator=torch.Generator().manual_seed(1))
yr = reg(Xr).detach() + torch.randn(2000, 2, generator=torch.Generator().manual_seed(2))
t0 = time.time()
exact = mala_llc(reg, (Xr, yr), localization=1.0, step_size=0.5 / default_n_beta(2000), n_draws=3000,
                 n_burnin=500)
print(f"{time.time() - t0:.1f} s", {k: round(v, 3) for k, v in exact.items()})
# truth 4, up to the WBIC fluctuation of order sqrt(lambda / (2 log n)) ~ 0.5 (the baseline is the true w*,
# not the minimum of this sample's loss) plus 4 Monte-Carlo standard errors (seed 0)
assert abs(exact['llc'] - 4) < 0.6 + 4 * exact['llc_se'] and 0.5 < exact['mala_acceptance'] < 1, exact


# %% [markdown]
# ## Running the set
#
# `run_validation` estimates the LLC of every network of a part of the set under one setting (`'auto'`,
# `'paper'` or an `SGLDSettings`, as in `dln_table`), and records the relative error against Aoyagi's $\lambda$
# together with the estimator's own diagnostics: MALA acceptance, drift $z$, $\hat R$, ESS, the reach used
# $\gamma\,\overline{\|w-w^*\|^2}/d$, and whether the estimate was `flagged`. `flag_confusion` then counts
# flagged estimates against estimates whose error exceeds a limit.

# %%
#| export
def run_validation(specs: pd.DataFrame, setting='auto', device=None, sensitivity: tuple = (),
                   **changes) -> pd.DataFrame:
    """Estimated against exact LLC, with the diagnostics, for every network of `specs` under one setting.
    `retries` counts the back-off's retries; a run still diverging after them has no estimate. For each factor
    of `sensitivity`, `localization_sensitivity` adds the column `shift_x<factor>` (one more run per factor,
    timed in `sensitivity_seconds`)."""
    rows = []
    for _, row in specs.iterrows():
        model, data = validation_problem(row)
        t0 = time.perf_counter()
        settings = regression_settings(setting, model, data, device, **changes)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')           # counted below; the flags are in the row
            try:
                res = estimate_llc(model, data, 'regression', settings, device=device)
            except SGLDDivergenceError as e:
                res = e
        seconds = time.perf_counter() - t0
        out = dict(row.to_dict(), localization=settings.localization,
                   retries=sum('SGLD diverged; retrying' in str(w.message) for w in caught))
        if isinstance(res, SGLDDivergenceError):
            rows.append(dict(out, estimate=np.nan, rel_error=np.nan, step_size=res.step_size, flagged=True,
                             problems=f'diverged after the back-off: {res}', seconds=seconds))
            continue
        d = res.diagnostics.iloc[0]
        if sensitivity:                            # the step sizes the estimate used, after any back-off
            t1 = time.perf_counter()
            used = settings.replace(step_size=d.step_size, burnin_step_size=d.burnin_step_size)
            try:
                shifts = localization_sensitivity(model, data, 'regression', used, factors=sensitivity,
                                                  base=res.llc, device=device)['shifts']
            except SGLDDivergenceError:                # counts as moved: no estimate at the other localization
                shifts = {float(f): np.nan for f in sensitivity}
            out.update({f'shift_x{f:g}': v for f, v in shifts.items()}, sensitivity_seconds=time.perf_counter() - t1)
        rows.append(dict(out, estimate=res.llc, se=res.llc_se, rel_error=res.llc / row['true_llc'] - 1,
                         step_size=d.step_size, burnin_step_size=res.settings.step_size_at(0),
                         mala=d.mala_acceptance, drift_z=d.drift_z, rhat=d.rhat, ess=d.ess,
                         reach_used=d.reach_used, relaxations=d.relaxations, flagged=d.flagged, problems=d.problems,
                         seconds=seconds))
    return pd.DataFrame(rows)

def flag_confusion(table: pd.DataFrame, limit: float = 0.15) -> pd.DataFrame:
    "Counts of flagged / not flagged estimates against |relative error| above / within `limit` (or no estimate)."
    err = table.rel_error.abs()
    wrong = np.where(err.isna(), 'diverged', np.where(err > limit, f'|error| > {limit:.0%}', f'|error| <= {limit:.0%}'))
    flagged = np.where(table.flagged.astype(bool), 'flagged', 'not flagged')
    return pd.crosstab(pd.Series(flagged, name='diagnostics'), pd.Series(wrong, name='truth'))


# %% [markdown]
# `summarize` reduces such tables, one row per setting: the mean and largest |relative error| (a run that
# diverged counts as a failure, with no error), how many estimates are off by more than 15%, how many were
# flagged, and the measured time.

# %%
#| export
def summarize(table: pd.DataFrame, by: str = 'setting') -> pd.DataFrame:
    "Per setting: nets, mean and max |relative error|, errors > 15%, diverged runs, flagged runs, minutes."
    err = table.rel_error.abs()
    return (table.assign(abs_error=err, over_15=err > 0.15, diverged=err.isna(), flagged=table.flagged.astype(bool))
            .groupby(by, sort=False)
            .agg(nets=('net', 'size'), mean_abs_error=('abs_error', 'mean'), max_abs_error=('abs_error', 'max'),
                 over_15=('over_15', 'sum'), diverged=('diverged', 'sum'), flagged=('flagged', 'sum'),
                 minutes=('seconds', lambda s: s.sum() / 60)))


# %% [markdown]
# A quick check that runs in CI: the smallest held-out network under the default, with a quarter of the steps.

# %%
small = specs[specs.part == 'held-out'].nsmallest(1, 'd')
t0 = time.time()
quick = run_validation(small, 'auto', n_burnin=1000, n_draws=1000)
print(f"{time.time() - t0:.0f} s")
assert set(quick.columns) >= {'rel_error', 'flagged', 'rhat', 'ess', 'reach_used', 'relaxations'}
assert flag_confusion(quick).to_numpy().sum() == 1 and summarize(quick.assign(setting='quick')).nets.iloc[0] == 1
quick[['layers', 'rank', 'noise', 'n', 'true_llc', 'estimate', 'rel_error', 'mala', 'rhat', 'reach_used', 'problems']]


# %% [markdown]
# ## Results
#
# The experiments ran outside the tests, one network at a time on one thread of the shared 2-core development
# CPU (torch 2.14.1, 2026-11-23; other jobs kept the load at 6–8, so each run took 4–8 times its time on a quiet
# machine). Their rows, one per network and setting, are committed as `nbs/llc_validation/tuning.csv` and
# `nbs/llc_validation/held_out.csv`, with the measured seconds; `validation_results` reads them, and the `#| heavy`
# cell at the end reruns the held-out part. A setting is named by its sampler, $q=\gamma/(n\beta h_{\max})$,
# the stiffness $c = \epsilon\,(n\beta h_{\max}+\gamma)$ (sampling/burn-in when they differ) and the burn-in +
# draws. The flags were recomputed from the recorded numbers with the final `llc_problems` (the early grid runs
# recorded neither $\hat R$ nor ESS, and their reach used comes from the last distance only). The rows added
# on 2026-11-24 (RMSprop-SGLD, the long chains, and `sensitivity.csv`) ran with torch 2.15.0, one network at a
# time on one thread while other jobs used the other core (load 2–3), each by `validation_grid` on one network
# of its grid entry; their seconds are within about 1.5 times a quiet machine's.

# %%
#| export
def validation_results(part: str = 'held-out') -> pd.DataFrame:
    """The committed validation rows of `part` ('tune' or 'held-out'; 'sensitivity': the default's localization
    sensitivity on both parts), from `nbs/llc_validation/` of this checkout."""
    name = {'tune': 'tuning.csv', 'held-out': 'held_out.csv', 'sensitivity': 'sensitivity.csv'}
    if part not in name:
        raise ValueError(f"part must be 'tune', 'held-out' or 'sensitivity', got {part!r}")
    path = committed_dir('llc_validation', name[part])
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: the committed results live in a development checkout")
    return pd.read_csv(path)


# %% [markdown]
# ### Rebuilding the experiment table
#
# `TUNING_GRID` lists the settings of the experiment table below, each with the tuning networks it was run on;
# `validation_grid` reruns such a list on a part of the set and returns (and, given `out`, writes after every
# setting) rows in the layout of `tuning.csv`. An SGLD entry is a `calibrate_at_curvature` rule: $q$ is its
# `localization_ratio`, $c$ its `stiffness` (and `burnin_stiffness`); a MALA entry runs `mala_llc` at the
# $\gamma$ and step size that rule gives; `'paper'` is the preset. An entry may carry its own `label`.

# %%
#| export
TUNING_GRID = [                 # the committed experiment table; nets: the tuning networks run (None: all 16)
    dict(sampler='SGLD', q=1e-2, stiffness=0.1, n_burnin=4000, n_draws=4000, nets=[0, 1, 2]),
    dict(sampler='SGLD', q=1e-3, stiffness=0.1, n_burnin=4000, n_draws=4000),
    dict(sampler='SGLD', q=1e-4, stiffness=0.1, n_burnin=5000, n_draws=5000, nets=[1]),
    dict(sampler='SGLD', q=1e-4, stiffness=0.3, n_burnin=6000, n_draws=6000, nets=[0, 1, 3, 4, 7]),
    dict(sampler='SGLD', q=1e-4, stiffness=0.3, burnin_stiffness=2.0, n_burnin=6000, n_draws=6000,
         nets=list(range(10))),
    dict(sampler='SGLD', q=3e-3, stiffness=0.1, n_burnin=5000, n_draws=5000),
    dict(sampler='paper'),
    dict(sampler='MALA', q=1e-3, stiffness=0.3, n_burnin=2000, n_draws=2000, nets=[2]),
    dict(sampler='MALA', q=1e-4, stiffness=0.3, n_burnin=2000, n_draws=2000, nets=[2]),
    dict(sampler='SGLD', q=3e-3, stiffness=0.1, n_burnin=5000, n_draws=5000, nets=[3],   # the default's divergence,
         label='SGLD q=3e-3 c=0.1 5000+5000, new back-off'),                            # rerun with the new back-off
    dict(sampler='SGLD', q=1e-4, stiffness=0.3, n_burnin=6000, n_draws=6000, nets=[0, 1, 4, 7],
         label='SGLD q=1e-4 c=0.3 6000+6000, new back-off'),
    # session 6: RMSprop-SGLD on the 8 tuning networks with the fewest parameters, and long chains
    dict(sampler='RMSprop', q=3e-3, stiffness=0.1, n_burnin=5000, n_draws=5000, nets=[0, 4, 5, 6, 9, 11, 14, 15]),
    dict(sampler='RMSprop', q=1e-3, stiffness=0.3, n_burnin=5000, n_draws=5000, nets=[0, 4, 5, 6, 9, 11, 14, 15]),
    dict(sampler='SGLD', q=1e-4, stiffness=0.1, n_burnin=150_000, n_draws=150_000, nets=[4, 14]),
]

SENSITIVITY_GRID = [            # the default with its localization sensitivity, on both parts (sensitivity.csv)
    dict(sampler='SGLD', q=3e-3, stiffness=0.1, n_burnin=5000, n_draws=5000, sensitivity=(3,)),
]

def grid_label(spec: dict) -> str:
    "The name of a grid entry in the tables: sampler, q, stiffness (sampling/burn-in) and burn-in + draws."
    if 'label' in spec:
        return spec['label']
    if spec['sampler'] == 'paper':
        return 'paper preset'
    c, cb = spec['stiffness'], spec.get('burnin_stiffness', spec['stiffness'])
    q = f"{spec['q']:.0e}".replace('e-0', 'e-')
    name = {'SGLD': 'SGLD', 'RMSprop': 'RMSprop-SGLD', 'MALA': 'MALA (full batch)'}[spec['sampler']]
    sens = ''.join(f', sensitivity x{f:g}' for f in spec.get('sensitivity', ()))
    return f"{name} q={q} c={c:g}{f'/{cb:g}' if cb != c else ''} {spec['n_burnin']}+{spec['n_draws']}{sens}"

def _mala_rows(specs: pd.DataFrame, spec: dict, device) -> pd.DataFrame:
    "`mala_llc` on every network of `specs` at the localization and step size of `spec`'s rule."
    rows = []
    for _, row in specs.iterrows():
        model, data = validation_problem(row)
        t0 = time.perf_counter()
        nb = default_n_beta(len(data[0]))
        h = abs(top_hessian_eigenvalue(model, data, 'regression', device=device))
        gamma = spec['q'] * nb * h
        eps = spec['stiffness'] / (nb * h + gamma)
        r = mala_llc(model, data, gamma, eps, n_draws=spec['n_draws'], n_burnin=spec['n_burnin'])
        relax = eps * gamma * (spec['n_burnin'] + spec['n_draws'])
        problems = llc_problems(r['llc'], r['llc_se'], r['mala_acceptance'], r['drift_z'], r['rhat'], r['ess'],
                                relaxations=relax)
        rows.append(dict(row.to_dict(), localization=gamma, estimate=r['llc'], se=r['llc_se'],
                         rel_error=r['llc'] / row['true_llc'] - 1, step_size=eps, mala=r['mala_acceptance'],
                         drift_z=r['drift_z'], rhat=r['rhat'], ess=r['ess'], relaxations=relax,
                         flagged=bool(problems), problems=problems, seconds=time.perf_counter() - t0))
    return pd.DataFrame(rows)

def validation_grid(settings_list: list = TUNING_GRID, part: str = 'tune', device='cpu', out=None) -> pd.DataFrame:
    """Rows of the experiment table for the entries of `settings_list` on the networks of `part`
    ('tune' or 'held-out'; an entry's `nets` picks some), in the layout of `tuning.csv`."""
    if part not in ('tune', 'held-out'):
        raise ValueError(f"part must be 'tune' or 'held-out', got {part!r}")
    specs, tables = validation_set(), []
    specs = specs[specs.part == part]
    for spec in settings_list:
        chosen = specs if spec.get('nets') is None else specs[specs.net.isin(spec['nets'])]
        if spec['sampler'] == 'MALA':
            rows = _mala_rows(chosen, spec, device)
        elif spec['sampler'] == 'paper':
            rows = run_validation(chosen, 'paper', device)
        else:
            rows = run_validation(chosen, 'auto', device, sensitivity=spec.get('sensitivity', ()),
                                  localization_ratio=spec['q'], stiffness=spec['stiffness'],
                                  burnin_stiffness=spec.get('burnin_stiffness', spec['stiffness']),
                                  n_burnin=spec['n_burnin'], n_draws=spec['n_draws'],
                                  preconditioner='rmsprop' if spec['sampler'] == 'RMSprop' else 'none')
        sampler = {'SGLD': 'SGLD', 'RMSprop': 'RMSprop-SGLD', 'MALA': 'MALA (full batch)',
                   'paper': 'SGLD (paper preset)'}[spec['sampler']]
        rows.insert(0, 'setting', grid_label(spec))
        rows.insert(1, 'sampler', sampler)
        for k in ('q', 'stiffness', 'burnin_stiffness', 'n_burnin', 'n_draws'):
            rows[k] = spec.get(k, spec.get('stiffness') if k == 'burnin_stiffness' else np.nan)
        tables.append(rows)
        if out is not None:
            write_table(pd.concat(tables, ignore_index=True), out)
    return pd.concat(tables, ignore_index=True)


# %% [markdown]
# **Where the committed rows come from.** The rows of `tuning.csv` were computed before `validation_grid`
# existed, by uncommitted scripts that called `run_validation` and `mala_llc` with the settings now listed in
# `TUNING_GRID` (same seeds as far as we know; the two MALA rows' chain count and seed were not recorded, we
# assume the defaults). `validation_grid` rebuilds every row from committed code, but the whole grid has not been
# rerun to check that it reproduces them (about 90 minutes of one thread here); and the rows of the previous
# rule were run under the earlier back-off, which halved only the sampling step, so rerunning them now gives
# other rows (the last entry of `TUNING_GRID`, below). A grid that runs in the tests: one small tuning network
# under a short SGLD rule, with the labels of the committed table:

# %%
smallest_tuning_net = int(specs[specs.part == 'tune'].nsmallest(1, 'd').net.iloc[0])
short = [dict(sampler='SGLD', q=1e-2, stiffness=0.1, n_burnin=300, n_draws=300, nets=[smallest_tuning_net])]
t0 = time.time()
mini = validation_grid(short)
print(f"{time.time() - t0:.0f} s")
assert len(mini) == 1 and mini.setting.iloc[0] == 'SGLD q=1e-2 c=0.1 300+300' and mini.retries.iloc[0] == 0
assert set(validation_results('tune').columns) <= set(mini.columns)
assert {grid_label(g) for g in TUNING_GRID} == set(validation_results('tune').setting)
try:
    validation_grid(short, part='test')
    raise AssertionError
except ValueError as e:
    assert 'part' in str(e)
mini[['setting', 'net', 'layers', 'true_llc', 'estimate', 'rel_error', 'retries', 'seconds']]

# %% [markdown]
# To rebuild the tuning table (the `#| heavy` cell, not run in the tests): 89 minutes of one thread on the
# loaded development CPU, by the seconds recorded in `tuning.csv` (three rows did not record their time), plus
# 13 minutes for the rows added on 2026-11-24 (RMSprop-SGLD and the two long chains).

# %%
#| heavy
rebuilt = validation_grid(TUNING_GRID, 'tune', out='llc_validation/tuning_rebuilt.csv')
summarize(rebuilt)

# %% [markdown]
# ### The experiment table (tuning part)
#
# Step size × localization × chain length × sampler, as far as the CPU allowed. Every SGLD row uses 4 chains and
# batch 500. The full-batch MALA rows are the exact sampler of the same target on one network.

# %%
tuning = validation_results('tune')
experiments = summarize(tuning, by=['sampler', 'setting'])

def with_new_backoff(table: pd.DataFrame, label: str) -> pd.Series:
    "|relative error| of the `label` rows, a diverged one replaced by its 'new back-off' rerun when there is one."
    rows = table[table.setting == label].set_index('net').rel_error
    redo = table[table.setting == label + ', new back-off'].set_index('net').rel_error
    return rows.where(rows.notna() | ~rows.index.isin(redo.index), redo.reindex(rows.index)).abs()

default_tuning = with_new_backoff(tuning, 'SGLD q=3e-3 c=0.1 5000+5000')
print(f"default, tuning part with the new back-off: mean |error| {default_tuning.mean():.3f} over "
      f"{default_tuning.notna().sum()} of {len(default_tuning)} networks")
with pd.option_context('display.float_format', '{:.3g}'.format):
    display(experiments)
per_net = tuning.pivot_table(index=['net', 'layers', 'rank', 'noise', 'n', 'true_llc'], columns='setting',
                             values='rel_error')
per_net.round(3)

# %% [markdown]
# What the table says:
#
# * **No setting meets the target** (mean |error| ≤ 5%, no network above 15%). The errors go both ways, so no
#   single constant fixes them.
# * **The default** ($q = 3\cdot10^{-3}$, stiffness 0.1, 5000 + 5000 steps) has a mean |error| of 28% on the 15
#   tuning networks where it finished (−43% to +77%) and diverged on one. It was chosen when only its first three
#   tuning rows were in; on the complete tuning part, with a diverged run counted as 100%, it scores 33%, against
#   31% for $q=10^{-3}$ (whose chains cover only 0.8 relaxation times and are still drifting) and 65% for the
#   previous rule. We kept it: the first two are within each other's spread, and its chains relax.
# * **The previous automatic rule** ($q=10^{-4}$, stiffness 0.3, burn-in stiffness 2, 6000 + 6000 steps)
#   diverged on 6 of the 10 tuning networks it was run on, even after three halvings of the step, and with the
#   burn-in at the sampling stiffness (0.3) it still diverged on all five of those we reran. Where it finished it
#   was closer (+0.2%, −2.9%, +10.8%, +39%) than the default on the same networks (−22%, −43%, −29%, −13%): a
#   rule with its small localization that does not diverge would be the next thing to try. Its divergences
#   are not the back-off's doing: rerun on networks 0–9 with the back-off that also halves the burn-in step
#   after a sampling divergence soon after the burn-in (an intermediate version of the rule in the
#   [SGLD chapter](sgld.html); not committed as rows), the same six diverged, five of them in the burn-in at
#   an eighth of its step (so does the final rule, whose last attempt runs the same burn-in), and the other
#   four reproduced their committed rows to the digit. With its burn-in at the sampling stiffness (0.3), the
#   corrected back-off does rescue it: the four networks where it had diverged soon after the burn-in (0, 1, 4,
#   7) all finish, at +21%, +1.9%, +77% and +39% (the default: +27%, −9%, +77%, +1.5%), after 2–3 retries, at
#   0.04–0.09 relaxation times: no better than the default, so the default stays. At $q=10^{-4}$ the
#   chains drift along the flat directions into regions stiffer than any step scaled by $h_{\max}$ at $w^*$.
# * **The back-off, corrected.** The default's one tuning divergence (net 3, 6-13-15-18-15-12) and its held-out
#   one on 16-13-16-12-19-6 came four and five steps after the burn-in: three burn-in divergences had halved the
#   burn-in step to an eighth, the sampling step had kept its full size, and it was too large where the burn-in
#   had led the chains. The back-off now also halves a sampling step that would exceed the halved burn-in step,
#   and the burn-in step after a sampling divergence soon after the burn-in. Rerun with it (the rows marked
#   "new back-off"), both finish, flagged, at +62% and +47% (MALA acceptance 0.51 and 0.53 even at an eighth of
#   the step: the chains sit far out); the held-out 10-17-10-18-10 still diverges, in its burn-in. The default
#   is unchanged. Counting these rows in place of the diverged ones, its mean |error| is 30% over all 16 tuning
#   networks and 30% over 23 held-out ones (printed below). The other rows were not rerun: those whose back-off
#   retried and then finished may come out differently under the new rule (the earlier runs did not record
#   their retries).
# * **At a given localization, the sampler is not what limits the estimate.** On the two-layer network
#   20-16-19 (rank 5, noisy, $n=10^4$) the exact full-batch MALA gives −22% at $\gamma = 4.6$, where SGLD gave
#   −18%: that error belongs to the localized target, not to SGLD's discretization. (At $\gamma = 0.46$ the
#   exact run was still drifting after 4000 steps, so it decides nothing.) What the target adds at these $n$:
#   the localization's pull on the directions that are flat to second order, the slow logarithmic approach of a
#   singular posterior to its limit, and, for noisy targets, the baseline $L_n(w^*)$ at the true parameter,
#   which lies above the sample's minimum and lowers the estimate by roughly $\lambda/\log n$ in a regular
#   model (11% at $n=2000$, as the regular-model check above shows).
# * **Stronger localization** ($q = 10^{-2}$) stops the drift (8 relaxation times) but squeezes the estimate
#   (−7% to −33%); **weaker** ($q=10^{-3}$, 0.8 relaxation times) leaves the chains drifting, with large errors
#   both ways. $q = 3\cdot10^{-3}$ with $10^4$ steps is the smallest localization whose run covers about 3
#   relaxation times.
# * **Longer chains** at a small localization: $3/(cq)$ steps relax $q=10^{-4}$ at $c = 0.1$, i.e.
#   $3\cdot10^5$. Run on the worst underestimate and the worst overestimate
#   of the tuning part: on network 14 (9-6-7-19, noisy, −41% at the default) it gives −10.5% (7 minutes, 3.0
#   relaxation times, still falling at $z=-11$), so a thirtyfold weaker localization with chains long enough for
#   it removes most of that error, and the estimate keeps moving with $\gamma$; on network 4 (7-8-18-13,
#   noiseless, +77%) it diverged in the burn-in at step 105 265, after three halvings of the step: far out along
#   the flat directions the chains meet curvature that the step scaled by $h_{\max}$ at $w^*$ does not survive.
#   Too slow for a default (30 times the default's steps) and not safe.
# * **RMSprop-SGLD** (devinterp's preconditioned sampler, `preconditioner='rmsprop'`; see the
#   [SGLD chapter](sgld.html)) on the 8 tuning networks with the fewest parameters (0, 4, 5, 6, 9, 11, 14, 15: the
#   cheapest, chosen by size before any run), at the default's rule (the step scaled so that the largest
#   preconditioned step keeps $c$) and at a third of its localization with three times its stiffness (the same
#   3 relaxation times of the flat directions). At the default's rule it
#   changes little: mean |error| 32% against the rerun default's 34% on the same 8 networks; network 0 moves
#   from +27% to +18%, the others by at most 4 points. With devinterp's $\varepsilon_{\rm rms}=0.1$ the
#   minibatch gradients of these losses are mostly smaller than $\varepsilon_{\rm rms}$, so $G$ stays near
#   $1/\varepsilon_{\rm rms}$ everywhere and the sampler is plain SGLD with a rescaled step. At a third of the
#   localization and three times the stiffness it is closer on six networks (−3% to −31%, mean |error| 15%,
#   where the default has 29%), but on the other two (0 and 4) the chains ran off, without a non-finite loss, to
#   estimates about 120 and 500 times Aoyagi's $\lambda$ (MALA acceptance 0.83 and 0.43; flagged): the step, three times the
#   default's wherever the gradients are small, is unstable once the chains reach stiffer regions, and the
#   back-off never sees it. Neither rule is a better default on this evidence, so the default stays plain SGLD.

# %% [markdown]
# ### The held-out part
#
# The default, run once on the 24 held-out networks, and the paper's preset (Hennick & De Baerdemacker,
# table 3, with batch size 500). The default took 37.5 minutes in all on the loaded CPU (1.6 minutes per network;
# a step of 4 chains takes 1.1–1.4 ms on a quiet one, so about 5 minutes there).
#
# **The target is not met.** The default's mean |relative error| on the 22 networks where it finished is 29%
# (median 17%), from −59% to +132%; 11 of them are within 15%; it diverged on two deep networks even after three
# halvings of the step (with the corrected back-off one of them finishes, at +47%; see the notes on the
# experiment table). It is worse with noisy targets (mean |error| 41%) than without (17%). The paper's preset
# is off by −30% to −100% (mean 74%).

# %%
held_out = validation_results('held-out')
with pd.option_context('display.float_format', '{:.3g}'.format):
    display(summarize(held_out))
default_label = held_out.setting[held_out.setting.str.startswith('SGLD q=3e-3')].iloc[0]
default_rows = held_out[held_out.setting == default_label]
met = default_rows.rel_error.abs().mean() <= 0.05 and (default_rows.rel_error.abs() <= 0.15).all()
print('target met on the held-out part:', met)
default_held_out = with_new_backoff(held_out, default_label)
print(f"default, held-out part with the new back-off: mean |error| {default_held_out.mean():.3f} over "
      f"{default_held_out.notna().sum()} of {len(default_held_out)} networks")
by_noise = default_rows.assign(abs_error=default_rows.rel_error.abs()).groupby('noise').abs_error.mean()
print('mean |error| by target noise:', by_noise.round(3).to_dict())
default_rows[['net', 'layers', 'rank', 'noise', 'n', 'true_llc', 'estimate', 'rel_error', 'mala', 'rhat',
              'reach_used', 'flagged', 'problems', 'seconds']]

# %% [markdown]
# The same in one picture: each held-out network's estimate against Aoyagi's $\lambda$, for the default and the
# paper's preset. Inside the grey band the error is within 15%; an open marker is an estimate its own diagnostics
# did not flag.

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharex=True, sharey=True)
for ax, (name, rows) in zip(axes, [('default', default_rows),
                                   ('paper preset', held_out[held_out.setting == 'paper preset'])]):
    rows = rows.dropna(subset=['estimate'])
    lam = np.linspace(0, held_out.true_llc.max() * 1.05, 50)
    ax.fill_between(lam, 0.85 * lam, 1.15 * lam, color='0.85', label='within 15%')
    ax.plot(lam, lam, 'k-', lw=1, label='estimate = λ')
    for noise, colour in [(0.0, 'C0'), (1.0, 'C3')]:
        r = rows[rows.noise == noise]
        for flagged, face in [(True, colour), (False, 'none')]:
            f = r[r.flagged.astype(bool) == flagged]
            ax.scatter(f.true_llc, f.estimate, s=30, edgecolors=colour, facecolors=face,
                       label=f"{'noisy' if noise else 'noiseless'} targets, {'flagged' if flagged else 'not flagged'}")
    ax.set(title=f'held-out networks: {name}', xlabel="Aoyagi's λ")
axes[0].set_ylabel('estimated LLC')
axes[1].legend(fontsize=7, loc='upper left')
plt.tight_layout()

# %% [markdown]
# ### Do the diagnostics notice?
#
# Every estimate off by more than 15% must be flagged. The confusion of flagged against wrong, on the held-out
# part (default and paper preset) and on every tuning row:

# %%
for name, rows in [('held-out, default', default_rows),
                   ('held-out, paper preset', held_out[held_out.setting == 'paper preset']),
                   ('tuning, all settings', tuning)]:
    print(name)
    display(flag_confusion(rows))
missed = pd.concat([held_out, tuning])
missed = missed[(missed.rel_error.abs() > 0.15) & ~missed.flagged.astype(bool)]
print('estimates off by > 15% that were not flagged:', len(missed))
assert sorted(missed.net) == [0, 6, 10, 18] and not met      # what the prose says
missed[['setting', 'net', 'layers', 'rel_error', 'mala', 'drift_z', 'reach_used', 'relaxations']]


# %% [markdown]
# What the confusion says:
#
# * The paper's preset is flagged everywhere, as it should be: 400 steps of $10^{-5}$ cover 0.4 relaxation
#   times of its localization, and its estimates sit 17–100% low.
# * The diagnostics **missed one bad estimate in each part**, both overestimates with noisy targets: on the
#   held-out part the two-layer network 9-20-9 at rank 1 ($n = 3000$, +132%), on the tuning part 12-12-14-15-8
#   at rank 2 ($n=3\cdot10^4$, +69%). Their chains look healthy by every measure (MALA acceptance 0.91 and 1.00,
#   no drift, $\hat R \le 1.01$, 3 relaxation times, reach used 0.27 and 0.27, just below `REACH_HIGH`): they sit
#   at equilibrium in a target whose mean is far above Aoyagi's $\lambda$. With a low-rank truth and noise of
#   $\sigma = 1$ the likelihood itself favours the nearby higher-rank maps that fit the noise. A `REACH_HIGH` of
#   0.25 would have caught both; the tuning miss came in after the limits were fixed and after the held-out part
#   had been seen, so we left the limits as they were, and the held-out part is reported as run. A third miss
#   came with the rerun of the previous rule under the corrected back-off (network 0, +21%): its chains had
#   covered only 0.045 relaxation times, but their reach used (0.021) is below `REACH_LIMIT`, so the drift
#   check, which asks for both, stays silent. A fourth came with RMSprop-SGLD at $q=10^{-3}$, $c=0.3$ on network 6
#   (14-10-11-15, noisy, −17%): acceptance 0.91, 3 relaxation times, reach used 0.29, stationary and mixed.
# * Every other bad estimate was flagged (43 of 45 on the tuning part, 11 of 12 of the default's held-out ones,
#   counting the reruns with the corrected back-off).
# * All 11 good held-out estimates were flagged too (and the two runs that diverged): the flags are a necessary warning on these networks, not
#   a test that separates good estimates from bad. At the default, the reach used
#   is 0.27–0.79 on every DLN, so the localization holds the chains in many flat directions and the estimate
#   depends on $\gamma$, which is true and is what the flag says.
# * The localization-sensitivity check of the next section, run on the default's rows, flags every bad one,
#   the two misses of the default included (networks 18 and 10), and passes about half of the good ones.

# %% [markdown]
# ## A diagnostic that notices: localization sensitivity
#
# The diagnostics above look at the chains: acceptance, stationarity, agreement, how far out they sit. They
# cannot see the error that matters here, because a chain can be healthy in every one of these senses and still
# sample a target whose mean is not Aoyagi's $\lambda$. What they can see is whether the answer depends on a
# choice the model does not make. The learning coefficient is a property of $w^*$; the localization $\gamma$ is
# ours. `localization_sensitivity` (in the [localization chapter](localization.html)) repeats an estimate at $k\gamma$ with the
# same step sizes and seeds, and flags it when the estimate moves by more than a tolerance. Two things were
# fixed before any of its numbers were seen:
#
# * **the direction and the factor**, $k = 3$ (half a decade) upwards: the stronger localization relaxes its
#   flat directions three times faster, so the repeated run is at least as long, in relaxation times, as the
#   estimate itself (a run at $\gamma/3$ with the same steps would cover one relaxation time and drift);
# * **the limit for "bad"**, 15%, the issue's.
#
# The tolerance is then the one number left to choose, and it was chosen on the tuning part only. There, every
# one of the 16 estimates moved, always downwards, by 4% to 36%. The three bad estimates that moved least (nets
# 3, 4 and 12: −11%, −9%, −7%, at +62%, +77% and −23% error) are the three runs whose back-off had halved the
# step, so that they covered only 0.4–1.5 relaxation times: chains that have not yet felt the localization
# cannot show whether the estimate depends on it. That is a principle, not a fit, and it is now part of the
# check: a run of fewer than `MIN_RELAXATIONS` = 2.5 relaxation times (the limit the drift check already used)
# is flagged as too short to judge. Among the relaxed bad estimates the smallest move was 12.8% (net 2, at
# −22%), so `SENSITIVITY_TOLERANCE` is 10%, the round value below it; it was fixed and committed before the
# held-out rows were read. The held-out part was then run once with the same code, and its confusion is
# reported as it came out.
#
# The rows: the default ($q=3\cdot10^{-3}$, $c=0.1$, 5000 + 5000 steps, the current back-off) on all 40
# networks, each with its estimate at $3\gamma$ (`SENSITIVITY_GRID`; file `sensitivity.csv`, rebuilt by the
# `#| heavy` cell below; `seconds` and `sensitivity_seconds` are the two runs, on one thread of the shared CPU
# while another job used the other core).

# %%
#| export
def sensitivity_flags(table: pd.DataFrame, tolerance: float = SENSITIVITY_TOLERANCE, factor: float = 3.0) -> pd.Series:
    """`localization_sensitivity`'s flag for each row of `run_validation(..., sensitivity=(factor,))`: the
    estimate moved by more than `tolerance` at `factor` times the localization (column `shift_x<factor>`), or the
    run covered fewer than `MIN_RELAXATIONS` relaxation times, or there is no estimate at either localization."""
    shift = table[f'shift_x{factor:g}']
    return shift.isna() | (shift.abs() > tolerance) | ~(table.relaxations >= MIN_RELAXATIONS)

def safe_tolerance(table: pd.DataFrame, factor: float = 3.0, limit: float = 0.15) -> float:
    """The smallest |shift| among the rows of `table` whose |error| exceeds `limit` and whose flag depends on
    the tolerance (an estimate, and at least `MIN_RELAXATIONS` relaxation times): `sensitivity_flags` with any
    tolerance below it flags every row off by more than `limit`."""
    bad = table[~(table.rel_error.abs() <= limit) & ~sensitivity_flags(table, math.inf, factor)]
    return float(bad[f'shift_x{factor:g}'].abs().min())


# %%
sens = validation_results('sensitivity')
sens_tune, sens_held = sens[sens.part == 'tune'], sens[sens.part == 'held-out']
default_label = 'SGLD q=3e-3 c=0.1 5000+5000'
committed = pd.concat([validation_results('tune'), validation_results('held-out')])
committed = committed[committed.setting == default_label].set_index('net').estimate
same = (sens.set_index('net').estimate - committed.reindex(sens.net).to_numpy()).abs()
print(f"the default's estimates, rerun: equal to the committed rows (to 1e-6) on {(same < 1e-6).sum()} of "
      f"{same.notna().sum()} networks that have both")
tol_safe = safe_tolerance(sens_tune)
print(f"tuning part: every estimate off by more than 15% moves by at least {tol_safe:.1%} at 3 x the localization")
assert SENSITIVITY_TOLERANCE < tol_safe                 # the package's tolerance flags every bad tuning row
confusion = {}
for name, rows in [('tuning part', sens_tune), ('held-out part (computed once)', sens_held)]:
    # a run that diverged has no estimate: its own column, a failure
    confusion[name] = flag_confusion(rows.assign(flagged=sensitivity_flags(rows)))
    print(name)
    display(confusion[name])
held = confusion['held-out part (computed once)']
missed_held = sens_held[~sensitivity_flags(sens_held) & ~(sens_held.rel_error.abs() <= 0.15)]
print('held-out estimates off by > 15% (or diverged) that the sensitivity did not flag:', list(missed_held.net))
assert missed_held.empty and held.loc['flagged', '|error| > 15%'] == 12 and held.loc['flagged', 'diverged'] == 1
assert held.loc['not flagged', '|error| <= 15%'] == 6 and held.loc['flagged', '|error| <= 15%'] == 5
sens[['part', 'net', 'layers', 'rank', 'noise', 'n', 'true_llc', 'estimate', 'rel_error', 'shift_x3', 'reach_used',
      'retries', 'seconds', 'sensitivity_seconds']].round(3)

# %%
fig, ax = plt.subplots(figsize=(9, 4.2))
ax.axvspan(-0.15, 0.15, color='0.88', label='|error| ≤ 15%')
ax.axhspan(-SENSITIVITY_TOLERANCE, SENSITIVITY_TOLERANCE, color='C2', alpha=0.15,
           label=f'|shift| ≤ {SENSITIVITY_TOLERANCE:.0%}: not flagged')
for (part, rows), marker in zip([('tuning', sens_tune), ('held-out', sens_held)], ['o', 's']):
    for noise, colour in [(0.0, 'C0'), (1.0, 'C3')]:
        r = rows[rows.noise == noise]
        ax.scatter(r.rel_error, r.shift_x3, marker=marker, edgecolors=colour,
                   facecolors=colour if part == 'tuning' else 'none', s=32,
                   label=f"{part}, {'noisy' if noise else 'noiseless'} targets")
ax.axhline(0, color='k', lw=0.6)
ax.set(xlabel='relative error of the estimate (against Aoyagi\'s λ)',
       ylabel='relative change at 3 × localization', title='localization sensitivity of the default')
ax.legend(fontsize=7, loc='upper left', bbox_to_anchor=(1.01, 1))
plt.tight_layout()

# %% [markdown]
# What it says:
#
# * **Every bad estimate is flagged, on both parts.** On the held-out part all 13 failures (12 estimates off by
#   more than 15% and the one run that still diverges) are flagged, among them network 18 (9-20-9, +132%), which
#   every other diagnostic had passed: tripling its localization lowers the estimate by 40%. On the tuning part
#   all 11 bad estimates are flagged, as the tolerance was chosen to do.
# * **It clears about half of the good ones**: 6 of the 11 held-out estimates within 15% pass (3 of 5 on the
#   tuning part), where the earlier diagnostics flagged all of them. The other five are flagged for good reason:
#   four move by 15–28% at $3\gamma$ (at −13% to +2% error they are right at this $\gamma$ but would not be at
#   another, so their accuracy is luck), and network 23 (+3%) ran 1.5 relaxation times after a back-off and
#   cannot be judged.
# * **The estimate always falls when $\gamma$ triples** (by 4% to 40%): on these networks and $n$ there is no
#   plateau at the default's localization. The chains sit in the region where the localization still holds
#   many flat directions (reach used 0.27–0.79), which is what the flag reports, and the cure it names (a sweep
#   for a plateau, with long enough chains at the small $\gamma$) is what the rest of this page shows to be
#   expensive: the long-chain rows of the experiment table.
# * **Its cost is one more estimate**: the two runs took 7.7 minutes on the 16 tuning networks and 11.2 on the
#   24 held-out ones (about half each), on one thread of the loaded CPU.
# * **Rerun, the default reproduces the committed rows to the digit** (36 of the 37 networks that finished
#   both times; network 12's back-off now retries differently and gives −23% instead of −22%), and the two
#   held-out networks that diverged under the earlier back-off are as the "new back-off" rows say: network 30
#   finishes at +47%, network 28 still diverges. With these rows the default's held-out score is a mean
#   |error| of 29.6% (median 21%) over 23 of 24 networks, −59% to +132%, 11 within 15%; on the tuning part
#   30.3% over all 16.

# %%
#| heavy
sens_rebuilt = pd.concat([validation_grid(SENSITIVITY_GRID, part) for part in ('tune', 'held-out')])

# %% [markdown]
# To rerun the held-out part with the default (the `#| heavy` cell, not run in the tests):

# %%
#| heavy
rerun = run_validation(specs[specs.part == 'held-out'], 'auto', device='cpu')
summarize(rerun.assign(setting='default'))

# %%
#| hide
import nbdev
nbdev.nbdev_export()
