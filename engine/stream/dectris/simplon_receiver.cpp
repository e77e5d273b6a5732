#include "stream/dectris/simplon_receiver.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace livedrp::stream::dectris {
namespace {

// The engine encoding that holds images of this element type as they are sent.
std::optional<RawEncoding> encoding_for(const ElementType& type) {
  if (!type.little_endian) return std::nullopt;
  if (type.is_float) return type.size == 4 ? std::optional(RawEncoding::Float32) : std::nullopt;
  if (type.is_signed) return type.size == 4 ? std::optional(RawEncoding::Int32) : std::nullopt;
  if (type.size == 2) return RawEncoding::Uint16;
  if (type.size == 4) return RawEncoding::Uint32;
  return std::nullopt;
}

// Whether a detector of `encoding` reads images of `type` word for word: the uint16 detectors
// (ePix10ka, Jungfrau raw words) take uint16 images, the others their own type.
bool encoding_takes(RawEncoding encoding, const ElementType& type) {
  const std::optional<RawEncoding> native = encoding_for(type);
  if (!native) return false;
  if (*native == RawEncoding::Uint16)
    return encoding == RawEncoding::Uint16 || encoding == RawEncoding::Epix10ka ||
           encoding == RawEncoding::Jungfrau;
  return encoding == *native;
}

std::string shape_text(std::uint64_t rows, std::uint64_t cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}

std::string image_name(std::uint64_t image_id, std::uint64_t series_id) {
  return "image " + std::to_string(image_id) + " of series " + std::to_string(series_id);
}

}  // namespace

SimplonReceiver::SimplonReceiver(std::string endpoint, std::optional<DetectorDescription> detector,
                                 std::size_t max_message_bytes, EventQueue& queue)
    : endpoint_(std::move(endpoint)),
      detector_named_(detector.has_value()),
      max_message_bytes_(max_message_bytes),
      queue_(queue),
      decode_pool_(std::make_unique<ThreadPool>(
          std::clamp(std::thread::hardware_concurrency() / 2, 1u, 8u))),
      detector_(std::move(detector)) {
  if (detector_) queue_.set_event_bytes(detector_->raw_event_bytes());
}

bool SimplonReceiver::has_detector() const {
  const std::lock_guard lock(mutex_);
  return detector_.has_value();
}

const DetectorDescription& SimplonReceiver::detector() const {
  const std::lock_guard lock(mutex_);
  if (!detector_) throw RuntimeFault("dectris " + endpoint_ + ": the detector is not known yet");
  return *detector_;
}

StreamCounts SimplonReceiver::counts() const {
  const std::lock_guard lock(mutex_);
  return counts_;
}

std::shared_ptr<const StartMessage> SimplonReceiver::start_message() const {
  const std::lock_guard lock(mutex_);
  return last_start_;
}

std::shared_ptr<const PixelMask> SimplonReceiver::pixel_mask() const {
  const std::lock_guard lock(mutex_);
  return pixel_mask_;
}

std::optional<AcquisitionSummary> SimplonReceiver::acquisition() const {
  const std::lock_guard lock(mutex_);
  if (!acquisition_) return std::nullopt;
  return acquisition_->summary;
}

void SimplonReceiver::reject(const std::string& reason, const std::string& what) {
  const std::lock_guard lock(mutex_);
  ++counts_.rejected[reason];
  counts_.last_problem = "dectris " + endpoint_ + ": " + what + " (" + reason + ")";
}

void SimplonReceiver::reject_image(const std::string& reason, const std::string& what) {
  reject(reason, what);
  const std::lock_guard lock(mutex_);
  ++acquisition_->summary.images_rejected;
}

void SimplonReceiver::note(const std::string& what) {
  const std::lock_guard lock(mutex_);
  counts_.last_problem = "dectris " + endpoint_ + ": " + what;
}

