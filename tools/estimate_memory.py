"""Estimated peak memory of every study's presets, from what one run holds at once, anchored on measured presets of
the same study (nbs/bench/memory.csv):

    python tools/estimate_memory.py                  # every study's smoke, quick and full presets
    python tools/estimate_memory.py --out nbs/bench/memory_estimates.csv

What a run holds beyond its process's own (imports, interpreter) grows with three things, counted without
allocating anything (the nets are built on PyTorch's meta device):

* its weights: the nets it holds at once (an ensemble's members are stacked), times PER_WEIGHT bytes, what one
  weight costs while a worker trains, records R(t) and samples the LLC (fitted on the runs of
  nbs/bench/memory_runs.csv: the weights, their gradient, R(t)'s origin, the optimizer, the LLC's copies);
* its activations: the larger of a pass with gradients (every layer's output per sample, twice for forward and
  backward, times the most samples such a pass takes: a training batch, an SGLD batch of every chain, an LLC slice
  of eval_batch / 4) and one without (the largest layer's input and output, times eval_batch);
* its data, as the run keeps them.

A preset's worker then needs the measured worker peak of the largest measured preset below it (quick, else smoke)
plus the growth from that preset's largest run to its own; a study that declares its need (`Study.memory`) is taken
at its word, as the runner is. The preset in all (summed resident sets, memory.csv's peak_total_rss_gb): the smoke
driver's peak plus as many workers as the runner plans on a machine of `cores` cores and `memory` bytes (this one's:
2 cores, 24 GB; a study that declares nothing gets one worker per core, as the pool starts them). The check: each
measured quick preset estimated from its smoke preset alone (`from_smoke_gb`) beside what it measured.
"""
from __future__ import annotations
import argparse, os, warnings
from pathlib import Path

import pandas as pd
import torch

ROOT = Path(__file__).resolve().parents[1]
MEASURED = ROOT / 'nbs' / 'bench' / 'memory.csv'
GB = 2 ** 30
from fracsgd.studies.tiny_imagenet import MEMORY_PER_WEIGHT as PER_WEIGHT   # bytes, fitted on memory_runs.csv
EVAL_BATCH = 4096          # estimate_llc's default: samples of the baseline at once (a quarter with gradients)


