# %% [markdown]
# # What studies share
#
# > What the studies share, in one place: the summary row the ledger reads, intervals, a run's settings from its configuration, the controls' figures and the report's ending.

# %%
#| default_exp studies.common

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
from scipy import stats

from fracsgd.core import save_figures, write_table
from fracsgd.llc.result import SENSITIVITY_FACTOR
from fracsgd.llc.temperature import MOVES_ROW, NOT_LAMBDA_ROW, SLOPE_TOLERANCE


# %% [markdown]
# Each study's report writes a `summary.csv`, one row per quantity: its value, the ends of its interval and a note.
# The [claims ledger](ledger.html) reads a claim's number from one such row, so every study writes its rows with
# `summary_row`: the numbers as floats (NaN where there is none), and, with `contain`, an interval widened to hold its
# own value (a percentile bootstrap interval of a skewed statistic can miss the point estimate).

# %%
#| export
def summary_row(quantity: str, value, lo=np.nan, hi=np.nan, note: str = '', *, contain: bool = False) -> dict:
    "One row of a study's `summary.csv`: `quantity`, `value` and its interval [`lo`, `hi`] as floats, and a `note`."
    value, lo, hi = float(value), float(lo), float(hi)
    if contain:
        lo, hi = min(lo, value), max(hi, value)
    return dict(quantity=quantity, value=value, ci_low=lo, ci_high=hi, note=note)


# %%
assert summary_row('d_s', np.float32(0.5), 0.25, 0.75) == dict(quantity='d_s', value=0.5, ci_low=0.25, ci_high=0.75, note='')
assert summary_row('n', 3)['value'] == 3.0 and np.isnan(summary_row('n', 3)['ci_low'])
assert summary_row('slope', 0.9, 0.2, 0.8, contain=True)['ci_high'] == 0.9          # the interval holds its point
assert np.isnan(summary_row('slope', 0.9, np.nan, 0.8, contain=True)['ci_low'])       # no end is made up
summary_row('mean eq.-17 slope', 0.41, 0.35, 0.47, 'over 17 nets')


# %% [markdown]
# ## Intervals
#
# The MNIST studies give means, spreads and rank correlations over nets with percentile-bootstrap intervals, the
# nets resampled whole: `bootstrap_interval` for a statistic of one column (`stat_row` writes it as a summary row),
# `spearman_interval` for Spearman's ρ between two columns, pairs resampled together. Each interval holds its
# own point, and a statistic that cannot be computed gives NaN rather than a made-up number.

# %%
#| export
def bootstrap_interval(x, stat, n_boot: int, seed: int = 0) -> tuple[float, float]:
    "95% percentile-bootstrap interval of `stat` over the entries of `x` (resampled whole)."
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    if len(x) < 2 or not n_boot:
        return (np.nan, np.nan)
    rng = np.random.default_rng(seed)
    reps = [stat(x[rng.integers(0, len(x), len(x))]) for _ in range(n_boot)]
    lo, hi = np.quantile(reps, [0.025, 0.975])
    v = stat(x)
    return float(min(lo, v)), float(max(hi, v))

def stat_row(quantity, x, stat, n_boot, note=''):
    "A summary row of `stat` over the finite entries of `x`, with its `bootstrap_interval`."
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    return summary_row(quantity, stat(x) if len(x) else np.nan, *bootstrap_interval(x, stat, n_boot), note)

ALONG_FLAGGED = 'LLC estimates along training flagged'

def flagged_rows(nets: pd.DataFrame) -> list[dict]:
    """`ALONG_FLAGGED`: the share of the LLC estimates along training that the estimator's own diagnostics flag,
    noted 'K of N flagged' (the ledger holds back a row whose estimates are all flagged); none for runs made before
    the flags were recorded (2026-12-02)."""
    if 'llc_flagged_share' not in nets or 'llc_estimates' not in nets:
        return []
    k, n = int(round((nets.llc_flagged_share * nets.llc_estimates).sum())), int(nets.llc_estimates.sum())
    return [summary_row(ALONG_FLAGGED, k / n if n else np.nan, note=f'{len(nets)} nets; {k} of {n} flagged by their '
                        f'diagnostics; in the last 10 of each net: {nets.llc_final_flagged_share.mean():.0%}')]

