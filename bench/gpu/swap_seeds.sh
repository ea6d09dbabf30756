#!/usr/bin/env bash
# The swap study on held-out data seeds, side by side on one GPU machine, each seed a DVC experiment of this
# project: `dvc exp run swap --queue` per seed, `dvc queue start -j JOBS` runs them in parallel, then
# `xurs swap-sweep --label data.seed` pools the queued experiments (docs/sweeps.md). Usage:
#   bench/gpu/swap_seeds.sh OUT JOBS GGUF SEED... [-- extra -S overrides, e.g. attribution.device=cuda]
# Run it in a git checkout of the project with `xurs` and `dvc` on PATH; every step is bounded by its own
# `timeout` (STEP_S seconds, default 3000) and logged under OUT, so a run cut short still says where it was.
set -euo pipefail
out=$1 jobs=$2 gguf=$3; shift 3
seeds=() extra=()
while (($#)); do [[ $1 == -- ]] && { shift; extra=("$@"); break; }; seeds+=("$1"); shift; done
step_s=${STEP_S:-3000}
mkdir -p "$out"
log() { echo "$(date -u +%T) $*" | tee -a "$out/steps.log"; }
set_params=(-S experiment=controlled_swap -S "model.source=$gguf")
for key in "${extra[@]}"; do set_params+=(-S "$key"); done
start=$(date +%s)
for seed in "${seeds[@]}"; do
  log "queue seed $seed"
  timeout 120 dvc exp run swap --queue -n "swap-seed$seed" "${set_params[@]}" -S "data.seed=$seed"
done
log "dvc queue start -j $jobs"
timeout 120 dvc queue start -j "$jobs"
deadline=$((start + step_s))
while dvc queue status | grep -qE 'Queued|Running'; do
  (($(date +%s) < deadline)) || { log "queue still running after $step_s s"; dvc queue status | tee -a "$out/steps.log"; exit 124; }
  sleep 10
done
dvc queue status | tee -a "$out/steps.log"
log "all seeds: $(($(date +%s) - start)) s"
timeout 600 xurs swap-sweep --label data.seed --out "$out/sweep" --overwrite
