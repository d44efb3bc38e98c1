"""Issue 25 item 5 on the MNIST architectures nets: is the final point near a minimum, and does the LLC fall as
the localization ball shrinks beyond the estimator's own pull (app. A.1)? Reads the trained weights that
`fracsgd run mnist-architectures --full --out FOLDER` keeps under FOLDER/trained, writes
nbs/criticality/mnist_radius.csv (one row per net and localization) and mnist_radius.json (provenance).

    FRACSGD_DATA=/path/to/data python tools/radius_mnist.py FOLDER [max_nets]
"""
import json, math, os, platform, sys, time, warnings
from pathlib import Path
import pandas as pd
import torch
import fracsgd
from fracsgd.core import atomic_path, read_table, write_table
from fracsgd.llc.radius import radius_test
from fracsgd.llc.estimate import estimate_llc, top_hessian_eigenvalue
from fracsgd.studies.mnist_architectures import STUDY, architecture_name
from fracsgd.studies.mnist_runs import LLC_SETTINGS
from fracsgd.experiment.sweep import run_key

folder, max_nets = Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 99
reading = sys.argv[3] if len(sys.argv) > 3 else 'paper-devinterp-nbeta'   # the n_beta of the sweep (LLC_SETTINGS)
localizations = tuple(float(g) for g in sys.argv[4].split(',')) if len(sys.argv) > 4 else (100, 300, 1000)
previous = read_table(out_csv) if (out_csv := Path(__file__).resolve().parent.parent / 'nbs' / 'criticality' / 'mnist_radius.csv').exists() else None
out = Path(__file__).resolve().parent.parent / 'nbs' / 'criticality'
torch.manual_seed(0)
rows, t0, used = [], time.time(), []
for run in STUDY.runs(STUDY.config('full')):
    saved = folder / 'trained' / f'{run_key(run)}.pt'
    if not saved.exists() or len(used) >= max_nets:
        continue
    data = STUDY.load_data(run)
    model = STUDY.build_models(run)[0]
    model.load_state_dict(torch.load(saved, weights_only=False)['models'][0])
    model.eval()
    study = LLC_SETTINGS[run.llc]                           # the setting of the LLC along the run
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        at_study = estimate_llc(model, data.train, 'classification', study).diagnostics.iloc[0]
    h_max = top_hessian_eigenvalue(model, data.train, 'classification')
    n_beta = LLC_SETTINGS[reading].n_beta or len(data.train[0]) / math.log(len(data.train[0]))
    eps = min(3e-5, 0.1 / (n_beta * h_max))                # stable in the stiffest direction
    sweep_settings = study.replace(step_size=eps, n_chains=4, n_draws=1000, n_burnin=2000 if n_beta > 100 else 1000,
                                   n_beta=n_beta, seed=7)
    t = time.time()
    sweep = radius_test(model, data.train, 'classification', sweep_settings, localizations=localizations)
    name = architecture_name(run.hidden)
    used.append(name)
    for r in sweep.itertuples():
        rows.append(dict(architecture=name, params=sum(p.numel() for p in model.parameters()),
                         study_llc=at_study.llc, study_near_minimum=at_study.near_minimum,
                         study_gradient_pull=at_study.gradient_pull, study_pull_bound=at_study.gradient_pull_bound,
                         sweep_nbeta_reading=reading, n_beta=n_beta, top_curvature=h_max, step_size=eps, localization=r.localization,
                         llc=r.llc, llc_se=r.llc_se, near_minimum=r.near_minimum, gradient_pull=r.gradient_pull,
                         quadratic=r.quadratic,
                         excess=r.excess, excess_fall=sweep.attrs['excess_fall'],
                         excess_fall_noise=sweep.attrs['excess_fall_noise'], reading=sweep.attrs['reading'],
                         seconds=time.time() - t))
    print(name, sweep.attrs['reading'], f"{time.time() - t:.0f} s", flush=True)
    print(sweep.to_string(), flush=True)
new = pd.DataFrame(rows)
if previous is not None and 'sweep_nbeta_reading' in previous:      # keep the other readings' rows
    new = pd.concat([previous[previous.sweep_nbeta_reading != reading], new], ignore_index=True)
write_table(new, out / 'mnist_radius.csv')
with atomic_path(out / 'mnist_radius.json') as tmp:
      tmp.write_text(json.dumps(dict(
        what='criticality test at the study setting and radius_test (localization sweep beside the quadratic '
             'reference from stochastic Lanczos quadrature, 40 steps x 4 probes) at the final weights of the '
             'mnist-architectures FULL nets (5,000 SGD steps)', nets=used, sweep_settings=dict(
            n_chains=4, n_draws=1000, n_burnin='1000 (2000 where n_beta > 100)',
            step_size='min(3e-5, 0.1/(n_beta*top_curvature))',
            n_beta="per row: 'paper-devinterp-nbeta' 256/ln 256 with gamma 100, 300, 1000; 'paper' n/ln n (n = 5000) with gamma 300, 1000, 3000"),
        data=str(data.source) if hasattr(data, 'source') else '', seconds=round(time.time() - t0, 1),
        machine=dict(cpu=platform.machine(), cores=os.cpu_count(), torch=torch.__version__, device='cpu',
                     note='shared 2-core VM, a full study running beside it'),
        date=time.strftime('%Y-%m-%d'), fracsgd=fracsgd.__version__), indent=1))
