"""The host's time per SGLD step, with every tensor tiny: what a step costs a GPU that waits for its host (issue 24).

    python tools/step_host_time.py                                    # this checkout
    PYTHONPATH=/path/to/other/checkout python tools/step_host_time.py  # another version of the package, to compare

On a GPU the small nets of the paper are bound by the host: Python, operator dispatch and kernel launches, not
arithmetic. Timing the real nets on this CPU does not show that cost, because the CPU's arithmetic (and its batched
matrix products, one small GEMM per row) dominates. So this times the same loops with nets 2 units wide, 2 inputs
and minibatches of 2, where the arithmetic vanishes and only the host's work is left:

- the LLC benchmark's one chain (`estimate_llc`, no diagnostics and every 20 steps) against the bare
  forward+backward step and the floor (the bare step plus one Gaussian per weight), as in `bench_step_overhead`;
- the study's SGLD step of K chains (K nets of the study's shape with batch norm in eval mode, one chain each, the
  paper's setting, no diagnostics) for K = 10 and 50;
- the ensemble trainer's step of the study's 50 nets (SGD, batch norm in train mode).

`--real-size` times instead the study's LLC and training steps with the real nets, where this CPU's arithmetic
dominates (three timings each, not a median).

Each figure is the median of `--repeats` (the study step: `--study-repeats`) interleaved timings of
(time of n2 steps - time of n1 steps) / (n2 - n1), one thread, in one process. Prints JSON. On a shared machine run
the versions to compare one after the other, twice, and read the spread.
"""
from __future__ import annotations
import argparse, json, platform, subprocess, time, warnings
from pathlib import Path

import numpy as np
import torch

warnings.simplefilter('ignore')
torch.set_num_threads(1)

from fracsgd.bench.llc import _bench_settings, bare_steps
from fracsgd.llc.estimate import estimate_llc
from fracsgd.nets.models import make_mlp
import fracsgd


def _per_step(run, n1: int, n2: int) -> float:
    t = []
    for n in (n1, n2):
        t0 = time.perf_counter()
        run(n)
        t.append(time.perf_counter() - t0)
    return (t[1] - t[0]) / (n2 - n1)


def lone_chain(repeats: int, n1: int = 100, n2: int = 600) -> list[dict]:
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(2000, 2, generator=g), torch.randint(0, 10, (2000,), generator=g)
    net = make_mlp([2, 2, 2, 10], seed=0)
    rows = []
    for every in (0, 20):
        s = _bench_settings(len(X), n1, 2).replace(n_chains=1, diag_every=every)
        ours = lambda n: estimate_llc(net, (X, y), 'classification', s.replace(n_draws=n))
        times = [(_per_step(ours, n1, n2),
                  bare_steps(net, X, y, n2 - n1, 2) / (n2 - n1),
                  bare_steps(net, X, y, n2 - n1, 2, noise=True) / (n2 - n1)) for _ in range(repeats)]
        t_ours, t_bare, t_floor = np.median(np.array(times), 0)
        rows.append(dict(workload=f"one chain, diagnostics {'every 20 steps' if every else 'off'}",
                         ours_us=1e6 * t_ours, bare_us=1e6 * t_bare, floor_us=1e6 * t_floor,
                         ours_over_bare=t_ours / t_bare, ours_over_floor=t_ours / t_floor))
    return rows


def study_chains(repeats: int, n1: int = 100, n2: int = 400) -> list[dict]:
    from fracsgd.studies import mnist_runs as mr
    from fracsgd.studies.mnist_seeds import FULL
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(2000, 2, generator=g), torch.randint(0, 10, (2000,), generator=g)
    s = mr.llc_setting(FULL.llc).replace(diag_every=0, batch_size=2)
    rows = []
    for K in (10, 50):
        nets = [make_mlp([2, 2, 2, 2, 10], batch_norm=True, seed=i) for i in range(K)]
        ours = lambda n: estimate_llc(nets, (X, y), 'classification', s.replace(n_draws=n))
        t = float(np.median([_per_step(ours, n1, n2) for _ in range(repeats)]))
        rows.append(dict(workload=f"{K} nets x 1 chain (the study's LLC setting, batch norm in eval mode)",
                         ours_us=1e6 * t))
    return rows


