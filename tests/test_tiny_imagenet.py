"""Tiny ImageNet: the reader on a fake tree in the official layout, its errors, the study's pieces on known
answers, the command line without the dataset, the smoke preset through the runner in float64, the run keys of the
committed results, and the LLC's memory not growing with the number of draws."""
import json, subprocess, sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from fracsgd.datasets.tiny_imagenet import (TINY_FOLDER, TINY_URL, TinyImageNetMissing, check_class_count,
                                            find_tiny_imagenet, load_tiny_imagenet, read_val_annotations,
                                            read_wnids, stand_in_images, write_fake_tiny_imagenet)
from fracsgd.nets.convnets import PretrainedWeightsMissing, build_net
from fracsgd.experiment.runner import run_one, run_study
from fracsgd.placement import placement
from fracsgd.studies import tiny_imagenet as ti
from fracsgd.experiment.sweep import unique_runs
from conftest import smoke_run_checks

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def fake(tmp_path):
    write_fake_tiny_imagenet(tmp_path, n_classes=3, per_class=4, n_val=2, size=64)
    return tmp_path


def test_reader_labels(fake):
    from torchvision.datasets import ImageFolder
    train = load_tiny_imagenet('train', fake, n_classes=3)
    val = load_tiny_imagenet('val', fake, n_classes=3, size=32)
    assert train.X.shape == (12, 3, 64, 64) and train.y.tolist() == [0] * 4 + [1] * 4 + [2] * 4
    assert val.X.shape == (6, 3, 32, 32) and val.y.tolist() == [0, 0, 1, 1, 2, 2]
    wnids = read_wnids(fake / TINY_FOLDER)
    assert [wnids.index(w) for _, w in sorted(read_val_annotations(fake / TINY_FOLDER).items())] == val.y.tolist()
    assert {t for _, t in ImageFolder(str(fake / TINY_FOLDER / 'val')).samples} == {0}   # what we do not do
    assert load_tiny_imagenet('train', fake, n_classes=2, per_class=1).y.tolist() == [0, 1]


def test_zip_is_unpacked(tmp_path):
    write_fake_tiny_imagenet(tmp_path, archive=True)
    assert not (tmp_path / TINY_FOLDER).exists()
    assert load_tiny_imagenet('val', tmp_path, n_classes=3).y.tolist() == [0, 0, 1, 1, 2, 2]


