#!/usr/bin/python3
"""Writes the pyFAI references for integration placed by a CrystFEL geometry
(tests/test_integrate_crystfel_geometry.cpp compares `livedrp-engine integrate --geometry`
against them).

Run with Debian's pyFAI (python3-pyfai 0.21.3): /usr/bin/python3 make_geom_refs.py
It writes, next to itself:
  geom_panels.geom            the CrystFEL geometry: four 16 x 12 panels (one turned by 90
                              degrees, one by 30 degrees, one flipped with 75 um pixels instead of
                              100 um), a no_index panel, a slab row and columns of no panel, a
                              bad region in fs/ss and one in x/y
  geom_tilted.poni            a tilted geometry; geom_untilted.poni: poni1 = poni2 = 0, no
                              rotation, dist = clen (CrystFEL's own geometry)
  geom_cases.json             one entry per case: inputs, PONI and parameters
  geom_NAME_input.npy         the slab (or a stack of slabs), float32
  geom_NAME_mask.npy          the user's mask (livedrp's --mask), uint8; the geometry's own bad
                              pixels are not in it, livedrp adds them
  geom_NAME_ref.npy           pyFAI's result, float64, (npt, 7) or (frames, npt, 7): radial,
                              intensity, sigma, sum signal, sum variance, sum normalisation, count

pyFAI is given the slab with every pixel's corners (Detector.set_pixel_corners, metres, corner
order (row, column) index steps (0, 0), (1, 0), (1, 1), (0, 1), coordinates (z, dim1, dim2)) by
livedrp's convention: dim1 = +y / res, dim2 = -x / res, origin at CrystFEL's lab origin (pyFAI's
lab frame is right-handed with x1 up and x3 along the beam, so its x2 is CrystFEL's -x). Each
corner is computed in float64 as corner + a * fs + b * ss (in this order, then divided by the
panel's res) and pyFAI keeps it as float32, as livedrp does. Pixels of no panel get the corners
of slab pixel (0, 0): they are masked, and a position inside the detector's keeps them out of
the default radial range, as livedrp (which gives them none) does. The mask pyFAI gets is the
user's mask, the pixels of no panel, the no_index panel and both bad regions, worked out here
from the numbers below (x/y regions test each pixel's outer corner, corner + i fs + j ss, with
both ends included).

Methods: integrate1d_ng with ("no", "histogram", "cython") (no splitting) or
("bbox", "csr", "cython") (bounding-box splitting).
"""
import json
import os

import numpy
import pyFAI
from pyFAI.azimuthalIntegrator import AzimuthalIntegrator
from pyFAI.detectors import Detector

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = numpy.random.default_rng(20261207)
CLEN = 0.05
SLAB = (25, 36)  # slab_height, slab_width

# Panels: slab rectangle (inclusive), lab steps per fs and ss index, corner (lab pixels), res.
COS30, SIN30 = 0.8660254037844386, 0.5
PANELS = [
    dict(name="q0", fs_range=(0, 15), ss_range=(0, 11), fs=(1.0, 0.0), ss=(0.0, 1.0),
         corner=(-13.7, 1.2), res=10000.0),
    dict(name="q1", fs_range=(16, 31), ss_range=(0, 11), fs=(0.0, -1.0), ss=(1.0, 0.0),
         corner=(3.1, 2.8), res=10000.0),
    dict(name="q2", fs_range=(0, 15), ss_range=(13, 24), fs=(COS30, SIN30), ss=(-SIN30, COS30),
         corner=(-14.0, -18.0), res=10000.0),
    dict(name="q3", fs_range=(16, 31), ss_range=(13, 24), fs=(-1.0, 0.0), ss=(0.0, -1.0),
         corner=(40.0, -2.5), res=13333.333333333334),
    dict(name="stub", fs_range=(32, 35), ss_range=(0, 3), fs=(1.0, 0.0), ss=(0.0, 1.0),
         corner=(-2.0, -2.0), res=10000.0, no_index=True),
]
BAD_SLAB = dict(name="badq0", panel="q0", fs=(3, 5), ss=(2, 4))
BAD_XY = dict(name="badxy", x=(5.5, 9.5), y=(-6.2, -2.2))


