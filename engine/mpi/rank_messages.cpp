#include "mpi/rank_messages.hpp"

#include "protocol/peaks_topic.hpp"
#include "protocol/profile_topic.hpp"

namespace livedrp::mpi {

bool forwarded_topic(const std::string& topic) {
  return topic != protocol::kTopicProfile && topic != protocol::kTopicPeaks;
}

std::function<void(const protocol::Message&)> RankMessages::sink() {
  return [this](const protocol::Message& message) {
    if (!forwarded_topic(message.topic)) return;
    std::lock_guard lock(mutex_);
    newest_[message.topic] = message;
  };
}

std::vector<protocol::Message> RankMessages::take() {
  std::lock_guard lock(mutex_);
  std::vector<protocol::Message> out;
  for (auto& [topic, message] : newest_) out.push_back(std::move(message));
  newest_.clear();
  return out;
}

}  // namespace livedrp::mpi
