# %% [markdown]
# # Placement
#
# > Where a run's tensors live, decided in one place: a device, a floating dtype and CPU threads; putting a study's models and data there; the one check at the hand-off; the device of a model, a list of models or a pair of tensors.

# %%
#| default_exp placement

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import dataclasses
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from fracsgd.core import default_device

# %% [markdown]
# Every tensor of a run lives on one device in one floating dtype, and this chapter is the only one that decides
# which. The [runner](runner.html) makes a `Placement` from its command line and puts each study's models and
# data there (`place`, `check_placed`); trainers and samplers, given models and data by a user, ask where those
# already are (`model_device`, `model_dtype`, `data_device`) and move nothing behind the caller's back (the
# [model stack](stack.html)'s `where_to_compute`). One walker, `tensors`, finds every tensor in what is handed
# over, for the check and for the device questions alike.

# %% [markdown]
# ## Placement
#
# A `Placement` is a device, a floating dtype and, optionally, a number of CPU threads. `check_device` refuses a
# device that does not exist or is not available here, in one line, before anything is written: asking for
# `cuda` on a machine without a GPU used to start the sweep and fail every run.

# %%
#| export
DTYPES = {'float32': torch.float32, 'float64': torch.float64, 'bfloat16': torch.bfloat16, 'float16': torch.float16}

def check_device(device=None) -> torch.device:
    "The device `device` names (default: cuda when available, else cpu); `ValueError` in one line when unusable."
    if device is None or str(device).strip() == '':
        return default_device()
    try:
        d = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"unknown device {device!r}: use cpu, cuda or cuda:N (or mps on a Mac)") from None
    if d.type == 'cuda':
        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r} is not available: PyTorch {torch.__version__} sees no CUDA GPU "
                             "on this machine (use --device cpu)")
        if d.index is not None and d.index >= torch.cuda.device_count():
            raise ValueError(f"device {device!r} is not available: this machine has "
                             f"{torch.cuda.device_count()} CUDA GPU(s), numbered from 0")
    elif d.type == 'mps':
        if not torch.backends.mps.is_available():
            raise ValueError(f"device {device!r} is not available: PyTorch sees no Apple GPU here")
    elif d.type not in ('cpu', 'meta'):
        raise ValueError(f"device {device!r} is not supported by fracsgd: use cpu, cuda or cuda:N")
    return d

@dataclass(frozen=True)
class Placement:
    "Where a run's tensors live: a device, the floating dtype of its models and data, CPU threads (None: as is)."
    device: str = 'cpu'
    dtype: str = 'float32'
    threads: int | None = None

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(f"unknown dtype {self.dtype!r}: use one of {sorted(DTYPES)}")
        if self.threads is not None and int(self.threads) < 1:
            raise ValueError(f"threads must be a positive integer or None, got {self.threads!r}")
        object.__setattr__(self, 'device', str(check_device(self.device)))

    @property
    def torch_device(self) -> torch.device: return torch.device(self.device)
    @property
    def torch_dtype(self) -> torch.dtype: return DTYPES[self.dtype]

def placement(device=None, dtype: str = 'float32', threads: int | None = None) -> Placement:
    "A checked `Placement`; `device` None means cuda when available, else cpu."
    return Placement(str(check_device(device)), dtype, threads)


# %%
assert placement('cpu') == Placement('cpu', 'float32')
for bad, why in [('tpu9', 'unknown device'), ('cuda:7' if torch.cuda.is_available() else 'cuda', 'not available')]:
    try:
        placement(bad)
        raise AssertionError(f'{bad} was accepted')
    except ValueError as e:
        assert why in str(e) and '\n' not in str(e), e
        print(e)

# %% [markdown]
# `placed(p)` runs a block under a placement: it sets the thread count and restores it after, and makes `p` the
# one that `place` and `current_placement` see. It deliberately does *not* change PyTorch's default dtype: a
# tensor or module that a study creates behind the runner's back must keep the default, so that a placement in
# float64 exposes it exactly as a GPU exposes a module left on the CPU.

# %%
#| export
_ACTIVE: list = []

def current_placement() -> Placement:
    "The placement of the innermost `placed` block (outside any: the CPU in float32)."
    return _ACTIVE[-1] if _ACTIVE else Placement('cpu', 'float32')

@contextmanager
def placed(p: Placement):
    "Run the block under `p`: its thread count, and `p` as the `current_placement`; both restored after."
    threads = torch.get_num_threads()
    if p.threads:
        torch.set_num_threads(int(p.threads))
    _ACTIVE.append(p)
    try:
        yield p
    finally:
        _ACTIVE.pop()
        torch.set_num_threads(threads)


# %% [markdown]
# `place` moves what a study hands over, a module, a tensor, or a list, tuple, dict, named tuple or dataclass of
# them, onto a placement: floating tensors and a module's floating parameters and buffers take its dtype, the
# rest (labels, token ids, a batch-norm step count) keeps its dtype and only moves. `check_placed` is the one
# assertion at the hand-off: it names the first tensor that is elsewhere.

