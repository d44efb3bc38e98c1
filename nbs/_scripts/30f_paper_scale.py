# %% [markdown]
# # Scale against the paper
#
# > The ledger's `scale` says how a run compares with what the paper states: the paper's protocol, longer than the paper, reduced (and what is smaller), a stand-in, or assumed where the paper states no protocol.

# %%
#| default_exp ledger.scale

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import re
from pathlib import Path

import pandas as pd

from fracsgd.experiment.protocol import LENGTH_FIELDS, scale_kind
from fracsgd.ledger.provenance import LEDGER_DIR, result_scale

# %% [markdown]
# The runner records how a configuration differs from the study's `full` preset
# ([protocol](protocol.html)): `paper scale`, `extended`, `reduced`, `stand-in` or `assumed`, with the fields that
# differ. That compares a run with our preset, not with the paper, and it read wrongly in two ways: a run with 10
# times fewer nets but 5 times more epochs was "reduced: n_models 50 of 500; epochs 1,000 of 200", as if its epochs
# were smaller; and a `full` run was "paper scale" even where it departs from a step of the paper's protocol that
# the preset cannot hold. App. G.4 trains 500 moons nets for 200 epochs and discards the runs that did not converge;
# none of our 500 converges at 200 epochs, so all 500 are analysed unconverged.
#
# The ledger therefore writes its own `scale`, from the runner's record and from what the paper states:
#
# | kind | when | the text says |
# |---|---|---|
# | `paper protocol` | the runner's `paper scale`, and no departure below | nothing more |
# | `longer than the paper` | only longer than the paper (a length field: epochs, steps) | what is longer, e.g. `epochs 1,000 of 200` |
# | `reduced` | anything smaller than the paper, or a departure | what is smaller first; then `longer than the paper: ...` and `also differs: ...` where those exist |
# | `stand-in` | something stood in for the paper's data or weights | what stood in, then the same three parts |
# | `assumed` | the paper states no protocol to follow | the runner's words |
#
# A departure is a step of the paper's protocol that a result's own summary shows was not met. They are listed in
# `nbs/ledger/departures.csv`, one row per study and step: the summary row that counts the units meeting the step,
# the row that counts the units analysed, and where the paper states the step. A result departs when the first is
# below the second; its `scale` then reads `reduced: converged nets 0 of 500 analysed (App. G.4 ...)`. Only a result at
# the paper's protocol, or one longer than it that a claim names (its `configs`), can decide a claim; every other
# row reads "not run at paper scale" (the verdict keeps its old name).

# %%
#| export
PAPER_SCALES = ('paper protocol', 'longer than the paper', 'assumed', 'reduced', 'stand-in')
DEPARTURES = LEDGER_DIR / 'departures.csv'
DEPARTURE_COLUMNS = ('study', 'what', 'quantity', 'of', 'paper')
SMALLER, LONGER, OTHER = 'reduced: ', 'longer than the paper: ', 'also differs: '

def paper_kind(scale: str) -> str:
    "The kind of a ledger `scale` text: one of `PAPER_SCALES`."
    kind = next((k for k in PAPER_SCALES if str(scale) == k or str(scale).startswith(k + ':')), None)
    if kind is None:
        raise ValueError(f'scale {scale!r} does not start with one of {PAPER_SCALES}')
    return kind

def read_departures(path=None) -> pd.DataFrame:
    "The departures table (default `nbs/ledger/departures.csv`): study, what, quantity, of, paper."
    path = Path(path or DEPARTURES)
    t = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in DEPARTURE_COLUMNS if c not in t]
    if missing or (t[list(DEPARTURE_COLUMNS)] == '').any().any():
        raise ValueError(f'{path}: every row needs {DEPARTURE_COLUMNS} (missing columns: {missing})')
    return t

