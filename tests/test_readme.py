"""The README's example runs as printed, and the names `fracsgd` exports first are the ones the chapters define."""
import re
from pathlib import Path

import torch

import fracsgd

ROOT = Path(__file__).resolve().parents[1]


def test_first_names():
    assert set(fracsgd.__all__) >= {'estimate_llc', 'calibrate', 'Recorder', 'fit_power_law', 'train_ensemble',
                                    'run_study'}
    from fracsgd.llc.estimate import estimate_llc
    from fracsgd.train.displacement import Recorder
    assert fracsgd.estimate_llc is estimate_llc and fracsgd.Recorder is Recorder
    for name in fracsgd.__all__:
        assert getattr(fracsgd, name).__name__ == name


def test_readme_example_runs(tmp_path, monkeypatch):
    "The training-loop example, with a small model, loader, loss and optimizer in front of it."
    block = re.search(r'```python\n(.*?)```', (ROOT / 'README.md').read_text(), re.S).group(1)
    torch.manual_seed(0)
    X, y = torch.randn(512, 4), torch.randint(0, 2, (512,))
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    n_steps = 1500
    loader = [(X[i % 16 * 32:(i % 16 + 1) * 32], y[i % 16 * 32:(i % 16 + 1) * 32]) for i in range(n_steps)]
    scope = dict(model=model, loader=loader, n_steps=n_steps, loss_fn=torch.nn.functional.cross_entropy,
                 opt=torch.optim.SGD(model.parameters(), lr=0.05))
    monkeypatch.chdir(tmp_path)
    exec(block, scope)
    assert (tmp_path / 'trajectory.parquet').exists() and len(scope['tab']) > 10
    assert 0 < scope['fit'].slope < 2