void SimplonReceiver::handle(std::span<const std::byte> message) {
  // Counted once handled, so that a snapshot never shows a message whose outcome is not in it.
  struct CountWhenHandled {
    SimplonReceiver& receiver;
    ~CountWhenHandled() {
      const std::lock_guard lock(receiver.mutex_);
      ++receiver.counts_.messages;
    }
  } count_when_handled{*this};
  if (message.size() > max_message_bytes_) {
    reject("oversized", "a message of " + std::to_string(message.size()) +
                            " bytes, larger than the limit of " +
                            std::to_string(max_message_bytes_));
    return;
  }
  try {
    DecodeResult decoded = decode_message(message);
    if (!decoded.message) {
      reject(decoded.problem.reason, decoded.problem.what);
      return;
    }
    handle_decoded(*decoded.message);
  } catch (const std::exception& error) {
    // Decoding reports what is wrong with the bytes as problems; this is what is left (memory
    // for a hostile message's items): still about this one message, never the engine's end.
    reject("malformed", std::string("cannot decode the message: ") + error.what());
  }
}

void SimplonReceiver::handle_decoded(Message& message) {
  if (auto* start = std::get_if<StartMessage>(&message)) return handle_start(std::move(*start));
  if (auto* image = std::get_if<ImageMessage>(&message)) return handle_image(*image);
  if (auto* end = std::get_if<EndMessage>(&message)) return handle_end(*end);
  const auto& other = std::get<OtherMessage>(message);
  reject("unsupported", "a message of type '" + other.type +
                            "', which livedrp does not use (start, image and end are used)");
}

std::optional<DetectorDescription> SimplonReceiver::detector_from(const StartMessage& start,
                                                                  const ElementType& type,
                                                                  Problem& problem) const {
  const std::optional<RawEncoding> encoding = encoding_for(type);
  if (!encoding) {
    problem = {"unsupported", type.name() +
                                  " images are not supported (uint16, uint32, int32 and "
                                  "float32, little-endian, are)"};
    return std::nullopt;
  }
  // Both Dectris and Jungfraujoch state pixel sizes in metres; a centimetre-wide pixel means
  // another unit, which would silently scale every geometry downstream.
  const std::optional<double> pixel_m = start.pixel_size_x_m;
  if (!pixel_m || !(*pixel_m > 0) || *pixel_m > 1e-2) {
    problem = {"malformed", "start message of series " + std::to_string(start.series_id) +
                                (pixel_m ? ": pixel_size_x " + std::to_string(*pixel_m) +
                                               " is not a pixel size in metres"
                                         : ": pixel_size_x is missing") +
                                "; the detector description needs it (or name the detector)"};
    return std::nullopt;
  }
  const int rows = int(start.image_size_y), cols = int(start.image_size_x);
  nlohmann::json description = {
      {"schema_version", 1},
      {"name", "dectris"},
      {"description",
       "Dectris SIMPLON stream " + endpoint_ +
           (start.detector_description.empty() ? "" : ": " + start.detector_description) +
           (start.detector_serial_number.empty() ? "" : " (" + start.detector_serial_number + ")")},
      {"raw_encoding", std::string(to_string(*encoding))},
      {"segments", 1},
      {"segment_shape", {rows, cols}},
      {"pixel_size_um", std::round(*pixel_m * 1e9) / 1e3},  // to the nanometre
      {"asic_shape", {rows, cols}},
      {"bank_columns", 0},
      {"gain_modes",
       {{{"name", *encoding == RawEncoding::Float32 ? "calibrated" : "counts"},
         {"nominal_adu_per_kev", 1.0}}}},
      {"placement", {{{"x_px", 0}, {"y_px", 0}, {"rotation_deg", 0}}}}};
  try {
    // Through the same validation as every description file.
    return parse_detector_description(
        description, "from the start message of series " + std::to_string(start.series_id));
  } catch (const InputError& error) {
    problem = {"malformed", error.what()};
    return std::nullopt;
  }
}

