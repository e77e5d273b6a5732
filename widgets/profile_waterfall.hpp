#pragma once
// Radial-profile history as an image: one row per received profile (the latest event's), the
// radial coordinate across, newest row at the bottom, intensity as colour with a colour bar.
// Log intensity is a toggle. Rows on other bins than the ones shown (the unit or the binning
// changed) restart the history. Like the profile plot, it leaves replots to its owner.
#include <cstddef>

#include <qwt_plot.h>

#include "protocol/profile_topic.hpp"

class QwtPlotSpectrogram;

namespace livedrp::widgets {

class ProfileRasterData;

class ProfileWaterfall : public QwtPlot {
  Q_OBJECT

 public:
  explicit ProfileWaterfall(QWidget* parent = nullptr,
                            std::size_t capacity = 0);  // 0: ProfileRasterData's default

  void appendProfile(const protocol::RadialProfile& profile);
  void clear();
  void setLogIntensity(bool on);
  bool logIntensity() const;

  const ProfileRasterData* rasterData() const { return raster_; }
  const QwtPlotSpectrogram* spectrogram() const { return spectrogram_; }

 private:
  // Scales and the colour bar follow the data.
  void updateScales();

  QwtPlotSpectrogram* spectrogram_ = nullptr;
  ProfileRasterData* raster_ = nullptr;  // owned by spectrogram_
  protocol::RadialUnit unit_ = protocol::RadialUnit::TwoThetaDeg;
  bool has_unit_ = false;
};

}  // namespace livedrp::widgets
