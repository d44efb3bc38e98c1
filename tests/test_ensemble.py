"""The ensemble trainer equals a per-member `nn.Module` + `torch.optim` loop (issue #10, item 1).

Float64 throughout. Each member starts from `make_mlp(sizes, seed=s)` and walks through its own minibatch
order: per epoch one `torch.randperm(n)` from a generator seeded `chain_seed(seed, member, 0, 1)`, cut into
`n // batch` minibatches (the last incomplete one dropped), written out here independently of
`fracsgd.nets.stack.chain_minibatches`. Tolerance: 1e-10 absolute on every weight and batch-norm statistic after
120 steps; the two sides differ only in the order of floating-point operations (batched vs plain matrix
products).
"""
import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from fracsgd.datasets.moons import load_moons
from fracsgd.train.chunks import member_bytes, plan_chunks
from fracsgd.train.ensemble import EnsembleSettings, train_ensemble
from fracsgd.nets.models import make_mlp
from fracsgd.nets.stack import chain_seed

N_STEPS, BATCH, SEED = 120, 64, 7
TOL = 1e-10


@pytest.fixture(scope='module')
def data():
    X, y = load_moons(300, 0.2, seed=0)[:2]
    return X.double(), y


def members(sizes, batch_norm=False, n=4):
    return [make_mlp(sizes, batch_norm=batch_norm, seed=100 + s).double() for s in range(n)]


