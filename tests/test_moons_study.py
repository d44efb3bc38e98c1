"""The moons study on the sweep runner: a rerun trains only what is missing, and a changed configuration is never
served from old results."""
import contextlib, io, shutil
from dataclasses import replace

import fracsgd.studies.moons_diffusion as study
import pytest

from fracsgd.experiment.store import ConfigChanged, load_study
from fracsgd.experiment.runner import run_study
from fracsgd.experiment.sweep import run_key

TINY = replace(study.QUICK, n_models=5, nets_per_run=2, epochs=2)


def _sweep(cfg, folder):
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        run_study(study.STUDY, config=cfg, folder=folder, workers=1, progress=False, report=False)
    return printed.getvalue()


def test_rerun_trains_only_missing_runs(tmp_path):
    assert '3 done, 0 failed, 0 skipped' in _sweep(TINY, tmp_path)
    first = load_study(tmp_path).trajectories
    assert sorted(first.run.unique()) == [0, 1, 2, 3, 4]
    lost = run_key(study.STUDY.runs(TINY)[1])                     # as if this run had never finished
    shutil.rmtree(tmp_path / 'runs' / lost)
    assert '1 done, 0 failed, 2 skipped' in _sweep(TINY, tmp_path)
    again = load_study(tmp_path).trajectories
    # the same seeds give the same trajectories: nothing was lost or changed
    assert again.sort_values(['run', 'step']).reset_index(drop=True).equals(
        first.sort_values(['run', 'step']).reset_index(drop=True))
    assert '0 done, 0 failed, 3 skipped' in _sweep(TINY, tmp_path)


def test_a_changed_configuration_is_not_served_from_old_runs(tmp_path):
    _sweep(TINY, tmp_path)
    longer = replace(TINY, epochs=3)
    with pytest.warns(ConfigChanged, match=r'epochs: 2 → 3'):           # the folder says it starts a new plan
        assert '3 done, 0 failed, 0 skipped' in _sweep(longer, tmp_path)
    assert load_study(tmp_path).trajectories.step.max() == 3 * 4


def test_analysis_reports_one_late_exponent_and_flags_a_short_window():
    # Synthetic nets that bend smoothly like the moons curves: R = t (1 + t/t0)^(s−1), s = 0.3, t0 = 144, whose
    # local slope falls through ½ at t0/(1 − 2s) = 360 (closed form), recorded for 800 steps (0.35 decades after
    # t_c), 30 nets with their own scale (5%) and 1% noise per step (seed 0). Expected: a bend, t_c within 3% of
    # 360, ONE late exponent by the log-log slope with its interval holding that of the exact curve on the same
    # window, the eq.-32 fit only as a labelled check, and the short window flagged in the table.
    import numpy as np, pandas as pd
    from fracsgd.diffusion.spectral import fit_power_law
    from fracsgd.diffusion.crossover import LATE_ESTIMATORS
    rng = np.random.default_rng(0)
    t = np.arange(0, 801.)
    exact = t * (1 + t / 144) ** -0.7
    R = exact * np.exp(0.05 * rng.standard_normal((30, 1)) + 0.01 * rng.standard_normal((30, len(t))))
    table = pd.DataFrame(dict(run=np.repeat(np.arange(30), len(t)), step=np.tile(t, 30), R=R.ravel()))
    res = study.analyse(table, n_boot=50)
    c, late = res['crossover'], res['late']
    assert c.model == 'bend' and abs(c.t_c / 360 - 1) < 0.03, c
    assert late.estimator == LATE_ESTIMATORS['loglog'] and late.short_late_window, late
    truth = fit_power_law(t[1:], exact[1:], t_min=c.t_c, n_boot=0).slope
    assert late.ci_low < truth < late.ci_high, (truth, late)
    summary = res['summary'].set_index('quantity')
    late_rows = [q for q in summary.index if 'late exponent' in q]
    assert late_rows == ['late exponent 1/d_walk', 'check only: late exponent by the other estimator'], late_rows
    assert 'SHORT' in summary.note['late exponent 1/d_walk']
    assert summary.value['check only: late exponent by the other estimator'] > late.ci_high   # eq. 32 biased up


def test_committed_results_keep_their_run_keys():
    # Every compact result of the study was made by one preset; that preset must still give the same runs (the
    # long preset's `record_every` is a field added later: at its default it stays out of quick's and full's keys).
    import json
    from pathlib import Path
    from fracsgd.experiment.sweep import unique_runs
    compact = Path(__file__).parents[1] / 'nbs' / 'ledger' / 'compact' / 'moons-diffusion'
    made = {}
    for prov in sorted(compact.glob('*/provenance.json')):
        p = json.loads(prov.read_text())
        made[p['preset']] = prov.parent.name
        keys = sorted(unique_runs(study.STUDY.runs(study.STUDY.config(p['preset']))))
        assert keys == p['run_keys'], (prov, keys)
    assert {'quick', 'full', 'long'} <= set(made), made
    assert made['long'].startswith('custom-'), made