LOCALIZATION_READING = f'localization x{SENSITIVITY_FACTOR:g}'   # the reading at `llc_systematics`'s default factor

def systematics_rows(nets: pd.DataFrame, n_boot: int) -> list[dict]:
    """The two systematic parts that `llc_systematics` measured at each net's final weights, if the run recorded
    them (columns `final_llc`, `final_llc_stronger`, `temperature_moves`, `target_not_lambda`): the LLC along
    training moved by each net's shift under 3x the localization, as one more 'mean LLC at the final weights'
    reading; `MOVES_ROW`, the mean temperature slope; `NOT_LAMBDA_ROW`, the nets it marks, noted 'K of N nets'."""
    if 'final_llc_stronger' not in nets or 'llc_last' not in nets:
        return []
    setting = nets.get('llc_setting', pd.Series(['along training'])).iloc[0]
    shift, k = nets.final_llc_stronger - nets.final_llc, int(nets.target_not_lambda.astype(bool).sum())
    return [stat_row(f'mean LLC at the final weights, {setting}, {LOCALIZATION_READING}', nets.llc_last + shift,
                     np.mean, n_boot, f'{len(nets)} nets: the LLC along training plus each net\'s shift under '
                     f'{SENSITIVITY_FACTOR:g}x the localization (same step, draws and seed)'),
            stat_row(MOVES_ROW, nets.temperature_moves, np.mean, n_boot, 'slope x ln nβ / estimate from nβ to '
                     '10 nβ at a tenth of the step, net by net'),
            summary_row(NOT_LAMBDA_ROW, k, k, k, f'{k} of {len(nets)} nets; |moves| > {SLOPE_TOLERANCE:g}')]

def spearman_interval(x, y, n_boot: int = 200, seed: int = 0) -> tuple[float, float, float]:
    "Spearman's rho of (x, y) and a 95% bootstrap interval over pairs; all NaN when it cannot be computed."
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if len(x) < 3:
        return (np.nan, np.nan, np.nan)
    rho = float(stats.spearmanr(x, y)[0])
    rng, reps = np.random.default_rng(seed), []
    for _ in range(n_boot):
        i = rng.integers(0, len(x), len(x))
        if len(np.unique(x[i])) > 1 and len(np.unique(y[i])) > 1:
            reps.append(stats.spearmanr(x[i], y[i])[0])
    if not reps or not np.isfinite(rho):
        return (np.nan, np.nan, np.nan)
    lo, hi = np.nanquantile(reps, [0.025, 0.975])
    return rho, float(min(lo, rho)), float(max(hi, rho))


# %%
const = np.full(10, 3.0)
assert bootstrap_interval(const, np.mean, 200) == (3.0, 3.0) and np.isnan(bootstrap_interval([1.0], np.mean, 200)).all()
x = np.random.default_rng(0).normal(size=400)
lo, hi = bootstrap_interval(x, np.mean, 400)
assert lo < x.mean() < hi and abs((hi - lo) / 2 - 1.96 / 20) < 0.03          # the normal mean's 95% half-width
assert stat_row('mean', [1.0, np.nan, 3.0], np.mean, 100)['value'] == 2.0  # NaN entries are left out
assert np.allclose(spearman_interval(np.arange(10), np.arange(10) ** 3, 100), 1)   # monotone: rho = 1, always
assert np.isnan(spearman_interval([1, 2], [2, 1])).all()                   # too few pairs
spearman_interval(x[:50], x[:50] + np.random.default_rng(1).normal(size=50), 200)

# %% [markdown]
# Where the runs recorded the LLC's diagnostics along training, `flagged_rows` counts the flagged estimates over all
# nets (two nets of 20 estimates, 5 and 20 flagged: 25 of 40); runs made before have no such row.

