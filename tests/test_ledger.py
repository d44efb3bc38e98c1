"""The claims ledger: its committed rows follow from the committed study results, the quick moons study still
gives those results, and bad input (unknown claims, verdicts outside the four, missing intervals) is refused."""
import json, math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fracsgd.studies.moons_diffusion as moons
from fracsgd.experiment.runner import run_study
from fracsgd.core import write_table, read_table
from fracsgd.ledger.uncertainty import SYSTEMATIC
from fracsgd.ledger.claims import (CLAIMS, VERDICTS, DECISIVE, read_claims, read_ledger, ledger_rows, record_claims,
    stale_rows, verdict, paper_interval)
from fracsgd.ledger.table import ledger_table
from fracsgd.ledger.provenance import COMPACT, save_compact
from fracsgd.experiment.protocol import protocol_scale, scale_kind
from fracsgd.ledger.scale import paper_kind
from fracsgd.experiment.store import open_study, save_plan, save_run
from fracsgd.experiment.sweep import unique_runs, config_record

SUMMARY_COLUMNS = ['quantity', 'value', 'ci_low', 'ci_high', 'note']


def _study(folder, rows, skip_last=False, preset='full'):
    "A finished (or, with `skip_last`, unfinished) moons-diffusion study folder with the run keys of `preset`."
    open_study(folder, 'moons-diffusion', fields=dict(preset=preset))
    runs = unique_runs(moons.STUDY.runs(moons.STUDY.config(preset)))
    save_plan(folder, runs)
    for key, cfg in list(runs.items())[:-1 if skip_last else None]:
        save_run(folder, key, config_record(cfg), {})
    write_table(pd.DataFrame(rows, columns=SUMMARY_COLUMNS), Path(folder) / 'summary.csv')
    return folder


GOOD = [('early exponent, t < t_c', 0.87, 0.86, 0.88, ''), ('late exponent 1/d_walk', 0.40, 0.39, 0.41, '')]


def test_committed_ledger_follows_from_committed_results():
    assert stale_rows() == []
    ledger = read_ledger()
    assert {'fig1-early', 'fig1-late'} <= set(ledger.claim_id)
    table = ledger_table()
    assert len(table) == len(read_claims()) and set(table.verdict) <= set(VERDICTS)
    # every claim that no committed result covers is 'not run yet', never a verdict without a number
    assert (table[~table.claim.isin(ledger.claim_id)].verdict == 'not run yet').all()


def test_quick_moons_study_still_gives_the_committed_result(tmp_path):
    # Rerun the quick configuration (100 nets, ~20 s of training on 2 cores) and record it into a scratch ledger:
    # the same configuration hash, the same numbers (seeded training and bootstrap; rtol 1e-6 allows for float
    # rounding on another CPU, far below the 4th digit any verdict or page shows) and the same verdicts.
    run_study('moons-diffusion', 'quick', tmp_path / 'study', progress=False)
    fresh = record_claims(tmp_path / 'study', ledger=tmp_path / 'ledger.csv', compact_dir=tmp_path / 'compact')
    committed = read_ledger().set_index(['claim_id', 'config']).loc[list(zip(fresh.claim_id, fresh.config))]
    committed = committed.reset_index()                  # the quick rows (full and long have rows of their own)
    assert (fresh.config.values == committed.config.values).all()
    assert (fresh.config_hash.values == committed.config_hash.values).all()
    assert (fresh.verdict.values == committed.verdict.values).all()
    for col in ('value', 'ci_low', 'ci_high'):
        np.testing.assert_allclose(fresh[col].values, committed[col].values, rtol=1e-6)
    new = read_table(tmp_path / 'compact/moons-diffusion/quick/summary.csv')
    old = read_table(COMPACT / 'moons-diffusion/quick/summary.csv')
    assert new.quantity.tolist() == old.quantity.tolist()
    np.testing.assert_allclose(new[['value', 'ci_low', 'ci_high']].values, old[['value', 'ci_low', 'ci_high']].values,
                               rtol=1e-6)


