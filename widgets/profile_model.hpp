#pragma once
// The radial profiles the GUI has received: decodes `profile` messages, keeps the latest and
// hands each one to the views (the profile plot shows the latest, the waterfall keeps them all).
// It paints nothing. Messages that do not decode are counted, not shown.
#include <cstdint>

#include <QObject>
#include <QString>

#include "protocol/message.hpp"
#include "protocol/profile_topic.hpp"
#include "widgets/protocol_metatypes.hpp"

namespace livedrp::widgets {

class ProfileModel : public QObject {
  Q_OBJECT

 public:
  explicit ProfileModel(QObject* parent = nullptr);

  // Takes a decoded message: `profile` is read, other topics are ignored. Returns whether it was
  // a valid profile (and profileReceived was emitted).
  bool apply(const protocol::Message& message);
  // Every profile of the batch, in order (the waterfall wants each row).
  void apply(const MessageBatch& batch);
  // Forgets everything: the views show the placeholder again until the next profile.
  void clear();

  bool hasProfile() const { return count_ > 0; }
  const protocol::RadialProfile& latest() const { return latest_; }
  std::int64_t run() const { return run_; }
  std::uint64_t profileCount() const { return count_; }
  std::uint64_t rejectedCount() const { return rejected_; }
  QString lastRejection() const { return last_rejection_; }

 signals:
  // Emitted synchronously, so `profile` is valid only during the call.
  void profileReceived(const livedrp::protocol::RadialProfile& profile);
  void cleared();
  void rejected(quint64 count, const QString& error);

 private:
  protocol::RadialProfile latest_;
  std::int64_t run_ = 0;
  std::uint64_t count_ = 0;
  std::uint64_t rejected_ = 0;
  QString last_rejection_;
};

}  // namespace livedrp::widgets