# %%
two = pd.DataFrame(dict(llc_estimates=[20, 20], llc_flagged_share=[0.25, 1.0], llc_final_flagged_share=[0.5, 1.0]))
(flag,) = flagged_rows(two)
assert flag['value'] == 25 / 40 and '25 of 40 flagged' in flag['note'] and 'last 10 of each net: 75%' in flag['note']
assert flagged_rows(two.drop(columns='llc_flagged_share')) == []
flag

# %% [markdown]
# `systematics_rows` turns the columns of `llc_systematics` into summary rows. Two nets whose LLC along training
# is 30 and 40 and whose shift under 3× the localization is −6 and −2 read 31 under that localization, and one
# of the two crosses the slope's tolerance.

# %%
sys_nets = two.assign(llc_setting='paper', llc_last=[30.0, 40.0], final_llc=[28.0, 41.0],
                      final_llc_stronger=[22.0, 39.0], temperature_moves=[0.2, 0.01], target_not_lambda=[True, False])
reading, moves_row, marked = systematics_rows(sys_nets, n_boot=0)
assert reading['quantity'] == 'mean LLC at the final weights, paper, localization x3' and reading['value'] == 31.0
assert moves_row['quantity'] == MOVES_ROW and abs(moves_row['value'] - 0.105) < 1e-12
assert marked['value'] == 1 and marked['note'].startswith('1 of 2 nets') and systematics_rows(two, 0) == []


# %% [markdown]
# ## A run's settings from its study's configuration
#
# A study's configuration holds the settings its runs share; a run holds one network group's settings. Each setting
# is typed twice, once in each dataclass (a run's key hashes its own fields, so the two cannot share a base class
# without changing every committed key), and `run_fields` copies it once: every field of the run class that the
# configuration also has.

# %%
#| export
def run_fields(run_cls, cfg, **changes) -> dict:
    "The fields of the run dataclass `run_cls` that the configuration `cfg` also has, with their values in `cfg`, then `changes`."
    names = {f.name for f in dataclasses.fields(run_cls)} & {f.name for f in dataclasses.fields(cfg)}
    return {**{n: getattr(cfg, n) for n in sorted(names)}, **changes}


# %%
@dataclasses.dataclass(frozen=True)
class _Cfg: lr: float = 0.1; epochs: int = 3; n_boot: int = 100
@dataclasses.dataclass(frozen=True)
class _Run: lr: float; epochs: int; seed: int
assert run_fields(_Run, _Cfg()) == dict(epochs=3, lr=0.1)                    # what both have; the rest is the run's own
assert _Run(**run_fields(_Run, _Cfg(), seed=4, lr=0.2)) == _Run(0.2, 3, 4)


# %% [markdown]
# ## The controls' figures
#
# The moons and the MNIST controls (SGD against full-batch gradient descent from the same initialisations) draw the
# same two figures from the tables of `sgd_gd_controls` ([ageing chapter](ageing.html)): the increment MSD
# $M(s, \tau) = \langle\lVert w_{s+\tau} - w_s\rVert^2\rangle$ against the lag at each age $s$, with $M$ at one
# lag against the age (ageing, paper eq. 4); and the noise part $M_{SGD} - M_{GD}$ against the lag. Here they are
# drawn from made-up tables of the right shape (SGD's $M$ twice GD's, falling with the age as $s^{-1/2}$).

# %%
#| export
def plot_ageing(msd: pd.DataFrame, lag: int):
    "M(s, τ) against τ at each age, for SGD and for GD; and M(s, τ = lag) against the age s for both."
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, (opt, title) in zip(axes, (('sgd', 'SGD'), ('gd', 'full-batch GD'))):
        part = msd[msd.optimizer == opt]
        for i, (age, g) in enumerate(part.groupby('age')):
            ax.loglog(g.lag, g.msd, '.-', color=plt.cm.viridis(i / max(1, part.age.nunique() - 1)), label=f's = {age}')
        ax.set(xlabel='lag τ (steps)', title=f'{title}: M(s, τ) = ⟨‖w_(s+τ) − w_s‖²⟩')
    axes[0].set_ylabel('M(s, τ)')
    axes[0].legend(fontsize=7, ncol=2)
    at = msd[msd.lag == lag]
    for opt, color in (('sgd', 'C0'), ('gd', 'C3')):
        g = at[at.optimizer == opt]
        axes[2].errorbar(g.age, g.msd, yerr=[g.msd - g.ci_low, g.ci_high - g.msd], fmt='o-', color=color,
                         label='SGD' if opt == 'sgd' else 'full-batch GD')
    axes[2].set(xscale='log', yscale='log', xlabel='age s (steps)', ylabel=f'M(s, τ = {lag})',
                title='ageing: M at a fixed lag against the age')
    axes[2].legend(fontsize=8)
    fig.tight_layout()
    return fig

