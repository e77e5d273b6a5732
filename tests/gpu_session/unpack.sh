# Sourced by the device-call scripts of this folder (measure.sh, profile.sh, bound.sh), on the GPU
# machine: unpacks the carried .gpu/carry.tar.xz into /tmp/gpu, sets `here` (this folder), `L`
# (the logs under $OUT), `B` (the packed programs) and the library path, and packs the logs into
# $OUT/logs.tgz on exit and whenever `finish` is called (a call cut short keeps what it did).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
L=$OUT/logs; mkdir -p "$L" /tmp/gpu
# Once per carry: a second script of the same call (or a warm machine given the same carry) finds
# it unpacked already.
stamp=$(md5sum < .gpu/carry.tar.xz | cut -d' ' -f1)
if [ "$(cat /tmp/gpu/.carry_md5 2>/dev/null)" != "$stamp" ]; then
  tar xJf .gpu/carry.tar.xz -C /tmp/gpu && echo "$stamp" > /tmp/gpu/.carry_md5
fi
export LD_LIBRARY_PATH=/tmp/gpu/lib
B=/tmp/gpu/bin
finish() { tar czf "$OUT/logs.tgz" -C "$OUT" logs; }
trap finish EXIT
nvidia-smi > "$L/00_nvidia_smi.txt" 2>&1
