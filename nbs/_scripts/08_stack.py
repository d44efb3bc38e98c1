# %% [markdown]
# # The model stack
#
# > Many models of one architecture as one tensor: stacked parameters and buffers, a per-sample loss evaluated for all of them in one vectorized call, and minibatch streams with their own seeds.

# %%
#| default_exp nets.stack

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import copy, math
from typing import Callable, Iterator, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, vmap

from fracsgd.placement import tensors, _as_models, data_device, model_device, model_dtype, resolve_device

# %%
torch.set_num_threads(1)   # the models on this page are tiny: one thread avoids contention on small CPUs


# %% [markdown]
# SGLD chains for the LLC (the [SGLD chapter](sgld.html)), ensembles of nets trained together, and posterior
# samples all move many copies of one architecture at once. This chapter is their common representation: the
# weights of $K$ copies as one `[K, D]` tensor, a loss evaluated for all $K$ rows by one vectorized forward pass
# (`torch.func.functional_call` under `vmap`), and one minibatch stream per copy, each with its own seed, drawn
# by one gather.
#
# ## Per-sample losses
#
# Everything downstream wants a per-sample negative log-likelihood `loss(output, target) -> [batch]`. For
# classification it is the cross-entropy of the logits; for regression the Gaussian $\|y-f(x)\|^2/(2\sigma^2)$,
# without its normalising constant, which cancels in every difference of losses the LLC takes. Where only the
# mean over a minibatch is needed (one chain, one step), `batch_mean(loss)` gives it, through the fused kernel
# that the cross-entropy has (one call instead of a per-sample loss and a mean).

# %%
#| export
def cross_entropy_loss(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    "Per-sample negative log-likelihood of a classifier with logits `output` and integer labels `target`."
    return F.cross_entropy(output, target, reduction='none')

cross_entropy_loss.fused_mean = F.cross_entropy                  # its mean over the batch, in one kernel

def batch_mean(loss_fn: Callable) -> Callable:
    "`(output, target) -> 0-d`: the mean of the per-sample loss `loss_fn`, fused where the loss has a fused mean."
    return getattr(loss_fn, 'fused_mean', None) or (lambda output, target: loss_fn(output, target).mean())

def gaussian_nll(sigma: float = 1.0) -> Callable:
    "Per-sample Gaussian negative log-likelihood `|y - f(x)|^2 / (2 sigma^2)`, without its constant."
    if not sigma > 0:
        raise ValueError(f"gaussian_nll: sigma must be > 0, got {sigma}")
    def loss(output, target):
        return (output - target).pow(2).flatten(1).sum(1) / (2 * sigma**2)
    loss.sigma = sigma
    return loss

def resolve_loss(loss) -> Callable:
    "A per-sample loss: a callable `(output, target) -> [batch]` or a name ('classification', 'regression')."
    if callable(loss):
        return loss
    names = {'classification': cross_entropy_loss, 'cross_entropy': cross_entropy_loss,
             'regression': gaussian_nll(1.0), 'gaussian': gaussian_nll(1.0)}
    if loss not in names:
        raise ValueError(f"loss must be a callable or one of {sorted(names)}, got {loss!r}")
    return names[loss]


# %%
logits, labels = torch.tensor([[2.0, 0.0], [0.0, 0.0]]), torch.tensor([0, 1])
expected = torch.tensor([math.log(1 + math.exp(-2)), math.log(2)])
assert torch.allclose(resolve_loss('classification')(logits, labels), expected)
assert torch.allclose(gaussian_nll(2.0)(torch.ones(3, 2), torch.zeros(3, 2)), torch.full((3,), 2 / 8))
assert torch.allclose(batch_mean(cross_entropy_loss)(logits, labels), expected.mean())
assert torch.allclose(batch_mean(gaussian_nll(2.0))(torch.ones(3, 2), torch.zeros(3, 2)), torch.tensor(2 / 8))
for bad in ['hinge', 1]:
    try:
        resolve_loss(bad)
        raise AssertionError
    except ValueError as e:
        assert 'loss must be' in str(e)

# %% [markdown]
# ## Data that fits the model
#
# A pair of tensors can be well formed and still not fit the model: inputs with the wrong number of features
# or the wrong dtype, or class labels that are floats or lie outside the model's outputs. PyTorch then fails
# deep inside a matrix product or the loss kernel, with a message that names neither the data nor the model.
# `check_fits` asks the model itself, once, where the data enters a trainer or a sampler:
#
# * it runs the model, in eval mode and without gradients, on the first two samples, and checks the input of
#   the first layer with weights that the forward pass reaches (a `Linear`, a convolution or an `Embedding`)
#   against that layer: its `in_features` (or channels) and its weights' dtype;
# * for a classification loss (cross-entropy), the targets must be integer class indices in
#   $[0, C)$, where $C$ is the model's output width, or class probabilities shaped like the outputs.

# %%
#| export
_FIRST_LAYERS = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Embedding)

