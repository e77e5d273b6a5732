#!/usr/bin/python3
"""pyFAI itself (Debian's python3-pyfai, 0.21.3 in Debian 12) as a test tool: tests/test_pyfai_live.cpp.

  live_pyfai.py case DETECTOR DIR
      DIR/named.poni    the PONI pyFAI writes for its detector DETECTOR, a tilted geometry
      DIR/generic.poni  the same geometry with a generic Detector of DETECTOR's pixels and shape
      DIR/image.npy     rings in 2theta on a background that turns with chi, float32
      DIR/mask.npy      pyFAI's own mask of DETECTOR (its module gaps), uint8
      DIR/NAME.npy      pyFAI's integrate1d of the image with named.poni, one per entry of PROFILES:
                        (npt, 7) float64: radial, intensity, sigma, sum signal, sum variance,
                        sum normalisation, count
      DIR/about.json    pyFAI's version, whether its Detector knows an orientation, the profiles
  live_pyfai.py flipped DIR
      after `case`: DIR/orientationK_NAME.npy for K in 1, 2, 4 and NAME in q, 2th (full azimuth),
      pyFAI's integrate1d with DIR/generic.poni (orientation 3) of DIR/image.npy re-indexed as
      orientation K re-indexes a detector's pixels (pyFAI >= 2023.12, detectors/orientation.py:
      axis 1, the rows, flips for 1 and 2; axis 2, the columns, for 1 and 4). 2theta and q do not
      see the sign orientation gives chi, so this is what a pyFAI that knows orientation K
      computes for the image as stored; pyFAI 0.21.3 cannot read PONI 2.1 itself.
  live_pyfai.py text FILE IMAGE PONI NPT
      reads livedrp's pyFAI text file FILE back (numpy.loadtxt; the unit from its column line,
      the geometry from its header), integrates IMAGE with PONI in that unit with pyFAI and writes
      FILE.json: the worst relative difference of each column, the header's geometry against pyFAI's.

Integration as tests/reference/pyfai/make_integrate_refs.py does it: integrate1d (integrate1d_ng in
0.21) with method ("no", "histogram", "cython"), Poisson error model, solid angle on.
"""
import json
import os
import re
import sys

import numpy
import pyFAI
from pyFAI.azimuthalIntegrator import AzimuthalIntegrator
from pyFAI.detectors import Detector

METHOD = ("no", "histogram", "cython")
GEOMETRY = dict(dist=0.12, poni1=0.061, poni2=0.052, rot1=0.05, rot2=-0.03, rot3=0.2,
                wavelength=1.0e-10)
PROFILES = {
    "q": dict(unit="q_nm^-1", npt=400),
    "2th": dict(unit="2th_deg", npt=300),
    "q_azimuth": dict(unit="q_nm^-1", npt=200, azimuth_range=[-60.0, 45.0]),
}


def integrate(ai, image, npt, unit, **kwargs):
    return ai.integrate1d(image, npt, unit=unit, method=METHOD, error_model="poisson",
                          correctSolidAngle=True, **kwargs)


def write_poni(detector, path):
    if os.path.exists(path):
        os.remove(path)  # pyFAI's write() appends
    AzimuthalIntegrator(detector=detector, **GEOMETRY).write(path)
    return path


def case(name, out):
    named = pyFAI.detector_factory(name)
    generic = Detector(pixel1=named.pixel1, pixel2=named.pixel2, max_shape=named.max_shape)
    ai = pyFAI.load(write_poni(named, os.path.join(out, "named.poni")))
    write_poni(generic, os.path.join(out, "generic.poni"))
    tth, chi = ai.twoThetaArray(), ai.chiArray()
    rings = sum(1000.0 * numpy.exp(-((tth - f * tth.max()) / 0.002) ** 2) for f in (0.3, 0.5, 0.7))
    image = ((100.0 + rings) * (1.0 + 0.3 * numpy.cos(chi))).astype(numpy.float32)
    numpy.save(os.path.join(out, "image.npy"), image)
    mask = named.mask if named.mask is not None else numpy.zeros(named.max_shape)
    numpy.save(os.path.join(out, "mask.npy"), mask.astype(numpy.uint8))
    for key, p in PROFILES.items():
        extra = {"azimuth_range": tuple(p["azimuth_range"])} if "azimuth_range" in p else {}
        res = integrate(ai, image, p["npt"], p["unit"], **extra)
        numpy.save(os.path.join(out, key + ".npy"), profile_table(res))
    about = dict(pyfai_version=pyFAI.version, detector=type(named).__name__,
                 shape=list(named.max_shape), gap_pixels=int(mask.sum()),
                 orientation=hasattr(Detector(), "orientation"), profiles=PROFILES)
    with open(os.path.join(out, "about.json"), "w") as f:
        json.dump(about, f)


