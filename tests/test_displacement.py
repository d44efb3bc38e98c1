"""The recorder against hand-computed distances, with a real Hugging Face Trainer, and its atomic writes."""
import copy
import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn
import torch.nn.functional as F

from fracsgd.train.displacement import Recorder, hf_callback, log_steps
from fracsgd.nets.models import make_mlp
from fracsgd.train.loop import train


def flat(model): return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_recorded_distance_equals_direct_computation():
    torch.manual_seed(0)
    net = make_mlp([10, 32, 16, 3], batch_norm=True, seed=0)
    w0 = flat(net).clone()
    X, y = torch.randn(200, 10), torch.randint(0, 3, (200,))
    rec = Recorder(net, every=log_steps(60, 10))
    train(net, X, y, lr=0.05, batch_size=32, steps=60, recorder=rec)
    tab = rec.table
    assert tab.step.iloc[-1] == 60
    assert np.isclose(tab.R.iloc[-1], (flat(net) - w0).norm().item(), rtol=1e-6)
    per = tab.filter(like='R/').iloc[-1].to_numpy()
    assert np.isclose(np.sqrt((per ** 2).sum()), tab.R.iloc[-1], rtol=1e-9)


class TinyClassifier(nn.Module):
    def __init__(self):
        super().__init__(); self.body = nn.Linear(4, 8); self.head = nn.Linear(8, 2)
    def forward(self, x, labels=None):
        logits = self.head(torch.relu(self.body(x)))
        return {'loss': F.cross_entropy(logits, labels), 'logits': logits}


def test_hf_trainer_callback(tmp_path):
    transformers = pytest.importorskip('transformers')
    torch.manual_seed(0)
    rows = [{'x': torch.randn(4), 'labels': int(i % 2)} for i in range(64)]
    model = TinyClassifier()
    w0 = copy.deepcopy(model)
    cb = hf_callback(every=1)
    args = transformers.TrainingArguments(output_dir=str(tmp_path), max_steps=12, per_device_train_batch_size=8,
                                          learning_rate=0.05, logging_steps=1, report_to=[], save_strategy='no',
                                          use_cpu=True, disable_tqdm=True)
    transformers.Trainer(model=model, args=args, train_dataset=rows, callbacks=[cb]).train()
    tab = cb.recorder.table
    assert tab.step.tolist() == list(range(13))
    assert np.isclose(tab.R.iloc[-1], (flat(model) - flat(w0)).norm().item(), rtol=1e-5)
    assert {'R/body', 'R/head'} <= set(tab.columns) and tab.loss.iloc[1:].notna().all()


def test_save_is_atomic(tmp_path, monkeypatch):
    net = make_mlp([3, 4, 2], seed=0)
    rec = Recorder(net)
    def boom(self, *a, **k): raise KeyboardInterrupt('killed while writing')
    monkeypatch.setattr(pd.DataFrame, 'to_parquet', boom)
    with pytest.raises(KeyboardInterrupt): rec.save(tmp_path / 'traj.parquet')
    assert list(tmp_path.iterdir()) == []


def test_divergence_and_bad_schedule_are_named():
    net = make_mlp([3, 4, 2], seed=0)
    with pytest.raises(FloatingPointError, match='step 3'): Recorder(net).record(3, float('nan'))
    with pytest.raises(ValueError, match='every'): Recorder(net, every=0)
    with pytest.raises(ValueError, match='trainable'): Recorder(nn.ReLU())
