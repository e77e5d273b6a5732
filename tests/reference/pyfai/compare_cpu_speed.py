#!/usr/bin/python3
"""livedrp's CPU integration beside pyFAI's on the same frames: frames/s and agreement.

Usage (Debian's pyFAI, python3-pyfai 0.21.3):
    /usr/bin/python3 compare_cpu_speed.py PATH/TO/livedrp-engine [--frames N] [--workdir DIR]

Frames: N float32 images of the ePix10ka2M's pixel count (its 16 segments of 352 x 384 stacked as
one 5632 x 384 image of 100 um pixels; a flat detector, as both tools read it from the PONI), powder
rings on a background with Poisson noise, 0.1% of the pixels masked, seeded. Integration: 1000 bins
in q_nm^-1 over each tool's default range, solid angle and polarisation (0.99) corrections, Poisson
error model, no pixel splitting.

livedrp: `livedrp-engine integrate --backend cpu` on the whole stack; its frames/s is the one it
reports for the frames after the first (integration only; the CSR is built once beforehand).
pyFAI: AzimuthalIntegrator.integrate1d_ng with methods ("no", "histogram", "cython") and
("no", "csr", "cython"), timed over the same frames after one untimed call (which builds its
engine). Both use every core (livedrp's thread pool, pyFAI's OpenMP). Prints a Markdown table and the
worst relative difference of the intensities between livedrp and each pyFAI method.
"""
import argparse
import csv
import os
import re
import subprocess
import tempfile
import time

import numpy
from pyFAI.azimuthalIntegrator import AzimuthalIntegrator

ROWS, COLS, PIXEL = 16 * 352, 384, 100e-6


def make_frames(count, rng):
    rows, cols = numpy.mgrid[0:ROWS, 0:COLS].astype(numpy.float64)
    radius = numpy.hypot((rows + 0.5) - ROWS / 2, (cols + 0.5) - COLS / 2 - 900)
    rings = sum(a * numpy.exp(-0.5 * ((radius - r) / 6.0) ** 2)
                for a, r in ((400, 900), (250, 1500), (150, 2300), (90, 2900)))
    expected = 20.0 + rings
    return rng.poisson(expected, size=(count, ROWS, COLS)).astype(numpy.float32)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("engine", help="path to livedrp-engine")
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    rng = numpy.random.default_rng(20261203)
    work = args.workdir or tempfile.mkdtemp(prefix="livedrp-vs-pyfai-")
    os.makedirs(work, exist_ok=True)

    frames = make_frames(args.frames, rng)
    mask = (rng.random((ROWS, COLS)) < 1e-3).astype(numpy.uint8)
    numpy.save(os.path.join(work, "frames.npy"), frames)
    numpy.save(os.path.join(work, "mask.npy"), mask)
    ai = AzimuthalIntegrator(dist=0.1, poni1=ROWS / 2 * PIXEL, poni2=(COLS / 2 + 900) * PIXEL,
                             pixel1=PIXEL, pixel2=PIXEL, wavelength=1.3051e-10)
    poni = os.path.join(work, "flat.poni")
    if os.path.exists(poni):
        os.remove(poni)  # pyFAI's write() appends to an existing file
    ai.write(poni)

    out = os.path.join(work, "livedrp.csv")
    started = time.perf_counter()
    run = subprocess.run([args.engine, "integrate", "--poni", poni, "--input",
                          os.path.join(work, "frames.npy"), "--mask", os.path.join(work, "mask.npy"),
                          "--npt", "1000", "--unit", "q_nm^-1", "--polarization", "0.99",
                          "--error-model", "poisson", "--backend", "cpu", "--output", out],
                         capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    found = re.search(r"then ([0-9.e+]+) frames/s over (\d+) frames \((\d+) threads\)", run.stderr)
    if not found:
        raise SystemExit("livedrp-engine did not report its rate:\n" + run.stderr)
    livedrp_rate, threads = float(found.group(1)), int(found.group(3))
    livedrp = numpy.zeros((args.frames, 1000))
    with open(out) as f:
        counters = [0] * args.frames
        for row in csv.DictReader(f):
            k = int(row["frame"])
            livedrp[k][counters[k]] = float(row["intensity"])
            counters[k] += 1

    table = ["| tool | method | threads | frames/s |", "|---|---|---|---|",
             f"| livedrp CPU backend | no splitting (CSR built once) | {threads} | {livedrp_rate:.2f} |"]
    differences = []
    for method in (("no", "histogram", "cython"), ("no", "csr", "cython")):
        def integrate(frame):
            return ai.integrate1d_ng(frame, 1000, unit="q_nm^-1", method=method, mask=mask,
                                     polarization_factor=0.99, correctSolidAngle=True,
                                     error_model="poisson")
        integrate(frames[0])  # builds the engine
        started = time.perf_counter()
        results = [integrate(frame) for frame in frames]
        rate = len(frames) / (time.perf_counter() - started)
        table.append(f"| pyFAI {pyfai_version()} | integrate1d_ng {method} | "
                     f"{os.cpu_count()} (OpenMP) | {rate:.2f} |")
        worst = 0.0
        for k, r in enumerate(results):
            ref = r.intensity
            scale = numpy.maximum(numpy.abs(ref), 1e-12)
            worst = max(worst, float(numpy.max(numpy.abs(livedrp[k] - ref) / scale)))
        differences.append((method, worst))
    print(f"{args.frames} frames of {ROWS} x {COLS} float32, 1000 bins in q_nm^-1; "
          f"livedrp-engine wall time {wall:.1f} s (reading, set-up, integration, CSV)\n")
    print("\n".join(table))
    print()
    for method, worst in differences:
        print(f"worst relative difference of livedrp's intensities from pyFAI {method}: {worst:.2e}")


def pyfai_version():
    import pyFAI
    return pyFAI.version


if __name__ == "__main__":
    main()
