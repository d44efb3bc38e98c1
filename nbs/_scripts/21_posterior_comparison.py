# %% [markdown]
# # Comparing SGD with the posterior
#
# > Paper §4.2, fig. 3–4, table 2 from stored tables: function-space clusters, posterior masses, exponents, the ways to form D_ξ, the ξ scan, table 2's distances with bootstrap intervals, and the figures.

# %%
#| default_exp studies.posterior_comparison

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import json
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import pandas as pd

from fracsgd.llc.result import problem_counts
from fracsgd.studies.common import summary_row
from fracsgd.core import read_table
from fracsgd.experiment.store import load_study, status
from fracsgd.diffusion.spectral import fit_power_law
from fracsgd.diffusion.theory import spectral_dimension_from_slope
from fracsgd.posterior.clusters import (choose_k, cluster_centroids, cluster_masses, cluster_solutions, clustering_reports,
                              draw_labels, function_features, mixing_report, posterior_masses, predictions_from_table)
from fracsgd.posterior.tempering import (accessibility_factor, best_xi, compare_to_posterior, comparison_verdicts,
                               kl_divergence, resample_labels, tempered_masses, xi_scan)
from fracsgd.studies.moons_diffusion import analyse as analyse_displacement


# %% [markdown]
# The [moons posterior study](moons_posterior.html) needs networks for two things only: SGD trains 500 of them
# (stage 1) and SGLD samples the local posterior around two of them (stage 2). Whether the claims of paper §4.2
# hold is decided afterwards, and for that the stored tables are enough: one row per net (its loss, accuracy
# and LLC), the class probabilities of every net and of every posterior draw on a grid of probe points, and the
# displacement R(t) of every net. This chapter is that second half. Its functions take tables and numbers and
# return tables and figures; none of them builds a net, and the study's configuration reaches them only as the
# handful of numbers they read.
#
# The steps of `analyse`, each built on an earlier chapter:
#
# 1. **Clusters** of the analysed nets in function space (their predictions on the probe grid), for each $k$ in
#    `ks`, with the stability report of the [clusters chapter](clusters.html); $k$ is the one with the best
#    silhouette, and the report's verdict is carried beside every result that depends on it.
# 2. **Posterior masses**: every draw goes to the nearest cluster centre; the fraction of each chain's draws
#    outside its start cluster tells whether the chains moved at all.
# 3. **Exponents**: the late exponent $s$ of the mean displacement of the analysed nets (the [moons
#    diffusion](moons_diffusion.html) study's analysis: crossover, then the log–log slope after $t_c$ with a
#    bootstrap interval; a run too short to have a crossover gets the slope of its last half decade, labelled
#    so), each cluster's own slope $s_k$ on the same window, the mean LLC $\bar\lambda$ and each cluster's mean
#    LLC $\lambda_k$ (over nets with a positive LLC), and $d_s=2\bar\lambda s$ (eq. 17).
# 4. **Tempering** choices: $D_\xi$ from one slope (global), per cluster from $\lambda_k$ and
#    $d_{s,k}=2\lambda_k s_k$, or per cluster from $\lambda_k$ with the global $d_s$, which is eq. 13 as printed
#    ($D_\xi(w)$ depends on $\lambda(w)$, while $d_s$ is one property of SGD); $m = 1$ or $m = n$.
# 5. **Fig. 3**: the KL divergence against $\xi$ for every choice, both for the comparison of the text (empirical
#    SGD against the theoretical SGD distribution, that is the posterior tempered back by $1/(mD_\xi)$) and for
#    table 2's (posterior against tempered SGD); $\xi^*$, the minimiser of the text's curve, with a bootstrap
#    interval.
# 6. **Table 2** at the paper's $\xi=0.5$: KL both ways, W1 and JS with bootstrap intervals, the noise floor and
#    the two baselines (raw SGD and uniform), from the [tempering chapter](tempering.html).

# %% [markdown]
# ## What it reads from a configuration
#
# The analysis reads nine numbers of the study's configuration and nothing else. Any object with these
# attributes will do: the study's `MoonsPosteriorConfig` has them all, and the examples on this page use a
# plain namespace. The last three only name the convergence criterion in the summary's notes; the criterion
# itself is the study's, applied before the analysis starts.

# %%
#| export
@runtime_checkable
class AnalysisSettings(Protocol):
    "The numbers `analyse` reads from a configuration (the moons posterior study's configuration has them all)."
    ks: tuple            # numbers of clusters tried; the one with the best silhouette is used
    xis: tuple           # the ξ grid of the fig.-3 scan
    xi_paper: float      # the ξ of table 2
    n_samples: int       # training points n, for the choice m = n in p^(m D_ξ)
    n_boot: int          # bootstrap resamples behind every interval
    block: int           # posterior draws are resampled in blocks of this many consecutive draws
    accuracy_gap: float  # the convergence criterion (train accuracy ≥ Bayes-rule accuracy − accuracy_gap),
    min_kept: int        # its fallback (fewer converged nets than this: all nets analysed)
    loss_window: int     # and the window of the reported loss drop, as the summary names them
    # optional (read with defaults, so older configurations keep working): k_rule ('silhouette' or 'stable', the
    # clusters chapter's choose_k), chains_per_cluster (> 0: the reference chains, and the by-k table) and
    # xi_out_of_sample (ξ for m = 1 and m = n chosen on another data seed: out-of-sample rows)


# %%
import matplotlib.pyplot as plt
from types import SimpleNamespace
SETTINGS = SimpleNamespace(ks=(2, 3, 4), xis=tuple(round(0.05 * i, 2) for i in range(1, 41)), xi_paper=0.5,
                           n_samples=512, n_boot=50, block=5, accuracy_gap=0.02, min_kept=20, loss_window=20)