def plot_noise(noise: pd.DataFrame):
    "The noise part M_SGD − M_GD against the lag τ at each age (with intervals over pairs), log-log."
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for i, (age, g) in enumerate(noise.groupby('age')):
        ax.errorbar(g.lag, g.excess, yerr=[g.excess - g.ci_low, g.ci_high - g.excess], fmt='o-', ms=3,
                    color=plt.cm.viridis(i / max(1, noise.age.nunique() - 1)), label=f's = {age}')
    lag = np.array([1, 10.])
    ref = noise.excess[noise.lag == 1].mean()
    ax.plot(lag, ref * lag, 'k:', lw=1, label='∝ τ (a free walk)')
    ax.set(xscale='log', yscale='log', xlabel='lag τ (steps)', ylabel='M_SGD(s, τ) − M_GD(s, τ)',
           title='what minibatch noise adds to the increments')
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


# %%
_ages, _lags = (100, 400), (1, 10, 100)
_msd = pd.DataFrame([dict(optimizer=o, age=s, lag=l, msd=l * (2 if o == 'sgd' else 1) * (s / 100) ** -0.5)
                     for o in ('sgd', 'gd') for s in _ages for l in _lags]).assign(ci_low=lambda d: .9 * d.msd,
                                                                                    ci_high=lambda d: 1.1 * d.msd)
fig = plot_ageing(_msd, 10)
assert len(fig.axes) == 3 and fig.axes[2].get_ylabel() == 'M(s, τ = 10)'
_noise = _msd[_msd.optimizer == 'sgd'].assign(excess=lambda d: d.msd / 2, ci_low=lambda d: d.msd / 2.2,
                                              ci_high=lambda d: d.msd / 1.8)
assert len(plot_noise(_noise).axes[0].lines) >= 1                          # both figures, on made-up tables


# %% [markdown]
# ## The report's shape
#
# Every study's `report` ends the same way: it writes its tables (`summary.csv`, the one the ledger reads, and the
# tables its page and the ledger keep) and its figures into the study folder, each file whole or not at all, and
# returns the summary, the figures and the folder. `write_report` is that ending.

# %%
#| export
def write_report(folder, tables: dict, figures: dict | None = None, dpi: int = 110) -> dict:
    """Write a study's report into `folder`: each table of `tables` (file name → DataFrame; `summary.csv` is required)
    and each figure of `figures` (name → figure, as `<name>.png`). Returns dict(summary, figures, out)."""
    if 'summary.csv' not in tables:
        raise ValueError(f"a study's report writes summary.csv (the ledger reads it); got only {sorted(tables)}")
    out = Path(folder)
    for name, table in tables.items():
        write_table(table, out / name)
    return dict(summary=tables['summary.csv'], figures=save_figures(figures or {}, out, dpi), out=out)


# %%
import tempfile
_d = Path(tempfile.mkdtemp())
_rep = write_report(_d, {'summary.csv': pd.DataFrame([summary_row('n', 3)]), 'per_net.parquet': pd.DataFrame({'x': [1.0]})},
                    {'fig': plt.figure()})
assert sorted(p.name for p in _d.iterdir()) == ['fig.png', 'per_net.parquet', 'summary.csv'] and _rep['out'] == _d
try:
    write_report(_d, {'per_net.csv': pd.DataFrame()})
    raise AssertionError('a report without summary.csv was written')
except ValueError as e:
    assert 'summary.csv' in str(e)

# %%
#| hide
import nbdev; nbdev.nbdev_export()
