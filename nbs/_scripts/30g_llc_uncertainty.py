# %% [markdown]
# # The LLC's uncertainty in the ledger
#
# > How a ledger row's interval carries the LLC estimator's systematic error: the readings of nβ and of the localization at the same weights, the temperature slope, and the flags that keep a row from being decisive.

# %%
#| default_exp ledger.uncertainty

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import math, re

import pandas as pd

from fracsgd.llc.temperature import MOVES_ROW, NOT_LAMBDA_ROW

# %%
from fracsgd.core import read_table
from fracsgd.ledger.provenance import COMPACT

# %% [markdown]
# Our intervals on an LLC are bootstraps over nets or t-intervals over the last estimates of one run: sampling
# error only. The estimator's systematic error is larger, and the repository measures it where it can. At the
# final weights of the 50 MNIST seeds, the paper's setting read with $n\beta = 256/\ln 256$ (devinterp's reading,
# the one along training) gives +35.9, read with $n\beta = n/\ln n$ (the paper's formula with $n$ = 5,000 images)
# −96.6, and our calibrated estimator (another step size and localization at the latter $n\beta$) −93.6 with
# every net flagged; on deep linear networks the paper's preset is 40–77% below the exact λ
# ([DLN chapter](dln.html)); every moons estimate is flagged by its diagnostics. So:
#
# * a study that measures the LLC at the same weights under several readings writes one summary row per reading,
#   named `mean LLC at the final weights, <reading>`, the reading its LLC rows use marked `(along training)`;
# * an `llc` row's interval is widened by the shifts between readings ($[\ell + \min\Delta, h + \max\Delta]$,
#   Δ ≥ 0 included), an `llc-scaled` row's by the ratios between readings (the hull of $[\ell, h]$ and $r[\ell, h]$
#   for each ratio $r$), an `llc-spread` row's by their absolute values; `llc-ratio` rows are not widened, since a
#   factor common to every LLC cancels in a ratio or a rank, but they cannot be decisive either: no study measures
#   its LLCs under a second reading along training and per net, so that the readings differ by a common factor is
#   never shown. Where it is measured at the final weights it is false: the 50 MNIST seeds read +35.9 and −96.6,
#   of opposite signs. The note says which of the two holds the row back;
# * two more parts of the estimator's systematic error are the shift under another localization γ
#   ([localization](localization.html)) and the temperature slope that flags a finite-$n$ target not converged
#   to λ ([LLC temperature](llc_temperature.html)). A study that runs `llc_systematics` at its final weights
#   writes the first as one more reading (`..., localization ×3`), which widens the interval like the others, and
#   the second as `MOVES_ROW` and `NOT_LAMBDA_ROW`, which `systematic_parts` puts in the note. A row whose nets
#   are all marked "target not converged to λ" is not decisive. A result without these rows says so in its note
#   (`LLC_NOT_MEASURED`), and its interval is read as a lower bound on the uncertainty;
# * an `llc`, `llc-scaled` or `llc-spread` row of a result that measures no such spread cannot be decisive, and
#   says so;
# * a result whose diagnostics flag every LLC estimate its rows use (a summary note "K flagged" with K the number
#   of nets analysed) cannot decide any claim that involves the LLC;
# * every row that involves the LLC states $n\beta$ (recorded as `llc_nbeta` in `provenance.json`).
#
# The readings cover the two $n\beta$ the paper allows and one change of localization and step size; other
# localizations are not measured at these weights, so the widened interval is a lower bound on the systematic
# uncertainty.

# %%
#| export
SYSTEMATIC = 'mean LLC at the final weights, '      # summary rows: the LLC at the same weights under each reading
ALONG = '(along training)'                           # marks the reading that a study's own LLC rows use
def llc_readings(summary: pd.DataFrame) -> tuple[float, dict]:
    "(the reading along training, {reading: mean LLC at the final weights}) from a summary; (nan, {}) if none."
    rows = summary[summary.index.str.startswith(SYSTEMATIC)].value.astype(float)
    if rows.empty:
        return math.nan, {}
    along = [q for q in rows.index if ALONG in q]
    if len(along) != 1:
        raise ValueError(f'the summary has {len(along)} rows "{SYSTEMATIC}... {ALONG}"; exactly one is needed')
    return float(rows[along[0]]), {q.removeprefix(SYSTEMATIC): float(v) for q, v in rows.items()}