assert isinstance(SETTINGS, AnalysisSettings)
assert not isinstance(SimpleNamespace(ks=(2, 3)), AnalysisSettings)


# %% [markdown]
# ## Reading a study folder
#
# `stored_study` reads stage 1 of a folder back ([store chapter](store.html)) and refuses a folder that holds
# another study, or whose sweep still has failed or pending runs. `read_tables` adds what stage 2 wrote: the
# posterior draws, the seed solutions they started from and the time they took. The solutions come as stored;
# the two columns `analyse` needs beyond them, `converged` and `analysed`, are the study's convergence
# criterion, which the study's `read_study` adds.

# %%
#| export
def stored_study(folder):
    "Stage 1 of the moons posterior study in `folder`, read back; refused unless every run of its plan is done."
    study = load_study(folder)
    if study.name != 'moons-posterior':
        raise ValueError(f"{folder} holds study {study.name!r}, not moons-posterior")
    counts = status(folder)
    if counts['failed'] or counts['pending'] or not counts['done']:
        raise ValueError(f"{folder}: stage 1 is not finished ({counts['done']} done, {counts['failed']} failed, "
                         f"{counts['pending']} pending runs; failures are in {Path(folder) / 'errors'})")
    return study

def read_tables(folder) -> dict:
    """What both stages stored in `folder`: per-net solutions (as stored), predictions [nets, probe, 2],
    trajectories, epoch losses, runs, and the posterior draws [seed nets, chains, draws, probe, 2]."""
    folder = Path(folder)
    if not (folder / 'chains.parquet').exists():
        raise ValueError(f"{folder} has no posterior chains (chains.parquet): run stage 2 (the study's "
                         "`finish`, which `run_study` calls after the last run) first")
    study = stored_study(folder)
    chains, meta = read_table(folder / 'chains.parquet'), json.loads((folder / 'chains.json').read_text())
    nets = list(dict.fromkeys(meta['seeds'].values()))
    P = predictions_from_table(study.tables['predictions'], ['p0', 'p1'], solution='net')   # [nets, probe, 2]
    D = predictions_from_table(chains, ['p0', 'p1'], solution='sample')                      # [samples, probe, 2]
    n_chains, n_draws = chains.chain.max() + 1, chains.draw.max() + 1
    return dict(solutions=study.tables['solutions'].drop(columns='key'), predictions=P,
                trajectory=study.tables['trajectory'], epochs=study.tables['epoch_loss'],
                draws=D.reshape(len(nets), n_chains, n_draws, *D.shape[1:]), seeds=meta['seeds'], seed_nets=nets,
                runs=study.runs, chains_seconds=meta['seconds'])


# %%
import tempfile
try:
    read_tables(tempfile.mkdtemp())
    raise AssertionError('should have raised')
except ValueError as e:
    assert 'no posterior chains' in str(e)


# %% [markdown]
# ## Exponents
#
# The accessibility factor needs the late exponent $s$ of $R(t)\sim t^s$ (paper eq. 17 turns it into
# $d_s = 2\bar\lambda s$). `exponents` takes it from the moons diffusion study's analysis of the mean
# displacement of the given nets, and fits each cluster's mean displacement on the same window after $t_c$, so
# that the per-cluster choice of $D_\xi$ below has a slope $s_k$ for every cluster.
#
# A check with exponents nobody here chose: six synthetic trajectories that grow as $t^{0.9}$ up to step 100
# and then as $t^{0.3}$ (the first three, one cluster) or $t^{0.5}$ (the other three). On the window after
# the crossover each cluster is an exact power law, so its slope must come back to rounding; the crossover must
# be found near step 100. A single power law $t^{0.25}$ has no crossover: the note says so, and the slope of
# its last half decade is $0.25$.

# %%
#| export
def exponents(trajectory: pd.DataFrame, nets, labels, k: int, n_boot: int) -> dict:
    """Late slope s of the mean R(t) of `nets` after the crossover t_c, with its interval, and each cluster's slope
    on the same window; without a crossover (too short a run), the log-log slope of the last half decade."""
    table = trajectory[trajectory.net.isin(nets)].rename(columns={'net': 'run'})[['run', 'step', 'R']]
    R = table[table.step > 0].pivot(index='run', columns='step', values='R').loc[list(nets)]
    t = R.columns.to_numpy(float)
    try:
        late = analyse_displacement(table, n_boot=n_boot)['late']
        out = dict(slope=late.slope, ci_low=late.ci_low, ci_high=late.ci_high, t_c=late.t_c,
                   note=f'log-log slope after t_c ≈ {late.t_c:.0f} steps, {late.late_decades:.2f} decades'
                        + (' (SHORT: < 1 decade)' if late.short_late_window else ''))
    except ValueError as e:                                  # no crossover: report it, fit the last half decade
        fit = fit_power_law(t, R.to_numpy(), t_min=t.max() / 10 ** 0.5, n_boot=n_boot)
        out = dict(slope=fit.slope, ci_low=fit.ci_low, ci_high=fit.ci_high, t_c=t.max() / 10 ** 0.5,
                   note=f'NO crossover ({e}); log-log slope of the last half decade')
    late = t >= out['t_c']
    out['slope_k'] = np.array([fit_power_law(t[late], R.to_numpy()[labels == c][:, late], n_boot=0).slope
                               for c in range(k)])
    return out


