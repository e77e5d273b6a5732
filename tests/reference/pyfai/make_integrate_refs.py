#!/usr/bin/python3
"""Writes the pyFAI azimuthal-integration references that tests/test_integrate*.cpp compare against.

Run with Debian's pyFAI (python3-pyfai 0.21.3): /usr/bin/python3 make_integrate_refs.py
(after make_geometry_refs.py, whose .poni files it reuses). It writes, next to itself:
  integrate_cases.json        one entry per case: the inputs (file names) and the parameters
  int_NAME_*.npy              the inputs of case NAME (image or stack, mask, dark, flat), float32/int8
  int_NAME_ref.npy            pyFAI's result, float64, shape (npt, 7) or (frames, npt, 7), columns
                              radial (in the unit), intensity, sigma, sum signal, sum variance,
                              sum normalisation, count
  seg4.poni                   the geometry of the multi-segment case

Methods: integrate1d_ng with method ("no", "histogram", "cython") (pixel centres, no splitting),
except for the azimuthal error model, which that engine does not implement in 0.21: those cases use
("no", "csr", "cython") with an explicit radial range (the CSR engine takes its default range
from unmasked pixels only, the histogram engine from all pixels). Cases with "method": "bbox" use
("bbox", "csr", "cython"): bounding-box pixel splitting. Cases with "sigma_clip" use sigma_clip_ng
(method ("no", "csr", "cython")) with that cutoff and number of iterations.

The multi-segment case is a 2x2 grid of 12x16 segments with gaps; pyFAI integrates the assembled
image with the gaps masked, livedrp the segment stack with the placement in the case.
"""
import json
import os

import numpy
import pyFAI
from pyFAI.azimuthalIntegrator import AzimuthalIntegrator
from pyFAI.detectors import Detector

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = numpy.random.default_rng(20261202)


def save(name, array):
    numpy.save(os.path.join(HERE, name), array)
    return name


def synthetic(ai, shape, frames=None):
    """Rings on a smooth background, Poisson noise: float32 counts."""
    tth = ai.twoThetaArray(shape)
    chi = ai.chiArray(shape)
    lam = 80.0 + 40.0 * numpy.cos(chi) + 500.0 * numpy.exp(-((tth - tth.mean()) / 0.004) ** 2)
    if frames is None:
        return RNG.poisson(lam).astype(numpy.float32)
    return numpy.stack([RNG.poisson(lam * (1.0 + 0.2 * k)) for k in range(frames)]).astype(
        numpy.float32)


def result_table(res):
    cols = [res.radial, res.intensity, res.sigma, res.sum_signal, res.sum_variance,
            res.sum_normalization, res.count]
    return numpy.stack([numpy.asarray(c, dtype=numpy.float64) for c in cols], axis=-1)


def integrate(ai, image, case):
    default_method = ("bbox", "csr", "cython") if case.get("method") == "bbox" else \
        ("no", "histogram", "cython")
    kwargs = dict(unit=case["unit"], correctSolidAngle=case.get("solid_angle", True),
                  error_model=case.get("error_model", "poisson"),
                  method=tuple(case.get("pyfai_method", default_method)))
    if "radial_range" in case:
        kwargs["radial_range"] = tuple(case["radial_range"])
    if "azimuth_range" in case:
        kwargs["azimuth_range"] = tuple(case["azimuth_range"])
    if "polarization" in case:
        kwargs["polarization_factor"] = case["polarization"]
    if "dummy" in case:
        kwargs["dummy"] = case["dummy"]
    if "delta_dummy" in case:
        kwargs["delta_dummy"] = case["delta_dummy"]
    for what in ("mask", "dark", "flat"):
        if what in case:
            kwargs[what] = case["_" + what]
    # A fresh integrator per call: no engine cached from another case.
    ai = pyFAI.load(case["_poni_path"])
    if "sigma_clip" in case:
        clip = case["sigma_clip"]
        kwargs["method"] = ("no", "csr", "cython")
        for unused in ("dummy", "delta_dummy"):
            kwargs.pop(unused, None)
        return result_table(ai.sigma_clip_ng(image, case["npt"], thres=clip["cutoff"],
                                             max_iter=clip["max_iter"], **kwargs))
    return result_table(ai.integrate1d_ng(image, case["npt"], **kwargs))


