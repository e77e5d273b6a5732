#pragma once
// peakfinder8's parameters, with the names Cheetah, OM and CrystFEL users know, and their checks.
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace livedrp::peaks {

struct PeakFinderParams {
  int max_num_peaks = 2048;  // peaks reported per event (more are counted, not listed)
  float adc_threshold = 0;   // floor of every radius bin's upper threshold (data units)
  float minimum_snr = 5;     // of the radial statistics' thresholds and of each peak
  int min_pixel_count = 2;
  int max_pixel_count = 200;
  int local_bg_radius = 3;  // pixels; the background ring reaches twice this from the centroid
  float min_res = 0;        // pixels from the beam: only pixels with min_res < r < max_res count
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
