# %% [markdown]
# # One verdict per question
#
# > Where several claims of the ledger answer one question of the paper, one stated estimator gives the verdict and the other rows are its support; two decisive rows on one question may not disagree.

# %%
#| default_exp ledger.questions

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import re
from pathlib import Path

import pandas as pd

from fracsgd.ledger.claims import DECISIVE, VERDICTS, read_claims, read_ledger
from fracsgd.ledger.provenance import LEDGER_DIR
from fracsgd.ledger.table import ledger_table, ours_text
from fracsgd.ledger.scale import PAPER_SCALES, paper_kind

# %% [markdown]
# The [claims ledger](ledger.html) has one row per claim and configuration, and some questions of the paper are
# asked by more than one claim: fig. 1's late phase by `fig1-late` (the paper's 800 steps), `fig1-late-long` (the
# same protocol trained 4,000 steps, $t_c$ by the model comparison) and `fig1-late-1000ep` (the moons posterior
# study's 1,000-epoch run); table 8's $d_s \le \lambda$ row is fig. 2a's measurement again. Such claims used to
# carry verdicts of their own, and two of them once said opposite things from one protocol (0.433 over 1.30
# decades, "reproduced"; 0.542 over half a decade, "not reproduced").
#
# `nbs/ledger/questions.csv` names these questions, written by hand from the paper like `claims.csv`: an id, where
# the paper asks it, the question in a sentence, the claims that answer it, and the **primary** claim, whose row
# gives the question's verdict, with its estimator stated in words. The other rows are **support**: shown beside
# the verdict, never instead of it. A claim that no question lists is a question of its own. Whatever a question's
# primary, its decisive rows must agree: `disagreements` lists every question on which one decisive row says
# reproduced and another not reproduced, the ledger page asserts that there is none, and so does a test
# (`tests/test_ledger_questions.py`).

# %%
#| export
QUESTIONS = LEDGER_DIR / 'questions.csv'
QUESTION_COLUMNS = ('question', 'location', 'asks', 'claims', 'primary', 'estimator')

def read_questions(path=None, claims: pd.DataFrame | None = None) -> pd.DataFrame:
    """The questions table (default `nbs/ledger/questions.csv`), checked against the claims: unique ids that are not
    claim ids, at least two known claims each, no claim in two questions, the primary among the question's claims."""
    path = Path(path or QUESTIONS)
    q = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in QUESTION_COLUMNS if c not in q]
    if missing:
        raise ValueError(f'{path}: missing column(s) {missing}')
    claims = read_claims() if claims is None else claims
    twice = q.question[q.question.duplicated()].tolist()
    if twice or (q.question == '').any():
        raise ValueError(f'{path}: question ids must be unique and non-empty; repeated: {twice}')
    clash = sorted(set(q.question) & set(claims.claim_id))
    if clash:
        raise ValueError(f'{path}: question id(s) {clash} are claim ids: a claim not in a question is its own question')
    listed = q.claims.str.split()
    for r, ids in zip(q.itertuples(), listed):
        if unknown := sorted(set(ids) - set(claims.claim_id)):
            raise ValueError(f'question {r.question}: unknown claim(s) {unknown}')
        if len(set(ids)) < 2:
            raise ValueError(f'question {r.question}: a question of several claims needs at least two')
        if r.primary not in ids:
            raise ValueError(f'question {r.question}: its primary {r.primary!r} is not one of its claims {ids}')
        if not r.estimator.strip():
            raise ValueError(f'question {r.question}: the estimator of its primary claim must be stated')
    every = listed.explode()
    if (again := sorted(set(every[every.duplicated()]))):
        raise ValueError(f'{path}: claim(s) {again} answer more than one question')
    return q.set_index('question', drop=False)

def question_of(claims: pd.DataFrame | None = None, questions: pd.DataFrame | None = None) -> pd.Series:
    "{claim id: its question}: the question that lists the claim, else the claim itself; in the claims' order."
    claims = read_claims() if claims is None else claims
    questions = read_questions(claims=claims) if questions is None else questions
    listed = {c: q.question for q in questions.itertuples() for c in q.claims.split()}
    return pd.Series({c: listed.get(c, c) for c in claims.claim_id}, name='question').rename_axis('claim_id')


