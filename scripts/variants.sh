#!/usr/bin/env bash
# Kernel variants timed against each other in one device call (development only; README,
# "Kernel variants"). A variant is a patch of the kernel crate that keeps every kernel's
# parameters, so one host built with the `dev-module` feature runs them all, each loading its
# cubin from TESSERA_DEV_MODULE, and every `ssb run` compares it with the plain engine of the
# same process.
#
# Here (no GPU needed; about 25 minutes on 2 cores from a cold target/, 17 warm):
#   scripts/variants.sh kit base pair=docs/variants/nsf2-pair.patch [NAME=PATCH ...]
#     The first NAME, without a patch, is the working tree as it is; each NAME=PATCH is HEAD
#     with PATCH applied. Writes target/variants/kit: the host, one cubin per variant, the SSB
#     GPU tests (xz), run.sh, check.sh; prints each variant's SSB probes whose registers,
#     spills or stack frame differ from the first one's.
# There (the device, carry ["target/variants/kit"]):
#   DEADLINE=400 bash target/variants/kit/run.sh [NAME ...]
#     Generates SF 20 (SF=...) with its compressed columns, then alternates `ssb run
#     --compressed --repeat 10` over the variants until DEADLINE seconds have passed; the
#     reports land in $OUT/res.
#   bash target/variants/kit/check.sh NAME
#     The winner's SSB GPU tests and compute-sanitizer under its cubin, before it lands.
#   All in one call, the report printed there (only a few files under $OUT come back):
#     k=target/variants/kit; DEADLINE=360 bash $k/run.sh | tail -30
#     python3 scripts/variants_report.py $OUT/res
#     w=$(python3 scripts/variants_report.py --pick base $OUT/res); [ -z "$w" ] || bash $k/check.sh $w
# Here again:
#   python3 scripts/variants_report.py DIR/res
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
kit=target/variants/kit
work=target/variants

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }

# name, registers, spill bytes, stack frame bytes
ssb_table() { grep -E '^ *ssb_flight' "$1" | awk '{print $1, $2, $3, $4}' | sort; }

case ${1:-} in
kit)
  shift
  [ $# -ge 1 ] || usage
  [[ $1 != *=* ]] || { echo "the first variant is the working tree: a name without a patch" >&2; exit 2; }
  rm -rf "$kit" && mkdir -p "$kit" "$work/logs"
  base=""
  for spec in "$@"; do
    name=${spec%%=*}
    [[ $name =~ ^[A-Za-z0-9_.-]+$ ]] || { echo "variant name '$name': use letters, digits, . _ -" >&2; exit 2; }
    log=$work/logs/$name.log
    if [[ $spec != *=* ]]; then
      [ -z "$base" ] || { echo "only one variant may be the working tree ('$base' is)" >&2; exit 2; }
      base=$name
      echo "== $name: the working tree"
      cargo xtask build-ptx --arch sm_90 --check --cubin "$kit/$name.cubin" > "$log" 2>&1 \
        || { tail -20 "$log"; exit 1; }
    else
      patch=$(realpath "${spec#*=}")
      src=$work/src/$name
      echo "== $name: $patch"
      git worktree remove --force "$src" 2>/dev/null || rm -rf "$src"
      git worktree prune
      git worktree add --quiet --detach "$src" HEAD
      git -C "$src" apply "$patch"
      # The checkout's fetched ptxas (the first variant's build filled the cache) serves every
      # worktree: the xtask looks under the workspace's own target/.
      mkdir -p "$src/target" && ln -sfn "$root/target/cuda-tools" "$src/target/cuda-tools"
      (cd "$src" && CARGO_TARGET_DIR=$root/$work/target \
        cargo xtask build-ptx --arch sm_90 --check --cubin "$root/$kit/$name.cubin") > "$log" 2>&1 \
        || { tail -20 "$log"; exit 1; }
      git worktree remove --force "$src"
    fi
    grep -E 'spill registers|stack frame|calls:' "$log" | sed 's/^/   /'
  done
  first=${1%%=*}
  for spec in "${@:2}"; do
    name=${spec%%=*}
    echo "== $name against $first: ssb kernels whose registers, spills or stack frame differ"
    { diff <(ssb_table "$work/logs/$first.log") <(ssb_table "$work/logs/$name.log") || true; } |
      grep '^[<>]' || echo "   none"
  done
  echo "== the dev-module host"
  # Absolute: the host's build script builds the PTX there too, from another directory.
  TESSERA_CUBIN=0 CARGO_TARGET_DIR=$root/$work/host cargo build --release --features dev-module \
    --bin tessera > "$work/logs/host.log" 2>&1 || { tail -20 "$work/logs/host.log"; exit 1; }
  cp "$work/host/release/tessera" "$kit/tessera"
  echo "== the dev-module ssb_gpu tests"
  exe=$(TESSERA_CUBIN=0 CARGO_TARGET_DIR=$root/$work/host cargo test --release --features dev-module \
    --test ssb_gpu --no-run --message-format=json 2> "$work/logs/ssb_gpu.log" |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "ssb_gpu":
        print(m["executable"])') || { tail -20 "$work/logs/ssb_gpu.log"; exit 1; }
  cp "$exe" "$kit/ssb_gpu"
  strip --strip-debug "$kit/tessera" "$kit/ssb_gpu"
  # The binary and the cubins are mostly embedded PTX and kernel code: a large window packs them.
  xz -T2 --lzma2=preset=1,dict=256MiB "$kit"/*
  cp scripts/variants-run.sh "$kit/run.sh"
  cp scripts/variants-check.sh "$kit/check.sh"
  echo "kit: $(du -sh "$kit" | cut -f1) in $kit (variants: $(for s in "$@"; do printf '%s ' "${s%%=*}"; done))"
  ;;
*) usage ;;
esac
