#pragma once
// A stage defined only in the tests, to show the stage contract (engine/stages/stage.hpp) end to
// end: every event's float64 sum of its calibrated image. Its section is
//   "event_sum": {"enabled": true, "topic": "event_sum"}
// its CPU part sums on the host, its CUDA part (event_sum_stage_cuda.cu, built with CUDA only)
// on the device, and its book keeps every sum in admission order and publishes them all, with
// their sequences, on its topic at each report tick: the run's last message holds the whole run.
// register_event_sum_stage() is the one registration call; nothing in engine/ names this stage.
#include <any>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "stages/registry.hpp"
#include "stages/stage.hpp"
#include "test_stages/event_sum_math.hpp"

namespace livedrp::test_stages {

inline constexpr const char* kEventSumStage = "event_sum";

#ifdef LIVEDRP_HAVE_CUDA
// The CUDA part on one lane (event_sum_stage_cuda.cu).
std::unique_ptr<stages::CudaStageLane> make_event_sum_cuda_lane(std::size_t pixels,
                                                                const stages::CudaLaneSpec& spec);
#endif

// What the book publishes, decoded: the sums so far with their sequences, in admission order.
struct EventSums {
  std::vector<std::uint64_t> sequences;
  std::vector<double> sums;
};

inline EventSums event_sums_from_message(const protocol::Message& message) {
  if (message.frames.size() != 2 || message.frames[0].dtype != protocol::DType::UInt64 ||
      message.frames[1].dtype != protocol::DType::Float64 ||
      message.frames[0].element_count() != message.frames[1].element_count())
    throw InputError("event_sum message: expected a uint64 and a float64 frame of one length");
  EventSums out;
  out.sequences.resize(message.frames[0].element_count());
  out.sums.resize(message.frames[1].element_count());
  std::memcpy(out.sequences.data(), message.frames[0].data.data(), out.sequences.size() * 8);
  std::memcpy(out.sums.data(), message.frames[1].data.data(), out.sums.size() * 8);
  return out;
}

class EventSumBook final : public stages::StageBook {
 public:
  explicit EventSumBook(std::string topic) : topic_(std::move(topic)) {}
  void add(const EventHeader& header, const std::any& result) override {
    const double sum = std::any_cast<double>(result);
    sums_.sequences.push_back(header.sequence);
    sums_.sums.push_back(sum);
    interval_events_ += 1;
    interval_total_ += sum;
    last_pulse_id_ = header.pulse_id;
  }
  std::vector<protocol::Message> publish(bool last) override {
    (void)last;  // every tick publishes what came since; the last one too
    if (sums_.sums.size() == published_) return {};
    published_ = sums_.sums.size();
    protocol::Message message;
    message.topic = topic_;
    message.sequence = sums_.sequences.back();
    message.pulse_id = last_pulse_id_;
    message.payload = {{"events", sums_.sums.size()}};
    message.frames.push_back(frame(protocol::DType::UInt64, sums_.sequences.data()));
    message.frames.push_back(frame(protocol::DType::Float64, sums_.sums.data()));
    return {message};
  }
  nlohmann::json stats_block(bool whole_run) override {
    if (whole_run) {
      double total = 0;
      for (double s : sums_.sums) total += s;
      return {{"events", sums_.sums.size()}, {"total", total}};
    }
    nlohmann::json block = {{"events", interval_events_}, {"total", interval_total_}};
    interval_events_ = 0;
    interval_total_ = 0;
    return block;
  }

 private:
  protocol::Frame frame(protocol::DType dtype, const void* data) const {
    protocol::Frame f;
    f.dtype = dtype;
    f.shape = {sums_.sums.size()};
    f.data.resize(sums_.sums.size() * 8);
    std::memcpy(f.data.data(), data, f.data.size());
    return f;
  }
  std::string topic_;
  EventSums sums_;
  std::size_t published_ = 0;
  std::uint64_t interval_events_ = 0;
  double interval_total_ = 0;
  std::uint64_t last_pulse_id_ = 0;
};

class EventSumStage final : public stages::Stage {
 public:
  EventSumStage(std::size_t pixels, std::string topic)
      : pixels_(pixels), topic_(std::move(topic)) {}
  std::string name() const override { return kEventSumStage; }
  std::uint64_t input_bytes() const override { return pixels_ * sizeof(float); }
  std::any run_cpu(const stages::CpuEvent& event) override {
    return strided_sum(event.calibrated.data(), 0, event.calibrated.size(), 1);
  }
  std::unique_ptr<stages::CudaStageLane> make_cuda_lane(
      const stages::CudaLaneSpec& spec) const override {
#ifdef LIVEDRP_HAVE_CUDA
    return make_event_sum_cuda_lane(pixels_, spec);
#else
    (void)spec;
    return nullptr;
#endif
  }
  std::unique_ptr<stages::StageBook> make_book() const override {
    return std::make_unique<EventSumBook>(topic_);
  }

 private:
  std::size_t pixels_;
  std::string topic_;
};

// The one registration call. Once per process (the registry refuses a second).
inline void register_event_sum_stage() {
  stages::register_stage({kEventSumStage,
                          [](FieldReader& section) {
                            std::string topic = kEventSumStage;
                            section.read("topic", topic);
                            for (char c : topic)
                              if (!((c >= 'a' && c <= 'z') || c == '_'))
                                section.fail(
                                    section.name("topic"),
                                    "must be lower-case letters and '_', got \"" + topic + "\"");
                            if (topic.empty())
                              section.fail(section.name("topic"), "must not be empty");
                            return nlohmann::json{{"topic", topic}};
                          },
                          [](const nlohmann::json& settings, const stages::StageContext& context) {
                            return std::make_unique<EventSumStage>(
                                context.detector.pixels(), settings.at("topic").get<std::string>());
                          }});
}

}  // namespace livedrp::test_stages
