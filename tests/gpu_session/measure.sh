#!/usr/bin/env bash
# One device call that checks and measures the whole pipeline on the GPU machine, most important
# first, its logs packed into $OUT/logs.tgz after every part (a call cut short keeps what it did).
# Pack first, here:
#   rm -rf .gpu && ../shared/gpu/pack build .gpu build/engine/livedrp-bench build/engine/livedrp-engine \
#       build/tests/livedrp-sls-publisher build/tests/livedrp-dectris-publisher
# then run `bash tests/gpu_session/measure.sh` through the device tool with carry [".gpu/carry.tar.xz"].
# Parts (PARTS, default all but the sanitizer parts): suite pipeline streams engine threads
# sanitize sanitize_engine.
#   suite     the packed GPU suites (label gpu), LIVEDRP_REQUIRE_GPU=1
#   pipeline  livedrp-bench pipeline, every stage, host-fed and device-resident, 8 and 16 lanes
#   streams   sls Jungfrau 4M over 16 ports at 1 kHz; Dectris 2068x2162 uint32 bslz4 flat out
#   engine    livedrp-engine run --config, device-resident, every stage: flat out and paced at 30 kHz
#   lanes     livedrp-bench pipeline, device-resident, every stage, 1, 2, 4 and 8 lanes, graph and
#             device_graph launches (does the rate grow with lanes: the GPU's share or a lane's latency?)
#   threads   the same run flat out, each engine thread's CPU use over 2 s of it (is the host the bound?)
#   sanitize  compute-sanitizer memcheck (and racecheck, synccheck on the peak finder) over the
#             suites of SANITIZE_TESTS, each bounded by SANITIZE_S seconds
#   sanitize_engine  livedrp-engine run host-fed with every stage, SANITIZE_EVENTS events, under
#             each of SANITIZE_ENGINE_TOOLS (memcheck racecheck synccheck initcheck)
set -u
PARTS=${PARTS:-"suite pipeline streams engine threads"}
source "$(dirname "$0")/unpack.sh"
nproc >> "$L/00_nvidia_smi.txt"
has() { [[ " $PARTS " == *" $1 "* ]]; }

if has suite; then
  (time timeout "${SUITE_S:-240}" /tmp/gpu/run) > "$L/01_gpu_suite.log" 2>&1
  grep -E "passed, .* failed|^FAIL|Totals" "$L/01_gpu_suite.log" | head -40; finish
fi
if has pipeline; then
  timeout "${PIPELINE_S:-150}" "$B/livedrp-bench" pipeline --backends cuda --sources device,host \
    --stages all --streams 8,16 --launch graph --events 20000 --markdown "$L/03_pipeline.md" \
    --json "$L/03_pipeline.json" > "$L/03_pipeline.log" 2>&1
  cat "$L/03_pipeline.md"; tail -3 "$L/03_pipeline.log"; finish
fi
if has streams; then
  EP=$(seq -s, -f 'tcp://127.0.0.1:%g' 30001 30016)
  "$B/livedrp-sls-publisher" --source sim:jungfrau4m --ports-per-module 2 --bind tcp://127.0.0.1:30001 \
    --rate 1000 --events 6000 --wait-for-subscribers 30 > "$L/05_sls_pub.log" 2>&1 &
  P=$!
  timeout -s INT 16 "$B/livedrp-engine" run --source "sls:$EP" --backend cuda --events 6000 \
    --publish '' --summary-json "$L/05_sls.json" > "$L/05_sls.log" 2>&1
  echo "== sls 1 kHz rc=$?"; grep -E '^events in|^rate:|stream:' "$L/05_sls.log"
  kill $P 2>/dev/null; wait $P 2>/dev/null; finish
  "$B/livedrp-dectris-publisher" --bind tcp://127.0.0.1:31001 --source poisson:2068x2162 \
    --dtype uint32 --compression bslz4 --rate 0 --images 6000 > "$L/06_dectris_pub.log" 2>&1 &
  P=$!
  timeout -s INT 20 "$B/livedrp-engine" run --source dectris:tcp://127.0.0.1:31001 --backend cuda \
    --events 6000 --publish '' --summary-json "$L/06_dectris.json" > "$L/06_dectris.log" 2>&1
  echo "== dectris bslz4 rc=$?"; grep -E '^events in|^rate:|stream:' "$L/06_dectris.log"
  kill $P 2>/dev/null; wait $P 2>/dev/null; finish
