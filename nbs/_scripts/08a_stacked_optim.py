# %% [markdown]
# # Optimizers on stacked tensors
#
# > torch.optim's SGD (with momentum, dampening, Nesterov and weight decay), Adam and AdamW applied to every member of an ensemble at once, on tensors with a leading member axis, with the same steps as torch.optim to 1e-13.

# %%
#| default_exp train.stacked_optim

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import math
from typing import Sequence

import torch

# %%
from fracsgd.train.ensemble import EnsembleSettings          # the settings an ensemble hands its optimizer

# %% [markdown]
# The optimizer sees each parameter tensor of the ensemble as one tensor with a leading member axis
# (`[members, *shape]`). SGD and Adam act elementwise, so applying `torch.optim`'s update rules to the stacked
# tensors applies them to every member at once, with no coupling between members. `StackedOptimizer` does
# exactly that with PyTorch's multi-tensor (`torch._foreach_*`) kernels, following `torch.optim`'s conventions
# to the letter:
#
# * **SGD**: weight decay is added to the gradient, $g \leftarrow g + \lambda w$; the momentum buffer starts
#   as the first step's $g$ (no dampening on that step), then $b \leftarrow \mu b + (1-\tau) g$; Nesterov
#   steps along $g + \mu b$; the update is $w \leftarrow w - \eta\, b$.
# * **Adam** (Kingma & Ba's, with L2 weight decay added to the gradient as `torch.optim.Adam` does, not
#   AdamW): $m \leftarrow \beta_1 m + (1-\beta_1) g$, $v \leftarrow \beta_2 v + (1-\beta_2) g^2$, and
#   $w \leftarrow w - \frac{\eta}{1-\beta_1^t}\, m \big/ \big(\sqrt{v}/\sqrt{1-\beta_2^t} + \epsilon\big)$,
#   with $\epsilon$ added *after* the bias-corrected square root.
# * **AdamW** (Loshchilov & Hutter's decoupled weight decay, as `torch.optim.AdamW`): the same update on the bare
#   gradient, after the weights shrink by $w \leftarrow (1 - \eta\lambda)\, w$. The two versions of the paper
#   name different optimizers for their MNIST ablations (Adam in the ICLR version, AdamW with a weight-decay axis
#   in the arXiv version), so both are here.
#
# The parameters are updated in place, so they may be views of a larger tensor (the ensemble's flat weights).
# The gradients are consumed: weight decay is added to them in place (SGD, Adam).

# %%
#| export
OPTIMIZERS = ('sgd', 'adam', 'adamw')      # torch.optim's update rules, on stacked tensors

class StackedOptimizer:
    """`torch.optim`'s SGD, Adam or AdamW under `settings` (an `EnsembleSettings`, or anything with its fields
    optimizer, lr, momentum, dampening, nesterov, weight_decay, betas and eps), applied in place to the tensors
    `params` (any shapes)."""
    def __init__(self, params: Sequence[torch.Tensor], settings):
        self.params, self.s, self.t = list(params), settings, 0
        zeros = lambda: [torch.zeros_like(p) for p in self.params]
        if settings.optimizer in ('adam', 'adamw'):
            self.exp_avg, self.exp_avg_sq = zeros(), zeros()
        elif settings.momentum:
            self.momentum_buffer = zeros()

    @torch.no_grad()
    def step(self, grads: Sequence[torch.Tensor]) -> None:
        "One update of every parameter with the gradients `grads` (same shapes; changed in place)."
        self.t += 1
        grads = list(grads)
        if self.s.weight_decay and self.s.optimizer == 'adamw':              # decoupled: the weights shrink
            torch._foreach_mul_(self.params, 1 - self.s.lr * self.s.weight_decay)
        elif self.s.weight_decay:                                              # L2: added to the gradient
            torch._foreach_add_(grads, self.params, alpha=self.s.weight_decay)
        if self.s.optimizer in ('adam', 'adamw'):
            self._adam(grads)
        else:
            self._sgd(grads)

    def _sgd(self, grads):
        s = self.s
        if not s.momentum:
            torch._foreach_add_(self.params, grads, alpha=-s.lr)
            return
        buf = self.momentum_buffer
        if self.t == 1:
            torch._foreach_copy_(buf, grads)                    # as torch.optim: the first buffer is g
        else:
            torch._foreach_mul_(buf, s.momentum)
            torch._foreach_add_(buf, grads, alpha=1 - s.dampening)
        if s.nesterov:
            torch._foreach_add_(grads, buf, alpha=s.momentum)
            buf = grads
        torch._foreach_add_(self.params, buf, alpha=-s.lr)

    _STATE = ('exp_avg', 'exp_avg_sq', 'momentum_buffer')

    def state(self) -> dict:
        "Its step count and buffers (what a resumed run needs)."
        return dict(t=self.t, **{k: [b.clone() for b in getattr(self, k)] for k in self._STATE if hasattr(self, k)})

    @torch.no_grad()
    def load_state(self, state: dict) -> None:
        "Take back a `state()`: the buffers are copied into its own."
        self.t = state['t']
        for k in self._STATE:
            if hasattr(self, k):
                torch._foreach_copy_(getattr(self, k), state[k])

    def _adam(self, grads):
        (b1, b2), t = self.s.betas, self.t
        torch._foreach_lerp_(self.exp_avg, grads, 1 - b1)
        torch._foreach_mul_(self.exp_avg_sq, b2)
        torch._foreach_addcmul_(self.exp_avg_sq, grads, grads, value=1 - b2)
        denom = torch._foreach_sqrt(self.exp_avg_sq)
        torch._foreach_div_(denom, math.sqrt(1 - b2**t))
        torch._foreach_add_(denom, self.s.eps)
        torch._foreach_addcdiv_(self.params, self.exp_avg, denom, value=-self.s.lr / (1 - b1**t))


# %% [markdown]
# On one tensor with a fixed sequence of random gradients, the stacked optimizer and `torch.optim` must take
# the same steps (float64; they differ only in the order of floating-point operations):

# %%
def against_torch_optim(settings, torch_opt, n=50):
    g = torch.Generator().manual_seed(0)
    w0 = torch.randn(4, 7, generator=g, dtype=torch.float64)         # [members, params]
    grads = [torch.randn(4, 7, generator=g, dtype=torch.float64) for _ in range(n)]
    ours, ref = w0.clone(), w0.clone().requires_grad_(True)
    opt, ref_opt = StackedOptimizer([ours], settings), torch_opt([ref])
    for gr in grads:
        opt.step([gr.clone()])
        ref.grad = gr.clone()
        ref_opt.step()
    return float((ours - ref.detach()).abs().max())

cases = [(EnsembleSettings(lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
         (EnsembleSettings(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01),
          lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01)),
         (EnsembleSettings(lr=0.1, momentum=0.9, nesterov=True),
          lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True)),
         (EnsembleSettings(optimizer='adam', lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
          lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
         (EnsembleSettings(optimizer='adamw', lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
          lambda p: torch.optim.AdamW(p, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1))]
errors = [against_torch_optim(s, make) for s, make in cases]
assert max(errors) < 1e-13, errors
errors

# %%
#| hide
import nbdev
nbdev.nbdev_export()
