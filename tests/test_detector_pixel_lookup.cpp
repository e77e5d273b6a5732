// The inverse of the image assembly (core/detector_pixel_lookup.hpp): for every detector pixel of
// the built-in ePix10ka2M and Jungfrau 4M, and of descriptions with rotated, fractionally placed,
// large-pixelled and overlapping segments, the image pixels the engine's ImageAssembly writes it
// to map back to that pixel, and every image pixel maps to the pixel whose value the assembled
// image holds there (values 1, 2, 3, ... in event order: the value names the pixel); gaps map to
// nothing. A few positions are also worked out by hand from the placements.
#include <QtTest/QtTest>

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/detector.hpp"
#include "core/detector_pixel_lookup.hpp"
#include "core/image_assembly.hpp"

using namespace livedrp;

namespace {

QString describe(const std::optional<DetectorPixel>& pixel) {
  if (!pixel) return QStringLiteral("gap");
  return QStringLiteral("segment %1, ss %2, fs %3 (index %4)")
      .arg(pixel->segment)
      .arg(pixel->ss)
      .arg(pixel->fs)
      .arg(pixel->index);
}

DetectorPixel pixel_of_index(const DetectorDescription& detector, std::uint64_t index) {
  const auto per_segment = std::uint64_t(detector.rows) * std::uint64_t(detector.cols);
  DetectorPixel pixel;
  pixel.segment = int(index / per_segment);
  pixel.ss = int(index % per_segment / std::uint64_t(detector.cols));
  pixel.fs = int(index % std::uint64_t(detector.cols));
  pixel.index = index;
  return pixel;
}

// Detector pixel -> image: each pixel's first image pixel (target) and every image pixel of a
// large one (its shares) map back to it. Only for detectors whose segments do not overlap, where
// no pixel's image pixel is taken by another.
void check_every_pixel_maps_back(const DetectorDescription& detector,
                                 const ImageAssembly& assembly) {
  const AssemblyLayout& layout = assembly.layout();
  const auto image_row_column = [&](std::uint32_t image_pixel) {
    return std::pair{std::size_t(image_pixel / layout.width),
                     std::size_t(image_pixel % layout.width)};
  };
  for (std::uint64_t index = 0; index < detector.pixels(); ++index) {
    const auto [row, column] = image_row_column(assembly.target()[index]);
    const std::optional<DetectorPixel> found = detector_pixel_at(layout, row, column);
    if (found != pixel_of_index(detector, index))
      QFAIL(qPrintable(QStringLiteral("pixel %1 assembled to row %2, column %3, which maps to %4")
                           .arg(index)
                           .arg(row)
                           .arg(column)
                           .arg(describe(found))));
  }
  for (const ImageAssembly::Share& share : assembly.large_pixel_shares()) {
    const auto [row, column] = image_row_column(share.image_pixel);
    const std::optional<DetectorPixel> found = detector_pixel_at(layout, row, column);
    if (found != pixel_of_index(detector, share.pixel))
      QFAIL(qPrintable(QStringLiteral("large pixel %1's share at row %2, column %3 maps to %4")
                           .arg(share.pixel)
                           .arg(row)
                           .arg(column)
                           .arg(describe(found))));
  }
}

// Image -> detector pixel: assemble values 1, 2, 3, ... (exact in float32 below 2^24 pixels);
// every image pixel must map to the pixel whose value (or, for a large pixel, whose share of it)
// the image holds, and NaN (a gap) to nothing. `mapped`: the image pixels that map to a pixel.
void check_every_image_pixel_names_its_value(const DetectorDescription& detector,
                                             const ImageAssembly& assembly, std::size_t& mapped) {
  const AssemblyLayout& layout = assembly.layout();
  const SegmentGrid grid = detector.grid();
  std::vector<float> values(detector.pixels());
  for (std::size_t pixel = 0; pixel < values.size(); ++pixel) values[pixel] = float(pixel + 1);
  std::vector<float> image(layout.width * layout.height);
  assembly.assemble(values.data(), image.data());
  mapped = 0;
  for (std::size_t row = 0; row < layout.height; ++row)
    for (std::size_t column = 0; column < layout.width; ++column) {
      const float value = image[row * layout.width + column];
      const std::optional<DetectorPixel> found = detector_pixel_at(layout, row, column);
      bool right = false;
      if (!found) {
        right = std::isnan(value);
      } else {
        ++mapped;
        if (found->index < values.size() && found == pixel_of_index(detector, found->index)) {
          // The assembly's own arithmetic for a share: the value times 1 / (parts).
          const int parts = grid.row_size(found->ss) * grid.col_size(found->fs);
          const float share =
              parts == 1 ? values[found->index] : values[found->index] * (1.0f / float(parts));
          right = value == share;
        }
      }
      if (!right)
        QFAIL(qPrintable(QStringLiteral("image row %1, column %2 holds %3 but maps to %4")
                             .arg(row)
                             .arg(column)
                             .arg(value)
                             .arg(describe(found))));
    }
}

DetectorDescription float_detector(int segments, int rows, int cols) {
  DetectorDescription detector;
  detector.name = "handmade";
  detector.encoding = RawEncoding::Float32;
  detector.segments = segments;
  detector.rows = rows;
  detector.cols = cols;
  detector.asic_rows = rows;
  detector.asic_cols = cols;
  detector.pixel_size_um = 100;
  detector.gain_modes = {{"calibrated", 1.0}};
  return detector;
}

}  // namespace

