"""What one saved training state of `mnist-seeds --full` costs: its size and the seconds to write it.

    .venv/bin/python tools/checkpoint_cost.py

The state at the run's last step, at its largest: 50 nets 784-128-64-32-10 with batch norm and plain SGD, a recorded
row at every one of the 2,000 steps (more than the study records), and the explored-volume observer of 10 nets with
2,000 distinct cells per net at each of two cell sizes (the most it could have). No step is trained; the tensors
have their real sizes. The runner saves such a state every `CHECKPOINT_EVERY` seconds."""
import os, tempfile, time
from pathlib import Path

import torch

from fracsgd.core import CHECKPOINT_EVERY, rng_states, save_state
from fracsgd.train.ensemble import EnsembleSettings, EnsembleTrainer, _observer_state
from fracsgd.nets.models import make_mlp
from fracsgd.nets.stack import resolve_loss
from fracsgd.studies.mnist_runs import VolumeCounter

torch.set_num_threads(1)
nets = [make_mlp([784, 128, 64, 32, 10], batch_norm=True, seed=s) for s in range(50)]
X, y = torch.randn(2048, 784), torch.randint(0, 10, (2048,))
trainer = EnsembleTrainer(nets, range(50), (X, y), resolve_loss('classification'),
                          EnsembleSettings(batch_size=256, n_steps=2000), 'cpu')
volume = VolumeCounter((0.01, 0.1))
volume.observe(trainer, 0)
for t in range(1, 2001):
    trainer.record(t)
trainer.t = 2000
volume.seen = {e: {m: {(float(i), float(m)) for i in range(2000)} for m in cells} for e, cells in volume.seen.items()}
path = Path(tempfile.mkdtemp()) / '0.pt'
seconds = []
for _ in range(3):
    t0 = time.perf_counter()
    save_state(path, 'cost', dict(trainer=trainer.state(), observers=[_observer_state(volume)], rng=rng_states()))
    seconds.append(time.perf_counter() - t0)
print(f"one saved state: {os.path.getsize(path) / 2**20:.1f} MiB, written in {min(seconds):.2f}-{max(seconds):.2f} s "
      f"(3 writes, one thread); every {CHECKPOINT_EVERY:.0f} s that is {max(seconds) / CHECKPOINT_EVERY:.2%} of the run")
