"""Bad input is named where it enters: one table of mistakes a new user makes, each with the words its error
must contain. Add a row whenever a new entry point takes data, settings or paths."""
import contextlib, io, math, os, shutil, subprocess, sys, warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from fracsgd.core import shared_mode
from fracsgd.train.displacement import Recorder, hf_callback, runs_matrix
from fracsgd.train.ensemble import train_ensemble
from fracsgd.llc.estimate import estimate_llc
from fracsgd.nets.models import make_mlp
from fracsgd.llc.settings import PAPER_PRESET
from fracsgd.train.loop import train

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------------------------------------------------------
# Data that does not fit the model, at each entry point that takes data and a model.

X2 = torch.randn(64, 2, generator=torch.Generator().manual_seed(0))         # moons-shaped inputs
LABELS = torch.arange(64) % 2                                              # classes 0 and 1 of a 2-output net
SHORT_LLC = PAPER_PRESET.replace(n_draws=4, batch_size=16)


def _train(X, y):
    return train(make_mlp([2, 8, 2], seed=0), X, y, lr=0.1, batch_size=16, steps=2)

def _llc(X, y):
    return estimate_llc(make_mlp([2, 8, 2], seed=0), (X, y), 'classification', SHORT_LLC, device='cpu')

def _ensemble(X, y):
    return train_ensemble([make_mlp([2, 8, 2], seed=s) for s in range(2)], (X, y), n_steps=2, batch_size=16,
                          device='cpu')

ENTRY_POINTS = {'train': _train, 'estimate_llc': _llc, 'train_ensemble': _ensemble}
MISFITS = {
    'float labels': (X2, LABELS.float(), 'integer class indices (torch.long), got dtype torch.float32'),
    'negative label': (X2, LABELS - 1, 'label -1 is out of range: a model with 2 outputs takes labels in [0, 1]'),
    'label = n_classes': (X2, LABELS * 2, 'label 2 is out of range: a model with 2 outputs takes labels in [0, 1]'),
    'input width': (torch.randn(64, 3), LABELS, "first layer 'layer1.0' (Linear), which expects in_features=2 "
                                                "(got 3)"),
    'float64 inputs': (X2.double(), LABELS, "dtype torch.float64, but the model's first layer 'layer1.0' (Linear) "
                                           "has torch.float32 weights"),
    'integer inputs': (X2.long(), LABELS, 'dtype torch.int64'),
}


@pytest.mark.parametrize('entry', ENTRY_POINTS)
@pytest.mark.parametrize('misfit', MISFITS)
def test_data_that_does_not_fit_the_model_is_named(entry, misfit):
    X, y, words = MISFITS[misfit]
    with pytest.raises(ValueError) as e:
        ENTRY_POINTS[entry](X, y)
    assert words in str(e.value)


class MeanEmbedding(nn.Module):
    "Token ids [batch, length] -> logits [batch, 2]: an embedding first, as in a language model."
    def __init__(self):
        super().__init__(); self.embed = nn.Embedding(10, 4); self.head = nn.Linear(4, 2)
    def forward(self, ids): return self.head(self.embed(ids).mean(1))