def signed(value):
    return ("+" if value >= 0 else "") + repr(value)


def vector_text(v):
    return "%sx %sy" % (signed(v[0]), signed(v[1]))


def write_geometry(path):
    lines = ["; written by make_geom_refs.py for livedrp's tests", "clen = %r" % CLEN,
             "photon_energy = 12398.4", "adu_per_eV = 1.0", "dim0 = %", "dim1 = ss", "dim2 = fs",
             "data = /entry/data", ""]
    for p in PANELS:
        n = p["name"]
        lines += ["%s/min_fs = %d" % (n, p["fs_range"][0]), "%s/max_fs = %d" % (n, p["fs_range"][1]),
                  "%s/min_ss = %d" % (n, p["ss_range"][0]), "%s/max_ss = %d" % (n, p["ss_range"][1]),
                  "%s/fs = %s" % (n, vector_text(p["fs"])), "%s/ss = %s" % (n, vector_text(p["ss"])),
                  "%s/corner_x = %r" % (n, p["corner"][0]), "%s/corner_y = %r" % (n, p["corner"][1]),
                  "%s/res = %r" % (n, p["res"])]
        if p.get("no_index"):
            lines.append("%s/no_index = 1" % n)
        lines.append("")
    b = BAD_SLAB
    lines += ["%s/min_fs = %d" % (b["name"], b["fs"][0]), "%s/max_fs = %d" % (b["name"], b["fs"][1]),
              "%s/min_ss = %d" % (b["name"], b["ss"][0]), "%s/max_ss = %d" % (b["name"], b["ss"][1]),
              "%s/panel = %s" % (b["name"], b["panel"]), ""]
    b = BAD_XY
    lines += ["%s/min_x = %r" % (b["name"], b["x"][0]), "%s/max_x = %r" % (b["name"], b["x"][1]),
              "%s/min_y = %r" % (b["name"], b["y"][0]), "%s/max_y = %r" % (b["name"], b["y"][1])]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def lab_point(p, a, b):
    """Lab position (pixels) of panel-relative (fs, ss) = (a, b): corner + a fs + b ss."""
    x = p["corner"][0] + a * p["fs"][0] + b * p["ss"][0]
    y = p["corner"][1] + a * p["fs"][1] + b * p["ss"][1]
    return x, y


def corners_and_bad():
    corners = numpy.zeros(SLAB + (4, 3), dtype=numpy.float64)
    placed = numpy.zeros(SLAB, dtype=bool)
    bad = numpy.ones(SLAB, dtype=bool)
    for p in PANELS:
        for ss in range(p["ss_range"][0], p["ss_range"][1] + 1):
            for fs in range(p["fs_range"][0], p["fs_range"][1] + 1):
                i, j = float(fs - p["fs_range"][0]), float(ss - p["ss_range"][0])
                # pyFAI's corner order in (row, column) = (ss, fs) index steps.
                for k, (a, b) in enumerate(((i, j), (i, j + 1.0), (i + 1.0, j + 1.0),
                                            (i + 1.0, j))):
                    x, y = lab_point(p, a, b)
                    corners[ss, fs, k] = (0.0, y / p["res"], -x / p["res"])
                placed[ss, fs] = True
                x, y = lab_point(p, i, j)  # the outer corner, as CrystFEL tests x/y regions
                in_xy = BAD_XY["x"][0] <= x <= BAD_XY["x"][1] and \
                    BAD_XY["y"][0] <= y <= BAD_XY["y"][1]
                in_slab = p["name"] == BAD_SLAB["panel"] and \
                    BAD_SLAB["fs"][0] <= fs <= BAD_SLAB["fs"][1] and \
                    BAD_SLAB["ss"][0] <= ss <= BAD_SLAB["ss"][1]
                bad[ss, fs] = bool(p.get("no_index")) or in_xy or in_slab
    corners[~placed] = corners[0, 0]
    assert bad.sum() > (~placed).sum() + 20, "the bad regions should mask some panel pixels"
    return corners, bad


