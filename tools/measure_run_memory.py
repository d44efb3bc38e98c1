"""Peak memory of one run of a study, in this process: import, load the data, build the models, place them on the
CPU and train, printing the resident set (RSS) and the process's peak (ru_maxrss) after each stage, in GB (2^30 bytes).

    python tools/measure_run_memory.py tiny-imagenet quick --stand-in --run 3     # the quick preset's VGG-16 run
    python tools/measure_run_memory.py tiny-imagenet quick --stand-in --run 1 --set sgd_steps=20 \\
        --watch fracsgd.studies.tiny_imagenet:_llc fracsgd.llc.estimate:_sample_in_chunks

`--set field=value` changes fields of the run (a dataclass) before it starts, e.g. fewer steps. `--watch
module:function` (or `module:Class.method`) wraps that function where it is looked up: each call's own peak
resident set is read from the kernel's high-water mark (VmHWM, reset through /proc/self/clear_refs when the call
starts; nested watched calls are folded into their callers), and printed with its growth over the resident set
before the call, in GB and in bytes per weight of the run's models. `--profile module:function` runs the first call
of that function under torch's profiler (memory on) and prints the operators that allocated most. `--vgg-width W`
narrows a VGG's classifier to W units, for a VGG-shaped net that fits where the real one does not.

`--out CSV` adds the run's row (its weights and peak) to a table, e.g. nbs/bench/memory_runs.csv, from which the
tiny-imagenet study's declared need (`memory`) is fitted: one run alone, one thread, nothing else in the process.
"""
import argparse, dataclasses, datetime, functools, importlib, os, platform, re, resource, time
from pathlib import Path


def rss() -> float:
    "This process's resident set now, in GB."
    with open('/proc/self/status') as f:
        return int(f.read().split('VmRSS:')[1].split()[0]) / 2 ** 20


WATCH = None                                       # the Watch in use, if any


def peak() -> float:
    "This process's peak resident set so far, in GB (Linux reports ru_maxrss in KB; a Watch keeps it across resets)."
    now = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20, hwm())
    if WATCH is not None:
        WATCH.top = max(WATCH.top, now)
        return WATCH.top
    return now


def hwm() -> float:
    "The kernel's high-water mark of this process's resident set since the last reset, in GB."
    with open('/proc/self/status') as f:
        return int(re.search(r'VmHWM:\s+(\d+)', f.read()).group(1)) / 2 ** 20


def reset_hwm():
    "Reset the high-water mark to the resident set now (Linux >= 4.0)."
    with open('/proc/self/clear_refs', 'w') as f:
        f.write('5')


class Watch:
    "Peak resident set of each call of the watched functions, nested calls folded into their callers."
    def __init__(self):
        self.open, self.calls = [], []                 # open: [name, rss before, peak so far] of running calls
        self.top = 0.0                                 # the process's peak so far (clear_refs resets ru_maxrss too)

    def _fold(self):
        now = hwm()
        self.top = max(self.top, now)
        for frame in self.open:
            frame[2] = max(frame[2], now)

    def wrap(self, name, fn):
        @functools.wraps(fn)
        def watched(*args, **kwargs):
            self._fold()
            before = rss()
            self.open.append([name, before, before])
            reset_hwm()
            try:
                return fn(*args, **kwargs)
            finally:
                self._fold()
                _, before, top = self.open.pop()
                self.calls.append(dict(name=name, before=before, peak=top, after=rss()))
                reset_hwm()
        return watched

    def install(self, spec: str):
        "Wrap `module:function` or `module:Class.method` in place."
        module, _, attr = spec.partition(':')
        owner = importlib.import_module(module)
        *path, last = attr.split('.')
        for p in path:
            owner = getattr(owner, p)
        setattr(owner, last, self.wrap(spec.split(':')[1], getattr(owner, last)))

    def report(self, n_weights: int):
        for c in self.calls:
            grow = (c['peak'] - c['before']) * 2 ** 30 / n_weights
            print(f"  {c['name']:<28} rss before {c['before']:.2f}  peak {c['peak']:.2f} (+{grow:.0f} B/weight)  "
                  f"after {c['after']:.2f}", flush=True)


