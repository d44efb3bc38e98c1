"""The sweep runner: stable keys, failures recorded, resume, and a SIGKILL in the middle on both backends."""
import json, os, signal, subprocess, sys, textwrap, time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from fracsgd.experiment.store import done_keys, load_study, StudyMismatch, status
from fracsgd.experiment.sweep import Sweep, run_key, run_sweep, sweep_status, unique_runs


@dataclass(frozen=True)
class Adam:
    lr: float = 1e-3
    betas: tuple = (0.9, 0.999)


@dataclass(frozen=True)
class Cfg:
    seed: int
    opt: Adam = Adam()
    crash: bool = False


def counted(cfg: Cfg) -> dict:
    "A run that appends its seed to the side file named by $SWEEP_LOG, then fails for negative seeds."
    with open(os.environ['SWEEP_LOG'], 'a') as f:
        f.write(f'{cfg.seed}\n')
    if cfg.crash:
        os._exit(3)                                  # a worker dying without a Python exception
    if cfg.seed < 0:
        raise ArithmeticError(f'negative seed {cfg.seed}')
    return dict(square=cfg.seed ** 2, trajectory=pd.DataFrame({'t': [0, 1], 'x': [0.0, cfg.seed / 2]}))


@pytest.fixture
def log(tmp_path, monkeypatch):
    path = tmp_path / 'executions.log'
    path.touch()
    monkeypatch.setenv('SWEEP_LOG', str(path))
    return path


def executions(log) -> list[int]:
    return [int(s) for s in Path(log).read_text().split()]


def test_key_is_fixed_and_the_same_in_another_process():
    assert run_key(Cfg(0)) == run_key(Cfg(0, Adam(1e-3, [0.9, 0.999])))
    assert len({run_key(Cfg(0)), run_key(Cfg(1)), run_key(Cfg(0, Adam(lr=1e-2)))}) == 3
    code = 'from test_sweep import Cfg; from fracsgd.experiment.sweep import run_key; print(run_key(Cfg(0)))'
    for hashseed in ('1', '2'):
        env = dict(os.environ, PYTHONHASHSEED=hashseed, PYTHONPATH=str(Path(__file__).parent))
        out = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True,
                             check=True)
        assert out.stdout.strip() == run_key(Cfg(0))
    assert run_key(Cfg(0)) == '356260e351c1f1e1'   # a literal: keys must not change between versions


@pytest.mark.parametrize('cfg, field', [(Cfg(object()), "'seed'"), (Cfg(0, Adam(lr=lambda: 1)), "'opt.lr'"),
                                        (Cfg(0, Adam(betas=(0.9, {1, 2}))), r"'opt.betas\[1\]'")])
def test_unserialisable_field_is_named(cfg, field):
    with pytest.raises(ValueError, match=field + ' holds a'):
        run_key(cfg)


def test_reserved_field_name_is_refused():
    @dataclass
    class Bad:
        status: str = 'x'
    with pytest.raises(ValueError, match="'status'"):
        run_key(Bad())


def test_duplicates_failures_and_resume(tmp_path, log, capsys):
    configs = [Cfg(1), Cfg(-1), Cfg(2), Cfg(1)]
    assert len(unique_runs(configs)) == 3
    counts = run_sweep(Sweep('t', counted, configs), tmp_path / 's', workers=2, progress=False)
    assert counts == dict(done=2, failed=1, skipped=0)
    assert 't: 2 done, 1 failed, 0 skipped' in capsys.readouterr().out
    assert sorted(executions(log)) == [-1, 1, 2]                         # the duplicate ran once
    runs = load_study(tmp_path / 's').runs
    err = json.loads((tmp_path / 's' / 'errors' / f'{run_key(Cfg(-1))}.json').read_text())
    assert err['type'] == 'ArithmeticError' and 'negative seed' in err['message']
    assert 'in counted' in err['traceback']
    assert runs.set_index('key').loc[run_key(Cfg(-1)), 'error'] == 'ArithmeticError: negative seed -1'
    # resume: only the failed run runs again; a changed configuration is a new run
    counts = run_sweep(Sweep('t', counted, configs + [Cfg(2, Adam(lr=0.1))]), tmp_path / 's', progress=False)
    assert counts == dict(done=1, failed=1, skipped=2)
    assert sorted(executions(log)) == [-1, -1, 1, 2, 2]
    assert sweep_status(Sweep('t', counted, configs), tmp_path / 's') == dict(done=2, failed=1, pending=0)
    assert status(tmp_path / 's') == dict(done=3, failed=1, pending=0)    # the folder alone: its latest plan


