__version__ = "0.1.0"

# Written by hand (nbdev only keeps `__version__` up to date here): `fracsgd.load_study`, imported on first use
# so that `import fracsgd` stays light. Everything else lives in the modules the notebooks export.
def __getattr__(name: str):
    if name == 'load_study':
        from fracsgd.store import load_study
        return load_study
    raise AttributeError(f"module 'fracsgd' has no attribute {name!r}")
