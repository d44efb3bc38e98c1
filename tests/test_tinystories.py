"""TinyStories: the loaders on files in the real format, bad input, our LLC on a small GPT-Neo language model
against devinterp 2.0.1's `llc` (same model, token blocks, per-token loss and SGLD settings), the study's smoke preset
through the runner on the CPU in float64, and the run keys of its committed results."""
import json, math, tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from fracsgd.datasets.tinystories import (EOT, CausalLMLogits, TokenBlocks, check_context, lm_n_beta, load_stories,
                                          stand_in_stories, token_blocks, token_loss, train_tokenizer)
from fracsgd.llc.estimate import estimate_llc
from fracsgd.llc.result import batch_means_se
from fracsgd.llc.sgld import SGLDSettings
from conftest import smoke_run_checks

torch.set_num_threads(1)
transformers = pytest.importorskip('transformers')


def _gpt_neo(vocab=64, ctx=32, seed=0):
    torch.manual_seed(seed)
    cfg = transformers.GPTNeoConfig(vocab_size=vocab, hidden_size=16, num_layers=2, num_heads=2,
                                    attention_types=[[['global', 'local'], 1]], window_size=8,
                                    max_position_embeddings=ctx, resid_dropout=0, embed_dropout=0,
                                    attention_dropout=0)
    return CausalLMLogits(transformers.GPTNeoForCausalLM(cfg))


@pytest.fixture(scope='module')
def tokenizer():
    stories, _ = stand_in_stories()
    return train_tokenizer(stories[:200], vocab_size=300)


def test_text_file_in_the_tinystories_format(tmp_path, tokenizer):
    # TinyStories' text files: stories separated by <|endoftext|> lines
    path = tmp_path / 'TinyStories-valid.txt'
    path.write_text(f"Once upon a time there was a dog.\nThe dog was happy.\n{EOT}\nLily saw a bird.\n{EOT}\n")
    stories, where = load_stories(path=path)
    assert stories == ['Once upon a time there was a dog.\nThe dog was happy.', 'Lily saw a bird.']
    blocks = token_blocks(stories, tokenizer, block_size=8)
    n_tok = sum(len(tokenizer(s)['input_ids']) for s in stories)     # each story predicts its tokens after the
    assert blocks.n_tokens == n_tok                                   # first, then end-of-text: n tokens in all
    real = blocks.targets != -100
    assert blocks.input_ids[~real].eq(tokenizer.pad_token_id).all()   # masked: padding, or the final end-of-text
    assert lm_n_beta(blocks) == pytest.approx(n_tok / math.log(n_tok))
    assert lm_n_beta(blocks, 'sequences') == pytest.approx(len(blocks.input_ids) / math.log(len(blocks.input_ids)))


def test_padding_does_not_change_the_loss(tokenizer):
    # the same story alone and padded into a longer block: the same per-token loss
    model = _gpt_neo(vocab=len(tokenizer), ctx=64).eval()
    story = ['The value of the expression is assigned to the name.']
    short = token_blocks(story, tokenizer, block_size=len(tokenizer(story[0])['input_ids']) + 1)
    long = token_blocks(story, tokenizer, block_size=48)
    with torch.no_grad():
        a = token_loss(short.n_tokens)(model(short.input_ids), short.targets).sum()
        b = token_loss(long.n_tokens)(model(long.input_ids), long.targets).sum()
    assert short.n_tokens == long.n_tokens and float(a) == pytest.approx(float(b), rel=1e-5)


BAD = {
    'empty corpus file': (lambda tok, d: load_stories(path=_write(d, f' \n{EOT}\n \n')), 'empty corpus'),
    'missing corpus file': (lambda tok, d: load_stories(path=Path(d) / 'nope.txt'), 'no story file'),
    'no stories to block': (lambda tok, d: token_blocks([], tok, 8), 'empty corpus'),
    'tokenizer larger than the embedding': (lambda tok, d: token_blocks(['a b c'], tok, 8, model=_gpt_neo(vocab=50)),
                                            'tokenizer/model mismatch'),
    'blocks longer than the context': (lambda tok, d: check_context(64, _gpt_neo(ctx=32)),
                                       "longer than the model's context of 32"),
    'block of one token': (lambda tok, d: token_blocks(['a b'], tok, 1), 'block_size must be at least 2'),
    'n counted in words': (lambda tok, d: lm_n_beta(token_blocks(['a b c'], tok, 8), 'words'),
                           "count must be 'tokens' or 'sequences'"),
}