class DetectorPixelLookupTest : public QObject {
  Q_OBJECT

 private slots:
  void theEpix10ka2mMapsEveryPixelBackToItself() {
    const DetectorDescription detector = find_detector("epix10ka2m");
    const ImageAssembly assembly(detector);
    check_every_pixel_maps_back(detector, assembly);
    // One image pixel per detector pixel, the rest gaps.
    std::size_t mapped = 0;
    check_every_image_pixel_names_its_value(detector, assembly, mapped);
    QCOMPARE(mapped, detector.pixels());
  }

  void theJungfrau4mMapsEveryPixelBackToItself() {
    const DetectorDescription detector = find_detector("jungfrau4m");
    const ImageAssembly assembly(detector);
    check_every_pixel_maps_back(detector, assembly);
    // Every module covers 514 x 1030 image pixels: its double and quadruple pixels map back from
    // each of the 2 or 4 they cover.
    std::size_t mapped = 0;
    check_every_image_pixel_names_its_value(detector, assembly, mapped);
    QCOMPARE(mapped, std::size_t(8) * 514 * 1030);
  }

  void positionsWorkedOutByHandFromThePlacements() {
    // ePix10ka2M segment 5 sits at x 392, y 360 unrotated: image row 360 + 12, column 392 + 300
    // is its ss 12, fs 300, event pixel 5 * 352 * 384 + 12 * 384 + 300.
    const ImageAssembly epix(find_detector("epix10ka2m"));
    QCOMPARE(epix.layout().origin_x, 0.0);
    QCOMPARE(epix.layout().origin_y, 0.0);
    QCOMPARE(detector_pixel_at(epix.layout(), 372, 692),
             std::optional(DetectorPixel{5, 12, 300, 5 * 352 * 384 + 12 * 384 + 300}));
    QCOMPARE(detector_pixel_at(epix.layout(), 0, 0), std::optional(DetectorPixel{0, 0, 0, 0}));
    // Columns 384..391 lie between segments 0 and 1; rows 352..359 between 0 and 4.
    QCOMPARE(detector_pixel_at(epix.layout(), 0, 384), std::nullopt);
    QCOMPARE(detector_pixel_at(epix.layout(), 355, 10), std::nullopt);

    // Jungfrau: raw columns 255 and 256 of a module are double (ASIC edge at 256), so the
    // module's image columns 255-256 show fs 255, 257-258 fs 256, 259 fs 257.
    const ImageAssembly jungfrau(find_detector("jungfrau4m"));
    const AssemblyLayout& layout = jungfrau.layout();
    const int expected_fs[] = {254, 255, 255, 256, 256, 257};
    for (int k = 0; k < 6; ++k)
      QCOMPARE(detector_pixel_at(layout, 0, std::size_t(254 + k)),
               std::optional(DetectorPixel{0, 0, expected_fs[k], std::uint64_t(expected_fs[k])}));
    // Module 3 (x 1039, y 550): image row 550 + 513 is its raw row 511 (two rows past the double
    // rows 255 and 256), column 1039 its fs 0.
    QCOMPARE(detector_pixel_at(layout, 550 + 513, 1039),
             std::optional(DetectorPixel{3, 511, 0, 3 * 512 * 1024 + 511 * 1024}));
    // Columns 1030..1038 lie between modules 0 and 1.
    QCOMPARE(detector_pixel_at(layout, 0, 1030), std::nullopt);
    QCOMPARE(detector_pixel_at(layout, 0, 1038), std::nullopt);
  }