def test_verdict_rule():
    claims = read_claims()
    early, late, kl = claims.loc['fig1-early'], claims.loc['fig1-late'], claims.loc['tab2-kl']
    # printed precision: '32' stands for [31.5, 32.5], '0.009' for [0.0085, 0.0095]
    assert paper_interval(claims.loc['tab1-tinystories-1m-llc']) == (31.5, 32.5)
    assert paper_interval(kl) == pytest.approx((0.0085, 0.0095))
    assert verdict(early, 0.6, 0.51, 0.7) == 'reproduced' and verdict(early, 0.5, 0.49, 0.51) == 'inconclusive'
    assert verdict(late, 0.6, 0.51, 0.7) == 'not reproduced' and verdict(late, 0.45, 0.4, 0.49) == 'reproduced'
    assert verdict(kl, 0.0090, 0.0089, 0.0091) == 'reproduced'
    assert verdict(kl, 0.0110, 0.0096, 0.0120) == 'not reproduced'          # misses [0.0085, 0.0095]
    assert verdict(kl, 0.0090, 0.0, 0.0200) == 'inconclusive'              # 0.02 wide > 0.009
    assert verdict(claims.loc['tab8-negative-ds'], 1.0, 0.9, 1.1) == 'inconclusive'       # qualitative
    assert verdict(claims.loc['fig4a-low-llc'], 1.0, 0.9, 1.1) == 'not reproduced'        # now a bound
    assert verdict(early) == 'not run yet'


