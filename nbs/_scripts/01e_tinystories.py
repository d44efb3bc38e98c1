# %% [markdown]
# # TinyStories
#
# > Stories as token blocks for a causal language model: the real TinyStories loaders, an offline stand-in corpus and tokenizer, padding masked out of a per-token loss, and the checks a model and its tokenizer must pass.

# %%
#| default_exp datasets.tinystories

# %%
#| hide
from nbdev.showdoc import *

# %%
#| export
from __future__ import annotations
import math, re
from pathlib import Path
from typing import NamedTuple, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from fracsgd.core import require

# %%
import torch
torch.set_num_threads(1)   # two cores shared with other work

# %% [markdown]
# The paper's language experiments (ICLR version, appendix G.3; table 1 and table 4) continue the training of
# three small pretrained models from the Hugging Face hub on TinyStories (Eldan & Li, 2023), a corpus of short
# stories in simple English. This chapter is the data side of the [TinyStories study](tinystories_study.html):
# it gets the stories, cuts them into token blocks of fixed length, and gives the LLC estimator a loss it can
# evaluate on those blocks.
#
# ## Getting the stories
#
# `load_stories` keeps the loading code a user with network access needs: `datasets.load_dataset` of the hub's
# `roneneldan/TinyStories` (its `text` column), or a local text file. TinyStories is also distributed as plain
# text files in which stories are separated by the marker `<|endoftext|>`; a file without that marker is split
# at blank lines. Empty stories are dropped, and a corpus with no story left is refused.
#
# No machine here reaches the hub, so the study needs a **stand-in corpus**. We looked for real English prose that
# an installed package ships: no nltk data, no Gutenberg texts among the Debian packages, and the large text files
# on disk are vim's and Perl's reference files. The best we found is the one every CPython ships:
# `pydoc_data.topics`, the help text of the Python language reference (about 65,000 words; some 38,000 in the prose paragraphs we keep). It is real, edited
# English, but technical prose, not children's stories; we keep its prose paragraphs (not the indented code and
# grammar rules) and call every paragraph a "story". The numbers a model gives on it say nothing about
# TinyStories; they exercise the protocol.

# %%
#| export
EOT = '<|endoftext|>'               # the separator of TinyStories' text files, and GPT-Neo's end-of-text token

def _clean(stories) -> list[str]:
    return [s.strip() for s in stories if s and s.strip()]

def stories_from_text(text: str) -> list[str]:
    "Split a text into stories: at `<|endoftext|>` markers when it has any, else at blank lines."
    parts = text.split(EOT) if EOT in text else re.split(r'\n\s*\n', text)
    return _clean(parts)

def load_stories(source: str = 'roneneldan/TinyStories', split: str = 'train', n_stories: int | None = None,
                 path=None) -> tuple[list[str], str]:
    """The stories of a local text file `path`, or of the hub dataset `source` (`datasets.load_dataset`, its
    `text` column); at most `n_stories`. Returns the stories and a description of where they came from."""
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no story file at {path}: pass a text file (stories separated by {EOT} or "
                                    "blank lines), or path=None to load the hub dataset")
        stories, where = stories_from_text(path.read_text(encoding='utf-8')), f'text file {path}'
    else:
        datasets = require('datasets')                  # imported late: slow, and only needed here
        ds = datasets.load_dataset(source, split=split if n_stories is None else f'{split}[:{n_stories}]')
        if 'text' not in ds.column_names:
            raise ValueError(f"dataset {source!r} has no 'text' column (columns: {ds.column_names})")
        stories, where = _clean(ds['text']), f'hub dataset {source} ({split} split)'
    if not stories:
        raise ValueError(f"empty corpus: {where} holds no non-blank story")
    stories = stories[:n_stories] if n_stories else stories
    return stories, f'{where}: {len(stories)} stories'

def stand_in_stories(min_words: int = 12) -> tuple[list[str], str]:
    """STAND-IN for TinyStories: the prose paragraphs (no indented code, at least `min_words` words) of the Python
    language reference that CPython ships as `pydoc_data.topics`."""
    from pydoc_data.topics import topics
    paras = [p for t in topics.values() for p in re.split(r'\n\s*\n', t)]
    keep = [' '.join(p.split()) for p in paras
            if p and not p[0].isspace() and len(p.split()) >= min_words and not set(p.strip()) <= set('*=-')]
    if not keep:
        raise ValueError("pydoc_data.topics holds no prose paragraph: this Python ships no reference text")
    return keep, (f"STAND-IN corpus: {len(keep)} prose paragraphs of the Python language reference "
                  "(pydoc_data.topics), not TinyStories")