def training_step(repeats: int, n1: int = 20, n2: int = 120) -> list[dict]:
    from fracsgd.train.ensemble import EnsembleTrainer
    from fracsgd.nets.stack import resolve_loss
    from fracsgd.studies.mnist_seeds import FULL, STUDY
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(2000, 2, generator=g), torch.randint(0, 10, (2000,), generator=g)
    base = STUDY.runs(FULL)[0].settings().replace(every=10, llc_every=0, batch_size=2)
    nets = [make_mlp([2, 2, 2, 2, 10], batch_norm=True, seed=i) for i in range(50)]
    def steps(n):
        t = EnsembleTrainer(nets, range(len(nets)), (X, y), resolve_loss('classification'), base.replace(n_steps=n), 'cpu')
        for _ in range(n):
            t.step()
    t = float(np.median([_per_step(steps, n1, n2) for _ in range(repeats)]))
    return [dict(workload="ensemble training step, 50 nets (the study's SGD, batch norm in train mode)", ours_us=1e6 * t)]


def real_size(repeats: int = 3) -> list[dict]:
    """The study's LLC step and training step with the real nets (784-128-64-32-10 with batch norm, 50 of them,
    minibatch 256, random images): this CPU's arithmetic, for a check that the host-side change costs it nothing."""
    from fracsgd.train.ensemble import EnsembleTrainer
    from fracsgd.nets.stack import resolve_loss
    from fracsgd.studies import mnist_runs as mr
    from fracsgd.studies.mnist_seeds import FULL, STUDY
    g = torch.Generator().manual_seed(0)
    X, y = torch.rand(5000, 784, generator=g), torch.randint(0, 10, (5000,), generator=g)
    nets = [make_mlp([784, 128, 64, 32, 10], batch_norm=True, seed=i) for i in range(50)]
    s = mr.llc_setting(FULL.llc).replace(diag_every=0)
    llc = lambda n: estimate_llc(nets, (X, y), 'classification', s.replace(n_draws=n))
    base = STUDY.runs(FULL)[0].settings().replace(every=10, llc_every=0)
    def train(n):
        t = EnsembleTrainer(nets, range(len(nets)), (X, y), resolve_loss('classification'), base.replace(n_steps=n), 'cpu')
        for _ in range(n):
            t.step()
    return [dict(workload="real size: LLC step, 50 nets x 1 chain", ours_us=[1e6 * _per_step(llc, 20, 60) for _ in range(repeats)]),
            dict(workload="real size: training step, 50 nets", ours_us=[1e6 * _per_step(train, 10, 30) for _ in range(repeats)])]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--repeats', type=int, default=31, help='interleaved timings of the one chain (the median)')
    ap.add_argument('--study-repeats', type=int, default=7, help='timings of the study step (the median)')
    ap.add_argument('--real-size', action='store_true', help='only the real nets: three timings of each step (minutes)')
    a = ap.parse_args()
    root = Path(fracsgd.__file__).resolve().parents[1]
    try:
        commit = subprocess.run(['git', '-C', str(root), 'rev-parse', '--short', 'HEAD'], capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = ''
    print(json.dumps(dict(package=str(root), commit=commit, torch=torch.__version__, python=platform.python_version(),
                          date=time.strftime('%Y-%m-%d'), repeats=a.repeats, study_repeats=a.study_repeats,
                          rows=real_size() if a.real_size else
                          lone_chain(a.repeats) + study_chains(a.study_repeats) + training_step(a.study_repeats)), indent=1))


if __name__ == '__main__':
    main()
