#!/usr/bin/env bash
# The swap study on held-out data seeds, side by side on one GPU machine: for each seed a copy of the project
# runs the user's commands, `xurs params experiment=controlled_swap data.seed=S model.source=GGUF` and
# `dvc repro swap`, then `xurs swap-sweep --project ...` pools them. Usage:
#   bench/gpu/swap_seeds.sh OUT GGUF SEED... [-- extra xurs params overrides]
# Needs `xurs` and `dvc` importable by `python` (a venv, or PYTHONPATH with the project's wheels).
set -uo pipefail
out=$1 gguf=$2; shift 2
seeds=() extra=()
while (($#)); do [[ $1 == -- ]] && { shift; extra=("$@"); break; }; seeds+=("$1"); shift; done
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
xurs() { python -c 'import sys; from xurs_pipeline.cli import main; sys.exit(main(sys.argv[1:]))' "$@"; }
run_seed() {
  local seed=$1 dir=$2
  rm -rf "$dir" && mkdir -p "$dir"
  (cd "$root" && tar --exclude=./.venv --exclude=./.whl --exclude='./.gpu*' --exclude=./data/backbone -cf - .) | tar -xf - -C "$dir"
  cd "$dir" || return 1
  if [[ ! -d .git ]]; then git init -q && git add -A && git -c user.name=u -c user.email=u@x commit -qm seed; fi
  xurs params experiment=controlled_swap "data.seed=$seed" "model.source=$gguf" "${extra[@]}" &&
    python -m dvc repro swap
}
start=$(date +%s)
for seed in "${seeds[@]}"; do
  (run_seed "$seed" "$out/seed$seed" >"$out/seed$seed.log" 2>&1; echo "seed $seed exit $? after $(( $(date +%s) - start )) s") &
done
wait
projects=(); for seed in "${seeds[@]}"; do projects+=(--project "$out/seed$seed"); done
xurs swap-sweep "${projects[@]}" --out "$out/sweep" --overwrite
echo "all seeds: $(( $(date +%s) - start )) s"
