"The runner plans its workers by memory as well as cores (issue 44): a run that cannot fit is refused in one line before anything is written, fewer workers start as the budget shrinks, and a plan beyond a laptop's share is said before it starts."
import subprocess, sys
from pathlib import Path

import pytest

from fracsgd.core import available_memory, parse_memory
from fracsgd.experiment.runner import DRIVER_MEMORY, NotEnoughMemory, memory_notice, plan_workers, run_study
from fracsgd.studies import get_study


def test_a_smoke_run_under_a_budget_below_its_need_is_refused_in_one_line(tmp_path, monkeypatch):
    study = get_study('tiny-imagenet')
    cfg = study.with_stand_in(study.config('smoke'))
    need = max(study.memory(r) for r in study.runs(cfg))
    monkeypatch.setenv('FRACSGD_MEMORY', str(int(need // 2)))
    with pytest.raises(NotEnoughMemory) as e:
        run_study(study, 'smoke', tmp_path / 'run', stand_in=True, device='cpu', progress=False)
    message = str(e.value)
    assert '\n' not in message and message.startswith('tiny-imagenet smoke needs about') and 'is available' in message
    assert not (tmp_path / 'run').exists()                                    # refused before anything was written


def test_the_command_line_refuses_in_one_line(tmp_path):
    fracsgd = Path(sys.executable).with_name('fracsgd')
    out = subprocess.run([str(fracsgd), 'run', 'tiny-imagenet', '--preset', 'smoke', '--stand-in', '--out',
                          str(tmp_path / 'run'), '--no-progress'], capture_output=True, text=True, timeout=300,
                         env={**__import__('os').environ, 'FRACSGD_MEMORY': '64M'})
    assert out.returncode != 0 and out.stderr.strip().count('\n') == 0, out.stderr
    assert 'needs about' in out.stderr and '64 MB is available' in out.stderr


def test_fewer_workers_as_the_budget_goes_down():
    study = get_study('tiny-imagenet')
    runs = study.runs(study.with_stand_in(study.config('quick')))
    need = max(study.memory(r) for r in runs)
    picked = [plan_workers(map(study.memory, runs), cores=8, available=k * need + DRIVER_MEMORY) for k in (8, 4, 3, 2, 1)]
    assert picked == [4, 4, 3, 2, 1]                                           # at most one worker per run (4 archs)
    with pytest.raises(NotEnoughMemory):
        plan_workers(map(study.memory, runs), cores=8, available=0.5 * need)
    assert plan_workers(map(study.memory, runs), cores=8, available=8 * need, workers=2) == 2   # --workers decides
    with pytest.raises(NotEnoughMemory, match='4 workers'):
        plan_workers(map(study.memory, runs), cores=8, available=2 * need, workers=4)
    assert plan_workers(map(study.memory, runs), cores=8, available=2 * need) == 1         # the runner's own counts too


def test_memory_sizes_and_the_override(monkeypatch):
    assert parse_memory('2G') == 2 * 2 ** 30
    monkeypatch.setenv('FRACSGD_MEMORY', '3G')
    assert available_memory() == 3 * 2 ** 30
    monkeypatch.setenv('FRACSGD_MEMORY', 'lots')
    with pytest.raises(ValueError, match='FRACSGD_MEMORY'):
        available_memory()


def test_a_plan_beyond_a_laptops_share_is_said_before_it_starts(tmp_path, monkeypatch, capsys):
    study = get_study('tiny-imagenet')
    monkeypatch.setenv('FRACSGD_MEMORY', '64G')
    class Stop(Exception):
        "Raised where the runner would look for the data: after the plan, before anything runs."
    def stop(cfg):
        raise Stop
    monkeypatch.setattr(study, 'check_data', stop)
    with pytest.raises(Stop):
        run_study(study, 'quick', tmp_path / 'run', stand_in=True, device='cpu', progress=False)
    said = capsys.readouterr().out
    assert said.count('\n') == 1 and said.startswith('tiny-imagenet quick needs about'), said
    assert 'a laptop spares' in said and 'of the 64.0 GB available' in said
    assert not (tmp_path / 'run').exists()
    smoke = study.runs(study.with_stand_in(study.config('smoke')))
    assert memory_notice(map(study.memory, smoke), 1, 64 * 2 ** 30) == ''     # the smoke preset fits a laptop
