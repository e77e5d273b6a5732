#!/usr/bin/env bash
# One device call that says where the GPU time of the whole pipeline goes (issue 32): the
# engine's stage subsets on the device-resident source (livedrp-bench pipeline), the engine with
# every stage on a pool holding hits, each kernel's time under Nsight Compute (host-fed, one plain
# stream: the device-resident consumers spin on doorbells, which ncu's serialisation would hang),
# and peakfinder8's kernels timed alone. Pack as measure.sh says; carry .gpu/carry.tar.xz.
# A baseline build in the same call: carry .gpu_base too, holding livedrp-bench.NAME.xz and
# livedrp-engine.NAME.xz (xz of another build's binaries); every bench then runs both, new first.
# TESTS="test_a test_b" runs those packed GPU tests first; PARTS (default: pipeline engine ncu
# peaks; detail on request: Nsight Compute's full set on DETAIL_KERNELS); PF8_BANDS and
# PF8_BAND_VALUES compare peakfinder8's statistics band settings (below).
set -u
source "$(dirname "$0")/unpack.sh"
export LIVEDRP_REQUIRE_GPU=1
PARTS=${PARTS:-"pipeline engine ncu peaks"}  # also: detail
has() { [[ " $PARTS " == *" $1 "* ]]; }
builds="new"
for f in .gpu_base/livedrp-bench.*.xz; do
  [ -e "$f" ] || continue
  name=${f#.gpu_base/livedrp-bench.}; name=${name%.xz}
  mkdir -p "/tmp/base_$name"
  xz -dc "$f" > "/tmp/base_$name/livedrp-bench"; xz -dc ".gpu_base/livedrp-engine.$name.xz" > "/tmp/base_$name/livedrp-engine"
  chmod +x /tmp/base_$name/*; builds="$builds $name"
done
dir_of() { if [ "$1" = new ]; then echo "$B"; else echo "/tmp/base_$1"; fi; }
for t in ${TESTS:-}; do
  "$B/$t" > "$L/01_$t.log" 2>&1; echo "== $t rc=$?"; grep -E "^Totals|^FAIL" "$L/01_$t.log"
done
if has pipeline; then
  for b in $builds; do
    timeout "${PIPELINE_S:-150}" "$(dir_of $b)/livedrp-bench" pipeline --backends cuda --sources device \
      --stages ${PIPELINE_STAGES:-calibrate,calibrate+peak,calibrate+compress,calibrate+integrate,all} --streams 8 \
      --launch graph --events 20000 --markdown "$L/02_pipeline_$b.md" > "$L/02_pipeline_$b.log" 2>&1
    echo "== pipeline $b rc=$?"; cat "$L/02_pipeline_$b.md"; finish
  done
fi
if has engine; then
  for b in $builds; do
    timeout -s INT 25 "$(dir_of $b)/livedrp-engine" run --config "$here/engine_device_x8.json" \
      --summary-json "$L/03_engine_$b.json" > "$L/03_engine_$b.log" 2>&1
    echo "== engine $b rc=$?"; grep -E "^events in|^rate|^latency|^stage|^peak" "$L/03_engine_$b.log"; finish
  done
fi
if has ncu; then
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  timeout "${NCU_S:-150}" "$NCU" --clock-control none --metrics gpu__time_duration.sum --launch-skip 1500 \
    --launch-count 600 --csv --print-units base "$B/livedrp-engine" run \
    --config "$here/engine_host_x1_profile.json" > "$L/04_ncu.csv" 2> "$L/04_ncu.err"
  echo "== ncu rc=$?"; tail -3 "$L/04_ncu.err"
  python3 - "$L/04_ncu.csv" <<'PY' | tee "$L/04_ncu_summary.txt"
import csv, sys, collections
t = collections.defaultdict(list)
for row in csv.DictReader(l for l in open(sys.argv[1]) if l.startswith('"')):
    if row.get("Metric Name") == "gpu__time_duration.sum":
        t[row["Kernel Name"][:70]].append(float(row["Metric Value"].replace(",", "")) / 1e3)
for name, v in sorted(t.items(), key=lambda kv: -sum(kv[1])):
    print(f"{sum(v)/len(v):9.2f} us avg  {len(v):4d} launches  {name}")
PY
  finish
fi
if has detail; then
  # Nsight Compute's full set, with source counters, on one launch of each kernel of DETAIL_KERNELS
  # (regular expressions), host-fed as above: where the stall reasons and memory traffic are.
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  for k in ${DETAIL_KERNELS:-radial_statistics compress_stream calibrate}; do
    timeout "${DETAIL_S:-90}" "$NCU" --kernel-name "regex:$k" --launch-skip 40 --launch-count 1 \
      --set full --import-source yes -f -o "$L/06_detail_$k" "$B/livedrp-engine" run \
      --config "$here/engine_host_x1_profile.json" > "$L/06_detail_$k.err" 2>&1
    echo "== detail $k rc=$?"
    "$NCU" --import "$L/06_detail_$k.ncu-rep" --page details --print-units base \
      > "$L/06_detail_$k.txt" 2>&1
    "$NCU" --import "$L/06_detail_$k.ncu-rep" --page source --csv --print-source sass \
      > "$L/06_detail_${k}_sass.csv" 2>&1
    grep -E "Duration|Memory Throughput|DRAM Throughput|Compute \(SM\)|Achieved Occupancy|Registers Per|Theoretical Occ|Block Limit|Warp Cycles Per Issued|Stall" "$L/06_detail_$k.txt" | head -30
    finish
  done
fi
if has peaks; then
  for b in $builds; do
    timeout 100 "$(dir_of $b)/livedrp-bench" peaks --events 2000 --cpu-events 1 --streams 1,8 \
      --markdown "$L/05_peaks_$b.md" > "$L/05_peaks_$b.log" 2>&1
    echo "== peaks $b rc=$?"; grep -iE "kernel|statistics|bitmap|search|gather|frames/s" "$L/05_peaks_$b.log" | head -12
  done
  # PF8_BANDS="1 2 8": the new build again with each statistics band width
  # (LIVEDRP_PF8_BINS_PER_BLOCK; the default is 4).
  for w in ${PF8_BANDS:-}; do
    LIVEDRP_PF8_BINS_PER_BLOCK=$w timeout 100 "$B/livedrp-bench" peaks --events 2000 --cpu-events 1 \
      --streams 1,8 --markdown "$L/05_peaks_new_bands$w.md" > "$L/05_peaks_new_bands$w.log" 2>&1
    echo "== peaks new, $w bins a block rc=$?"
    grep -iE "kernel|statistics|frames/s" "$L/05_peaks_new_bands$w.log" | head -6
  done
fi
# PF8_BAND_VALUES="8192 4096": the new build again with statistics bands of at most that many
# values (LIVEDRP_PF8_BAND_VALUES; the default is 16384), the peaks bench and the engine.
for v in ${PF8_BAND_VALUES:-}; do
  LIVEDRP_PF8_BAND_VALUES=$v timeout 100 "$B/livedrp-bench" peaks --events 2000 --cpu-events 1 \
    --streams 1,8 --markdown "$L/05_peaks_new_values$v.md" > "$L/05_peaks_new_values$v.log" 2>&1
  echo "== peaks new, bands of at most $v values rc=$?"
  grep -iE "kernel|statistics|frames/s" "$L/05_peaks_new_values$v.log" | head -6
  LIVEDRP_PF8_BAND_VALUES=$v timeout -s INT 25 "$B/livedrp-engine" run \
    --config "$here/engine_device_x8.json" --summary-json "$L/03_engine_values$v.json" \
    > "$L/03_engine_values$v.log" 2>&1
  echo "== engine new, bands of at most $v values rc=$?"
  grep -E "^events in|^rate|^stage peak" "$L/03_engine_values$v.log"; finish
done
echo done
