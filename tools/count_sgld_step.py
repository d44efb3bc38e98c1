"""Operator calls and host synchronisations per SGLD step of the LLC benchmark chain, against its floor (issue 24).

    python tools/count_sgld_step.py                              # this checkout
    PYTHONPATH=/path/to/other/checkout python tools/count_sgld_step.py   # another version of the package, to compare

Prints JSON; nbs/bench/sgld_step_ops.json holds the counts before and after the trim of 2026-11-26.
"""
import torch, warnings, json
warnings.simplefilter('ignore')
torch.set_num_threads(1)
from fracsgd.bench.timing import per_step
from fracsgd.bench.llc import _bench_settings, bare_steps
from fracsgd.llc.estimate import estimate_llc
from fracsgd.nets.models import make_mlp
X = torch.rand(5000, 784); y = torch.randint(0, 10, (5000,))
net = make_mlp([784, 128, 64, 10], seed=0)
out = {}
for every in (20, 0):
    s = _bench_settings(len(X), 100, 256).replace(n_chains=1, diag_every=every)
    r = per_step(lambda n: estimate_llc(net, (X, y), 'classification', s.replace(n_draws=n)), 100, 200)
    out[f'diag {every}'] = {k: r[k] for k in ('aten_ops', 'top_ops', 'kernel_ops', 'host_syncs')}
r = per_step(lambda n: bare_steps(net, X, y, n, noise=True), 100, 200)
out['floor'] = {k: r[k] for k in ('aten_ops', 'top_ops', 'kernel_ops', 'host_syncs')}
print(json.dumps(out))
