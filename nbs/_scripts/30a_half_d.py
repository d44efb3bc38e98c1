# %% [markdown]
# # λ ≤ d/2 on every LLC we report
#
# > The bound of appendix D.3 checked on every LLC the ledger reports: parameter counts of the models behind each result, and the largest λ/(d/2) of each as a ledger row.

# %%
#| default_exp ledger.bound

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import json, math
from pathlib import Path

import pandas as pd

from fracsgd.core import read_table
from fracsgd.ledger.provenance import study_presets

# %%
from fracsgd.ledger.claims import read_claims, read_ledger
from fracsgd.ledger.provenance import COMPACT, LEDGER_DIR
from fracsgd.ledger.scale import paper_kind

# %% [markdown]
#
# The proof of Cor. 3.3 (appendix D.3, before eq. 61) uses that the learning coefficient of a model with $d$
# parameters is at most $d/2$, the value of a regular model. It holds for every true λ, so an estimate above
# $d/2$ can only be an estimator's failure: this check tests our estimates, not the paper. For every compact
# result with LLC rows (claims whose `llc` column is `llc`), `half_d_row` divides each row's value and interval
# (already widened by the LLC readings at the final weights, where a result measures them) by $d/2$, with $d$ the
# parameter count of the model that row is about, and files the largest as a row of claim `appD-llc-le-half-d`.
#
# $d$ counts every trainable parameter of our model: for the MNIST nets the batch-norm scales and shifts and the
# biases too (table 7's architecture names count the weights only), for a stand-in its own model (the TinyStories
# stand-in has a 2,048-token vocabulary, so 660,608 parameters, not TinyStories-1M's). `parameter_counts` reads
# them from the result's per-model table, or, for the MNIST studies of one architecture, builds the net.

# %%
#| export
HALF_D = 'λ/(d/2), largest over the LLC rows of a result'    # the quantity of claim appD-llc-le-half-d

def mlp_parameters(hidden) -> int:
    "Parameters of the MNIST net 784-`hidden`-10 with batch norm, as the MNIST studies build it."
    from fracsgd.nets.models import make_mlp
    return sum(p.numel() for p in make_mlp([784, *hidden, 10], batch_norm=True).parameters())

def parameter_counts(compact) -> dict[str, int]:
    """{model label: number of parameters} of the models behind a compact result's rows ('' when the study has one
    architecture), from its per-model table, from the `parameters` its provenance records (a result a chapter made), or,
    for the MNIST MLPs, from the architecture; {} when unknown."""
    compact = Path(compact)
    for name, label, count in (('per_arch.csv', 'run', 'params'), ('per_run.csv', 'model_name', 'n_params'),
                               ('per_run.csv', 'arch', 'n_params')):
        if (compact / name).exists():
            t = read_table(compact / name)
            if label in t and count in t:
                return {str(k): int(v) for k, v in zip(t[label], t[count])}
    if (compact / 'per_architecture.csv').exists():          # MNIST architectures: its `params` counts weights only
        t = read_table(compact / 'per_architecture.csv')
        return {a: mlp_parameters([int(h) for h in a.split('-')[1:]]) for a in t.architecture}
    prov = json.loads((compact / 'provenance.json').read_text())
    if prov.get('parameters'):
        return {str(k): int(v) for k, v in prov['parameters'].items()}
    try:
        hidden = getattr(study_presets(prov['study']).get(prov.get('preset')), 'hidden', None)
    except KeyError:                                         # not a study of the runner
        hidden = None
    return {'': mlp_parameters(hidden)} if prov['study'].startswith('mnist-') and hidden else {}

def model_of(quantity: str, counts: dict) -> str | None:
    "The label of `counts` that a summary quantity is about: the longest one it contains ('' for one model)."
    hits = [k for k in counts if k and k in quantity]
    return max(hits, key=len) if hits else ('' if '' in counts else None)

