#!/usr/bin/python3
"""Writes the pyFAI geometry references that tests/test_poni_geometry.cpp compares against.

Run with Debian's pyFAI (python3-pyfai 0.21.3): /usr/bin/python3 make_geometry_refs.py
It writes, next to itself, for each geometry NAME:
  NAME.poni                  as pyFAI writes it (poni_version 2)
  NAME_tth.npy, NAME_chi.npy, NAME_q.npy, NAME_r.npy
                             2theta (rad), chi (rad), q (nm^-1), r (mm) per pixel, float64
and hand-written variants of "tilted" for the parser (tilted_v1.poni, tilted_v21.poni).

The per-pixel values come from pyFAI's own functions (tth, chi, qFunction, rFunction) called with
float64 pixel indices: twoThetaArray() and friends build their indices with
numpy.fromfunction(dtype=float32), so the pixel positions there are rounded to float32 (about 1e-7
relative) before the double-precision geometry; the float64 path is the same formula without
that rounding, which is what livedrp computes. The test also checks twoThetaArray() of
one geometry (tilted_tth_array.npy) at a float32-sized bound.
"""
import os

import numpy
import pyFAI
from pyFAI.azimuthalIntegrator import AzimuthalIntegrator
from pyFAI.detectors import Detector

HERE = os.path.dirname(os.path.abspath(__file__))

# name: (shape (rows, cols), pixel1, pixel2, dist, poni1, poni2, rot1, rot2, rot3, wavelength)
GEOMETRIES = {
    # The beam through the detector, no tilt.
    "untilted": ((48, 64), 100e-6, 100e-6, 0.1, 2.4e-3, 3.2e-3, 0.0, 0.0, 0.0, 1.0e-10),
    # Every rotation non-zero, non-square pixels.
    "tilted": ((30, 40), 75e-6, 100e-6, 0.08, 1.9e-3, 3.5e-3, 0.12, -0.07, 0.3, 0.7293e-10),
    # PONI off the detector (grazing geometry), large tilts.
    "offdet": ((20, 28), 172e-6, 172e-6, 0.25, -0.02, 0.015, -0.4, 0.25, -1.2, 1.54e-10),
}


def indices(shape):
    d1, d2 = numpy.indices(shape, dtype=numpy.float64)
    return d1, d2


def main():
    assert pyFAI.version.startswith("0.21"), pyFAI.version
    for name, (shape, px1, px2, dist, poni1, poni2, rot1, rot2, rot3, wl) in GEOMETRIES.items():
        det = Detector(pixel1=px1, pixel2=px2, max_shape=shape)
        ai = AzimuthalIntegrator(dist=dist, poni1=poni1, poni2=poni2, rot1=rot1, rot2=rot2,
                                 rot3=rot3, wavelength=wl, detector=det)
        path = os.path.join(HERE, name + ".poni")
        if os.path.exists(path):
            os.remove(path)  # pyFAI's write() appends
        ai.write(path)
        # Read back what was written, so the references come from the file's decimal values.
        ai = pyFAI.load(path)
        d1, d2 = indices(shape)
        tth = numpy.asarray(ai.tth(d1, d2), dtype=numpy.float64)
        chi = numpy.asarray(ai.chi(d1, d2), dtype=numpy.float64)
        q = numpy.asarray(ai.qFunction(d1, d2), dtype=numpy.float64)
        r = numpy.asarray(ai.rFunction(d1, d2), dtype=numpy.float64) * 1000.0  # m -> mm (r_mm)
        for what, arr in (("tth", tth), ("chi", chi), ("q", q), ("r", r)):
            assert arr.shape == shape and arr.dtype == numpy.float64
            numpy.save(os.path.join(HERE, "%s_%s.npy" % (name, what)), arr)
        if name == "tilted":
            numpy.save(os.path.join(HERE, name + "_tth_array.npy"),
                       numpy.asarray(ai.twoThetaArray(shape), dtype=numpy.float64))

    # Hand-written variants of "tilted" for the parser: version 1 (PixelSize1/2, no poni_version)
    # and version 2.1 (orientation in Detector_config; pyFAI 0.21 cannot read it, later pyFAI
    # writes it). Same numbers, so they share the references.
    shape, px1, px2, dist, poni1, poni2, rot1, rot2, rot3, wl = GEOMETRIES["tilted"]
    with open(os.path.join(HERE, "tilted_v1.poni"), "w") as f:
        f.write("# Nota: C-Order, 1 refers to the Y axis, 2 to the X axis\n"
                "# hand-written, version 1\n"
                "PixelSize1: %r\nPixelSize2: %r\nDistance: %r\nPoni1: %r\nPoni2: %r\n"
                "Rot1: %r\nRot2: %r\nRot3: %r\nWavelength: %r\n"
                % (px1, px2, dist, poni1, poni2, rot1, rot2, rot3, wl))
    with open(os.path.join(HERE, "tilted_v21.poni"), "w") as f:
        f.write("# hand-written, version 2.1\n"
                "poni_version: 2.1\nDetector: Detector\n"
                "Detector_config: {\"pixel1\": %r, \"pixel2\": %r, \"max_shape\": [%d, %d], "
                "\"orientation\": 3}\n"
                "Distance: %r\nPoni1: %r\nPoni2: %r\nRot1: %r\nRot2: %r\nRot3: %r\n"
                "Wavelength: %r\n"
                % (px1, px2, shape[0], shape[1], dist, poni1, poni2, rot1, rot2, rot3, wl))
    # Version 1 must give pyFAI the same geometry as version 2.
    ai1 = pyFAI.load(os.path.join(HERE, "tilted_v1.poni"))
    d1, d2 = indices(shape)
    ref = numpy.load(os.path.join(HERE, "tilted_tth.npy"))
    assert numpy.array_equal(numpy.asarray(ai1.tth(d1, d2)), ref)


if __name__ == "__main__":
    main()
