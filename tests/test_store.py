"""The results store: one folder per study, written whole or not at all, read back by `load_study`."""
import json, os

import numpy as np
import pandas as pd
import pytest
import torch

import fracsgd
from fracsgd.experiment.store import (NotAStudy, StudyMismatch, done_keys, failed_keys, load_study, open_study,
                           read_meta, runs_table, save_error, save_plan, save_run, split_result, status, tidy)

ERR = dict(type='RuntimeError', message='nan loss', traceback='Traceback (most recent call last): ...')


def traj(x):
    return pd.DataFrame({'step': [0, 10, 20], 'R': [0.0, x, 2 * x]})


def test_meta_records_where_results_came_from(tmp_path):
    open_study(tmp_path / 's', 'moons', device='cpu')
    meta = read_meta(tmp_path / 's')
    session = meta['sessions'][0]
    assert meta['study'] == 'moons' and session['fracsgd'] == fracsgd.__version__
    assert session['torch'] == torch.__version__ and session['device'] == 'cpu'
    assert session['git_commit'] is None or len(session['git_commit']) == 40
    open_study(tmp_path / 's', 'moons')
    assert len(read_meta(tmp_path / 's')['sessions']) == 2


def test_refuses_other_folders(tmp_path):
    open_study(tmp_path / 's', 'a')
    with pytest.raises(StudyMismatch, match=r"holds results of study 'a', not 'b'"):
        open_study(tmp_path / 's', 'b')
    (tmp_path / 'stuff').mkdir()
    (tmp_path / 'stuff' / 'notes.txt').write_text('mine')
    with pytest.raises(NotAStudy, match='not empty and is not a study folder'):
        open_study(tmp_path / 'stuff', 'a')
    (tmp_path / 's' / 'meta.json').write_text('{half')
    with pytest.raises(NotAStudy, match='not a readable study folder'):
        load_study(tmp_path / 's')
    assert issubclass(StudyMismatch, ValueError) and issubclass(NotAStudy, ValueError)


def test_split_result():
    metrics, tables = split_result(dict(a=1, b=np.float64(2.5), c=torch.tensor([3.0]), d=None, e='x',
                                        trajectory=traj(1.0)))
    assert metrics == dict(a=1, b=2.5, c=3.0, d=None, e='x') and list(tables) == ['trajectory']
    for bad, err in [(dict(w=torch.zeros(2)), TypeError), (dict(seed=1), ValueError),
                     (dict(key=1), ValueError), ({'../up': traj(1.0)}, ValueError), (3.0, TypeError)]:
        with pytest.raises(err):
            split_result(bad, config_fields=['seed'])


def test_partial_writes_are_never_read(tmp_path):
    f = open_study(tmp_path / 's', 'a')
    save_plan(f, ['k1', 'k2', 'k3'])
    save_run(f, 'k1', dict(lr=0.1), dict(loss=0.5, trajectory=traj(1.0)))
    half = f / 'runs' / '.k2.abc123'                  # what a kill during save_run leaves behind
    half.mkdir()
    (half / 'trajectory.parquet').write_bytes(b'PAR1 truncated')
    (f / 'errors').mkdir()
    (f / 'errors' / '.k3.json.x.tmp').write_text('{"key": "k3", "ty')
    assert done_keys(f) == ['k1'] and failed_keys(f) == []
    assert status(f) == dict(done=1, failed=0, pending=2)
    study = load_study(f)
    assert list(study.runs.key) == ['k1'] and set(study.trajectories.key) == {'k1'}
    assert tidy(f) == 2 and sorted(p.name for p in (f / 'runs').iterdir()) == ['k1']


def test_failed_then_done(tmp_path):
    f = open_study(tmp_path / 's', 'a')
    save_plan(f, ['k1'])
    save_error(f, 'k1', dict(lr=0.1), ERR, seconds=0.2)
    assert runs_table(f).to_dict('records') == [dict(key='k1', status='failed', lr=0.1, seconds=0.2,
                                                     error='RuntimeError: nan loss')]
    save_run(f, 'k1', dict(lr=0.1), dict(loss=0.5), seconds=1.0)
    assert failed_keys(f) == [] and list(runs_table(f).status) == ['done']
    assert not (f / 'errors' / 'k1.json').exists()


def test_load_study_one_call(tmp_path):
    f = open_study(tmp_path / 's', 'a')
    save_plan(f, ['k2', 'k1'])
    for k, x in [('k1', 1.0), ('k2', 2.0)]:
        save_run(f, k, dict(x=x, hidden=[4, 4]), dict(final=2 * x, trajectory=traj(x), grads=traj(-x)))
    study = load_study(f)
    assert list(study.runs.columns) == ['key', 'status', 'x', 'hidden', 'final', 'seconds', 'error']
    assert list(study.runs.key) == ['k2', 'k1'] and study.runs.hidden.tolist() == [[4, 4], [4, 4]]
    assert set(study.tables) == {'trajectory', 'grads'}
    assert list(study.trajectories.columns) == ['key', 'step', 'R'] and len(study.trajectories) == 6
    assert study.meta['study'] == 'a' and study.name == 'a'
    on_disk = pd.read_parquet(f / 'runs.parquet')
    assert on_disk.key.tolist() == ['k2', 'k1'] and on_disk.final.tolist() == [4.0, 2.0]


def test_runs_parquet_is_rebuilt_when_stale(tmp_path):
    f = open_study(tmp_path / 's', 'a')
    save_plan(f, ['k1', 'k2'])
    save_run(f, 'k1', dict(x=1), dict(y=1))
    load_study(f)
    save_run(f, 'k2', dict(x=2), dict(y=4))              # as if a sweep was killed before writing the table
    assert pd.read_parquet(f / 'runs.parquet').key.tolist() == ['k1']
    assert load_study(f).runs.key.tolist() == ['k1', 'k2']
    assert pd.read_parquet(f / 'runs.parquet').key.tolist() == ['k1', 'k2']


def test_old_plans_stay_out_of_the_table(tmp_path):
    f = open_study(tmp_path / 's', 'a')
    save_plan(f, ['old'])
    save_run(f, 'old', dict(lr=0.1), dict(y=1))
    save_plan(f, ['new'])
    save_error(f, 'new', dict(lr=0.2), ERR)
    assert load_study(f).runs.key.tolist() == ['new']
    assert load_study(f, everything=True).runs.key.tolist() == ['new', 'old']
    assert status(f) == dict(done=0, failed=1, pending=0)
    os.remove(f / 'plan.json')                       # a folder without a plan: counts from the folder alone
    assert status(f) == dict(done=1, failed=1, pending=0)


def test_empty_study(tmp_path):
    f = open_study(tmp_path / 's', 'a')
    study = load_study(f)
    assert len(study.runs) == 0 and len(study.trajectories) == 0 and 'key' in study.runs
    assert status(f) == dict(done=0, failed=0, pending=0)
    assert json.loads((f / 'meta.json').read_text())['study'] == 'a'
