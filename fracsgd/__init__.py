__version__ = "0.1.0"

# Written by hand (nbdev only keeps `__version__` up to date here). The names a user reaches for first, each
# imported from its wing on first use, so that `import fracsgd` stays light and imports nothing else of ours.
_FIRST = {'estimate_llc': 'fracsgd.llc.estimate', 'calibrate': 'fracsgd.llc.calibrate',
          'Recorder': 'fracsgd.train.displacement', 'fit_power_law': 'fracsgd.diffusion.spectral',
          'train_ensemble': 'fracsgd.train.ensemble', 'run_study': 'fracsgd.experiment.runner',
          'load_study': 'fracsgd.experiment.store'}
__all__ = sorted(_FIRST)

def __getattr__(name: str):
    if name in _FIRST:
        import importlib
        return getattr(importlib.import_module(_FIRST[name]), name)
    raise AttributeError(f"module 'fracsgd' has no attribute {name!r}")

def __dir__(): return sorted([*globals(), *_FIRST])
