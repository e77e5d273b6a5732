#include "widgets/radial_profile_view.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSplitter>
#include <QStackedWidget>
#include <QVBoxLayout>

#include "widgets/profile_model.hpp"
#include "widgets/profile_waterfall.hpp"
#include "widgets/radial_profile_plot.hpp"
#include "widgets/radial_unit_text.hpp"
#include "widgets/refresh_coalescer.hpp"

namespace livedrp::widgets {
namespace {
constexpr int kPlaceholderPage = 0;
constexpr int kDataPage = 1;
}  // namespace

QString RadialProfileView::noDataText() {
  return tr("no profile data yet: azimuthal integration is not configured");
}

QString RadialProfileView::unitSelectorToolTip() {
  return tr(
      "The unit of the profiles received (the engine's integration.unit). Choosing another asks "
      "the engine to integrate in it: the run restarts (run number + 1) and the radial range, "
      "given in the old unit, is reset to pyFAI's default. The GUI does not convert profiles to "
      "another unit itself.");
}

RadialProfileView::RadialProfileView(ProfileModel* model, QWidget* parent)
    : QWidget(parent),
      model_(model),
      coalescer_(new RefreshCoalescer(this)),
      no_data_text_(noDataText()) {
  setObjectName(QStringLiteral("radialProfileView"));

  placeholder_ = new QLabel(no_data_text_);
  placeholder_->setObjectName(QStringLiteral("radialProfilePlaceholder"));
  placeholder_->setAlignment(Qt::AlignCenter);
  placeholder_->setWordWrap(true);

  unit_selector_ = new QComboBox;
  unit_selector_->setObjectName(QStringLiteral("radialUnitSelector"));
  for (const protocol::RadialUnit unit : protocol::all_radial_units())
    unit_selector_->addItem(radialAxisTitle(unit), radialUnitWireName(unit));
  unit_selector_->setEnabled(false);
  unit_selector_->setToolTip(unitSelectorToolTip());
  unit_note_ = new QLabel(tr("unit (set by the engine)"));
  unit_note_->setObjectName(QStringLiteral("radialUnitNote"));
  unit_note_->setToolTip(unitSelectorToolTip());
  auto* unit_note = unit_note_;

  log_y_ = new QCheckBox(tr("log y"));
  log_y_->setObjectName(QStringLiteral("radialProfileLogY"));
  log_colour_ = new QCheckBox(tr("log colour"));
  log_colour_->setObjectName(QStringLiteral("profileWaterfallLog"));
  log_colour_->setToolTip(
      tr("Waterfall colours by log₁₀ intensity; intensities <= 0 are left blank"));

  auto* controls = new QHBoxLayout;
  controls->addWidget(unit_note);
  controls->addWidget(unit_selector_);
  controls->addSpacing(12);
  controls->addWidget(log_y_);
  controls->addWidget(log_colour_);
  controls->addStretch(1);

  summary_ = new QLabel;
  summary_->setObjectName(QStringLiteral("radialProfileSummary"));
  readout_ = new QLabel(tr("move the mouse over the profile for a read-out"));
  readout_->setObjectName(QStringLiteral("radialProfileReadout"));
  readout_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  plot_ = new RadialProfilePlot;
  waterfall_ = new ProfileWaterfall;
  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->addWidget(plot_);
  splitter->addWidget(waterfall_);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 2);

  auto* data_page = new QWidget;
  auto* data_layout = new QVBoxLayout(data_page);
  data_layout->setContentsMargins(0, 0, 0, 0);
  data_layout->addLayout(controls);
  data_layout->addWidget(summary_);
  data_layout->addWidget(splitter, 1);
  data_layout->addWidget(readout_);

  stack_ = new QStackedWidget;
  stack_->insertWidget(kPlaceholderPage, placeholder_);
  stack_->insertWidget(kDataPage, data_page);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(stack_);

