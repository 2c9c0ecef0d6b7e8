#!/usr/bin/env bash
# The device half of scripts/variants.sh: unpacks the kit, generates SSB at SF (20) with its
# compressed columns, then runs `ssb run --compressed --repeat 10` for each variant in turn,
# round after round, until DEADLINE (400) seconds have passed since the start. Reports, one
# per run (NAME-ROUND.txt and .json), go to $OUT/res.
#   DEADLINE=400 bash target/variants/kit/run.sh [NAME ...]     (all variants when none)
set -u
t0=$(date +%s)
kit=$(cd "$(dirname "$0")" && pwd)
res=${OUT:-$kit/out}/res
mkdir -p "$res"
for f in "$kit"/*.xz; do [ -e "${f%.xz}" ] || xz -dk "$f"; done
chmod +x "$kit/tessera"
[ $# -gt 0 ] || set -- $(cd "$kit" && ls *.cubin | sed 's/\.cubin$//')
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$res/device.txt"
data=${DATA:-/tmp/variants/ssb${SF:-20}}
if [ ! -e "$data/meta.json" ]; then
  "$kit/tessera" ssb gen --sf "${SF:-20}" --out "$data" --compressed --force > "$res/gen.txt" 2>&1
  echo "gen rc=$? after $(( $(date +%s) - t0 )) s"
fi
# A variant whose run fails leaves the rotation (its report says why).
variants=("$@")
round=0
while [ ${#variants[@]} -gt 0 ]; do
  round=$((round + 1))
  left=()
  for v in "${variants[@]}"; do
    el=$(( $(date +%s) - t0 ))
    [ "$el" -lt "${DEADLINE:-400}" ] || break 2
    TESSERA_DEV_MODULE=$kit/$v.cubin "$kit/tessera" ssb run --data "$data" --device gpu \
      --compressed --repeat 10 --no-results --json "$res/$v-$round.json" > "$res/$v-$round.txt" 2>&1
    rc=$?
    echo "$v-$round rc=$rc $(grep -h 'geometric mean:.*ratio' "$res/$v-$round.txt") at ${el} s"
    if [ $rc -eq 0 ]; then left+=("$v"); else tail -3 "$res/$v-$round.txt"; fi
  done
  variants=("${left[@]}")
done
