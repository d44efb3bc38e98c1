"""Rows that say what they measured (issue 42): totals that count each question once, the direct test of Lemma 3.4 /
Cor. 3.3 on landscapes with exact λ, the eq.-4 ageing rows read against eq. 4's exponent, A.1 without a reading, the
bound λ ≤ d/2 deciding nothing, and the ledger page that opens with a short summary. Reads only the committed files."""
import json, math, re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fracsgd.ledger.claims import DECISIVE, read_claims, read_ledger, summary_value
from fracsgd.ledger.differences import ABS_DIFF, abs_difference
from fracsgd.ledger.provenance import COMPACT
from fracsgd.ledger.questions import question_verdicts, verdicts_by_question
from fracsgd.ledger.table import ledger_table, verdicts_by_scale

ROOT = Path(__file__).resolve().parents[1]


def test_totals_count_each_question_once():
    by_claim, by_question = verdicts_by_scale(), verdicts_by_question()
    claims = read_claims()
    assert by_claim.claims.sum() == len(claims) and by_question.questions.sum() == len(claims) - 10
    # table 8's bound row repeats fig. 2a's measurement: it counts once among the questions; both are ratios of
    # LLCs under one nβ reading where the readings differ in sign, so neither is decisive
    assert by_question.loc['paper protocol', 'not reproduced'] == by_claim.loc['paper protocol', 'not reproduced']
    q = question_verdicts().set_index('question')
    assert 'tab8-ds-le-llc' not in q.index and q.loc['lemma34-mnist-seeds', 'verdict'] == 'inconclusive'
    # table 2's distances and fig. 3's choice of ξ count once each, with the moons run's verdict
    assert 'tab2-kl-converged' not in q.index and q.loc['tab2-kl-bayes-sgd', 'study'] == 'moons-posterior'
    decisive = by_question.reindex(columns=list(DECISIVE), fill_value=0).sum(axis=1)
    assert set(decisive[decisive > 0].index) <= {'paper protocol', 'longer than the paper'}


def test_lemma_34_is_tested_with_d_s_measured_without_lambda():
    row = read_ledger().set_index('claim_id').loc['cor33-ds-le-llc-exact']
    walks = pd.read_csv(COMPACT / 'known-lambda/full/walks.csv')
    degenerate = walks[(walks.minimum_set_dim > 0) & walks.d_s.notna()]
    assert len(degenerate) == 4 and (degenerate.d_s_ci_low > degenerate.llc).all()      # d_s > λ on each of them
    assert np.isclose(row.value, (degenerate.d_s / degenerate.llc).min())
    assert row.ci_low > 1 and row.rule == 'not reproduced' and row.verdict == 'not run at paper scale'
    assert row.scale.startswith('assumed')


def test_ageing_rows_read_the_exponent_against_eq_4_not_its_sign():
    claims, led = read_claims(), read_ledger().set_index('claim_id')
    ageing = ['eq4-ageing', 'eq4-noise-ageing', 'mnist-eq4-ageing', 'mnist-eq4-noise-ageing']
    assert claims.quantity[ageing].str.startswith(ABS_DIFF).all() and (claims.kind[ageing] == 'below').all()
    assert (led.rule[ageing] == 'not reproduced').all()
    # moons: −1.28 against eq. 4's −0.13; MNIST noise part: −0.34 against +0.26
    assert round(led.value['eq4-ageing'], 2) == 1.14 and 'measured -1.28' in led.note['eq4-ageing']
    assert 'opposite signs' in led.note['mnist-eq4-noise-ageing']


def test_abs_difference_on_known_cases():
    s = pd.DataFrame(dict(value=[-0.6, -0.1, 0.05, np.nan], ci_low=[-0.7, -0.2, -0.05, np.nan],
                          ci_high=[-0.5, 0.0, 0.15, np.nan], note=['a note', '', '', '']),
                     index=['a', 'b', 'c', 'none'])
    v, lo, hi, note = summary_value(s, '|A − B| of a | b')
    assert np.allclose([v, lo, hi], [0.5, 0.3, 0.7]) and note.endswith('; a note')
    assert np.allclose(abs_difference(s, '|A − B| of b | c')[:3], [0.15, 0.0, 0.35])   # folded at 0
    assert math.isnan(abs_difference(s, '|A − B| of a | none')[0])
    with pytest.raises(ValueError, match="no quantity 'd'"):
        abs_difference(s, '|A − B| of a | d')