def departures(prov: dict, summary: pd.DataFrame, table: pd.DataFrame | None = None) -> list[str]:
    """The steps of the paper's protocol that the result (its `provenance.json` and its summary, indexed by quantity)
    did not meet, one text for each row of the departures table of its study whose count is below its total, e.g.
    'converged nets 0 of 500 analysed (App. G.4 discards the training runs that did not converge)'."""
    table = read_departures() if table is None else table
    out = []
    for d in table[table.study == prov['study']].itertuples():
        if d.quantity not in summary.index or d.of not in summary.index:
            raise ValueError(f"departures.csv: the {prov['study']} result {prov['config']} has no summary row "
                             f"{d.quantity if d.quantity not in summary.index else d.of!r}")
        met, total = (float(summary.value[q]) for q in (d.quantity, d.of))
        if met < total:
            out.append(f'{d.what} {met:,.0f} of {total:,.0f} analysed ({d.paper})')
    return out

_NUMBER = re.compile(r'^(?P<field>[\w.\- ]+?):? (?P<v>-?[\d,]+(?:\.\d+)?) of (?P<w>-?[\d,]+(?:\.\d+)?)$')

def classify(item: str) -> str:
    """'smaller', 'longer' or 'other' for one difference the runner wrote ('epochs 1,000 of 200', 'n_models 100 of
    500', "k_rule 'stable' (full: 'silhouette')"): a length field above the paper's is longer, any number below
    the paper's is smaller, everything else (a larger count, a cadence `..._every`, another choice, words) is other."""
    m = _NUMBER.match(item.strip())
    if m is None or m.group('field').endswith('_every'):
        return 'other'
    v, w = (float(m.group(k).replace(',', '')) for k in ('v', 'w'))
    if m.group('field').split('.')[-1] in LENGTH_FIELDS and v > w:
        return 'longer'
    return 'smaller' if v < w else 'other'

def against_paper(runner_scale: str, departed: list[str] | tuple = ()) -> str:
    """The ledger's `scale` from the runner's record `runner_scale` and the steps of the paper's protocol the result
    did not meet (`departures`). A record that already reads `paper protocol` (a result made outside the runner from
    the paper's own numbers) is kept."""
    what, diffs = '', []
    if runner_scale.startswith('paper protocol'):
        kind = 'paper scale'
    else:
        kind = scale_kind(runner_scale)
        rest = runner_scale.split(':', 1)[1].strip() if ':' in runner_scale else ''
        if kind == 'assumed':
            return runner_scale
        if kind == 'stand-in':
            what, sep, tail = rest.rpartition('; reduced: ')
            what, diffs = (what, tail.split('; ')) if sep else (rest, [])
        elif kind in ('reduced', 'extended'):
            diffs = rest.split('; ')
    parts = {k: [d for d in diffs if d and classify(d) == k] for k in ('smaller', 'longer', 'other')}
    parts['smaller'] += list(departed)
    lead = {'smaller': SMALLER if kind == 'stand-in' else '', 'longer': LONGER,
            'other': OTHER if parts['smaller'] or parts['longer'] else 'differs: '}
    said = '; '.join(lead[k] + '; '.join(parts[k]) for k in lead if parts[k])
    if kind == 'stand-in':
        return f'stand-in: {what}' + (f'; {said}' if said else '')
    if parts['smaller'] or parts['other']:
        return 'reduced: ' + said
    if parts['longer']:
        return said
    return runner_scale if runner_scale.startswith('paper protocol') else 'paper protocol'

def paper_scale(prov: dict, summary: pd.DataFrame, table: pd.DataFrame | None = None) -> str:
    "The ledger's `scale` of a compact result: its recorded scale, against the paper, with its departures."
    return against_paper(result_scale(prov), departures(prov, summary, table))


# %% [markdown]
# On the records the runner wrote for the committed results: the moons run trained 1,000 epochs is longer than the
# paper and nothing else; the runs with fewer nets and more epochs are reduced in their nets and longer in their
# epochs; the stand-ins keep what stood in; and a free-text difference (another choice of rule) is neither smaller
# nor longer, so it keeps a run off the paper's protocol under `also differs`.

