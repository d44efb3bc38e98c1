"""The runner owns placement, presets and results: a failure after training costs no training, a folder says what
made it, a report of failed runs is one line, no study picks a device, and every study's smoke preset runs under
a placement that a module left behind cannot pass (float64 on the CPU)."""
import ast, json, re, warnings
from dataclasses import dataclass, fields
from pathlib import Path

import pandas as pd
import numpy as np
import pytest
import torch
from torch import nn

import fracsgd
from fracsgd.core import cpu_cores
from fracsgd.experiment.runner import Study, StudyFailed, report_study, run_study, trained_path
from fracsgd.studies import STUDIES, get_study
from fracsgd.placement import Placement, PlacementError, check_placed, place, placement
from fracsgd.experiment.store import read_meta
from fracsgd.experiment.sweep import PROGRESS_DIR, run_key
from conftest import smoke_run_checks


# ---------------------------------------------------------------------------------------------------------------
# A toy study whose training and evaluation leave traces on disk, so the test sees what ran in the worker.

@dataclass(frozen=True)
class ToyConfig:
    n_runs: int = 2
    steps: int = 5
    folder: str = ''                      # where the traces go

@dataclass(frozen=True)
class ToyRun:
    seed: int
    steps: int
    folder: str

class ToyStudy(Study):
    name, presets = 'toy', dict(smoke=ToyConfig(), quick=ToyConfig())
    def runs(self, cfg): return [ToyRun(s, cfg.steps, cfg.folder) for s in range(cfg.n_runs)]
    def load_data(self, run):
        g = torch.Generator().manual_seed(run.seed)
        X = torch.randn(32, 3, generator=g)
        return X, X @ torch.tensor([1., -2., .5])
    def build_models(self, run): return nn.Linear(3, 1)
    def train(self, run, data, net):
        X, y = data
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for _ in range(run.steps):
            opt.zero_grad()
            loss = ((net(X).squeeze(1) - y) ** 2).mean()
            loss.backward()
            opt.step()
        with open(Path(run.folder) / 'trained.log', 'a') as f:
            f.write(f'{run.seed}\n')
        return dict(trajectory=pd.DataFrame(dict(step=[run.steps], loss=[float(loss)])))
    def evaluate(self, run, data, net, trained):
        if (Path(run.folder) / f'fail-{run.seed}').exists():
            raise RuntimeError(f'evaluation of run {run.seed} failed on purpose')
        X, y = data
        with torch.no_grad():
            return dict(final_loss=float(((net(X).squeeze(1) - y) ** 2).mean()), dtype=str(X.dtype))
    def report(self, folder, cfg):
        from fracsgd.experiment.store import load_study
        runs = load_study(folder).runs
        return dict(summary=runs[runs.status == 'done'][['seed', 'final_loss']])

TOY = ToyStudy()


def test_a_failed_evaluation_is_resumed_from_the_trained_state_without_training_again(tmp_path):
    cfg = ToyConfig(folder=str(tmp_path))
    (tmp_path / 'fail-1').write_text('')
    with pytest.warns(UserWarning, match=r'1 of 2 runs failed.*evaluation of run 1 failed on purpose'):
        first = run_study(TOY, config=cfg, folder=tmp_path / 'study', device='cpu', workers=1, progress=False)
    assert first['counts'] == dict(done=1, failed=1, skipped=0)
    key = run_key(TOY.runs(cfg)[1])
    error = json.loads((tmp_path / 'study' / 'errors' / f'{key}.json').read_text())
    assert 'Traceback' in error['traceback'] and 'in evaluate' in error['traceback']
    assert trained_path(tmp_path / 'study', key).exists()                 # kept: training is not lost
    assert not trained_path(tmp_path / 'study', run_key(TOY.runs(cfg)[0])).exists()   # done: cleaned up
    (tmp_path / 'fail-1').unlink()
    second = run_study(TOY, config=cfg, folder=tmp_path / 'study', device='cpu', workers=1, progress=False)
    assert second['counts'] == dict(done=1, failed=0, skipped=1)
    assert (tmp_path / 'trained.log').read_text().split() == ['0', '1']  # run 1 trained once, not twice
    assert not trained_path(tmp_path / 'study', key).exists()
    # the resumed evaluation gives what an unbroken run gives
    fresh = run_study(TOY, config=cfg, folder=tmp_path / 'fresh', device='cpu', workers=1, progress=False)
    assert second['summary'].final_loss.tolist() == fresh['summary'].final_loss.tolist()