def _check_first_layer(name: str, layer: nn.Module, x: torch.Tensor, sample_shape: tuple):
    "Refuse the input `x` of the model's first weighted layer `layer` when its width or dtype does not fit."
    what = f"the model's first layer {name!r} ({type(layer).__name__})"
    if isinstance(layer, nn.Embedding):
        if x.is_floating_point():
            raise ValueError(f"inputs have dtype {x.dtype}, but {what} takes integer token ids")
        return
    if isinstance(layer, nn.Linear):
        width, expected, axis = x.shape[-1] if x.dim() else None, layer.in_features, 'in_features'
    else:
        spatial = len(layer.kernel_size)
        width = x.shape[-spatial - 1] if x.dim() > spatial else None
        expected, axis = layer.in_channels, 'in_channels'
    if width != expected:
        raise ValueError(f"inputs of shape {sample_shape} per sample do not fit {what}, which expects "
                         f"{axis}={expected} (got {width})")
    if x.dtype != layer.weight.dtype:
        raise ValueError(f"inputs have dtype {x.dtype}, but {what} has {layer.weight.dtype} weights: "
                         f"convert the inputs with X.to({layer.weight.dtype}) (or the model)")

def is_classification(loss_fn) -> bool:
    "Whether `loss_fn` is a cross-entropy of logits against class labels (this package's or PyTorch's)."
    return loss_fn in (cross_entropy_loss, F.cross_entropy) or isinstance(loss_fn, nn.CrossEntropyLoss)

def check_labels(y: torch.Tensor, n_classes: int, outputs_shape: tuple = ()):
    "Refuse classification targets unless class indices in [0, `n_classes`) or probabilities shaped like outputs."
    if y.is_floating_point() and tuple(y.shape[1:]) == tuple(outputs_shape) and y.dim() > 1:
        return                                                      # class probabilities, one row per sample
    if y.dtype not in (torch.long, torch.uint8):
        raise ValueError(f"classification labels must be integer class indices (torch.long), got dtype "
                         f"{y.dtype}: convert them with y.long()")
    if len(y) == 0:
        return
    low, high = int(y.min()), int(y.max())
    if low < 0 or high >= n_classes:
        bad = low if low < 0 else high
        raise ValueError(f"classification label {bad} is out of range: a model with {n_classes} outputs takes "
                         f"labels in [0, {n_classes - 1}]")

def check_fits(model: nn.Module, X: torch.Tensor, y: torch.Tensor, loss_fn: Callable | None = None):
    """Refuse inputs `X` that the model's first weighted layer cannot take, and, for a classification
    `loss_fn`, targets `y` that are not class labels of its outputs; the message names what the model expects."""
    names = {m: n or 'model' for n, m in model.named_modules()}
    first = []
    def probe(layer, args):
        if not first and args and torch.is_tensor(args[0]):
            first.append(layer)
            _check_first_layer(names[layer], layer, args[0], tuple(X.shape[1:]))
    hooks = [m.register_forward_pre_hook(probe) for m in model.modules() if isinstance(m, _FIRST_LAYERS)]
    modes = [(m, m.training) for m in model.modules()]
    device = next(model.parameters(), X).device
    try:
        model.eval()                                   # no batch-norm statistics change, no dropout
        with torch.no_grad():
            out = model(X[:2].to(device))
    except (RuntimeError, TypeError, IndexError) as e:
        raise ValueError(f"the model cannot take inputs of shape {tuple(X.shape[1:])} per sample and dtype "
                         f"{X.dtype}: {e}") from e
    finally:
        for h in hooks:
            h.remove()
        for m, mode in modes:
            m.training = mode
    if loss_fn is not None and is_classification(loss_fn) and torch.is_tensor(out) and out.dim() > 1:
        check_labels(y, out.shape[1], tuple(out.shape[1:]))


# %% [markdown]
# Each misfit is named with what the model expects, and the model comes back in the mode it was in:

