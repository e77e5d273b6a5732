// The assembled detector image (core/image_assembly.hpp): each event pixel lands on the image pixel
// its placement puts its centre in (a large pixel at an ASIC edge shares its value among the image
// pixels it covers), gaps stay NaN, and slab_to_image maps a slab point (as the peak
// finder reports it) to the same image pixel coordinates. Expected indices are worked out by hand
// from the rotation formulas in core/detector.hpp, not by calling the code under test.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/image_assembly.hpp"

using namespace livedrp;

namespace {

struct ImagePixel {
  std::size_t row, column;
};

// Two segments of 2 rows x 3 columns: segment 0 unrotated at the origin, segment 1 as given.
DetectorDescription two_segments(SegmentPlacement second) {
  DetectorDescription detector;
  detector.name = "two_segments";
  detector.encoding = RawEncoding::Float32;
  detector.segments = 2;
  detector.rows = 2;
  detector.cols = 3;
  detector.asic_rows = 2;
  detector.asic_cols = 3;
  detector.pixel_size_um = 100;
  detector.gain_modes = {{"calibrated", 1.0}};
  detector.placement = {{0, 0, 0}, second};
  return detector;
}

void check_targets(const ImageAssembly& assembly, std::size_t first_pixel,
                   const std::vector<ImagePixel>& expected) {
  for (std::size_t index = 0; index < expected.size(); ++index) {
    const std::uint32_t target = assembly.target()[first_pixel + index];
    QCOMPARE(std::size_t(target / assembly.width()), expected[index].row);
    QCOMPARE(std::size_t(target % assembly.width()), expected[index].column);
  }
}

// Every pixel: slab_to_image of its centre is exactly its target's column and row. The slab
// stacks segments along the slow scan, so pixel (segment, row, col) is at fs = col,
// ss = segment * rows + row.
void check_slab_to_image_hits_targets(const DetectorDescription& detector,
                                      const ImageAssembly& assembly) {
  std::size_t pixel = 0;
  for (int segment = 0; segment < detector.segments; ++segment)
    for (int row = 0; row < detector.rows; ++row)
      for (int col = 0; col < detector.cols; ++col, ++pixel) {
        double x = -1, y = -1;
        assembly.slab_to_image(col, double(segment) * detector.rows + row, x, y);
        const std::uint32_t target = assembly.target()[pixel];
        // A large pixel (unrotated segments only here) covers row_size x col_size image pixels
        // from its target: its centre is their middle.
        const double expected_x =
            double(target % assembly.width()) + 0.5 * (detector.grid().col_size(col) - 1);
        const double expected_y =
            double(target / assembly.width()) + 0.5 * (detector.grid().row_size(row) - 1);
        if (x != expected_x || y != expected_y)
          QFAIL(qPrintable(QStringLiteral("pixel %1 (segment %2, row %3, col %4): slab_to_image "
                                          "(%5, %6), target column %7 row %8")
                               .arg(pixel)
                               .arg(segment)
                               .arg(row)
                               .arg(col)
                               .arg(x)
                               .arg(y)
                               .arg(target % assembly.width())
                               .arg(target / assembly.width())));
      }
}

// Assembles values 1, 2, 3, ... (pixel index + 1) and checks every image pixel: the value of the
// event pixel that lands there, or NaN where none does. For detectors of normal pixels.
void check_assembled_values(const DetectorDescription& detector, const ImageAssembly& assembly) {
  QVERIFY(assembly.large_pixel_shares().empty());
  std::vector<float> values(detector.pixels());
  for (std::size_t pixel = 0; pixel < values.size(); ++pixel) values[pixel] = float(pixel + 1);
  std::vector<float> image(assembly.width() * assembly.height(), -7.0f);
  assembly.assemble(values.data(), image.data());
  std::vector<float> expected(image.size(), std::nanf(""));
  for (std::size_t pixel = 0; pixel < values.size(); ++pixel)
    expected[assembly.target()[pixel]] = values[pixel];
  std::size_t gaps = 0;
  for (std::size_t index = 0; index < image.size(); ++index) {
    if (std::isnan(expected[index])) {
      QVERIFY2(std::isnan(image[index]), qPrintable(QStringLiteral("gap %1").arg(index)));
      ++gaps;
    } else {
      QCOMPARE(image[index], expected[index]);
    }
  }
  QCOMPARE(gaps, image.size() - detector.pixels());  // targets are distinct
}

void check_distinct_targets(const ImageAssembly& assembly) {
  std::vector<std::uint32_t> targets = assembly.target();
  std::sort(targets.begin(), targets.end());
  QVERIFY(std::adjacent_find(targets.begin(), targets.end()) == targets.end());
  QVERIFY(targets.back() < assembly.width() * assembly.height());
}

}  // namespace