fi
if has engine; then
  for cfg in engine_device_x8 engine_device_x8_paced; do
    timeout -s INT 25 "$B/livedrp-engine" run --config "$here/$cfg.json" \
      --summary-json "$L/04_$cfg.json" > "$L/04_$cfg.log" 2>&1
    echo "== $cfg rc=$?"; grep -E "^events in|^rate:|^latency|^stage|^peak" "$L/04_$cfg.log"; finish
  done
fi
if has lanes; then
  timeout "${LANES_S:-150}" "$B/livedrp-bench" pipeline --backends cuda --sources device \
    --stages all --streams 1,2,4,8 --launch graph,device_graph --events 10000 \
    --markdown "$L/13_lanes.md" --json "$L/13_lanes.json" > "$L/13_lanes.log" 2>&1
  echo "== lanes rc=$?"; cat "$L/13_lanes.md"; finish
fi
if has threads; then
  # Each engine thread's CPU use over 2 s in the middle of a device-resident run with every stage
  # (engine_device_x8.json, /proc's utime + stime): a thread near 100 % of a core bounds the rate
  # (the submitting thread's CUDA calls), whatever the GPU's kernels cost.
  "$B/livedrp-engine" run --config "$here/engine_device_x8.json" > "$L/09_engine_threads.log" 2>&1 &
  P=$!
  snap() { for t in /proc/$P/task/*; do
    [ -r "$t/stat" ] && echo "$(basename "$t") $(awk '{print $14 + $15}' "$t/stat") $(tr ' ' _ < "$t/comm")"
  done | sort; }
  sleep "${THREADS_AT_S:-6}"; snap > /tmp/threads_1; sleep 2; snap > /tmp/threads_2
  join /tmp/threads_1 /tmp/threads_2 | awk '{d = $4 - $2; if (d > 5) printf "thread %s %s: %.0f%% of a core\n", $1, $3, d / 2}' \
    > "$L/09_threads.txt"
  wait $P; echo "== engine, threads sampled"; grep -E "^rate" "$L/09_engine_threads.log"
  sort -t: -k2 -nr "$L/09_threads.txt"; finish
fi
if has sanitize; then
  CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  for t in ${SANITIZE_TESTS:-test_gpu_peakfinder8 test_gpu_calibration test_gpu_integrate test_gpu_codec}; do
    timeout "${SANITIZE_S:-120}" "$CS" --tool memcheck --error-exitcode 99 "$B/$t" \
      > "$L/07_memcheck_$t.log" 2>&1
    echo "== memcheck $t rc=$?"; grep -E "ERROR SUMMARY|^Totals" "$L/07_memcheck_$t.log" | tail -2
    finish
  done
  for tool in racecheck synccheck; do
    timeout "${SANITIZE_S:-120}" "$CS" --tool $tool --error-exitcode 99 "$B/test_gpu_peakfinder8" \
      > "$L/07_${tool}_peakfinder8.log" 2>&1
    echo "== $tool test_gpu_peakfinder8 rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^Totals" "$L/07_${tool}_peakfinder8.log" | tail -2
    finish
  done
fi
if has sanitize_engine; then
  # The engine as a user runs it, host-fed, every stage (calibration with common mode, lossy
  # compression, integration, peakfinder8), a few events under each compute-sanitizer tool: every
  # kernel of the pipeline once per tool. (The device-resident consumers spin on doorbells, which
  # the sanitizer's serialisation would hang.)
  CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  for tool in ${SANITIZE_ENGINE_TOOLS:-memcheck racecheck synccheck initcheck}; do
    timeout "${SANITIZE_S:-120}" "$CS" --tool $tool --error-exitcode 99 "$B/livedrp-engine" run \
      --config "$here/engine_host_x1_profile.json" --events "${SANITIZE_EVENTS:-12}" \
      > "$L/08_${tool}_engine.log" 2>&1
    echo "== $tool engine rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^events in" "$L/08_${tool}_engine.log" | tail -3
    finish
  done
fi
echo done
