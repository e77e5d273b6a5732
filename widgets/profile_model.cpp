#include "widgets/profile_model.hpp"

#include <utility>

namespace livedrp::widgets {

ProfileModel::ProfileModel(QObject* parent) : QObject(parent) {}

bool ProfileModel::apply(const protocol::Message& message) {
  if (message.topic != protocol::kTopicProfile) return false;
  try {
    latest_ = protocol::profile_from_message(message);
  } catch (const protocol::ProtocolError& error) {
    ++rejected_;
    last_rejection_ = QString::fromUtf8(error.what());
    emit rejected(rejected_, last_rejection_);
    return false;
  }
  run_ = message.run;
  ++count_;
  emit profileReceived(latest_);
  return true;
}

void ProfileModel::apply(const MessageBatch& batch) {
  for (const MessagePtr& message : batch)
    if (message) apply(*message);
}

void ProfileModel::clear() {
  latest_ = protocol::RadialProfile();
  run_ = 0;
  count_ = 0;
  emit cleared();
}

}  // namespace livedrp::widgets
