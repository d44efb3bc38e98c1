"""The moons posterior study: both stages run through the runner (on the CPU in float64, so that anything built
behind the runner's back fails) and resume, the run keys of the committed results stay, the report works from the
folder's tables alone, the analysis agrees with numbers nobody chose, and bad input is refused with a clear error."""
import contextlib, io, json, shutil

import numpy as np
import pandas as pd
import pytest
import torch

import fracsgd.studies.moons_posterior as study
from fracsgd.posterior.clusters import cluster_masses
from fracsgd.ledger.provenance import COMPACT
from fracsgd.experiment.runner import report_study, run_study
from fracsgd.experiment.store import load_study, read_meta, status
from fracsgd.experiment.sweep import run_key, unique_runs
from fracsgd.posterior.tempering import tempered_masses, kl_divergence, xi_scan

SMOKE, STUDY = study.SMOKE, study.STUDY
torch.set_num_threads(1)   # forking the sweep's workers after multi-threaded torch work in this process can hang them


def _quiet(f, *a, **kw):
    with contextlib.redirect_stdout(io.StringIO()) as out:
        res = f(*a, **kw)
    return res, out.getvalue()


def _run(folder, **kw):
    "The smoke preset through the runner, on the CPU in float64."
    return run_study(STUDY, 'smoke', folder, device='cpu', dtype='float64', progress=False, workers=1, **kw)


@pytest.fixture(scope='module')
def finished(tmp_path_factory):
    folder = tmp_path_factory.mktemp('posterior')
    res, _ = _quiet(_run, folder)
    return folder, res


def test_smoke_preset_runs_through_the_runner_in_float64(finished):
    folder, res = finished
    assert res['counts'] == dict(done=2, failed=0, skipped=0) and status(folder)['done'] == 2
    assert read_meta(folder)['preset'] == 'smoke' and read_meta(folder)['placement']['dtype'] == 'float64'
    assert res['summary'].set_index('quantity').value['nets trained'] == SMOKE.n_models
    assert not list((folder / 'trained').glob('*.pt'))               # trained state deleted once the runs are stored
    # the nets were trained and evaluated where the runner placed them, stage 2 too: float64 weights and chains
    assert load_study(folder).tables['weights'].w[0].dtype == np.float64
    assert json.loads((folder / 'chains.json').read_text())['seconds'] > 0


@pytest.mark.parametrize('provenance', sorted((COMPACT / 'moons-posterior').glob('*/provenance.json')),
                         ids=lambda p: p.parent.name)
def test_run_keys_of_the_committed_results_stay(provenance):
    committed = json.loads(provenance.read_text())
    preset = committed.get('preset', committed['config'])                  # a custom folder names its preset
    assert preset in STUDY.presets, committed
    assert sorted(unique_runs(STUDY.runs(STUDY.config(preset)))) == committed['run_keys']


def test_committed_results_exist_for_quick_and_full():
    assert {'quick', 'full'} <= {p.parent.name for p in (COMPACT / 'moons-posterior').glob('*/provenance.json')}


def test_run_writes_tables_figures_and_resumes(finished):
    folder, res = finished
    written = {p.name for p in folder.iterdir()}
    assert {'summary.csv', 'scan.csv', 'solutions.csv', 'masses.csv', 'timing.csv', 'fig3.png', 'fig4.png',
            'chains.parquet', 'chains.json', 'wall.json'} <= written, written
    # a rerun trains nothing and samples no chain again: stage 2's inputs are unchanged
    before = (folder / 'chains.parquet').stat().st_mtime_ns
    again, _ = _quiet(_run, folder, report=False)
    assert again['counts'] == dict(done=0, failed=0, skipped=2)
    assert (folder / 'chains.parquet').stat().st_mtime_ns == before


