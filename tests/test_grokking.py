"""The grokking study's pieces: the modular tables, the jump detector on curves with known jumps (many seeds and
shapes), the coverage of the Hill interval, bad input, the study end to end on its smoke configuration through the
runner (on the CPU in float64), and the run keys of its committed results."""
import json, math

import numpy as np
import pytest
import torch

from fracsgd.datasets.modular import is_prime, load_modular, operation_table
from fracsgd.diffusion.jumps import detect_jumps, fits_between_jumps, rate_correlation, step_statistics, _hill
from fracsgd.ledger.provenance import COMPACT
from fracsgd.experiment.runner import run_one, run_study
from fracsgd.studies import get_study
from fracsgd.placement import placement
from fracsgd.studies import grokking as G
from fracsgd.experiment.sweep import unique_runs

torch.set_num_threads(1)


def curve(jumps=(), n=3000, slope=0.3, noise=0.005, seed=0, size=1.0):
    rng = np.random.default_rng(seed)
    t = np.arange(1, n + 1, dtype=float)
    return t, t ** slope * (1 + noise * rng.standard_normal(n)) + sum(size * (t >= j) for j in jumps)

def sized(jumps, slope, factor, noise=0.005):
    "A jump size of `factor` noise standard deviations at the first jump (the detector sees changes, sd √2 × that)."
    return factor * noise * jumps[0] ** slope


@pytest.mark.parametrize('slope,factor', [(0.2, 12), (0.5, 12), (0.8, 15)])
def test_detector_finds_planted_jumps_and_nothing_else(slope, factor):
    for seed in range(20):
        t, y = curve((700, 2100), slope=slope, size=sized((2100,), slope, factor), seed=seed)
        assert detect_jumps(t, y).time.tolist() == [700, 2100], (seed, slope)
        assert detect_jumps(*curve(slope=slope, seed=seed)).empty, (seed, slope)


def test_detector_on_plateaus_and_walks():
    t = np.arange(0, 3000, 10, dtype=float)
    acc = np.where(t < 1500, 0.02, 1.0)                       # an accuracy that steps from chance to 1
    found = detect_jumps(t, acc, window=5, min_size=0.1, scale_window=10)
    assert len(found) == 1 and 1450 <= found.time.item() <= 1500
    assert detect_jumps(t, np.full_like(t, 0.5), min_size=0.1).empty
    for seed in range(10):
        walk = np.cumsum(np.random.default_rng(seed).standard_normal(3000))
        assert detect_jumps(np.arange(3000.), walk).empty


def test_hill_interval_covers_the_tail_index():
    rng, mu, hits = np.random.default_rng(0), 1.5, 0
    for _ in range(200):
        x = rng.pareto(mu, 4000) + 1                          # exact Pareto tail with index mu
        _, lo, hi, _ = _hill(x, 0.02)
        hits += lo <= mu <= hi
    assert hits / 200 >= 0.9


def test_fits_between_jumps_recover_slopes():
    t, y = curve((1000,), slope=0.4, size=1.0, seed=3)
    fits = fits_between_jumps(t, y, detect_jumps(t, y), n_boot=50)
    assert len(fits) == 2 and abs(fits.slope[0] - 0.4) < 0.02


@pytest.mark.parametrize('call,words', [
    (lambda: load_modular(51, 'division'), 'prime'),
    (lambda: load_modular(53, train_fraction=0), 'between 0 and 1'),
    (lambda: load_modular(53, train_fraction=1.5), 'between 0 and 1'),
    (lambda: load_modular(53, 'multiplication'), 'unknown operation'),
    (lambda: operation_table(2.5), 'integer'),
    (lambda: detect_jumps([1, 2, 3], [1, 2]), 'same length'),
    (lambda: detect_jumps([1, 3, 2], [1, 2, 3]), 'strictly increasing'),
    (lambda: detect_jumps([1, 2, 3], [1, np.nan, 3]), 'finite'),
    (lambda: detect_jumps(np.arange(10.), np.arange(10.), window=0), 'window'),
    (lambda: step_statistics(np.ones(50)), 'at least 200'),
    (lambda: rate_correlation(np.arange(1., 10), np.arange(1., 10), [1., 2], [1., 2]), 'at least 5'),
    (lambda: G.make_model('cnn', 7, 8, 8, 0), 'unknown model'),
    (lambda: G.STUDY.runs(G.GrokkingConfig(n_steps=None, epochs=None)), 'exactly one'),
])
def test_bad_input(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_bad_optimizer():
    run = G.STUDY.runs(G.SMOKE)[0]
    with pytest.raises(ValueError, match='unknown optimizer'):
        G._optimizer(G.replace(run, optimizer='lbfgs'), G.make_model('mlp', 11, 4, 4, 0).parameters())


def test_full_is_the_papers_length():
    r = {(x.batch_size, x.weight_decay, x.seed): x for x in G.STUDY.runs(G.FULL)}
    n_train = round(0.4 * 53 * 52)
    assert r[(16, 1.0, 0)].n_steps == 10_000 * math.ceil(n_train / 16)
    assert G.FULL.p == 53 and G.FULL.operation == 'division' and G.FULL.optimizer == 'adamw'
    assert is_prime(G.FULL.p)


def test_study_end_to_end_in_float64(tmp_path):
    "The smoke preset through the runner and the report, on the CPU in float64 (about 15 s on an idle core)."
    assert get_study('grokking') is G.STUDY
    res = run_study(G.STUDY, 'smoke', tmp_path / 'smoke', device='cpu', dtype='float64', progress=False, workers=1)
    assert res['counts'] == dict(done=1, failed=0, skipped=0) and res['preset'] == 'smoke'
    s = res['summary'].dropna(subset=['value'])
    assert len(s) > 10 and (s.ci_low <= s.value).all() and (s.value <= s.ci_high).all()
    for name in ('summary.csv', 'reference.png', 'sweep.png', *G.STUDY.keep):
        assert (tmp_path / 'smoke' / name).exists()
    assert len(res['per_run']) == 1


COMMITTED = sorted((COMPACT / 'grokking').glob('*/provenance.json'))

def test_committed_results_exist():
    assert [p.parent.name for p in COMMITTED] == ['quick']

@pytest.mark.parametrize('provenance', COMMITTED, ids=lambda p: p.parent.name)
def test_committed_run_keys(provenance):
    "The preset that made a committed result still has its runs' keys (the runner's runs have no device field)."
    prov = json.loads(provenance.read_text())
    cfg = G.STUDY.config(prov['config'])
    assert sorted(unique_runs(G.STUDY.runs(cfg))) == prov['run_keys']
    assert G.STUDY.stand_in(cfg) == prov['stand_in'] == ''


@pytest.mark.parametrize('changes,layers', [
    (dict(model='transformer'), {'pos', 'emb', 'qkv', 'proj', 'fc1', 'fc2', 'out'}),
    (dict(optimizer='sgd', lr=0.1), {'emb', 'fc1', 'fc2', 'out'}),
])
def test_options_train(changes, layers, tmp_path):
    cfg = G.replace(G.SMOKE, n_steps=50, llc_every=50, **changes)
    tab = run_one(G.STUDY, placement('cpu'), tmp_path, G.STUDY.runs(cfg)[0])['trajectory']
    assert {c[2:] for c in tab if c.startswith('R/')} == layers
    assert tab['llc/llc'].notna().sum() == 1 and tab['acc/test'].notna().sum() == 50 // cfg.acc_every