# %%
net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2)).train()
X_fit, y_fit = torch.randn(6, 3), torch.arange(6) % 2
check_fits(net, X_fit, y_fit, cross_entropy_loss)
check_fits(net, X_fit, torch.randn(6, 2), gaussian_nll())          # regression targets are not labels
assert net.training and int(net[1].num_batches_tracked) == 0
for X_bad, y_bad, words in [(torch.randn(6, 5), y_fit, 'in_features=3 (got 5)'),
                            (X_fit.double(), y_fit, 'torch.float32 weights'),
                            (X_fit, y_fit.float(), 'dtype torch.float32'),
                            (X_fit, y_fit - 1, 'label -1 is out of range'),
                            (X_fit, y_fit + 1, 'labels in [0, 1]')]:
    try:
        check_fits(net, X_bad, y_bad, cross_entropy_loss)
        raise AssertionError(words)
    except ValueError as e:
        assert words in str(e), e
        print(e)


# %% [markdown]
# ## Data as a pair of tensors
#
# The data of every sampler and trainer here is a pair `(inputs, targets)` of tensors with one row per sample
# (or a `TensorDataset` of two). `as_data` checks it once, where it enters; given a device, it checks that the
# data are there, and given the model and the loss, that the data fit the model (`check_fits` above). It never
# moves the data: they belong to the caller, and may be large (see *Where the computation runs* below).

# %%
#| export
def as_data(data, device=None, model: nn.Module | None = None, loss=None) -> tuple[torch.Tensor, torch.Tensor]:
    """`data` as `(inputs, targets)`, refused with a message naming the problem if it is malformed, if it is not
    on `device` (when one is named; nothing is moved), or, when `model` is given, if it does not fit the model
    (`check_fits` with the loss `loss`, a name or a callable)."""
    if isinstance(data, torch.utils.data.TensorDataset):
        data = data.tensors
    if not (isinstance(data, (tuple, list)) and len(data) == 2 and all(torch.is_tensor(t) for t in data)):
        raise ValueError("data must be a pair of tensors (inputs, targets) or a TensorDataset of two tensors")
    X, y = data
    if len(X) != len(y):
        raise ValueError(f"data: inputs have {len(X)} rows but targets have {len(y)}")
    if len(X) < 2:
        raise ValueError(f"data must hold at least 2 samples, got {len(X)}")
    at = data_device(X, y)
    if device is not None and at != resolve_device(device):
        raise ValueError(f"the data are on {at}, not on {device}: place them there yourself (fracsgd moves no "
                         "data behind your back)")
    if model is not None:
        check_fits(model, X, y, None if loss is None else resolve_loss(loss))
    return X, y


# %%
X_toy, y_toy = as_data(torch.utils.data.TensorDataset(torch.randn(6, 3), torch.arange(6) % 2), 'cpu')
assert X_toy.shape == (6, 3) and y_toy.shape == (6,)
for bad, word in [((torch.randn(5, 3), torch.zeros(4)), 'rows'),
                  ((torch.randn(1, 3), torch.zeros(1)), 'at least 2'),
                  ([torch.randn(5, 3)], 'pair')]:
    try:
        as_data(bad, 'cpu')
        raise AssertionError
    except ValueError as e:
        assert word in str(e), e
try:
    as_data((torch.randn(6, 3), torch.arange(6) % 3), 'cpu', nn.Linear(3, 2), 'classification')
    raise AssertionError
except ValueError as e:
    assert 'labels in [0, 1]' in str(e), e
X_home = torch.randn(6, 3)
assert as_data((X_home, y_toy))[0] is X_home                       # the caller's tensors, not copies
try:
    as_data((X_home.to('meta'), y_toy.to('meta')), 'cpu')
    raise AssertionError
except ValueError as e:
    assert 'on meta' in str(e) and 'cpu' in str(e), e


# %% [markdown]
# ## Where the computation runs
#
# The runner owns placement: a study puts its models and its data on one device, and everything here computes
# where they are. `model_device` is the one device of the parameters and buffers of a model or a list of models
# (models spread over several devices are refused, naming two of them), `model_dtype` their one floating dtype,
# and `where_to_compute`, called where models and data enter a trainer or a sampler, decides where the computation
# runs and checks the data against it:
#
# * with no `device` named, the computation runs on the models' device, in their floating dtype; data on another
#   device are refused with a message that names both devices, instead of being copied across;
# * a named `device` is used for the computation: the models' weights are *copied* there (into a `ModelStack`,
#   below) and results are written back into the models where they are, so the models never move. The data,
#   which the caller owns and which may be large, are not copied: data on another device than the named one are
#   refused as well. The rule is one for both cases: nothing is moved behind the caller's back;
# * models on PyTorch's `meta` device (tensors without storage) hold no weights to compute with and are refused;
# * floating inputs or targets of another dtype than the models' parameters are refused, both dtypes named
#   (by `check_fits` when the model's first layer sees the inputs, else here). Float64 models with float64 data
#   therefore run in float64 end to end: every tensor the trainers and samplers create (noise, random vectors,
#   buffers, traces) takes the dtype of the models' weights. Float32 runs are what they always were.

