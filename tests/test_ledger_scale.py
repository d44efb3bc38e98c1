"""The ledger's scale against the paper's protocol (issue 42, item 2), and the rows that were missing (item 4): a run
longer than the paper is never "reduced" by its length, a result that misses a step of the paper's protocol is not
"paper protocol", the converged moons run answers the posterior claims, table 7's slopes need no LLC and decide,
Lemma 3.4 on tables 5-6, table 4 against its own lemma, and §3.3.1's single d_s. Reads only the committed files."""
import json, re
from pathlib import Path

import pandas as pd
import pytest

from fracsgd.ledger.claims import read_claims, read_ledger
from fracsgd.ledger.provenance import COMPACT, LEDGER_DIR
from fracsgd.ledger.questions import question_table
from fracsgd.ledger.scale import (PAPER_SCALES, against_paper, classify, departures, paper_kind, read_departures)
from fracsgd.ledger.table import ledger_table
from fracsgd.experiment.protocol import LENGTH_FIELDS

ROOT = Path(__file__).resolve().parents[1]
POSTERIOR = ['fig3-xi', 'fig4a-low-llc', 'fig4b-sgd-prefers-c1', 'fig4b-tempered-agrees', 'tab2-kl', 'tab2-wasserstein',
             'tab2-js']
CONVERGED = 'compact/moons-posterior/custom-868ac1f091f488d1'


def _reduced_part(scale: str) -> list[str]:
    "The items a scale text lists as smaller than the paper: after 'reduced: ', before 'longer than'/'also differs'."
    m = re.search(r'reduced: (.*?)(?:; longer than the paper: |; also differs: |$)', scale)
    return m.group(1).split('; ') if m else []


def test_a_row_whose_run_is_longer_than_the_papers_is_never_reduced_by_it():
    led = read_ledger()
    for scale in set(led.scale):
        for item in _reduced_part(scale):
            m = re.match(r'^([\w.]+):? ([\d,]+) of ([\d,]+)$', item)
            if m and m.group(1).split('.')[-1] in LENGTH_FIELDS:
                assert int(m.group(2).replace(',', '')) < int(m.group(3).replace(',', '')), scale
    assert not led.scale.str.contains(r'reduced: [^;]*epochs 1,000 of 200').any()
    # the moons protocol trained 1,000 epochs and nothing else is longer than the paper
    for source in ('compact/moons-diffusion/custom-c9b1d13965315c2d', CONVERGED):
        assert set(led.scale[led.source == source]) == {'longer than the paper: epochs 1,000 of 200'}
    # fewer nets and more epochs: reduced in the nets, longer in the epochs
    returns = set(led.scale[led.source == 'compact/moons-diffusion/custom-86e6a59a29d0542a'])
    assert returns == {'reduced: n_models 50 of 500; longer than the paper: epochs 1,000 of 200; '
                       'also differs: returns True (full: False)'}
    assert set(led.scale.map(paper_kind)) <= set(PAPER_SCALES)


def test_the_moons_posterior_rows_are_not_paper_protocol():
    led = read_ledger()
    posterior = led[led.source.str.startswith('compact/moons-posterior/')]
    assert not (posterior.scale.map(paper_kind) == 'paper protocol').any()
    full = posterior[posterior.source == 'compact/moons-posterior/full']
    assert len(full) == 7 and set(full.claim_id) == set(POSTERIOR)
    assert full.scale.str.startswith('reduced: converged nets 0 of 500 analysed (App. G.4').all()
    assert (full.verdict == 'not run at paper scale').all()
    summary = pd.read_csv(COMPACT / 'moons-posterior/full/summary.csv').set_index('quantity').value
    assert summary['nets passing the convergence criterion'] == 0 and summary['nets analysed'] == 500


def test_the_converged_moons_run_answers_the_posterior_claims():
    shown = ledger_table().set_index('claim')
    assert shown.configuration[POSTERIOR].str.contains('868ac1f091f488d1').all()
    assert (shown.scale[POSTERIOR] == 'longer than the paper: epochs 1,000 of 200').all()
    summary = pd.read_csv(ROOT / 'nbs/ledger' / CONVERGED / 'summary.csv').set_index('quantity').value
    assert summary['nets passing the convergence criterion'] == summary['nets analysed'] == 464
    conv = read_ledger().set_index(['claim_id', 'source'])
    tempered = conv.loc[('fig4b-tempered-agrees', CONVERGED)]
    # tempering helps on converged nets, by the rule; every LLC it rests on is flagged, so it does not decide
    assert tempered.value < 0 and tempered.rule == 'reproduced' and tempered.verdict == 'inconclusive'
    assert conv.loc[('fig4b-tempered-agrees', 'compact/moons-posterior/full')].value > 0
    assert conv.loc[('fig4b-sgd-prefers-c1', CONVERGED)].verdict == 'reproduced'