  connect(log_y_, &QCheckBox::toggled, this, [this](bool on) {
    plot_->setLogY(on);
    coalescer_->request();
  });
  connect(log_colour_, &QCheckBox::toggled, this, [this](bool on) {
    waterfall_->setLogIntensity(on);
    coalescer_->request();
  });
  connect(plot_, &RadialProfilePlot::readoutChanged, readout_, &QLabel::setText);
  // activated: the user's choice only, not the selector following the data.
  connect(unit_selector_, &QComboBox::activated, this, [this](int index) {
    const QString wire = unit_selector_->itemData(index).toString();
    if (wire == shown_unit_ && pending_unit_.isEmpty()) return;
    pending_unit_ = wire == shown_unit_ ? QString() : wire;
    unit_note_->setText(pending_unit_.isEmpty()
                            ? tr("unit")
                            : tr("unit (asked the engine for %1; a new run starts)")
                                  .arg(unit_selector_->itemText(index)));
    emit unitRequested(wire);
  });
  connect(coalescer_, &RefreshCoalescer::refresh, this, &RadialProfileView::replotIfVisible);
  if (model) {
    connect(model, &ProfileModel::profileReceived, this,
            [this](const protocol::RadialProfile& profile) {
              applyProfile(profile, model_ ? model_->run() : 0);
            });
    connect(model, &ProfileModel::cleared, this, &RadialProfileView::clear);
    connect(model, &ProfileModel::rejected, this, &RadialProfileView::showRejection);
  }
  stack_->setCurrentIndex(kPlaceholderPage);
}

void RadialProfileView::setUnitChangeAvailable(bool available) {
  unit_selector_->setEnabled(available);
  if (pending_unit_.isEmpty())
    unit_note_->setText(available ? tr("unit") : tr("unit (set by the engine)"));
}

void RadialProfileView::applyProfile(const protocol::RadialProfile& profile, std::int64_t run) {
  plot_->setProfile(profile);
  waterfall_->appendProfile(profile);
  shown_unit_ = radialUnitWireName(profile.unit);
  if (shown_unit_ == pending_unit_) {
    pending_unit_.clear();
    unit_note_->setText(unit_selector_->isEnabled() ? tr("unit") : tr("unit (set by the engine)"));
  }
  // While a change is pending the selector keeps the choice; the plot's axis shows the data's.
  if (pending_unit_.isEmpty())
    unit_selector_->setCurrentIndex(unit_selector_->findData(shown_unit_));
  summary_->setText(tr("run %1 · event #%2 · pulse %3 · average of %4 of %5 events · %6 bins")
                        .arg(run)
                        .arg(profile.sequence)
                        .arg(profile.pulse_id)
                        .arg(profile.average_events)
                        .arg(profile.average_window)
                        .arg(profile.centres.size()));
  stack_->setCurrentIndex(kDataPage);
  coalescer_->request();
}

void RadialProfileView::clear() {
  plot_->clear();
  waterfall_->clear();
  summary_->clear();
  placeholder_->setText(no_data_text_);
  stack_->setCurrentIndex(kPlaceholderPage);
  coalescer_->request();
}

void RadialProfileView::setNoDataText(const QString& text) {
  no_data_text_ = text;
  if (showingPlaceholder()) placeholder_->setText(text);
}

// Profiles that arrive but do not decode: saying "not configured" would then be wrong.
void RadialProfileView::showRejection(quint64 count, const QString& error) {
  if (!showingPlaceholder()) return;
  placeholder_->setText(
      tr("no profile shown: %1 profile message(s) refused; last: %2").arg(count).arg(error));
}

bool RadialProfileView::showingPlaceholder() const {
  return stack_->currentIndex() == kPlaceholderPage;
}

QString RadialProfileView::placeholderText() const {
  return placeholder_->text();
}

QString RadialProfileView::summaryText() const {
  return summary_->text();
}

QString RadialProfileView::readoutText() const {
  return readout_->text();
}

void RadialProfileView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  coalescer_->request();
}

// Replots cost the GUI thread; a hidden view (its dock tabbed away) catches up when shown.
void RadialProfileView::replotIfVisible() {
  if (!isVisible()) return;
  plot_->replot();
  waterfall_->replot();
  ++replots_;
}

}  // namespace livedrp::widgets