# %%
#| export
def where_to_compute(models, data, device=None, loss=None) -> tuple[torch.device, torch.Tensor, torch.Tensor]:
    """Where the computation on `models` and `data` runs, and the data `(X, y)`, checked: `device` when it is
    named, else the models' own (`model_device`). Nothing is moved: data on another device, models on the `meta`
    device, and floating data of another dtype than the models' are refused with a message that names both;
    the data must fit the first model (`check_fits`, with `loss`)."""
    models = _as_models(models)
    X, y = as_data(data)
    home, at = model_device(models), data_device(X, y)
    target = home if device is None else resolve_device(device)
    if at != target:
        if device is None:
            raise ValueError(f"the data are on {at} but the models are on {home}: place both on one device "
                             "(fracsgd's runner does this for studies; nothing is moved behind your back)")
        raise ValueError(f"the data are on {at} but device={str(target)!r} was named (the models are on {home}): "
                         f"place the data on {target}, or leave device unset to compute where the models are "
                         "(nothing is moved behind your back)")
    if home.type == 'meta':
        raise ValueError(f"the models are on meta, PyTorch's device of tensors without storage (the data are on "
                         f"{at}): they hold no weights to compute with; create them on a real device, or "
                         "materialize them (model.to_empty(device=...)) and initialize or load their weights")
    dtype = model_dtype(models)
    check_fits(models[0], X, y, None if loss is None else resolve_loss(loss))
    for name, t in (('inputs', X), ('targets', y)):
        if dtype is not None and t.is_floating_point() and t.dtype != dtype:
            raise ValueError(f"the {name} have dtype {t.dtype} but the models' parameters have {dtype}: convert "
                             f"one of them (the {name} with .to({dtype}), or the models)")
    return target, X, y


# %% [markdown]
# The device follows the models, data elsewhere are refused (naming both devices), as are models without
# storage, and floating data of another dtype (naming both dtypes); float64 models with float64 data pass:

# %%
lin = nn.Linear(3, 2)
assert model_device([lin, nn.Linear(3, 2)]) == torch.device('cpu') and model_dtype(lin) == torch.float32
where, X_p, y_p = where_to_compute([lin], (X_home, y_toy), loss='classification')
assert where == torch.device('cpu') and X_p is X_home
assert where_to_compute(nn.Linear(3, 2).double(), (X_home.double(), y_toy))[0] == torch.device('cpu')
for models, data, words in [([nn.Linear(3, 2).to('meta')], (X_home, y_toy), ('on cpu', 'on meta')),
                            ([nn.Linear(3, 2).to('meta')], (X_home.to('meta'), y_toy.to('meta')),
                             ('meta', 'no weights')),
                            ([nn.Linear(3, 2)], (X_home.double(), y_toy), ('torch.float64', 'torch.float32')),
                            ([nn.Linear(3, 1)], (X_home, torch.randn(6, 1, dtype=torch.float64)),
                             ('torch.float64', 'torch.float32')),
                            ([nn.Linear(3, 2), nn.Linear(3, 2).to('meta')], (X_home, y_toy), ('cpu', 'meta')),
                            ([nn.Linear(3, 2), nn.Linear(3, 2).double()], (X_home, y_toy), ('float32', 'float64'))]:
    try:
        where_to_compute(models, data)
        raise AssertionError(words)
    except ValueError as e:
        assert all(w in str(e) for w in words), e
        print(e)
try:
    where_to_compute([nn.Linear(3, 2)], (X_home, y_toy), device='meta')          # a named device: the data must be there
    raise AssertionError
except ValueError as e:
    assert "device='meta'" in str(e) and 'on cpu' in str(e), e


# %% [markdown]
# ## Many models as one tensor
#
# `ModelStack` flattens the parameters of $M$ models of the same architecture into one tensor `flat` of shape
# `[M, D]` (models, parameters) and stacks each buffer (batch-norm running statistics) into `[M, *shape]`. Any
# `[K, D]` tensor of weights, for instance the stack repeated for $C$ chains per model, is turned back into
# named parameters by `params`, which returns *views*: an update of the flat tensor is an update of every
# parameter, and a gradient taken through the views lands in the flat tensor's layout. Models of different
# architectures are refused. The stack lives on the device it is given; its `template` (the module whose
# forward pass the batched calls borrow) is the first model itself when that is already there, else a copy
# placed there, so that the models themselves never move.

