#pragma once
// peakfinder8's parameters, with the names Cheetah, OM and CrystFEL users know, and their checks.
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace livedrp::peaks {

struct PeakFinderParams {
  int max_num_peaks = 2048;  // peaks reported per event (more are counted, not listed)
  // Floor of every radius bin's upper threshold, in the calibrated unit: keV for ePix10ka and
  // Jungfrau (calibration multiplies by keV per ADU). Why not 0: SFX background is photon
  // counting (a few hundredths of a photon per pixel, a quarter on powder rings), so after the
  // radial statistics clip the photons away a bin's mean and sigma are those of the empty
  // pixels' electronic noise, and mean + 5 sigma sits below ONE photon: every background photon
  // seeds, and two side by side make a peak (about 5,600 an event on the simulated Jungfrau 4M).
  // 30 keV is just above three 9.5 keV photons in one pixel: a pixel must hold four, which the
  // background at 0.25 photons per pixel does once in ~8,000 pixels, two neighbours almost
  // never, while a Bragg peak of 50 photons still puts several pixels there. At other beam
  // energies scale it with the photon energy (about 3 photons).
  // tests/test_peak_defaults.cpp measures it on the simulator's defaults.
  float adc_threshold = 30;
  // Of the radial statistics' thresholds and of each peak (its intensity over the local ring's
  // sigma): 5 as in Cheetah and OM. With adc_threshold doing the photon counting, it rejects
  // what stands out of the noise only where the noise is large.
  float minimum_snr = 5;
  // A Bragg reflection spreads over several pixels (point spread and mosaicity: sigma 0.6-1.5 px
  // in the simulator); one lone pixel, however bright, is a zinger or stray photon burst, not a
  // peak. 2 is the smallest count that says so.
  int min_pixel_count = 2;
  int max_pixel_count = 200;
  // Pixels; the background ring reaches twice this from the centroid: 6 px clears the 4-sigma
  // support of the widest peak (1.5 px) and still measures the background next to it.
  int local_bg_radius = 3;
  float min_res = 0;  // pixels from the beam: only pixels with min_res < r < max_res count
  float max_res = 1e9f;
  int iterations = 5;  // of the radial statistics (5 in the reference)
  int min_peaks_for_hit = 10;
};

// Empty when the parameters are usable, else the first problem, naming the parameter and value.
std::string validate(const PeakFinderParams& params);

// Reads the parameter names above from a JSON object; names not given keep their defaults.
// Throws InputError naming `origin`, the field and what is wrong (unknown names are errors, so
// that a misspelt parameter is not silently ignored).
PeakFinderParams parse_peak_params(const nlohmann::json& json, const std::string& origin);
PeakFinderParams load_peak_params(const std::string& path);
nlohmann::json to_json(const PeakFinderParams& params);

}  // namespace livedrp::peaks