def test_a_folder_where_every_run_failed_is_reported_in_one_line(tmp_path):
    cfg = ToyConfig(folder=str(tmp_path))
    for s in range(2):
        (tmp_path / f'fail-{s}').write_text('')
    with pytest.raises(StudyFailed) as e:
        run_study(TOY, config=cfg, folder=tmp_path / 'study', device='cpu', workers=1, progress=False)
    msg = str(e.value)
    assert '\n' not in msg and 'all 2 of 2 runs failed' in msg and 'failed on purpose' in msg, msg
    assert str(tmp_path / 'study' / 'errors') in msg


def test_the_folder_records_preset_configuration_placement_and_version(tmp_path):
    cfg = ToyConfig(folder=str(tmp_path))
    run_study(TOY, config=cfg, folder=tmp_path / 'study', device='cpu', dtype='float64', workers=1,
              progress=False)
    meta = read_meta(tmp_path / 'study')
    assert meta['preset'] == 'custom' and meta['config'] == dict(n_runs=2, steps=5, folder=str(tmp_path))
    assert meta['placement'] == dict(device='cpu', dtype='float64', threads=cpu_cores()) and meta['stand_in'] == ''
    assert meta['sessions'][-1]['fracsgd'] == fracsgd.__version__ and meta['sessions'][-1]['device'] == 'cpu'
    # what the ledger needs, decided here from the study and its configuration, not rebuilt by the ledger later
    from fracsgd.experiment.protocol import protocol_scale
    assert meta['scale'] == protocol_scale(TOY, cfg) and meta['llc_nbeta'] == ''
    assert set(pd.read_parquet(tmp_path / 'study' / 'runs.parquet').dtype) == {'torch.float64'}   # placed data
    # the report reads the configuration from the folder, not from the caller
    assert report_study(tmp_path / 'study', TOY)['summary'].seed.tolist() == [0, 1]


def test_run_keys_do_not_depend_on_placement_workers_or_backend(tmp_path):
    cfg = ToyConfig(folder=str(tmp_path))
    run_study(TOY, config=cfg, folder=tmp_path / 'study', device='cpu', workers=1, progress=False)
    again = run_study(TOY, config=cfg, folder=tmp_path / 'study', device='cpu', dtype='float64', workers=2,
                      progress=False)
    assert again['counts'] == dict(done=0, failed=0, skipped=2)
    for name in STUDIES:                                  # no run configuration has a field for where it runs
        study = get_study(name)
        for run in study.runs(study.config('smoke')):
            assert not {'device', 'workers', 'backend', 'dtype'} & {f.name for f in fields(run)}, (name, run)


def test_placement_refuses_what_it_cannot_run():
    for bad in ['tpu9', 'cuda:99', 'gpu']:
        with pytest.raises(ValueError, match=r"device|not available"):
            placement(bad)
    with pytest.raises(ValueError, match='unknown dtype'):
        Placement('cpu', 'float8')
    p = Placement('cpu', 'float64')
    with pytest.raises(PlacementError, match=r"models\[1\]\.weight is float32, but the run is placed in float64"):
        check_placed([place(nn.Linear(2, 2), p), nn.Linear(2, 2)], p, 'models')
    with pytest.raises(PlacementError, match=r"data\[0\] is on meta, but the run is placed on cpu"):
        check_placed((torch.zeros(2, device='meta'),), p)


# ---------------------------------------------------------------------------------------------------------------
# No study module picks a device, reads the preset from the environment, or moves a tensor to a named device.