def member_order(member, n, batch):
    "Member `member`'s minibatch indices, step after step."
    g = torch.Generator().manual_seed(chain_seed(SEED, member, 0, 1))
    while True:
        perm = torch.randperm(n, generator=g)
        for j in range(n // batch):
            yield perm[j * batch:(j + 1) * batch]


def reference(nets, X, y, make_opt):
    "Train each net alone with torch.optim on its own order; the last minibatch loss of each."
    last = []
    for m, net in enumerate(nets):
        net.train()
        opt, order = make_opt(net.parameters()), member_order(m, len(X), BATCH)
        for _ in range(N_STEPS):
            idx = next(order)
            loss = F.cross_entropy(net(X[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        last.append(loss.item())
    return last


def max_difference(a, b):
    "Largest absolute difference between the parameters and buffers of two lists of models."
    diffs = [(p - q).abs().max().item() for ma, mb in zip(a, b)
             for p, q in zip(list(ma.parameters()) + list(ma.buffers()),
                             list(mb.parameters()) + list(mb.buffers()))]
    return max(diffs)


CASES = {
    'sgd-momentum-wd': (dict(optimizer='sgd', lr=0.05, momentum=0.9, weight_decay=1e-3), False,
                        lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-3)),
    'adam': (dict(optimizer='adam', lr=3e-3, betas=(0.9, 0.99), weight_decay=1e-4), False,
             lambda p: torch.optim.Adam(p, lr=3e-3, betas=(0.9, 0.99), weight_decay=1e-4)),
    'adamw': (dict(optimizer='adamw', lr=3e-3, betas=(0.9, 0.99), weight_decay=1e-2), False,
              lambda p: torch.optim.AdamW(p, lr=3e-3, betas=(0.9, 0.99), weight_decay=1e-2)),
    'batchnorm-sgd-momentum': (dict(optimizer='sgd', lr=0.05, momentum=0.9, dampening=0.1), True,
                               lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.1)),
}


@pytest.mark.parametrize('case', list(CASES))
def test_equals_per_member_loop(case, data):
    X, y = data
    opt_settings, batch_norm, make_opt = CASES[case]
    ens = members([2, 16, 16, 2], batch_norm)
    solo = copy.deepcopy(ens)
    s = EnsembleSettings(batch_size=BATCH, n_steps=N_STEPS, seed=SEED, every=N_STEPS, **opt_settings)
    table = train_ensemble(ens, (X, y), 'classification', s, device='cpu')
    last = reference(solo, X, y, make_opt)
    assert max_difference(ens, solo) <= TOL
    if batch_norm:                                   # running statistics are per member, and they moved
        stats = [net.layer1[1].running_mean for net in ens]
        assert not torch.allclose(stats[0], stats[1])
        assert all(int(net.layer1[1].num_batches_tracked) == N_STEPS for net in ens)
    final = table[table.step == N_STEPS].sort_values('member')
    assert np.allclose(final.loss.to_numpy(), last, rtol=0, atol=TOL)
    w0 = [torch.cat([p.reshape(-1) for p in net.parameters()]) for net in members([2, 16, 16, 2], batch_norm)]
    w = [torch.cat([p.reshape(-1) for p in net.parameters()]) for net in solo]
    R = [(a - b).norm().item() for a, b in zip(w, w0)]     # the distance each solo member travelled
    assert np.allclose(final.R.to_numpy(), R, rtol=0, atol=TOL)


def test_chunked_equals_unchunked(data):
    X, y = data
    # SGD, not Adam: the bias of a linear layer followed by batch norm has a zero gradient up to rounding, and
    # Adam divides that rounding noise by its own RMS, which turns 1e-17 differences into 1e-10 ones.
    s = EnsembleSettings(lr=0.05, momentum=0.9, batch_size=BATCH, n_steps=N_STEPS, seed=SEED, every=10)
    one, split = members([2, 16, 16, 2], True, n=5), members([2, 16, 16, 2], True, n=5)
    per = member_bytes(one[0], X[:BATCH], s)
    assert [len(c) for c in plan_chunks(5, per, 2 * per)] == [2, 2, 1]   # includes a lone-member chunk
    t_one = train_ensemble(one, (X, y), settings=s, memory_budget=100 * per, device='cpu')
    t_split = train_ensemble(split, (X, y), settings=s, memory_budget=2 * per, device='cpu')
    assert list(t_one.columns) == list(t_split.columns)
    assert np.allclose(t_one.to_numpy(), t_split.to_numpy(), rtol=0, atol=TOL, equal_nan=True)
    assert max_difference(one, split) <= TOL


def test_table_matches_recorder_columns(data):
    from fracsgd.train.displacement import Recorder
    X, y = data
    net = make_mlp([2, 8, 8, 2], batch_norm=True, seed=0).double()
    table = train_ensemble([net, copy.deepcopy(net)], (X, y), n_steps=5, batch_size=BATCH, device='cpu')
    expected = list(Recorder(copy.deepcopy(net)).table.columns)
    assert list(table.columns) == ['member'] + expected + ['accuracy']
    assert table[table.step == 0].accuracy.isna().all()
    assert table[table.step > 0].accuracy.between(0, 1).all()


def test_llc_warnings_reach_the_user(data):
    """20 draws cannot reach an ESS of 100 (`llc.ESS_MIN`), so every estimate is flagged: the warnings must
    reach the caller, name the ensemble member (not its position in a chunk) and the step, and come once per
    member and distinct problem (numbers left out), not once per estimate."""
    import re
    import warnings
    from fracsgd.llc.settings import PAPER_PRESET
    X, y = data
    nets = members([2, 8, 8, 2], n=3)
    s = EnsembleSettings(lr=0.05, batch_size=BATCH, n_steps=40, seed=SEED, llc_every=10,
                         llc=PAPER_PRESET.replace(n_draws=20, batch_size=BATCH))
    per = member_bytes(nets[0], X[:BATCH], s)
    assert [len(c) for c in plan_chunks(3, per, 2 * per)] == [2, 1]      # member 2 is model 0 of its chunk
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        table = train_ensemble(nets, (X, y), settings=s, memory_budget=2 * per, device='cpu')
    assert table.llc.notna().sum() == 3 * 4
    texts = [str(w.message) for w in caught if str(w.message).startswith('LLC of ensemble member')]
    named = [(int(re.search(r'member (\d+) at step (\d+)', t)[1]), int(re.search(r'at step (\d+)', t)[1]))
             for t in texts]
    assert {m for m, _ in named} == {0, 1, 2} and {st for _, st in named} <= {10, 20, 30, 40}
    assert all('ESS' in t for t in texts if ' at step 10:' in t)
    from fracsgd.llc.result import problem_clauses
    kinds = [(m, re.sub(r'\d[\d.e+-]*', '#', p)) for (m, _), t in zip(named, texts)
             for p in problem_clauses(t.split(': ', 1)[1])]
    assert len(kinds) == len(set(kinds)) and len(texts) < 3 * 4      # each problem once per member
