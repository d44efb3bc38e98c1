"""The moons study resumes after a kill: finished runs are neither lost nor repeated."""
from dataclasses import replace
import fracsgd.studies.moons_diffusion as study


def test_resume_trains_only_missing_runs(tmp_path, monkeypatch):
    cfg = replace(study.QUICK, n_models=4, epochs=3)
    calls = []
    real = study.train_one
    monkeypatch.setattr(study, 'train_one', lambda c, s, X, y: calls.append(s) or real(c, s, X, y))
    first = study.train_all(cfg, tmp_path, progress=False)
    assert calls == [0, 1, 2, 3]
    # simulate a kill: seed 2's file never finished (only a temporary file remains), seed 3 never started
    (tmp_path / 'runs' / 'seed0002.parquet').rename(tmp_path / 'runs' / '.seed0002.parquet.x1.tmp')
    (tmp_path / 'runs' / 'seed0003.parquet').unlink()
    calls.clear()
    again = study.train_all(cfg, tmp_path, progress=False)
    assert calls == [2, 3]
    assert again.equals(first)   # same seeds give the same trajectories, so nothing was lost or changed
    calls.clear()
    study.train_all(cfg, tmp_path, progress=False)
    assert calls == []