# %% [markdown]
# The questions of several claims, and every claim that answers one:

# %%
claims = read_claims()
questions = read_questions()
assert set(questions.question) == {'fig1-early-phase', 'fig1-late-phase', 'lemma34-mnist-seeds', 'lemma34-table4', 'fig3-xi-choice',
                                   'tab2-kl-bayes-sgd', 'tab2-js-bayes-sgd', 'tab2-wasserstein-bayes-sgd', 'tab2-kl-out-of-sample-control'}
assert questions.primary['fig1-late-phase'] == 'fig1-late-long'
of = question_of()
assert len(of) == len(claims) and of['fig1-late-1000ep'] == 'fig1-late-phase' and of['tab2-kl-converged'] == 'tab2-kl-bayes-sgd' and of['fig18-r2'] == 'fig18-r2'
n_questions = of.nunique()
questions[['location', 'asks', 'claims', 'primary']]


# %% [markdown]
# ## No two decisive rows on one question disagree
#
# Every ledger row belongs to the question of its claim, and a claim measured by several results (the quick,
# full and longer presets of one study) has several rows on its own question too. `disagreements` groups the rows
# by question and reports each question whose decisive rows (verdict reproduced or not reproduced) hold both.

# %%
#| export
def disagreements(ledger=None, claims=None, questions=None) -> list[str]:
    "One line per question whose decisive ledger rows disagree (one reproduced, another not reproduced); [] when none."
    claims_table = read_claims(claims)
    q = read_questions(questions, claims_table)
    rows = read_ledger(ledger, claims_table)
    rows = rows[rows.verdict.isin(DECISIVE)].assign(question=lambda r: r.claim_id.map(question_of(claims_table, q)))
    out = []
    for question, g in rows.groupby('question', sort=False):
        if g.verdict.nunique() > 1:
            said = '; '.join(f'{r.verdict} by {r.claim_id} ({r.source})' for r in g.itertuples())
            out.append(f'question {question}: decisive rows disagree: {said}')
    return out


# %% [markdown]
# The committed ledger has none. The ledger as it stood before the [decade rule](decade_rule.html), with fig. 1's
# two long rows back at the verdicts they had then, has one, and `disagreements` names it:

# %%
import tempfile
assert disagreements() == [], disagreements()
old = read_ledger()
for claim_id, was in (('fig1-late-long', 'reproduced'), ('fig1-late-1000ep', 'not reproduced')):
    old.loc[old.claim_id == claim_id, 'verdict'] = was
before = Path(tempfile.mkdtemp()) / 'ledger.csv'
old.to_csv(before, index=False)
found = disagreements(before)
assert len(found) == 1 and found[0].startswith('question fig1-late-phase: decisive rows disagree'), found
found


# %% [markdown]
# ## One row per question
#
# `question_table` gives the page's view: for each question its verdict, which is the verdict of the row the
# [ledger table](ledger_table.html) shows for the primary claim (the one closest to the paper's protocol), the
# estimator, our number and its scale, and every other row of the question's claims as support, each with its
# verdict and what keeps it from deciding. `question_support` lists those rows one per line.

# %%
#| export
def _why(note: str) -> str:
    "What keeps a row from deciding, from its note: the reasons inside 'NOT DECISIVE (...)' and the like; '' if none."
    m = re.match(r'^(?:NOT DECISIVE|NOT AT PAPER SCALE|STAND-IN) \((.*)\); the rule on these numbers: ', note or '')
    if not m:
        return ''
    parts = [p.removeprefix('also ') for p in m.group(1).split('; ')]
    return '; '.join(p if p.startswith('DECADE RULE') else p.split(':')[0] for p in parts)

def _claims_of(question: str, q: pd.DataFrame) -> list[str]:
    "The claims that answer `question`, its primary first (a claim that is its own question: itself)."
    if question not in q.index:
        return [question]
    return [q.primary[question]] + [c for c in q.claims[question].split() if c != q.primary[question]]