# %%
#| export
def _copy_to(model: nn.Module, device: torch.device) -> nn.Module:
    "A copy of `model` on `device`, the model itself untouched."
    try:
        return copy.deepcopy(model).to(device)
    except Exception as e:
        raise ValueError(f"the model must be copied to {device} to compute there, but it cannot be deep-copied "
                         f"({e}): place it on {device} yourself, or leave device unset") from e

class ModelStack:
    """The parameters of same-architecture `models` as one `flat` tensor [models, params] on `device`; buffers
    stacked. `template` is the first model itself when it is on `device`, else a copy there: no model moves."""
    def __init__(self, models: Sequence[nn.Module], device):
        device = resolve_device(device)
        on_device = all(t.device == device for _, t in tensors(models[0]))
        self.template = models[0] if on_device else _copy_to(models[0], device)
        named = list(self.template.named_parameters())
        self.names = [n for n, _ in named]
        self.shapes = [p.shape for _, p in named]
        for i, m in enumerate(models[1:], 1):
            if [(n, p.shape) for n, p in m.named_parameters()] != list(zip(self.names, self.shapes)):
                raise ValueError(f"model {i} does not have the architecture of model 0 "
                                 "(parameter names or shapes differ)")
        self.sizes = [math.prod(s) for s in self.shapes]
        self.n_params = sum(self.sizes)
        rows = [torch.cat([p.detach().reshape(-1) for p in m.parameters()]) for m in models]
        self.flat = torch.stack(rows).to(device)                                   # [models, params]
        self.buffers = {n: torch.stack([dict(m.named_buffers())[n].detach() for m in models]).to(device)
                        for n, _ in self.template.named_buffers()}                 # name -> [models, *shape]

    def __len__(self):
        return len(self.flat)

    def params(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        "Views of `flat` [K, params] as named parameters [K, *shape]."
        pieces = flat.split(self.sizes, dim=1)               # one split: its backward is one concatenation
        return {n: piece.view(len(flat), *s) for n, s, piece in zip(self.names, self.shapes, pieces)}


# %%
bn_net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2)).eval()
stack = ModelStack([bn_net, bn_net, bn_net], 'cpu')
assert len(stack) == 3 and stack.n_params == 3 * 4 + 4 + 4 + 4 + 4 * 2 + 2
assert stack.flat.shape == (3, stack.n_params)
assert set(stack.buffers) == {'1.running_mean', '1.running_var', '1.num_batches_tracked'}
views = stack.params(stack.flat)
assert views['0.weight'].shape == (3, 4, 3) and views['0.weight'].data_ptr() == stack.flat.data_ptr()
try:
    ModelStack([bn_net, nn.Sequential(nn.Linear(3, 5))], 'cpu')
    raise AssertionError
except ValueError as e:
    assert 'architecture' in str(e)
assert stack.template is bn_net                                    # on the device already: the model itself
elsewhere = ModelStack([bn_net], 'meta')                           # elsewhere: a copy there, the model stays
assert elsewhere.template is not bn_net and elsewhere.flat.is_meta and model_device(bn_net).type == 'cpu'

# %% [markdown]
# ## One vectorized forward pass
#
# `batched_forward(template)` returns `f(params, buffers, x) -> outputs [K, B, ...]`: row $k$'s weights applied to
# row $k$'s inputs. The general way is `functional_call` of the template under `vmap` over the row axis of the
# parameters, the buffers and the inputs. In train mode, batch norm then normalizes each row's minibatch by its own
# statistics and updates the row's own running statistics in its row of the stacked buffers (`vmap` applies the
# in-place update to the batched buffer).
#
# Most nets in the paper are multilayer perceptrons, and for them `vmap` is mostly overhead: every layer is one
# batched matrix product, yet the batching rules, the module calls and the swapping of parameters in and out of
# the template cost several times more host time than the arithmetic of a small net, and on a GPU host time is
# what a step of small nets costs. So a template built only of `nn.Sequential`, `nn.Linear`, `nn.Flatten`,
# parameter-free element-wise activations and `nn.BatchNorm1d` runs as a plan of `baddbmm` calls instead. Batch
# norm is one call of the native kernel, with the $K$ rows' $C$ channels side by side as $KC$ channels of one
# batch, and it follows its module's mode at every call: in eval mode each row is normalized by its own running
# statistics; in train mode by its own minibatch statistics, and its running statistics are updated in place, as
# `vmap` does. Anything else takes the `vmap` path. Both give the same numbers up to rounding, which the cells
# below check.

# %%
#| export
ELEMENTWISE = (nn.ReLU, nn.Tanh, nn.Sigmoid, nn.GELU, nn.SiLU, nn.LeakyReLU, nn.ELU, nn.Softplus, nn.Identity)