# %%
import tempfile
with tempfile.TemporaryDirectory() as d:
    p = Path(d) / 'stories.txt'
    p.write_text(f"Once upon a time, a cat sat.\n{EOT}\nTom had a red ball.\n{EOT}\n\n")
    got, where = load_stories(path=p)
    assert got == ['Once upon a time, a cat sat.', 'Tom had a red ball.'] and '2 stories' in where
    p.write_text("Lily ran.\n\n  \nThe sun was warm.\n")
    assert load_stories(path=p)[0] == ['Lily ran.', 'The sun was warm.']
    p.write_text(f" \n{EOT}\n\n")
    try:
        load_stories(path=p)
        raise AssertionError('should have raised')
    except ValueError as e:
        assert 'empty corpus' in str(e)
stories, corpus_source = stand_in_stories()
print(corpus_source)
assert len(stories) > 500 and all(len(s.split()) >= 12 for s in stories)
stories[:2]


# %% [markdown]
# ## Tokenizer
#
# The three models of the paper use the GPT-Neo (GPT-2) byte-level BPE tokenizer with 50,257 tokens, of which
# `<|endoftext|>` (id 50,256) marks the end of a story (from the models' tokenizer files on the hub). It is not
# installed here, so the stand-in trains a byte-level BPE tokenizer of the same kind on the stand-in corpus with
# the `tokenizers` library, with a smaller vocabulary (default 2,048: the corpus is 400 times smaller than
# TinyStories) and the same end-of-text token, which also serves as padding. A user with the hub calls
# `transformers.AutoTokenizer.from_pretrained` instead; both give a `PreTrainedTokenizerFast`.

# %%
#| export
def train_tokenizer(stories: Sequence[str], vocab_size: int = 2048):
    "A byte-level BPE tokenizer (GPT-2 style) trained on `stories`, `<|endoftext|>` as end-of-text and padding."
    tk, PreTrainedTokenizerFast = require('tokenizers'), require('transformers').PreTrainedTokenizerFast
    Tokenizer, decoders, models, pre_tokenizers, trainers = (tk.Tokenizer, tk.decoders, tk.models,
                                                              tk.pre_tokenizers, tk.trainers)
    if not stories:
        raise ValueError("empty corpus: a tokenizer needs at least one story to train on")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOT], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(stories, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOT, bos_token=EOT, pad_token=EOT)


# %%
tokenizer = train_tokenizer(stories)
assert len(tokenizer) == 2048 and tokenizer.eos_token_id == tokenizer.pad_token_id
text = stories[0][:80]
assert tokenizer.decode(tokenizer(text)['input_ids']) == text                 # byte-level: lossless
print(len(tokenizer(text)['input_ids']), 'tokens:', tokenizer.convert_ids_to_tokens(tokenizer(text)['input_ids'])[:12])


# %% [markdown]
# ## Token blocks, with the padding masked
#
# Each story, followed by the end-of-text token, is cut into blocks of `block_size` tokens; the last block of a
# story is filled up with the padding token. A block holds `input_ids` and `targets`: the target at position $t$
# is the token at $t+1$, and $-100$ (ignored by the loss) where the next token is padding or lies beyond the
# block. So every real next-token prediction counts once and padding never does. Right padding needs no
# attention mask here: a causal model's output at a real position sees only earlier positions, which are real.
#
# Two checks guard the model: the tokenizer's ids must fit the model's embedding (`check_tokenizer`, a tokenizer
# of another model would silently index the wrong rows, or fail deep inside the embedding), and a block must
# fit the model's context (`check_context`: GPT-Neo's position table has `max_position_embeddings` rows).

# %%
#| export
class TokenBlocks(NamedTuple):
    "Fixed-length token blocks: `input_ids` and `targets` (next token, −100 where masked), int64 (n, block_size)."
    input_ids: torch.Tensor
    targets: torch.Tensor
    source: str

    @property
    def n_tokens(self) -> int:
        "The number of predicted (unmasked) tokens."
        return int((self.targets != -100).sum())

