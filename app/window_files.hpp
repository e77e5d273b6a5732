#pragma once
// The main window's file handling that needs no window: what a dropped file is, writing a
// pipeline configuration, and the list of menu shortcuts (Help > Keyboard Shortcuts).
#include <optional>

#include <QString>

#include "exec/engine.hpp"

class QMenuBar;

namespace livedrp::app {

// What a file dropped on the window is taken as, by its suffix (case-insensitive).
enum class DroppedFile { Configuration, Geometry, Replay, Other };
DroppedFile droppedFileKind(const QString& path);
// The kinds openDroppedFile takes, for its refusal.
QString droppableKindsText();

// Writes `config` as the JSON `livedrp --config` and `livedrp-engine run --config` read; the
// reason when the file cannot be written, nullopt when written.
std::optional<QString> writeConfigurationFile(const EngineConfig& config, const QString& path);

// "Ctrl+R\tRun > Start": every menu action with a shortcut, menu by menu (submenus as
// "File > Export > Current Plot..."), one a line.
QString menuShortcutsText(const QMenuBar& menus);

}  // namespace livedrp::app
