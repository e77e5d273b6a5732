// The run-wide latency histogram (engine/exec/latency_histogram.hpp): quantiles against the exact
// order statistics of known samples, within the 1 % its bins promise, and its edges.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "exec/latency_histogram.hpp"

using livedrp::LatencyHistogram;

namespace {

// The exact quantile as the histogram defines it: the smallest sample with at least q of all
// samples at or below it.
double exact_quantile(std::vector<double> samples, double q) {
  std::sort(samples.begin(), samples.end());
  const auto rank = std::size_t(std::ceil(q * double(samples.size())));
  return samples[std::max<std::size_t>(rank, 1) - 1];
}

}  // namespace

class TestLatencyHistogram : public QObject {
  Q_OBJECT
 private slots:
  void emptyGivesNaN() {
    LatencyHistogram h;
    QCOMPARE(h.count(), 0ull);
    QVERIFY(std::isnan(h.quantile_us(0.5)));
    QVERIFY(std::isnan(h.max_us()));
  }

  void uniformIntegersWithinOnePercent() {
    LatencyHistogram h;
    std::vector<double> samples;
    for (int us = 1; us <= 10000; ++us) {
      samples.push_back(us);
      h.add(us);
    }
    for (double q : {0.5, 0.9, 0.99, 0.999}) {
      const double exact = exact_quantile(samples, q);
      const double got = h.quantile_us(q);
      QVERIFY2(got >= exact && got <= exact * 1.01,
               qPrintable(QString("q %1: %2 against exact %3").arg(q).arg(got).arg(exact)));
    }
    QCOMPARE(h.max_us(), 10000.0);
    QCOMPARE(h.count(), 10000ull);
  }

  void lognormalTailWithinOnePercent() {
    std::mt19937_64 random(7);
    std::lognormal_distribution<double> latency(std::log(300.0), 0.6);
    LatencyHistogram h;
    std::vector<double> samples;
    for (int i = 0; i < 200000; ++i) {
      const double us = latency(random);
      samples.push_back(us);
      h.add(us);
    }
    for (double q : {0.5, 0.99, 0.9999}) {
      const double exact = exact_quantile(samples, q);
      const double got = h.quantile_us(q);
      QVERIFY2(got >= exact && got <= exact * 1.01,
               qPrintable(QString("q %1: %2 against exact %3").arg(q).arg(got).arg(exact)));
    }
    QCOMPARE(h.max_us(), *std::max_element(samples.begin(), samples.end()));
  }

  // Sub-microsecond latencies read as at most 1.01 us; beyond the range, the quantile is the exact
  // maximum; NaN is not counted.
  void edges() {
    LatencyHistogram h;
    h.add(0.2);
    h.add(-3.0);  // clocks of two machines: below zero is still counted, in the first bin
    h.add(std::nan(""));
    QCOMPARE(h.count(), 2ull);
    QVERIFY(h.quantile_us(1.0) <= 1.01);
    LatencyHistogram far;
    far.add(5e9);
    QCOMPARE(far.quantile_us(0.5), 5e9);
    QCOMPARE(far.max_us(), 5e9);
  }
};

QTEST_APPLESS_MAIN(TestLatencyHistogram)
#include "test_latency_histogram.moc"