STUDY_FILES = sorted((Path(fracsgd.__file__).parent / 'studies').glob('*.py'))
FORBIDDEN = {r'default_device': 'picks a device',
             r'''['"](cuda|cpu|mps)(:\d+)?['"]''': 'names a device',
             r'\.cuda\(': 'moves to a GPU',
             r'torch\.device\(': 'builds a device',
             r'\bdevice\s*=\s*device\b': 'passes on a device it chose',
             r'FRACSGD_FULL|full_mode': 'reads the preset from the environment'}

@pytest.mark.parametrize('path', STUDY_FILES, ids=lambda p: p.name)
def test_no_study_module_picks_a_device(path):
    code = '\n'.join(l.split('#')[0] for l in path.read_text().splitlines())   # comments may mention devices
    for pattern, what in FORBIDDEN.items():
        hits = [m.group(0) for m in re.finditer(pattern, code)]
        assert not hits, f'{path.name} {what}: {hits[:3]}'
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):                              # and no run configuration has a device field
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            assert node.target.id != 'device', f'{path.name}: a configuration field named device'


# ---------------------------------------------------------------------------------------------------------------
# Every study's smoke preset through the runner, placed in float64 on the CPU: a module or tensor that the runner
# did not place stays float32 and fails here the way a CPU module fails on a GPU.

# Studies whose own test file runs the smoke preset through the runner in float64, with `smoke_run_checks` and
# checks of its own: one smoke run of each study, not two.
OWN_SMOKE_TEST = {'tinystories': 'test_tinystories.py', 'tiny-imagenet': 'test_tiny_imagenet.py'}

def test_the_studies_left_out_below_run_their_smoke_preset_elsewhere():
    for name, file in OWN_SMOKE_TEST.items():
        assert name in STUDIES
        src = (Path(__file__).parent / file).read_text()
        assert 'def test_smoke_through_the_runner_in_float64' in src and 'smoke_run_checks(' in src, file


@pytest.mark.parametrize('name', sorted(set(STUDIES) - set(OWN_SMOKE_TEST)))
def test_every_study_smoke_preset_runs_under_a_float64_placement(name, tmp_path):
    study = get_study(name)
    assert {'smoke', 'quick', 'full'} <= set(study.presets), study
    cfg = study.config('smoke')
    stand_in = False
    try:
        study.check_data(cfg)
    except (ValueError, OSError):
        stand_in = True                                     # the paper's data are not here: its labelled stand-in
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        res = run_study(study, 'smoke', tmp_path / name, stand_in=stand_in, device='cpu', dtype='float64',
                        workers=1, progress=True)              # the bar on: its progress files are cleared after
    smoke_run_checks(study, res)


def test_a_smoke_study_runs_on_ray_and_resumes(tmp_path, monkeypatch):
    # issue 24: the runner's Ray backend on the CPU (no GPU asked for), then a second call finds every run done
    # and starts no Ray pool for it (a local Ray cluster takes seconds to start)
    pytest.importorskip('ray')
    import fracsgd.experiment.sweep as sweep
    from fracsgd.experiment.runner import run_study
    res = run_study('moons-diffusion', 'smoke', tmp_path / 'ray', device='cpu', backend='ray', workers=2,
                    progress=False, report=False)
    assert res['counts']['failed'] == 0 and res['counts']['done'] > 0
    monkeypatch.setattr(sweep, 'RayPool', lambda *a, **k: pytest.fail('a Ray pool was started with nothing to run'))
    again = run_study('moons-diffusion', 'smoke', tmp_path / 'ray', device='cpu', backend='ray', workers=2,
                      progress=False, report=False)
    assert again['counts'] == dict(done=0, failed=0, skipped=res['counts']['done'])


def test_ray_pool_refuses_a_negative_gpu_count():
    pytest.importorskip('ray')
    from fracsgd.experiment.sweep import RayPool
    with pytest.raises(ValueError, match='gpus per run'):
        RayPool(gpus=-1)


