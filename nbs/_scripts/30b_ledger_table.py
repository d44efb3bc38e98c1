# %% [markdown]
# # The ledger table
#
# > The ledger as a reader sees it: one row per claim, the paper's number beside ours, and the verdicts counted by the scale of the result behind them.

# %%
#| default_exp ledger.table

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import math, re

import pandas as pd

from fracsgd.ledger.claims import VERDICTS, _fmt, read_claims, read_ledger
from fracsgd.ledger.scale import PAPER_SCALES, paper_kind


# %% [markdown]
# The [claims ledger](ledger.html) keeps every row that any committed result gives; this chapter picks the one
# row per claim that the ledger page and the study pages show, and writes both sides of it as text. A claim with
# rows from several results shows the one closest to the paper's protocol (the ledger page says how ties are
# broken); a claim that no result has measured shows 'not run yet'.

# %%
#| export
def ledger_table(ledger=None, claims=None) -> pd.DataFrame:
    "The ledger as one row per claim, joined with the claims; claims without a recorded number are not run yet."
    claims_table = read_claims(claims)
    rows = read_ledger(ledger, claims_table)
    rank = rows.scale.map(lambda x: PAPER_SCALES.index(paper_kind(x))) * 10 + rows.config.map({'full': 0, 'quick': 1}).fillna(2)
    decisive = rows.verdict.isin(['reproduced', 'not reproduced']).astype(int)     # among equals: undecided first
    best = (rows.assign(rank=rank, decisive=decisive).sort_values(['rank', 'decisive', 'source'], kind='stable')
            .drop_duplicates('claim_id').set_index('claim_id'))
    out = []
    for c in claims_table.itertuples():
        r = best.loc[c.claim_id] if c.claim_id in best.index else None
        config = '' if r is None else f'{r.config} ({r.config_hash})'
        scale = '' if r is None else r.scale
        out.append(dict(claim=c.claim_id, location=c.location, what=c.claim, paper=paper_text(c._asdict()),
                        ours='' if r is None else ours_text(r), configuration=config,
                        verdict='not run yet' if r is None else r.verdict,
                        scale=scale, note='' if r is None else r.note, study=c.study))
    return pd.DataFrame(out)

def paper_text(claim) -> str:
    "The paper's side of a claim as the tables show it: '< 1', '0.009', '2.585 ± 0.779' or '(no number)'."
    if not claim['paper_value']:
        return '(no number)'
    return ({'above': '> ', 'below': '< '}.get(claim['kind'], '') + claim['paper_value'] +
            (f' ± {claim["tolerance"]}' if claim['tolerance'] else ''))

def ours_text(row) -> str:
    "Our side of a ledger row: 'value [low, high]', a grid-edge bound ('≤ 0.05, grid edge'), or '' without a number."
    if row.value is None or math.isnan(row.value):
        return ''
    edge = re.search(r'[≤≥] \S+, grid edge', row.note)
    return edge.group(0) if edge else f'{_fmt(row.value)} [{_fmt(row.ci_low)}, {_fmt(row.ci_high)}]'

def verdicts_by_scale(ledger=None, claims=None) -> pd.DataFrame:
    """Claims counted by the scale of the number shown for them (`ledger_table`) and its verdict; a claim with
    no number counts under 'no number'."""
    table = ledger_table(ledger, claims)
    has = table.ours != ''
    kind = table.scale.where(has, '').map(lambda x: paper_kind(x) if x else 'no number')
    counts = pd.crosstab(kind, table.verdict).reindex(index=[*PAPER_SCALES, 'no number'], columns=list(VERDICTS),
                                                      fill_value=0)
    counts = counts.loc[counts.sum(axis=1) > 0, counts.sum(axis=0) > 0]
    counts['claims'] = counts.sum(axis=1)
    return counts.rename_axis(index='scale', columns=None)



# %%
from fracsgd.ledger.claims import read_claims
table, claims = ledger_table(), read_claims()
assert list(table.claim) == list(claims.claim_id) and set(table.verdict) <= set(VERDICTS)
assert (table.ours[table.verdict == 'not run yet'] == '').all()
by_scale = verdicts_by_scale()
assert by_scale.claims.sum() == len(claims)
by_scale

# %%
#| hide
import nbdev; nbdev.nbdev_export()
