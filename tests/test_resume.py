"""A study run killed part-way through its training resumes from its last saved state, not from step 0, and gives
the results of a run that was never stopped.

Reference: the same study run through in another folder (the same placement). The killed run saves its
state at every chance (`FRACSGD_CHECKPOINT_EVERY=0`: on an idle machine the smoke training takes less than the
0.3 s this test once used, and finished before its first save); the kill lands as soon as a state is on disk, before
the run finishes. Results are compared exactly, apart from the recorded seconds."""
import os, signal, subprocess, sys, time
from pathlib import Path

import pandas as pd
import pytest
import torch

from fracsgd.experiment.store import load_study

from fracsgd.experiment.runner import run_study

RUN = dict(device='cpu', workers=1, progress=False, report=False)


def killable_run(folder, every: float):
    "The moons smoke study in another process, saving its training state every `every` seconds."
    code = f"from fracsgd.experiment.runner import run_study; run_study('moons-diffusion', 'smoke', {str(folder)!r}, **{RUN!r})"
    return subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env={**os.environ, 'FRACSGD_CHECKPOINT_EVERY': str(every)},
                            start_new_session=True)


def saved_states(folder):
    return sorted((Path(folder) / 'checkpoints').glob('*/*.pt'))


def test_a_run_killed_in_training_resumes_from_its_saved_state(tmp_path):
    killed = killable_run(tmp_path / 'killed', every=0)
    deadline = time.time() + 120
    while not saved_states(tmp_path / 'killed') and killed.poll() is None and time.time() < deadline:
        time.sleep(0.005)
    os.killpg(killed.pid, signal.SIGKILL)
    out = killed.communicate()[0]
    states = saved_states(tmp_path / 'killed')
    assert states, 'the run finished or died before its training saved a state: nothing to resume\n' + out
    trainer = torch.load(states[0], weights_only=False)['state']['trainer']
    assert trainer is None or trainer['t'] > 0                        # None: saved between two chunks

    resumed = run_study('moons-diffusion', 'smoke', tmp_path / 'killed', **RUN)
    assert resumed['counts']['failed'] == 0 and resumed['counts']['done'] >= 1
    assert not saved_states(tmp_path / 'killed')                      # the states go once training is kept
    log = (tmp_path / 'killed' / 'resumed.log').read_text()
    assert f'run {states[0].parent.name}: training resumed from checkpoints/{states[0].parent.name}/0.pt' in log, log
    run_study('moons-diffusion', 'smoke', tmp_path / 'through', **RUN)
    resumed, through = load_study(tmp_path / 'killed'), load_study(tmp_path / 'through')
    timing = [c for c in resumed.runs if 'seconds' in c]
    pd.testing.assert_frame_equal(resumed.runs.drop(columns=timing).sort_values('key', ignore_index=True),
                                  through.runs.drop(columns=timing).sort_values('key', ignore_index=True))
    pd.testing.assert_frame_equal(resumed.trajectories, through.trajectories)


def test_a_saved_state_of_another_call_is_not_resumed(tmp_path):
    # the fingerprint: a state saved by a call with other settings is ignored, and the call starts afresh
    from fracsgd.core import checkpointing
    from fracsgd.datasets.moons import load_moons
    from fracsgd.train.ensemble import train_ensemble
    from fracsgd.nets.models import make_mlp
    X, y = load_moons(256, 0.2, seed=0)[:2]
    nets = lambda: [make_mlp([2, 8, 2], seed=s) for s in range(2)]
    with checkpointing(tmp_path, every=0):
        train_ensemble(nets(), (X, y), n_steps=20, batch_size=32)
    fresh = train_ensemble(nets(), (X, y), n_steps=20, batch_size=32, lr=0.02)
    with checkpointing(tmp_path, every=0):
        other = train_ensemble(nets(), (X, y), n_steps=20, batch_size=32, lr=0.02)
    pd.testing.assert_frame_equal(other, fresh)


class _Stop(Exception):
    pass


class _StopOnce:
    "Stops the training once, after step `step` (class state: not saved with the observers)."
    fired = False

    def __init__(self, step):
        self.step = step

    def observe(self, trainer, step):
        if not _StopOnce.fired and step == self.step:
            _StopOnce.fired = True
            raise _Stop


def test_the_mnist_observers_and_llc_along_training_resume_exactly(tmp_path):
    # the MNIST studies' explored-volume counter (sets of cells, a projection on the weights) and the increments
    # recorder, with the LLC along training: stopped at step 25 of 40, resumed, equal to a run straight through
    from fracsgd.diffusion.ageing import IncrementRecorder
    from fracsgd.core import checkpointing
    from fracsgd.train.ensemble import EnsembleSettings, PerChunk, train_ensemble
    from fracsgd.nets.models import make_mlp
    from fracsgd.llc.settings import PAPER_PRESET
    from fracsgd.studies.mnist_runs import VolumeCounter
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(300, 12, generator=g), torch.randint(0, 3, (300,), generator=g)
    s = EnsembleSettings(lr=0.05, batch_size=32, n_steps=40, every=5, llc_every=20,
                         llc=PAPER_PRESET.replace(n_draws=10, batch_size=32))

    def case(folder=None, stop=None):
        nets = [make_mlp([12, 8, 3], batch_norm=True, seed=k) for k in range(3)]
        observers = [VolumeCounter((0.01, 0.1)), PerChunk(lambda: IncrementRecorder((5, 10), (1, 2, 5), 40))]
        import contextlib, warnings
        with warnings.catch_warnings(), (checkpointing(folder, every=0) if folder else contextlib.nullcontext()):
            warnings.simplefilter('ignore')
            table = train_ensemble(nets, (X, y), settings=s, observers=observers + ([stop] if stop else []))
        return table, observers[0].table(), observers[1].table(), nets

    through = case()
    _StopOnce.fired = False
    with pytest.raises(_Stop):
        case(tmp_path, _StopOnce(25))
    resumed = case(tmp_path, _StopOnce(25))
    for a, b in zip(through[:3], resumed[:3]):
        pd.testing.assert_frame_equal(a, b)
    assert through[0].llc.notna().sum() == 6 and len(through[1]) and len(through[2])
    for a, b in zip(through[3], resumed[3]):
        assert all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values()))