def test_the_bar_counts_work_not_runs(tmp_path):
    # a run three times as costly as the others moves the bar three times as far, and the weights sum to the runs
    from dataclasses import dataclass
    from tqdm.auto import tqdm
    from fracsgd.core import report_progress, reporting_progress
    from fracsgd.experiment.runner import progress_writer
    from fracsgd.experiment.sweep import ProgressWatcher, Sweep, run_key

    @dataclass(frozen=True)
    class Job:
        steps: int
        seed: int

    jobs = [Job(100, 0), Job(100, 1), Job(300, 2)]
    short, long = run_key(jobs[0]), run_key(jobs[2])
    w = Sweep('jobs', print, jobs, cost=lambda j: j.steps).weights()
    assert np.isclose(sum(w.values()), 3) and np.isclose(w[long], 3 * w[short])   # 0.6, 0.6 and 1.8
    bar = tqdm(total=3, disable=True)
    watcher = ProgressWatcher(tmp_path / PROGRESS_DIR, bar, done=w[short], enabled=False, weights=w)
    with reporting_progress(progress_writer(tmp_path, long, every=3600)):
        report_progress(150, 300, 'training step')            # half of the long run
    watcher.show()
    assert np.isclose(bar.n, w[short] + 0.5 * w[long])          # 0.6 + 0.9 of 3
    watcher.finished(long)
    assert np.isclose(bar.n, w[short] + w[long])
    watcher.stop()
    with pytest.raises(ValueError, match='positive'):
        Sweep('jobs', print, jobs, cost=lambda j: 0).weights()


def test_a_run_in_flight_reports_its_step_to_the_sweep_bar(tmp_path):
    # issue 24: the bar shows runs done, the current run's step and a time left that counts the part already done
    from tqdm.auto import tqdm
    from fracsgd.core import report_progress, reporting_progress
    from fracsgd.experiment.runner import progress_writer
    from fracsgd.experiment.sweep import ProgressWatcher
    bar = tqdm(total=4, disable=True)
    watcher = ProgressWatcher(tmp_path / PROGRESS_DIR, bar, done=1, enabled=False)
    with reporting_progress(progress_writer(tmp_path, 'abcdef0123456789', every=3600)):
        report_progress(30, 120, 'training step')             # the first report is written at once
        report_progress(60, 120, 'training step')             # within `every` seconds: not written
    watcher.show()
    assert bar.n == 1.25 and 'run abcdef01: training step 30/120' in bar.postfix
    with reporting_progress(progress_writer(tmp_path, 'abcdef0123456789', every=3600)):
        report_progress(120, 120, 'training step')            # the last step is always written
    watcher.show()
    assert bar.n == 2.0
    with reporting_progress(progress_writer(tmp_path, 'abcdef0123456789', every=3600)):
        report_progress(3, 10, 'calibrated LLC at the final weights: net')   # its evaluation: a new count
    watcher.show()
    assert bar.n == 2.0 and 'calibrated LLC at the final weights: net 3/10' in bar.postfix   # never goes back
    watcher.finished('abcdef0123456789')
    assert bar.n == 2.0 and not list((tmp_path / PROGRESS_DIR).glob('*.json'))
    watcher.stop()



class ThreadedToy(ToyStudy):
    "The toy study asking for one thread per run and three for its finish stage; each stage records what it got."
    def threads(self, run=None): return 1 if run is not None else 3
    def evaluate(self, run, data, net, trained): return dict(threads=torch.get_num_threads())
    def finish(self, folder, cfg): (Path(folder) / 'finish_threads').write_text(str(torch.get_num_threads()))


def test_a_study_says_how_many_threads_and_the_runner_sets_them(tmp_path):
    before = torch.get_num_threads()
    res = run_study(ThreadedToy(), config=ToyConfig(folder=str(tmp_path)), folder=tmp_path / 'study', device='cpu',
                    threads=2, workers=1, progress=False, report=False)
    assert res['counts']['done'] == 2
    from fracsgd.experiment.store import load_study
    assert set(load_study(tmp_path / 'study').runs.threads) == {1}
    assert (tmp_path / 'study' / 'finish_threads').read_text() == '3' and torch.get_num_threads() == before