def test_a1_radius_has_no_number_when_no_sweep_can_be_read_and_names_its_commit():
    row = read_ledger().set_index('claim_id').loc['a1-radius']
    assert math.isnan(row.value) and row.rule == row.verdict == 'not run yet' and 'NO READING' in row.note
    prov = json.loads((COMPACT / 'llc-domain/mnist-architectures/provenance.json').read_text())
    assert re.fullmatch(r'[0-9a-f]{40}', row.git_commit) and row.git_commit == prov['session']['git_commit']
    assert (read_ledger().git_commit != '').all()


def test_the_bound_half_d_decides_nothing_on_any_result():
    d3 = read_ledger().query('claim_id == "appD-llc-le-half-d"')
    assert not d3.verdict.isin(DECISIVE).any() and (d3.rule == 'reproduced').all()
    assert ledger_table().set_index('claim').verdict['appD-llc-le-half-d'] == 'inconclusive'


def test_the_ledger_page_opens_with_a_short_summary():
    script = (ROOT / 'nbs/_scripts/30_ledger.py').read_text()
    cells = [c for c in script.split('# %%') if c.strip()]
    markdown = [c for c in cells if c.startswith(' [markdown]')]
    first = markdown[1]                                   # after the title
    assert first.splitlines()[1] == '# ## In one minute'
    assert cells.index(first) < min(i for i, c in enumerate(cells) if '#| export' in c)    # before any code of the page
    words = re.sub(r'^#\s?', '', first.split('\n', 1)[1], flags=re.M).split()
    assert len(words) <= 250, len(words)
    for said in ('reproduce', 'do not', 'cannot be judged', 'Theorem 3.1', '1.96', 'Theorem 3.2', 'Cor. 3.3'):
        assert said in first


def test_a_stand_in_llc_row_still_says_why_its_systematic_part_is_missing():
    # A stand-in row's lead once dropped every reason it was held back, so 51 LLC rows on stand-ins said nothing of
    # the estimator's systematic uncertainty (issue 42, item 3: carry it, or say why not).
    claims = read_claims().reset_index(drop=True)[['claim_id', 'llc']]
    rows = read_ledger().reset_index(drop=True).merge(claims, on='claim_id')
    stand = rows[rows.note.str.startswith('STAND-IN', na=False) & rows.llc.isin(['llc', 'llc-scaled', 'llc-ratio'])
                 & rows.value.notna()]
    assert len(stand) > 40
    silent = stand[~stand.note.str.contains('not measured at this model', regex=False)]
    assert silent.empty, silent[['claim_id', 'config']].to_string()


def test_every_llc_row_carries_the_systematic_parts_or_says_why_not():
    # issue 42, item 3: the localization shift and the temperature slope are in every LLC-bearing row's note, as
    # measured or as not measured; App. D's bound rows (llc-derived) once skipped it, and a derived result did not
    # inherit its source's readings, so the seeds' single-constant row said "not measured" where they were measured
    from fracsgd.ledger.uncertainty import LLC_NOT_MEASURED
    claims = read_claims().reset_index(drop=True)[['claim_id', 'llc']]
    rows = read_ledger().reset_index(drop=True).merge(claims, on='claim_id')
    llc = rows[(rows.llc != '') & rows.value.notna()]
    assert len(llc) > 150 and (llc.llc == 'llc-derived').sum() >= 12
    said = llc.note.str.contains(LLC_NOT_MEASURED, regex=False) | llc.note.str.contains(
        'measured at these weights: the shift under', regex=False)
    assert said.all(), llc[~said][['claim_id', 'source']].to_string()
    seeds = llc[llc.source.isin(['compact/mnist-seeds/full', 'compact/derived/mnist-seeds-full'])]
    assert len(seeds) >= 7 and seeds.note.str.contains('moves -3.36', regex=False).all()
    one = seeds.set_index('claim_id').note['sec331-single-ds']
    assert 'another sign' in one and 'no count of flagged' not in one