def widen(llc: str, lo: float, hi: float, base: float, readings: dict) -> tuple[float, float]:
    "The interval [lo, hi] widened by the spread between LLC readings, as the claim's `llc` kind says."
    if llc == 'llc':
        shifts = [r - base for r in readings.values()] + [0.0]
        return lo + min(shifts), hi + max(shifts)
    if llc in ('llc-scaled', 'llc-spread'):
        ratios = [r / base for r in readings.values()]
        ratios = [abs(r) for r in ratios] if llc == 'llc-spread' else ratios
        ends = [lo, hi] + [r * x for r in ratios for x in (lo, hi)]
        return min(ends), max(ends)
    return lo, hi

LLC_NOT_MEASURED = ("not in the interval, as not measured at these weights: the LLC's shift under another localization, "
                    'and the temperature slope that flags a target not converged to λ (LLC temperature chapter)')
def ratio_hold(base: float, readings: dict) -> str:
    "Why an `llc-ratio` row is not decisive: a common factor cancels, but no study shows the readings differ by one."
    if not readings:
        return ('ratios or ranks of LLCs taken under one nβ reading: whether another reading changes them by a '
                'common factor, which would cancel, is not measured at this model')
    other = {k: v for k, v in readings.items() if ALONG not in k}
    if flips := {k: v for k, v in other.items() if v * base <= 0}:
        return (f'the LLC at the final weights reads {base:.3g} under the reading along training and '
                + ', '.join(f'{v:.3g} under "{k}"' for k, v in flips.items()) + ': another sign, so no common '
                'factor relates them and a ratio or rank of LLCs under one need not hold under the other')
    return ('the readings differ at the final weights by the factors ' + ', '.join(f'{v / base:.3g} ({k})' for k, v in
            other.items()) + '; whether every LLC of the ratio moves by that factor (per net, along training) is not measured')

FLAGGED = r'(\d+)(?: of (\d+))? flagged'           # how a summary's note counts flagged LLC estimates
NO_FLAG_COUNT = 'no count of flagged LLC estimates is recorded with this result, so the all-flagged rule cannot act'
def llc_flagged(summary: pd.DataFrame) -> str | None:
    "'all K LLC estimates flagged ...' when a note counts every estimate flagged ('K of N flagged', or 'K flagged' of the nets), '' when some pass, None if none counts."
    found = None
    for q, note in summary.get('note', pd.Series(dtype=str)).items():
        m = re.search(FLAGGED, note) if isinstance(note, str) and 'calibrated' not in q else None
        if m:
            lead, found = re.match(r'(\d+) nets;', note), ''
            n = float(m.group(2) or (lead.group(1) if lead else summary.value.get('nets analysed', math.nan)))
            if int(m.group(1)) >= n:
                kinds = re.search(r'\(by kind: ([^)]*)\)', note)        # what the study recorded of why (problem_counts)
                return (f'all {int(m.group(1))} LLC estimates flagged by their diagnostics'
                        + (f' ({kinds.group(1)})' if kinds else ''))
    return found


# %% [markdown]
# At the 50 MNIST end points, the committed result holds four readings: the two $n\beta$, our calibrated setting,
# and, since the fourth run (2026-12-03), the along-training setting at 3× the localization, which reads 30.6
# against 35.9. Table 8's mean final LLC (32.6, its bootstrap interval 0.9 wide) becomes an interval 133 wide, and
# eq. 17's $d_s$, which scales with λ, takes the sign of the other readings. The localization reading lies
# between the others, so on its own it moves only the `llc-scaled` spread of $d_s$ (below):

# %%
seeds = read_table(COMPACT / 'mnist-seeds/full/summary.csv').set_index('quantity')
base, readings = llc_readings(seeds)
assert round(base, 1) == 35.9 and {k: round(v, 1) for k, v in readings.items()} == {
    'paper-devinterp-nbeta (along training)': 35.9, 'paper': -96.6, 'calibrated': -93.6,
    'paper-devinterp-nbeta, localization x3': 30.6}