# %%
assert against_paper('paper scale') == 'paper protocol' and paper_kind('paper protocol') == 'paper protocol'
assert against_paper('extended: epochs 1,000 of 200') == 'longer than the paper: epochs 1,000 of 200'
assert against_paper('reduced: n_models 50 of 500; epochs 1,000 of 200; returns True (full: False)') == (
    'reduced: n_models 50 of 500; longer than the paper: epochs 1,000 of 200; also differs: returns True (full: False)')
assert against_paper('reduced: n_models 100 of 500') == 'reduced: n_models 100 of 500'
assert against_paper("reduced: epochs 1,000 of 200; crossover 'auto' (full: 'slope')") == (
    "reduced: longer than the paper: epochs 1,000 of 200; also differs: crossover 'auto' (full: 'slope')")
assert against_paper("reduced: crossover 'auto' (full: 'slope')") == "reduced: differs: crossover 'auto' (full: 'slope')"
assert against_paper('paper scale', ['converged nets 0 of 500 analysed (App. G.4)']) == (
    'reduced: converged nets 0 of 500 analysed (App. G.4)')
assert against_paper('stand-in: MNIST digits; reduced: epochs 250 of 50; n_images 2,000 of 10,000') == (
    'stand-in: MNIST digits; reduced: n_images 2,000 of 10,000; longer than the paper: epochs 250 of 50')
assert against_paper('stand-in: DLNs for the paper\'s models') == "stand-in: DLNs for the paper's models"
assert against_paper('assumed: the paper states no sweep') == 'assumed: the paper states no sweep'
assert against_paper("paper protocol: the paper's own printed numbers") == "paper protocol: the paper's own printed numbers"
assert [classify(x) for x in ('run.steps 300 of 1,000', 'llc_every 40 of 100', 'seeds: 1 of 3', 'data_seed 1 of 0',
                              'table-7 nets 3 of 17')] == ['smaller', 'other', 'smaller', 'other', 'smaller']

# %% [markdown]
# The departures the paper's text makes checkable on our summaries:

# %%
read_departures()

# %% [markdown]
# Against the committed moons posterior results: the `full` run (500 nets, 200 epochs: the paper's protocol as the
# runner sees it) departs, since none of its nets passes the convergence test; the same protocol trained 1,000
# epochs converges 464 of 500 and analyses those, so it is longer than the paper and does not depart.

# %%
import json
from fracsgd.core import read_table
from fracsgd.ledger.provenance import COMPACT

def _scale_of(folder):
    prov = json.loads((COMPACT / folder / 'provenance.json').read_text())
    return prov['scale'], paper_scale(prov, read_table(COMPACT / folder / 'summary.csv').set_index('quantity'))

scales = pd.DataFrame([(f, *_scale_of(f)) for f in sorted(p.parent.relative_to(COMPACT).as_posix()
                                                            for p in COMPACT.glob('*/*/provenance.json'))],
                      columns=['result', 'runner', 'against the paper'])
at = scales.set_index('result')['against the paper']
assert at['moons-posterior/full'] == ('reduced: converged nets 0 of 500 analysed (App. G.4 discards the training runs '
                                      'that did not converge)')
assert at['moons-posterior/custom-868ac1f091f488d1'] == 'longer than the paper: epochs 1,000 of 200'
assert at['moons-diffusion/custom-c9b1d13965315c2d'] == 'longer than the paper: epochs 1,000 of 200'
assert at['moons-diffusion/custom-86e6a59a29d0542a'].startswith('reduced: n_models 50 of 500; longer than the paper: epochs')
assert (at[['mnist-seeds/full', 'mnist-architectures/full', 'moons-diffusion/full']] == 'paper protocol').all()
assert not at.str.match(r'reduced: [^;]*epochs 1,000 of 200').any()          # a longer run is never "reduced" by it
pd.set_option('display.max_colwidth', None)
scales

# %%
#| hide
import nbdev
nbdev.nbdev_export()
