#!/usr/bin/env bash
# One prepared GPU session (issues 21 and 24), run from the repository root on a machine with one GPU:
#   every study's smoke preset on the GPU, `mnist-seeds --full` timed end to end (phases charged with the GPU
#   synchronised at each boundary), `fracsgd bench llc` and `bench ensemble`, then as many of the other full
#   experiments as the deadline leaves time for. Everything it measures lands in $OUT (default results/gpu-session).
#
#   bash tools/gpu_session.sh [SECONDS]     # SECONDS: the whole session's deadline (default 450)
#   DEVICE=cpu PY=.venv/bin/python WHEELS=0 bash tools/gpu_session.sh 90   # a check of this script on a CPU
#   STEPS=step,seeds SEEDS_LIMIT=330 bash tools/gpu_session.sh 400   # some steps: check, step, seeds, bench, full
#   STEPS=full ABLATION_WORKERS=14 bash tools/gpu_session.sh 560   # the full experiments, mnist-ablations too
#   (timed runs start from empty folders; RESUME_FULL=1 lets the four full experiments resume an earlier call's
#   folders on the same warm machine, and then their times are not end-to-end times; mnist-ablations always resumes)
# On a machine that gets a copy of the tree, name the commit sent: FRACSGD_COMMIT=$(git rev-parse --short HEAD) ...
# (the copy's .git may name another).
#
# Packages the machine lacks travel as wheels in .whl/ and the MNIST files in .data/MNIST/raw (both ignored by git);
# see the benchmarks page for how the last session was run.
set -u
DEADLINE=$(( $(date +%s) + ${1:-450} ))
OUT=${OUT:-results/gpu-session}
mkdir -p "$OUT"
STEPS=,${STEPS:-check,step,seeds,bench,full},
want() { [[ $STEPS == *,$1,* ]]; }
left() { echo $(( DEADLINE - $(date +%s) )); }
limit() { local l; l=$(left); (( l < $1 )) && echo "$l" || echo "$1"; }   # min(step's own limit, time left)
DEVICE=${DEVICE:-cuda}
export PY=${PY:-python3}
if [ "${WHEELS:-1}" = 1 ] && ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD FRACSGD_DATA=${FRACSGD_DATA:-$PWD/.data} PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; echo "${FRACSGD_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}"; nvidia-smi --query-gpu=name,memory.total,driver_version \
  --format=csv,noheader; nproc; $PY -c 'import torch; print(torch.__version__)'; } > "$OUT/machine.txt" 2>&1

# 1. every study's smoke preset on the GPU, three at a time
want check && timeout "$(limit 150)" $PY tools/gpu_check.py --device $DEVICE --presets smoke --no-bench --jobs 3 --timeout 120 \
  --out /tmp/gpu-check > "$OUT/check.log" 2>&1
want check && cp /tmp/gpu-check/gpu_check.json "$OUT/" 2>/dev/null

# 2. the SGLD step against a bare step and the floor (median of 3 interleaved timings, 1,000 steps each)
want step && timeout "$(limit 100)" $PY -c "
import json; from fracsgd.bench.llc import bench_step_overhead
print(json.dumps(bench_step_overhead(quick=False, device='$DEVICE', repeats=3), indent=1))" > "$OUT/step.json"

# 3. mnist-seeds --full, end to end; phases with the GPU synchronised at their boundaries
if want seeds; then
rm -rf /tmp/seeds-full          # a timing, so never a resume of an earlier call's folder on the same machine
t0=$(date +%s.%N)
FRACSGD_SYNC_CLOCK=1 timeout "$(limit ${SEEDS_LIMIT:-200})" $PY -m fracsgd run mnist-seeds --${SEEDS_PRESET:-full} --device $DEVICE --workers 1 \
  --out /tmp/seeds-full > /tmp/seeds.log 2>&1
