#include "widgets/peak_finding_model.hpp"

#include <exception>
#include <utility>

#include <QCoreApplication>
#include <QPointer>
#include <QThreadPool>

namespace livedrp::widgets {

PeakFindingModel::PeakFindingModel(QObject* parent) : QObject(parent) {}

bool PeakFindingModel::apply(const protocol::Message& message) {
  try {
    if (message.topic == protocol::kTopicImage) {
      applyImage(
          std::make_shared<const protocol::ImageFrame>(protocol::image_from_message(message)),
          message.run);
      return true;
    }
    if (message.topic == protocol::kTopicPeaks) {
      applyPeaks(protocol::peaks_from_message(message), message.run);
      return true;
    }
  } catch (const std::exception& error) {
    reject(message, QString::fromUtf8(error.what()));
  }
  return false;
}

void PeakFindingModel::reject(const protocol::Message& message, const QString& error) {
  ++rejected_;
  last_rejection_ = QStringLiteral("%1 message of event #%2 refused: %3")
                        .arg(QString::fromStdString(message.topic))
                        .arg(message.sequence)
                        .arg(error);
  emit rejected(rejected_, last_rejection_);
}

void PeakFindingModel::decodeInBackground(MessagePtr message) {
  if (decoding_) {
    if (waiting_image_) ++images_skipped_;
    waiting_image_ = std::move(message);
    return;
  }
  decoding_ = true;
  QPointer<PeakFindingModel> model(this);
  const std::uint64_t generation = generation_;
  QThreadPool::globalInstance()->start([model, message, generation] {
    ImageFramePtr image;
    QString error;
    try {
      image = std::make_shared<const protocol::ImageFrame>(protocol::image_from_message(*message));
    } catch (const std::exception& e) {
      error = QString::fromUtf8(e.what());
    }
    // Back on the GUI thread; the model may be gone by then (QPointer checked there).
    QMetaObject::invokeMethod(
        QCoreApplication::instance(),
        [model, message, image, error, generation] {
          if (model) model->finishDecode(message, image, error, generation);
        },
        Qt::QueuedConnection);
  });
}

void PeakFindingModel::finishDecode(const MessagePtr& message, ImageFramePtr image,
                                    const QString& error, std::uint64_t generation) {
  decoding_ = false;
  if (generation == generation_) {
    if (image)
      applyImage(std::move(image), message->run);
    else
      reject(*message, error);
  }
  if (waiting_image_) decodeInBackground(std::exchange(waiting_image_, nullptr));
}

void PeakFindingModel::apply(const MessageBatch& batch) {
  qsizetype newest_image = -1;
  for (qsizetype i = 0; i < batch.size(); ++i)
    if (batch[i] && batch[i]->topic == protocol::kTopicImage) newest_image = i;
  for (qsizetype i = 0; i < batch.size(); ++i) {
    const MessagePtr& message = batch[i];
    if (!message) continue;
    if (message->topic == protocol::kTopicImage) {
      if (i == newest_image)
        decodeInBackground(message);
      else
        ++images_skipped_;
      continue;
    }
    apply(*message);
  }
}

void PeakFindingModel::applyImage(ImageFramePtr image, std::int64_t run) {
  image_ = std::move(image);
  run_ = run;
  ++image_count_;
  emit imageReceived(image_);
}

void PeakFindingModel::applyPeaks(const protocol::EventPeaks& peaks, std::int64_t run) {
  peaks_ = peaks;
  run_ = run;
  ++peaks_count_;
  emit peaksReceived(peaks_);
}

void PeakFindingModel::clear() {
  ++generation_;  // an image of the old run still being decoded is not shown
  waiting_image_.reset();
  image_.reset();
  peaks_ = protocol::EventPeaks();
  run_ = 0;
  image_count_ = images_skipped_ = peaks_count_ = 0;
  emit cleared();
}

}  // namespace livedrp::widgets
