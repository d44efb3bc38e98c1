"""A study run killed part-way through its training resumes from its last saved state, not from step 0, and gives
the results of a run that was never stopped.

Reference: the same study run through in another folder (the same placement). The killed run saves its
state every 0.3 s (`FRACSGD_CHECKPOINT_EVERY`); the kill lands after its first saved state and before the run
finishes. Results are compared exactly, apart from the recorded seconds."""
import os, signal, subprocess, sys, time
from pathlib import Path

import pandas as pd
import pytest
import torch

from fracsgd.runner import checkpoint_dir
from fracsgd.store import load_study

from fracsgd.runner import run_study

RUN = dict(device='cpu', workers=1, progress=False, report=False)


def killable_run(folder, every: float):
    "The moons smoke study in another process, saving its training state every `every` seconds."
    code = f"from fracsgd.runner import run_study; run_study('moons-diffusion', 'smoke', {str(folder)!r}, **{RUN!r})"
    return subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env={**os.environ, 'FRACSGD_CHECKPOINT_EVERY': str(every)},
                            start_new_session=True)


def saved_states(folder):
    return sorted((Path(folder) / 'checkpoints').glob('*/*.pt'))


def test_a_run_killed_in_training_resumes_from_its_saved_state(tmp_path):
    killed = killable_run(tmp_path / 'killed', every=0.3)
    deadline = time.time() + 120
    while not saved_states(tmp_path / 'killed') and killed.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    time.sleep(0.5)                                                   # a few more saves
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
    from fracsgd.ensemble import train_ensemble
    from fracsgd.models import make_mlp
    X, y = load_moons(256, 0.2, seed=0)[:2]
    nets = lambda: [make_mlp([2, 8, 2], seed=s) for s in range(2)]
    with checkpointing(tmp_path, every=0):
        train_ensemble(nets(), (X, y), n_steps=20, batch_size=32)
    fresh = train_ensemble(nets(), (X, y), n_steps=20, batch_size=32, lr=0.02)
    with checkpointing(tmp_path, every=0):
        other = train_ensemble(nets(), (X, y), n_steps=20, batch_size=32, lr=0.02)
    pd.testing.assert_frame_equal(other, fresh)