def test_a_killed_run_is_redone_and_gives_the_same_tables(finished, tmp_path):
    folder, _ = finished
    copy = tmp_path / 'copy'
    shutil.copytree(folder, copy)
    lost = run_key(study.STUDY.runs(SMOKE)[1])                        # as if this run had been killed before storing
    shutil.rmtree(copy / 'runs' / lost)
    (copy / 'chains.json').unlink()                             # and stage 2 had not finished
    with pytest.raises(ValueError, match='1 pending'):
        STUDY.finish(copy, SMOKE)
    again, _ = _quiet(_run, copy, report=False)                 # redoes the run, then stage 2
    assert again['counts'] == dict(done=1, failed=0, skipped=1)
    old, new = load_study(folder).tables['solutions'], load_study(copy).tables['solutions']
    pd.testing.assert_frame_equal(old.drop(columns='key').sort_values('net').reset_index(drop=True),
                                  new.drop(columns='key').sort_values('net').reset_index(drop=True))
    a, b = pd.read_parquet(folder / 'chains.parquet'), pd.read_parquet(copy / 'chains.parquet')
    pd.testing.assert_frame_equal(a, b)                          # same seeds, same chains


def test_report_reads_the_folder_alone(finished):
    folder, res = finished
    again = study.STUDY.report(folder, SMOKE)
    pd.testing.assert_frame_equal(again['summary'], res['summary'])
    pd.testing.assert_frame_equal(report_study(folder)['summary'], res['summary'])   # its configuration from meta.json
    tables = study.read_results(folder)
    pd.testing.assert_frame_equal(tables['summary'], pd.read_csv(folder / 'summary.csv'))
    # the per-net table holds every net once, with its cluster for the analysed ones
    sol = tables['solutions']
    assert sorted(sol.net) == list(range(SMOKE.n_models))
    assert (sol.cluster[sol.analysed] >= 0).all()


def test_analysis_agrees_with_numbers_nobody_chose(finished):
    folder, res = finished
    k, p_sgd, p_post = res['k'], res['p_sgd'], res['p_post']
    # the SGD masses are the cluster fractions of the analysed nets; the masses table holds them as they are
    assert np.allclose(p_sgd, cluster_masses(res['labels'], k)) and np.isclose(p_sgd.sum(), 1)
    assert np.allclose(res['masses'].SGD, p_sgd) and np.allclose(res['masses']['posterior (SGLD)'], p_post)
    # ξ = 1 makes D_ξ = 1 for every choice: tempering with m = 1 gives the SGD masses exactly, so the scan's
    # KL(Bayes‖tempered SGD) at ξ = 1 is KL(Bayes‖SGD), the raw-SGD baseline of table 2
    scan = res['scan']
    at1 = scan[(scan.xi == 1.0) & (scan.m == 1) & (scan.comparison == 'tempered')]
    assert len(at1) == len(res['choices']) and np.allclose(at1.D_xi, 1)
    assert np.allclose(at1['KL(Bayes‖tempered SGD) [nats]'], kl_divergence(p_post, p_sgd))
    for kw in res['choices'].values():
        assert np.allclose(tempered_masses(p_sgd, 1.0, 1, **kw), p_sgd)
    raw = res['table2'].set_index(['comparison', 'metric']).value
    assert np.isclose(raw[('Q = raw SGD', 'KL(Bayes‖Q) [nats]')], kl_divergence(p_post, p_sgd))
    # identical distributions are at distance 0 on every metric
    same = xi_scan(p_sgd, p_sgd, [1.0], slope=0.3)
    assert np.allclose(same.drop(columns=['xi', 'D_xi']).to_numpy(float), 0)


def test_bayes_accuracy_of_the_moons_distribution():
    # the Bayes rule of make_moons: 97% on noise 0.2 (the moons overlap; 20 000 points, seed 1, ± 0.5% covers the
    # sampling error of a 3% error rate), 100% with almost no noise
    X, y, _ = study.load_moons(20000, 0.2, seed=1)
    assert abs(study.bayes_accuracy(X, y, 0.2) - 0.97) < 0.005
    X, y, _ = study.load_moons(500, 0.01, seed=2)
    assert study.bayes_accuracy(X, y, 0.01) == 1.0


def test_convergence_criterion_and_fallback_to_all_nets():
    sol = pd.DataFrame({'net': [0, 1, 2], 'accuracy': [0.96, 0.90, 0.955], 'loss': [.1, .3, .1]})
    epochs = pd.DataFrame({'net': np.repeat([0, 1, 2], 4), 'epoch': np.tile([1, 2, 3, 4], 3),
                           'loss': [4, 4, 2, 2, 1, 1, 1, 1, 3, 3, 3, 3.]})
    cfg = study.replace(SMOKE, loss_window=2, accuracy_gap=0.02, min_kept=2)
    out = study.convergence(sol, epochs, cfg, bayes=0.97)
    assert out.converged.tolist() == [True, False, True] and out.analysed.tolist() == [True, False, True]
    assert np.allclose(out.loss_drop, [1.0, 0.0, 0.0])             # (mean of epochs 1-2 − of 3-4) / of 3-4
    few = study.convergence(sol, epochs, study.replace(cfg, min_kept=3), bayes=0.97)
    assert few.analysed.all()                                     # too few pass: all nets analysed


