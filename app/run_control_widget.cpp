#include "app/run_control_widget.hpp"

#include <QAction>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QStringList>
#include <QStyle>
#include <QToolButton>
#include <QVBoxLayout>

#include "app/analysis_defaults.hpp"
#include "app/app_options.hpp"
#include "core/builtin_detectors.hpp"

namespace livedrp::app {
namespace {
// The simulator's highest useful setting is far below this; it only guards against typos.
constexpr double kMaxRateHz = 1e6;

bool isStreamSource(const QString& source) {
  const QString text = source.trimmed();
  return text.startsWith(QStringLiteral("sls:")) || text.startsWith(QStringLiteral("dectris:"));
}
}  // namespace

RunControlWidget::RunControlWidget(QWidget* parent)
    : QWidget(parent),
      start_(new QAction(style()->standardIcon(QStyle::SP_MediaPlay), tr("&Start"), this)),
      stop_(new QAction(style()->standardIcon(QStyle::SP_MediaStop), tr("S&top"), this)),
      source_(new QComboBox(this)),
      backend_(new QComboBox(this)),
      stream_detector_(new QComboBox(this)),
      rate_(new QDoubleSpinBox(this)),
      endpoint_(new QLabel(this)),
      written_(new QLabel(this)),
      written_title_(new QLabel(tr("Files"), this)) {
  setObjectName(QStringLiteral("runControl"));
  start_->setObjectName(QStringLiteral("startAction"));
  stop_->setObjectName(QStringLiteral("stopAction"));
  start_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
  stop_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Period));
  start_->setToolTip(tr("Start the embedded engine with the settings below (Ctrl+R)"));
  stop_->setToolTip(tr("Stop the embedded engine; events in flight are drained (Ctrl+.)"));
  connect(start_, &QAction::triggered, this, &RunControlWidget::startRequested);
  connect(stop_, &QAction::triggered, this, &RunControlWidget::stopRequested);

  source_->setObjectName(QStringLiteral("sourceCombo"));
  source_->setEditable(true);  // any source the engine takes may be typed in
  for (const char* source : kSimulatorSources) source_->addItem(QString::fromLatin1(source));
  for (const char* source : kStreamSourceExamples) source_->addItem(QString::fromLatin1(source));
  source_->setToolTip(
      tr("Event source: sim:DETECTOR runs the detector simulator; replay:FILE.h5 replays a file; "
         "sls:tcp://HOST:PORT[,tcp://HOST:PORT...] receives slsDetector receivers' streams "
         "(Jungfrau); dectris:tcp://HOST:PORT receives a Dectris SIMPLON stream (Eiger2, "
         "Pilatus4, Jungfraujoch)"));

  stream_detector_->setObjectName(QStringLiteral("streamDetectorCombo"));
  stream_detector_->setEditable(true);   // a description file's path may be typed in
  stream_detector_->addItem(QString());  // the source's own
  for (const BuiltinDetector& detector : builtin_detector_sources())
    stream_detector_->addItem(QString::fromUtf8(detector.name.data(), int(detector.name.size())));
  stream_detector_->setToolTip(
      tr("The detector a live stream delivers (stream.detector): a built-in name or a "
         "description file (.json). Empty: an sls stream's default (jungfrau4m, checked against "
         "its endpoints), a Dectris stream's start message"));
  connect(source_, &QComboBox::currentTextChanged, this, [this] { followStreamSource(); });

  backend_->setObjectName(QStringLiteral("backendCombo"));
  for (const char* backend : kBackends) backend_->addItem(QString::fromLatin1(backend));
  backend_->setToolTip(tr("auto: CUDA when a device is usable, otherwise CPU"));

  rate_->setObjectName(QStringLiteral("rateSpin"));
  rate_->setRange(0, kMaxRateHz);
  rate_->setDecimals(1);
  rate_->setSingleStep(10);
  rate_->setSuffix(tr(" Hz"));
  rate_->setSpecialValueText(tr("as fast as possible"));
  rate_->setToolTip(tr("Source event rate; 0 = as fast as possible"));

  endpoint_->setObjectName(QStringLiteral("endpointLabel"));
  endpoint_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  endpoint_->setWordWrap(true);

  written_->setObjectName(QStringLiteral("writtenFilesLabel"));
  written_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  written_->setWordWrap(true);
  written_->setToolTip(
      tr("The live writers' files (write.profiles, write.hits_directory, write.average), run by "
         "run: a restart with the same paths writes the next segment (profiles.seg002.h5, ...)"));
  written_->hide();
  written_title_->hide();

  auto* buttons = new QHBoxLayout;
  for (QAction* action : {start_, stop_}) {
    auto* button = new QToolButton(this);
    button->setDefaultAction(action);
    button->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    button->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    buttons->addWidget(button);
  }
  auto* form = new QFormLayout;
  form->addRow(tr("Source"), source_);
  form->addRow(tr("Stream detector"), stream_detector_);
  form->addRow(tr("Backend"), backend_);
  form->addRow(tr("Rate"), rate_);
  form->addRow(tr("Endpoint"), endpoint_);
  form->addRow(written_title_, written_);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(buttons);
  layout->addLayout(form);
  layout->addStretch(1);

  setRunActive(false);
}

