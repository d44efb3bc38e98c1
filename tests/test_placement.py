"""The library follows its models (issue 21, "the runner owns placement").

With no `device` named, `train_ensemble`, `estimate_llc`, `calibrate_at_curvature`, `top_hessian_eigenvalue` and
`sample_posterior` compute on the device of the models' parameters, in their floating dtype. Nothing is moved
behind the caller's back: data on another device than the computation, models without storage (PyTorch's `meta`
device) and floating data of another dtype than the models' are refused at entry, with a message naming both;
models come back on their own device and in their own dtype. CPU only and fast: `meta` stands in for a second
device (a GPU test at the end runs only where CUDA is available).
"""
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from fracsgd.posterior.clusters import POSTERIOR_PAPER, predict_on_probe, probe_grid, sample_posterior
from fracsgd.datasets.moons import load_moons
from fracsgd.train.ensemble import EnsembleSettings, EnsembleTrainer, train_ensemble
from fracsgd.llc.estimate import LLCMeasurement, calibrate_at_curvature, calibrate_step_size, estimate_llc, top_hessian_eigenvalue
from fracsgd.llc.calibrate import calibrate
from fracsgd.llc.localization import localization_sweep
from fracsgd.nets.models import make_mlp
from fracsgd.llc.sgld import SGLDSampler, SGLDSettings
from fracsgd.nets.stack import ModelStack, where_to_compute, resolve_loss
from fracsgd.placement import model_device, model_dtype

SIZES = [2, 8, 2]
SHORT = SGLDSettings(step_size=1e-4, n_chains=2, n_draws=20, n_burnin=0, batch_size=32, diag_every=5)
TRAIN = EnsembleSettings(lr=0.05, batch_size=32, n_steps=5)
PROBE = torch.tensor([[0.0, 0.0], [1.0, 0.5], [-1.0, 0.5]])


@pytest.fixture(scope='module')
def moons():
    X, y = load_moons(128, 0.2, seed=0)[:2]
    return X, y


def _nets(n=2, dtype=torch.float32):
    return [make_mlp(SIZES, seed=s).to(dtype) for s in range(n)]


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')            # short chains are flagged; that is not what is tested here
        return fn(*args, **kw)


ENTRIES = {
    'train_ensemble': lambda nets, data: train_ensemble(nets, data, settings=TRAIN),
    'estimate_llc': lambda nets, data: _quiet(estimate_llc, nets, data, 'classification', SHORT),
    'calibrate': lambda nets, data: calibrate_at_curvature(nets[0], data),
    'calibrate (pilots)': lambda nets, data: calibrate(nets[0], data),
    'top_hessian_eigenvalue': lambda nets, data: top_hessian_eigenvalue(nets[0], data, n_iter=5),
    'calibrate_step_size': lambda nets, data: calibrate_step_size(nets[0], data, n_iter=5),
    'localization_sweep': lambda nets, data: _quiet(localization_sweep, nets[0], data, localizations=(10,),
                                                    n_chains=1, n_draws=10, n_burnin=0, batch_size=32),
    'LLCMeasurement': lambda nets, data: _quiet(LLCMeasurement(data, n_draws=10, batch_size=32), nets[0]),
    'sample_posterior': lambda nets, data: sample_posterior(
        nets, data, PROBE, POSTERIOR_PAPER.replace(n_draws=3, n_burnin=0,
                                                                            steps_between_draws=1)),
}


@pytest.mark.parametrize('entry', ENTRIES)
def test_models_without_storage_and_data_on_cpu_are_refused_naming_both_devices(entry, moons):
    nets = [n.to('meta') for n in _nets()]
    with pytest.raises(ValueError) as e:
        ENTRIES[entry](nets, moons)
    assert 'meta' in str(e.value) and 'cpu' in str(e.value), e.value


