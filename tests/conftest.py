"""Fixtures shared by the test files."""
import os

import numpy as np
import pytest

# Under pytest-xdist each worker gets its share of the cores (fracsgd.core.cpu_cores reads FRACSGD_CPUS; torch and the
# processes the tests start follow OMP_NUM_THREADS): threads of two workers competing for two cores mostly wait.
_WORKERS = int(os.environ.get('PYTEST_XDIST_WORKER_COUNT', '1'))
if _WORKERS > 1:
    from fracsgd.core import share_of_cores
    os.environ.update(share_of_cores(_WORKERS))
    import torch
    torch.set_num_threads(int(os.environ['OMP_NUM_THREADS']))

from fracsgd.datasets.mnist import write_idx


def smoke_run_checks(study, res):
    """What every study's smoke run through the runner must leave: no failed run, every planned run done, the
    progress files cleared, a summary, and the preset in the folder's metadata."""
    from pathlib import Path
    from fracsgd.experiment.store import read_meta, status
    from fracsgd.experiment.sweep import PROGRESS_DIR, unique_runs
    assert res['counts']['failed'] == 0 and status(res['folder'])['done'] == len(unique_runs(study.runs(res['config'])))
    assert not (Path(res['folder']) / PROGRESS_DIR).exists()
    assert len(res['summary']) > 0 and read_meta(res['folder'])['preset'] == 'smoke'


@pytest.fixture
def mnist_files(tmp_path, monkeypatch):
    "FRACSGD_DATA pointing at a folder with 200 synthetic digits in the real IDX format (seed 0)."
    rng = np.random.default_rng(0)
    raw = tmp_path / 'data' / 'MNIST' / 'raw'
    labels = (np.arange(200) % 10).astype(np.uint8)
    images = (rng.random((200, 28, 28)) * 60 + labels[:, None, None] * 19).astype(np.uint8)  # learnable
    write_idx(raw / 't10k-images-idx3-ubyte.gz', images)
    write_idx(raw / 't10k-labels-idx1-ubyte.gz', labels)
    monkeypatch.setenv('FRACSGD_DATA', str(tmp_path / 'data'))
    return raw


@pytest.hookimpl(tryfirst=True)   # before xdist's own hook, which reads the groups (it is registered later, so runs first)
def pytest_collection_modifyitems(config, items):
    """Under `pytest -n N --dist loadgroup` (as `make test` runs it), keep the tests that start a Ray cluster on one
    worker, one after the other (two local clusters at once would compete for ports and cores), and the site
    tests together, so that one worker opens one headless browser on one built site."""
    for item in items:
        path = item.nodeid.split('::')[0]
        if 'ray' in item.nodeid.split('::', 1)[-1].lower():
            item.add_marker(pytest.mark.xdist_group('ray'))
        elif path.endswith('test_site.py'):
            item.add_marker(pytest.mark.xdist_group('site'))