def half_d_table(rows: pd.DataFrame, compact, claims: pd.DataFrame) -> pd.DataFrame:
    """λ/(d/2) of each LLC row among `rows` (ledger rows of the compact result `compact`), with d and the model;
    a row whose model has no known parameter count (a compact result without its per-model table) has NaN."""
    llc = rows[rows.claim_id.map(claims.llc).eq('llc') & rows.value.notna()]
    counts, out = parameter_counts(compact), []
    for r in llc.itertuples():
        m = model_of(claims.loc[r.claim_id, 'quantity'], counts)
        half = counts[m] / 2 if m is not None else math.nan
        out.append(dict(claim_id=r.claim_id, config=r.config, model=m, d=2 * half, llc=r.value, llc_low=r.ci_low,
                        llc_high=r.ci_high, ratio=r.value / half, ratio_low=r.ci_low / half, ratio_high=r.ci_high / half))
    return pd.DataFrame(out, columns=['claim_id', 'config', 'model', 'd', 'llc', 'llc_low', 'llc_high', 'ratio',
                                      'ratio_low', 'ratio_high'])

def half_d_row(rows: pd.DataFrame, compact, claims: pd.DataFrame):
    """(claim id, value, ci_low, ci_high, note) of the App. D.3 check on the LLC rows of one result: the largest
    λ/(d/2), with the largest ends as its interval; None when the result has no LLC row, when the parameter count
    of one of its models is unknown (the ledger checks' page asserts that no committed result is left out), or when
    no claim asks."""
    target = claims.index[claims.quantity == HALF_D]
    t = half_d_table(rows, compact, claims) if len(target) == 1 else pd.DataFrame()
    if t.empty or t.d.isna().any():
        return None
    t = t.assign(d=t.d.astype(int))
    top, over = t.loc[t.ratio_high.idxmax()], t[t.ratio_high >= 1]
    note = (f'{len(t)} LLC row(s); largest upper end {top.claim_id} (d = {top.d:,}): λ ≤ {top.llc_high:.4g} '
            f'against d/2 = {top.d / 2:,.0f}; ' +
            ('every upper end below d/2' if over.empty else 'at or above d/2: ' + ', '.join(over.claim_id)))
    return target[0], float(t.ratio.max()), float(t.ratio_low.max()), float(t.ratio_high.max()), note


# %% [markdown]
# The parameter counts against closed forms: the MNIST net of table 8, 784-128-64-32-10, has 110,912 weights
# (the paper's count), 234 biases and 2 × 224 batch-norm parameters; table 5's smallest conv net is its 1,184.

# %%
assert mlp_parameters((128, 64, 32)) == 784 * 128 + 128 * 64 + 64 * 32 + 32 * 10 + (128 + 64 + 32 + 10) + 2 * (128 + 64 + 32)
assert parameter_counts(COMPACT / 'mnist-seeds/full') == {'': 111594}
assert parameter_counts(COMPACT / 'cifar10/quick-stand-in')['conv-32'] == 1184
assert model_of('conv-32-64: final LLC', parameter_counts(COMPACT / 'cifar10/quick-stand-in')) == 'conv-32-64'
assert model_of('final LLC, 784-128-64-128', parameter_counts(COMPACT / 'mnist-architectures/quick')) == '784-128-64-128'

# %% [markdown]
# Every LLC row of the committed ledger against its bound (the ledger's rows of `appD-llc-le-half-d` hold the
# largest of each result):

# %%
from fracsgd.ledger.claims import LEDGER
claims, ledger = read_claims(), read_ledger()
half_d = pd.concat([half_d_table(g, LEDGER_DIR / src, claims) for src, g in ledger.groupby('source')], ignore_index=True)
half_d['scale'] = [paper_kind(ledger.set_index(['claim_id', 'config']).scale[(r.claim_id, r.config)])
                   for r in half_d.itertuples()]
assert len(half_d) == ledger.claim_id.map(claims.llc).eq('llc').mul(ledger.value.notna()).sum()
assert half_d.d.notna().all() and (half_d.ratio_high < 1).all() and half_d.ratio_high.max() < 0.01   # none near d/2
d3 = ledger[ledger.claim_id == 'appD-llc-le-half-d'].set_index('source')
assert len(d3) == half_d.merge(ledger[['claim_id', 'config', 'source']]).source.nunique()
half_d.sort_values('ratio_high', ascending=False).round(6)

# %% [markdown]
# No LLC we report comes near its bound: the largest upper end is below 1% of $d/2$. The bound is far from binding
# for networks of 10³–10⁷ parameters whose LLCs are 10⁻²–10²; the estimates that fail a bound fail the other
# end, λ ≥ 0 (the readings at the MNIST end points reach −100, [ledger](ledger.html)), which this check does not
# test.

# %%
#| hide
import nbdev; nbdev.nbdev_export()