# %%
steps = np.unique(np.round(np.logspace(0, 4, 120))).astype(int)
bent = lambda s: np.where(steps <= 100, steps ** 0.9, 100 ** 0.9 * (steps / 100) ** s)   # t^0.9, then t^s

def trajectories(curves) -> pd.DataFrame:
    "A trajectory table (net, step, R) with one net per curve over `steps`, each scaled by its own constant."
    return pd.DataFrame({'net': np.repeat(np.arange(len(curves)), len(steps)), 'step': np.tile(steps, len(curves)),
                         'R': np.concatenate([(1 + 0.1 * i) * c for i, c in enumerate(curves)])})

two = exponents(trajectories([bent(0.3)] * 3 + [bent(0.5)] * 3), range(6), np.repeat([0, 1], 3), 2, n_boot=50)
assert np.allclose(two['slope_k'], [0.3, 0.5]) and 90 < two['t_c'] < 150 and 0.3 < two['slope'] < 0.5
one = exponents(trajectories([steps ** 0.25] * 6), range(6), np.repeat([0, 1], 3), 2, n_boot=50)
assert 'NO crossover' in one['note'] and np.isclose(one['slope'], 0.25) and np.allclose(one['slope_k'], 0.25)
two['note'], one['note']

# %% [markdown]
# ## Three ways to form $D_\xi$
#
# Cor. 3.2 tempers SGD's cluster masses by $p_k^{mD_\xi}$, and eq. 13 gives $D_\xi = \xi^{2-2\lambda/d_s}$.
# The paper leaves open whether $\lambda$ and $d_s$ are one number for all of SGD or one per cluster, so
# `tempering_choices` offers three readings: one slope for everything ($D_\xi = \xi^{2-1/s}$), per cluster with
# each cluster's own $d_{s,k} = 2\lambda_k s_k$ (which reduces to $\xi^{2-1/s_k}$), and eq. 13 as printed, per
# cluster $\lambda_k$ with the global $d_s = 2\bar\lambda s$. A choice whose inputs are not all positive and
# finite (a cluster without a positive LLC) is left out rather than computed from nonsense.
#
# **Which choice feeds the ledger** was fixed before any result was seen: eq. 13 as printed with $m=1$, since
# $m=n$ puts all mass on one cluster (the [tempering chapter](tempering.html)). Every other choice is reported
# beside it. Where eq. 13 cannot be formed, `analyse` falls back to the global slope and its notes say so.
#
# The check uses $s = 0.25$, $\bar\lambda = 2$, $\lambda_k = (1, 3)$, $s_k = (0.2, 0.3)$, so $d_s = 1$, and at
# $\xi = ½$: the global $D_\xi = ½^{2-4} = 4$, eq. 13 gives $½^{2-2\lambda_k} = (1, 16)$ and the own-slope
# choice $½^{2-1/s_k} = (8, 2^{4/3})$.

# %%
#| export
LEDGER_CHOICE, LEDGER_M = 'per cluster: λ_k, global d_s (eq. 13)', 1

def tempering_choices(s: float, lam: float, lam_k, s_k) -> dict:
    "The three ways to form D_ξ (keyword arguments of `tempered_masses`); a choice with a non-positive input is left out."
    d_s = spectral_dimension_from_slope(s, lam)
    choices = {'global: one slope s': dict(slope=s),
               'per cluster: λ_k, d_s,k = 2 λ_k s_k': dict(llc=np.asarray(lam_k), d_s=2 * np.asarray(lam_k) * s_k),
               LEDGER_CHOICE: dict(llc=np.asarray(lam_k), d_s=d_s)}
    ok = lambda kw: all(np.all(np.isfinite(v)) and np.all(np.asarray(v) > 0) for v in kw.values())
    return {name: kw for name, kw in choices.items() if ok(kw)}


# %%
choices = tempering_choices(0.25, 2.0, [1.0, 3.0], np.array([0.2, 0.3]))
D = {name: accessibility_factor(0.5, **kw) for name, kw in choices.items()}
assert np.isclose(D['global: one slope s'], 4) and np.allclose(D[LEDGER_CHOICE], [1, 16])
assert np.allclose(D['per cluster: λ_k, d_s,k = 2 λ_k s_k'], [8, 2 ** (4 / 3)])
assert all(np.allclose(accessibility_factor(1.0, **kw), 1) for kw in choices.values())   # ξ = 1: no tempering
assert list(tempering_choices(0.25, 2.0, [1.0, np.nan], np.array([0.2, 0.3]))) == ['global: one slope s']

# %% [markdown]
# ## The best length scale
#
# Fig. 3 of the paper scans $\xi$ and reads off where SGD's cluster masses and the theoretical SGD distribution
# (the posterior tempered back by $1/(mD_\xi)$) are closest in KL divergence. `best_xi` returns that minimiser
# on the grid with a percentile bootstrap interval (it lives in the [tempering chapter](tempering.html), below the
# studies, so that other samplers of the posterior can call it): SGD solutions are resampled one by one, posterior draws in
# blocks of consecutive draws, because draws of one chain are correlated. The two KL columns of the scan are
# named once here, for the analysis and the figures.

# %%
#| export
FIG3_KL = 'KL(SGD‖theoretical SGD) [nats]'          # fig. 3, the text's comparison: empirical vs theoretical SGD
TAB2_KL = 'KL(Bayes‖tempered SGD) [nats]'           # table 2's comparison: posterior vs tempered SGD



# %% [markdown]
# Labels built so that the answer is known: the posterior puts $16/17$ of its draws in cluster 0, SGD $2/3$ of
# its solutions. With one slope $s = ¼$, $D_\xi = \xi^{-2}$, which is 4 at $\xi = ½$, and tempering the posterior
# back by $1/4$ gives $(16^{1/4}, 1) / 3 = (2/3, 1/3)$: the KL divergence is zero there and positive at every
# other $\xi$ of the grid.

