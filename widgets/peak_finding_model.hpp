#pragma once
// What the GUI has received of peak finding: decodes `image` and `peaks` messages, keeps the
// latest image (shared, never copied: views hold the same pointer) and the latest peak list, and
// hands them to the views. It paints nothing. Messages that do not decode are counted and the
// last reason kept, not shown as data.
//
// Images from batches (the subscriber's flow) are decoded off the GUI thread: reading and checking
// a few million floats would hold up the event loop for milliseconds twice a second. One decode
// runs at a time; an image arriving meanwhile waits, and a newer one replaces it (the older one
// would be drawn over before anyone saw it): those are counted as skipped, as are the older
// images of one batch. Every `peaks` message is decoded at once (small; each is a hit to count),
// and the newest is shown.
#include <cstdint>
#include <memory>

#include <QObject>
#include <QString>

#include "protocol/message.hpp"
#include "protocol/peaks_topic.hpp"
#include "widgets/image_raster_data.hpp"
#include "widgets/protocol_metatypes.hpp"

namespace livedrp::widgets {

class PeakFindingModel : public QObject {
  Q_OBJECT

 public:
  explicit PeakFindingModel(QObject* parent = nullptr);

  // One message, decoded at once (also an image): `image` and `peaks` are read, other topics
  // ignored. Returns whether it was taken.
  bool apply(const protocol::Message& message);
  // A batch: peaks at once, the newest image in the background (imageReceived follows).
  void apply(const MessageBatch& batch);
  bool decodingImage() const { return decoding_; }
  // Typed entry points (what apply() calls after decoding; tests and hosts may call them).
  void applyImage(ImageFramePtr image, std::int64_t run = 0);
  void applyPeaks(const protocol::EventPeaks& peaks, std::int64_t run = 0);
  void clear();

  const ImageFramePtr& latestImage() const { return image_; }
  bool hasPeaks() const { return peaks_count_ > 0; }
  const protocol::EventPeaks& latestPeaks() const { return peaks_; }
  std::int64_t run() const { return run_; }
  std::uint64_t imageCount() const { return image_count_; }
  std::uint64_t imagesSkipped() const { return images_skipped_; }
  std::uint64_t peaksCount() const { return peaks_count_; }
  std::uint64_t rejectedCount() const { return rejected_; }
  QString lastRejection() const { return last_rejection_; }

 signals:
  void imageReceived(livedrp::widgets::ImageFramePtr image);
  // Emitted synchronously: `peaks` is valid during the call only.
  void peaksReceived(const livedrp::protocol::EventPeaks& peaks);
  void cleared();
  void rejected(quint64 count, const QString& error);

 private:
  void decodeInBackground(MessagePtr message);
  void finishDecode(const MessagePtr& message, ImageFramePtr image, const QString& error,
                    std::uint64_t generation);
  void reject(const protocol::Message& message, const QString& error);

  bool decoding_ = false;
  MessagePtr waiting_image_;      // the newest image that came while one was being decoded
  std::uint64_t generation_ = 0;  // clear() makes decodes in flight stale
  ImageFramePtr image_;
  protocol::EventPeaks peaks_;
  std::int64_t run_ = 0;
  std::uint64_t image_count_ = 0;
  std::uint64_t images_skipped_ = 0;
  std::uint64_t peaks_count_ = 0;
  std::uint64_t rejected_ = 0;
  QString last_rejection_;
};

}  // namespace livedrp::widgets