def test_refuses_other_study_and_bad_config_before_writing(tmp_path, log):
    run_sweep(Sweep('a', counted, [Cfg(1)], device='cpu'), tmp_path / 's', progress=False)
    assert load_study(tmp_path / 's').meta['sessions'][0]['device'] == 'cpu'
    with pytest.raises(StudyMismatch, match="study 'a', not 'b'"):
        run_sweep(Sweep('b', counted, [Cfg(2)]), tmp_path / 's', progress=False)
    with pytest.raises(ValueError, match="'seed'"):
        run_sweep(Sweep('c', counted, [Cfg(object())]), tmp_path / 'new', progress=False)
    with pytest.raises(ValueError, match="unknown backend 'slurm'"):
        run_sweep(Sweep('c', counted, [Cfg(1)]), tmp_path / 'new', backend='slurm', progress=False)
    assert not (tmp_path / 'new').exists() and executions(log) == [1]


def test_ray_backend_without_ray_is_refused_before_writing(tmp_path, monkeypatch):
    import importlib.util
    find_spec = importlib.util.find_spec
    hide_ray = lambda name, *args: None if name == 'ray' else find_spec(name, *args)
    monkeypatch.setattr(importlib.util, 'find_spec', hide_ray)
    with pytest.raises(ImportError, match=r'fracsgd\[ray\]'):
        run_sweep(Sweep('c', counted, [Cfg(1)]), tmp_path / 'new', backend='ray', progress=False)
    assert not (tmp_path / 'new').exists()


def test_files_are_readable_by_others(tmp_path, log):
    old = os.umask(0o022)
    try:
        run_sweep(Sweep('t', counted, [Cfg(1), Cfg(-1)]), tmp_path / 's', progress=False)
    finally:
        os.umask(old)
    modes = {p.relative_to(tmp_path).as_posix(): oct(p.stat().st_mode & 0o777)
             for p in (tmp_path / 's').rglob('*')}
    assert {m for p, m in modes.items() if (tmp_path / p).is_file()} == {'0o644'}, modes
    assert {m for p, m in modes.items() if (tmp_path / p).is_dir()} == {'0o755'}, modes


def test_a_dying_worker_fails_its_runs_and_the_sweep_goes_on(tmp_path, log):
    configs = [Cfg(0, crash=True)] + [Cfg(s) for s in range(1, 6)]
    counts = run_sweep(Sweep('t', counted, configs), tmp_path / 's', workers=2, progress=False)
    runs = load_study(tmp_path / 's').runs.set_index('key')
    assert runs.loc[run_key(configs[0]), 'error'].startswith('BrokenProcessPool')
    assert counts['done'] >= 4 and counts['done'] + counts['failed'] == 6   # at most one innocent run
    innocent = counts['failed'] - 1                  # in flight when the pool broke: they run again later
    again = run_sweep(Sweep('t', counted, configs[1:]), tmp_path / 's', workers=2, progress=False)
    assert again == dict(done=innocent, failed=0, skipped=5 - innocent)


HEAD = textwrap.dedent('''
    import ray, time
    ray.init(num_cpus=2, include_dashboard=False, logging_level='WARNING')
    print(ray.get_runtime_context().gcs_address, flush=True)
    time.sleep(600)
''')


