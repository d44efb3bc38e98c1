"""Checks across the ledger: the App. D.3 bound on every LLC row, table 3's setting on DLNs, the long moons run as an
extended result with its own claims, derived quantities, and the rows each study page shows."""
import json, math, shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fracsgd.core import read_table, write_table
from fracsgd.ledger.claims import LEDGER, read_claims, read_ledger, ledger_rows, stale_rows, summary_value
from fracsgd.ledger.provenance import COMPACT, result_scale
from fracsgd.experiment.protocol import protocol_scale
from fracsgd.ledger.scale import paper_kind
from fracsgd.ledger.checks import dln_bias_result, median_ci_ranks, study_verdicts
from fracsgd.ledger.bound import half_d_table, mlp_parameters, parameter_counts


def test_long_moons_run_is_extended_and_answers_only_its_own_claims():
    from fracsgd.studies import get_study
    moons = get_study('moons-diffusion')
    assert protocol_scale(moons, moons.config('long')) == 'extended: epochs 1,000 of 200'
    led = read_ledger()
    long = led[led.source == 'compact/moons-diffusion/custom-c9b1d13965315c2d']
    assert set(long.claim_id) == {'fig1-early-long', 'fig1-late-long'}
    assert (long.scale == 'longer than the paper: epochs 1,000 of 200').all()
    # each fig.-1 row names the rule that placed its t_c
    fig1 = led[led.claim_id.str.startswith('fig1-') & led.source.str.startswith('compact/moons-diffusion/')]
    assert fig1[fig1.config != 'custom'].note.str.contains("t_c by slope: where the local slope last falls below 1/2").all()
    assert long.note.str.contains("detect_crossover's model comparison").all()
    assert long.note.str.contains('does not refer to 1/2').all()
    late = long.set_index('claim_id').loc['fig1-late-long']
    assert late.rule == 'reproduced' and late.ci_high < 0.5 and 'rises above 1/2' in late.note
    # 1.3 decades, but the local slope crosses 1/2 within the run's last decade: the decade rule holds it back
    assert late.verdict == 'inconclusive' and 'DECADE RULE: over the last decade of the run' in late.note


def test_the_ledger_reads_the_recorded_scale(tmp_path):
    "The scale is read from provenance.json, where the runner's record was copied; a changed record makes stale rows."
    shutil.copytree(LEDGER.parent, tmp_path / 'ledger')
    prov_file = tmp_path / 'ledger/compact/moons-diffusion/custom-c9b1d13965315c2d/provenance.json'
    prov = json.loads(prov_file.read_text())
    assert result_scale(prov) == prov['scale'] == 'extended: epochs 1,000 of 200'
    prov['scale'] = "reduced: epochs 1,000 of 200; crossover 'auto' (full: 'slope')"      # another record
    prov_file.write_text(json.dumps(prov))
    assert result_scale(prov) == prov['scale']
    assert any('custom-c9b1d13965315c2d' in p for p in stale_rows(tmp_path / 'ledger/ledger.csv'))


def test_twice_the_largest_of_rows():
    s = pd.DataFrame({'quantity': ['a: alpha', 'b: alpha', 'c: alpha'], 'value': [0.2, 0.4, np.nan],
                      'ci_low': [0.1, 0.35, np.nan], 'ci_high': [0.45, 0.41, np.nan], 'note': ''}).set_index('quantity')
    v, lo, hi, note = summary_value(s, '2 × max of a: alpha | b: alpha | c: alpha')
    assert (v, lo, hi) == (0.8, 0.7, 0.9) and '2 of 3 rows' in note and 'largest: b: alpha' in note
    assert math.isnan(summary_value(s, '2 × max of c: alpha')[0])
    with pytest.raises(ValueError, match="no quantity 'd: alpha'"):
        summary_value(s, '2 × max of a: alpha | d: alpha', 'here')


def test_parameter_counts_match_closed_forms():
    # 784-128-64-32-10: 110,912 weights (table 8's count), 234 biases, 2 x 224 batch-norm parameters
    assert mlp_parameters((128, 64, 32)) == 110_912 + 234 + 448
    assert parameter_counts(COMPACT / 'mnist-seeds/full') == {'': 111_594}
    arch = parameter_counts(COMPACT / 'mnist-architectures/quick')
    assert arch['784-128-64'] == 109_184 + (128 + 64 + 10) + 2 * (128 + 64)
    assert parameter_counts(COMPACT / 'cifar10/quick-stand-in')['conv-32'] == 1184   # table 5's own count


def test_every_llc_row_is_checked_against_half_d_and_a_violation_fails(tmp_path):
    claims, led = read_claims(), read_ledger()
    llc = led[led.claim_id.map(claims.llc).eq('llc') & led.value.notna()]
    d3 = led[led.claim_id == 'appD-llc-le-half-d']
    assert set(d3.source) == set(llc.source)                    # one check per result with LLC rows
    assert (d3.ci_high < 1).all()
    # a made-up result whose LLC exceeds d/2 of its net: table 5's 1184-parameter conv net with lambda = 700
    src = COMPACT / 'cifar10/quick-stand-in'
    folder = tmp_path / 'cifar10/quick-stand-in'
    shutil.copytree(src, folder)
    summary = read_table(folder / 'summary.csv').set_index('quantity')
    summary.loc['conv-32: final LLC', ['value', 'ci_low', 'ci_high']] = (700.0, 650.0, 750.0)
    write_table(summary.reset_index(), folder / 'summary.csv')
    rows = ledger_rows(folder).set_index('claim_id')
    bound = rows.loc['appD-llc-le-half-d']
    assert bound.rule == 'not reproduced' and round(bound.value, 4) == round(700 / 592, 4)
    assert 'at or above d/2: tab5-conv-1184-llc' in bound.note
    t = half_d_table(rows.reset_index(), folder, claims).set_index('claim_id')
    assert t.d['tab5-conv-1184-llc'] == 1184 and t.d['tab6-res-1216-llc'] == 1216


