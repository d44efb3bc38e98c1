# %% [markdown]
# # Grokking models and measurements
#
# > The networks of the grokking study (token embeddings and an MLP, or a one-layer transformer) and what the recorder measures beside R(t): accuracy and the weights' projected steps.

# %%
#| default_exp studies.grokking_models

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import math

import torch
from torch import nn
import torch.nn.functional as F

# %%
torch.set_num_threads(1)   # two cores shared with other work


# %% [markdown]
# ## Models
#
# Both take a batch of operand pairs, int64 of shape (batch, 2), and return (batch, p) logits. The MLP's layers
# are `emb`, `fc1`, `fc2`, `out`, so the recorder's per-layer displacement has one column for each.

# %%
#| export
class EmbedMLP(nn.Module):
    "Token embeddings of the two operands, concatenated, then ReLU layers to `p` logits."
    def __init__(self, p: int, embed: int = 32, hidden: int = 128):
        super().__init__()
        self.emb = nn.Embedding(p, embed)
        self.fc1, self.fc2, self.out = nn.Linear(2 * embed, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, p)
    def forward(self, x):                                        # x: [batch, 2] int64
        h = self.emb(x).flatten(1)                               # [batch, 2·embed]
        return self.out(F.relu(self.fc2(F.relu(self.fc1(h)))))

class OneLayerTransformer(nn.Module):
    "One attention block (one head) and an MLP over the tokens a, b, '='; the logits are read at '='."
    def __init__(self, p: int, embed: int = 32, hidden: int = 128):
        super().__init__()
        self.emb, self.pos = nn.Embedding(p + 1, embed), nn.Parameter(torch.randn(3, embed) * 0.02)
        self.qkv, self.proj = nn.Linear(embed, 3 * embed), nn.Linear(embed, embed)
        self.fc1, self.fc2, self.out = nn.Linear(embed, hidden), nn.Linear(hidden, embed), nn.Linear(embed, p)
        self.p = p
    def forward(self, x):                                        # x: [batch, 2] int64
        eq = torch.full_like(x[:, :1], self.p)
        h = self.emb(torch.cat([x, eq], 1)) + self.pos           # [batch, 3, embed]
        q, k, v = self.qkv(h).chunk(3, -1)
        att = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(q.shape[-1]), -1)   # [batch, 3, 3]
        h = h + self.proj(att @ v)
        h = h + self.fc2(F.relu(self.fc1(h)))
        return self.out(h[:, -1])

MODELS = {'mlp': EmbedMLP, 'transformer': OneLayerTransformer}

def make_model(name: str, p: int, embed: int, hidden: int, seed: int) -> nn.Module:
    "The named model (`MODELS`), initialised from `seed`."
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of {sorted(MODELS)}")
    torch.manual_seed(seed)
    return MODELS[name](p, embed, hidden)


# %%
for name in MODELS:
    m = make_model(name, 7, 8, 16, seed=0)
    assert m(torch.tensor([[1, 2], [3, 4]])).shape == (2, 7)
[n for n, _ in make_model('mlp', 53, 32, 128, 0).named_parameters()]


# %% [markdown]
# ## Measurements along training
#
# Two measurements go into the [recorder](displacement.html) beside the LLC: `Accuracy` (train and test accuracy
# every `every` steps) and `StepProjections` (the weights' step since the previous call, projected on fixed
# random unit directions, and its norm). The recorder records every step, so the projections are per-step.

# %%
#| export
class Accuracy:
    "Recorder measurement: accuracy on each named (X, y) pair, every `every` steps."
    def __init__(self, every: int, **data):
        self.every, self.data = every, data
    @torch.no_grad()
    def __call__(self, model):
        mode = model.training
        model.eval()
        out = {k: float((model(X).argmax(1) == y).double().mean()) for k, (X, y) in self.data.items()}
        model.train(mode)
        return out

class StepProjections:
    "Recorder measurement: the step w_t − w_prev projected on `n` fixed random unit directions, and its norm."
    def __init__(self, model: nn.Module, n: int = 4, seed: int = 0):
        self.prev = self._flat(model)
        g = torch.Generator().manual_seed(seed)
        u = torch.randn(n, len(self.prev), generator=g, dtype=torch.float64)
        self.u = (u / u.norm(dim=1, keepdim=True)).to(self.prev.device)    # [n, params]
    @staticmethod
    def _flat(model):
        return torch.cat([p.detach().reshape(-1) for p in model.parameters() if p.requires_grad]).double()
    def __call__(self, model):
        w = self._flat(model)
        dw, self.prev = w - self.prev, w
        return {'norm': float(dw.norm()), **{f'u{i}': float(v) for i, v in enumerate(self.u @ dw)}}


# %% [markdown]
# A check of `StepProjections`: after one plain gradient step of size η, the step norm it reports is η times the
# gradient norm, and the projections are the step's dot products with unit vectors, so none exceeds the norm.

# %%
m = make_model('mlp', 7, 4, 8, seed=0)
sp = StepProjections(m, n=3, seed=0)
loss = F.cross_entropy(m(torch.tensor([[1, 2], [3, 4]])), torch.tensor([3, 0]))
loss.backward()
g = torch.cat([p.grad.reshape(-1) for p in m.parameters()]).double()
with torch.no_grad():
    for p in m.parameters():
        p -= 0.1 * p.grad
out = sp(m)
assert math.isclose(out['norm'], 0.1 * g.norm().item(), rel_tol=1e-5)
assert all(abs(out[f'u{i}']) <= out['norm'] for i in range(3))
acc = Accuracy(10, both=(torch.tensor([[1, 2], [3, 4]]), torch.tensor([3, 0])))
assert 0 <= acc(m)['both'] <= 1 and acc.every == 10
out

# %%
#| hide
import nbdev
nbdev.nbdev_export()
