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

# %%
#| hide
import nbdev; nbdev.nbdev_export()