OTHER_FIRST_LAYERS = {
    'conv channels': (lambda: nn.Sequential(nn.Conv2d(1, 2, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                            nn.Linear(2, 2)),
                      torch.randn(64, 3, 8, 8), "first layer '0' (Conv2d), which expects in_channels=1 (got 3)"),
    'float token ids': (MeanEmbedding, torch.rand(64, 5), "first layer 'embed' (Embedding) takes integer token ids"),
}


@pytest.mark.parametrize('case', OTHER_FIRST_LAYERS)
def test_other_first_layers_name_what_they_expect(case):
    make, X, words = OTHER_FIRST_LAYERS[case]
    with pytest.raises(ValueError) as e:
        train(make(), X, LABELS, lr=0.1, batch_size=16, steps=1)
    assert words in str(e.value)
    train(make(), X.long() if case == 'float token ids' else X[:, :1], LABELS, lr=0.1, batch_size=16, steps=1)


def test_fitting_data_still_trains_and_leaves_the_model_as_it_was():
    net = nn.Sequential(nn.Linear(2, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2)).train()
    before = [b.clone() for b in net.buffers()]
    hist = train(net, X2, LABELS, lr=0.1, batch_size=16, steps=2)
    assert len(hist) == 2 and net.training
    assert int(net[1].num_batches_tracked) == 2                        # the two steps, not the probe
    assert not torch.equal(before[0], net[1].running_mean)


# ---------------------------------------------------------------------------------------------------------------
# The displacement recorder: a diverged loss is caught at its step, whatever its type.

@pytest.mark.parametrize('value', [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize('as_type', ['float', 'tensor', '0-d numpy', 'tensor of one element'])
def test_recorder_stops_a_diverged_loss_at_its_step(value, as_type):
    loss = {'float': value, 'tensor': torch.tensor(value), '0-d numpy': np.float32(value),
            'tensor of one element': torch.tensor([value])}[as_type]
    rec = Recorder(make_mlp([3, 4, 2], seed=0), every=10)
    rec.record(1, 0.5)
    with pytest.raises(FloatingPointError) as e:
        rec.record(2, loss)                                  # not a recorded step: caught all the same
    assert str(e.value) == f'loss is {float(value)} at step 2: the run diverged'


def test_recorder_refuses_a_loss_that_is_not_one_number():
    with pytest.raises(ValueError, match=r'one-element tensor, got a tensor of shape \(4,\)'):
        Recorder(make_mlp([3, 4, 2], seed=0)).record(1, torch.ones(4))


# ---------------------------------------------------------------------------------------------------------------
# Trajectory tables of many curves: the ensemble trainer names its nets by `member`, never merged into one curve.

def test_runs_matrix_reads_an_ensemble_table_net_by_net():
    table = _ensemble(X2, LABELS)                            # 2 nets, recorded at steps 0..2, named by `member`
    steps, R = runs_matrix(table)
    assert R.shape == (2, len(steps)) and not np.allclose(R[0], R[1])
    for i, member in enumerate(sorted(table.member.unique())):
        assert np.array_equal(R[i], table[table.member == member].set_index('step').R.loc[steps].to_numpy())


@pytest.mark.parametrize('by, words', [(None, "no 'run' or 'member' column tells the curves apart: pass by="),
                                        ('run', "no column 'run' to tell the runs apart")])
def test_runs_matrix_refuses_curves_it_cannot_tell_apart(by, words):
    table = _ensemble(X2, LABELS).drop(columns='member')     # two nets' rows, nothing to tell them apart
    with pytest.raises(ValueError, match=words):
        runs_matrix(table, by=by)


# ---------------------------------------------------------------------------------------------------------------
# The command line: one line on standard error, exit status 2, no traceback.

def fracsgd(*args, env=None):
    "The `fracsgd` command in a fresh process, as `python -m fracsgd`: exit status, output, errors."
    env = {**os.environ, 'PYTHONPATH': str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, '-m', 'fracsgd', *args], capture_output=True, text=True, env=env,
                          cwd=ROOT)

def one_line_exit_2(returncode, stderr):
    assert returncode == 2, (returncode, stderr)
    assert len(stderr.strip().splitlines()) == 1 and 'Traceback' not in stderr, stderr
    return stderr.strip()

@pytest.fixture
def cli(capsys):
    "The command in this process (faster than a fresh one): `cli(*argv)` gives its exit status and errors."
    from fracsgd.cli import main
    def call(*argv):
        code = main(list(argv))
        return code, capsys.readouterr().err
    return call


@pytest.fixture
def unwritable(tmp_path):
    "A folder in which this user cannot create anything (root ignores permissions: an immutable folder then)."
    folder = tmp_path / 'locked'
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o500)
        yield folder
        folder.chmod(0o700)
        return
    if shutil.which('chattr') is None or subprocess.run(['chattr', '+i', str(folder)]).returncode != 0:
        pytest.skip('running as root on a file system without immutable folders: nothing is unwritable')
    yield folder
    subprocess.run(['chattr', '-i', str(folder)])


def test_python_dash_m_fracsgd():
    p = fracsgd('--help')
    assert p.returncode == 0 and p.stdout.startswith('usage: fracsgd') and 'run' in p.stdout
    p = fracsgd('run', 'moons-diffusion', '--device', 'tpu9')          # a fresh process: no traceback
    assert one_line_exit_2(p.returncode, p.stderr).startswith("fracsgd: unknown device 'tpu9'")


def test_out_that_is_a_file_is_refused(tmp_path, cli):
    (tmp_path / 'notes.txt').write_text('')
    msg = one_line_exit_2(*cli('run', 'moons-diffusion', '--out', str(tmp_path / 'notes.txt')))
    assert msg == f'fracsgd: --out {tmp_path / "notes.txt"} is a file, not a folder'
    msg = one_line_exit_2(*cli('run', 'moons-diffusion', '--out', str(tmp_path / 'notes.txt' / 'run1')))
    assert msg.endswith(f'{tmp_path / "notes.txt"} is a file, not a folder')


def test_unwritable_out_is_refused(unwritable, cli):
    msg = one_line_exit_2(*cli('run', 'moons-diffusion', '--out', str(unwritable / 'moons')))
    assert msg.startswith(f'fracsgd: --out {unwritable / "moons"}: cannot ')
    assert 'permission denied' in msg.lower() or 'not permitted' in msg


@pytest.mark.parametrize('argv, words', [(['--device', 'tpu9'], "unknown device 'tpu9'"),
                                         (['--device', 'cuda:99'], "'cuda:99' is not available"),
                                         (['--preset', 'huge'], "has no preset 'huge'"),
                                         (['--dtype', 'float8'], "unknown dtype 'float8'")])
def test_what_the_runner_cannot_run_is_refused_before_anything_is_written(tmp_path, cli, argv, words):
    msg = one_line_exit_2(*cli('run', 'moons-diffusion', '--out', str(tmp_path / 'moons'), *argv))
    assert words in msg, msg
    assert not (tmp_path / 'moons').exists()


def test_report_of_a_folder_without_its_preset_says_how_to_record_it(tmp_path, cli):
    (tmp_path / 'results').mkdir()
    (tmp_path / 'results' / 'meta.json').write_text('{"study": "moons-diffusion", "sessions": []}')
    msg = one_line_exit_2(*cli('report', str(tmp_path / 'results')))
    assert 'before study folders recorded their configuration' in msg, msg


# ---------------------------------------------------------------------------------------------------------------
# The Hugging Face callback: what its loss column holds, and a resumed run continuing R(t).

def tiny_bert():
    transformers = pytest.importorskip('transformers')
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                  intermediate_size=32, max_position_embeddings=16, num_labels=2)
    return transformers.BertForSequenceClassification(cfg)