# %%
labels_sgd = np.repeat([0, 1], [20, 10])
labels_post = np.repeat([0, 1], [160, 10]).reshape(1, 2, 85)          # [seed nets, chains, draws]
xi_star = best_xi(labels_sgd, labels_post, 2, SETTINGS.xis, n_boot=50, block=5, slope=0.25)
assert xi_star[0] == 0.5 and xi_star[1] <= 0.5 <= xi_star[2], xi_star
xi_star


# %% [markdown]
# ## The analysis in one call
#
# `analyse` runs the six steps on the dictionary the study's `read_study` returns (the tables of
# `read_tables`, with the convergence columns and the Bayes-rule accuracy) and a settings object. Its
# `summary` is the study's table: one row per quantity with value, 95% interval and a note, and the [claims
# ledger](ledger.html) reads the rows that its claims name. Intervals come from the bootstrap helpers below:
# nets resampled singly, posterior draws in blocks of `block`, 2.5% and 97.5% quantiles.

# %%
#| export
def _boot_stat(f, labels_sgd, labels_post, n_boot, seed, block) -> tuple[float, float]:
    "Percentile 95% interval of f(SGD labels, posterior labels) over joint resamples."
    rng = np.random.default_rng(seed)
    v = [f(resample_labels(labels_sgd, rng), resample_labels(labels_post, rng, block)) for _ in range(n_boot)]
    return _interval(v)

def _interval(values) -> tuple[float, float]:
    return tuple(float(x) for x in np.quantile(values, [0.025, 0.975], method='inverted_cdf'))

def analyse(data: dict, cfg: AnalysisSettings) -> dict:
    "Clusters, posterior masses, exponents, tempering, fig.-3 scan and table-2 distances from `read_study`'s tables."
    sol, rng = data['solutions'], np.random.default_rng(0)
    keep = sol.analysed.to_numpy()
    F = function_features(data['predictions'][keep])
    reports = clustering_reports(F, ks=[k for k in cfg.ks if k < len(F)], n_boot=30)
    k = choose_k(reports, getattr(cfg, 'k_rule', 'silhouette'), n=len(F))
    labels = cluster_solutions(F, k)
    centroids = cluster_centroids(F, labels, k)
    pool = sol[keep].assign(cluster=labels)
    labels_post = draw_labels(data['draws'], centroids)                       # [seed nets, chains, draws]
    start = pool.cluster.loc[data['seed_nets']].to_numpy()
    p_post, chains = posterior_masses(labels_post, k, start)
    chains.insert(0, 'seed', [' and '.join(s for s, i in data['seeds'].items() if i == n)
                              for n in np.asarray(data['seed_nets'])[chains.model]])
    mix_table, mixing = mixing_report(labels_post, k, start, leading_component(F, data['draws']))
    chains = chains.assign(transitions=mix_table.transitions, visited=mix_table.visited)
    p_sgd = cluster_masses(labels, k)
    ex = exponents(data['trajectory'], pool.index, labels, k, cfg.n_boot)
    positive = pool[pool.llc > 0]
    lam_k = positive.groupby('cluster').llc.mean().reindex(range(k)).to_numpy()
    choices = tempering_choices(ex['slope'], positive.llc.mean(), lam_k, ex['slope_k'])
    used = LEDGER_CHOICE if LEDGER_CHOICE in choices else 'global: one slope s'   # eq. 13 needs every λ_k > 0
    factor, n = choices[used], cfg.n_samples
    scan = pd.concat([xi_scan(p_sgd, p_post, cfg.xis, m, compare=how, **kw).assign(choice=name, m=m, comparison=how)
                      for name, kw in choices.items() for m in (1, n) for how in ('untempered', 'tempered')],
                     ignore_index=True)
    xi_star = best_xi(labels, labels_post, k, cfg.xis, LEDGER_M, n_boot=cfg.n_boot, block=cfg.block, **factor)
    table2 = compare_to_posterior(labels, labels_post, k, cfg.xi_paper, LEDGER_M, n_boot=cfg.n_boot,
                                  block=cfg.block, **factor)
    each = pd.DataFrame([dict(choice=name, m=m, D_xi=np.round(np.atleast_1d(accessibility_factor(cfg.xi_paper, **kw)), 3).tolist(),
                              tempered=np.round(tempered_masses(p_sgd, cfg.xi_paper, m, **kw), 3).tolist(),
                              KL_bayes_tempered=kl_divergence(p_post, tempered_masses(p_sgd, cfg.xi_paper, m, **kw)))
                         for name, kw in choices.items() for m in (1, n)])
    masses = pd.DataFrame({'cluster': [f'C{c + 1}' for c in range(k)], 'SGD': p_sgd, 'posterior (SGLD)': p_post,
                           **{f'tempered SGD, ξ = {cfg.xi_paper}, {name}, m = 1':
                              tempered_masses(p_sgd, cfg.xi_paper, 1, **kw) for name, kw in choices.items()}})
    xi_star_n = best_xi(labels, labels_post, k, cfg.xis, n, n_boot=cfg.n_boot, block=cfg.block, **factor)
    table2_n = compare_to_posterior(labels, labels_post, k, cfg.xi_paper, n, n_boot=cfg.n_boot, block=cfg.block, **factor)
    res = dict(k=k, choice=used, labels=labels, centroids=centroids, reports=reports, pool=pool, labels_post=labels_post,
               p_sgd=p_sgd, p_post=p_post, chains=chains, exponents=ex, lam_k=lam_k, choices=choices, scan=scan,
               xi_star=xi_star, table2=table2, verdicts=comparison_verdicts(table2), each_choice=each, masses=masses,
               mixing=mixing, xi_star_n=xi_star_n, table2_n=table2_n)
    if getattr(cfg, 'xi_out_of_sample', ()):
        res['out_of_sample'] = pd.concat([compare_to_posterior(labels, labels_post, k, xi, m, n_boot=cfg.n_boot,
                                                               block=cfg.block, **factor).assign(m=m, xi=xi)
                                          for m, xi in zip((1, n), cfg.xi_out_of_sample)], ignore_index=True)
    if getattr(cfg, 'chains_per_cluster', 0):
        res['by_k'] = by_k(F, reports, sol[keep], data, cfg, ex['slope'])
    res['summary'] = _summary(res, data, cfg, rng)
    return res

