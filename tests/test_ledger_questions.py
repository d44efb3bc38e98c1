"""One verdict per question: the questions table is well formed, no two decisive ledger rows on one question of the
paper disagree, and the decade rule keeps late-phase exponents read over less than a decade from deciding. Reads only
the committed files under nbs/ledger (fast, no network)."""
import numpy as np
import pandas as pd
import pytest

from fracsgd.core import write_table
from fracsgd.ledger.claims import DECISIVE, read_claims, read_ledger
from fracsgd.ledger.decades import CURVE, TC, decade_rule, window_decades
from fracsgd.ledger.questions import (QUESTIONS, disagreements, question_of, question_support, question_table,
                                      read_questions)


def test_no_two_decisive_rows_on_one_question_disagree():
    assert disagreements() == []


def test_disagreeing_decisive_rows_are_found(tmp_path):
    led = read_ledger()
    # two claims of one question, at the verdicts they had before the decade rule
    led.loc[led.claim_id == 'fig1-late-long', 'verdict'] = 'reproduced'
    led.loc[led.claim_id == 'fig1-late-1000ep', 'verdict'] = 'not reproduced'
    led.to_csv(tmp_path / 'ledger.csv', index=False)
    found = disagreements(tmp_path / 'ledger.csv')
    assert len(found) == 1 and found[0].startswith('question fig1-late-phase: decisive rows disagree')
    assert 'fig1-late-long' in found[0] and 'fig1-late-1000ep' in found[0]
    # rows of one claim from two results are rows on one question too
    led = read_ledger()
    extra = led[(led.claim_id == 'fig18-r2') & (led.config == 'full')].copy()
    extra = extra.assign(source='compact/mnist-seeds/another', verdict='not reproduced', rule='not reproduced',
                         value=0.5, ci_low=0.4, ci_high=0.6)
    pd.concat([led, extra]).to_csv(tmp_path / 'twice.csv', index=False)
    assert [f.split(':')[0] for f in disagreements(tmp_path / 'twice.csv')] == ['question fig18-r2']


def test_each_question_has_one_verdict_from_its_primary():
    qt = question_table().set_index('question')
    assert qt.verdict.to_dict() == {'fig1-early-phase': 'reproduced', 'fig1-late-phase': 'inconclusive',
                                    'lemma34-mnist-seeds': 'inconclusive', 'lemma34-table4': 'not reproduced',
                                    'fig3-xi-choice': 'inconclusive', 'tab2-kl-bayes-sgd': 'inconclusive',
                                    'tab2-js-bayes-sgd': 'inconclusive', 'tab2-wasserstein-bayes-sgd': 'inconclusive',
                                    'tab2-kl-out-of-sample-control': 'not run at paper scale'}
    # the moons run trained 1,000 epochs answers table 2; the run against a converged posterior supports it
    assert qt.primary['tab2-kl-bayes-sgd'] == 'tab2-kl' and 'tab2-kl-converged' in qt.support['tab2-kl-bayes-sgd']
    late = qt.loc['fig1-late-phase']
    assert late.primary == 'fig1-late-long' and late.estimator and 'fig1-late-1000ep (custom 868ac1f0)' in late.support
    every = question_table(every=True)
    of = question_of()
    assert every.question.is_unique and len(every) == of.nunique() == len(read_claims()) - 10
    # the rows of a question: the primary's first, none of them decisive on fig. 1's late phase
    rows = question_support('fig1-late-phase')
    assert rows.claim.iloc[0] == 'fig1-late-long' and not rows.verdict.isin(DECISIVE).any()


def _write(tmp_path, change):
    q = pd.read_csv(QUESTIONS, dtype=str, keep_default_na=False)
    change(q).to_csv(tmp_path / 'questions.csv', index=False)
    return tmp_path / 'questions.csv'