def token_rows(n=64):
    g = torch.Generator().manual_seed(0)
    return [dict(input_ids=torch.randint(0, 32, (8,), generator=g), labels=i % 2) for i in range(n)]

def trainer_args(out, **changes):
    import transformers
    kw = dict(output_dir=str(out), max_steps=8, per_device_train_batch_size=8, learning_rate=0.05,
              logging_steps=1, report_to=[], save_strategy='no', use_cpu=True, disable_tqdm=True, seed=0)
    return transformers.TrainingArguments(**{**kw, **changes})


def test_hf_loss_column_is_filled_at_the_logged_steps(tmp_path):
    import transformers
    cb = hf_callback(every=1)
    transformers.Trainer(model=tiny_bert(), args=trainer_args(tmp_path, logging_steps=3), train_dataset=token_rows(),
                         callbacks=[cb]).train()
    tab = cb.recorder.table
    assert tab.step.tolist() == list(range(9))
    assert tab.dropna(subset=['loss']).step.tolist() == [3, 6]   # as documented: the steps the Trainer logs


def test_hf_resume_keeps_the_original_w0(tmp_path):
    import transformers
    whole = hf_callback(every=1)
    args = trainer_args(tmp_path, save_strategy='steps', save_steps=4)
    transformers.Trainer(model=tiny_bert(), args=args, train_dataset=token_rows(), callbacks=[whole]).train()
    resumed = hf_callback(every=1)
    transformers.Trainer(model=tiny_bert(), args=args, train_dataset=token_rows(),
                         callbacks=[resumed]).train(resume_from_checkpoint=str(tmp_path / 'checkpoint-4'))
    saved = tmp_path / 'checkpoint-4' / 'displacement_recorder.pt'
    assert saved.stat().st_mode & 0o777 == shared_mode()                 # written whole, readable as any file
    a, b = whole.recorder.table, resumed.recorder.table
    assert b.step.tolist() == list(range(9)) and b.R.iloc[4] > 0          # continued, not restarted at step 4
    np.testing.assert_allclose(b.R, a.R, rtol=1e-5)                      # the same path as the unbroken run
    np.testing.assert_allclose(b.loss.iloc[1:], a.loss.iloc[1:], rtol=1e-5)


def test_hf_resume_without_recorder_state_says_so(tmp_path):
    import transformers
    args = trainer_args(tmp_path, save_strategy='steps', save_steps=4)
    transformers.Trainer(model=tiny_bert(), args=args, train_dataset=token_rows()).train()
    cb = hf_callback(every=1)
    with pytest.warns(UserWarning, match='R\\(t\\) restarts from the resumed weights'):
        transformers.Trainer(model=tiny_bert(), args=args, train_dataset=token_rows(),
                             callbacks=[cb]).train(resume_from_checkpoint=str(tmp_path / 'checkpoint-4'))
    assert cb.recorder.table.step.tolist() == [0, 5, 6, 7, 8]


# ---------------------------------------------------------------------------------------------------------------
# A study run into a folder that holds another configuration starts a new plan and says so, in Python and on the
# command line; everything a study run writes is whole and readable by other users.