def matmul_plan(module: nn.Module, prefix: str = '') -> list | None:
    """The layers of `module` as steps of batched matrix products: ('linear', weight name, bias name or None),
    ('apply', activation), ('flatten',) or ('norm', prefix, batch norm module); None when a layer has no such step."""
    if type(module) is nn.Sequential:
        plan = []
        for name, child in module.named_children():
            steps = matmul_plan(child, f'{prefix}{name}.')
            if steps is None:
                return None
            plan += steps
        return plan
    if type(module) is nn.Linear:
        return [('linear', prefix + 'weight', prefix + 'bias' if module.bias is not None else None)]
    if type(module) in ELEMENTWISE:
        return [('apply', module)]
    if type(module) is nn.Flatten and module.start_dim == 1 and module.end_dim == -1:
        return [('flatten',)]
    if type(module) is nn.BatchNorm1d and module.momentum is not None:
        return [('norm', prefix, module)]
    return None

def _batch_norm(x: torch.Tensor, params: dict, buffers: dict, prefix: str, bn: nn.BatchNorm1d) -> torch.Tensor:
    """Batch norm of each row of `x` [K, B, C, ...] as `bn` computes it in its current mode, by one call of the
    native kernel: the K rows' C channels are K*C channels of one batch, so each row is normalized by its own
    statistics (train mode) or running statistics (eval mode), and its running statistics are updated in place."""
    K, B, C = x.shape[:3]
    stats = bn.training or not bn.track_running_stats                    # the minibatch's statistics
    running = (buffers[prefix + 'running_mean'].view(-1), buffers[prefix + 'running_var'].view(-1)) \
        if bn.track_running_stats else (None, None)                       # views [K*C] of the stacked buffers
    weight, bias = (params[prefix + 'weight'].reshape(-1), params[prefix + 'bias'].reshape(-1)) if bn.affine \
        else (None, None)
    out = F.batch_norm(x.transpose(0, 1).reshape(B, K * C, *x.shape[3:]), *running, weight, bias, stats,
                       bn.momentum, bn.eps)
    if bn.training and bn.track_running_stats:
        buffers[prefix + 'num_batches_tracked'].add_(1)
    return out.view(B, K, C, *x.shape[3:]).transpose(0, 1)

def _run_plan(plan: list, params: dict, buffers: dict, x: torch.Tensor) -> torch.Tensor:
    "Apply `plan` to `x` [K, B, ...] with row k's parameters `params[name][k]` and buffers."
    for step in plan:
        if step[0] == 'linear':
            w, shape = params[step[1]], x.shape
            x = x.reshape(shape[0], -1, shape[-1])                             # [K, B*, in]
            x = (torch.baddbmm(params[step[2]].unsqueeze(1), x, w.transpose(1, 2)) if step[2]
                 else torch.bmm(x, w.transpose(1, 2)))
            x = x.view(*shape[:-1], w.shape[1])
        elif step[0] == 'apply':
            x = step[1](x)
        elif step[0] == 'flatten':
            x = x.flatten(2)
        else:
            x = _batch_norm(x, params, buffers, step[1], step[2])
    return x

def batched_forward(template: nn.Module) -> Callable:
    """`f(params [K, ...], buffers [K, ...], x [K, B, ...]) -> outputs [K, B, ...]` of the template's net: a plan of
    batched matrix products where `matmul_plan` finds one, else `functional_call` under `vmap`."""
    plan = matmul_plan(template)
    if plan is not None:
        return lambda params, buffers, x: _run_plan(plan, params, buffers, x)
    return vmap(lambda params, buffers, x: functional_call(template, (params, buffers), (x,)))