def test_a_result_that_took_its_llc_from_another_reads_the_sources_diagnostics(tmp_path):
    # The MNIST controls read the LLC along training from mnist-seeds/full (the same nets), and their rows said "no
    # count of flagged LLC estimates" although every one of those estimates was diagnosed, and flagged, there.
    from fracsgd.ledger.claims import ledger_rows
    rows = read_ledger().reset_index(drop=True)
    took = rows[rows.source == 'compact/mnist-seeds/custom-a16ed3fd8d0f094e']
    llc = took[took.note.str.contains('nβ =', regex=False)]
    assert len(llc) >= 5
    assert not llc.note.str.contains('no count of flagged', regex=False).any()
    assert llc.note.str.contains('all 1000 LLC estimates flagged', regex=False).all()
    assert llc.note.str.contains("mnist-seeds/full's, on the same nets", regex=False).all()
    # a result that names a source the ledger does not hold is refused, naming it
    src = COMPACT / 'mnist-seeds/custom-a16ed3fd8d0f094e'
    copy = tmp_path / 'compact' / 'mnist-seeds' / 'controls'
    copy.mkdir(parents=True)
    for f in ('summary.csv', 'provenance.json'):
        (copy / f).write_bytes((src / f).read_bytes())
    with pytest.raises(FileNotFoundError, match='mnist-seeds/full'):
        ledger_rows(copy)
    prov = json.loads((copy / 'provenance.json').read_text())
    (copy / 'provenance.json').write_text(json.dumps({k: v for k, v in prov.items() if k != 'llc_source'}))
    alone = ledger_rows(copy)            # without the source, the same result says it has no count of its own
    assert alone.note.str.contains('no count of flagged', regex=False).sum() >= 5


def test_an_llc_row_missing_part_of_its_uncertainty_says_what_run_it_needs():
    # issue 42: "where a row needs a run you cannot make, it says 'not run yet' and why"; a row that lacks the flag
    # count, the readings at the final weights or the systematic parts names the run that would record them
    from fracsgd.ledger.uncertainty import LLC_NOT_MEASURED, NO_FLAG_COUNT
    claims = read_claims().reset_index(drop=True)[['claim_id', 'llc']]
    rows = read_ledger().reset_index(drop=True).merge(claims, on='claim_id')
    llc = rows[(rows.llc != '') & rows.value.notna()]
    lacks = (llc.note.str.contains(NO_FLAG_COUNT, regex=False) | llc.note.str.contains(LLC_NOT_MEASURED, regex=False)
             | llc.note.str.contains('not measured at this model', regex=False))
    says = llc.note.str.contains(r'not run yet: what is not measured here needs a new run .*took [\d.]+ (h|min) here')
    assert lacks.sum() > 100 and (says == lacks).all(), llc[says != lacks][['claim_id', 'source']].to_string()
    full = llc[llc.source == 'compact/mnist-seeds/full']                 # every part measured: no such note
    assert len(full) >= 6 and not says[full.index].any()


def test_every_row_the_rule_leaves_undecided_says_why():
    # a review found two inconclusive rows at the paper's protocol with empty notes (qualitative claims), and one
    # whose note never said that the two-sample rule could not tell; each now leads with the rule's reason
    rows = read_ledger().reset_index(drop=True)
    undecided = rows[(rows.rule == 'inconclusive') & rows.value.notna()]
    assert len(undecided) > 50
    why = undecided.note.str.contains(r"qualitative claim|the numbers cannot tell|holds the paper's bound|"
                                      r"wider than the paper's value")
    assert why.all(), undecided[~why][['claim_id', 'source']].to_string()
    inconclusive = rows[(rows.verdict == 'inconclusive') & rows.value.notna()]
    assert inconclusive.note.str.startswith('NOT DECISIVE (').all()