def _summary(res: dict, data: dict, cfg: AnalysisSettings, rng) -> pd.DataFrame:
    "The study's table; the ledger reads the rows named in claims.csv."
    sol, pool, k, ex = data['solutions'], res['pool'], res['k'], res['exponents']
    rep = res['reports'].set_index('k').loc[k]
    lab, post, B, blk = res['labels'], res['labels_post'], cfg.n_boot, cfg.block
    xi, factor, n, rule = cfg.xi_paper, res['choices'][res['choice']], cfg.n_samples, getattr(cfg, 'k_rule', 'silhouette')
    mix = res['mixing']
    unreliable = (f"NOT ESTIMABLE: {mix['never_left']} of {mix['chains']} chains never left the cluster they started "
                  "in, so the posterior masses are where the chains were started; " if mix['never_left'] else
                  f"UNRELIABLE: split R-hat {mix['rhat_max']:.2f} > 1.1, the chains disagree; " if mix['rhat_max'] > 1.1
                  else '')
    kept = f"{int(sol.converged.sum())} of {len(sol)} pass; " + (
        'analysed: the converged nets' if not sol.analysed.all() or sol.converged.all() else
        f'fewer than {cfg.min_kept}: ALL nets analysed, unconverged ones included')
    llc = pool.llc[pool.llc > 0].to_numpy()
    position = lambda v: (np.median(v) - v.min()) / (v.max() - v.min())
    t2 = res['table2'].set_index(['comparison', 'metric'])
    def tab2(comparison, metric):
        r = t2.loc[(comparison, metric)]
        return r.value, r.ci_low, r.ci_high
    wide = res['verdicts']
    gain = lambda ls, lp: (kl_divergence(cluster_masses(lp, k), tempered_masses(cluster_masses(ls, k), xi, LEDGER_M, **factor))
                           - kl_divergence(cluster_masses(lp, k), cluster_masses(ls, k)))
    where = f"ξ = {xi}, m = {LEDGER_M}, D_ξ {res['choice']}" + ('' if res['choice'] == LEDGER_CHOICE else
                                                              f' (NOT eq. 13: a cluster has no positive LLC)')
    rows = [
        summary_row('nets trained', len(sol)),
        summary_row('nets passing the convergence criterion', sol.converged.sum(), note=f'train accuracy ≥ Bayes-rule '
             f'accuracy − {cfg.accuracy_gap}; {kept}'),
        summary_row('nets analysed', len(pool)),
        summary_row('Bayes-rule accuracy on the training points', data['bayes']),
        summary_row('train accuracy (mean over nets)', sol.accuracy.mean(), *_interval(sol.accuracy)),
        summary_row('train loss (mean over nets)', sol.loss.mean(), *_interval(sol.loss)),
        summary_row(f'relative loss drop over the last {cfg.loss_window} epochs (mean)', sol.loss_drop.mean(),
             *_interval(sol.loss_drop), 'interval: 2.5–97.5% of nets'),
        summary_row(f"clusters k ({'best silhouette' if rule == 'silhouette' else 'rule: ' + rule})", k,
             note=f"stability verdict '{rep.verdict}'; ks tried: {', '.join(map(str, res['reports'].k))}; {K_RULE_TEXT[rule]}"),
        summary_row('silhouette', rep.silhouette), summary_row('ARI k-means vs Ward', rep.ari_methods),
        summary_row('bootstrap stability (mean ARI)', rep.stability),
        summary_row('smallest cluster (nets)', rep.smallest),
        summary_row('LLC (mean over analysed nets, LLC > 0)', llc.mean(), *_interval([rng.choice(llc, len(llc)).mean() for _ in range(B)]),
             f'{int((pool.llc <= 0).sum())} nets with LLC ≤ 0; {int(pool.llc_flagged.sum())} flagged by the diagnostics'
             + (f' (by kind: {problem_counts(pool.llc_problems)})' if 'llc_problems' in pool else '')),
        summary_row('LLC position of the median, (median − min)/(max − min)', position(llc),
             *_interval([position(rng.choice(llc, len(llc))) for _ in range(B)]), 'below 0.5: concentrated at the low end'),
        summary_row('late exponent s (log-log slope after t_c)', ex['slope'], ex['ci_low'], ex['ci_high'], ex['note']),
        summary_row('d_s = 2 λ̄ s', spectral_dimension_from_slope(ex['slope'], llc.mean())),
        summary_row(f'D_ξ at ξ = {xi}, one slope: ξ^(2 − 1/s)', accessibility_factor(xi, slope=ex['slope']),
             accessibility_factor(xi, slope=ex['ci_high']), accessibility_factor(xi, slope=ex['ci_low'])),
        summary_row('posterior draws outside their start cluster (mean over chains)', res['chains'].left_start.mean()),
        summary_row('posterior chains', mix['chains'], note='started from: ' + ', '.join(data['seeds'])),
        summary_row('posterior chains that never leave their start cluster', mix['never_left'],
             note='their masses cannot be estimated from these chains' if mix['never_left'] else ''),
        summary_row('cluster transitions per chain (mean)', res['chains'].transitions.mean(),
             note=f"min {res['chains'].transitions.min()}, max {res['chains'].transitions.max()} over "
                  f"{len(res['chains'])} chains of {post.shape[-1]} draws"),
        summary_row('split R-hat, cluster indicators (max over clusters)', mix['rhat_max'],
             note='per cluster: ' + ', '.join(f'{r:.3g}' for r in mix['rhat_clusters']) + '; 1.1 or less: the chains agree'),
        summary_row('split R-hat, leading principal component of the draws (function space)', mix['rhat_scalar']),
        summary_row('raw SGD mass of cluster C1', res['p_sgd'][0], *_interval([cluster_masses(resample_labels(lab, rng), k)[0] for _ in range(B)])),
        summary_row('posterior mass of cluster C1', res['p_post'][0], *_interval([cluster_masses(resample_labels(post, rng, blk), k)[0] for _ in range(B)]),
             unreliable.rstrip('; ')),
        summary_row('posterior minus SGD mass of cluster C1', res['p_post'][0] - res['p_sgd'][0],
             *_boot_stat(lambda a, b: cluster_masses(b, k)[0] - cluster_masses(a, k)[0], lab, post, B, 1, blk),
             unreliable.rstrip('; ')),
        summary_row('ξ minimising KL(SGD‖theoretical SGD)', *res['xi_star'],
             f"{where.split(', ', 1)[1]}; grid {min(cfg.xis)}–{max(cfg.xis)}"
             + ('; AT THE GRID EDGE: the curve falls towards it' if res['xi_star'][0] in (min(cfg.xis), max(cfg.xis)) else '')),
        summary_row(f'ξ minimising KL(SGD‖theoretical SGD), m = n = {n}', *res['xi_star_n'],
             f"m = n = {n} (Cor. 3.2), D_ξ {res['choice']}; grid {min(cfg.xis)}–{max(cfg.xis)}"
             + ('; AT THE GRID EDGE: the curve falls towards it' if res['xi_star_n'][0] in (min(cfg.xis), max(cfg.xis)) else '')),
        summary_row(f'KL(Bayes‖tempered SGD) minus KL(Bayes‖raw SGD), ξ = {xi}', gain(lab, post),
             *_boot_stat(gain, lab, post, B, 2, blk), f'm = {LEDGER_M}; negative: tempering brings SGD closer to the posterior'),
    ]
    t2n = res['table2_n'].set_index(['comparison', 'metric'])
    for metric in wide.index:
        rows.append(summary_row(f'{metric}, tempered SGD vs Bayes, ξ = {xi}', *tab2('Q = tempered SGD', metric), unreliable + where))
        r = t2n.loc[('Q = tempered SGD', metric)]
        rows.append(summary_row(f'{metric}, tempered SGD vs Bayes, ξ = {xi}, m = n = {n}', r.value, r.ci_low, r.ci_high,
                         unreliable + where.replace(f'm = {LEDGER_M}', f'm = n = {n} (Cor. 3.2)')))
        rows.append(summary_row(f'{metric}, raw SGD vs Bayes (baseline)', *tab2('Q = raw SGD', metric)))
        rows.append(summary_row(f'{metric}, uniform vs Bayes (baseline)', *tab2('Q = uniform', metric)))
        floor = t2.loc[('noise floor: Q = Bayes resample', metric)]
        rows.append(summary_row(f'{metric}, noise floor (two resamples of Bayes)', floor.value, np.nan, floor.ci_high,
                         'value: median; ci_high: 95% quantile'))
    if 'out_of_sample' in res:
        for m, part in res['out_of_sample'].groupby('m', sort=False):
            r = part.set_index(['comparison', 'metric']).loc[('Q = tempered SGD', 'KL(Bayes‖Q) [nats]')]
            label = f'm = {m}' if m == 1 else f'm = n = {m}'
            rows.append(summary_row(f'KL(Bayes‖Q) [nats], tempered SGD vs Bayes, ξ chosen on another data seed '
                             f'(out of sample), {label}', r.value, r.ci_low, r.ci_high,
                             f'{unreliable}ξ = {r.xi} (argmin of KL(SGD‖theoretical SGD) on another data seed, {label}, '
                             f"D_ξ {res['choice']}); in sample here: ξ* = {(res['xi_star'] if m == 1 else res['xi_star_n'])[0]}"))
    return pd.DataFrame(rows)