def write_poni(name, **geometry):
    path = os.path.join(HERE, name)
    if os.path.exists(path):
        os.remove(path)  # pyFAI's write() appends
    det = Detector(pixel1=100e-6, pixel2=100e-6, max_shape=SLAB)
    AzimuthalIntegrator(detector=det, wavelength=1.0e-10, **geometry).write(path)
    return path


def integrator(poni_path, corners):
    ai = pyFAI.load(poni_path)  # the parameters as the file rounds them
    ai.detector.set_pixel_corners(corners)
    return ai


def result_table(res):
    cols = [res.radial, res.intensity, res.sigma, res.sum_signal, res.sum_variance,
            res.sum_normalization, res.count]
    return numpy.stack([numpy.asarray(c, dtype=numpy.float64) for c in cols], axis=-1)


def make_case(name, poni, corners, geom_bad, frames=None, **params):
    ai = integrator(os.path.join(HERE, poni), corners)
    tth, chi = ai.twoThetaArray(SLAB), ai.chiArray(SLAB)
    lam = 60.0 + 30.0 * numpy.cos(chi) + 400.0 * numpy.exp(-((tth - 0.03) / 0.006) ** 2)
    count = 1 if frames is None else frames
    images = numpy.stack([RNG.poisson(lam * (1.0 + 0.25 * k)) for k in range(count)])
    images = images.astype(numpy.float32)
    user_mask = (RNG.random(SLAB) < 0.04).astype(numpy.uint8)
    case = dict(name=name, poni=poni, geometry="geom_panels.geom", **params)
    case["input"] = "geom_%s_input.npy" % name
    numpy.save(os.path.join(HERE, case["input"]), images if frames else images[0])
    case["mask"] = "geom_%s_mask.npy" % name
    numpy.save(os.path.join(HERE, case["mask"]), user_mask)
    method = ("bbox", "csr", "cython") if params.get("method") == "bbox" else \
        ("no", "histogram", "cython")
    kwargs = dict(unit=params["unit"], method=method, mask=(user_mask != 0) | geom_bad,
                  correctSolidAngle=params.get("solid_angle", True), error_model="poisson")
    if "polarization" in params:
        kwargs["polarization_factor"] = params["polarization"]
    if "azimuth_range" in params:
        kwargs["azimuth_range"] = tuple(params["azimuth_range"])
    tables = []
    for image in images:
        ai = integrator(os.path.join(HERE, poni), corners)  # no engine cached from another case
        tables.append(result_table(ai.integrate1d_ng(image, params["npt"], **kwargs)))
    case["reference"] = "geom_%s_ref.npy" % name
    numpy.save(os.path.join(HERE, case["reference"]), numpy.stack(tables) if frames else tables[0])
    return case


def main():
    assert pyFAI.version.startswith("0.21"), pyFAI.version
    write_geometry(os.path.join(HERE, "geom_panels.geom"))
    write_poni("geom_tilted.poni", dist=CLEN, poni1=0.21e-3, poni2=-0.13e-3, rot1=0.03, rot2=-0.02,
               rot3=0.15)
    write_poni("geom_untilted.poni", dist=CLEN, poni1=0.0, poni2=0.0)
    corners, geom_bad = corners_and_bad()
    cases = [
        make_case("tilted_q", "geom_tilted.poni", corners, geom_bad, frames=2, unit="q_nm^-1",
                  npt=30, polarization=0.95),
        make_case("tilted_tth_bbox", "geom_tilted.poni", corners, geom_bad, unit="2th_deg", npt=24,
                  method="bbox", polarization=0.9, azimuth_range=[-60.0, 150.0]),
        make_case("untilted_r", "geom_untilted.poni", corners, geom_bad, unit="r_mm", npt=20,
                  solid_angle=False),
    ]
    with open(os.path.join(HERE, "geom_cases.json"), "w") as f:
        json.dump(cases, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
