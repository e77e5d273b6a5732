// An MPI run's ranks in the Engine dock: one row per processing rank of the `ranks` block as it
// travels (JSON and back), the merged totals below, lost and failed ranks in red with their
// reason, and nothing shown for a single engine.
#include <QtTest>

#include <QLabel>
#include <QTableWidget>

#include "protocol/topics.hpp"
#include "widgets/engine_view.hpp"
#include "widgets/ranks_view.hpp"
#include "widgets/stats_model.hpp"

using namespace livedrp;
using namespace livedrp::widgets;

namespace {

protocol::RankStats rankOf(std::uint64_t rank, const char* state, std::uint64_t in,
                           std::uint64_t dropped) {
  protocol::RankStats r;
  r.rank = rank;
  r.state = state;
  r.host = "node" + std::to_string(rank);
  r.pid = 1000 + rank;
  r.events_in = in;
  r.events_processed = in - dropped;
  r.events_dropped = dropped;
  if (dropped > 0) r.drops_by_reason = {{"ring_full", dropped}};
  r.event_rate_hz = 10.0 * double(rank);
  r.backend = "cpu";
  r.device = "CPU (2 threads)";
  r.report_age_s = 0.25 * double(rank);
  return r;
}

protocol::StatsPayload mpiStats() {
  protocol::StatsPayload stats;
  protocol::RanksBlock ranks;
  ranks.size = 4;
  ranks.collector = 0;
  ranks.collector_processes = false;
  ranks.processing = {rankOf(1, protocol::kRankRunning, 100, 0),
                      rankOf(2, protocol::kRankLost, 40, 2),
                      rankOf(3, protocol::kRankFinished, 100, 0)};
  ranks.processing[1].error = "silent for 12.0 s";
  stats.ranks = ranks;
  stats.events_in = 240;
  stats.events_processed = 238;
  stats.events_dropped = 2;
  stats.drops_by_reason = {{"ring_full", 2}};
  stats.event_rate_hz = 60;
  // Through the wire format, as a subscriber gets it.
  return protocol::stats_from_json(protocol::to_json(stats));
}

}  // namespace

class TestGuiRanksView : public QObject {
  Q_OBJECT

 private slots:
  void eachRankHasARowAndTheTotalsFollow() {
    StatsModel model;
    EngineView view(&model);
    view.resize(1000, 900);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    RanksView* ranks = view.ranksView();
    QVERIFY(ranks && !ranks->isVisible());
    model.applyStats(mpiStats(), 1);
    QTRY_VERIFY(ranks->isVisible());
    QTableWidget* table = ranks->table();
    QCOMPARE(table->rowCount(), 4);
    QCOMPARE(ranks->summary()->text(),
             QStringLiteral("MPI run: 4 ranks, rank 0 collects (it processes no share)"));
    const auto cell = [&](int row, int column) { return table->item(row, column)->text(); };
    QCOMPARE(cell(0, RanksView::Rank), QStringLiteral("1"));
    QCOMPARE(cell(0, RanksView::Where), QStringLiteral("node1, 1001"));
    QCOMPARE(cell(0, RanksView::State), QStringLiteral("running"));
    QCOMPARE(cell(0, RanksView::Processed), QStringLiteral("100"));
    QCOMPARE(cell(0, RanksView::Rate), QStringLiteral("10.0"));
    QCOMPARE(cell(0, RanksView::Backend), QStringLiteral("cpu (CPU (2 threads))"));
    QCOMPARE(cell(1, RanksView::State), QStringLiteral("lost: silent for 12.0 s"));
    QCOMPARE(cell(1, RanksView::Dropped), QStringLiteral("2 (ring_full 2)"));
    QCOMPARE(cell(1, RanksView::Heard), QStringLiteral("0.5"));
    QCOMPARE(cell(2, RanksView::State), QStringLiteral("finished"));
    QCOMPARE(cell(3, RanksView::Rank), QStringLiteral("total"));
    QCOMPARE(cell(3, RanksView::In), QStringLiteral("240"));
    QCOMPARE(cell(3, RanksView::Processed), QStringLiteral("238"));
    QCOMPARE(cell(3, RanksView::Dropped), QStringLiteral("2 (ring_full 2)"));
    QVERIFY(table->item(3, RanksView::Rank)->font().bold());
    // The lost rank's row is drawn red; the running one's is not.
    const QImage image = table->viewport()->grab().toImage();
    const auto rowColour = [&](int row) {
      const QRect rect = table->visualItemRect(table->item(row, RanksView::Processed));
      return image.pixelColor(rect.left() + 2, rect.center().y());
    };
    QCOMPARE(rowColour(1).name(), QColor(0xff, 0xcd, 0xd2).name());
    QVERIFY(rowColour(0).name() != QColor(0xff, 0xcd, 0xd2).name());

    // A single engine's stats: nothing about ranks.
    protocol::StatsPayload single;
    single.events_in = 5;
    model.applyStats(single, 2);
    QTRY_VERIFY(!ranks->isVisible());
  }
};

QTEST_MAIN(TestGuiRanksView)
#include "test_gui_ranks_view.moc"