  // Four segments of 4 x 6 pixels in ASICs of 2 x 3, triple pixels at the ASIC edges (raw rows
  // 1, 2 and columns 2, 3: an 8 x 10 footprint), turned by 0, 90, 180 and 270 degrees about corners
  // at fractional positions: a quarter pixel off, and half a pixel off, where centres fall on image
  // pixel edges and the assembly's tie rule (the pixel right or below) decides.
  void rotatedFractionalLargePixelledSegmentsMapBack() {
    DetectorDescription detector = float_detector(4, 4, 6);
    detector.asic_rows = 2;
    detector.asic_cols = 3;
    detector.large_pixel_factor = 3;
    detector.placement = {{0.25, 0.5, 0}, {30.5, 0.25, 90}, {40.75, 20.5, 180}, {0.5, 40.25, 270}};
    const ImageAssembly assembly(detector);
    check_every_pixel_maps_back(detector, assembly);
    // Each segment's 8 x 10 normal pixels land on 80 distinct image pixels.
    std::size_t mapped = 0;
    check_every_image_pixel_names_its_value(detector, assembly, mapped);
    QCOMPARE(mapped, std::size_t(4 * 80));

    // By hand, segment 1 (corner at x 30.5, y 0.25, turned 90 degrees: fs runs down, ss to the
    // left): pixel (ss 0, fs 0) has its centre at x = 30.5 - 0.5 = 30, y = 0.25 + 0.5 = 0.75,
    // relative to the image's origin (the bounds' floor: x 0, y 0): image row 0, column 30.
    QCOMPARE(assembly.layout().origin_x, 0.0);
    QCOMPARE(assembly.layout().origin_y, 0.0);
    QCOMPARE(detector_pixel_at(assembly.layout(), 0, 30),
             std::optional(DetectorPixel{1, 0, 0, 24}));
    // Its raw row 1 is triple (an ASIC edge at row 2), expanded rows 1..3: centres at x 29, 28,
    // 27, all pixel (ss 1, fs 0).
    for (const std::size_t column : {29, 28, 27})
      QCOMPARE(detector_pixel_at(assembly.layout(), 0, column),
               std::optional(DetectorPixel{1, 1, 0, 24 + 6}));
  }

  // Segments that overlap: the image keeps the pixel the assembly wrote last (a large pixel's
  // share over a normal pixel, else the later in event order), and the lookup names that one.
  void overlappingSegmentsNameThePixelTheImageKeeps() {
    DetectorDescription detector = float_detector(3, 4, 6);
    detector.asic_rows = 2;
    detector.asic_cols = 3;
    detector.large_pixel_factor = 2;
    // Footprints of 6 x 8 normal pixels (double rows 1, 2 and columns 2, 3): segment 1 covers
    // the lower right of segment 0, segment 2 (turned about its corner at x 12, y 6) both.
    detector.placement = {{0, 0, 0}, {3, 2, 0}, {12, 6, 180}};
    const ImageAssembly assembly(detector);
    std::size_t mapped = 0;
    check_every_image_pixel_names_its_value(detector, assembly, mapped);
    // By hand: segment 1's corner at (3, 2): its pixel (ss 0, fs 0) covers image row 2, column
    // 3, which segment 0's raw pixel (ss 1, fs 2) covers too (the second part of its double row
    // 1 and of its double column 2: a share of a large pixel, written after every normal pixel),
    // so segment 0 keeps it; segment 2 reaches only columns 4 and up.
    QCOMPARE(detector_pixel_at(assembly.layout(), 2, 3),
             std::optional(DetectorPixel{0, 1, 2, 1 * 6 + 2}));
  }

  void pixelsOutsideTheImageAreNone() {
    const ImageAssembly assembly(find_detector("epix10ka2m"));
    const AssemblyLayout& layout = assembly.layout();
    QCOMPARE(detector_pixel_at(layout, layout.height, 0), std::nullopt);
    QCOMPARE(detector_pixel_at(layout, 0, layout.width), std::nullopt);
    // The last row and column hold segment 15's far corner.
    QCOMPARE(detector_pixel_at(layout, layout.height - 1, layout.width - 1),
             std::optional(DetectorPixel{15, 351, 383, 16ull * 352 * 384 - 1}));
  }
};

QTEST_APPLESS_MAIN(DetectorPixelLookupTest)
#include "test_detector_pixel_lookup.moc"