def profile_first(spec: str):
    "Run the first call of `module:function` under torch's profiler and print its largest allocating operators."
    import torch
    module, _, attr = spec.partition(':')
    owner = importlib.import_module(module)
    fn, done = getattr(owner, attr), []
    @functools.wraps(fn)
    def profiled(*args, **kwargs):
        if done:
            return fn(*args, **kwargs)
        done.append(1)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
            out = fn(*args, **kwargs)
        print(prof.key_averages().table(sort_by='self_cpu_memory_usage', row_limit=15), flush=True)
        return out
    setattr(owner, attr, profiled)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('study')
    ap.add_argument('preset')
    ap.add_argument('--stand-in', action='store_true')
    ap.add_argument('--run', type=int, default=0, help="which of the preset's runs (in the order the study lists them)")
    ap.add_argument('--set', nargs='*', default=[], metavar='FIELD=VALUE', help="change fields of the run")
    ap.add_argument('--watch', nargs='*', default=[], metavar='MODULE:FUNCTION')
    ap.add_argument('--profile', metavar='MODULE:FUNCTION')
    ap.add_argument('--out', type=Path, help="add the run's row to this CSV (the row of the same run replaced)")
    ap.add_argument('--vgg-width', type=int, help="a VGG run's two hidden classifier layers get this width instead "
                    "of 4096: a VGG-shaped net small enough to measure, whose bytes per weight carry over")
    args = ap.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    from fracsgd.placement import place, placed, placement
    from fracsgd.studies import get_study
    study = get_study(args.study)
    cfg = study.config(args.preset)
    run = study.runs(study.with_stand_in(cfg) if args.stand_in else cfg)[args.run]
    for item in args.set:
        field, value = item.split('=', 1)
        run = dataclasses.replace(run, **{field: type(getattr(run, field))(value)})
    global WATCH
    watch = WATCH = Watch()
    for spec in args.watch:
        watch.install(spec)
    if args.profile:
        profile_first(args.profile)
    print(f'import  rss {rss():.2f}  peak {peak():.2f}', flush=True)
    data = study.load_data(run)
    print(f'data    rss {rss():.2f}  peak {peak():.2f}', flush=True)
    models = study.build_models(run)
    if args.vgg_width:
        from torch import nn
        c, w = models.net.classifier, args.vgg_width
        c[0], c[3], c[6] = nn.Linear(c[0].in_features, w), nn.Linear(w, w), nn.Linear(w, c[6].out_features)
    n = sum(p.numel() for p in (models.parameters() if hasattr(models, 'parameters')
                                else (p for m in models for p in m.parameters())))
    print(f'models  rss {rss():.2f}  peak {peak():.2f}  ({n / 1e6:.1f} M weights, {n * 4 / 2 ** 30:.2f} GB a copy)',
          flush=True)
    p = placement('cpu')
    with placed(p):
        t0 = time.perf_counter()
        study.train(run, place(data, p), place(models, p))
        seconds = time.perf_counter() - t0
        print(f'train   rss {rss():.2f}  peak {peak():.2f}  ({seconds:.0f} s)', flush=True)
    watch.report(n)
    if args.out:
        save_row(args.out, dict(study=args.study, preset=args.preset, stand_in=args.stand_in, run=args.run,
                                what=getattr(run, 'arch', '') or getattr(run, 'name', ''), changes=' '.join(args.set),
                                vgg_width=args.vgg_width or '', weights=n, peak_gb=round(peak(), 3),
                                train_s=round(seconds, 1), date=datetime.date.today().isoformat(),
                                machine=f'{platform.machine()}, {os.cpu_count()} cores'))


def save_row(out: Path, row: dict):
    "Add `row` to the CSV `out`, replacing the row of the same study, preset, run, changes and width; written whole."
    import pandas as pd
    key = ['study', 'preset', 'stand_in', 'run', 'changes', 'vgg_width']
    table = pd.read_csv(out, keep_default_na=False) if out.exists() else pd.DataFrame(columns=list(row))
    same = (table[key].astype(str) == pd.Series({k: str(row[k]) for k in key})).all(axis=1)
    table = pd.concat([table[~same], pd.DataFrame([row])], ignore_index=True).sort_values(['study', 'weights'])
    tmp = out.with_name(f'.{out.name}.tmp')
    table.to_csv(tmp, index=False)
    tmp.replace(out)


if __name__ == '__main__':
    main()
