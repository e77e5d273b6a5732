// livedrp: the Qt application. Embeds the engine and starts it on the simulated detector unless
// told otherwise (--connect, --no-autostart); see --help.
#include <cstdio>

#include <QApplication>
#include <QIcon>
#include <QPixmap>
#include <QTimer>

#include "app/app_options.hpp"
#include "app/gui_benchmark.hpp"
#include "app/main_window.hpp"

int main(int argc, char** argv) {
  QApplication application(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("livedrp"));
  QApplication::setApplicationName(QStringLiteral("livedrp"));
  QApplication::setApplicationDisplayName(QStringLiteral("livedrp"));
  QApplication::setApplicationVersion(QStringLiteral(LIVEDRP_VERSION));
  QApplication::setDesktopFileName(QStringLiteral("livedrp"));
  QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/livedrp.svg")));

  const livedrp::app::CommandLine command_line =
      livedrp::app::parseCommandLine(QApplication::arguments());
  switch (command_line.action) {
    case livedrp::app::CommandLine::Action::ShowHelp:
    case livedrp::app::CommandLine::Action::ShowVersion:
      std::fprintf(stdout, "%s\n", qPrintable(command_line.text));
      return 0;
    case livedrp::app::CommandLine::Action::Error:
      std::fprintf(stderr, "livedrp: %s\nTry 'livedrp --help'.\n", qPrintable(command_line.text));
      return 2;
    case livedrp::app::CommandLine::Action::Run:
      break;
  }
  const livedrp::app::AppOptions& options = command_line.options;

  livedrp::app::MainWindow window(options);
  window.show();

  int exit_code = 0;
  if (!options.screenshot_file.isEmpty()) {
    // For documentation: run a while, grab the window as drawn, quit.
    QTimer::singleShot(int(options.screenshot_after_s * 1000), &window, [&] {
      const QString path = options.screenshot_file;
      if (window.grab().save(path)) {
        std::fprintf(stdout, "livedrp: screenshot saved to %s\n", qPrintable(path));
      } else {
        std::fprintf(stderr, "livedrp: cannot save the screenshot to %s\n", qPrintable(path));
        exit_code = 1;
      }
      window.close();
    });
  }
  if (options.benchmark_gui_s > 0) {
    // The figures, then quit (docs/benchmarks.md, "GUI").
    auto* benchmark = new livedrp::app::GuiBenchmark(window, *window.detectorImageView(),
                                                     options.benchmark_gui_s, &window);
    QObject::connect(benchmark, &livedrp::app::GuiBenchmark::finished, &window,
                     [&](const QString& report) {
                       std::fprintf(stdout, "%s", qPrintable(report));
                       std::fflush(stdout);
                       window.close();
                     });
  }
  const int loop_code = QApplication::exec();
  return exit_code != 0 ? exit_code : loop_code;
}