def test_long_preset_is_the_full_protocol_trained_longer():
    # Only the length and two analysis settings differ from full; every 10th step plus a log grid is recorded.
    import dataclasses
    differs = {f.name for f in dataclasses.fields(study.FULL) if getattr(study.FULL, f.name) != getattr(study.LONG, f.name)}
    assert differs == {'epochs', 'record_every', 'crossover'}, differs
    assert study.LONG.epochs * 4 == 4000 and study.FULL.crossover == study.QUICK.crossover == 'slope'
    steps = study.record_steps(4000, 10)
    assert {0, 1, 2, 3, 9, 10, 3990, 4000} <= steps and 400 < len(steps) < 500, len(steps)
    assert not {3991, 3999} & steps
    assert study.record_steps(800, 1) == 1                  # quick and full: every step, as before
    assert all(r.record_every == 10 for r in study.STUDY.runs(study.LONG))


def test_auto_crossover_does_not_refer_to_one_half():
    # The same synthetic bend as above (local slope through ½ at 360, break t0 = 144) recorded for 4,000 steps on
    # the long preset's grid: the 'auto' rule places t_c at the fitted break (within 15% of 144), not where the
    # local slope crosses ½; the late window then covers more than a decade and is not flagged; both readings are
    # reported side by side.
    import numpy as np, pandas as pd
    rng = np.random.default_rng(0)
    t = np.array(sorted(study.record_steps(4000, 10)), float)
    exact = t * (1 + t / 144) ** -0.7
    R = exact * np.exp(0.05 * rng.standard_normal((30, 1)) + 0.01 * rng.standard_normal((30, len(t))))
    table = pd.DataFrame(dict(run=np.repeat(np.arange(30), len(t)), step=np.tile(t, 30), R=R.ravel()))
    res = study.analyse(table, n_boot=20, crossover='auto')
    c, late = res['crossover'], res['late']
    assert c.model == 'bend' and abs(c.t_c / 144 - 1) < 0.15, c
    assert late.late_decades > 1 and not late.short_late_window, late
    assert 'does not refer to 1/2' in res['summary'].set_index('quantity').note['crossover time t_c (steps)']
    both = study.crossover_readings(res['t'], res['R'], n_boot=10).set_index('method')
    assert abs(both.t_c['slope'] / 360 - 1) < 0.05 and both.t_c['auto'] == c.t_c, both
    assert both.late['slope'] < both.late['auto'], both      # the later start sees less of the bend


def test_controls_preset_pairs_sgd_with_full_batch_gd_from_the_same_nets():
    import dataclasses
    sgd, gd = study.STUDY.runs(study.CONTROLS)
    assert (sgd.full_batch, gd.full_batch) == (False, True) and sgd.ages == gd.ages == study.CONTROL_AGES
    assert dataclasses.replace(gd, full_batch=False) == sgd                  # same seeds, lr, steps, data
    long_first = study.STUDY.runs(study.LONG)[0]                                    # the long preset's first 50 nets
    assert dataclasses.replace(sgd, ages=()) == long_first
    assert all(not r.full_batch and r.ages == () for p in ('quick', 'full', 'long')
               for r in study.STUDY.runs(study.STUDY.config(p)))


def test_full_batch_run_is_gradient_descent_on_all_the_data():
    # Two nets, 40 steps, in float64: the run's weights must be those of plain gradient descent on the mean
    # cross-entropy over all 512 points, step for step (known answer: w <- w - lr * grad L_n(w)).
    import copy, torch
    import torch.nn.functional as F
    from fracsgd.placement import Placement, place
    run = dataclasses_replace(study.STUDY.runs(dataclasses_replace(study.CONTROLS, n_models=2, nets_per_run=2, epochs=10))[1])
    assert run.full_batch
    p = Placement('cpu', 'float64')
    data = place(study.STUDY.load_data(run), p)
    nets = place(study.STUDY.build_models(run), p)
    ref = copy.deepcopy(nets)
    out = study.STUDY.train(run, data, nets)
    X, y = data
    for net in ref:
        opt = torch.optim.SGD(net.parameters(), lr=run.lr)
        for _ in range(40):
            opt.zero_grad()
            F.cross_entropy(net(X), y).backward()
            opt.step()
    for a, b in zip(nets, ref):
        assert all(torch.allclose(u, v, atol=1e-12) for u, v in zip(a.parameters(), b.parameters()))
    assert set(out['trajectory'].optimizer) == {'gd'} and set(out['increments'].run) == {0, 1}
    assert set(out['increments'].age) == {25} and out['trajectory'].step.max() == 40