K_RULE_TEXT = {'silhouette': 'k with the best silhouette',
               'stable': ('the best silhouette among the k with bootstrap stability ≥ 0.8 and a smallest cluster ≥ 5% '
                          'of the nets')}

def leading_component(features, draws) -> np.ndarray:
    "Each posterior draw [models, chains, draws, probe, classes] projected on the leading principal axis of `features`."
    F = np.asarray(features, float)
    centre = F.mean(0)
    axis = np.linalg.svd(F - centre, full_matrices=False)[2][0]
    D = np.asarray(draws)
    return ((function_features(D.reshape(-1, *D.shape[3:])) - centre) @ axis).reshape(D.shape[:3])

def by_k(F, reports: pd.DataFrame, pool: pd.DataFrame, data: dict, cfg, slope: float) -> pd.DataFrame:
    """For every k of the clustering reports: masses, mixing of the chains and, for m = 1 and m = n, ξ* (fig. 3's
    comparison) and table 2's KL at the paper's ξ and at ξ*, with eq. 13 as printed (global slope where a cluster
    has no positive LLC)."""
    rows = []
    for k in reports.k:
        labels = cluster_solutions(F, int(k))
        post = draw_labels(data['draws'], cluster_centroids(F, labels, int(k)))
        start = pd.Series(labels, index=pool.index).loc[data['seed_nets']].to_numpy()
        _, mix = mixing_report(post, int(k), start)
        lam_k = pool.assign(cluster=labels).query('llc > 0').groupby('cluster').llc.mean().reindex(range(int(k))).to_numpy()
        lam = pool.llc[pool.llc > 0].mean()
        choices = tempering_choices(slope, lam, lam_k, np.full(int(k), slope))
        name = LEDGER_CHOICE if LEDGER_CHOICE in choices else 'global: one slope s'
        for m in (1, cfg.n_samples):
            star = best_xi(labels, post, int(k), cfg.xis, m, n_boot=cfg.n_boot, block=cfg.block, **choices[name])
            kl = lambda xi: compare_to_posterior(labels, post, int(k), xi, m, n_boot=cfg.n_boot, block=cfg.block,
                                                 **choices[name]).set_index(['comparison', 'metric']).loc[
                                                     ('Q = tempered SGD', 'KL(Bayes‖Q) [nats]')]
            at_paper = kl(cfg.xi_paper)
            at_star = kl(star[0]) if np.isfinite(star[0]) else pd.Series({'value': np.nan})   # every KL infinite
            rows.append(dict(k=int(k), m=m, D_xi=name, chains=mix['chains'], chains_never_left=mix['never_left'],
                             rhat_max=mix['rhat_max'], sgd_masses=np.round(cluster_masses(labels, int(k)), 3).tolist(),
                             posterior_masses=np.round(cluster_masses(post, int(k)), 3).tolist(),
                             xi_star=star[0], xi_star_ci_low=star[1], xi_star_ci_high=star[2],
                             kl_at_paper_xi=at_paper.value, kl_at_paper_xi_ci_low=at_paper.ci_low,
                             kl_at_paper_xi_ci_high=at_paper.ci_high, kl_at_xi_star=at_star.value))
    return pd.DataFrame(rows).astype({'sgd_masses': str, 'posterior_masses': str})