class ImageAssemblyTest : public QObject {
  Q_OBJECT

 private slots:
  void unrotatedSegmentsKeepTheirRowsAndColumns() {
    // Segment 1 to the right of segment 0, one column of gap, one row lower.
    const DetectorDescription detector = two_segments({4, 1, 0});
    const ImageAssembly assembly(detector);
    QCOMPARE(assembly.width(), std::size_t(7));
    QCOMPARE(assembly.height(), std::size_t(3));
    check_targets(assembly, 0, {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}});
    check_targets(assembly, 6, {{1, 4}, {1, 5}, {1, 6}, {2, 4}, {2, 5}, {2, 6}});
    check_assembled_values(detector, assembly);
    check_slab_to_image_hits_targets(detector, assembly);
  }

  void aSegmentRotatedBy90DegreesRunsItsColumnsDown() {
    // Corner at (10, 0): pixel (r, c) centre at x = 10 - (r + 0.5), y = c + 0.5.
    const DetectorDescription detector = two_segments({10, 0, 90});
    const ImageAssembly assembly(detector);
    QCOMPARE(assembly.width(), std::size_t(10));
    QCOMPARE(assembly.height(), std::size_t(3));
    check_targets(assembly, 6, {{0, 9}, {1, 9}, {2, 9}, {0, 8}, {1, 8}, {2, 8}});
    check_assembled_values(detector, assembly);
    check_slab_to_image_hits_targets(detector, assembly);
  }

  void aSegmentRotatedBy180DegreesRunsBackwards() {
    // Corner at (10, 5): pixel (r, c) centre at x = 10 - (c + 0.5), y = 5 - (r + 0.5).
    const DetectorDescription detector = two_segments({10, 5, 180});
    const ImageAssembly assembly(detector);
    QCOMPARE(assembly.width(), std::size_t(10));
    QCOMPARE(assembly.height(), std::size_t(5));
    check_targets(assembly, 6, {{4, 9}, {4, 8}, {4, 7}, {3, 9}, {3, 8}, {3, 7}});
    check_assembled_values(detector, assembly);
    check_slab_to_image_hits_targets(detector, assembly);
  }

  void aSegmentRotatedBy270DegreesRunsItsColumnsUp() {
    // Corner at (4, 6): pixel (r, c) centre at x = 4 + (r + 0.5), y = 6 - (c + 0.5).
    const DetectorDescription detector = two_segments({4, 6, 270});
    const ImageAssembly assembly(detector);
    QCOMPARE(assembly.width(), std::size_t(6));
    QCOMPARE(assembly.height(), std::size_t(6));
    check_targets(assembly, 6, {{5, 4}, {4, 4}, {3, 4}, {5, 5}, {4, 5}, {3, 5}});
    check_assembled_values(detector, assembly);
    check_slab_to_image_hits_targets(detector, assembly);
  }

  void negativeCoordinatesMoveTheImageOrigin() {
    // Segment 1 rotated by 180 about the origin reaches x = -3, y = -2: the image starts there.
    const DetectorDescription detector = two_segments({0, 0, 180});
    const ImageAssembly assembly(detector);
    QCOMPARE(assembly.width(), std::size_t(6));
    QCOMPARE(assembly.height(), std::size_t(4));
    check_targets(assembly, 0, {{2, 3}, {2, 4}, {2, 5}, {3, 3}, {3, 4}, {3, 5}});
    check_targets(assembly, 6, {{1, 2}, {1, 1}, {1, 0}, {0, 2}, {0, 1}, {0, 0}});
    check_assembled_values(detector, assembly);
    check_slab_to_image_hits_targets(detector, assembly);
  }

  void aFractionalPlacementGoesToThePixelHoldingTheCentre() {
    // Segment 1 at x = 3.25: centres at 3.75, 4.75, 5.75 lie in image columns 3, 4, 5; the
    // bounds 0..6.25 round out to 7 columns. slab_to_image keeps the exact position.
    const DetectorDescription detector = two_segments({3.25, 0, 0});
    const ImageAssembly assembly(detector);
    QCOMPARE(assembly.width(), std::size_t(7));
    QCOMPARE(assembly.height(), std::size_t(2));
    check_targets(assembly, 6, {{0, 3}, {0, 4}, {0, 5}, {1, 3}, {1, 4}, {1, 5}});
    double x = 0, y = 0;
    assembly.slab_to_image(1.0, 3.0, x, y);  // segment 1, row 1, col 1
    QCOMPARE(x, 4.25);
    QCOMPARE(y, 1.0);
    check_distinct_targets(assembly);
  }

  void slabToImageFollowsFractionalPositionsAndSegmentBorders() {
    // Segment 1 rotated by 90 at (10, 0); a centroid between pixels moves with the rotation.
    const DetectorDescription detector = two_segments({10, 0, 90});
    const ImageAssembly assembly(detector);
    double x = 0, y = 0;
    // Segment 1 (ss 2..3), row 0.25, col 1.5: x = 10 - 0.75 - 0.5 = 8.75, y = 2 - 0.5 = 1.5.
    assembly.slab_to_image(1.5, 2.25, x, y);
    QCOMPARE(x, 8.75);
    QCOMPARE(y, 1.5);
    // ss = 1.49 still belongs to segment 0's last row: x = fs, y = ss.
    assembly.slab_to_image(0.75, 1.49, x, y);
    QCOMPARE(x, 0.75);
    QVERIFY(std::fabs(y - 1.49) < 1e-12);  // 1.49 + 0.5 - 0.5 may round in the last bit
    // ss = 1.5 is the first half-row of segment 1 (row -0.5 there): x = 10 - 0 - 0.5 = 9.5.
    assembly.slab_to_image(0.0, 1.5, x, y);
    QCOMPARE(x, 9.5);
    QCOMPARE(y, 0.0);
  }

  void theEpix10ka2mAssemblesWithItsGaps() {
    const DetectorDescription detector = find_detector("epix10ka2m");
    const ImageAssembly assembly(detector);
    // 4 x 4 segments of 352 x 384 at x = 0, 392, 784, 1176 and y = 0, 360, 720, 1080.
    QCOMPARE(assembly.width(), std::size_t(1176 + 384));
    QCOMPARE(assembly.height(), std::size_t(1080 + 352));
    const std::size_t width = 1560;
    // Segment 5 (x 392, y 360), row 10, col 20.
    QCOMPARE(std::size_t(assembly.target()[5 * 352 * 384 + 10 * 384 + 20]),
             (360 + 10) * width + 392 + 20);
    // The last pixel of the last segment is the image's last pixel.
    QCOMPARE(std::size_t(assembly.target().back()), 1432 * width - 1);
    for (std::size_t segment = 0; segment < 16; ++segment) {
      const std::size_t x0 = 392 * (segment % 4), y0 = 360 * (segment / 4);
      for (std::size_t row : {std::size_t(0), std::size_t(351)})
        for (std::size_t col : {std::size_t(0), std::size_t(383)})
          QCOMPARE(std::size_t(assembly.target()[segment * 352 * 384 + row * 384 + col]),
                   (y0 + row) * width + x0 + col);
    }
    check_distinct_targets(assembly);
    check_assembled_values(detector, assembly);
    check_slab_to_image_hits_targets(detector, assembly);
  }

  void theJungfrau4mAssemblesWithItsGaps() {
    const DetectorDescription detector = find_detector("jungfrau4m");
    const ImageAssembly assembly(detector);
    // 2 x 4 modules of 514 x 1030 normal pixels at x = 0, 1039 and y = 0, 550, 1100, 1650.
    QCOMPARE(assembly.width(), std::size_t(1039 + 1030));
    QCOMPARE(assembly.height(), std::size_t(1650 + 514));
    const std::size_t width = 2069;
    // Module 3 (x 1039, y 550), row 511 (image row 513 of the module: 2 pixels past the double
    // rows 255 and 256), col 0.
    QCOMPARE(std::size_t(assembly.target()[3 * 512 * 1024 + 511 * 1024]),
             (550 + 513) * width + 1039);
    check_distinct_targets(assembly);
    check_slab_to_image_hits_targets(detector, assembly);

    // Per module, counted by hand: rows 255, 256 and columns 255, 256, 511, 512, 767, 768 are
    // double, their 2 x 6 crossings quadruple; each double pixel has 2 shares, a quadruple 4.
    const std::size_t quadruple = 2 * 6, double_only = 2 * 1024 + 6 * 512 - 2 * quadruple;
    QCOMPARE(assembly.large_pixel_shares().size(), 8 * (4 * quadruple + 2 * double_only));

    // Values 1, 2, 3, ...: the image holds every module's 514 x 1030 pixels and the event's sum.
    std::vector<float> values(detector.pixels());
    double event_sum = 0;
    for (std::size_t pixel = 0; pixel < values.size(); ++pixel) {
      values[pixel] = float(pixel % 4096 + 1);
      event_sum += values[pixel];
    }
    std::vector<float> image(assembly.width() * assembly.height(), -7.0f);
    assembly.assemble(values.data(), image.data());
    double image_sum = 0;
    std::size_t covered = 0;
    for (const float value : image)
      if (!std::isnan(value)) image_sum += value, ++covered;
    QCOMPARE(covered, std::size_t(8) * 514 * 1030);
    QCOMPARE(image_sum, event_sum);
    // Module 0's quadruple pixel (255, 255) fills image rows and columns 255 and 256; the double
    // pixel (0, 256) columns 257 and 258 of row 0; pixel (0, 257) column 259 alone.
    const auto value_of = [&](int row, int col) { return values[std::size_t(row) * 1024 + col]; };
    for (const std::size_t row : {255, 256})
      for (const std::size_t col : {255, 256})
        QCOMPARE(image[row * width + col], value_of(255, 255) / 4);
    QCOMPARE(image[257], value_of(0, 256) / 2);
    QCOMPARE(image[258], value_of(0, 256) / 2);
    QCOMPARE(image[259], value_of(0, 257));
    // Module 1 starts at x 1039: the 9 columns 1030..1038 between the modules stay empty.
    QVERIFY(std::isnan(image[1029 + 1]) && std::isnan(image[1038]));
    QCOMPARE(image[1039], values[std::size_t(512) * 1024]);
  }

  // A segment of 4 x 6 pixels in ASICs of 2 x 3 with double pixels at the ASIC edges: raw rows
  // 1 and 2 and columns 2 and 3 are double, so the image is 6 x 8 (rows 1-2 and 3-4 of the image
  // come from raw rows 1 and 2, columns 2-3 and 4-5 from raw columns 2 and 3). Values
  // 4 (6 r + c + 1); each image pixel written out by hand.
  void largePixelsShareTheirValueAmongTheImagePixelsTheyCover() {
    DetectorDescription detector;
    detector.name = "large_pixels";
    detector.encoding = RawEncoding::Float32;
    detector.segments = 1;
    detector.rows = 4;
    detector.cols = 6;
    detector.asic_rows = 2;
    detector.asic_cols = 3;
    detector.large_pixel_factor = 2;
    detector.pixel_size_um = 75;
    detector.gain_modes = {{"calibrated", 1.0}};
    detector.placement = {{0, 0, 0}};
    const ImageAssembly assembly(detector);
    QCOMPARE(assembly.width(), std::size_t(8));
    QCOMPARE(assembly.height(), std::size_t(6));
    std::vector<float> values(24);
    for (std::size_t pixel = 0; pixel < values.size(); ++pixel) values[pixel] = 4.0f * (pixel + 1);
    std::vector<float> image(48, -7.0f);
    assembly.assemble(values.data(), image.data());
    const std::vector<float> expected = {
        4,  8,  6,  6,  8,  8,  20, 24,  // raw row 0: columns 2 and 3 halved
        14, 16, 9,  9,  10, 10, 22, 24,  // raw row 1 halved, quartered at (1, 2) and (1, 3)
        14, 16, 9,  9,  10, 10, 22, 24,  //
        26, 28, 15, 15, 16, 16, 34, 36,  // raw row 2 halved, quartered at (2, 2) and (2, 3)
        26, 28, 15, 15, 16, 16, 34, 36,  //
        76, 80, 42, 42, 44, 44, 92, 96,  // raw row 3: columns 2 and 3 halved
    };
    for (std::size_t index = 0; index < expected.size(); ++index)
      if (image[index] != expected[index])
        QFAIL(qPrintable(QStringLiteral("image pixel (%1, %2) is %3, expected %4")
                             .arg(index / 8)
                             .arg(index % 8)
                             .arg(image[index])
                             .arg(expected[index])));
    double sum = 0;
    for (const float value : image) sum += value;
    QCOMPARE(sum, 4.0 * 300);  // the event's 4 (1 + ... + 24)
    // The quadruple pixel (1, 2): its first image pixel, and its centre amid its four.
    QCOMPARE(std::size_t(assembly.target()[1 * 6 + 2]), std::size_t(1 * 8 + 2));
    double x = 0, y = 0;
    assembly.slab_to_image(2, 1, x, y);
    QCOMPARE(x, 2.5);
    QCOMPARE(y, 1.5);
    assembly.slab_to_image(4, 3, x, y);  // a normal pixel after both edges
    QCOMPARE(x, 6.0);
    QCOMPARE(y, 5.0);
  }

  void aSingleSegmentDetectorIsItsOwnImage() {
    const DetectorDescription detector = find_detector("generic_f32");
    const ImageAssembly assembly(detector);
    QCOMPARE(assembly.width(), std::size_t(1024));
    QCOMPARE(assembly.height(), std::size_t(1024));
    for (std::size_t pixel = 0; pixel < detector.pixels(); pixel += 4099)
      QCOMPARE(std::size_t(assembly.target()[pixel]), pixel);
    check_distinct_targets(assembly);
  }

  void detectorsThatCannotBeAssembledAreRefused() {
    DetectorDescription unplaced = two_segments({4, 0, 0});
    unplaced.placement.pop_back();
    try {
      ImageAssembly assembly(unplaced);
      QFAIL("assembled a detector with an unplaced segment");
    } catch (const InputError& error) {
      QVERIFY2(QString::fromUtf8(error.what()).contains(QStringLiteral("places 1 of its 2")),
               error.what());
    }
    const DetectorDescription far = two_segments({100, 0, 0});
    try {
      ImageAssembly assembly(far, 64);
      QFAIL("assembled an image wider than the limit");
    } catch (const InputError& error) {
      QVERIFY2(QString::fromUtf8(error.what()).contains(QStringLiteral("more than 64 on a side")),
               error.what());
    }
    QCOMPARE(ImageAssembly(far, 103).width(), std::size_t(103));
  }
};

QTEST_MAIN(ImageAssemblyTest)
#include "test_image_assembly.moc"
