#pragma once
// The options of a window the GUI suites drive: an embedded engine that does not start by itself
// and publishes on any free port, and settings of the test's own (an .ini file in `dir`), so no
// suite reads or writes the user's settings or another suite's.
#include <QString>
#include <QTemporaryDir>

#include "app/app_options.hpp"

inline livedrp::app::AppOptions idle_window_options(const QTemporaryDir& dir,
                                                    const QString& settings_name) {
  livedrp::app::AppOptions options;
  options.autostart = false;
  options.publish = "tcp://127.0.0.1:*";
  options.settings_file = dir.filePath(settings_name);
  return options;
}