# %%
#| export
def place(obj, p: Placement | None = None):
    "`obj` with its modules and tensors on `p` (default: `current_placement()`); containers are walked."
    p = p or current_placement()
    if isinstance(obj, nn.Module):
        return obj.to(device=p.torch_device, dtype=p.torch_dtype)
    if isinstance(obj, torch.Tensor):
        return obj.to(p.torch_device, p.torch_dtype) if obj.is_floating_point() else obj.to(p.torch_device)
    if isinstance(obj, tuple) and hasattr(obj, '_fields'):
        return type(obj)(*(place(v, p) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(place(v, p) for v in obj)
    if isinstance(obj, dict):
        return {k: place(v, p) for k, v in obj.items()}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.replace(obj, **{f.name: place(getattr(obj, f.name), p)
                                           for f in dataclasses.fields(obj) if f.init})
    return obj

def tensors(obj, path: str = 'obj', buffers: bool = True):
    """Yield `(path, tensor)` for every tensor in `obj`: a module's parameters (and buffers, unless `buffers` is
    False), a tensor, or a list, tuple, dict or dataclass of them, each named by where it sits in `obj`."""
    if isinstance(obj, nn.Module):
        for name, t in [*obj.named_parameters(), *(obj.named_buffers() if buffers else ())]:
            yield f'{path}.{name}', t
    elif isinstance(obj, torch.Tensor):
        yield path, obj
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from tensors(v, f'{path}[{i}]', buffers)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from tensors(v, f'{path}[{k!r}]', buffers)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            yield from tensors(getattr(obj, f.name), f'{path}.{f.name}', buffers)

class PlacementError(RuntimeError):
    "A tensor of a run is not where the runner placed the run."

def check_placed(obj, p: Placement | None = None, what: str = 'data'):
    "Refuse `obj` unless every tensor is on `p`'s device and every floating one has `p`'s dtype."
    p = p or current_placement()
    for path, t in tensors(obj, what):
        if t.device != p.torch_device and not (t.device.type == p.torch_device.type == 'cuda'
                                               and p.torch_device.index is None):
            raise PlacementError(f"{path} is on {t.device}, but the run is placed on {p.device}")
        if t.is_floating_point() and t.dtype != p.torch_dtype:
            raise PlacementError(f"{path} is {str(t.dtype).split('.')[-1]}, but the run is placed in {p.dtype}")


# %%
p64 = Placement('cpu', 'float64')
net = place(nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2)), p64)
data = place((torch.zeros(4, 3), torch.zeros(4, dtype=torch.long)), p64)
check_placed([net, data], p64)
assert net[1].num_batches_tracked.dtype == torch.long and data[1].dtype == torch.long   # integers keep their dtype
try:
    check_placed([net, nn.Linear(3, 2)], p64, 'models')                              # a module the runner never saw
    raise AssertionError('a float32 module passed a float64 placement')
except PlacementError as e:
    print(e)



# %% [markdown]
# ## The device of models and data
#
# `resolve_device` fills in a device's index so that two names of one GPU compare equal; `data_device` is the
# one device of a pair of tensors; `model_device` and `model_dtype` are the one device and the one floating
# dtype of a model or a list of models, each refused in a message that names two tensors when there are several.

# %%
#| export
def resolve_device(device) -> torch.device:
    "`device` as a `torch.device` with its index filled in (`'cuda'` is the current GPU), so that devices compare."
    device = torch.device(device)
    if device.index is None and device.type not in ('cpu', 'meta'):
        device = torch.empty(0, device=device).device
    return device

def data_device(X: torch.Tensor, y: torch.Tensor) -> torch.device:
    "The one device of inputs `X` and targets `y`; refused, naming both, when they are on two."
    if X.device != y.device:
        raise ValueError(f"the inputs are on {X.device} but the targets are on {y.device}: place both on one device")
    return X.device

def _as_models(models) -> list:
    return [models] if isinstance(models, nn.Module) else list(models)

def _model_tensors(models, buffers: bool = True):
    "`tensors` of a model or a list of models, each named as a reader says it: model 1's 'layer.weight'."
    models = _as_models(models)
    for i, m in enumerate(models):
        for path, t in tensors(m, '', buffers):
            name = repr(path.lstrip('.'))
            yield (f"model {i}'s {name}" if len(models) > 1 else name), t

def model_device(models) -> torch.device:
    """The one device of every parameter and buffer of `models` (a module or a list of modules); refused, naming
    two devices and a tensor on each, when they are spread over several, or when there are no tensors at all."""
    found = {}
    for where, t in _model_tensors(models):
        found.setdefault(t.device, where)
    if not found:
        raise ValueError("the models hold no parameters or buffers: there is no device to compute on")
    if len(found) > 1:
        (a, wa), (b, wb) = list(found.items())[:2]
        raise ValueError(f"the models are on more than one device: {wa} is on {a} but {wb} is on {b}; place "
                         "them all on one device")
    return next(iter(found))

def model_dtype(models) -> torch.dtype | None:
    """The one floating dtype of the parameters of `models`; refused, naming two, when they have several; None
    when no parameter is floating."""
    found = {}
    for where, t in _model_tensors(models, buffers=False):
        if t.is_floating_point():
            found.setdefault(t.dtype, where)
    if len(found) > 1:
        (a, wa), (b, wb) = list(found.items())[:2]
        raise ValueError(f"the models' parameters have more than one dtype: {wa} is {a} but {wb} is {b}; convert "
                         f"them to one (model.to({a}))")
    return next(iter(found), None)


# %%
lin = nn.Linear(3, 2)
assert model_device([lin, nn.Linear(3, 2)]) == torch.device('cpu') and model_dtype(lin) == torch.float32
assert model_dtype([nn.Linear(3, 2).double()]) == torch.float64 and resolve_device('cpu') == torch.device('cpu')
for models, words in [([lin, nn.Linear(3, 2).to('meta')], ('cpu', 'meta', "model 1's 'weight'")),
                      ([lin, nn.Linear(3, 2).double()], ('float32', 'float64'))]:
    try:
        (model_device if 'meta' in words else model_dtype)(models)
        raise AssertionError(words)
    except ValueError as e:
        assert all(w in str(e) for w in words), e
        print(e)
try:
    data_device(torch.zeros(2), torch.zeros(2, device='meta'))
    raise AssertionError('two devices passed')
except ValueError as e:
    assert 'cpu' in str(e) and 'meta' in str(e)

# %%
#| hide
import nbdev; nbdev.nbdev_export()