def member_losses(loss_fn: Callable, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The mean per-sample loss [K] of each row's outputs `out` [K, B, ...] against targets `y` [K, B, ...], with the
    rows flattened into one batch (the losses are per sample, so the numbers are the same)."""
    K, B = y.shape[:2]
    per_sample = loss_fn(out.reshape(K * B, *out.shape[2:]), y.reshape(K * B, *y.shape[2:]))
    if per_sample.shape != (K * B,):
        raise ValueError(f"the loss must give one value per sample, shape [{K * B}], got {tuple(per_sample.shape)}: "
                         "pass a per-sample loss (reduction='none')")
    return per_sample.view(K, B).mean(1)


# %% [markdown]
# The plan must give what the template gives, row by row, with bias-free layers, flattening, two activations and
# batch norm (its running statistics set away from their defaults so that they matter). In eval mode:

# %%
torch.manual_seed(0)
planned = nn.Sequential(nn.Flatten(), nn.Linear(6, 5), nn.BatchNorm1d(5), nn.Tanh(), nn.Linear(5, 4, bias=False),
                        nn.Sequential(nn.ReLU(), nn.Linear(4, 3)))
rows = []
for k in range(3):
    net = copy.deepcopy(planned)
    for p in net.parameters():
        nn.init.normal_(p)
    net[2].running_mean.normal_()
    net[2].running_var.uniform_(0.5, 2.0)
    rows.append(net.eval())
plan_stack = ModelStack(rows, 'cpu')
x_rows = torch.randn(3, 7, 2, 3)                                                # [K, B, 2, 3]: flattened to 6
plan_out = batched_forward(plan_stack.template)(plan_stack.params(plan_stack.flat), plan_stack.buffers, x_rows)
assert matmul_plan(plan_stack.template) is not None and plan_out.shape == (3, 7, 3)
assert torch.allclose(plan_out, torch.stack([net(x_rows[k]) for k, net in enumerate(rows)]), atol=1e-5)
assert matmul_plan(nn.Sequential(nn.Conv2d(1, 2, 3))) is None
assert matmul_plan(nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, momentum=None))) is None   # a cumulative mean


# %% [markdown]
# In train mode, against `vmap` on the same rows: the outputs, the gradients and the updated running statistics.
# The template is switched to train mode after the forward function was made, which the plan follows:

# %%
def train_mode_step(forward, stack):
    leaves = [p.detach().requires_grad_(True) for p in stack.params(stack.flat).values()]
    buffers = {k: v.clone() for k, v in stack.buffers.items()}
    out = forward(dict(zip(stack.names, leaves)), buffers, x_rows)
    return out, torch.autograd.grad(out.pow(2).sum(), leaves), buffers

plan_forward = batched_forward(plan_stack.template)
plan_stack.template.train()
by_plan = train_mode_step(plan_forward, plan_stack)
by_vmap = train_mode_step(vmap(lambda p, b, x: functional_call(plan_stack.template, (p, b), (x,))), plan_stack)
assert torch.allclose(by_plan[0], by_vmap[0], atol=1e-5)
assert all(torch.allclose(a, b, atol=1e-4) for a, b in zip(by_plan[1], by_vmap[1]))
assert all(torch.allclose(by_plan[2][k], by_vmap[2][k], atol=1e-6) for k in plan_stack.buffers)
assert by_plan[2]['2.num_batches_tracked'].tolist() == [1, 1, 1]
assert not torch.allclose(by_plan[2]['2.running_mean'], plan_stack.buffers['2.running_mean'])   # it did move
plan_stack.template.eval()
try:
    member_losses(lambda out, y: F.cross_entropy(out, y), torch.randn(2, 3, 4), torch.zeros(2, 3, dtype=torch.long))
    raise AssertionError("a mean loss must be refused")
except ValueError as e:
    assert 'per sample' in str(e)


# %% [markdown]
# ## One loss call for every row
#
# `batched_loss(template, loss_fn)` returns `f(params, buffers, x, y) -> [K]`: the mean per-sample loss of row
# $k$'s weights on row $k$'s minibatch, with `x` of shape `[K, B, ...]`: `batched_forward`, then the loss on all
# rows' outputs flattened into one batch (`member_losses`), which avoids the slower batching rules of the loss
# kernels. A single row is a plain call of the template (batched kernels cost more than they save for one model)
# and gives the same numbers. `full_data_loss` evaluates every row on the whole data set, in slices of
# `eval_batch` samples.

# %%
#| export
def batched_loss(template: nn.Module, loss_fn: Callable) -> Callable:
    "`f(params [K,...], buffers [K,...], x [K, B, ...], y [K, B, ...]) -> [K]`, the mean loss of each row."
    forward, mean = batched_forward(template), batch_mean(loss_fn)
    def f(params, buffers, x, y):
        if x.shape[0] > 1:
            return member_losses(loss_fn, forward(params, buffers, x), y)
        # one row: a plain call; squeeze(0), unlike [0], has a copy-free backward
        squeeze = lambda d: {k: v.squeeze(0) for k, v in d.items()}
        return mean(functional_call(template, (squeeze(params), squeeze(buffers)), (x[0],)), y[0])[None]
    return f

def full_data_loss(f: Callable, params: dict, buffers: dict, X: torch.Tensor, y: torch.Tensor,
                   eval_batch: int = 4096) -> torch.Tensor:
    "The mean loss on all of `(X, y)` of each row of `params` (a `batched_loss`), in float64, no gradients."
    K = len(next(iter(params.values())))
    total = torch.zeros(K, dtype=torch.float64, device=X.device)            # [K]
    with torch.no_grad():
        for s in range(0, len(X), eval_batch):
            xb, yb = X[s:s + eval_batch], y[s:s + eval_batch]
            total += f(params, buffers, xb.expand(K, *xb.shape), yb.expand(K, *yb.shape)).double() * len(xb)
    return total / len(X)


# %% [markdown]
# The vectorized call must agree with calling each model as usual, for one row and for several, and one model
# must come out with the shapes of an ensemble of one:

# %%
X_small, y_small = torch.randn(5, 3), torch.randint(0, 2, (5,))
f = batched_loss(bn_net, cross_entropy_loss)
plain = cross_entropy_loss(bn_net(X_small), y_small).mean()
for K in (1, 3):
    one_stack = ModelStack([bn_net] * K, 'cpu')
    params = one_stack.params(one_stack.flat)
    loss = full_data_loss(f, params, one_stack.buffers, X_small, y_small)
    assert loss.shape == (K,) and torch.allclose(loss.float(), plain.expand(K), atol=1e-6)


# %% [markdown]
# ## Minibatches and seeds, one stream per row
#
# Each row (a chain, or an ensemble member) walks through its own random permutations of the data, epoch after
# epoch, from its own `torch.Generator`; the $K$ minibatches of a step are cut out of the data with one
# `index_select`. An epoch drops the last incomplete minibatch, and a batch size of at least $n$ gives every row
# the full data at every step. `chain_seed(seed, model, chain, stream)` derives independent seeds from a tuple
# through NumPy's `SeedSequence`, so a row's numbers depend only on its own indices, never on which other rows
# share its call.

# %%
#| export
def chain_seed(seed: int, model: int, chain: int, stream: int) -> int:
    "An independent 32-bit seed for stream `stream` of chain `chain` of model `model` (NumPy `SeedSequence`)."
    return int(np.random.SeedSequence([seed, model, chain, stream]).generate_state(1)[0])

def chain_minibatches(X: torch.Tensor, y: torch.Tensor, batch_size: int,
                      generators: Sequence[torch.Generator],
                      device, start: int = 0) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """An endless stream of `(x [K, B, ...], y [K, B, ...])`, row k in the random order of `generators[k]`; with
    `start`, the same stream without its first `start` minibatches (what a resumed run needs)."""
    n, K = len(X), len(generators)
    if batch_size >= n:
        while True:
            yield X.expand(K, *X.shape), y.expand(K, *y.shape)
    per_epoch = n // batch_size
    for _ in range(start // per_epoch):                                     # whole epochs: their orders, unused
        for g in generators:
            torch.randperm(n, generator=g)
    first = start % per_epoch
    while True:
        perm = torch.stack([torch.randperm(n, generator=g) for g in generators]).to(device)   # [K, n]
        for j in range(first, per_epoch):
            idx = perm[:, j * batch_size:(j + 1) * batch_size].reshape(-1)                  # [K * B]
            yield (X.index_select(0, idx).view(K, batch_size, *X.shape[1:]),
                   y.index_select(0, idx).view(K, batch_size, *y.shape[1:]))
        first = 0


# %% [markdown]
# Two chains get different minibatch orders, each of them sees every sample once per epoch, the same seed
# gives the same stream again, and `start` resumes it part-way (a resumed run's stream is the one it would have had):

# %%
X_idx, y_idx = torch.arange(12.0)[:, None], torch.arange(12)
gens = lambda: [torch.Generator().manual_seed(chain_seed(0, 0, c, 1)) for c in range(2)]
stream = chain_minibatches(X_idx, y_idx, 4, gens(), 'cpu')
epoch = [next(stream) for _ in range(3)]                           # 12 samples / batch 4 = 3 minibatches
seen = torch.cat([yb for _, yb in epoch], dim=1)                   # [chains, 12]
assert all(sorted(row.tolist()) == list(range(12)) for row in seen)
assert not torch.equal(seen[0], seen[1])
assert torch.equal(next(chain_minibatches(X_idx, y_idx, 4, gens(), 'cpu'))[1], epoch[0][1])
assert next(chain_minibatches(X_idx, y_idx, 50, gens(), 'cpu'))[0].shape == (2, 12, 1)
assert len({chain_seed(0, m, c, s) for m in range(3) for c in range(3) for s in range(2)}) == 18
whole = chain_minibatches(X_idx, y_idx, 4, gens(), 'cpu')
later = [next(whole) for _ in range(8)][5:]                         # minibatches 5-7: into the second epoch
resumed = chain_minibatches(X_idx, y_idx, 4, gens(), 'cpu', start=5)
assert all(torch.equal(next(resumed)[1], yb) for _, yb in later)   # `start` skips exactly that many
seen

# %%
#| hide
import nbdev
nbdev.nbdev_export()