def test_median_interval_ranks_against_the_binomial():
    from math import comb
    for n in (10, 24, 50):
        lo, hi = median_ci_ranks(n)
        cover = sum(comb(n, k) for k in range(lo + 1, hi + 1)) / 2 ** n     # P(lo < count below median <= hi)
        assert cover >= 0.95 and lo == n - 1 - hi
        tighter = sum(comb(n, k) for k in range(lo + 2, hi)) / 2 ** n
        assert tighter < 0.95                                              # one rank inwards would not cover
    assert median_ci_ranks(24) == (6, 17)
    with pytest.raises(ValueError, match='too few'):
        median_ci_ranks(5)


def test_table_3_setting_on_dlns_follows_from_the_validation_table(tmp_path):
    made = dln_bias_result(compact_dir=tmp_path)
    committed = COMPACT / 'dln/held-out-stand-in'
    assert read_table(made / 'summary.csv').equals(read_table(committed / 'summary.csv'))
    held = read_table(Path(COMPACT).parents[1] / 'llc_validation/depth_paper_preset.csv').query('setting == "paper preset"')
    ratio = np.sort(held.estimate / held.true_llc)
    lo, hi = median_ci_ranks(len(ratio))
    s = read_table(committed / 'summary.csv').set_index('quantity').iloc[0]
    assert np.isclose(s.value, np.median(ratio)) and s.ci_low == ratio[lo] and s.ci_high == ratio[hi]
    row = read_ledger().set_index('claim_id').loc['tab3-llc-settings']
    # the median's interval straddles 1/2, the claim's reading of "sufficient": the rule cannot decide
    assert paper_kind(row.scale) == 'stand-in' and row.rule == 'inconclusive' and row.verdict == 'not run at paper scale'


def test_study_pages_rows_are_the_ledgers():
    led = read_ledger()
    derived_from = {s: json.loads((LEDGER.parent / s / 'provenance.json').read_text())['derived_from']
                    for s in led.source.unique() if s.startswith('compact/derived/')}
    for study in ('moons-diffusion', 'moons-posterior', 'mnist-seeds', 'grokking', 'cifar10'):
        mine = led[led.source.str.startswith(f'compact/{study}/') & led.value.notna()]
        theirs = [s for s, d in derived_from.items() if d.startswith(f'compact/{study}/')]
        shown = study_verdicts(study)
        derived = shown.config.str.endswith('(derived)')
        assert derived.sum() == (led.source.isin(theirs) & led.value.notna()).sum()
        shown = shown[~derived]
        assert len(shown) == len(mine) and set(shown.claim) == set(mine.claim_id)
        assert (shown.assign(config=shown.config.str.split(' ').str[0]).set_index(['claim', 'config']).verdict.sort_index()
                == mine.set_index(['claim_id', 'config']).verdict.sort_index().rename_axis(['claim', 'config'])).all()
    seeds = study_verdicts('mnist-seeds')
    seeds = seeds[seeds.config.str.startswith('full')].set_index('claim')         # the controls have rows too
    assert seeds.loc['tab8-llc-mean', 'nβ'].startswith('nβ = 256/ln 256') and seeds.loc['fig18-r2', 'nβ'] == ''
    # held back: every LLC along training is flagged (the rule alone is inconclusive, on the widened interval)
    assert seeds.loc['tab8-llc-mean', 'why'] == ('NOT DECISIVE (all 1000 LLC estimates flagged by their diagnostics; '
                                                 'every one of the 50 nets has its LLC target marked not converged to λ; '
                                                 'the numbers cannot tell: ours is within the combined spread s of the '
                                                 "paper's, but 2s exceeds the paper's value, so agreement would not show "
                                                 'a match)')
    assert seeds.loc['fig18-r2', 'why'] == ''
    post = study_verdicts('moons-posterior').set_index(['claim', 'config'])
    assert post.why[('fig4b-tempered-agrees', 'full')].startswith('NOT AT PAPER SCALE (reduced; also all 500 LLC')
    assert post.rule[('fig4b-tempered-agrees', 'full')] == 'not reproduced'
    conv = ('fig4b-tempered-agrees', 'custom (full-converged)')
    assert post.why[conv].startswith('NOT DECISIVE (all 464 LLC estimates flagged') and post.rule[conv] == 'reproduced'


def test_a_result_without_parameter_counts_gets_no_bound_row_and_keep_results_copies_tables_first(tmp_path):
    folder = tmp_path / 'cifar10/quick-stand-in'
    shutil.copytree(COMPACT / 'cifar10/quick-stand-in', folder)
    (folder / 'per_arch.csv').unlink()                      # as record_claims sees a folder before its tables
    rows = ledger_rows(folder)
    assert 'appD-llc-le-half-d' not in set(rows.claim_id) and 'tab5-conv-1184-llc' in set(rows.claim_id)
    import inspect
    from fracsgd.ledger.claims import keep_results
    src = inspect.getsource(keep_results)
    assert src.index('copyfile') < src.index('record_claims(folder')