@pytest.fixture
def ray_cluster(log, monkeypatch):
    "A Ray cluster started by another process, whose workers import this module and log to `log`."
    monkeypatch.setenv('RAY_AUTH_MODE', 'disabled')  # both sides alike: a client reads the mode once per process
    pytest.importorskip('ray')
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent))
    head = subprocess.Popen([sys.executable, '-c', HEAD], env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        yield head.stdout.readline().strip()
    finally:
        os.killpg(head.pid, signal.SIGKILL)
        head.wait()
        end_session(head.pid)


def test_ray_backend_joins_a_cluster_and_gives_the_local_table(tmp_path, log, ray_cluster):
    configs = [Cfg(1), Cfg(-1), Cfg(2)]
    assert run_sweep(Sweep('t', counted, configs), tmp_path / 'ray', backend='ray', address=ray_cluster,
                     progress=False) == dict(done=2, failed=1, skipped=0)
    run_sweep(Sweep('t', counted, configs), tmp_path / 'local', workers=2, progress=False)
    on_ray, local = load_study(tmp_path / 'ray'), load_study(tmp_path / 'local')
    pd.testing.assert_frame_equal(on_ray.runs.drop(columns='seconds'), local.runs.drop(columns='seconds'))
    pd.testing.assert_frame_equal(on_ray.trajectories, local.trajectories)


# --- the kill test ------------------------------------------------------------------------------------------

SCRIPT = textwrap.dedent('''
    import os, sys, time
    from dataclasses import dataclass
    import pandas as pd
    from fracsgd.experiment.sweep import Sweep, run_sweep

    @dataclass(frozen=True)
    class Nap:
        seed: int
        nap: float = 0.5

    def nap(cfg):
        with open(os.environ['SWEEP_LOG'], 'a') as f:
            f.write(f'{cfg.seed}\\n')
        time.sleep(cfg.nap)
        return dict(value=cfg.seed * 1.5, trajectory=pd.DataFrame({'t': range(500), 'x': [cfg.seed] * 500}))

    if __name__ == '__main__':
        folder, backend = sys.argv[1], sys.argv[2]
        run_sweep(Sweep('nap', nap, [Nap(s) for s in range(8)]), folder, backend=backend, workers=2,
                  progress=False)
''')


def sweep_process(tmp_path, folder, backend, log):
    script = tmp_path / 'nap_sweep.py'
    script.write_text(SCRIPT)
    env = dict(os.environ, SWEEP_LOG=str(log))
    return subprocess.Popen([sys.executable, str(script), str(folder), backend], env=env,
                            start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def session_pids(sid: int) -> list[int]:
    "Processes in session `sid` (the killed sweep's, Ray's daemons included)."
    pids = []
    for stat in Path('/proc').glob('[0-9]*/stat'):
        try:
            fields = stat.read_text().rsplit(')', 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid:
            pids.append(int(stat.parent.name))
    return pids


def end_session(sid: int):
    "Wait up to 10 s for session `sid`'s processes to end (Ray's workers follow their raylet); kill the rest."
    for _ in range(100):
        if not session_pids(sid):
            return
        time.sleep(0.1)
    for pid in session_pids(sid):
        os.kill(pid, signal.SIGKILL)


def kill_mid_sweep(proc, folder, log, timeout=90):
    "SIGKILL the sweep's process group once a run is stored and another is running; return the seeds done."
    t0 = time.time()
    while time.time() - t0 < timeout:
        assert proc.poll() is None, proc.stdout.read()
        done = {json.loads((folder / 'runs' / k / 'run.json').read_text())['config']['seed']
                for k in done_keys(folder)} if folder.exists() else set()
        if done and set(executions(log)) - done:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            end_session(proc.pid)
            return {json.loads((folder / 'runs' / k / 'run.json').read_text())['config']['seed']
                    for k in done_keys(folder)}
        time.sleep(0.01)
    raise AssertionError('the sweep never reached the state to kill it in')


@pytest.fixture(scope='module')
def uninterrupted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('reference')
    log = tmp / 'log'
    log.touch()
    proc = sweep_process(tmp, tmp / 'study', 'local', log)
    assert proc.wait() == 0, proc.stdout.read()
    return tmp / 'study'


@pytest.mark.parametrize('backend', ['local', 'ray'])
def test_kill_and_resume(tmp_path, log, backend, uninterrupted):
    if backend == 'ray':
        pytest.importorskip('ray')
    folder = tmp_path / 'study'
    proc = sweep_process(tmp_path, folder, backend, log)
    done_at_kill = kill_mid_sweep(proc, folder, log)
    assert 1 <= len(done_at_kill) < 8
    leftovers = [p.name for p in (folder / 'runs').iterdir() if p.name.startswith('.')]
    assert status(folder)['done'] == len(done_at_kill)          # a half-written run folder does not count
    after_kill = load_study(folder)                               # reads whole runs only
    assert sorted(after_kill.runs.value) == sorted(s * 1.5 for s in done_at_kill)
    assert (after_kill.trajectories.groupby('key').size() == 500).all()
    again = sweep_process(tmp_path, folder, backend, log)
    out, _ = again.communicate(timeout=120)
    assert again.returncode == 0, out
    assert f'{8 - len(done_at_kill)} done, 0 failed, {len(done_at_kill)} skipped' in out
    runs = pd.Series(executions(log)).value_counts()
    assert all(runs[s] == 1 for s in done_at_kill), (runs, done_at_kill)   # nothing finished ran twice
    assert set(runs.index) == set(range(8))
    assert not [p for p in (folder / 'runs').iterdir() if p.name.startswith('.')], leftovers
    study, reference = load_study(folder), uninterrupted
    expected = load_study(reference)
    pd.testing.assert_frame_equal(study.runs.drop(columns='seconds'), expected.runs.drop(columns='seconds'))
    pd.testing.assert_frame_equal(study.trajectories, expected.trajectories)
    on_disk = [pd.read_parquet(f / 'runs.parquet').drop(columns='seconds') for f in (folder, reference)]
    pd.testing.assert_frame_equal(*on_disk)


def _threaded_matmul(n):
    import torch
    a = torch.ones(400, 400)
    return float((a @ a).sum()) + n


def test_a_worker_with_several_threads_does_not_hang_after_the_parent_used_openmp(monkeypatch):
    # A forked child with several OpenMP threads hangs at its first parallel operation when the parent's OpenMP
    # pool had run (seen with local_pool(1) on 2 cores). The pool starts such workers from a fork server.
    import torch
    from fracsgd.experiment.sweep import local_pool
    monkeypatch.setenv('FRACSGD_CPUS', '2')                       # a worker with two threads, whatever runs the tests
    torch.ones(400, 400) @ torch.ones(400, 400)                   # the parent's OpenMP pool has run
    with local_pool(1) as pool:
        assert pool.submit(_threaded_matmul, 1).result(timeout=120) == 400 * 400 * 400 + 1
        start = pool._mp_context.get_start_method()
    assert start == 'forkserver'


ORPHAN_DRIVER = '''
import os, signal, time
from fracsgd.experiment.sweep import local_pool
pool = local_pool(2)
pool.submit(time.sleep, 0.1).result()
print(' '.join(str(p) for p in pool._processes), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
'''

def test_workers_end_when_their_driver_is_killed():
    # A driver killed with SIGKILL (a stopped docs build, a killed sweep) used to leave its idle workers behind,
    # holding its pipes open; on Linux they now end with it.
    import subprocess, sys, time
    if not sys.platform.startswith('linux'):
        pytest.skip('PR_SET_PDEATHSIG is Linux only')
    p = subprocess.run([sys.executable, '-c', ORPHAN_DRIVER], capture_output=True, text=True, timeout=120)
    pids = [int(x) for x in p.stdout.split()]
    assert len(pids) == 2, p.stderr
    time.sleep(3)
    alive = [q for q in pids if os.path.exists(f'/proc/{q}') and open(f'/proc/{q}/stat').read().split()[2] != 'Z']
    assert alive == []


def _read_env(name):
    import os
    return os.environ.get(name)


def test_a_worker_sees_the_environment_of_its_driver_when_the_pool_starts(monkeypatch):
    # A fork server keeps the environment it started with; the pool hands each worker the driver's current one,
    # as a forked worker would have (a study reads FRACSGD_DATA in its workers).
    from fracsgd.experiment.sweep import local_pool
    with local_pool(1) as pool:                                  # the fork server starts here (2+ cores)
        assert pool.submit(_read_env, 'FRACSGD_ENV_PROBE').result(timeout=120) is None
    monkeypatch.setenv('FRACSGD_ENV_PROBE', 'set later')
    with local_pool(1) as pool:
        assert pool.submit(_read_env, 'FRACSGD_ENV_PROBE').result(timeout=120) == 'set later'


def test_a_local_ray_start_that_times_out_is_tried_once_more(monkeypatch):
    # Ray waits a fixed 30 s for its raylet; on a loaded machine (CI's docs build beside pytest) that once failed a test
    ray = pytest.importorskip('ray')
    from fracsgd.experiment.sweep import RayPool
    calls = []
    def init(**kw):
        calls.append(kw)
        if len(calls) == 1:
            raise Exception('The current node timed out during startup. This could happen because ...')
    monkeypatch.setattr(ray, 'is_initialized', lambda: False)
    monkeypatch.setattr(ray, 'init', init)
    monkeypatch.setattr(ray, 'shutdown', lambda: None)
    pool = RayPool(workers=1)
    assert len(calls) == 2 and pool.started
    calls.clear()
    monkeypatch.setattr(ray, 'init', lambda **kw: (_ for _ in ()).throw(RuntimeError('some other failure')))
    with pytest.raises(RuntimeError, match='some other failure'):
        RayPool(workers=1)