def _support_rows(rows: pd.DataFrame, ids: list[str]) -> pd.DataFrame:
    "The ledger `rows` of the claims `ids` that carry a number, in the order of `ids`, as the page lists them."
    rows = rows[rows.claim_id.isin(ids) & rows.value.notna()]
    rows = rows.assign(order=rows.claim_id.map(ids.index)).sort_values(['order', 'config', 'source'], kind='stable')
    label = lambda r: f'{r.config} {r.config_hash[:8]}' if r.config.startswith('custom') else r.config
    return pd.DataFrame([dict(claim=r.claim_id, config=label(r), configuration=f'{r.config} ({r.config_hash})',
                              scale=r.scale.split(':')[0], ours=ours_text(r), rule=r.rule, verdict=r.verdict,
                              why=_why(r.note)) for r in rows.itertuples()],
                        columns=['claim', 'config', 'configuration', 'scale', 'ours', 'rule', 'verdict', 'why'])

def question_support(question: str, ledger=None, claims=None, questions=None) -> pd.DataFrame:
    """Every ledger row of `question`'s claims that carries a number, the primary claim's first: claim, config,
    scale, ours, the rule's verdict, the verdict and what keeps the row from deciding."""
    claims_table = read_claims(claims)
    ids = _claims_of(question, read_questions(questions, claims_table))
    return _support_rows(read_ledger(ledger, claims_table), ids).drop(columns='configuration')

def question_table(ledger=None, claims=None, questions=None, every: bool = False) -> pd.DataFrame:
    """One row per question of several claims (with `every`, also one per claim that is its own question): its
    verdict, from the row `ledger_table` shows for the primary claim, the estimator, and the other rows as support."""
    claims_table = read_claims(claims)
    q = read_questions(questions, claims_table)
    rows, shown = read_ledger(ledger, claims_table), ledger_table(ledger, claims).set_index('claim')
    of = question_of(claims_table, q)
    out = []
    for question in dict.fromkeys(of if every else [x for x in of if x in q.index]):
        several, ids = question in q.index, _claims_of(question, q)
        p = shown.loc[ids[0]]
        support = _support_rows(rows, ids)
        support = support[~((support.claim == ids[0]) & (support.configuration == p.configuration))]
        out.append(dict(question=question, location=q.location[question] if several else p.location,
                        asks=q.asks[question] if several else p.what, primary=ids[0],
                        estimator=q.estimator[question] if several else '', paper=p.paper, ours=p.ours,
                        scale=p.scale.split(':')[0], verdict=p.verdict, why=_why(p.note),
                        support='; '.join(f'{s.claim} ({s.config}): {s.ours}, {s.verdict}' for s in support.itertuples())))
    return pd.DataFrame(out, columns=['question', 'location', 'asks', 'primary', 'estimator', 'paper', 'ours', 'scale',
                                      'verdict', 'why', 'support'])


# %% [markdown]
# The nine questions of several claims. Fig. 1's early phase is reproduced by its primary estimator (the early
# slope before the model comparison's $t_c$, 0.932), and the paper-length rows that place $t_c$ by the slope
# itself support it without deciding. Its late phase is **inconclusive**: the one estimator read over a decade
# after $t_c$ gives 0.433 [0.431, 0.435] over 1.30 decades, a mean of local slopes that fall to 0.33 and climb to
# 0.62 over the last decade, so the decade rule holds it back, and every other row is read over less than a decade.
# Table 8's bound row is fig. 2a's measurement, and agrees with it. Table 4's bound is answered by the paper's own
# printed numbers (TinyStories-1M with Adam: $d_s/\lambda$ = 36.6/32.05 = 1.14), since our only run of it is a stand-in.
# Fig. 3's choice of ξ and table 2's three distances are each answered by the moons nets trained 1,000 epochs (the
# paper's protocol trained longer, since no 200-epoch net converges), and each has a twin measured against a global
# posterior whose chains agree (the [replica-exchange chapter](replica_exchange.html)), with a prior and $n$ of our
# choosing: support, never the verdict. The two disagree by an order of magnitude (KL 0.54 against 0.047), and
# neither decides: every LLC estimate behind them is flagged. So does the out-of-sample control and its twin.