def profile_table(res):
    table = [res.radial, res.intensity, res.sigma, res.sum_signal, res.sum_variance,
             res.sum_normalization, res.count]
    return numpy.stack([numpy.asarray(c, dtype=numpy.float64) for c in table], axis=-1)


ORIENTATION_FLIPS = {1: (True, True), 2: (True, False), 4: (False, True)}  # (rows, columns)


def flipped(out):
    ai = pyFAI.load(os.path.join(out, "generic.poni"))
    image = numpy.load(os.path.join(out, "image.npy"))
    for orientation, (rows, columns) in ORIENTATION_FLIPS.items():
        stored = image[::-1, :] if rows else image
        stored = stored[:, ::-1] if columns else stored
        for key in ("q", "2th"):
            p = PROFILES[key]
            res = integrate(ai, numpy.ascontiguousarray(stored), p["npt"], p["unit"])
            numpy.save(os.path.join(out, "orientation%d_%s.npy" % (orientation, key)),
                       profile_table(res))


def worst_relative(ours, theirs):
    ours, theirs = numpy.asarray(ours, float), numpy.asarray(theirs, float)
    scale = numpy.where(theirs == 0.0, 1.0, numpy.abs(theirs))
    return float(numpy.max(numpy.abs(ours - theirs) / scale))


def header_number(header, key):
    for line in header:
        if line.startswith(key):
            return [float(v) for v in re.findall(r"[-+]?\d+\.?\d*(?:[eE][-+]?\d+)?",
                                                 line[len(key):])]
    return None


def header_text(header, key):
    for line in header:
        if line.startswith(key):
            return line[len(key):].strip()
    return None


def text_header(path):
    with open(path) as f:
        return [line[1:].strip() for line in f if line.startswith("#")]


def text(path, image_path, poni, npt):
    header = text_header(path)
    columns = header[-1].split()  # "q_nm^-1 I sigma", as pyFAI writes them
    unit = columns[0]
    rows = numpy.loadtxt(path)
    ai = pyFAI.load(poni)
    # pyFAI writes its own file of the same integration, for its header's words.
    pyfai_path = path + ".pyfai" + os.path.splitext(path)[1]
    if os.path.exists(pyfai_path):
        os.remove(pyfai_path)
    res = integrate(ai, numpy.load(image_path), int(npt), unit, filename=pyfai_path)
    pyfai_header = text_header(pyfai_path)
    result = dict(
        unit=unit, columns=columns, rows=int(rows.shape[0]), pyfai_rows=int(len(res.radial)),
        radial=worst_relative(rows[:, 0], res.radial),
        intensity=worst_relative(rows[:, 1], res.intensity),
        sigma=worst_relative(rows[:, 2], res.sigma),
        distance=header_number(header, "Distance Sample to Detector:"), pyfai_distance=ai.dist,
        poni=header_number(header, "PONI:"), pyfai_poni=[ai.poni1, ai.poni2],
        rotations=header_number(header, "Rotations:"), pyfai_rotations=[ai.rot1, ai.rot2, ai.rot3],
        wavelength=header_number(header, "Wavelength:"), pyfai_wavelength=ai.wavelength,
        mask=header_text(header, "Mask applied:"),
        pyfai_mask=header_text(pyfai_header, "Mask applied:"))
    with open(path + ".json", "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "case":
        case(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "flipped":
        flipped(sys.argv[2])
    elif len(sys.argv) == 6 and sys.argv[1] == "text":
        text(*sys.argv[2:])
    else:
        sys.exit(__doc__)
