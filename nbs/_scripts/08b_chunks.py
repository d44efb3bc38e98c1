# %% [markdown]
# # Members per chunk
#
# > How many members of an ensemble train at once: the bytes one member needs during a step, a memory budget, and consecutive chunks of equal size that fit it.

# %%
#| default_exp train.chunks

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import copy, math, os

import torch
from torch import nn

# %%
from fracsgd.train.ensemble import EnsembleSettings
from fracsgd.nets.models import make_mlp


# %% [markdown]
# An ensemble too large for the device is trained in chunks of members, one chunk after another; since every
# member has its own initialization, its own minibatch stream (seeded by its index in the whole ensemble) and
# no coupling to the others, chunking changes no number except through floating-point rounding of batched
# kernels. `member_bytes` estimates what one member costs during a step:
#
# * per parameter, the weights, their initial copy (for $R(t)$), the gradient and the optimizer state (one
#   momentum buffer for SGD with momentum, two moments for Adam);
# * per minibatch, the activations: one forward pass of a copy of the model on a zero batch counts the outputs
#   of its leaf modules, which the backward pass keeps and then matches with gradients of the same size (a
#   factor of 2), plus the gathered input batch.
#
# `plan_chunks` cuts the members into consecutive chunks of equal size (the last may be smaller) that fit the
# budget; a budget smaller than one member still gives chunks of one. The default budget is half the free
# memory of a GPU, or a quarter of the available RAM.

# %%
#| export
def _available_ram() -> int:
    "Bytes of RAM available: psutil's estimate when it is installed, else the free pages (POSIX), else 8 GiB."
    try:
        import psutil
        return int(psutil.virtual_memory().available)
    except ImportError:
        pass
    try:
        return os.sysconf('SC_AVPHYS_PAGES') * os.sysconf('SC_PAGE_SIZE')
    except (AttributeError, ValueError, OSError):
        return 8 * 2**30

def default_memory_budget(device) -> int:
    "Bytes a chunk may use: half the free memory of a CUDA device, else a quarter of the available RAM."
    device = torch.device(device)
    if device.type == 'cuda':
        return int(torch.cuda.mem_get_info(device)[0] // 2)
    return _available_ram() // 4

def member_bytes(template: nn.Module, sample_input: torch.Tensor, settings) -> int:
    """Estimated bytes one member needs during a step on a minibatch shaped like `sample_input`
    [batch, ...]: parameters with their state (`settings.optimizer` and `.momentum` decide how much), plus
    activations and their gradients."""
    params = list(template.parameters())
    per_param = 3 + (2 if settings.optimizer in ('adam', 'adamw') else int(settings.momentum > 0))  # w, w0, grad, state
    param_bytes = per_param * sum(p.numel() * p.element_size() for p in params)
    counted = []
    def count(module, inputs, output):
        if torch.is_tensor(output):
            counted.append(output.numel() * output.element_size())
    probe = copy.deepcopy(template).to(sample_input.device)
    leaves = [m for m in probe.modules() if not list(m.children())]
    hooks = [m.register_forward_hook(count) for m in leaves]
    try:
        with torch.no_grad():
            probe(torch.zeros_like(sample_input))
    finally:
        for h in hooks:
            h.remove()
    input_bytes = sample_input.numel() * sample_input.element_size()
    return int(param_bytes + 2 * sum(counted) + input_bytes)

def plan_chunks(n_members: int, per_member: int, budget: int) -> list[range]:
    "Consecutive ranges of member indices, of equal size (the last may be smaller), each within `budget`."
    if n_members < 1:
        raise ValueError(f"an ensemble needs at least one member, got {n_members}")
    size = int(max(1, min(n_members, budget // max(per_member, 1))))
    n_chunks = math.ceil(n_members / size)
    size = math.ceil(n_members / n_chunks)                   # balance: chunks of equal size
    return [range(a, min(a + size, n_members)) for a in range(0, n_members, size)]


# %%
net = make_mlp([784, 128, 64, 10], batch_norm=True, seed=0)
n_p = sum(p.numel() for p in net.parameters())
b = member_bytes(net, torch.zeros(256, 784), EnsembleSettings(optimizer='adam'))
# 5 float32 copies of the weights; activations: 256 x (128 + 128 + 128 + 64 + 64 + 64 + 10) floats, twice
assert b == 5 * 4 * n_p + 2 * 4 * 256 * (3 * 128 + 3 * 64 + 10) + 4 * 256 * 784
assert [len(c) for c in plan_chunks(10, 100, 350)] == [3, 3, 3, 1]
assert [len(c) for c in plan_chunks(10, 100, 10**9)] == [10]
assert [len(c) for c in plan_chunks(5, 100, 1)] == [1] * 5
assert [list(c) for c in plan_chunks(7, 1, 3)] == [[0, 1, 2], [3, 4, 5], [6]]
assert default_memory_budget('cpu') > 0
print(f"one MNIST member with Adam at batch 256: {b / 2**20:.1f} MiB")

# %%
#| hide
import nbdev
nbdev.nbdev_export()
