// Exporting plots (widgets/plot_export, app/plot_export_actions): a radial profile fed with known
// numbers is written as PNG (its curves' colours drawn across the picture, at twice the plot's
// size), SVG (the curve a polyline of the curve's colour through every bin) and CSV (every bin
// read back to the same double, NaN bins kept, the unit in a note); the detector image as .npy and
// CSV (every float32 pixel back bit for bit, gaps NaN) and PNG (the peak circles drawn); strip-
// chart curves share one time column (the rate chart's: run time, rate, throughput as the stats
// said); every plot of the window has the right-click menu with its exports, and File > Export
// (Ctrl+E, listed in Help > Keyboard Shortcuts) writes the plot clicked last; an unwritable path is
// refused with a message naming it, and leaves no file.
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <string>

#include <QApplication>
#include <QContextMenuEvent>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QMenu>
#include <QMenuBar>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTest>
#include <QXmlStreamReader>

#include <qwt_plot.h>
#include <qwt_plot_curve.h>
#include <qwt_text.h>

#include "app/main_window.hpp"
#include "app/plot_export_actions.hpp"
#include "gui_window_options.hpp"
#include "io/npy.hpp"
#include "protocol/peaks_topic.hpp"
#include "protocol/profile_topic.hpp"
#include "widgets/csv_table.hpp"
#include "widgets/detector_image_plot.hpp"
#include "widgets/peak_overlay.hpp"
#include "widgets/plot_data.hpp"
#include "widgets/plot_export.hpp"
#include "widgets/radial_profile_plot.hpp"
#include "widgets/radial_profile_view.hpp"
#include "widgets/rate_strip_chart.hpp"
#include "widgets/stats_model.hpp"

using livedrp::app::MainWindow;
using livedrp::app::PlotExportActions;
using livedrp::protocol::ImageFrame;
using livedrp::protocol::RadialProfile;
using livedrp::protocol::RadialUnit;
using livedrp::widgets::DetectorImagePlot;
using livedrp::widgets::ExportFormat;
using livedrp::widgets::RadialProfilePlot;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kBins = 50;
constexpr int kNanBin = 17;
const QSize kPlotSize(600, 400);

// 50 bins in q: the latest profile rises steadily (so its curve crosses the canvas corner to
// corner), the average is flat; values with long decimal expansions so that the CSV must write
// every digit to read them back; one bin without pixels.
RadialProfile rampProfile() {
  RadialProfile profile;
  profile.unit = RadialUnit::QInverseAngstrom;
  profile.sequence = 4242;
  profile.pulse_id = 99'000;
  profile.average_window = 20;
  profile.average_events = 20;
  for (int bin = 0; bin < kBins; ++bin) {
    profile.centres.push_back(0.1 + bin / 30.0);
    profile.latest.push_back(bin == kNanBin ? kNaN : 1.0 + bin * (100.0 / 7.0));
    profile.average.push_back(bin == kNanBin ? kNaN : 350.0 + 1.0 / 3.0);
  }
  return profile;
}

// Pixels are classed by hue (antialiased lines blend with white). The latest curve is blue
// (#1f77b4), the average orange (#ff7f0e), peak circles green (#00ff66).
bool isBlue(QRgb pixel) {
  return qBlue(pixel) - qRed(pixel) > 60 && qBlue(pixel) > qGreen(pixel);
}
bool isOrange(QRgb pixel) {
  return qRed(pixel) > 200 && qGreen(pixel) > 90 && qGreen(pixel) < 170 && qBlue(pixel) < 90;
}
bool isPeakGreen(QRgb pixel) {
  return qGreen(pixel) > 200 && qRed(pixel) < 80 && qBlue(pixel) > 50 && qBlue(pixel) < 160;
}

// The bounding box of the pixels `match` accepts.
template <typename Match>
QRect extentOf(const QImage& image, Match match) {
  QRect box;
  for (int y = 0; y < image.height(); ++y)
    for (int x = 0; x < image.width(); ++x)
      if (match(image.pixel(x, y))) box |= QRect(x, y, 1, 1);
  return box;
}