def _vocab_rows(model: nn.Module) -> int:
    return model.get_input_embeddings().num_embeddings

def check_tokenizer(tokenizer, model: nn.Module) -> None:
    "Refuse a tokenizer whose token ids do not fit the model's input embedding."
    rows, size = _vocab_rows(model), len(tokenizer)
    if size > rows:
        raise ValueError(f"tokenizer/model mismatch: the tokenizer has {size} tokens but the model's embedding "
                         f"has {rows} rows; use the tokenizer the model was trained with")

def check_context(block_size: int, model: nn.Module) -> None:
    "Refuse blocks longer than the model's context (its `config.max_position_embeddings`)."
    ctx = getattr(getattr(model, 'config', None), 'max_position_embeddings', None)
    if ctx is not None and block_size > ctx:
        raise ValueError(f"sequences of {block_size} tokens are longer than the model's context of {ctx} "
                         f"positions: use block_size <= {ctx}")

def token_blocks(stories: Sequence[str], tokenizer, block_size: int = 128, model: nn.Module | None = None,
                 max_blocks: int | None = None, source: str = '') -> TokenBlocks:
    "Stories (each + end-of-text) cut into `block_size` blocks, padded; checked against `model` when given."
    if block_size < 2:
        raise ValueError(f"block_size must be at least 2 (a token and its successor), got {block_size}")
    if model is not None:
        check_tokenizer(tokenizer, model)
        check_context(block_size, model)
    if not stories:
        raise ValueError("empty corpus: no story to cut into token blocks")
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    if eos is None or pad is None:
        raise ValueError("the tokenizer needs an end-of-text token and a padding token (set pad_token = eos_token)")
    ids, tgt = [], []
    for ids_story in tokenizer(list(stories))['input_ids']:
        toks = ids_story + [eos]
        for i in range(0, len(toks) - 1, block_size):          # a block predicts toks[i+1 : i+block_size+1]
            x, y = toks[i:i + block_size], toks[i + 1:i + block_size + 1]
            y = y + [-100] * (len(x) - len(y))
            ids.append(x + [pad] * (block_size - len(x)))
            tgt.append(y + [-100] * (block_size - len(y)))
            if max_blocks and len(ids) >= max_blocks:
                break
        if max_blocks and len(ids) >= max_blocks:
            break
    blocks = TokenBlocks(torch.tensor(ids), torch.tensor(tgt), source)
    if blocks.n_tokens == 0:
        raise ValueError("empty corpus: the stories hold no token to predict")
    return blocks


# %%
blocks = token_blocks(stories, tokenizer, block_size=64, source=corpus_source)
ids, tgt = blocks.input_ids, blocks.targets
assert ids.shape == tgt.shape and ids.shape[1] == 64
real = tgt != -100
assert torch.equal(tgt[:, :-1][real[:, :-1]], ids[:, 1:][real[:, :-1]])      # a target is the next input token
assert (ids[~real & (ids != tokenizer.pad_token_id)].numel() <= len(ids))    # masked: padding, or a block's end
print(f"{len(ids)} blocks of 64 tokens, {blocks.n_tokens:,} predicted tokens "
      f"({blocks.n_tokens / ids.numel():.0%} of the positions; the rest is padding or a block's last position)")


# %% [markdown]
# ## The loss on token blocks, and what $n$ counts
#
# The LLC estimator of the [LLC chapter](llc.html) takes a per-sample loss and averages it over a minibatch of
# samples (here: blocks). A language model's likelihood is a product over next-token predictions, and its
# training loss is the mean negative log-likelihood *per predicted token*. We keep that: `token_loss` gives each
# block the sum of its token losses divided by the mean number of predicted tokens per block of the whole data
# set, so the mean over all blocks is exactly the per-token mean loss $L_n$, with padding contributing nothing,
# and a minibatch's mean estimates it without bias.
#
# Then $n$ in $n\beta = n/\log n$ counts **tokens**: the $n$ of the LLC estimator is the number of independent
# factors of the likelihood whose mean $L_n$ is, and that is the number of predicted tokens. Counting blocks
# instead would make $n\beta$ smaller by the factor (tokens per block) × log ratio, and with it the LLC of the
# same posterior. The paper does not say which it used; `lm_n_beta(blocks, count=...)` offers both, and the
# study takes `'tokens'` by default. `CausalLMLogits` wraps a Hugging Face causal model so that it maps token ids
# to logits, the form the estimator and the ensemble code call.

