#pragma once
// Reading livedrp's CXI hit files back through the HDF5 C API (not the engine's code), for the
// live-writer suites (test_live_writers on the CPU backend, test_gpu_live_writers on CUDA), and
// the check of one frame against an event calibrated and searched in the test.
#include <hdf5.h>
#include <QString>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/detector.hpp"
#include "peaks/peakfinder8.hpp"

namespace livedrp::hit_file_test {

// A dataset read whole: its shape and its values converted to T by HDF5.
template <typename T>
struct H5Read {
  std::vector<hsize_t> shape;
  std::vector<T> values;
  bool ok = false;
};

template <typename T>
H5Read<T> read_dataset(hid_t file, const char* path, hid_t memory_type) {
  H5Read<T> out;
  const hid_t dataset = H5Dopen2(file, path, H5P_DEFAULT);
  if (dataset < 0) return out;
  const hid_t space = H5Dget_space(dataset);
  out.shape.resize(std::size_t(H5Sget_simple_extent_ndims(space)));
  H5Sget_simple_extent_dims(space, out.shape.data(), nullptr);
  std::size_t n = 1;
  for (hsize_t d : out.shape) n *= std::size_t(d);
  out.values.resize(n);
  out.ok = n == 0 ||
           H5Dread(dataset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.values.data()) >= 0;
  H5Sclose(space);
  H5Dclose(dataset);
  return out;
}

// A string attribute of `object_path` (variable or fixed length), "" when absent.
inline std::string read_string_attribute(hid_t file, const char* object_path, const char* name) {
  if (H5Aexists_by_name(file, object_path, name, H5P_DEFAULT) <= 0) return "";
  const hid_t attribute = H5Aopen_by_name(file, object_path, name, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t type = H5Aget_type(attribute);
  std::string value;
  if (H5Tis_variable_str(type) > 0) {
    char* text = nullptr;
    const hid_t memory = H5Tget_native_type(type, H5T_DIR_ASCEND);
    if (H5Aread(attribute, memory, &text) >= 0 && text) value = text;
    if (text) H5free_memory(text);
    H5Tclose(memory);
  } else if (H5Tget_class(type) == H5T_STRING) {
    std::string text(H5Tget_size(type), '\0');
    if (H5Aread(attribute, type, text.data()) >= 0) value = text.c_str();
  }
  H5Tclose(type);
  H5Aclose(attribute);
  return value;
}

inline constexpr std::array<const char*, 6> kPeakFields = {
    "peakXPosRaw",      "peakYPosRaw", "peakTotalIntensity",
    "peakMaximumValue", "peakSNR",     "peakNPixels"};

// One frame of a hit file.
struct HitFrame {
  std::string file;
  std::uint64_t sequence = 0, pulse_id = 0;
  std::vector<float> image;
  int n_peaks = 0;
  std::array<std::vector<float>, kPeakFields.size()> fields;  // max_peaks values each
};

// Every frame of `path`, in order; `problem` says what could not be read or has the wrong shape
// (slab height x width images, max_peaks columns).
inline std::vector<HitFrame> read_hit_frames(const std::string& path, hsize_t height, hsize_t width,
                                             hsize_t max_peaks, QString& problem) {
  std::vector<HitFrame> frames;
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) {
    problem = QString::fromStdString("cannot open " + path);
    return frames;
  }
  const auto data = read_dataset<float>(file, "/entry_1/data_1/data", H5T_NATIVE_FLOAT);
  const auto n_peaks =
      read_dataset<std::int32_t>(file, "/entry_1/result_1/nPeaks", H5T_NATIVE_INT32);
  const auto pulse = read_dataset<std::uint64_t>(file, "/entry_1/pulse_id", H5T_NATIVE_UINT64);
  const auto sequence =
      read_dataset<std::uint64_t>(file, "/entry_1/event_sequence", H5T_NATIVE_UINT64);
  std::vector<H5Read<float>> fields;
  for (const char* name : kPeakFields)
    fields.push_back(read_dataset<float>(file, ("/entry_1/result_1/" + std::string(name)).c_str(),
                                         H5T_NATIVE_FLOAT));
  H5Fclose(file);
  if (!data.ok || !n_peaks.ok || !pulse.ok || !sequence.ok || n_peaks.shape.size() != 1) {
    problem = QString::fromStdString("a dataset of " + path + " cannot be read");
    return frames;
  }
  const hsize_t n = n_peaks.shape[0];
  if (data.shape != std::vector<hsize_t>{n, height, width} || pulse.shape.at(0) != n ||
      sequence.shape.at(0) != n) {
    problem = QString::fromStdString("shapes of " + path + " disagree");
    return frames;
  }
  for (const auto& field : fields)
    if (!field.ok || field.shape != std::vector<hsize_t>{n, max_peaks}) {
      problem = QString::fromStdString("a peak array of " + path + " has the wrong shape");
      return frames;
    }
  const std::size_t pixels = std::size_t(height * width);
  for (hsize_t j = 0; j < n; ++j) {
    HitFrame f;
    f.file = path;
    f.sequence = sequence.values[j];
    f.pulse_id = pulse.values[j];
    f.image.assign(data.values.begin() + long(j * pixels),
                   data.values.begin() + long((j + 1) * pixels));
    f.n_peaks = n_peaks.values[j];
    for (std::size_t k = 0; k < fields.size(); ++k)
      f.fields[k].assign(fields[k].values.begin() + long(j * max_peaks),
                         fields[k].values.begin() + long((j + 1) * max_peaks));
    frames.push_back(std::move(f));
  }
  return frames;
}

// Empty when `frame` holds `calibrated` bit for bit and `list` (zero-padded past its length);
// else what differs.
inline QString compare_hit_frame(const HitFrame& frame, const std::vector<float>& calibrated,
                                 const peaks::PeakList& list) {
  if (frame.image.size() != calibrated.size() ||
      std::memcmp(frame.image.data(), calibrated.data(), calibrated.size() * sizeof(float)) != 0)
    return QString("the image of event %1 is not its calibration").arg(frame.sequence);
  if (std::size_t(frame.n_peaks) != list.peaks.size())
    return QString("event %1: nPeaks %2, expected %3")
        .arg(frame.sequence)
        .arg(frame.n_peaks)
        .arg(list.peaks.size());
  const std::size_t columns = frame.fields[0].size();
  for (std::size_t p = 0; p < columns; ++p) {
    const bool listed = p < list.peaks.size();
    const peaks::Peak none{};
    const peaks::Peak& e = listed ? list.peaks[p] : none;
    const float want[kPeakFields.size()] = {e.fs,        e.ss,  e.intensity,
                                            e.max_value, e.snr, float(e.num_pixels)};
    for (std::size_t q = 0; q < kPeakFields.size(); ++q)
      if (frame.fields[q][p] != want[q])
        return QString("event %1: %2[%3] = %4, expected %5")
            .arg(frame.sequence)
            .arg(kPeakFields[q])
            .arg(p)
            .arg(frame.fields[q][p])
            .arg(want[q]);
  }
  return {};
}

// The average image a run of `frames` should write (--write-average), computed here: per pixel the
// mean of the finite values (NaN where none), placed from the detector's placement (segments not
// turned: pixel (r, c) of segment s at (y_px + r, x_px + c)), NaN in the gaps.
struct ExpectedAverage {
  std::vector<float> mean;   // engine pixel order
  std::vector<float> image;  // height x width
  std::size_t height = 0, width = 0;
  // The assembled image pixel of each engine pixel.
  std::vector<std::size_t> image_pixel;
};

inline ExpectedAverage expected_average(const DetectorDescription& detector,
                                        const std::vector<std::vector<float>>& frames) {
  ExpectedAverage out;
  std::vector<double> sum(detector.pixels(), 0.0);
  std::vector<std::uint32_t> count(detector.pixels(), 0);
  for (const auto& frame : frames)
    for (std::size_t p = 0; p < frame.size(); ++p)
      if (std::isfinite(frame[p])) {
        sum[p] += double(frame[p]);
        ++count[p];
      }
  out.mean.resize(detector.pixels());
  for (std::size_t p = 0; p < out.mean.size(); ++p)
    out.mean[p] = count[p] ? float(sum[p] / double(count[p])) : std::nanf("");
  for (const SegmentPlacement& s : detector.placement) {
    out.height = std::max(out.height, std::size_t(s.y_px) + std::size_t(detector.rows));
    out.width = std::max(out.width, std::size_t(s.x_px) + std::size_t(detector.cols));
  }
  out.image.assign(out.height * out.width, std::nanf(""));
  out.image_pixel.resize(detector.pixels());
  for (int s = 0; s < detector.segments; ++s)
    for (int r = 0; r < detector.rows; ++r)
      for (int c = 0; c < detector.cols; ++c) {
        const std::size_t p = (std::size_t(s) * detector.rows + r) * detector.cols + c;
        out.image_pixel[p] = (std::size_t(detector.placement[s].y_px) + r) * out.width +
                             std::size_t(detector.placement[s].x_px) + c;
        out.image[out.image_pixel[p]] = out.mean[p];
      }
  return out;
}

}  // namespace livedrp::hit_file_test