# %% [markdown]
# ### A synthetic study whose answers are known
#
# Thirty-two "nets" on a 4 × 4 probe grid. Twenty predict $P(\text{class 1}) = \sigma(3x)$ and ten
# $\sigma(3y)$, each with a little noise; two more predict something else and have not converged, so they must
# not enter the clusters. Every analysed net has mean LLC 5 in both clusters, and every displacement bends from
# $t^{0.9}$ to $t^{0.25}$ at step 100. The posterior is two seed nets × two chains of 85 draws, 80 of each
# chain near the first function and a run of 5 near the second. What must come out, with numbers nobody chose:
# $k = 2$; SGD masses $(2/3, 1/3)$ and posterior masses $(16/17, 1/17)$; $s = 0.25$, so $d_s = 2 \cdot 5 \cdot
# 0.25 = 2.5$ and eq. 13 gives $D_\xi = \xi^{2 - 2\cdot 5/2.5} = \xi^{-2}$ in both clusters; then, as in the
# check of `best_xi`, $\xi^* = 0.5$, and at $\xi = 0.5$ tempered SGD is the posterior exactly, so all of table
# 2's distances are zero (their intervals are not: they come from resamples), while the raw-SGD baseline is
# KL$(p_\text{post}\,\|\,p_\text{SGD})$.

# %%
gx = np.linspace(-1, 1, 4)
probe = np.stack(np.meshgrid(gx, gx), -1).reshape(-1, 2)
rng = np.random.default_rng(0)

def functions(x, n: int) -> np.ndarray:
    "n solutions [n, probe, 2] predicting P(class 1) = σ(3x) on the probe grid, with noise of 0.02."
    p1 = np.clip(1 / (1 + np.exp(-3 * x)) + 0.02 * rng.standard_normal((n, len(x))), 0, 1)
    return np.stack([1 - p1, p1], -1)

P = np.concatenate([functions(probe[:, 0], 20), functions(probe[:, 1], 10), functions(-probe.sum(1), 2)])
nets = np.arange(len(P))
sol = pd.DataFrame({'loss': 0.1 + 0.01 * (nets != 3), 'accuracy': 0.97, 'llc_se': 0.1, 'llc_flagged': False,
                    'llc': np.r_[5 + np.linspace(-1, 1, 20), 5 + np.linspace(-1, 1, 10), 9, 9], 'loss_drop': 0.02,
                    'converged': nets < 30}, index=pd.Index(nets, name='net')).assign(analysed=lambda d: d.converged)
chain = np.concatenate([functions(probe[:, 0], 80), functions(probe[:, 1], 5)])          # [draws, probe, 2]
synthetic = dict(solutions=sol, predictions=P, draws=np.broadcast_to(chain, (2, 2, *chain.shape)), bayes=0.97,
                 seeds={'lowest loss': 3, 'lowest LLC': 0}, seed_nets=[3, 0],
                 trajectory=trajectories([bent(0.25)] * len(P)))
with np.errstate(over='ignore'):           # KL at the smallest ξ of the grid overflows to inf, which is its value
    res = analyse(synthetic, SETTINGS)

