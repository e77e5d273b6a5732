#pragma once
// The "Radial profile" dock: the profile plot (latest and running average) over the waterfall of
// profile history, a line that says which event and how many events the average holds, the
// crosshair read-out, and the toggles (log y, log colour). Until the first profile arrives it
// says why there is nothing to show instead.
//
// The radial unit is the engine's (its integration.unit): the selector shows the unit of the data
// received, and choosing another asks the engine to integrate in it (unitRequested; the window
// applies it, which starts a new run). The GUI never converts a profile to another unit itself: a
// converted 2θ profile is not the profile integrated in q. Without a way to reach the engine's
// configuration (setUnitChangeAvailable(false)) the selector only shows.
#include <cstdint>

#include <QPointer>
#include <QString>
#include <QWidget>

#include "protocol/profile_topic.hpp"

class QCheckBox;
class QComboBox;
class QLabel;
class QStackedWidget;

namespace livedrp::widgets {

class ProfileModel;
class ProfileWaterfall;
class RadialProfilePlot;
class RefreshCoalescer;

class RadialProfileView : public QWidget {
  Q_OBJECT

 public:
  // Follows `model` (may be null: feed applyProfile directly).
  explicit RadialProfileView(ProfileModel* model, QWidget* parent = nullptr);

  static QString noDataText();
  static QString unitSelectorToolTip();

  void applyProfile(const protocol::RadialProfile& profile, std::int64_t run = 0);
  void clear();
  // What the placeholder says while no profile is shown (noDataText() until set): whoever knows
  // the configuration says why integration is off, or what it waits for. Shown at once when the
  // placeholder is up.
  void setNoDataText(const QString& text);
  // Whether choosing a unit can reach the engine (an embedded engine, or a remote one with a
  // control socket). Off by default.
  void setUnitChangeAvailable(bool available);
  // The unit last asked for and not yet seen in the data ("" when none is pending).
  QString pendingUnit() const { return pending_unit_; }

 signals:
  // The user chose `wire_name` ("q_A^-1", ...), other than the unit of the data shown.
  void unitRequested(const QString& wire_name);

 public:
  bool showingPlaceholder() const;
  QString placeholderText() const;
  QString summaryText() const;
  QString readoutText() const;
  RadialProfilePlot* plot() const { return plot_; }
  ProfileWaterfall* waterfall() const { return waterfall_; }
  QComboBox* unitSelector() const { return unit_selector_; }
  QCheckBox* logYBox() const { return log_y_; }
  QCheckBox* logColourBox() const { return log_colour_; }
  RefreshCoalescer* coalescer() const { return coalescer_; }
  std::uint64_t replotCount() const { return replots_; }

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void showRejection(quint64 count, const QString& error);
  void replotIfVisible();

  QPointer<ProfileModel> model_;
  RefreshCoalescer* coalescer_ = nullptr;
  std::uint64_t replots_ = 0;
  QStackedWidget* stack_ = nullptr;
  QLabel* placeholder_ = nullptr;
  QString no_data_text_;
  QLabel* summary_ = nullptr;
  QLabel* readout_ = nullptr;
  QComboBox* unit_selector_ = nullptr;
  QLabel* unit_note_ = nullptr;
  QString shown_unit_;    // wire name of the unit of the data on the plot
  QString pending_unit_;  // asked of the engine, not yet in the data
  QCheckBox* log_y_ = nullptr;
  QCheckBox* log_colour_ = nullptr;
  RadialProfilePlot* plot_ = nullptr;
  ProfileWaterfall* waterfall_ = nullptr;
};

}  // namespace livedrp::widgets