# %%
#| export
class CausalLMLogits(nn.Module):
    "A causal language model (Hugging Face) as a plain module: `input_ids` (B, T) -> logits (B, T, vocab)."
    def __init__(self, lm: nn.Module):
        super().__init__()
        self.lm = lm

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.lm(input_ids=input_ids, use_cache=False).logits

    def get_input_embeddings(self):
        return self.lm.get_input_embeddings()

    @property
    def config(self):
        "The wrapped model's configuration (context length, vocabulary)."
        return self.lm.config

def token_loss(tokens_per_block: float):
    "Per-block loss `(logits, targets) -> (B,)`: summed token NLL (−100 masked) / `tokens_per_block`."
    if not tokens_per_block > 0:
        raise ValueError(f"tokens_per_block must be > 0, got {tokens_per_block}")
    def loss(logits, targets):
        nll = F.cross_entropy(logits.transpose(1, 2), targets, ignore_index=-100, reduction='none')   # (B, T)
        return nll.sum(1) / tokens_per_block
    loss.tokens_per_block = tokens_per_block
    return loss

def lm_n_beta(blocks: TokenBlocks, count: str = 'tokens') -> float:
    "n·β = n/log n with n the number of predicted tokens (`count='tokens'`) or of blocks (`'sequences'`)."
    if count not in ('tokens', 'sequences'):
        raise ValueError(f"count must be 'tokens' or 'sequences', got {count!r}")
    n = blocks.n_tokens if count == 'tokens' else len(blocks.input_ids)
    if n < 2:
        raise ValueError(f"n·β = n/log n needs n >= 2, got n={n} {count}")
    return n / math.log(n)


# %% [markdown]
# A check with a model whose loss we can write down: a model that ignores its input and outputs uniform logits
# has token loss $\log V$ exactly, so the per-block losses must average to $\log V$ over the blocks, padding or
# not.

# %%
class _Uniform(nn.Module):
    def __init__(self, V):
        super().__init__()
        self.emb = nn.Embedding(V, 1)
    def forward(self, x):
        return torch.zeros(*x.shape, self.emb.num_embeddings)
    def get_input_embeddings(self):
        return self.emb

V = len(tokenizer)
per_block = blocks.n_tokens / len(blocks.input_ids)
lf = token_loss(per_block)
mean_loss = lf(_Uniform(V)(blocks.input_ids), blocks.targets).mean().item()
assert abs(mean_loss - math.log(V)) < 1e-4, (mean_loss, math.log(V))
print(f"n·β with n in tokens: {lm_n_beta(blocks):,.0f}; in blocks: {lm_n_beta(blocks, 'sequences'):,.0f}")

# %% [markdown]
# **Cross-check with devinterp.** devinterp's `llc` takes a language model the way it was built for: a dataset of
# `input_ids` and a loss function returning per-token losses of shape (batch, length − 1), averaged. On full
# blocks (no padding) that average is our per-token loss, so the two estimators target the same number. The
# test `tests/test_tinystories.py::test_matches_devinterp_on_a_language_model` trains a two-layer GPT-Neo on 128
# blocks of 16 tokens (noisy arithmetic sequences, seed 0), then runs both estimators with the same SGLD
# setting (step $3\cdot10^{-5}$, localization 100, 4 chains × 200 draws, batch 16, no burn-in) and the same
# $n\beta$ with $n$ in tokens; the baselines must agree to $10^{-4}$ (relative) and the two LLCs within three
# combined standard errors.

# %% [markdown]
# The checks at work: a tokenizer with more tokens than the model's embedding rows, and blocks longer than the
# context, are refused with a message saying what to do.

# %%
from transformers import GPTNeoConfig, GPTNeoForCausalLM
tiny = GPTNeoForCausalLM(GPTNeoConfig(vocab_size=1000, hidden_size=8, num_layers=2, num_heads=2,
                                      attention_types=[[['global', 'local'], 1]], max_position_embeddings=32))
for bad in (lambda: token_blocks(stories[:5], tokenizer, 16, model=tiny),
            lambda: check_context(64, CausalLMLogits(tiny))):
    try:
        bad()
        raise AssertionError('should have raised')
    except ValueError as e:
        print(e)

# %%
#| hide
import nbdev
nbdev.nbdev_export()