def dataclasses_replace(obj, **kw):
    import dataclasses
    return dataclasses.replace(obj, **kw)


def test_analyse_controls_recovers_known_exponents():
    # SGD nets grow as c t^0.45, their GD twins as c t^0.30 (c per pair); SGD's increments are Brownian (no
    # ageing), GD's those of a fractional walk with α = 1/2 (ageing exponent −1/2). Expected: late slopes 0.45 and
    # 0.30, difference 0.15 exactly; ageing exponents near 0 and −1/2; R(T) ratio T^−0.15; eq. 4's prediction
    # 2 s − 1 from the given late slope.
    import numpy as np, pandas as pd
    from fracsgd.diffusion.ageing import IncrementRecorder, brownian_walks, ctrw_walks, record_paths
    T, n = 2000, 300
    t = np.arange(0, T + 1, 10.)
    c = np.linspace(1, 2, n)
    table = pd.concat([pd.DataFrame(dict(run=np.repeat(np.arange(n), len(t)), step=np.tile(t, n),
                                         R=(c[:, None] * t ** s).ravel(), optimizer=opt))
                       for opt, s in (('sgd', 0.45), ('gd', 0.30))], ignore_index=True)
    inc = pd.concat([record_paths(walks, IncrementRecorder(study.CONTROL_AGES, study.CONTROL_LAGS, T))
                     .rename(columns={'member': 'run'}).assign(optimizer=opt)
                     for opt, walks in (('sgd', brownian_walks(n, T, seed=1)), ('gd', ctrw_walks(n, T, 0.5, seed=2)))])
    res = study.analyse_controls(table, inc, t_c=200, late_slope=(0.45, 0.44, 0.46), n_boot=50)
    s = res['summary'].set_index('quantity').value
    assert np.isclose(s['late exponent, SGD, t ≥ t_c (paired with GD)'], 0.45)
    assert np.isclose(s['late exponent, full-batch GD from the same initialisations, t ≥ t_c'], 0.30)
    assert np.isclose(s['late exponent, SGD minus full-batch GD, t ≥ t_c (paired)'], 0.15)
    assert np.isclose(s['R(T) of full-batch GD over R(T) of SGD (mean over nets)'], T ** -0.15)
    assert abs(s['ageing exponent, SGD, τ = 10, ages ≥ t_c']) < 0.05
    assert abs(s['ageing exponent, full-batch GD, τ = 10, ages ≥ t_c'] + 0.5) < 0.1
    assert np.isclose(s['ageing exponent predicted by eq. 4 from the late SGD slope, 2 s − 1'], -0.1)
    assert res['late_ages'] == [200, 400, 800, 1600] and set(res['msd'].optimizer) == {'sgd', 'gd'}


def test_returns_preset_measures_slope_llc_and_returns_apart(tmp_path, monkeypatch):
    """A small returns run: the projected paths give return counts (never more than pairs), the LLC is taken at
    the LLC steps only, and eq. 17's d_s in the summary is 2 λ̄ s of the same run's numbers."""
    import warnings
    monkeypatch.setattr(study, 'LLC_EVERY', 50)                 # the runs carry them as fields
    monkeypatch.setattr(study, 'RETURNS_START', 20)
    cfg = replace(study.RETURNS, n_models=3, nets_per_run=3, epochs=30, n_boot=10)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        res = run_study(study.STUDY, config=cfg, folder=tmp_path, workers=1, progress=False)
    stored = load_study(tmp_path)
    ret = stored.tables['returns']
    assert set(ret.run) == {0, 1, 2} and (ret.hits <= ret.pairs).all() and (ret.hits >= 0).all()
    from fracsgd.diffusion.return_probability import RETURN_EPS
    assert sorted(ret.eps_factor.unique()) == sorted(RETURN_EPS)
    assert ret.query('tau == 1').pairs.iloc[0] == cfg.epochs * 4 - study.RETURNS_START   # recorded steps − 1
    llc_steps = stored.trajectories.dropna(subset=['llc']).step.unique()
    assert sorted(llc_steps) == [50, 100]
    v = res['summary'].set_index('quantity').value
    lam = stored.trajectories.dropna(subset=['llc']).groupby('run').llc.mean().mean()
    assert abs(v['mean LLC along the late run, λ̄ (paper table-3 setting)'] - lam) < 1e-12
    assert abs(v['d_s by eq. 17 from the late slope and λ̄, 2 λ̄ s'] - 2 * lam * v['late exponent 1/d_walk']) < 1e-12