std::string SimplonReceiver::expected_shape() const {
  const DetectorDescription& d = *detector_;
  std::string text =
      (detector_named_ ? "the engine's detector " + d.name : "the stream's detector") + " is " +
      shape_text(std::uint64_t(d.segments) * d.rows, d.cols);
  if (d.segments > 1)
    text += " (" + std::to_string(d.segments) + " segments of " + shape_text(d.rows, d.cols) + ")";
  return text + " " + std::string(to_string(d.encoding));
}

void SimplonReceiver::handle_start(StartMessage&& message) {
  Acquisition next;
  next.start = std::make_shared<const StartMessage>(std::move(message));
  const StartMessage& start = *next.start;
  next.summary.series_id = start.series_id;
  next.summary.series_unique_id = start.series_unique_id;
  next.summary.images_announced = start.number_of_images;

  if (acquisition_ && !acquisition_->summary.ended)
    note("series " + std::to_string(start.series_id) + " started before series " +
         std::to_string(acquisition_->summary.series_id) + " ended (its end message is missing)");
  // Replaces the current acquisition (mutex_ held); one that never ended has its unreceived
  // images counted first.
  const auto replace_acquisition = [&](Acquisition&& replacement) {
    if (acquisition_ && !acquisition_->summary.ended)
      count_unreceived_images("series " + std::to_string(start.series_id) +
                              " started before its end message came");
    acquisition_ = std::move(replacement);
  };

  const std::string series = "start message of series " + std::to_string(start.series_id);
  const std::string shape = shape_text(start.image_size_y, start.image_size_x);
  // The mask of the channel images are taken from (the first announced one), else the only one.
  // It points into the start message, shared with it (a 16M-pixel mask is 64 MB: no copy).
  std::shared_ptr<const PixelMask> mask;
  for (const PixelMask& candidate : start.pixel_masks)
    if (start.channels.empty() || candidate.channel == start.channels.front()) {
      mask = std::shared_ptr<const PixelMask>(next.start, &candidate);
      break;
    }
  if (!mask && start.pixel_masks.size() == 1)
    mask = std::shared_ptr<const PixelMask>(next.start, &start.pixel_masks.front());
  if (mask && (mask->rows != start.image_size_y || mask->cols != start.image_size_x)) {
    reject("malformed", series + ": pixel mask '" + mask->channel + "' is " +
                            shape_text(mask->rows, mask->cols) + ", the images " + shape);
    return;
  }

  if (detector_) {
    // A detector's images are its segments stacked: segments x rows by cols.
    const DetectorDescription& d = *detector_;
    if (start.image_size_y != std::uint64_t(d.segments) * d.rows ||
        start.image_size_x != std::uint64_t(d.cols)) {
      next.refusal = series + ": images of " + shape + ", " + expected_shape();
    } else if (start.image_type && !encoding_takes(d.encoding, *start.image_type)) {
      next.refusal = series + ": images of " + shape + " " + start.image_type->name() + ", " +
                     expected_shape();
    }
  } else if (start.image_type) {
    Problem problem;
    std::optional<DetectorDescription> described = detector_from(start, *start.image_type, problem);
    if (!described) {
      reject(problem.reason, series + ": " + problem.what);
      return;
    }
    const std::lock_guard lock(mutex_);
    detector_ = std::move(described);
    queue_.set_event_bytes(detector_->raw_event_bytes());
  }

  if (!next.refusal.empty()) {
    next.summary.refused = true;
    {
      const std::lock_guard lock(mutex_);
      replace_acquisition(std::move(next));
    }
    reject("wrong_detector", acquisition_->refusal);
    return;
  }

  const std::lock_guard lock(mutex_);
  ++counts_.acquisitions;
  last_start_ = next.start;
  pixel_mask_ = std::move(mask);
  replace_acquisition(std::move(next));
}