def plain_case(name, poni, shape, **params):
    ai = pyFAI.load(os.path.join(HERE, poni))
    case = dict(name=name, poni=poni, _poni_path=os.path.join(HERE, poni), **params)
    frames = params.pop("frames", None)
    case.pop("frames", None)
    image = synthetic(ai, shape, frames)
    if "sigma_clip" in case:  # outliers (Bragg peaks, hot pixels) for the clipping to reject
        flat_view = image.reshape(-1, *shape)
        for f in flat_view:
            f[RNG.integers(0, shape[0], 25), RNG.integers(0, shape[1], 25)] *= 20.0
    if "dummy" in case:  # a few pixels carry the dummy value
        flat_view = image.reshape(-1, *shape)
        for f in flat_view:
            f[RNG.integers(0, shape[0], 6), RNG.integers(0, shape[1], 6)] = case["dummy"]
    case["input"] = save("int_%s_input.npy" % name, image)
    if case.get("mask"):
        mask = (RNG.random(shape) < 0.05).astype(numpy.uint8)
        mask[: shape[0] // 6, : shape[1] // 5] = 1  # a masked block, as a beam stop would
        case["_mask"] = mask
        case["mask"] = save("int_%s_mask.npy" % name, mask)
    else:
        case.pop("mask", None)
    if case.get("dark"):
        case["_dark"] = (RNG.random(shape) * 5.0).astype(numpy.float32)
        case["dark"] = save("int_%s_dark.npy" % name, case["_dark"])
    if case.get("flat"):
        case["_flat"] = (0.8 + 0.4 * RNG.random(shape)).astype(numpy.float32)
        case["flat"] = save("int_%s_flat.npy" % name, case["_flat"])
    if frames is None:
        ref = integrate(ai, image, case)
    else:
        ref = numpy.stack([integrate(ai, image[k], case) for k in range(frames)])
    case["reference"] = save("int_%s_ref.npy" % name, ref)
    return case


def segmented_case(name, method):
    """2x2 segments of 12x16 pixels, gaps of 3 rows and 4 columns, as livedrp's placement."""
    seg_rows, seg_cols = 12, 16
    placement = [dict(x_px=0, y_px=0), dict(x_px=20, y_px=0), dict(x_px=0, y_px=15),
                 dict(x_px=20, y_px=15)]
    shape = (15 + seg_rows, 20 + seg_cols)
    det = Detector(pixel1=100e-6, pixel2=100e-6, max_shape=shape)
    ai = AzimuthalIntegrator(dist=0.05, poni1=1.31e-3, poni2=1.77e-3, rot1=0.05, rot2=-0.03,
                             rot3=0.2, wavelength=1.3e-10, detector=det)
    poni = os.path.join(HERE, "seg4.poni")
    if os.path.exists(poni):
        os.remove(poni)  # pyFAI's write() appends
    ai.write(poni)
    ai = pyFAI.load(poni)
    assembled = synthetic(ai, shape)
    gap = numpy.ones(shape, dtype=numpy.uint8)
    segments = numpy.zeros((4, seg_rows, seg_cols), dtype=numpy.float32)
    seg_mask = (RNG.random((4, seg_rows, seg_cols)) < 0.04).astype(numpy.uint8)
    for k, p in enumerate(placement):
        y, x = p["y_px"], p["x_px"]
        segments[k] = assembled[y:y + seg_rows, x:x + seg_cols]
        gap[y:y + seg_rows, x:x + seg_cols] = seg_mask[k]
    assembled[gap != 0] = 0.0
    case = dict(name=name, poni="seg4.poni", _poni_path=poni, unit="q_nm^-1", npt=24,
                polarization=0.99, mask=True, _mask=gap, method=method,
                segments=dict(count=4, rows=seg_rows, cols=seg_cols, placement=placement))
    case["input"] = save("int_%s_input.npy" % name, segments)
    case["mask"] = save("int_%s_mask.npy" % name, seg_mask)
    case["reference"] = save("int_%s_ref.npy" % name, integrate(ai, assembled, case))
    return case


def main():
    assert pyFAI.version.startswith("0.21"), pyFAI.version
    cases = [
        plain_case("untilted_q", "untilted.poni", (48, 64), unit="q_nm^-1", npt=40),
        plain_case("untilted_full", "untilted.poni", (48, 64), unit="2th_deg", npt=30,
                   radial_range=[0.4, 2.6], azimuth_range=[-120.0, 60.0], polarization=0.95,
                   mask=True, dark=True, flat=True, dummy=-1.0),
        plain_case("tilted_r", "tilted.poni", (30, 40), unit="r_mm", npt=25, solid_angle=False,
                   polarization=-0.5, mask=True),
        plain_case("tilted_qa_azim", "tilted.poni", (30, 40), unit="q_A^-1", npt=20,
                   radial_range=[0.8, 1.2], error_model="azimuthal", mask=True,
                   pyfai_method=["no", "csr", "cython"]),
        plain_case("offdet_tth", "offdet.poni", (20, 28), unit="2th_deg", npt=16,
                   azimuth_range=[-94.0, -90.0], polarization=0.5, dummy=-2.0, delta_dummy=0.5),
        plain_case("stack_q", "untilted.poni", (48, 64), unit="q_nm^-1", npt=20, frames=3,
                   polarization=0.9, mask=True),
        segmented_case("seg4", "no"),
        # Bounding-box splitting, pyFAI's ("bbox", "csr", "cython").
        plain_case("untilted_q_bbox", "untilted.poni", (48, 64), unit="q_nm^-1", npt=40,
                   method="bbox", mask=True),
        plain_case("tilted_tth_bbox", "tilted.poni", (30, 40), unit="2th_deg", npt=25,
                   method="bbox", azimuth_range=[8.0, 20.0], polarization=0.9, dark=True,
                   flat=True),
        plain_case("offdet_r_bbox", "offdet.poni", (20, 28), unit="r_mm", npt=16, method="bbox",
                   radial_range=[112.5, 116.0], solid_angle=False),
        plain_case("tilted_qa_azim_bbox", "tilted.poni", (30, 40), unit="q_A^-1", npt=20,
                   method="bbox", radial_range=[0.8, 1.2], error_model="azimuthal", mask=True),
        segmented_case("seg4_bbox", "bbox"),
        # Sigma clipping, pyFAI's sigma_clip_ng (CSR engine, no splitting).
        plain_case("clip_poisson", "untilted.poni", (48, 64), unit="q_nm^-1", npt=30,
                   radial_range=[0.3, 2.4], polarization=0.95, mask=True,
                   sigma_clip=dict(cutoff=3.0, max_iter=5)),
        plain_case("clip_azim", "tilted.poni", (30, 40), unit="2th_deg", npt=20,
                   radial_range=[5.3, 8.2], error_model="azimuthal",
                   sigma_clip=dict(cutoff=2.5, max_iter=3)),
    ]
    public = [{k: v for k, v in c.items() if not k.startswith("_")} for c in cases]
    with open(os.path.join(HERE, "integrate_cases.json"), "w") as f:
        json.dump(public, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
