"""Peak memory of one run of a study, in this process: import, load the data, build the models, place them on the
CPU and train, printing the resident set (RSS) and the process's peak (ru_maxrss) after each stage, in GB (2^30 bytes).

    python tools/measure_run_memory.py tiny-imagenet quick --stand-in --run 3     # the quick preset's VGG-16 run

Used for the tiny-imagenet study's declared need (`memory`): one run alone, one thread, nothing else in the process.
"""
import argparse, resource, time


def rss() -> float:
    "This process's resident set now, in GB."
    with open('/proc/self/status') as f:
        return int(f.read().split('VmRSS:')[1].split()[0]) / 2 ** 20


def peak() -> float:
    "This process's peak resident set so far, in GB (Linux reports ru_maxrss in KB)."
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('study')
    ap.add_argument('preset')
    ap.add_argument('--stand-in', action='store_true')
    ap.add_argument('--run', type=int, default=0, help="which of the preset's runs (in the order the study lists them)")
    args = ap.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    from fracsgd.placement import place, placed, placement
    from fracsgd.studies import get_study
    study = get_study(args.study)
    cfg = study.config(args.preset)
    run = study.runs(study.with_stand_in(cfg) if args.stand_in else cfg)[args.run]
    print(f'import  rss {rss():.2f}  peak {peak():.2f}', flush=True)
    data = study.load_data(run)
    print(f'data    rss {rss():.2f}  peak {peak():.2f}', flush=True)
    models = study.build_models(run)
    print(f'models  rss {rss():.2f}  peak {peak():.2f}', flush=True)
    p = placement('cpu')
    with placed(p):
        t0 = time.perf_counter()
        study.train(run, place(data, p), place(models, p))
        print(f'train   rss {rss():.2f}  peak {peak():.2f}  ({time.perf_counter() - t0:.0f} s)', flush=True)


if __name__ == '__main__':
    main()