void SimplonReceiver::handle_image(const ImageMessage& image) {
  const std::string name = image_name(image.image_id, image.series_id);
  if (!acquisition_) {
    reject("out_of_acquisition", name + " before any start message");
    return;
  }
  if (acquisition_->summary.ended && acquisition_->summary.series_id == image.series_id) {
    reject("out_of_acquisition", name + " after the end of its series");
    return;
  }
  if (acquisition_->summary.ended || acquisition_->summary.series_id != image.series_id) {
    reject("out_of_acquisition", name + " outside the acquisition (the current series is " +
                                     std::to_string(acquisition_->summary.series_id) +
                                     (acquisition_->summary.ended ? ", ended" : "") + ")");
    return;
  }
  if (acquisition_->summary.refused) {
    reject_image("wrong_detector", name + " of a refused acquisition: " + acquisition_->refusal);
    return;
  }
  {
    const std::lock_guard lock(mutex_);
    note_image_id(image.image_id);
  }

  // The channel: the first one the start message announced, else the first one sent.
  const StartMessage& start = *acquisition_->start;
  const ImageChannel* channel = &image.channels.front();
  if (!start.channels.empty())
    for (const ImageChannel& candidate : image.channels)
      if (candidate.name == start.channels.front()) {
        channel = &candidate;
        break;
      }
  const MultiDimArray& data = channel->data;
  if (data.dimensions.size() != 2) {
    reject_image("malformed", name + ": data '" + channel->name + "' has " +
                                  std::to_string(data.dimensions.size()) +
                                  " dimensions, expected 2");
    return;
  }
  const std::string shape = shape_text(data.dimensions[0], data.dimensions[1]);
  if (data.dimensions[0] != start.image_size_y || data.dimensions[1] != start.image_size_x) {
    reject_image("wrong_detector", name + " is " + shape + " " + data.type.name() +
                                       ", its start message announced " +
                                       shape_text(start.image_size_y, start.image_size_x));
    return;
  }
  if (start.image_type && !(data.type == *start.image_type)) {
    reject_image("wrong_detector", name + " is " + data.type.name() +
                                       ", its start message announced " + start.image_type->name());
    return;
  }
  if (!detector_) {
    // Eiger and Pilatus say the element type only here: the first image completes the detector.
    Problem problem;
    std::optional<DetectorDescription> described = detector_from(start, data.type, problem);
    if (!described) {
      reject_image(problem.reason, name + ": " + problem.what);
      return;
    }
    const std::lock_guard lock(mutex_);
    detector_ = std::move(described);
    queue_.set_event_bytes(detector_->raw_event_bytes());
  }
  if (!encoding_takes(detector_->encoding, data.type)) {
    reject_image("wrong_detector",
                 name + " is " + shape + " " + data.type.name() + ", " + expected_shape());
    return;
  }

  std::byte* buffer = queue_.acquire_buffer();
  if (!buffer) {
    const std::lock_guard lock(mutex_);
    ++counts_.dropped["engine_busy"];
    ++acquisition_->summary.images_received;
    return;
  }
  const Problem problem = decode_array(
      data, std::span<std::byte>(buffer, detector_->raw_event_bytes()), decode_pool_.get());
  if (!problem.reason.empty()) {
    queue_.give_back(buffer);
    reject_image(problem.reason, name + ": " + problem.what);
    return;
  }
  queue_.publish(buffer, image.image_id, timestamp_ns(image));
  const std::lock_guard lock(mutex_);
  ++counts_.events;
  ++acquisition_->summary.images_received;
}

void SimplonReceiver::handle_end(const EndMessage& end) {
  const std::string name = "end message of series " + std::to_string(end.series_id);
  if (!acquisition_ || acquisition_->summary.ended ||
      acquisition_->summary.series_id != end.series_id) {
    reject("out_of_acquisition",
           name + (acquisition_ && !acquisition_->summary.ended
                       ? " during series " + std::to_string(acquisition_->summary.series_id)
                       : " without its start message"));
    return;
  }
  // An end before all announced images is a normal stop for Dectris (disarm, abort): the
  // acquisition ends with the images that came, and those that did not are counted and named.
  const std::lock_guard lock(mutex_);
  acquisition_->summary.ended = true;
  if (acquisition_->summary.refused) return;
  ++counts_.acquisitions_ended;
  count_unreceived_images("its end message came");
}