def _truncated(tmp_path):
    z = write_fake_tiny_imagenet(tmp_path, archive=True)
    z.write_bytes(z.read_bytes()[:z.stat().st_size // 2])
    return lambda: find_tiny_imagenet(tmp_path), str(z)

def _corrupt(tmp_path):
    write_fake_tiny_imagenet(tmp_path)
    bad = tmp_path / TINY_FOLDER / 'val' / 'images' / 'val_0.JPEG'
    bad.write_bytes(b'\xff\xd8 not really a jpeg')
    return lambda: load_tiny_imagenet('val', tmp_path, n_classes=3), str(bad)

def _bad_annotation(tmp_path):
    write_fake_tiny_imagenet(tmp_path)
    f = tmp_path / TINY_FOLDER / 'val' / 'val_annotations.txt'
    f.write_text(f.read_text() + 'val_99.JPEG\tn99999999\t0\t0\t1\t1\n')
    return lambda: load_tiny_imagenet('val', tmp_path, n_classes=3), 'n99999999'

@pytest.mark.parametrize('case, words', [
    (lambda p: (lambda: find_tiny_imagenet(p), ''), [TINY_URL, '--stand-in']),
    (_truncated, ['truncated or damaged']),
    (_corrupt, ['cannot read image']),
    (_bad_annotation, ['line 7', 'not in wnids.txt']),
    (lambda p: (write_fake_tiny_imagenet(p), (lambda: load_tiny_imagenet('train', p, n_classes=200), ''))[1],
     ['200 outputs', '3 classes']),
    (lambda p: (lambda: check_class_count(10, 200), ''), ['10 classes', '200 outputs']),
    (lambda p: (lambda: ti.TinyRun(arch='vgg16', image_size=16), ''), ['at least 32']),
    (lambda p: (lambda: ti.TinyRun(arch='alexnet'), ''), ['resnet18']),
    (lambda p: (lambda: stand_in_images(12, source='mnist'), ''), ['10 classes']),
])
def test_bad_input(tmp_path, case, words):
    fn, name = case(tmp_path)
    with pytest.raises((ValueError, OSError)) as e:
        fn()
    for w in words + ([name] if name else []):
        assert w in str(e.value), (w, str(e.value))


def test_weights_unreachable_says_what_to_do(monkeypatch):
    import torchvision.models
    def offline(name, weights=None, **kw):
        if weights is not None:
            raise OSError('<urlopen error [Errno -3] Temporary failure in name resolution>')
        return torchvision.models.resnet18()
    monkeypatch.setattr(torchvision.models, 'get_model', offline)
    with pytest.raises(PretrainedWeightsMissing, match='--stand-in'):
        build_net('resnet18', 'IMAGENET1K_V1')


def test_cli_without_dataset(tmp_path, monkeypatch, capsys):
    from fracsgd.cli import main
    monkeypatch.setenv('FRACSGD_DATA', str(tmp_path))
    assert main(['run', 'tiny-imagenet', '--out', str(tmp_path / 'out')]) == 2
    err = capsys.readouterr().err
    assert TINY_URL in err and '--stand-in' in err


def test_stopping_rule_and_modes(monkeypatch, tmp_path):
    assert not ti.stop_now([3.0, 2.0, 1.0]) and ti.stop_now([2.0, 1.00005, 1.00003, 1.00002, 1.00001])
    monkeypatch.setenv('FRACSGD_DATA', str(tmp_path))
    study = ti.STUDY
    assert study.config('quick') == ti.QUICK and study.config('full') == ti.FULL and not ti.QUICK.stand_in
    with pytest.raises(TinyImageNetMissing):                             # no dataset: named, before any training
        study.check_data(ti.QUICK)
    study.check_data(study.with_stand_in(ti.QUICK))                      # the stand-in needs no dataset
    assert study.stand_in(ti.QUICK) == '' and 'resnet18 trained 60 Adam steps' in study.stand_in(
        study.with_stand_in(ti.QUICK))
    write_fake_tiny_imagenet(tmp_path)
    study.check_data(ti.QUICK)


def _trajectory(alpha=0.25, head_slope=0.9, switch=50, steps=200, llc=10.0):
    t = np.arange(0, switch + steps + 1)
    R = np.where(t <= switch, 0.01 * t ** head_slope, 0.01 * switch ** head_slope * (t / switch) ** alpha)
    traj = pd.DataFrame(dict(step=t, R=R, R_switch=np.where(t > switch, 0.001 * np.maximum(t - switch, 1) ** 0.4,
                                                            np.nan)))
    traj['phase'] = np.where(t <= switch, 'adam-head', 'sgd')
    traj['llc'] = np.where((t >= switch) & ((t - switch) % 20 == 0), llc, np.nan)
    traj['llc_se'] = 0.1
    return traj

def test_analyse_run_known_answers():
    a = ti.analyse_run(_trajectory(), 'start', n_boot=20)
    assert abs(a['alpha'] - 0.25) < 1e-9 and abs(a['head_slope'] - 0.9) < 1e-9 and a['r2'] > 0.999
    assert a['llc'] == 10 and a['n_llc'] == 10 and abs(a['d_s'] - 2 * 10 * 0.25) < 1e-8
    assert a['d_s_lo'] <= a['d_s'] <= a['d_s_hi'] and a['switch'] == 50
    b = ti.analyse_run(_trajectory(), 'switch', n_boot=20)
    assert abs(b['alpha'] - 0.4) < 1e-9


def test_run_on_the_real_format(tmp_path, monkeypatch):
    "The study's run, end to end, on a fake Tiny ImageNet in the official layout (weights: the stand-in)."
    write_fake_tiny_imagenet(tmp_path, n_classes=3, per_class=4, n_val=2, size=64)
    monkeypatch.setenv('FRACSGD_DATA', str(tmp_path))
    run = ti.TinyRun(arch='resnet18', weights='scratch', n_classes=3, image_size=32, store_size=32, batch_size=4,
                     head_epochs=3, sgd_steps=4, llc_every=2, llc_draws=3, pretrain_steps=1, record_every=1)
    out = run_one(ti.STUDY, placement('cpu'), tmp_path / 'study', run)
    traj = out['trajectory']
    assert out['n_train'] == 12 and out['stand_in'].startswith('resnet18 trained 1 Adam steps')
    assert 'Tiny ImageNet (train)' in out['data_source'] and traj.llc.notna().sum() == 3
    assert set(traj.phase) == {'adam-head', 'sgd'} and traj.step.max() == out['switch_step'] + 4
    assert 0 <= out['test_accuracy'] <= 1 and np.isfinite(out['test_loss'])       # the study's evaluate


def test_smoke_through_the_runner_in_float64(tmp_path):
    "The smoke preset on the stand-in (no dataset, no downloaded weights), through the runner on the CPU in float64."
    res = run_study(ti.STUDY, 'smoke', tmp_path, stand_in=True, device='cpu', dtype='float64', progress=True, workers=1)
    assert res['counts'] == dict(done=1, failed=0, skipped=0), res['counts']
    smoke_run_checks(ti.STUDY, res)                     # as every study's (test_runner.py leaves this one to us)
    assert (tmp_path / 'summary.csv').exists() and len(res['summary']) == 7
    assert json.loads((tmp_path / 'meta.json').read_text())['stand_in'] == ti.STUDY.stand_in(
        ti.STUDY.with_stand_in(ti.SMOKE))


COMMITTED = sorted((ROOT / 'nbs' / 'ledger' / 'compact' / 'tiny-imagenet').glob('*/provenance.json'))

@pytest.mark.parametrize('prov', COMMITTED, ids=lambda p: p.parent.name)
def test_committed_run_keys(prov):
    "Each committed compact result's run keys (and its stand-in record) are those of the preset that made it."
    record = json.loads(prov.read_text())
    preset = prov.parent.name.removesuffix('-stand-in')
    assert not preset.startswith('custom-'), 'a custom configuration: add it here from the notebook that made it'
    cfg = ti.STUDY.config(preset)
    if record['stand_in']:
        cfg = ti.STUDY.with_stand_in(cfg)
    assert sorted(unique_runs(ti.STUDY.runs(cfg))) == record['run_keys']
    assert ti.STUDY.stand_in(cfg) == record['stand_in']


def test_committed_results_are_checked():
    assert [p.parent.name for p in COMMITTED] == ['quick-stand-in']


MEMORY = """
import json, resource, torch, warnings
torch.set_num_threads(1)
from fracsgd.nets.models import make_mlp
from fracsgd.llc.estimate import estimate_llc
from fracsgd.llc.settings import PAPER_PRESET
net = make_mlp([1000, 2000, 2000, 10], seed=0)            # 6 million weights: 24 MB a copy
X, y = torch.randn(64, 1000), torch.arange(64) % 10
with warnings.catch_warnings():
    warnings.simplefilter('ignore')
    estimate_llc(net, (X, y), 'classification', PAPER_PRESET.replace(n_draws={n}, batch_size=32), device='cpu')
print(json.dumps(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
"""

def test_llc_memory_does_not_grow_with_draws():
    "One copy of the weights per draw would add 24 MB a draw: 50 more draws must add less than 4 copies."
    peak = {}
    for n in (10, 60):
        out = subprocess.run([sys.executable, '-c', MEMORY.format(n=n)], capture_output=True, text=True,
                             timeout=300, cwd=ROOT)
        assert out.returncode == 0, out.stderr[-2000:]
        peak[n] = json.loads(out.stdout.strip().splitlines()[-1])
    assert peak[60] - peak[10] < 4 * 24, peak
