#!/usr/bin/env bash
# The device half of scripts/variants.sh that checks a variant before it lands: the SSB GPU
# tests (`ssb_gpu`, built with `dev-module`) under the variant's cubin, then compute-sanitizer
# (memcheck, racecheck, synccheck) on its compressed probes. Reports go to $OUT.
#   bash target/variants/kit/check.sh NAME ...
set -u
kit=$(cd "$(dirname "$0")" && pwd); out=${OUT:-$kit/out}; mkdir -p "$out"
for f in "$kit"/*.xz; do [ -e "${f%.xz}" ] || xz -dk "$f"; done
chmod +x "$kit/ssb_gpu"
for v in "$@"; do
  TESSERA_DEV_MODULE=$kit/$v.cubin TESSERA_REQUIRE_GPU=1 timeout ${SUITE_S:-200} "$kit/ssb_gpu" --test-threads=1 --nocapture > "$out/ssbgpu-$v.txt" 2>&1
  echo "$v ssb_gpu rc=$? $(grep -h 'test result' "$out/ssbgpu-$v.txt") $(grep -c SKIPPED "$out/ssbgpu-$v.txt") skipped"
  for tool in memcheck racecheck synccheck; do
    TESSERA_DEV_MODULE=$kit/$v.cubin TESSERA_REQUIRE_GPU=1 TESSERA_TEST_MAX_N=30001 timeout 150 \
      compute-sanitizer --tool $tool --kernel-name kns=ssb_flight "$kit/ssb_gpu" \
      compressed_probes_specialized_for_kinds --nocapture > "$out/san-$v-$tool.txt" 2>&1
    echo "$v $tool rc=$? $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$out/san-$v-$tool.txt" | tr '\n' ' ')"
  done
done