@pytest.mark.parametrize('change, message', [
    (lambda q: q.assign(question=q.question.iloc[0]), 'unique'),
    (lambda q: q.assign(question=q.question.replace('fig1-late-phase', 'fig1-late')), 'are claim ids'),
    (lambda q: q.assign(claims=q.claims.replace('fig1-late fig1-late-long fig1-late-1000ep', 'fig1-late-long made-up')),
     r"unknown claim\(s\) \['made-up'\]"),
    (lambda q: q.assign(primary=q.primary.replace('fig1-late-long', 'tab2-kl')), 'is not one of its claims'),
    (lambda q: q.assign(claims=q.claims.replace('fig2a-ds-le-llc tab8-ds-le-llc', 'fig2a-ds-le-llc fig1-late')),
     r"claim\(s\) \['fig1-late'\] answer more than one question"),
    (lambda q: q.assign(estimator=''), 'must be stated'),
    (lambda q: q.drop(columns='primary'), r"missing column\(s\) \['primary'\]"),
])
def test_bad_questions_tables_are_refused(tmp_path, change, message):
    with pytest.raises(ValueError, match=message):
        read_questions(_write(tmp_path, change))


def test_the_decade_rule():
    assert window_decades('log-log slope after t_c (eq. 17); 1.30 decades') == 1.3
    assert window_decades('NO crossover (...); log-log slope of the last half decade') == 0.5
    assert window_decades('no window here') is None
    claim = pd.Series(dict(quantity='late exponent 1/d_walk', kind='below', paper_value='0.5'))
    summary = pd.DataFrame(dict(value=[200.0]), index=[TC])
    assert decade_rule(claim, 'reproduced', 'SHORT: 0.35 decades < 1', summary).startswith(
        'DECADE RULE: read over 0.35 decades')
    assert decade_rule(claim, 'not reproduced', 'the last half decade', summary).startswith(
        'DECADE RULE: read over 0.50 decades')
    assert decade_rule(claim, 'reproduced', '1.30 decades', summary) == ''       # no curve kept: the window decides
    assert decade_rule(claim, 'inconclusive', 'SHORT: 0.35 decades < 1', summary) == ''
    assert decade_rule(claim.copy().replace({'late exponent 1/d_walk': 'median r² of eq. 17'}), 'reproduced', '',
                       summary) == ''


def _curve(folder, slope_of_log_t):
    t = np.unique(np.round(np.logspace(0, np.log10(4000), 400)))
    lt = np.log10(t)
    logy = np.concatenate([[0], np.cumsum(slope_of_log_t(lt[1:]) * np.diff(lt))])
    write_table(pd.DataFrame(dict(t=t, mean=10**logy)), folder / CURVE)
    return folder


def test_the_decade_rule_reads_the_local_slope_of_a_kept_curve(tmp_path):
    claim = pd.Series(dict(quantity='late exponent 1/d_walk', kind='below', paper_value='0.5'))
    summary = pd.DataFrame(dict(value=[200.0]), index=[TC])
    (tmp_path / 'p').mkdir(), (tmp_path / 'd').mkdir()
    power = _curve(tmp_path / 'p', lambda lt: np.where(lt < 2.3, 0.9, 0.4))
    dip = _curve(tmp_path / 'd', lambda lt: np.interp(lt, [0, 2.3, 3.0, 3.6], [0.9, 0.9, 0.33, 0.62]))
    assert decade_rule(claim, 'reproduced', '1.30 decades', summary, power) == ''
    # a window mean below 1/2 whose local slope ends above it does not show a sub-diffusive late phase ...
    held = decade_rule(claim, 'reproduced', '1.30 decades', summary, dip)
    assert held.startswith('DECADE RULE: over the last decade of the run (t ≥ 400)') and 'not below 0.5' in held
    # ... and a verdict above 1/2 on a curve that stays below it over the last decade is held back too
    assert 'not above 0.5' in decade_rule(claim, 'not reproduced', '1.30 decades', summary, power)


def test_the_committed_late_rows_follow_the_decade_rule():
    led = read_ledger()
    late = led[led.claim_id.map(read_claims().quantity).str.startswith('late exponent')]
    for r in late.itertuples():
        decades = window_decades(r.note.split('the rule on these numbers: ')[-1])
        if r.verdict in DECISIVE:
            assert decades is not None and decades >= 1, (r.claim_id, r.source)
    rows = led.set_index(['claim_id', 'source'])
    long = rows.loc[('fig1-late-long', 'compact/moons-diffusion/custom-c9b1d13965315c2d')]
    assert long.rule == 'reproduced' and long.verdict == 'inconclusive' and 'from 0.33 to 0.62' in long.note