import fracsgd.studies.moons_diffusion as moons
from fracsgd.experiment.runner import run_study
from fracsgd.experiment.store import ConfigChanged, load_study

TINY = replace(moons.QUICK, n_models=2, nets_per_run=2, epochs=2)      # a study folder to start from, in seconds

def tiny_run(folder, cfg=TINY):
    return run_study(moons.STUDY, config=cfg, folder=folder, workers=1, progress=False, report=False)


def test_python_sweep_into_another_configuration_says_so(tmp_path):
    folder = tmp_path / 'moons'
    tiny_run(folder)
    with warnings.catch_warnings():
        warnings.simplefilter('error', ConfigChanged)                  # resuming the same plan: nothing to say
        tiny_run(folder)
    with pytest.warns(ConfigChanged) as caught:
        tiny_run(folder, replace(TINY, epochs=3))
    note = str(caught[0].message)
    assert 'held a sweep of another configuration (epochs: 2 → 3)' in note
    assert '0 earlier run(s) with unchanged configuration are reused, 1 stay on disk' in note
    assert load_study(folder).runs.epochs.tolist() == [3]             # the table holds the new configuration only


@pytest.fixture(scope='module')
def cli_study(tmp_path_factory):
    "A quick study run by the command line (umask 022) into a folder that held another configuration."
    folder = tmp_path_factory.mktemp('cli') / 'moons'
    from fracsgd.cli import main
    err, mask = io.StringIO(), os.umask(0o022)
    try:
        tiny_run(folder)
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(['run', 'moons-diffusion', '--smoke', '--out', str(folder), '--workers', '1',
                         '--no-progress'])
    finally:
        os.umask(mask)
    return folder, code, err.getvalue()


def test_cli_run_into_another_configuration_says_so(cli_study):
    folder, code, err = cli_study
    assert code == 0
    notes = [line for line in err.splitlines() if 'another configuration' in line]
    assert len(notes) == 1 and notes[0].startswith('fracsgd: warning: ') and '(epochs: 2 → 200' in notes[0], err
    assert load_study(folder).runs.epochs.tolist() == [200, 200]


def test_everything_a_study_run_writes_is_whole_and_readable_by_others(cli_study):
    folder = cli_study[0]
    files = [p for p in folder.rglob('*') if p.is_file()]
    kinds = {p.suffix for p in files}
    assert {'.json', '.parquet', '.csv', '.png'} <= kinds, kinds                 # metadata, tables, figures
    assert not [p for p in files if p.name.endswith('.tmp')]                     # nothing half-written left
    modes = {str(p.relative_to(folder)): oct(p.stat().st_mode & 0o777) for p in files}
    assert set(modes.values()) == {'0o644'}, modes
    folders = {str(p.relative_to(folder)): oct(p.stat().st_mode & 0o777) for p in folder.rglob('*') if p.is_dir()}
    assert set(folders.values()) == {'0o755'}, folders


def test_recorder_tables_are_readable_by_others(tmp_path):
    mask = os.umask(0o022)
    try:
        rec = Recorder(make_mlp([3, 4, 2], seed=0))
        rec.save(tmp_path / 'trajectory.parquet')
        rec.save(tmp_path / 'trajectory.csv')
    finally:
        os.umask(mask)
    assert {oct(p.stat().st_mode & 0o777) for p in tmp_path.iterdir()} == {'0o644'}


# ---------------------------------------------------------------------------------------------------------------
# Sampler options and the localization-sensitivity diagnostic: bad values are refused where they enter.

@pytest.mark.parametrize('changes, words', [
    (dict(preconditioner='adam'), "preconditioner must be 'none' or 'rmsprop'"),
    (dict(preconditioner='rmsprop', rmsprop_eps=0.0), 'rmsprop_eps must lie in (0'),
    (dict(preconditioner='rmsprop', rmsprop_alpha=1.0), 'rmsprop_alpha must lie in [0, 1)'),
])
def test_bad_preconditioner_settings_are_named(changes, words):
    with pytest.raises(ValueError, match=None) as e:
        PAPER_PRESET.replace(**changes)
    assert words in str(e.value)


@pytest.mark.parametrize('changes, words', [(dict(factors=()), 'factors'), (dict(factors=(1,)), 'factors'),
                                            (dict(factors=(-3,)), 'factors'), (dict(tolerance=0), 'tolerance'),
                                            (dict(tolerance=math.nan), 'tolerance')])
def test_bad_sensitivity_options_are_named_before_any_sampling(changes, words):
    from fracsgd.llc.localization import localization_sensitivity
    with pytest.raises(ValueError) as e:
        localization_sensitivity(make_mlp([2, 4, 2], seed=0), (X2, LABELS), 'classification', SHORT_LLC, **changes)
    assert words in str(e.value)
