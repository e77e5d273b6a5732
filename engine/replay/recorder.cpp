#include "replay/recorder.hpp"

#include <cstdio>
#include <system_error>

#include "core/error.hpp"

namespace livedrp::replay {

Recorder::Recorder(RecordOptions options, DetectorDescription detector,
                   std::string pipeline_config_json)
    : options_(std::move(options)),
      detector_(std::move(detector)),
      config_json_(std::move(pipeline_config_json)) {
  if (options_.directory.empty()) throw InputError("record: no directory given");
  if (!options_.layout.chunked)
    throw InputError("record: the layout must be chunked (recorded files grow event by event)");
  std::error_code error;
  std::filesystem::create_directories(options_.directory, error);
  if (error || !std::filesystem::is_directory(options_.directory))
    throw InputError("record: cannot create directory " + options_.directory.string() + ": " +
                     error.message());
  open_next();
}

Recorder::~Recorder() {
  try {
    close();
  } catch (...) {
    // close() explicitly to see the error
  }
}

void Recorder::open_next() {
  char name[64];
  std::snprintf(name, sizeof name, "run%04lld-%03zu.h5", static_cast<long long>(options_.run),
                files_.size());
  const auto path = options_.directory / name;
  writer_ = std::make_unique<Hdf5EventWriter>(path, detector_, options_.layout, config_json_);
  files_.push_back(path);
}

void Recorder::record(const EventHeader& header, const void* raw) {
  if (!writer_) throw RuntimeFault("record: the recorder is closed");
  // Roll over before the event that would pass the limit; a file holds at least one event.
  if (writer_->events() > 0 &&
      writer_->file_bytes() + detector_.raw_event_bytes() > options_.max_file_bytes) {
    writer_->close();
    open_next();
  }
  writer_->append(header, raw);
  ++events_;
}

void Recorder::close() {
  if (writer_) writer_->close();
  writer_.reset();
}

}  // namespace livedrp::replay