def _write(d, text):
    p = Path(d) / 'stories.txt'
    p.write_text(text)
    return p

@pytest.mark.parametrize('case', BAD)
def test_bad_input_is_named(case, tokenizer, tmp_path):
    fn, words = BAD[case]
    with pytest.raises((ValueError, FileNotFoundError)) as e:
        fn(tokenizer, tmp_path)
    assert words in str(e.value)


@pytest.mark.parametrize('changes, words', [(dict(optimizer='lion'), 'optimizer must be one of'),
                                            (dict(n_count='bytes'), "n_count must be"),
                                            (dict(stand_in=True, model='nickypro/tinyllama-15M'), 'cannot stand in'),
                                            (dict(lr=0.0), 'lr must be > 0')])
def test_bad_run_settings_are_named(changes, words):
    from fracsgd.studies.tinystories import LMRun
    with pytest.raises(ValueError, match=words):
        LMRun(**changes)


def test_matches_devinterp_on_a_language_model():
    """Our LLC and devinterp's on the same GPT-Neo, data and settings. Blocks are full (no padding), so devinterp's
    mean over (batch, T-1) token losses is exactly our per-token loss. Conventions as in test_llc_devinterp.py:
    no burn-in, one step between draws, baseline from one pass over the data (n divisible by the batch)."""
    devinterp_llc = pytest.importorskip('devinterp.slt.llc').llc
    datasets = pytest.importorskip('datasets')
    g = torch.Generator().manual_seed(0)
    n, T, B, V = 128, 16, 16, 64
    start = torch.randint(0, V, (n, 1), generator=g)
    ids = (start + 3 * torch.arange(T)) % V                           # arithmetic sequences: learnable
    flip = torch.rand(n, T, generator=g) < 0.1
    ids = torch.where(flip, torch.randint(0, V, (n, T), generator=g), ids)   # 10% noise: loss > 0 at w*
    targets = torch.cat([ids[:, 1:], torch.full((n, 1), -100)], 1)
    blocks = TokenBlocks(ids, targets, 'synthetic')
    model = _gpt_neo(vocab=V, ctx=T)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(300):                                              # full batch, near a minimum
        opt.zero_grad()
        F.cross_entropy(model(ids).transpose(1, 2), targets, ignore_index=-100).backward()
        opt.step()
    model.eval()
    n_beta = lm_n_beta(blocks)                                        # n = 128 x 15 tokens
    settings = SGLDSettings(step_size=3e-5, localization=100.0, n_chains=4, n_draws=200, n_burnin=0,
                            steps_between_draws=1, batch_size=B, n_beta=n_beta, seed=0)
    ours = estimate_llc(model, (ids, targets), token_loss(T - 1), settings, device='cpu')

    ds = datasets.Dataset.from_dict({'input_ids': ids.tolist()}).with_format('torch')
    def loss_fn(m, input_ids):                                        # per-token losses (batch, T-1)
        logits = m(input_ids)[:, :-1]
        return F.cross_entropy(logits.transpose(1, 2), input_ids[:, 1:], reduction='none')
    with tempfile.TemporaryDirectory() as d:
        out = devinterp_llc(model, ds, {}, lr=settings.step_size, n_beta=n_beta, localization=settings.localization,
                            num_chains=settings.n_chains, num_draws=settings.n_draws, num_burnin_steps=0,
                            num_steps_bw_draws=1, batch_size=B, num_init_loss_batches=n // B, loss_fn=loss_fn,
                            device='cpu', output_path=str(Path(d) / 'samples.zarr'))
        dev_trace = np.asarray(out.loss_trace.values, dtype=float)
        dev_init, dev_llc = float(out.init_loss), float(out.llc_mean)
    assert abs(dev_init - ours.baseline) < 1e-4 * max(1.0, abs(ours.baseline))     # same L_n(w*) per token
    dev_se, _ = batch_means_se(n_beta * (dev_trace - dev_init))
    # independent chains, same target: 3 combined standard errors (fixed seeds: deterministic)
    assert abs(ours.llc - dev_llc) < 3 * math.hypot(ours.llc_se, dev_se), (ours.llc, ours.llc_se, dev_llc, dev_se)
    assert ours.llc > 0 and ours.llc_se < 0.2 * ours.llc