echo "exit $? after $(python3 -c "import time; print(round(time.time() - $t0, 1))") s" >> /tmp/seeds.log
tr '\r' '\n' < /tmp/seeds.log | grep -v '^\s*$' | awk 'NR % 20 == 0 || /exit|Error|error|written/' > "$OUT/seeds.log"
tail -40 /tmp/seeds.log | tr '\r' '\n' | tail -60 >> "$OUT/seeds.log"
cp /tmp/seeds-full/runs/*/run.json "$OUT/seeds_run.json" 2>/dev/null
cp /tmp/seeds-full/summary.csv "$OUT/seeds_summary.csv" 2>/dev/null
tar czf "$OUT/seeds_full.tgz" -C /tmp --exclude='*.pt' --exclude='trained' seeds-full 2>/dev/null
fi

# 4. the benchmarks, each in one process against its baseline
if want bench; then
  timeout "$(limit 150)" $PY -m fracsgd bench llc --json > "$OUT/bench_llc.json" 2> /tmp/bench_llc.err \
    || tail -5 /tmp/bench_llc.err >> "$OUT/check.log"
  timeout "$(limit 90)" $PY -m fracsgd bench ensemble --json > "$OUT/bench_ensemble.json" 2> /tmp/bench_ens.err \
    || tail -5 /tmp/bench_ens.err >> "$OUT/check.log"
fi

# 5. the other full experiments, at once in separate processes (the GPU is bound by each process's host loop, and
#    the machine has cores to spare): each one timed end to end, the wall time of all of them, and what they wrote
#    (their compact folders, tarred). FULL_LIMIT bounds each; ABLATION_WORKERS > 0 adds mnist-ablations --full on that
#    many workers, stopped at the same deadline (the runner resumes its folder elsewhere).
if want full; then
  FL=$(limit ${FULL_LIMIT:-300})
  [ "${RESUME_FULL:-0}" = 1 ] || rm -rf /tmp/md-full /tmp/md-long /tmp/mp-full /tmp/ma-full   # timed from scratch
  t_all=$(date +%s.%N)
  run_full() {   # study preset folder extra...
    local study=$1 preset=${PRESET_OVERRIDE:-$2} dir=$3; shift 3
    local t0; t0=$(date +%s.%N)
    timeout "$FL" $PY -m fracsgd run $study --preset $preset --device $DEVICE --no-progress --out $dir "$@" > $dir.log 2>&1
    echo "$study --preset $preset exit $? after $(python3 -c "import time; print(round(time.time() - $t0, 1))") s" >> "$OUT/full.log"
  }
  run_full moons-diffusion full /tmp/md-full --workers 1 &
  run_full moons-diffusion long /tmp/md-long --workers 1 &
  run_full moons-posterior full /tmp/mp-full --workers 1 &
  run_full mnist-architectures full /tmp/ma-full --workers ${ARCH_WORKERS:-4} &
  (( ${ABLATION_WORKERS:-0} > 0 )) && run_full mnist-ablations full /tmp/ab-full --workers $ABLATION_WORKERS &
  wait
  echo "all at once: $(python3 -c "import time; print(round(time.time() - $t_all, 1))") s wall" >> "$OUT/full.log"
  for d in md-full md-long mp-full ma-full; do tail -4 /tmp/$d.log >> "$OUT/full.log"; done
  # at most 16 MB a file comes back: the archives travel in parts (cat them together to unpack)
  tar czf - -C /tmp --exclude='*.pt' --exclude='trained' md-full md-long mp-full ma-full \
    $(ls /tmp/*.log | sed 's|/tmp/||') 2>/dev/null | split -b 15M - "$OUT/full_results.tgz.part-"
  [ -d /tmp/ab-full ] && tar czf - -C /tmp ab-full ab-full.log | split -b 15M - "$OUT/ablations.tgz.part-"
fi
# at most 8 files come back from the device tool: the small ones travel in one archive, and are printed too
cd "$OUT" && for f in machine.txt step.json seeds.log full.log; do [ -f $f ] && { echo "== $f"; cat $f; }; done
small=$(ls | grep -v -e '\.tgz' -e '\.part-'); [ -n "$small" ] && tar czf small.tgz $small && rm -f $small
ls -la
