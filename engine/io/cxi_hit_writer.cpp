#include "io/cxi_hit_writer.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <system_error>
#include <utility>

#include "core/error.hpp"
#include "io/hdf5_handle.hpp"
#include "io/hdf5_writing.hpp"
#include "io/segment_names.hpp"

namespace livedrp::io {
namespace {

// CXI's own version field; 1.5 is the last CXI file format release.
constexpr std::int64_t kCxiVersion = 150;

}  // namespace

struct CxiHitWriter::File {
  explicit File(const std::filesystem::path& path, const CxiHitOptions& o) : where{path.string()} {
    handle = H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
    if (handle < 0)
      throw InputError("cannot create hit file '" + path.string() +
                       "' (it exists, or the folder is not writable)");
    try {
      build(o);
    } catch (...) {
      release();
      throw;
    }
  }
  ~File() { release(); }

  void build(const CxiHitOptions& o) {
    h5_string_attribute(where, handle, "pipeline_config", o.pipeline_config_json);
    h5_string_attribute(where, handle, "creator", "livedrp-engine");
    h5_int_field(where, handle, "cxi_version", kCxiVersion);
    const H5Handle entry(h5_group(where, handle, "entry_1", "NXentry"), H5Gclose);
    h5_string_attribute(where, entry.get(), "default", "data_1");
    if (!o.detector_name.empty())
      h5_string_field(where, entry.get(), "detector_name", o.detector_name);
    const H5Handle data(h5_group(where, entry.get(), "data_1", "NXdata"), H5Gclose);
    h5_string_attribute(where, data.get(), "signal", "data");
    image.emplace(where, data.get(), "data", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT,
                  std::vector<hsize_t>{hsize_t(o.slab_height), hsize_t(o.slab_width)});
    h5_string_attribute(where, image->id(), "interpretation", "image");
    if (!o.image_unit.empty()) h5_string_attribute(where, image->id(), "units", o.image_unit);

    const H5Handle result(h5_group(where, entry.get(), "result_1", ""), H5Gclose);
    n_peaks.emplace(where, result.get(), "nPeaks", H5T_STD_I32LE, H5T_NATIVE_INT32,
                    std::vector<hsize_t>{});
    const std::vector<hsize_t> columns{hsize_t(std::max(1, o.max_peaks))};
    for (std::size_t k = 0; k < kPeakFields; ++k)
      peak_fields[k].emplace(where, result.get(), kPeakFieldNames[k], H5T_IEEE_F32LE,
                             H5T_NATIVE_FLOAT, columns);
    pulse_id.emplace(where, entry.get(), "pulse_id", H5T_STD_U64LE, H5T_NATIVE_UINT64,
                     std::vector<hsize_t>{});
    sequence.emplace(where, entry.get(), "event_sequence", H5T_STD_U64LE, H5T_NATIVE_UINT64,
                     std::vector<hsize_t>{});
    timestamp.emplace(where, entry.get(), "timestamp_ns", H5T_STD_I64LE, H5T_NATIVE_INT64,
                      std::vector<hsize_t>{});
  }

  void close() { h5_close_file(where, handle, all_datasets()); }
  // Closes whatever is open without reporting: the error that led here is reported instead.
  void release() { h5_release_file(handle, all_datasets()); }

  H5RowDatasets all_datasets() {
    H5RowDatasets all{&image, &n_peaks, &pulse_id, &sequence, &timestamp};
    for (auto& field : peak_fields) all.push_back(&field);
    return all;
  }

  static constexpr std::size_t kPeakFields = 6;
  static constexpr const char* kPeakFieldNames[kPeakFields] = {
      "peakXPosRaw",      "peakYPosRaw", "peakTotalIntensity",
      "peakMaximumValue", "peakSNR",     "peakNPixels"};

  H5Where where;
  hid_t handle = -1;
  std::optional<H5RowDataset> image, n_peaks, pulse_id, sequence, timestamp;
  std::optional<H5RowDataset> peak_fields[kPeakFields];
};

CxiHitWriter::CxiHitWriter(CxiHitOptions options) : options_(std::move(options)) {
  if (options_.hits_per_file < 1) throw InputError("--hits-per-file must be at least 1, got 0");
  if (options_.slab_height < 1 || options_.slab_width < 1)
    throw InputError("hit files: the detector has no slab (" +
                     std::to_string(options_.slab_height) + " x " +
                     std::to_string(options_.slab_width) + ")");
  std::error_code error;
  std::filesystem::create_directories(options_.directory, error);
  if (error || !std::filesystem::is_directory(options_.directory))
    throw InputError("--write-hits: cannot create folder '" + options_.directory.string() + "'" +
                     (error ? ": " + error.message() : std::string()));
  row_.resize(std::size_t(std::max(1, options_.max_peaks)));
  QuietHdf5Errors quiet;
  try {
    open_next();
  } catch (const InputError& e) {
    throw InputError(std::string("--write-hits: ") + e.what());
  }
}

CxiHitWriter::~CxiHitWriter() {
  try {
    close();
  } catch (...) {
    // close() explicitly to see the error
  }
}

void CxiHitWriter::open_next() {
  const std::filesystem::path path =
      options_.directory /
      cxi_hit_file_name(options_.run, options_.segment, files_.size(), options_.rank);
  file_ = std::make_unique<File>(path, options_);
  files_.push_back(path);
}

std::size_t CxiHitWriter::append(const CxiHit& hit) {
  QuietHdf5Errors quiet;
  if (!file_) open_next();
  File& f = *file_;
  f.image->append(hit.image);
  const std::vector<peaks::Peak>& list = *hit.peaks;
  const std::size_t listed = std::min(list.size(), row_.size());
  const std::int32_t count = std::int32_t(listed);
  f.n_peaks->append(&count);
  for (std::size_t k = 0; k < File::kPeakFields; ++k) {
    std::fill(row_.begin(), row_.end(), 0.0f);
    for (std::size_t p = 0; p < listed; ++p) {
      const peaks::Peak& peak = list[p];
      const float values[File::kPeakFields] = {peak.fs,        peak.ss,  peak.intensity,
                                               peak.max_value, peak.snr, float(peak.num_pixels)};
      row_[p] = values[k];
    }
    f.peak_fields[k]->append(row_.data());
  }
  f.pulse_id->append(&hit.header.pulse_id);
  f.sequence->append(&hit.header.sequence);
  f.timestamp->append(&hit.header.timestamp_ns);
  ++hits_;
  // Full: closed now, so the file is complete on disk; the next hit opens the next one.
  if (f.image->rows() >= options_.hits_per_file) close();
  return list.size() - listed;
}

void CxiHitWriter::close() {
  if (!file_) return;
  QuietHdf5Errors quiet;
  auto file = std::move(file_);
  file->close();
}

}  // namespace livedrp::io