assert res['k'] == 2 and res['choice'] == LEDGER_CHOICE and len(res['pool']) == 30
assert np.allclose(res['p_sgd'], [2 / 3, 1 / 3]) and np.allclose(res['p_post'], [16 / 17, 1 / 17])
assert np.isclose(res['exponents']['slope'], 0.25) and np.allclose(res['lam_k'], 5)
assert res['xi_star'][0] == 0.5
t2 = res['table2'].set_index(['comparison', 'metric']).value
assert np.allclose(t2['Q = tempered SGD'], 0, atol=1e-7)
assert np.isclose(t2[('Q = raw SGD', 'KL(Bayes‖Q) [nats]')], kl_divergence(res['p_post'], res['p_sgd']))
res['summary'].set_index('quantity').loc[['clusters k (best silhouette)', 'late exponent s (log-log slope after t_c)',
                                          'ξ minimising KL(SGD‖theoretical SGD)',
                                          'KL(Bayes‖Q) [nats], tempered SGD vs Bayes, ξ = 0.5',
                                          'KL(Bayes‖Q) [nats], raw SGD vs Bayes (baseline)']]

# %% [markdown]
# **The reference options on the same synthetic study** (issue 25, item 4). With `k_rule='stable'`, `ks` (2, 3, 4)
# tried, `chains_per_cluster` > 0 (which adds the by-k table) and `xi_out_of_sample = (0.5, 0.5)`: every chain
# crosses once (80 draws in one cluster, then 5 in the other), so none is flagged as stuck, and the masses are
# estimable; the out-of-sample row at $\xi = 0.5$ with $m = 1$ is tempered SGD against the posterior where they are
# equal, so its KL is 0; with $m = n = 512$ tempering is far stronger, and the KL is not 0. The by-k table has a row
# for every $k$ tried and both $m$, and its $k = 2$, $m = 1$ row repeats the main analysis.

# %%
REFERENCE_SETTINGS = SimpleNamespace(**vars(SETTINGS), k_rule='stable', chains_per_cluster=2, xi_out_of_sample=(0.5, 0.5))
with np.errstate(over='ignore'):
    ref = analyse(synthetic, REFERENCE_SETTINGS)
rs = ref['summary'].set_index('quantity')
assert ref['k'] == 2 and ref['mixing']['never_left'] == 0 and (ref['chains'].transitions == 1).all()
oos = 'KL(Bayes‖Q) [nats], tempered SGD vs Bayes, ξ chosen on another data seed (out of sample)'
assert np.isclose(rs.value[f'{oos}, m = 1'], 0, atol=1e-7) and rs.value[f'{oos}, m = n = 512'] > 0.1
assert 'NOT ESTIMABLE' not in rs.note['posterior mass of cluster C1']
bk = ref['by_k'].set_index(['k', 'm'])
assert set(bk.index) == {(k, m) for k in (2, 3, 4) for m in (1, 512)}
assert bk.xi_star[(2, 1)] == ref['xi_star'][0] and np.isclose(bk.kl_at_paper_xi[(2, 1)], 0, atol=1e-7)
ref['by_k'][['k', 'm', 'chains', 'chains_never_left', 'rhat_max', 'sgd_masses', 'posterior_masses', 'xi_star', 'kl_at_paper_xi']]

# %% [markdown]
# ## Figures, from the written tables
#
# The study's report writes the analysis as small csv files (the summary, the fig.-3 scan, the per-net table
# with each net's cluster, the cluster masses, the cluster centres on the probe grid, the loss curves); the
# figures are drawn from those tables alone, so a page can draw them again from committed results.
# `centroid_table` and `loss_curves` make the two tables that are not already in `analyse`'s result, `FIGURES`
# names the four figures with what each one draws from, and `read_results` reads a report's tables back; they
# live in the [figures chapter](posterior_figures.html).

# %% [markdown]
# The synthetic study's figures. Its cluster centres must be the two functions it was built from, $\sigma(3x)$
# and $\sigma(3y)$, up to the noise; its loss curves, from nets whose loss falls as $c_i/\sqrt{\text{epoch}}$
# with $c_i = 1, \dots, 5$, have the median $3/\sqrt{\text{epoch}}$. Both panels of fig. 3 fall to zero at
# $\xi = 0.5$ (on the log axis a deep dip, or a gap where the divergence rounds to zero), and the three lines lie
# on top of each other: every cluster has the same $\lambda_k$ and the same slope here, so the three ways to
# form $D_\xi$ agree. In fig. 4b every tempered bar stands at the posterior's height.

# %%
from fracsgd.studies.posterior_figures import FIGURES, centroid_table, loss_curves
tables = dict(scan=res['scan'], summary=res['summary'], masses=res['masses'],
              solutions=sol.assign(cluster=res['pool'].cluster), centroids=centroid_table(res['centroids'], probe),
              curves=loss_curves(pd.DataFrame({'net': np.repeat(range(5), 50), 'epoch': np.tile(range(1, 51), 5),
                                               'loss': np.repeat(np.arange(1, 6), 50) / np.sqrt(np.tile(range(1, 51), 5))})))
centres = tables['centroids'].pivot(index='probe', columns='cluster', values='p1')
assert np.allclose(centres[0], 1 / (1 + np.exp(-3 * probe[:, 0])), atol=0.02)
assert np.allclose(centres[1], 1 / (1 + np.exp(-3 * probe[:, 1])), atol=0.02)
assert np.allclose(tables['curves']['median'], 3 / np.sqrt(tables['curves'].epoch))
for name, draw in FIGURES.items():
    fig = draw(tables, SETTINGS)
    plt.show()

# %%
#| hide
import nbdev
nbdev.nbdev_export()