def test_hub_loading_code_on_local_files_in_the_hub_formats(tmp_path, tokenizer, monkeypatch):
    """The non-stand-in path (`from_pretrained`, `datasets.load_dataset`) on a model folder written by
    `save_pretrained` and a dataset folder holding a parquet shard with a `text` column, as on the hub."""
    import functools
    import pandas as pd
    from fracsgd.studies import tinystories as study
    model_dir, data_dir = tmp_path / 'model', tmp_path / 'TinyStories'
    _gpt_neo(vocab=len(tokenizer), ctx=64).lm.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    stories, _ = stand_in_stories()
    (data_dir / 'data').mkdir(parents=True)
    pd.DataFrame({'text': stories[:60]}).to_parquet(data_dir / 'data' / 'train-00000-of-00001.parquet')
    got, where = load_stories(str(data_dir), n_stories=50)
    assert got == stories[:50] and 'hub dataset' in where
    monkeypatch.setattr(study, 'load_stories', functools.partial(load_stories, str(data_dir)))
    run = study.LMRun(model=str(model_dir), steps=12, llc_every=6, llc_draws=3, llc_blocks=8, block_size=16,
                      batch_size=4, n_stories=40)
    from fracsgd.experiment.runner import run_one
    from fracsgd.placement import placement
    with pytest.warns(UserWarning):                      # a 3-draw LLC is flagged, as it should be
        out = run_one(study.STUDY, placement('cpu'), tmp_path / 'study', run)
    traj = out['trajectory']
    assert len(traj) == 13 and traj.llc.notna().sum() == 2 and 'from the hub' in out['data_source']
    assert 'STAND-IN' not in out['data_source'] and traj.R.iloc[-1] > 0


def test_smoke_through_the_runner_in_float64(tmp_path):
    """The smoke preset (the stand-in) through the runner and the report, on the CPU in float64. GPT-Neo runs in
    float64, except that transformers computes its attention scores and their softmax in float32 by design."""
    from fracsgd.experiment.runner import run_study
    from fracsgd.studies import get_study
    from fracsgd.studies import tinystories as study
    assert get_study('tinystories') is study.STUDY
    res = run_study(study.STUDY, 'smoke', tmp_path / 'smoke', device='cpu', dtype='float64', progress=True, workers=1)
    assert res['counts'] == dict(done=2, failed=0, skipped=0) and res['preset'] == 'smoke'
    smoke_run_checks(study.STUDY, res)                  # as every study's (test_runner.py leaves this one to us)
    s = res['summary'].dropna(subset=['value'])
    assert len(s) == 10 and ((s.ci_low <= s.value) & (s.value <= s.ci_high)).all()
    assert json.loads((tmp_path / 'smoke' / 'meta.json').read_text())['stand_in'] == study.STAND_IN
    assert all((tmp_path / 'smoke' / name).exists() for name in ('summary.csv', 'fig20.png', *study.STUDY.keep))
    assert (res['per_run'].label == 'TinyStories-1M (stand-in)').all()


def _committed():
    from fracsgd.ledger.provenance import COMPACT
    return sorted((COMPACT / 'tinystories').glob('*/provenance.json'))

def test_committed_results_exist():
    assert [p.parent.name for p in _committed()] == ['quick-stand-in']

@pytest.mark.parametrize('provenance', _committed(), ids=lambda p: p.parent.name)
def test_committed_run_keys(provenance):
    "The configuration that made a committed result still has its runs' keys and its stand-in label."
    from fracsgd.studies import tinystories as study
    from fracsgd.experiment.sweep import unique_runs
    prov = json.loads(provenance.read_text())
    cfg = study.STUDY.config(prov['config'].removesuffix('-stand-in'))
    if prov['config'].endswith('-stand-in'):
        cfg = study.STUDY.with_stand_in(cfg)
    assert sorted(unique_runs(study.STUDY.runs(cfg))) == prov['run_keys']
    assert study.STUDY.stand_in(cfg) == prov['stand_in'] and study.STUDY.preset_of(cfg) == 'quick'