def test_bad_input_is_refused(tmp_path, finished):
    folder, _ = finished
    with pytest.raises(ValueError, match='noise > 0'):
        study.bayes_accuracy(np.zeros((2, 2)), [0, 1], 0.0)
    with pytest.raises(ValueError, match='no posterior chains'):
        empty = tmp_path / 'no-chains'
        shutil.copytree(folder, empty)
        (empty / 'chains.parquet').unlink()
        study.STUDY.report(empty, SMOKE)
    with pytest.raises(ValueError, match='has no summary.csv'):
        study.read_results(tmp_path)
    other = tmp_path / 'other'
    other.mkdir()
    (other / 'meta.json').write_text(json.dumps({'study': 'moons-diffusion', 'sessions': []}))
    with pytest.raises(ValueError, match="holds study 'moons-diffusion'"):
        STUDY.finish(other, SMOKE)


def test_reference_chains_start_in_every_cluster_and_report_their_mixing(finished, tmp_path):
    # The smoke-reference preset trains what smoke trains (same run keys), so its stage 2 and report run on a copy
    # of the finished smoke folder: chains from the nets nearest every cluster's centre (k by the stable rule),
    # their mixing in the summary, and the by-k table for every k tried and both m.
    folder, _ = finished
    ref = study.SMOKE_REFERENCE
    assert sorted(unique_runs(STUDY.runs(ref))) == sorted(unique_runs(STUDY.runs(SMOKE)))
    copy = tmp_path / 'reference'
    shutil.copytree(folder, copy)
    done = STUDY.finish(copy, ref)
    assert all(name.startswith('C') and ' #' in name for name in done['seeds'])
    res = study.STUDY.report(copy, ref)
    s = res['summary'].set_index('quantity')
    k = int(s.value[[q for q in s.index if q.startswith('clusters k (rule: stable)')][0]])
    chains = res['tables']['chains']
    assert s.value['posterior chains'] == len(chains) == len(done['seeds'])
    assert set(chains.start_cluster) == set(range(k))                      # every cluster has a chain
    assert s.value['posterior chains that never leave their start cluster'] == (chains.transitions == 0).sum()
    stuck = (chains.transitions == 0).any()
    assert ('NOT ESTIMABLE' in s.note['posterior mass of cluster C1']) == stuck
    by_k = res['tables']['by_k']
    assert set(zip(by_k.k, by_k.m)) == {(kk, m) for kk in ref.ks for m in (1, ref.n_samples)}
    assert {f'ξ minimising KL(SGD‖theoretical SGD), m = n = {ref.n_samples}',
            'split R-hat, cluster indicators (max over clusters)'} <= set(s.index)
    assert (copy / 'by_k.csv').exists()


def test_the_out_of_sample_xi_is_the_one_chosen_on_the_other_data_seed():
    # reference-test differs from reference only in its data seed and in the ξ it is given, which must be the ξ*
    # (m = 1, then m = n) of reference's committed result: chosen there, tested on data it never saw.
    import dataclasses
    ref, test = study.REFERENCE, study.REFERENCE_TEST
    assert dataclasses.replace(test, data_seed=ref.data_seed, xi_out_of_sample=()) == ref and test.data_seed != ref.data_seed
    committed = [json.loads(p.read_text()) for p in (COMPACT / 'moons-posterior').glob('*/provenance.json')]
    folder = next(p.parent for p, c in zip((COMPACT / 'moons-posterior').glob('*/provenance.json'), committed)
                  if c.get('preset') == 'reference')
    s = pd.read_csv(folder / 'summary.csv').set_index('quantity').value
    assert test.xi_out_of_sample == (s['ξ minimising KL(SGD‖theoretical SGD)'],
                                     s[f'ξ minimising KL(SGD‖theoretical SGD), m = n = {ref.n_samples}'])