void SimplonReceiver::note_image_id(std::uint64_t image_id) {
  Acquisition& acquisition = *acquisition_;
  // Ids of images never announced (none announced, or beyond the series) are not tracked: no
  // gap before them can be told, and a damaged id must not make up billions of missing images.
  if (image_id >= acquisition.summary.images_announced) return;
  auto& runs = acquisition.ids_came;
  auto next = runs.upper_bound(image_id);  // the first run that begins after the id
  if (next != runs.begin()) {
    const auto previous = std::prev(next);
    if (image_id < previous->second) return;  // this id came before
    if (image_id == previous->second) {
      previous->second = image_id + 1;
      if (next != runs.end() && next->first == previous->second) {
        previous->second = next->second;
        runs.erase(next);
      }
      return;
    }
  }
  if (next != runs.end() && next->first == image_id + 1) {
    const std::uint64_t end = next->second;
    runs.erase(next);
    runs.emplace(image_id, end);
    return;
  }
  runs.emplace(image_id, image_id + 1);
  if (runs.size() > kMaxIdRuns) {
    // Too many gaps wait for late images: the oldest one is taken as lost now.
    const auto first = runs.begin();
    const auto second = std::next(first);
    const std::uint64_t lost = second->first - first->second;
    first->second = second->second;
    runs.erase(second);
    counts_.dropped["missing_image"] += lost;
    acquisition.summary.images_missing += lost;
  }
}

void SimplonReceiver::count_unreceived_images(const std::string& how) {
  Acquisition& acquisition = *acquisition_;
  AcquisitionSummary& summary = acquisition.summary;
  if (summary.refused) return;
  const auto& runs = acquisition.ids_came;
  // One past the highest announced id that came, and how many ids below it came.
  const std::uint64_t through = runs.empty() ? 0 : runs.rbegin()->second;
  std::uint64_t covered = 0;
  for (const auto& [first, end] : runs) covered += end - first;
  const std::uint64_t missing = through - covered;
  // Runs merged over a gap already counted (note_image_id) cover ids that never came.
  const std::uint64_t came = covered - summary.images_missing;
  std::uint64_t first_missing = 0;
  if (!runs.empty() && runs.begin()->first == 0) first_missing = runs.begin()->second;
  if (missing > 0) {
    counts_.dropped["missing_image"] += missing;
    summary.images_missing += missing;
  }
  summary.images_cut_by_end = summary.images_announced - through;
  if (summary.images_missing == 0 && summary.images_cut_by_end == 0) return;

  std::string text = "dectris " + endpoint_ + ": series " + std::to_string(summary.series_id) +
                     " ended (" + how + ") with " + std::to_string(came) + " of its " +
                     std::to_string(summary.images_announced) + " announced images";
  if (summary.images_missing > 0) {
    text += "; " + std::to_string(summary.images_missing) + " before the last that came never came";
    if (missing > 0)
      text += " (image " + std::to_string(first_missing) + (missing > 1 ? " the first)" : ")");
    text += ", dropped as missing_image";
  }
  if (summary.images_cut_by_end > 0)
    text += "; the end came in the middle of the series: images " + std::to_string(through) +
            " to " + std::to_string(summary.images_announced - 1) + " were not sent";
  counts_.last_problem = std::move(text);
}

std::int64_t SimplonReceiver::timestamp_ns(const ImageMessage& image) const {
  // start_time counts from series_date (or, when an image leaves it out, the arm date).
  std::optional<std::int64_t> origin = parse_rfc3339_ns(image.series_date);
  if (!origin && acquisition_) origin = parse_rfc3339_ns(acquisition_->start->arm_date);
  if (!origin) return 0;
  if (!image.start_time.valid()) return *origin;
  const unsigned __int128 ns =
      (unsigned __int128)image.start_time.numerator * 1'000'000'000u / image.start_time.denominator;
  return *origin + std::int64_t(ns);
}

}  // namespace livedrp::stream::dectris