lam, ds = seeds.loc['mean final LLC'], seeds.loc['mean d_s']
assert [round(x, 1) for x in widen('llc', lam.ci_low, lam.ci_high, base, readings)] == [-100.3, 33.1]
assert [round(x, 1) for x in widen('llc-scaled', ds.ci_low, ds.ci_high, base, readings)] == [-99.9, 37.1]
assert widen('llc-ratio', 1.0, 2.0, base, readings) == (1.0, 2.0)
assert 'another sign' in ratio_hold(base, readings) and 'not measured' in ratio_hold(math.nan, {})
assert 'factors 2' in ratio_hold(1.0, {'a (along training)': 1.0, 'b': 2.0})
moons_full = read_table(COMPACT / 'moons-posterior/full/summary.csv').set_index('quantity')
assert llc_flagged(moons_full).startswith('all 500 LLC estimates flagged by their diagnostics (chains drift') and 'all 1000' in llc_flagged(seeds)
some = pd.DataFrame(dict(value=[1.0], note=['50 nets; 4999 of 5000 flagged by their diagnostics']), index=['x'])
assert llc_flagged(some) == '' and 'all 5000' in llc_flagged(some.assign(note='50 nets; 5000 of 5000 flagged'))
why = some.assign(note='50 nets; 50 of 50 flagged (by kind: ESS 50, R-hat 2)')
assert llc_flagged(why) == 'all 50 LLC estimates flagged by their diagnostics (ESS 50, R-hat 2)'   # and why, if told
dict(readings=readings, mean_final_llc=widen('llc', lam.ci_low, lam.ci_high, base, readings))



# %% [markdown]
# ## The localization shift and the temperature slope
#
# `systematic_parts` reads the two rows that `llc_systematics` leaves in a summary. It gives the note that
# replaces `LLC_NOT_MEASURED` and, when every net is marked, the reason the row is held back. The shift itself
# needs nothing here: it arrives as a reading and `widen` takes it in. On the 50 MNIST seeds the estimate at
# 10 nβ is −34.9 against +35.4 at nβ (a tenth of the step, the same 400 draws), so `moves` is −3.36 and every net
# is marked. Seven rows (table 8, fig. 2a, App. D, and §3.3.1's single constant, derived from the same nets) are held
# back for it, as they already were for their flags.

# %%
#| export
def systematic_parts(summary: pd.DataFrame) -> tuple[str, str]:
    """(note, hold) on the localization shift and the temperature slope measured at a study's final weights:
    (`LLC_NOT_MEASURED`, '') when the summary has no `MOVES_ROW`; hold is '' unless `NOT_LAMBDA_ROW` marks
    every net."""
    if MOVES_ROW not in summary.index:
        return LLC_NOT_MEASURED, ''
    m = summary.loc[MOVES_ROW]
    k = int(summary.loc[NOT_LAMBDA_ROW, 'value']) if NOT_LAMBDA_ROW in summary.index else None
    n = re.match(r'\d+ of (\d+) nets', str(summary.loc[NOT_LAMBDA_ROW].get('note', ''))) if k is not None else None
    n = int(n.group(1)) if n else None
    note = (f'measured at these weights: the shift under 3x the localization (a reading above), and the '
            f'temperature slope, moves {m.value:.3g} [{m.ci_low:.3g}, {m.ci_high:.3g}] from nβ to 10 nβ, with '
            + (f'{k} of {n} nets' if n else f'{k} nets') + ' marked "target not converged to λ" (LLC temperature '
            'chapter; on noisy data a colder posterior is not a larger n, so the slope measures how much the '
            'estimate depends on temperature)')
    hold = f'every one of the {n} nets has its LLC target marked not converged to λ' if n and k >= n else ''
    return note, hold


# %%
def _summary(moves, k, n):
    return pd.DataFrame(dict(value=[moves, k], ci_low=[moves - .1, k], ci_high=[moves + .1, k],
                             note=['', f'{k} of {n} nets; |moves| > 0.05']), index=[MOVES_ROW, NOT_LAMBDA_ROW])