def _count_activations(model: torch.nn.Module, sample: torch.Tensor) -> tuple[int, int]:
    """Bytes of the outputs of `model`'s leaf modules per sample of the batch `sample` (eval mode), in all and the
    largest one's; on the meta device nothing is allocated. An in-place layer returns its input: it counts once."""
    seen = {}
    def hook(m, args, out):
        outs = out if isinstance(out, (tuple, list)) else [getattr(out, 'logits', out)]
        seen.update({id(o): o for o in outs if torch.is_tensor(o)})
    hooks = [m.register_forward_hook(hook) for m in model.modules() if not list(m.children())]
    try:
        with torch.no_grad():
            model.eval()(sample)
    finally:
        for h in hooks:
            h.remove()
    sizes = [o.numel() * o.element_size() // len(sample) for o in seen.values()]
    return sum(sizes), max(sizes)


def _llc(s):
    "(batch, chains) of SGLD settings `s` (None: no LLC)."
    return (0, 0) if s is None else (s.batch_size or 0, s.n_chains)


def run_parts(study, run) -> dict:
    """What `run` of `study` holds at once: nets, weights per net, one sample's activations, the samples at once
    (with and without gradients) and its data, in bytes where they are bytes."""
    name = study.name
    meta = torch.device('meta')
    from fracsgd.llc.settings import PAPER_PRESET
    if name == 'tiny-imagenet':
        from fracsgd.nets.convnets import build_net
        with meta:
            nets = [build_net(run.arch, 'scratch', run.image_size)]
            nets[0].new_head(run.n_classes)
        sample = torch.zeros(2, 3, run.store_size, run.store_size, dtype=torch.uint8, device=meta)
        per, test = run.per_class or 500, run.test_per_class or 50
        images = run.n_classes * (per + test + (per if run.weights == 'scratch' else 0))
        n = min(run.llc_images or run.n_classes * per, run.n_classes * per)
        data = images * 3 * run.store_size ** 2
        batch, (llc_batch, chains), eval_batch = run.batch_size, (min(run.batch_size, n), 1), run.eval_batch
    elif name == 'tinystories':
        if not run.stand_in:
            raise LookupError("the hub's models are built from their configurations on the hub, out of reach here")
        from fracsgd.studies.tinystories import LLC_EVAL_BLOCKS
        from fracsgd.nets.models import stand_in_config
        from transformers import GPTNeoForCausalLM
        from fracsgd.datasets.tinystories import CausalLMLogits
        nets = [CausalLMLogits(GPTNeoForCausalLM(stand_in_config(run.stand_in_vocab, 0)))]   # small: on the CPU
        sample = torch.zeros(2, run.block_size, dtype=torch.long)      # (its masks need values: not on meta)
        data = run.llc_blocks * run.block_size * 8
        batch, (llc_batch, chains), eval_batch = run.batch_size, (run.llc_batch, 1), LLC_EVAL_BLOCKS
    else:
        with meta:
            built = study.build_models(run)
        nets = list(built) if isinstance(built, (list, tuple)) else [built]
        if name.startswith('mnist'):
            from fracsgd.studies.mnist_runs import llc_setting
            n = int(run.n_images * (1 - run.test_fraction))
            sample, data = torch.zeros(2, 784, device=meta), run.n_images * (784 * 4 + 8)
            llc = llc_setting(run.llc) if run.llc_every else None
            batch = n if run.full_batch else run.batch_size
        elif name.startswith('moons'):
            n = run.n_samples
            sample, data = torch.zeros(2, 2, device=meta), n * (2 * 4 + 8)
            llc = getattr(run, 'llc', PAPER_PRESET if getattr(run, 'llc_every', 0) else None)
            batch = n if getattr(run, 'full_batch', False) else run.batch_size
        elif name == 'grokking':
            n = int(run.p ** 2 * run.train_fraction)
            sample, data = torch.zeros(2, 2, dtype=torch.long, device=meta), run.p ** 2 * 3 * 8
            llc, batch = PAPER_PRESET, run.batch_size
        elif name == 'cifar10':
            from fracsgd.studies.cifar10 import LLC_SETTINGS
            n = int(run.n_images * (1 - run.test_fraction))
            sample = torch.zeros(2, 3, run.image_size, run.image_size, device=meta)
            data, llc, batch = run.n_images * (3 * run.image_size ** 2 * 4 + 8), LLC_SETTINGS[run.llc], run.batch_size
        else:
            raise LookupError(f'no estimate for {name}')
        (llc_batch, chains), eval_batch = _llc(llc), min(EVAL_BATCH, n)
        llc_batch = min(llc_batch or n, n) if chains else 0
    k = len(nets)
    act, largest = _count_activations(nets[0], sample)
    with_grad = max(batch * k, llc_batch * chains * k, max(1, eval_batch // 4) * k if chains else 0)
    return dict(nets=k, weights=sum(p.numel() for p in nets[0].parameters()), activation_per_sample=act,
                largest_output=largest, samples_with_grad=with_grad, samples_without=eval_batch * k,
                data_bytes=int(data))


def grows(parts: dict) -> float:
    """Bytes a worker holds for a run of these `parts` beyond its process's own: weights, the larger of a pass with
    gradients (every layer's output, twice) and one without (a layer's input and output at a time), and data."""
    act = max(2 * parts['activation_per_sample'] * parts['samples_with_grad'],
              2 * parts['largest_output'] * parts['samples_without'])
    return PER_WEIGHT * parts['nets'] * parts['weights'] + act + parts['data_bytes']


def machine_memory() -> int:
    "This machine's memory in bytes (MemTotal)."
    with open('/proc/meminfo') as f:
        return int(f.read().split('MemTotal:')[1].split()[0]) * 1024


def estimate(name: str, measured: pd.DataFrame, cores: int = 2, memory: float | None = None) -> list[dict]:
    """One row per preset of study `name`: its largest run's parts, and its worker's and its own estimated peaks,
    anchored on the largest measured preset below it (quick, else smoke); a measured quick preset is also
    estimated from the smoke preset alone (`from_smoke_gb`), the check of the estimate."""
    from fracsgd.studies import get_study
    from fracsgd.experiment.runner import NotEnoughMemory, plan_workers
    study = get_study(name)
    stand = name in ('tiny-imagenet', 'cifar10')                   # as the smoke and quick presets were measured
    mine = measured[measured.study == name].set_index('preset')
    memory = memory or machine_memory()
    parts, rows = {}, []
    for preset in ('smoke', 'quick', 'full'):
        cfg = study.config(preset)
        if stand and preset != 'full':
            cfg = study.with_stand_in(cfg)
        runs = study.runs(cfg)
        row = dict(study=name, preset=preset, stand_in=stand and preset != 'full', runs=len(runs),
                   workers=cores)
        try:
            parts[preset] = max((run_parts(study, r) for r in runs), key=grows)
        except LookupError as e:
            rows.append(dict(row, note=str(e)))
            continue
        anchor = 'quick' if preset != 'smoke' and 'quick' in mine.index else 'smoke'
        worker = lambda a: mine.peak_worker_rss_gb[a] + (grows(parts[preset]) - grows(parts[a])) / GB
        needs = [study.memory(r) for r in runs]
        est = worker(anchor)
        if any(needs):                                             # the study's own: what the runner plans with
            anchor, est = 'declared', max(n for n in needs if n) / GB
        try:
            row['workers'] = plan_workers(needs, cores, memory) or cores     # undeclared: the pool's one per core
        except NotEnoughMemory:
            row.update(workers=0, note=f'refused on {memory / GB:.0f} GB: one worker needs {est:.1f} GB')
        row.update(parts[preset], anchor=anchor, est_worker_gb=round(est, 2),
                   est_total_gb=round(mine.peak_driver_rss_gb['smoke'] + max(row['workers'], 1) * est, 2))
        if preset in mine.index:
            row.update(measured_worker_gb=mine.peak_worker_rss_gb[preset],
                       measured_total_rss_gb=mine.peak_total_rss_gb[preset])
        if preset == 'quick':
            row['from_smoke_gb'] = round(worker('smoke'), 2)
        rows.append({'note': '', **row})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', type=Path)
    args = ap.parse_args(argv)
    os.environ.setdefault('HF_HUB_OFFLINE', '1')
    warnings.simplefilter('ignore')
    from fracsgd.studies import STUDIES
    measured = pd.read_csv(MEASURED)
    table = pd.DataFrame([r for name in STUDIES for r in estimate(name, measured)])
    table = table[[c for c in table if c != 'note'] + ['note']]
    with pd.option_context('display.width', 200, 'display.max_columns', 20):
        print(table.drop(columns=['note']).to_string(index=False))
        print(table[table.note != ''][['study', 'preset', 'note']].to_string(index=False))
    if args.out:
        table.to_csv(args.out, index=False)


if __name__ == '__main__':
    main()
