"""The moons study on the sweep runner: a rerun trains only what is missing, and a changed configuration is never
served from old results."""
import contextlib, io, shutil
from dataclasses import replace

import fracsgd.studies.moons_diffusion as study
from fracsgd.store import load_study
from fracsgd.sweep import run_key, run_sweep

TINY = replace(study.QUICK, n_models=5, nets_per_run=2, epochs=2)


def _sweep(cfg, folder):
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        run_sweep(study.sweep(cfg), folder, workers=1, progress=False)
    return printed.getvalue()


def test_rerun_trains_only_missing_runs(tmp_path):
    assert '3 done, 0 failed, 0 skipped' in _sweep(TINY, tmp_path)
    first = load_study(tmp_path).trajectories
    assert sorted(first.run.unique()) == [0, 1, 2, 3, 4]
    lost = run_key(study.runs(TINY)[1])                     # as if this run had never finished
    shutil.rmtree(tmp_path / 'runs' / lost)
    assert '1 done, 0 failed, 2 skipped' in _sweep(TINY, tmp_path)
    again = load_study(tmp_path).trajectories
    # the same seeds give the same trajectories: nothing was lost or changed
    assert again.sort_values(['run', 'step']).reset_index(drop=True).equals(
        first.sort_values(['run', 'step']).reset_index(drop=True))
    assert '0 done, 0 failed, 3 skipped' in _sweep(TINY, tmp_path)


def test_a_changed_configuration_is_not_served_from_old_runs(tmp_path):
    _sweep(TINY, tmp_path)
    longer = replace(TINY, epochs=3)
    assert '3 done, 0 failed, 0 skipped' in _sweep(longer, tmp_path)
    assert load_study(tmp_path).trajectories.step.max() == 3 * 4