assert systematic_parts(seeds.iloc[:0]) == (LLC_NOT_MEASURED, '')
note, hold = systematic_parts(_summary(0.3, 50, 50))
assert 'moves 0.3 [0.2, 0.4]' in note and '50 of 50 nets' in note and 'every one of the 50' in hold
assert systematic_parts(_summary(0.01, 3, 50))[1] == ''
assert llc_flagged(_summary(0.3, 50, 50)) is None       # the marks are not the diagnostics' flags
seeds_note, seeds_hold = systematic_parts(seeds)        # the fourth mnist-seeds run measured both parts
assert '50 of 50 nets' in seeds_note and 'moves -3.36' in seeds_note and 'every one of the 50' in seeds_hold
from fracsgd.ledger.claims import read_ledger
ledger_notes = read_ledger().set_index('source').note     # seeds/full, its derived result, and the controls
held = ledger_notes[ledger_notes.str.contains('every one of the 50 nets has its LLC target', regex=False)]
assert set(held.index) == {'compact/mnist-seeds/full', 'compact/derived/mnist-seeds-full',
                           'compact/mnist-seeds/custom-a16ed3fd8d0f094e'} and len(held) == 13
seeds_note


# %% [markdown]
# ## What a derived result inherits
#
# Some ledger rows come from a result derived from a study's files (the [ledger checks](ledger_checks.html)
# chapter): the two halves of the MNIST seeds' runs, the slopes per architecture. Their numbers rest on the same
# LLC estimates, so they carry the same readings, flags and systematic parts, and the gate should find them in the
# derived summary as it does in the parent's. `instrument_rows` picks those rows out of a summary: the readings at
# the final weights, the temperature slope and its marks, and every row whose note counts flagged estimates.

# %%
#| export
def instrument_rows(summary: pd.DataFrame) -> pd.DataFrame:
    "The rows of a summary (indexed by quantity) that describe its LLC estimator and that the ledger's gate reads."
    notes = summary.get('note', pd.Series('', summary.index)).fillna('').astype(str)
    keep = (summary.index.str.startswith(SYSTEMATIC) | summary.index.isin([MOVES_ROW, NOT_LAMBDA_ROW])
            | notes.map(lambda n: bool(re.search(FLAGGED, n))).to_numpy())
    return summary[keep]


# %%
inherited = instrument_rows(seeds)
assert set(inherited.index) == {*(SYSTEMATIC + k for k in readings), MOVES_ROW, NOT_LAMBDA_ROW,
                                'LLC estimates along training flagged'}
assert llc_readings(inherited) == (base, readings) and llc_flagged(inherited) == llc_flagged(seeds)
assert systematic_parts(inherited) == systematic_parts(seeds)
assert instrument_rows(seeds.loc[['mean d_s', 'nets']]).empty
inherited[['value', 'note']]


# %% [markdown]
# A study result can also take its LLC estimates from another: the MNIST controls train the seeds study's first ten
# nets again beside gradient descent, and read the LLC along training from the seeds' full run instead of
# estimating it twice (the runs record the source as `llc_source`). Its own summary then has no diagnostics of those
# estimates, yet they were diagnosed where they were made. `with_llc_source` gives such a summary the source's
# instrument rows where it has none of its own, each note naming where it came from. The readings and counts are
# the source's over all of its nets, not over the subset that took them, and the note says so.

# %%
#| export
def with_llc_source(summary: pd.DataFrame, source_summary: pd.DataFrame, source: str) -> pd.DataFrame:
    """`summary` (indexed by quantity) with the instrument rows of `source_summary`, the summary of the result
    `source` whose LLC estimates it took, where it has no row of that quantity itself."""
    rows = instrument_rows(source_summary)
    rows = rows[~rows.index.isin(summary.index)]
    if rows.empty:
        return summary
    note = f'from {source}, whose LLC estimates these nets take (over all of its nets)'
    return pd.concat([summary, rows.assign(note=[f'{n}; {note}' if n else note for n in rows.note.fillna('')])])


# %%
own = seeds.loc[['mean d_s', 'mean final LLC', 'nets']]
assert llc_flagged(own) is None and systematic_parts(own)[0] == LLC_NOT_MEASURED    # nothing of its own
took = with_llc_source(own, seeds, 'mnist-seeds/full')
assert llc_flagged(took) == llc_flagged(seeds) and llc_readings(took) == (base, readings)
assert systematic_parts(took)[1] == systematic_parts(seeds)[1]                         # the same marks hold it back
assert took.loc[MOVES_ROW, 'note'].endswith('(over all of its nets)') and len(took) == len(own) + len(inherited)
assert with_llc_source(seeds, seeds, 'x').equals(seeds)                              # its own rows win

# %%
#| hide
import nbdev; nbdev.nbdev_export()