double parseDouble(const QByteArray& text) {
  double value = 0;
  const auto result = std::from_chars(text.constData(), text.constData() + text.size(), value);
  return result.ec == std::errc() && result.ptr == text.constData() + text.size() ? value : -1e300;
}
float parseFloat(const QByteArray& text) {
  float value = 0;
  const auto result = std::from_chars(text.constData(), text.constData() + text.size(), value);
  return result.ec == std::errc() && result.ptr == text.constData() + text.size() ? value : -1e30f;
}

bool sameValue(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

QByteArray readAll(const QString& path) {
  QFile file(path);
  return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

// A frame of width x height with distinct values (none exact in a few decimals), a gap column and
// a gap row (NaN, as between panels).
std::shared_ptr<ImageFrame> gappedFrame(std::uint64_t width, std::uint64_t height) {
  auto frame = std::make_shared<ImageFrame>();
  frame->sequence = 77;
  frame->pulse_id = 1234;
  frame->width = width;
  frame->height = height;
  frame->unit = "keV";
  for (std::uint64_t row = 0; row < height; ++row)
    for (std::uint64_t column = 0; column < width; ++column)
      frame->pixels.push_back(column == 10 || row == 7
                                  ? std::numeric_limits<float>::quiet_NaN()
                                  : float(row * width + column) * 0.37f - 5.0f / 3.0f);
  return frame;
}

}  // namespace

class PlotExportTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  QString path(const QString& name) const { return dir_.filePath(name); }

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void profilePngIsTwiceThePlotSizeWithBothCurvesAcrossIt() {
    RadialProfilePlot plot;
    plot.resize(kPlotSize);
    plot.setProfile(rampProfile());
    const QString file = path(QStringLiteral("profile.png"));
    const auto problem = livedrp::widgets::exportPlot(plot, file, ExportFormat::Png);
    QVERIFY2(!problem, qPrintable(problem.value_or(QString())));

    QImage image(file);
    QVERIFY(!image.isNull());
    QCOMPARE(image.size(), kPlotSize * livedrp::widgets::kPngScale);
    // The rising latest curve spans most of the picture both ways (a legend swatch would not);
    // the flat average spans it across, in a band a few pixels high.
    const QRect blue = extentOf(image, isBlue);
    QVERIFY2(blue.width() > image.width() / 2, qPrintable(QString::number(blue.width())));
    QVERIFY2(blue.height() > image.height() / 2, qPrintable(QString::number(blue.height())));
    const QRect orange = extentOf(image, isOrange);
    QVERIFY2(orange.width() > image.width() / 2, qPrintable(QString::number(orange.width())));
    // Not blank: white background, grid, axes, text and the curves.
    std::set<QRgb> colours;
    for (int y = 0; y < image.height(); y += 3)
      for (int x = 0; x < image.width(); x += 3) colours.insert(image.pixel(x, y));
    QVERIFY(colours.size() > 20);
  }

  void profileSvgDrawsTheLatestCurveAsALineThroughItsBins() {
    RadialProfilePlot plot;
    plot.resize(kPlotSize);
    plot.setProfile(rampProfile());
    const QString file = path(QStringLiteral("profile.svg"));
    const auto problem = livedrp::widgets::exportPlot(plot, file, ExportFormat::Svg);
    QVERIFY2(!problem, qPrintable(problem.value_or(QString())));

    // QSvgGenerator writes a pen as a <g stroke="#rrggbb"> around what it draws: count the
    // vertices of the polylines and paths inside groups stroked in the latest curve's blue.
    QXmlStreamReader svg(readAll(file));
    QStringList strokes;  // of the open <g> elements
    int blue_vertices = 0;
    bool saw_svg = false;
    while (!svg.atEnd()) {
      const auto token = svg.readNext();
      if (token == QXmlStreamReader::StartElement) {
        const QStringView name = svg.name();
        saw_svg = saw_svg || name == QLatin1String("svg");
        if (name == QLatin1String("g")) strokes << svg.attributes().value("stroke").toString();
        const bool in_blue = strokes.contains(QStringLiteral("#1f77b4"));
        if (in_blue && name == QLatin1String("polyline"))
          blue_vertices += int(svg.attributes()
                                   .value("points")
                                   .toString()
                                   .split(QLatin1Char(' '), Qt::SkipEmptyParts)
                                   .size());
        if (in_blue && name == QLatin1String("path"))
          blue_vertices += int(svg.attributes().value("d").count(QLatin1Char('L')) + 1);
      } else if (token == QXmlStreamReader::EndElement && svg.name() == QLatin1String("g")) {
        strokes.removeLast();
      }
    }
    QVERIFY2(!svg.hasError(), qPrintable(svg.errorString()));
    QVERIFY(saw_svg);
    // 49 bins with pixels (in two runs either side of the empty one), plus the legend's swatch.
    QVERIFY2(blue_vertices >= kBins - 1, qPrintable(QString::number(blue_vertices)));
  }

  void profileCsvReadsBackEveryBinTheUnitAndTheEmptyBin() {
    RadialProfilePlot plot;
    const RadialProfile profile = rampProfile();
    plot.setProfile(profile);
    plot.setLogY(true);  // the curves leave bins out on a log scale; the data does not
    const QString file = path(QStringLiteral("profile.csv"));
    const auto problem = livedrp::widgets::exportPlot(plot, file, ExportFormat::Csv);
    QVERIFY2(!problem, qPrintable(problem.value_or(QString())));

    const QList<QByteArray> lines = readAll(file).split('\n');
    QList<QByteArray> notes, rows;
    for (const QByteArray& line : lines)
      if (line.startsWith('#'))
        notes << line;
      else if (!line.isEmpty())
        rows << line;
    QVERIFY(notes.join('\n').contains("unit: q_A^-1"));
    QVERIFY(notes.join('\n').contains("#4242"));
    QCOMPARE(rows.value(0), QByteArray("radial,intensity_latest,intensity_average"));
    QCOMPARE(rows.size(), kBins + 1);
    for (int bin = 0; bin < kBins; ++bin) {
      const QList<QByteArray> fields = rows[bin + 1].split(',');
      QCOMPARE(fields.size(), 3);
      QCOMPARE(parseDouble(fields[0]), profile.centres[std::size_t(bin)]);
      QVERIFY2(sameValue(parseDouble(fields[1]), profile.latest[std::size_t(bin)]),
               rows[bin + 1].constData());
      QVERIFY2(sameValue(parseDouble(fields[2]), profile.average[std::size_t(bin)]),
               rows[bin + 1].constData());
    }
    QCOMPARE(rows[kNanBin + 1].split(',').value(1), QByteArray("nan"));
  }

  void stripChartCurvesShareOneTimeColumn() {
    // Two quantities sampled at the same times, and a third (another run) at times of its own:
    // one time column, nan where a curve has no point.
    QwtPlot plot;
    plot.setAxisTitle(QwtAxis::XBottom, QStringLiteral("run time (s)"));
    plot.setAxisTitle(QwtAxis::YLeft, QStringLiteral("event rate (Hz)"));
    auto* rate = new QwtPlotCurve(QStringLiteral("event rate"));
    rate->setSamples(QVector<QPointF>{{0.25, 10}, {0.5, 20.5}, {0.75, 30.125}});
    rate->attach(&plot);
    auto* gbps = new QwtPlotCurve(QStringLiteral("input, GB/s"));
    gbps->setSamples(QVector<QPointF>{{0.25, 1.5}, {0.5, 2.5}, {0.75, 3.5}});
    gbps->setYAxis(QwtAxis::YRight);
    gbps->attach(&plot);
    auto* other = new QwtPlotCurve(QStringLiteral("run 2"));
    other->setSamples(QVector<QPointF>{{0.6, 7}});
    other->attach(&plot);

    const auto table = livedrp::widgets::plotTable(plot);
    QVERIFY(table);
    QCOMPARE(table->columns,
             (QStringList{QStringLiteral("run time (s)"), QStringLiteral("event rate"),
                          QStringLiteral("input, GB/s"), QStringLiteral("run 2")}));
    const QByteArray csv = livedrp::widgets::csvText(*table);
    QVERIFY2(
        csv.contains("run time (s),event rate,\"input, GB/s\",run 2\n"
                     "0.25,10,1.5,nan\n0.5,20.5,2.5,nan\n0.6,nan,nan,7\n0.75,30.125,3.5,nan\n"),
        csv.constData());
  }

  void rateChartCsvIsRunTimeThenRateAndThroughputAsTheStatsSaid() {
    livedrp::widgets::StatsModel model;
    livedrp::widgets::RateStripChart chart(&model);
    for (int t = 1; t <= 8; ++t) {
      livedrp::protocol::StatsPayload stats;
      stats.elapsed_s = 0.25 * t;
      stats.event_rate_hz = 1000.0 / 3.0 * t;
      stats.input_gbps = 0.1 * t;
      model.applyStats(stats);
    }
    const QString file = path(QStringLiteral("rates.csv"));
    const auto problem = livedrp::widgets::exportPlot(chart, file, ExportFormat::Csv);
    QVERIFY2(!problem, qPrintable(problem.value_or(QString())));
    QList<QByteArray> rows;
    QByteArray notes;
    for (const QByteArray& line : readAll(file).split('\n'))
      if (line.startsWith('#'))
        notes += line;
      else if (!line.isEmpty())
        rows << line;
    QCOMPARE(rows.value(0), QByteArray("run time (s),event rate,input GB/s"));
    QVERIFY(notes.contains("event rate (Hz)"));  // each curve's axis and unit
    QVERIFY(notes.contains("input (GB/s)"));
    QCOMPARE(rows.size(), 9);
    for (int t = 1; t <= 8; ++t) {
      const QList<QByteArray> fields = rows[t].split(',');
      QCOMPARE(fields.size(), 3);
      QCOMPARE(parseDouble(fields[0]), 0.25 * t);
      QCOMPARE(parseDouble(fields[1]), 1000.0 / 3.0 * t);
      QCOMPARE(parseDouble(fields[2]), 0.1 * t);
    }
  }

  void imageNpyAndCsvGiveBackEveryPixelAndTheGaps() {
    DetectorImagePlot plot;
    const auto frame = gappedFrame(37, 23);
    plot.setFrame(frame);

    const QString npy = path(QStringLiteral("image.npy"));
    auto problem = livedrp::widgets::exportPlot(plot, npy, ExportFormat::Npy);
    QVERIFY2(!problem, qPrintable(problem.value_or(QString())));
    // Read with the engine's own .npy reader, which checks the header and the length.
    const livedrp::io::Array array = livedrp::io::read_npy(npy.toStdString());
    QCOMPARE(array.type, livedrp::io::ElementType::Float32);
    QCOMPARE(array.shape, (std::vector<std::uint64_t>{23, 37}));
    QCOMPARE(std::memcmp(array.as<float>(), frame->pixels.data(), frame->pixels.size() * 4), 0);

    const QString csv = path(QStringLiteral("image.csv"));
    problem = livedrp::widgets::exportPlot(plot, csv, ExportFormat::Csv);
    QVERIFY2(!problem, qPrintable(problem.value_or(QString())));
    QList<QByteArray> rows;
    QByteArray notes;
    for (const QByteArray& line : readAll(csv).split('\n'))
      if (line.startsWith('#'))
        notes += line;
      else if (!line.isEmpty())
        rows << line;
    QVERIFY(notes.contains("23 rows x 37 columns"));
    QVERIFY(notes.contains("keV"));
    QCOMPARE(rows.size(), 23);
    for (int row = 0; row < 23; ++row) {
      const QList<QByteArray> fields = rows[row].split(',');
      QCOMPARE(fields.size(), 37);
      for (int column = 0; column < 37; ++column) {
        const float expected = frame->pixels[std::size_t(row * 37 + column)];
        if (std::isnan(expected)) {
          QCOMPARE(fields[column], QByteArray("nan"));
        } else {
          QCOMPARE(parseFloat(fields[column]), expected);
        }
      }
    }
  }

  void imagePngShowsThePeakCirclesAndSvgEmbedsTheImage() {
    DetectorImagePlot plot;
    plot.resize(kPlotSize);
    plot.setFrame(gappedFrame(120, 80));
    livedrp::protocol::EventPeaks peaks;
    peaks.sequence = 77;
    peaks.found = 1;
    livedrp::protocol::PeakRow peak;
    peak.x = 60;
    peak.y = 40;
    peak.num_pixels = 100;  // a ring of radius 10 image pixels
    peaks.peaks.push_back(peak);
    plot.setPeaks(peaks);
    // Shown, so that the plot is laid out and its zoom made square for its canvas, as in a dock.
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));

    const QString png = path(QStringLiteral("image.png"));
    auto problem = livedrp::widgets::exportPlot(plot, png, ExportFormat::Png);
    QVERIFY2(!problem, qPrintable(problem.value_or(QString())));
    QImage image(png);
    QCOMPARE(image.size(), kPlotSize * livedrp::widgets::kPngScale);
    const QRect ring = extentOf(image, isPeakGreen);
    QVERIFY2(ring.isValid() && ring.width() > 20 && ring.height() > 20,
             qPrintable(QStringLiteral("%1x%2").arg(ring.width()).arg(ring.height())));
    // Round: about as wide as tall (square pixels).
    QVERIFY(std::abs(ring.width() - ring.height()) <= ring.width() / 5);

    const QString svg = path(QStringLiteral("image.svg"));
    problem = livedrp::widgets::exportPlot(plot, svg, ExportFormat::Svg);
    QVERIFY2(!problem, qPrintable(problem.value_or(QString())));
    const QByteArray text = readAll(svg);
    QVERIFY(text.contains("<image"));
    QVERIFY(text.contains("#00ff66"));
  }

  void imageDataBeforeAnyFrameIsRefusedWithoutAFile() {
    DetectorImagePlot plot;
    const QString file = path(QStringLiteral("no-frame.npy"));
    const auto problem = livedrp::widgets::exportPlot(plot, file, ExportFormat::Npy);
    QVERIFY(problem);
    QVERIFY2(problem->contains(QLatin1String("no detector image")), qPrintable(*problem));
    QVERIFY(!QFile::exists(file));
  }

  void anUnwritablePathIsRefusedNamingItAndLeavesNoFile() {
    // A directory that is a regular file: refused for any user, root included.
    QFile blocker(path(QStringLiteral("not-a-directory")));
    QVERIFY(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    RadialProfilePlot plot;
    plot.setProfile(rampProfile());
    for (const ExportFormat format : {ExportFormat::Png, ExportFormat::Svg, ExportFormat::Csv}) {
      const QString file =
          blocker.fileName() + QStringLiteral("/profile.") + livedrp::widgets::formatSuffix(format);
      const auto problem = livedrp::widgets::exportPlot(plot, file, format);
      QVERIFY(problem);
      QVERIFY2(problem->contains(file), qPrintable(*problem));
      QVERIFY(!QFile::exists(file));
    }
  }

  void everyPlotOfTheWindowHasTheExportMenu() {
    MainWindow window(idle_window_options(dir_, QStringLiteral("menus.ini")));
    PlotExportActions* exports = window.plotExport();
    QSet<QString> names;
    for (QwtPlot* plot : exports->plots()) {
      names << plot->objectName();
      std::unique_ptr<QMenu> menu(exports->contextMenu(*plot, nullptr));
      QStringList texts;
      for (QAction* action : menu->actions())
        if (!action->isSeparator()) texts << action->text().remove(QLatin1Char('&'));
      QVERIFY2(texts.contains(QStringLiteral("Export as PNG...")), qPrintable(plot->objectName()));
      QVERIFY2(texts.contains(QStringLiteral("Export as SVG...")), qPrintable(plot->objectName()));
      // The comparison's plots have no curve before a comparison ran: nothing to tabulate.
      const bool has_data = !plot->objectName().startsWith(QLatin1String("comparison"));
      QCOMPARE(texts.contains(QStringLiteral("Export Data as CSV...")), has_data);
      const bool image = plot->objectName() == QLatin1String("detectorImagePlot");
      QCOMPARE(texts.contains(QStringLiteral("Export Image as NumPy (.npy)...")), image);
      QCOMPARE(texts.contains(QStringLiteral("Whole Image")), image);
    }
    for (const char* name :
         {"rateStripChart", "radialProfilePlot", "profileWaterfall", "detectorImagePlot",
          "hitRateChart", "compressionChart", "compressionHistogram", "gainOccupancyPlot",
          "latencyPlot", "comparisonRatePlot", "comparisonThroughputPlot", "comparisonLatencyPlot"})
      QVERIFY2(names.contains(QLatin1String(name)), name);
    // Named after their docks; the two of the radial-profile dock apart.
    QStringList labels;
    for (QwtPlot* plot : exports->plots()) labels << exports->labelOf(*plot);
    QVERIFY(labels.contains(QStringLiteral("Rates")));
    QVERIFY(labels.contains(QStringLiteral("Radial profile — profile")));
    QVERIFY(labels.contains(QStringLiteral("Radial profile — history")));
  }

  void rightClickOnACanvasOpensTheExportMenu() {
    MainWindow window(idle_window_options(dir_, QStringLiteral("right-click.ini")));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QwtPlot* plot = window.radialProfileView()->plot();
    QWidget* canvas = plot->canvas();
    const QPoint at(canvas->width() / 2, canvas->height() / 2);
    QContextMenuEvent event(QContextMenuEvent::Mouse, at, canvas->mapToGlobal(at));
    QApplication::sendEvent(canvas, &event);
    QTRY_VERIFY(qobject_cast<QMenu*>(QApplication::activePopupWidget()));
    auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
    QCOMPARE(menu->objectName(), QStringLiteral("plotExportContextMenu"));
    QCOMPARE(menu->actions().value(0)->text().remove(QLatin1Char('&')),
             QStringLiteral("Export as PNG..."));
    menu->close();
    QCOMPARE(window.plotExport()->currentPlot(), plot);
  }

  void fileExportWritesThePlotClickedLast() {
    MainWindow window(idle_window_options(dir_, QStringLiteral("file-export.ini")));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    RadialProfilePlot* plot = window.radialProfileView()->plot();
    window.radialProfileView()->applyProfile(rampProfile());
    QApplication::processEvents();  // the window's first focus, before the click
    QTest::mouseClick(plot->canvas(), Qt::LeftButton, {}, QPoint(10, 10));
    QCOMPARE(window.plotExport()->currentPlot(), plot);

    // The dialog's answer: a name without a suffix and the CSV filter.
    QStringList offered;
    const QString stem = path(QStringLiteral("from-file-menu"));
    window.plotExport()->setPathChooser(
        [&](QWidget*, const QString&, const QString&, const QStringList& filters) {
          offered = filters;
          return PlotExportActions::Choice{stem, livedrp::widgets::formatFilter(ExportFormat::Csv)};
        });
    QMenu* menu = window.plotExport()->menu();
    // Help > Keyboard Shortcuts lists the submenu's key with its path.
    QVERIFY2(window.keyboardShortcutsText().contains(
                 QLatin1String("Ctrl+E\tFile > Export > Current Plot")),
             qPrintable(window.keyboardShortcutsText()));
    QVERIFY(window.menuBar()->actions().value(0)->menu()->actions().contains(menu->menuAction()));
    emit menu->aboutToShow();
    QAction* current = menu->actions().value(0);
    QVERIFY(current->isEnabled());
    QVERIFY(current->text().contains(QStringLiteral("Radial profile — profile")));
    current->trigger();
    QCOMPARE(offered.size(), 3);  // PNG, SVG, CSV
    const QByteArray csv = readAll(stem + QStringLiteral(".csv"));
    QVERIFY(csv.contains("radial,intensity_latest,intensity_average\n"));
    QVERIFY(window.logText().contains(QLatin1String("exported to")));

    // The same through a path that cannot be written: said in the Log and the status bar.
    const QString blocked = path(QStringLiteral("from-file-menu.csv")) + QStringLiteral("/x.png");
    window.plotExport()->setPathChooser(
        [&](QWidget*, const QString&, const QString&, const QStringList&) {
          return PlotExportActions::Choice{blocked, QString()};
        });
    current->trigger();
    QVERIFY(!QFile::exists(blocked));
    QVERIFY(window.logText().contains(QLatin1String("not exported")));
    QVERIFY(window.statusBar()->currentMessage().contains(blocked));
  }
};

QTEST_MAIN(PlotExportTest)
#include "test_gui_plot_export.moc"