def test_against_paper_on_made_up_records():
    assert against_paper('paper scale') == 'paper protocol'
    assert against_paper('extended: steps 4,000 of 800') == 'longer than the paper: steps 4,000 of 800'
    assert against_paper('reduced: epochs 50 of 200') == 'reduced: epochs 50 of 200'
    assert against_paper('reduced: n_models 5 of 50; epochs 300 of 100') == (
        'reduced: n_models 5 of 50; longer than the paper: epochs 300 of 100')
    assert against_paper('extended: epochs 300 of 100', ['converged nets 3 of 9 analysed (there)']) == (
        'reduced: converged nets 3 of 9 analysed (there); longer than the paper: epochs 300 of 100')
    assert against_paper('stand-in: X; reduced: steps 10 of 5') == 'stand-in: X; longer than the paper: steps 10 of 5'
    assert [classify(x) for x in ('epochs 1,000 of 200', 'n_models 1,000 of 200', "k 'a' (full: 'b')", 'llc_every 1 of 9')
            ] == ['longer', 'other', 'other', 'other']
    with pytest.raises(ValueError, match='does not start with one of'):
        paper_kind('paper scale')


def test_a_departure_applies_only_where_the_summary_shows_it():
    table = read_departures()
    assert list(table.study) == ['moons-posterior']
    prov = dict(study='moons-posterior', config='x')
    rows = lambda met, of: pd.DataFrame({'value': [met, of]}, index=['nets passing the convergence criterion',
                                                                     'nets analysed'])
    assert departures(prov, rows(464, 464), table) == []
    assert departures(prov, rows(0, 500), table) == [
        'converged nets 0 of 500 analysed (App. G.4 discards the training runs that did not converge)']
    with pytest.raises(ValueError, match='has no summary row'):
        departures(prov, rows(1, 1).iloc[:1], table)
    assert departures(dict(study='mnist-seeds', config='full'), rows(0, 50), table) == []


def test_table_7_slopes_need_no_llc_and_decide_at_the_papers_protocol():
    from fracsgd.studies.mnist_architectures import PAPER_TABLE7, architecture_name
    from fracsgd.studies.mnist_seeds import PAPER_TABLE8
    claims, led = read_claims(), read_ledger().set_index('claim_id')
    slopes = claims[claims.claim_id.str.endswith('-slope') & claims.claim_id.str.startswith('tab7-')]
    assert len(slopes) == 17 and (slopes.llc == '').all()
    implied = {architecture_name(r.hidden): r.d_s / (2 * r.llc) for r in PAPER_TABLE7.itertuples()}
    for c in slopes.itertuples():
        assert float(c.paper_value) == pytest.approx(implied[c.quantity.removeprefix('eq.-17 slope, ')], rel=1e-3)
    assert float(slopes.paper_sd.iloc[0]) == pytest.approx((PAPER_TABLE8.d_s / (2 * PAPER_TABLE8.llc)).std(), abs=1e-4)
    rows = led.loc[slopes.claim_id]
    assert (rows.scale == 'paper protocol').all() and rows.value.between(0.51, 0.74).all()
    per = pd.read_csv(COMPACT / 'mnist-architectures/full/per_architecture.csv').set_index('architecture').slope
    assert sorted(rows.value.round(12)) == sorted(per.round(12))
    assert (rows.verdict == 'not reproduced').sum() == 16
    assert rows.verdict[rows.verdict != 'not reproduced'].index.tolist() == ['tab7-mlp-234752-slope']


def test_lemma_34_on_tables_5_and_6_and_table_4_against_itself():
    led = read_ledger().set_index(['claim_id', 'source'])
    for t in ('tab5', 'tab6'):
        rows = led.xs(f'{t}-ds-le-llc', level='claim_id')
        assert len(rows) == 2 and (rows.verdict == 'not run at paper scale').all() and rows.scale.str.startswith('stand-in').all()
        assert (rows.rule == 'not reproduced').all() and rows.note.str.startswith('STAND-IN').all()
    printed = led.loc[('tab4-printed-ds-le-llc', 'compact/paper/printed')]
    assert printed.value == pytest.approx(36.6 / 32.05) and printed.ci_low > 1 and printed.verdict == 'not reproduced'
    assert printed.scale.startswith('paper protocol') and re.fullmatch(r'[0-9a-f]{40}', printed.git_commit)
    assert question_table().set_index('question').verdict['lemma34-table4'] == 'not reproduced'


def test_section_331_single_d_s_has_a_number_and_cannot_decide():
    row = read_ledger().set_index('claim_id').loc['sec331-single-ds']
    assert row.value == pytest.approx(1.50, abs=0.01) and row.ci_low > 1 and row.verdict == 'inconclusive'
    assert read_claims().kind['sec331-single-ds'] == 'qualitative' and row.scale == 'paper protocol'
    prov = json.loads((LEDGER_DIR / row.source / 'provenance.json').read_text())
    assert prov['derived_from'] == 'compact/mnist-seeds/full'


def test_the_ledger_pages_file_tree_fits_the_column():
    script = (ROOT / 'nbs/_scripts/30_ledger.py').read_text()
    tree = script.split('# ```\n# nbs/ledger/', 1)[1].split('# ```', 1)[0]
    assert max(len(line.removeprefix('# ')) for line in tree.splitlines()) <= 72