def test_record_replaces_rows_of_the_same_configuration(tmp_path):
    kw = dict(ledger=tmp_path / 'ledger.csv', compact_dir=tmp_path / 'compact')
    first = record_claims(_study(tmp_path / 'a', GOOD), **kw)
    worse = [GOOD[0], ('late exponent 1/d_walk', 0.6, 0.55, 0.65, '')]
    second = record_claims(_study(tmp_path / 'b', worse), **kw)
    assert len(first) == len(second) == 2
    assert second.set_index('claim_id').rule.to_dict() == {'fig1-early': 'reproduced', 'fig1-late': 'not reproduced'}
    assert (second.scale == 'paper protocol').all()
    assert stale_rows(tmp_path / 'ledger.csv') == []
    assert oct((tmp_path / 'ledger.csv').stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask():
    import os
    m = os.umask(0)
    os.umask(m)
    return m


def test_a_changed_result_or_claim_makes_the_ledger_stale(tmp_path):
    kw = dict(ledger=tmp_path / 'ledger.csv', compact_dir=tmp_path / 'compact')
    record_claims(_study(tmp_path / 'a', GOOD), **kw)
    summary = tmp_path / 'compact/moons-diffusion/full/summary.csv'
    write_table(pd.DataFrame([GOOD[0], ('late exponent 1/d_walk', 0.6, 0.55, 0.65, '')], columns=SUMMARY_COLUMNS),
                summary)
    stale = stale_rows(tmp_path / 'ledger.csv')
    assert any('changed since' in p for p in stale) and any(p.startswith('fig1-late') for p in stale), stale
    # the same result, but the paper's bound edited in claims.csv: the recorded verdict no longer follows
    record_claims(_study(tmp_path / 'b', GOOD), **kw)
    claims = read_claims()
    claims.loc['fig1-early', 'paper_value'] = '0.9'
    claims.to_csv(tmp_path / 'claims.csv', index=False)
    stale = stale_rows(tmp_path / 'ledger.csv', claims=tmp_path / 'claims.csv')
    assert stale and 'fig1-early' in stale[0] and 'rule: not reproduced' in stale[0], stale


def test_bad_input_is_refused_with_clear_errors(tmp_path):
    claims = read_claims()
    with pytest.raises(ValueError, match='has no interval'):
        verdict(claims.loc['fig1-early'], 0.87)
    with pytest.raises(ValueError, match='does not hold the value'):
        verdict(claims.loc['fig1-early'], 0.87, 0.9, 0.95)
    # a ledger naming an unknown claim, or with a verdict outside the four
    ledger = read_ledger()
    bad = ledger.copy()
    bad.loc[0, 'claim_id'] = 'fig99-made-up'
    bad.to_csv(tmp_path / 'unknown.csv', index=False)
    with pytest.raises(ValueError, match=r"unknown claim id\(s\) \['fig99-made-up'\]"):
        read_ledger(tmp_path / 'unknown.csv')
    bad = ledger.copy()
    bad.loc[0, 'verdict'] = 'mostly reproduced'
    bad.to_csv(tmp_path / 'verdict.csv', index=False)
    with pytest.raises(ValueError, match="'mostly reproduced'"):
        read_ledger(tmp_path / 'verdict.csv')
    bad = ledger.copy()
    bad.loc[0, 'ci_low'] = math.nan
    bad.to_csv(tmp_path / 'interval.csv', index=False)
    with pytest.raises(ValueError, match='has no interval'):
        read_ledger(tmp_path / 'interval.csv')
    # a study summary whose row has no interval, or lacks the quantity a claim names
    kw = dict(ledger=tmp_path / 'l.csv', compact_dir=tmp_path / 'compact')
    no_ci = [GOOD[0], ('late exponent 1/d_walk', 0.40, math.nan, math.nan, '')]
    with pytest.raises(ValueError, match='fig1-late: our value 0.4 has no interval'):
        record_claims(_study(tmp_path / 'a', no_ci), **kw)
    with pytest.raises(ValueError, match="has no quantity 'late exponent 1/d_walk'"):
        record_claims(_study(tmp_path / 'b', GOOD[:1]), **kw)
    # an unfinished study
    with pytest.raises(ValueError, match='not finished .0 failed, 1 pending'):
        save_compact(_study(tmp_path / 'c', GOOD, skip_last=True), tmp_path / 'compact')


@pytest.mark.parametrize('change, message', [
    (lambda c: c.assign(claim_id=['fig1-early'] * len(c)), 'unique'),
    (lambda c: c.assign(kind=c.kind.replace('below', 'at most')), "kind 'at most'"),
    (lambda c: c.assign(paper_value=c.paper_value.replace('0.009', 'nine')), "'nine' is not a number"),
    (lambda c: c.assign(paper_value=c.paper_value.mask(c.kind == 'qualitative', '1')), 'must not have a paper value'),
    (lambda c: c.drop(columns='quantity'), r"missing column\(s\) \['quantity'\]"),
])
def test_bad_claims_tables_are_refused(tmp_path, change, message):
    claims = pd.read_csv(CLAIMS, dtype=str, keep_default_na=False)
    change(claims).to_csv(tmp_path / 'claims.csv', index=False)
    with pytest.raises(ValueError, match=message):
        read_claims(tmp_path / 'claims.csv')


def test_a_reduced_row_is_never_decisive(tmp_path):
    # the quick preset trains 100 of the full preset's 500 nets: whatever its numbers, not run at paper scale
    kw = dict(ledger=tmp_path / 'ledger.csv', compact_dir=tmp_path / 'compact')
    rows = record_claims(_study(tmp_path / 'q', GOOD, preset='quick'), **kw)
    assert (rows.scale == 'reduced: n_models 100 of 500').all()
    assert (rows.verdict == 'not run at paper scale').all() and (rows.rule != 'not run at paper scale').all()
    assert rows.note.str.startswith('NOT AT PAPER SCALE (reduced').all()
    assert rows.note.str.contains('the rule on these numbers: reproduced').all()
    prov = json.loads((tmp_path / 'compact/moons-diffusion/quick/provenance.json').read_text())
    assert prov['preset'] == 'quick' and prov['scale'] == 'reduced: n_models 100 of 500'
    # and a ledger file that claims otherwise is refused
    bad = read_ledger(tmp_path / 'ledger.csv')
    bad.loc[0, 'verdict'] = 'reproduced'
    bad.to_csv(tmp_path / 'bad.csv', index=False)
    with pytest.raises(ValueError, match='decisive verdicts on rows not at paper scale'):
        read_ledger(tmp_path / 'bad.csv')
    # every committed row: scale recorded, and decisive only at paper scale
    led = read_ledger()
    kinds = led.scale.map(paper_kind)
    assert not (led.verdict.isin(DECISIVE) & ~kinds.isin(['paper protocol', 'longer than the paper'])).any()
    assert set(led[led.source == 'compact/mnist-seeds/full'].scale) == {'paper protocol'}
    assert set(led[led.source == 'compact/mnist-architectures/quick'].scale) == {'reduced: rows: 4 of 17; epochs 15 of 250'}


def test_protocol_scale_names_what_differs():
    from fracsgd.studies import get_study
    posterior, seeds, ablations = get_study('moons-posterior'), get_study('mnist-seeds'), get_study('mnist-ablations')
    assert protocol_scale(posterior, posterior.config('full')) == 'paper scale'
    assert protocol_scale(posterior, posterior.config('full-converged')) == 'extended: epochs 1,000 of 200'
    assert protocol_scale(seeds, seeds.config('quick')).startswith('reduced: n_models 4 of 50; epochs 20 of 100')
    assert protocol_scale(ablations, ablations.config('full')).startswith('assumed: the paper does not state')
    assert protocol_scale(posterior, None) == 'reduced: a custom configuration of moons-posterior'
    cifar = get_study('cifar10')
    assert scale_kind(protocol_scale(cifar, cifar.config('quick'), 'MNIST digits')) == 'stand-in'
    with pytest.raises(ValueError, match='does not start with one of'):
        scale_kind('quick')


def test_two_sample_rule_on_cases_with_known_answers():
    claims = read_claims()
    lam = claims.loc['tab7-mlp-118016-llc']          # 23.551 from one seed; table 8's seed-to-seed sd of λ: 1.23
    assert lam.paper_sd == '1.23'
    # |26 - 23.551| = 2.449 <= sqrt(1² + (1.96 · 1.23)²) = 2.61, and 2 · 2.61 <= 23.551
    assert verdict(lam, 26.0, 25.0, 27.0) == 'reproduced'
    # |27 - 23.551| = 3.449 > sqrt(0.5² + 2.41²) = 2.46
    assert verdict(lam, 27.0, 26.5, 27.5) == 'not reproduced'
    # the side facing the paper's number counts: the same value with a long lower arm agrees
    assert verdict(lam, 27.0, 24.0, 27.5) == 'reproduced'
    # without the paper's spread the printed digits are the only tolerance: [23.5505, 23.5515] is missed
    assert verdict(dict(lam, paper_sd=''), 26.0, 25.0, 27.0) == 'not reproduced'
    # table 7's d_s (sd 4.34): a number that agrees cannot pass, because 2 · 1.96 · 4.34 > 12.996
    ds = claims.loc['tab7-mlp-118016-ds']
    assert verdict(ds, 13.0, 12.9, 13.1) == 'inconclusive' and verdict(ds, 41.4, 40.5, 42.3) == 'not reproduced'
    # table 8's mean d_s has the standard error of a 50-seed mean
    assert claims.loc['tab8-ds-mean'].paper_sd == '0.613' and claims.loc['tab8-llc-mean'].paper_sd == '0.174'


def _posterior(tmp_path, rows, flagged, claims=None):
    "A compact moons-posterior result at the paper's protocol (every net converged) whose LLC row flags `flagged` of 500."
    folder = tmp_path / 'compact/moons-posterior/full'
    folder.mkdir(parents=True)
    prov = json.loads((COMPACT / 'moons-posterior/full/provenance.json').read_text())
    (folder / 'provenance.json').write_text(json.dumps(prov))
    summary = read_table(COMPACT / 'moons-posterior/full/summary.csv').set_index('quantity')
    summary.loc['LLC (mean over analysed nets, LLC > 0)', 'note'] = f'0 nets with LLC ≤ 0; {flagged} flagged by the diagnostics'
    summary.loc['nets passing the convergence criterion', 'value'] = 500            # App. G.4's nets: all converged
    for q, v in rows.items():
        summary.loc[q, ['value', 'ci_low', 'ci_high']] = v
    write_table(summary.reset_index(), folder / 'summary.csv')
    return ledger_rows(folder, claims).set_index('claim_id')


def test_a_row_flagged_everywhere_is_never_decisive(tmp_path):
    kl = 'KL(Bayes‖Q) [nats], tempered SGD vs Bayes, ξ = 0.5'
    near = {kl: (0.009, 0.0088, 0.0092)}                   # table 2's 0.009: the rule alone says reproduced
    # tab2-kl is a ratio of LLCs, never decisive while no second nβ reading is measured (below); to see the flag
    # alone, read it as a number that scales with the LLC, at a result whose two readings agree
    scaled = read_claims()
    scaled.loc['tab2-kl', 'llc'] = 'llc-scaled'
    agree = {SYSTEMATIC + 'paper (along training)': (1.0, 1.0, 1.0), SYSTEMATIC + 'other': (1.0, 1.0, 1.0)}
    every = _posterior(tmp_path / 'a', {**near, **agree}, flagged=500, claims=scaled)
    assert every.rule['tab2-kl'] == 'reproduced' and every.verdict['tab2-kl'] == 'inconclusive'
    assert every.note['tab2-kl'].startswith('NOT DECISIVE (all 500 LLC estimates flagged by their diagnostics)')
    some = _posterior(tmp_path / 'b', {**near, **agree}, flagged=499, claims=scaled)
    assert some.verdict['tab2-kl'] == 'reproduced'
    ratio = _posterior(tmp_path / 'c', near, flagged=499)
    assert ratio.rule['tab2-kl'] == 'reproduced' and ratio.verdict['tab2-kl'] == 'inconclusive'
    assert 'is not measured at this model' in ratio.note['tab2-kl']
    # a row that does not involve the LLC keeps its verdict either way
    assert every.verdict['fig4b-sgd-prefers-c1'] == some.verdict['fig4b-sgd-prefers-c1']
    # every row that involves the LLC states nβ
    llc_rows = read_claims().query('study == "moons-posterior" and llc != "" and configs == ""').claim_id   # full's
    assert every.loc[llc_rows].note.str.contains('nβ = n/ln n').all()


def test_llc_rows_carry_the_estimators_systematic_spread():
    led = read_ledger().set_index(['claim_id', 'source'])
    lam = led.loc[('tab8-llc-mean', 'compact/mnist-seeds/full')]
    # bootstrap [32.17, 33.09], widened by the readings at the final weights (35.9, -96.6, -93.6, 30.6)
    assert round(lam.ci_low, 1) == -100.3 and round(lam.ci_high, 2) == 33.09 and lam.verdict == 'inconclusive'
    assert 'sampling interval [32.17, 33.09]' in lam.note and 'nβ = 256/ln 256' in lam.note
    # a result that measures no spread cannot decide an LLC row, and says so
    arch = led.loc[('tab7-mlp-118016-llc', 'compact/mnist-architectures/quick')]
    assert "systematic uncertainty is not measured at this model" in arch.note
    # every LLC row states nβ
    claims = read_claims()
    involved = led.reset_index().claim_id.map(claims.llc) != ''
    numbered = led.reset_index().value.notna()
    assert led.reset_index()[involved & numbered].note.str.contains('nβ').all()


def test_rows_that_cannot_answer_their_claim_are_not_decisive():
    led = read_ledger().set_index(['claim_id', 'source'])
    # fig. 1 at paper scale would hold by construction: t_c is placed where the slope falls below 1/2
    full = led.loc[('fig1-late-1000ep', 'compact/moons-posterior/custom-868ac1f091f488d1')]
    assert full.scale == 'longer than the paper: epochs 1,000 of 200' and full.rule == 'not reproduced'
    # half a decade cannot decide a late exponent (the decade rule)
    assert full.verdict == 'inconclusive' and full.note.startswith('NOT DECISIVE (DECADE RULE: read over 0.50 decades')
    assert round(full.value, 3) == 0.542 and round(full.ci_low, 3) == 0.540 and round(full.ci_high, 3) == 0.545
    assert led.loc[('fig1-late', 'compact/moons-diffusion/quick')].verdict != 'reproduced'
    # a result longer than the paper only answers the claims written about it: fig. 1's late phase and, since
    # App. G.4 keeps converged nets only, the seven posterior claims
    posterior = {'fig3-xi', 'fig4a-low-llc', 'fig4b-sgd-prefers-c1', 'fig4b-tempered-agrees', 'tab2-kl', 'tab2-wasserstein',
                 'tab2-js'}
    assert set(led.reset_index().query('source.str.contains("custom-868ac")').claim_id) == {'fig1-late-1000ep'} | posterior
    # a grid-edge argmin is a bound; tab2's Wasserstein has no stated ground metric; four nets are few points
    xi = led.loc[('fig3-xi', 'compact/moons-posterior/custom-868ac1f091f488d1')]
    assert xi.verdict == 'inconclusive' and xi.note.startswith('NOT DECISIVE (≥ 2, grid edge')
    assert ledger_table().set_index('claim').ours['fig3-xi'] == '≥ 2, grid edge'
    assert led.loc[('fig3-xi', 'compact/moons-posterior/full')].note.startswith('NOT AT PAPER SCALE (reduced; also ≤ 0.05, grid edge')
    assert 'ground metric' in led.loc[('tab2-wasserstein', 'compact/moons-posterior/full')].note
    assert 'FEW POINTS: an interval from 4 points' in led.loc[('fig11-mnist', 'compact/mnist-ablations/quick')].note
    # qualitative rows with a statistic are bounds now, with their caveats
    claims = read_claims()
    assert (claims.loc[['fig4a-low-llc', 'fig4b-sgd-prefers-c1', 'fig4b-tempered-agrees'], 'kind'] == 'below').all()
    assert claims.loc['fig18-r2', 'kind'] == 'above'
    tempered = led.loc[('fig4b-tempered-agrees', 'compact/moons-posterior/full')]
    assert tempered.rule == 'not reproduced'           # +0.039 [+0.011, +0.069]: tempering moves SGD away
    assert "largest cluster by construction" in led.loc[('fig4b-sgd-prefers-c1', 'compact/moons-posterior/full')].note
    # the bound rows say what they measure, and the duplicate says it is one
    assert all(claims.loc[c, 'claim'].startswith(('MNIST seeds: whole-run eq.-17 slope', 'table'))
               for c in ('fig2a-ds-le-llc', 'tab7-ds-le-llc', 'tab8-ds-le-llc', 'tab1-ds-le-llc'))
    assert claims.loc['tab8-ds-le-llc', 'caveat'].startswith('SAME MEASUREMENT as fig2a-ds-le-llc')


def test_verdicts_by_scale_counts_every_claim_once():
    from fracsgd.ledger.table import verdicts_by_scale
    counts = verdicts_by_scale()
    assert counts.claims.sum() == len(read_claims())
    decisive = counts.reindex(columns=list(DECISIVE), fill_value=0).sum(axis=1)
    assert set(decisive[decisive > 0].index) <= {'paper protocol', 'longer than the paper'}
    assert (counts.loc['no number'].drop('claims') == 0).drop('not run yet').all()


def test_a_stand_in_run_of_a_preset_is_filed_under_that_preset(tmp_path):
    # A `--quick --stand-in` folder holds the runs of the quick preset with its stand-in applied: its label is
    # quick-stand-in (the committed CIFAR-10 result), not custom-<hash>.
    from fracsgd.ledger.provenance import study_configuration, mark_stand_in
    from fracsgd.studies import get_study
    study = get_study('cifar10')
    cfg = study.with_stand_in(study.config('quick'))
    folder = tmp_path / 'cifar'
    open_study(folder, 'cifar10', fields=dict(preset='quick'))
    runs = unique_runs(study.runs(cfg))
    save_plan(folder, runs)
    for key, run in runs.items():
        save_run(folder, key, config_record(run), {})
    mark_stand_in(folder, study.stand_in(cfg))
    got = study_configuration(folder)
    assert got['config'] == 'quick-stand-in', got
    committed = json.loads((COMPACT / 'cifar10' / 'quick-stand-in' / 'provenance.json').read_text())
    assert got['config_hash'] == committed['config_hash']


def test_two_custom_results_of_one_claim_both_stay(tmp_path):
    # two presets other than quick/full both read 'custom' in the config column; recording the second must not
    # delete the first one's rows (it did, when rows were keyed by claim and config label)
    claims = read_claims().reset_index(drop=True)
    claims.loc[claims.claim_id == 'fig1-early', 'configs'] = 'moons-diffusion/long moons-diffusion/smoke'
    claims_csv = tmp_path / 'claims.csv'
    write_table(claims, claims_csv)
    kw = dict(ledger=tmp_path / 'ledger.csv', compact_dir=tmp_path / 'compact', claims=claims_csv)
    record_claims(_study(tmp_path / 'long', GOOD, preset='long'), **kw)
    both = record_claims(_study(tmp_path / 'smoke', GOOD, preset='smoke'), **kw)
    early = both[both.claim_id == 'fig1-early']
    assert len(early) == 2 and (early.config == 'custom').all() and early.source.nunique() == 2
