# %% [markdown]
# # What studies share
#
# > The row every study's summary is made of, in one place: the ledger reads these rows, so they are written one way.

# %%
#| default_exp studies.common

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import numpy as np
from scipy import stats


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
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    return summary_row(quantity, stat(x) if len(x) else np.nan, *bootstrap_interval(x, stat, n_boot), note)

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

# %%
#| hide
import nbdev; nbdev.nbdev_export()
