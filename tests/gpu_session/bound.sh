#!/usr/bin/env bash
# Is the device-resident engine bound by its host thread or by the GPU? One device call:
#   1. one engine (engine_device_x8.json: device-resident, every stage, graph x8), with
#      nvidia-smi's SM activity sampled every 100 ms beside it;
#   2. two such engines at once on the same GPU, each with its own consumer thread: if their
#      rates add up to well over one engine's, one engine was bound by its host thread; if they
#      share one engine's rate, the GPU is the bound;
#   3. the one engine without its stage stamp kernels, and with 64 ring slots;
#   4. the host-fed engine, every stage, graph x16, twice (order errors were seen there once).
# Pack as measure.sh says; run with carry [".gpu/carry.tar.xz"]; logs in $OUT/logs.
set -u
source "$(dirname "$0")/unpack.sh"
rate() { grep -E "^rate:" "$1" | head -1; }

nvidia-smi dmon -s u -d 1 > "$L/10_dmon_one.txt" 2>&1 &
D=$!
"$B/livedrp-engine" run --config "$here/engine_device_x8.json" --summary-json "$L/10_one.json" \
  > "$L/10_one.log" 2>&1
kill $D 2>/dev/null
echo "== one engine: $(rate "$L/10_one.log")"
cat "$L/10_dmon_one.txt" | head -20

nvidia-smi dmon -s u -d 1 > "$L/11_dmon_two.txt" 2>&1 &
D=$!
"$B/livedrp-engine" run --config "$here/engine_device_x8.json" --summary-json "$L/11_a.json" \
  > "$L/11_a.log" 2>&1 &
P=$!
"$B/livedrp-engine" run --config "$here/engine_device_x8.json" --summary-json "$L/11_b.json" \
  > "$L/11_b.log" 2>&1
wait $P
kill $D 2>/dev/null
echo "== two engines at once: a $(rate "$L/11_a.log") | b $(rate "$L/11_b.log")"
grep -E "elapsed" "$L/11_a.log" "$L/11_b.log"
cat "$L/11_dmon_two.txt" | head -20
finish

# What the kernel count and the ring's depth cost: the one-engine run without the four stage
# stamp kernels an event (LIVEDRP_RESIDENT_STAMPS=0), and with 64 ring slots instead of 32.
LIVEDRP_RESIDENT_STAMPS=0 "$B/livedrp-engine" run --config "$here/engine_device_x8.json" \
  --summary-json "$L/14_no_stamps.json" > "$L/14_no_stamps.log" 2>&1
echo "== one engine, no stamp kernels: $(rate "$L/14_no_stamps.log")"
"$B/livedrp-engine" run --config "$here/engine_device_x8.json" --ring-slots 64 \
  --summary-json "$L/15_ring64.json" > "$L/15_ring64.log" 2>&1
echo "== one engine, 64 ring slots: $(rate "$L/15_ring64.log")"
finish

for k in 1 2; do
  timeout 60 "$B/livedrp-engine" run --config "$here/engine_host_x16.json" \
    --summary-json "$L/12_host_x16_$k.json" > "$L/12_host_x16_$k.log" 2>&1
  echo "== host-fed x16 run $k rc=$?"; grep -E "^events in|^rate:" "$L/12_host_x16_$k.log"
done
