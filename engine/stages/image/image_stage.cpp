#include "stages/image/image_stage.hpp"

#include <cstring>

#include "core/error.hpp"
#include "protocol/topics.hpp"

namespace livedrp::stages {

ImageSampler::ImageSampler(double publish_hz)
    : period_(std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(1.0 / publish_hz))) {
  if (!(publish_hz > 0)) throw InputError("image.publish_hz: must be above 0 for an image stage");
}

bool ImageSampler::due(Clock::time_point now) const {
  return now.time_since_epoch().count() >= next_due_.load(std::memory_order_relaxed);
}

bool ImageSampler::take_due(Clock::time_point now) {
  Clock::rep due_at = next_due_.load(std::memory_order_relaxed);
  const Clock::rep at = now.time_since_epoch().count();
  if (at < due_at) return false;
  // One taker per period: the one whose exchange moves the due time on.
  return next_due_.compare_exchange_strong(due_at, (now + period_).time_since_epoch().count(),
                                           std::memory_order_relaxed);
}

void ImageSampler::taken(Clock::time_point now) {
  next_due_.store((now + period_).time_since_epoch().count(), std::memory_order_relaxed);
}

namespace {

// Hands each sampled event, with its peaks, to the mailbox; publishes the newest image.
class ImageBook final : public StageBook {
 public:
  ImageBook(std::shared_ptr<LiveImage> mailbox, std::shared_ptr<const PeakStage> peaks,
            std::shared_ptr<std::atomic<bool>> kept_for_taking)
      : mailbox_(std::move(mailbox)),
        peaks_(std::move(peaks)),
        kept_for_taking_(std::move(kept_for_taking)) {}

  void add(const EventHeader& header, const std::any& result) override {
    static const std::vector<std::string> no_names;
    static const std::vector<StageOutput> no_outputs;
    add_event(header, result, 0, EventResults(no_names, no_outputs));
  }
  void add_event(const EventHeader& header, const std::any& result, double,
                 const EventResults& event) override {
    const ImageResult* sample = std::any_cast<ImageResult>(&result);
    if (!sample || !*sample) return;
    std::optional<protocol::EventPeaks> peaks;
    if (peaks_)
      if (const std::any* found = event.find(peaks_->name()))
        if (const auto* list = std::any_cast<PeakResult>(found))
          peaks = peaks_->message(header, list->peaks, list->params_version, false);
    mailbox_->offer(*sample, std::move(peaks));
  }
  std::vector<protocol::Message> publish(bool) override {
    if (kept_for_taking_->load()) return {};
    std::optional<protocol::ImageFrame> image = mailbox_->take();
    if (!image) return {};
    return {protocol::make_image_message(*image)};
  }
  nlohmann::json stats_block(bool) override { return nullptr; }
  // The sampler sets the image's rate; the book publishes only when a sample came, as soon as
  // the reporter's next step comes round.
  double publish_hz() const override { return kEveryStep; }

 private:
  std::shared_ptr<LiveImage> mailbox_;
  std::shared_ptr<const PeakStage> peaks_;
  std::shared_ptr<std::atomic<bool>> kept_for_taking_;
};

}  // namespace

ImageStage::ImageStage(const DetectorDescription& detector, const CalibrationConstants& constants,
                       std::shared_ptr<const ImageAssembly> assembly,
                       std::shared_ptr<const PeakStage> peaks, double publish_hz)
    : detector_(detector),
      assembly_(std::move(assembly)),
      peaks_(std::move(peaks)),
      sampler_(std::make_shared<ImageSampler>(publish_hz)),
      kept_for_taking_(std::make_shared<std::atomic<bool>>(false)) {
  if (!assembly_) throw InputError("image: the detector has no assembled image to publish");
  mailbox_ = std::make_shared<LiveImage>(detector, constants, *assembly_);
}

ImageResult ImageStage::sample(const EventHeader& header, const void* raw,
                               const float* calibrated) const {
  auto sample = std::make_shared<ImageSample>();
  sample->header = header;
  sample->raw.resize(detector_.raw_event_bytes());
  sample->calibrated.resize(detector_.pixels());
  std::memcpy(sample->raw.data(), raw, sample->raw.size());
  std::memcpy(sample->calibrated.data(), calibrated, sample->calibrated.size() * sizeof(float));
  return sample;
}

std::any ImageStage::run_cpu(const CpuEvent& event) {
  if (!sampler_->take_due(ImageSampler::Clock::now())) return ImageResult{};
  return sample(event.header, event.raw, event.calibrated.data());
}

std::unique_ptr<StageBook> ImageStage::make_book() const {
  return std::make_unique<ImageBook>(mailbox_, peaks_, kept_for_taking_);
}

}  // namespace livedrp::stages