void RunControlWidget::setConfig(const EngineConfig& config) {
  source_->setCurrentText(QString::fromStdString(config.source));
  const int backend = backend_->findText(QString::fromStdString(config.backend));
  backend_->setCurrentIndex(backend >= 0 ? backend : 0);
  rate_->setValue(config.rate_hz);
  stream_detector_->setCurrentText(QString::fromStdString(config.stream.detector));
  followStreamSource();
}

EngineConfig RunControlWidget::config(const EngineConfig& base) const {
  EngineConfig config = base;
  config.source = source_->currentText().trimmed().toStdString();
  config.backend = backend_->currentText().toStdString();
  config.rate_hz = rate_->value();
  if (isStreamSource(source_->currentText()))
    config.stream.detector = stream_detector_->currentText().trimmed().toStdString();
  followSource(config);  // the shipped geometry follows a change of simulated detector
  return config;
}

void RunControlWidget::setRunActive(bool active) {
  if (attached_) return;
  active_ = active;
  start_->setEnabled(!active);
  stop_->setEnabled(active);
  source_->setEnabled(!active);
  backend_->setEnabled(!active);
  rate_->setEnabled(!active);
  followStreamSource();
}

void RunControlWidget::followStreamSource() {
  stream_detector_->setEnabled(!attached_ && !active_ && isStreamSource(source_->currentText()));
}

void RunControlWidget::setAttached(const QString& endpoint) {
  attached_ = true;
  for (QAction* action : {start_, stop_}) {
    action->setEnabled(false);
    action->setToolTip(tr("The remote engine at %1 is controlled where it runs").arg(endpoint));
  }
  for (QWidget* field : {static_cast<QWidget*>(source_), static_cast<QWidget*>(backend_),
                         static_cast<QWidget*>(rate_), static_cast<QWidget*>(stream_detector_)}) {
    field->setEnabled(false);
  }
  endpoint_->setText(tr("%1 (remote engine)").arg(endpoint));
  // Until the remote engine says what it runs, the fields show nothing rather than local settings.
  source_->setCurrentText(QString());
  backend_->setCurrentIndex(-1);
  rate_->setSpecialValueText(tr("-"));
  rate_->setValue(0);
}

void RunControlWidget::showRemoteRun(const QString& source, const QString& backend,
                                     std::optional<double> rate_hz) {
  if (source_->currentText() != source) source_->setCurrentText(source);
  const int index = backend_->findText(backend);
  if (index >= 0) {
    if (backend_->currentIndex() != index) backend_->setCurrentIndex(index);
  } else if (!backend.isEmpty()) {
    backend_->addItem(backend);  // a backend this build does not list, e.g. from a newer engine
    backend_->setCurrentIndex(backend_->count() - 1);
  }
  rate_->setSpecialValueText(rate_hz ? tr("as fast as possible") : tr("-"));
  if (rate_->value() != rate_hz.value_or(0)) rate_->setValue(rate_hz.value_or(0));
}

void RunControlWidget::setEndpoint(const QString& endpoint) {
  if (!attached_) endpoint_->setText(endpoint);
}

namespace {

QString writerPart(const QString& name, const WriterStatus& w, bool ended) {
  QStringList files;
  for (const std::string& file : w.files) files << QString::fromStdString(file);
  QString part = name;
  if (ended) {
    part += RunControlWidget::tr(" %1 written").arg(w.written);
    if (w.dropped > 0) part += RunControlWidget::tr(", %1 dropped").arg(w.dropped);
    if (w.failed > 0) part += RunControlWidget::tr(", %1 failed").arg(w.failed);
  }
  part += QStringLiteral(" -> ") + files.join(QStringLiteral(", "));
  if (!w.error.empty())
    part += RunControlWidget::tr(" (stopped: %1)").arg(QString::fromStdString(w.error));
  return part;
}

QString writerParts(const WriteStatus& s, bool ended) {
  QStringList parts;
  if (s.hits.active) parts << writerPart(RunControlWidget::tr("hits"), s.hits, ended);
  if (s.profiles.active) parts << writerPart(RunControlWidget::tr("profiles"), s.profiles, ended);
  if (s.average.active) parts << writerPart(RunControlWidget::tr("average"), s.average, ended);
  return parts.join(QStringLiteral("; "));
}

}  // namespace

QString RunControlWidget::writersLine(const WriteSegment& segment, bool ended) {
  if (!ended)
    return tr("run %1 writes segment %2: %3")
        .arg(segment.run)
        .arg(segment.segment)
        .arg(writerParts(segment.status, false));
  return tr("run %1 (segment %2, %3 events processed, %4 hits) wrote %5")
      .arg(segment.run)
      .arg(segment.segment)
      .arg(segment.events_processed)
      .arg(segment.hits)
      .arg(writerParts(segment.status, true));
}

void RunControlWidget::showWriters(const std::vector<WriteSegment>& segments) {
  QStringList lines;
  for (const WriteSegment& segment : segments)
    lines << tr("run %1, segment %2: %3")
                 .arg(segment.run)
                 .arg(segment.segment)
                 .arg(writerParts(segment.status, true));
  written_->setText(lines.join(QLatin1Char('\n')));
  written_->setVisible(!lines.isEmpty());
  written_title_->setVisible(!lines.isEmpty());
}

}  // namespace livedrp::app