@pytest.mark.parametrize('entry', ['train_ensemble', 'estimate_llc', 'calibrate', 'calibrate (pilots)', 'sample_posterior'])
def test_models_and_data_without_storage_are_refused_clearly(entry, moons):
    "Both on meta: no device mismatch, but no weights to compute with; refused at entry, not deep inside."
    nets = [n.to('meta') for n in _nets()]
    X, y = (t.to('meta') for t in moons)
    with pytest.raises(ValueError, match='no weights to compute with'):
        ENTRIES[entry](nets, (X, y))


@pytest.mark.parametrize('entry', ENTRIES)
def test_float32_models_with_float64_data_are_refused_naming_both_dtypes(entry, moons):
    X, y = moons
    with pytest.raises(ValueError) as e:
        ENTRIES[entry](_nets(), (X.double(), y))
    assert 'torch.float64' in str(e.value) and 'torch.float32' in str(e.value), e.value


@pytest.mark.parametrize('entry', ['train_ensemble', 'estimate_llc', 'calibrate', 'calibrate (pilots)'])
def test_float64_models_with_float32_data_are_refused_naming_both_dtypes(entry, moons):
    with pytest.raises(ValueError) as e:
        ENTRIES[entry](_nets(dtype=torch.float64), moons)
    assert 'torch.float64' in str(e.value) and 'torch.float32' in str(e.value), e.value


def test_float64_regression_targets_with_float32_models_are_refused():
    X, y = torch.randn(32, 3), torch.randn(32, 1, dtype=torch.float64)
    with pytest.raises(ValueError, match=r'targets have dtype torch\.float64 .* torch\.float32'):
        _quiet(estimate_llc, torch.nn.Linear(3, 1), (X, y), 'regression', SHORT)


def test_models_on_two_devices_are_refused(moons):
    nets = _nets()
    nets[1].to('meta')
    for fn in (model_device, lambda m: train_ensemble(m, moons, settings=TRAIN)):
        with pytest.raises(ValueError) as e:
            fn(nets)
        assert 'cpu' in str(e.value) and 'meta' in str(e.value) and 'model 1' in str(e.value), e.value


def test_a_named_device_does_not_fetch_the_data(moons):
    "With `device` named, data elsewhere are refused too (naming both), never copied there."
    for fn in (lambda: train_ensemble(_nets(), moons, settings=TRAIN, device='meta'),
               lambda: _quiet(estimate_llc, _nets(), moons, 'classification', SHORT, device='meta'),
               lambda: top_hessian_eigenvalue(_nets()[0], moons, device='meta')):
        with pytest.raises(ValueError) as e:
            fn()
        assert "device='meta'" in str(e.value) and 'on cpu' in str(e.value), e.value


def test_the_ensemble_trainer_refuses_data_elsewhere(moons):
    X, y = moons
    with pytest.raises(ValueError, match='meta'):
        EnsembleTrainer(_nets(), range(2), (X.to('meta'), y.to('meta')), resolve_loss('classification'),
                        TRAIN, 'cpu')


def test_the_sampler_refuses_data_elsewhere(moons):
    X, y = moons
    with pytest.raises(ValueError, match='meta'):
        SGLDSampler(ModelStack(_nets(), 'cpu'), resolve_loss('classification'), (X.to('meta'), y.to('meta')), SHORT)


def _params(nets):
    return [[p.detach().clone() for p in n.parameters()] for n in nets]


def test_float64_runs_end_to_end_and_the_models_stay_float64_on_cpu(moons):
    X, y = (moons[0].double(), moons[1])
    nets = _nets(dtype=torch.float64)
    before = _params(nets)
    with_llc = TRAIN.replace(llc_every=5, llc=SHORT.replace(n_draws=10))
    trained = _quiet(train_ensemble, nets, (X, y), settings=with_llc).query('step > 0')
    assert np.isfinite(trained.loss).all() and trained.llc.notna().sum() == 2
    assert np.isfinite(trained.llc.dropna()).all()
    for net, old in zip(nets, before):                                   # trained weights written back
        assert any(not torch.equal(p, q) for p, q in zip(net.parameters(), old))
    res = _quiet(estimate_llc, nets, (X, y), 'classification', SHORT)
    h = top_hessian_eigenvalue(nets[0], (X, y), n_iter=10)
    settings = calibrate_at_curvature(nets[0], (X, y))
    draws = sample_posterior(nets, (X, y), probe_grid(X, 3), POSTERIOR_PAPER.replace(n_draws=3, n_burnin=0))
    assert np.isfinite(res.llc).all() and res.loss_trace.dtype == np.float64
    assert np.isfinite(h) and h > 0 and settings.step_size > 0 and np.isfinite(draws).all()
    assert predict_on_probe(nets, probe_grid(X, 3)).shape == (2, 9, 2)
    for net in nets:
        assert model_device(net) == torch.device('cpu') and model_dtype(net) == torch.float64
        assert all(t.dtype == torch.float64 for t in net.parameters())