# %%
qt = question_table()
assert len(qt) == 9 and qt.set_index('question').verdict.to_dict() == {
    'fig1-early-phase': 'reproduced', 'fig1-late-phase': 'inconclusive', 'lemma34-mnist-seeds': 'inconclusive',
    'lemma34-table4': 'not reproduced', 'fig3-xi-choice': 'inconclusive', 'tab2-kl-bayes-sgd': 'inconclusive',
    'tab2-js-bayes-sgd': 'inconclusive', 'tab2-wasserstein-bayes-sgd': 'inconclusive',
    'tab2-kl-out-of-sample-control': 'not run at paper scale'}
late = qt.set_index('question').loc['fig1-late-phase']
assert late.ours.startswith('0.4329 [0.4306, 0.4353]') and late.why.startswith('DECADE RULE: over the last decade')
assert 'fig1-late-1000ep (custom 868ac1f0): 0.5421 [0.5396, 0.5446], inconclusive' in late.support
assert 'fig1-late (full): 0.3974 [0.394, 0.4005], inconclusive' in late.support
qt[['question', 'asks', 'primary', 'paper', 'ours', 'scale', 'verdict', 'why', 'support']]

# %% [markdown]
# Fig. 1's late phase, row by row (the primary first):

# %%
support = question_support('fig1-late-phase')
assert support.claim.iloc[0] == 'fig1-late-long' and (support.verdict != 'reproduced').all()
assert (support.verdict != 'not reproduced').all() and support.why.str.contains('DECADE RULE').all()
support

# %% [markdown]
# Every question, once: the claims that are questions of their own keep their single-claim verdicts.

# %%
every = question_table(every=True)
assert len(every) == n_questions and every.question.is_unique
every.groupby('verdict').size()


# %% [markdown]
# ## Totals count questions
#
# A claim that repeats another's measurement must not count twice: table 8's bound row is fig. 2a's 50 nets and
# number again, and the three fig.-1 late rows are one protocol. So the totals the ledger page shows count
# questions, each once, under the scale of the number shown for its primary claim ('no number' without one) and
# the question's verdict; `question_verdicts` gives the rows they are counted from, with the primary claim's study.

# %%
#| export
def question_verdicts(ledger=None, claims=None, questions=None) -> pd.DataFrame:
    "One row per question (every claim no question lists is one): its primary claim, study, scale kind and verdict."
    claims_table = read_claims(claims)
    every = question_table(ledger, claims, questions, every=True)
    shown = ledger_table(ledger, claims).set_index('claim')
    kind = [paper_kind(shown.scale[p]) if shown.ours[p] != '' else 'no number' for p in every.primary]
    return every[['question', 'primary']].assign(study=every.primary.map(claims_table.study).to_numpy(), scale=kind,
                                                 verdict=every.verdict.to_numpy())

def verdicts_by_question(ledger=None, claims=None, questions=None) -> pd.DataFrame:
    "Questions counted once each, by the scale of the number shown for the primary claim and the verdict."
    q = question_verdicts(ledger, claims, questions)
    counts = pd.crosstab(q.scale, q.verdict).reindex(index=[*PAPER_SCALES, 'no number'], columns=list(VERDICTS), fill_value=0)
    counts = counts.loc[counts.sum(axis=1) > 0, counts.sum(axis=0) > 0]
    counts['questions'] = counts.sum(axis=1)
    return counts.rename_axis(index='scale', columns=None)


# %%
from fracsgd.ledger.table import verdicts_by_scale
by_claim, by_question = verdicts_by_scale(), verdicts_by_question()
assert by_question.questions.sum() == n_questions == len(claims) - 10    # 2 + 3 + 2 + 2 + 5 × 2 claims answer 9 questions
assert by_question.loc['paper protocol', 'not reproduced'] == by_claim.loc['paper protocol', 'not reproduced']  # tab8 and fig. 2a: inconclusive
assert by_question.loc['longer than the paper', 'reproduced'] == 2      # fig. 1's early phase, once; fig. 4b's C1
assert by_question.loc[~by_question.index.isin(['paper protocol', 'longer than the paper']), list(DECISIVE)].sum().sum() == 0
by_question

# %%
#| hide
import nbdev; nbdev.nbdev_export()