def test_the_sampler_works_in_the_weights_dtype(moons):
    X, y = moons
    run = SGLDSampler(ModelStack(_nets(1, torch.float64), 'cpu'), resolve_loss('classification'),
                      (X.double(), y), SHORT).sample([0])
    assert run.trace.dtype == torch.float64 and torch.isfinite(run.trace).all()


def test_estimate_llc_leaves_the_models_as_they_were(moons):
    nets = _nets()
    nets[0].train()
    nets[1].eval()
    before = _params(nets)
    _quiet(estimate_llc, nets, moons, 'classification', SHORT)
    top_hessian_eigenvalue(nets[0], moons, n_iter=5)
    assert nets[0].training and not nets[1].training
    for net, old in zip(nets, before):
        assert model_device(net) == torch.device('cpu') and model_dtype(net) == torch.float32
        assert all(torch.equal(p, q) for p, q in zip(net.parameters(), old))


def test_the_default_device_is_the_models_and_float32_results_are_unchanged(moons):
    "device=None follows the models: on CPU the numbers are those of device='cpu', bit for bit."
    a, b = _nets(3), _nets(3)
    tab_a = train_ensemble(a, moons, settings=TRAIN.replace(momentum=0.9))
    tab_b = train_ensemble(b, moons, settings=TRAIN.replace(momentum=0.9), device='cpu')
    pd.testing.assert_frame_equal(tab_a, tab_b, check_exact=True)
    assert all(torch.equal(p, q) for m, n in zip(a, b) for p, q in zip(m.parameters(), n.parameters()))
    llc_a = _quiet(estimate_llc, a, moons, 'classification', SHORT)
    llc_b = _quiet(estimate_llc, b, moons, 'classification', SHORT, device='cpu')
    assert np.array_equal(llc_a.loss_trace, llc_b.loss_trace) and np.array_equal(llc_a.llc, llc_b.llc)
    assert top_hessian_eigenvalue(a[0], moons) == top_hessian_eigenvalue(b[0], moons, device='cpu')


def test_placement_returns_the_callers_tensors(moons):
    X, y = moons
    device, X2, y2 = where_to_compute(_nets(), (X, y), loss='classification')
    assert device == torch.device('cpu') and X2 is X and y2 is y


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a GPU')
def test_on_a_gpu_the_models_stay_where_they_are(moons):
    X, y = (t.cuda() for t in moons)
    nets = _nets()
    with pytest.raises(ValueError, match='cuda:0 but the models are on cpu'):
        train_ensemble(nets, (X, y), settings=TRAIN)
    before = _params(nets)
    train_ensemble(nets, (X, y), settings=TRAIN, device='cuda')          # computes there, writes back here
    assert all(model_device(n).type == 'cpu' for n in nets)
    assert any(not torch.equal(p, q) for p, q in zip(nets[0].parameters(), before[0]))
    _quiet(estimate_llc, nets, (X, y), 'classification', SHORT, device='cuda')
    top_hessian_eigenvalue(nets[0], (X, y), n_iter=5, device='cuda')
    assert all(model_device(n).type == 'cpu' for n in nets)
    on_gpu = [n.cuda() for n in _nets()]
    train_ensemble(on_gpu, (X, y), settings=TRAIN)                      # device=None: the models' device
    assert all(model_device(n).type == 'cuda' for n in on_gpu)
