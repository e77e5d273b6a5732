// The peak-finding topics (docs/protocol.md): `peaks`, `image` and the `peak_finding` block of
// `stats` survive encode -> wire -> decode value for value, and every malformed message is refused
// with an error naming what is wrong.
#include <QtTest/QtTest>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "protocol/message.hpp"
#include "protocol/peaks_topic.hpp"
#include "protocol/topics.hpp"

using namespace livedrp::protocol;
using nlohmann::json;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Values with many significant bits, so that any rounding or column mix-up on the way shows.
EventPeaks sample_peaks() {
  EventPeaks peaks;
  peaks.sequence = 4'242;
  peaks.pulse_id = 1'000'000'000'123ULL;
  peaks.found = 5;  // max_num_peaks cut the list to three
  peaks.min_peaks_for_hit = 3;
  peaks.hit = true;
  peaks.params_version = 7;
  peaks.rerun = false;
  for (int index = 0; index < 3; ++index) {
    PeakRow row;
    row.fs = 10.125f + 100.0f * float(index);
    row.ss = 300.375f + 352.0f * float(index);
    row.x = 11.625f + 50.0f * float(index);
    row.y = 7.875f + 40.0f * float(index);
    row.intensity = 12345.678f / float(index + 1);
    row.max_value = 987.654f + float(index);
    row.sigma = 3.14159f * float(index + 1);
    row.snr = 42.4242f - float(index);
    row.segment = index * 5;
    row.num_pixels = 3 + index;
    peaks.peaks.push_back(row);
  }
  return peaks;
}

// A 4 x 5 image of a 2-segment detector with two gain modes; has_peaks with two peaks.
ImageFrame sample_image() {
  ImageFrame image;
  image.sequence = 4'242;
  image.pulse_id = 1'000'000'000'123ULL;
  image.height = 4;
  image.width = 5;
  for (std::size_t pixel = 0; pixel < 20; ++pixel) image.pixels.push_back(0.5f * float(pixel) - 3);
  image.pixels[2] = kNaN;  // a gap between segments
  image.pixels[7] = 0.0f;  // a masked pixel
  image.unit = "keV";
  image.gain_modes = {"g0", "g1", "bad"};
  image.segments = 2;
  image.gain_occupancy = {0.75f, 0.125f, 0.125f, 0.5f, 0.25f, 0.25f};
  image.has_peaks = true;
  image.peaks.sequence = image.sequence;
  image.peaks.pulse_id = image.pulse_id;
  image.peaks.found = 2;
  image.peaks.min_peaks_for_hit = 1;
  image.peaks.hit = true;
  image.peaks.params_version = 2;
  image.peaks.rerun = true;
  PeakRow first;
  first.fs = 1.25f, first.ss = 0.5f, first.x = 1.25f, first.y = 0.5f;
  first.intensity = 100.5f, first.max_value = 60.25f, first.sigma = 1.5f, first.snr = 67.0f;
  first.segment = 0, first.num_pixels = 2;
  PeakRow second = first;
  second.fs = 0.0f, second.ss = 3.0f, second.x = 4.5f, second.y = 3.5f;  // at the image's edge
  second.segment = 1, second.num_pixels = 1;
  image.peaks.peaks = {first, second};
  return image;
}

PeakFindingStats sample_stats() {
  PeakFindingStats stats;
  stats.interval_events = 40;
  stats.interval_hits = 3;
  stats.interval_peaks = 97;
  stats.total_events = 1'000;
  stats.total_hits = 81;
  stats.total_peaks = 2'345;
  stats.interval_hit_rate = 3.0 / 40.0;
  stats.params_version = 2;
  stats.peaks_messages = 70;
  stats.hits_not_sent = 11;
  return stats;
}

Message through_the_wire(const Message& message) {
  const std::vector<std::string> parts = encode(message);
  return decode(std::vector<std::string_view>(parts.begin(), parts.end()));
}

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof(float)) == 0;
}

void compare_rows(const std::vector<PeakRow>& got, const std::vector<PeakRow>& expected) {
  QCOMPARE(got.size(), expected.size());
  for (std::size_t index = 0; index < got.size(); ++index) {
    QVERIFY(same_bits(got[index].fs, expected[index].fs));
    QVERIFY(same_bits(got[index].ss, expected[index].ss));
    QVERIFY(same_bits(got[index].x, expected[index].x));
    QVERIFY(same_bits(got[index].y, expected[index].y));
    QVERIFY(same_bits(got[index].intensity, expected[index].intensity));
    QVERIFY(same_bits(got[index].max_value, expected[index].max_value));
    QVERIFY(same_bits(got[index].sigma, expected[index].sigma));
    QVERIFY(same_bits(got[index].snr, expected[index].snr));
    QCOMPARE(got[index].segment, expected[index].segment);
    QCOMPARE(got[index].num_pixels, expected[index].num_pixels);
  }
}

float float_at(const Frame& frame, std::size_t index) {
  float value = 0;
  std::memcpy(&value, frame.data.data() + index * sizeof(float), sizeof(float));
  return value;
}

void set_float(Frame& frame, std::size_t index, float value) {
  std::memcpy(frame.data.data() + index * sizeof(float), &value, sizeof(float));
}

void set_int(Frame& frame, std::size_t index, std::int32_t value) {
  std::memcpy(frame.data.data() + index * sizeof(std::int32_t), &value, sizeof(std::int32_t));
}

// The same values as a float64 frame (what numpy sends by default).
Frame as_float64(const Frame& frame) {
  Frame wide;
  wide.dtype = DType::Float64;
  wide.shape = frame.shape;
  wide.data.resize(frame.element_count() * sizeof(double));
  for (std::size_t index = 0; index < frame.element_count(); ++index) {
    const double value = float_at(frame, index);
    std::memcpy(wide.data.data() + index * sizeof(double), &value, sizeof(double));
  }
  return wide;
}

struct BadCase {
  const char* name;
  std::function<void(Message&)> spoil;
  const char* expected;  // part of the error text
};

template <typename Decode>
void expect_refusals(const std::vector<BadCase>& cases, const Message& good, Decode decode_one,
                     const QString& prefix) {
  for (const BadCase& bad : cases) {
    Message message = good;
    bad.spoil(message);
    try {
      decode_one(message);
      QFAIL(qPrintable(QStringLiteral("accepted: %1").arg(bad.name)));
    } catch (const ProtocolError& error) {
      const QString text = QString::fromUtf8(error.what());
      QVERIFY2(text.contains(QString::fromUtf8(bad.expected)),
               qPrintable(QStringLiteral("%1: got \"%2\"").arg(bad.name, text)));
      QVERIFY2(text.startsWith(prefix), qPrintable(text));
    }
  }
}

}  // namespace

class ProtocolPeaksTest : public QObject {
  Q_OBJECT

 private slots:
  // --- peaks -----------------------------------------------------------------------------------

  void peaksRoundTripKeepsEveryFieldAndValue() {
    const EventPeaks original = sample_peaks();
    Message message = make_peaks_message(original);
    message.run = 9;
    const Message decoded = through_the_wire(message);
    QCOMPARE(decoded.topic, std::string("peaks"));
    QCOMPARE(decoded.run, std::int64_t(9));
    QCOMPARE(decoded.sequence, original.sequence);
    QCOMPARE(decoded.pulse_id, original.pulse_id);
    QVERIFY(decoded.time_ns > 0);

    const EventPeaks peaks = peaks_from_message(decoded);
    QCOMPARE(peaks.sequence, std::uint64_t(4'242));
    QCOMPARE(peaks.pulse_id, std::uint64_t(1'000'000'000'123ULL));
    QCOMPARE(peaks.found, std::uint64_t(5));
    QCOMPARE(peaks.hit, true);
    QCOMPARE(peaks.min_peaks_for_hit, std::uint64_t(3));
    QCOMPARE(peaks.params_version, std::uint64_t(7));
    QCOMPARE(peaks.rerun, false);
    compare_rows(peaks.peaks, original.peaks);
  }

  void peaksPayloadAndFramesAreWhatTheDocumentSays() {
    const Message message = make_peaks_message(sample_peaks());
    QCOMPARE(message.payload.at("found").get<std::uint64_t>(), std::uint64_t(5));
    QCOMPARE(message.payload.at("hit").get<bool>(), true);
    QCOMPARE(message.payload.at("min_peaks_for_hit").get<std::uint64_t>(), std::uint64_t(3));
    QCOMPARE(message.payload.at("params_version").get<std::uint64_t>(), std::uint64_t(7));
    QCOMPARE(message.payload.at("rerun").get<bool>(), false);
    QCOMPARE(message.payload.at("count").get<std::uint64_t>(), std::uint64_t(3));
    QCOMPARE(message.frames.size(), std::size_t(2));
    QCOMPARE(message.frames[0].dtype, DType::Float32);
    QCOMPARE(message.frames[0].shape, (std::vector<std::uint64_t>{3, 8}));
    QCOMPARE(message.frames[1].dtype, DType::Int32);
    QCOMPARE(message.frames[1].shape, (std::vector<std::uint64_t>{3, 2}));
    // Row 1 (the second peak), column by column: fs, ss, x, y, intensity, max_value, sigma, snr.
    const PeakRow second = sample_peaks().peaks[1];
    const float expected[8] = {second.fs,        second.ss,        second.x,     second.y,
                               second.intensity, second.max_value, second.sigma, second.snr};
    for (std::size_t column = 0; column < 8; ++column)
      QVERIFY(same_bits(float_at(message.frames[0], 8 + column), expected[column]));
    std::int32_t ints[6] = {};
    std::memcpy(ints, message.frames[1].data.data(), sizeof(ints));
    QCOMPARE(ints[2], 5);  // segment of the second peak
    QCOMPARE(ints[3], 4);  // its num_pixels
  }

  void anEmptyListOfAReRunNonHitTravels() {
    // A re-run on recent frames reports every event, hits or not.
    EventPeaks peaks;
    peaks.sequence = 17;
    peaks.found = 0;
    peaks.min_peaks_for_hit = 10;
    peaks.hit = false;
    peaks.params_version = 3;
    peaks.rerun = true;
    const Message message = make_peaks_message(peaks);
    QCOMPARE(message.frames[0].shape, (std::vector<std::uint64_t>{0, 8}));
    QCOMPARE(message.frames[1].shape, (std::vector<std::uint64_t>{0, 2}));
    const EventPeaks decoded = peaks_from_message(through_the_wire(message));
    QCOMPARE(decoded.sequence, std::uint64_t(17));
    QCOMPARE(decoded.found, std::uint64_t(0));
    QCOMPARE(decoded.hit, false);
    QCOMPARE(decoded.rerun, true);
    QCOMPARE(decoded.params_version, std::uint64_t(3));
    QVERIFY(decoded.peaks.empty());
  }

  void float64PeakValuesAreAccepted() {
    const EventPeaks original = sample_peaks();
    Message message = make_peaks_message(original);
    message.frames[0] = as_float64(message.frames[0]);
    const EventPeaks peaks = peaks_from_message(through_the_wire(message));
    compare_rows(peaks.peaks, original.peaks);  // float32 values survive float64 exactly
  }

  void malformedPeaksAreRefusedWithTheFieldNamed() {
    const std::vector<BadCase> cases = {
        {"payload not an object", [](Message& m) { m.payload = json::array({1}); },
         "the payload must be a JSON object"},
        {"found missing", [](Message& m) { m.payload.erase("found"); }, "field 'found' is missing"},
        {"hit missing", [](Message& m) { m.payload.erase("hit"); }, "field 'hit' is missing"},
        {"hit not a boolean", [](Message& m) { m.payload["hit"] = 1; },
         "field 'hit' must be true or false, got number 1"},
        {"rerun missing", [](Message& m) { m.payload.erase("rerun"); }, "field 'rerun' is missing"},
        {"min_peaks_for_hit missing", [](Message& m) { m.payload.erase("min_peaks_for_hit"); },
         "field 'min_peaks_for_hit' is missing"},
        {"params_version negative", [](Message& m) { m.payload["params_version"] = -1; },
         "field 'params_version' must not be negative"},
        {"count missing", [](Message& m) { m.payload.erase("count"); }, "field 'count' is missing"},
        {"count beyond the limit", [](Message& m) { m.payload["count"] = 65'537; },
         "field 'count' must be at most 65536, got 65537"},
        {"count disagrees with the frames", [](Message& m) { m.payload["count"] = 2; },
         "frame 0 (peak values) must have shape [2, 8], got [3, 8]"},
        {"found below the listed count", [](Message& m) { m.payload["found"] = 2; },
         "found (2) is less than the 3 peaks listed"},
        {"hit that contradicts found", [](Message& m) { m.payload["min_peaks_for_hit"] = 6; },
         "hit is true but found (5) and min_peaks_for_hit (6) make it false"},
        {"a frame missing", [](Message& m) { m.frames.pop_back(); },
         "needs 2 frames (peak values, peak segment and num_pixels), got 1"},
        {"a frame too many", [](Message& m) { m.frames.push_back(m.frames[1]); },
         "needs 2 frames (peak values, peak segment and num_pixels), got 3"},
        {"peak values as integers", [](Message& m) { m.frames[0].dtype = DType::Int32; },
         "frame 0 (peak values) must be float32 (or float64), got int32"},
        {"peak values with seven columns",
         [](Message& m) {
           m.frames[0].shape = {3, 7};
           m.frames[0].data.resize(21 * sizeof(float));
         },
         "frame 0 (peak values) must have shape [3, 8], got [3, 7]"},
        {"peak values flat", [](Message& m) { m.frames[0].shape = {24}; },
         "frame 0 (peak values) must have shape [3, 8], got [24]"},
        {"segments as floats", [](Message& m) { m.frames[1].dtype = DType::Float32; },
         "frame 1 (peak segment, num_pixels) must be int32, got float32"},
        {"segments as int64",
         [](Message& m) {
           m.frames[1].dtype = DType::Int64;
           m.frames[1].data.resize(6 * sizeof(std::int64_t));
         },
         "frame 1 (peak segment, num_pixels) must be int32, got int64"},
        {"segment frame transposed",
         [](Message& m) {
           m.frames[1].shape = {2, 3};
         },
         "frame 1 (peak segment, num_pixels) must have shape [3, 2], got [2, 3]"},
        {"fs not a number", [](Message& m) { set_float(m.frames[0], 8 + 0, kNaN); },
         "peak 1: fs is not a finite number"},
        {"ss infinite", [](Message& m) { set_float(m.frames[0], 1, kInf); },
         "peak 0: ss is not a finite number"},
        {"x not a number", [](Message& m) { set_float(m.frames[0], 16 + 2, kNaN); },
         "peak 2: x is not a finite number"},
        {"y infinite", [](Message& m) { set_float(m.frames[0], 3, -kInf); },
         "peak 0: y is not a finite number"},
        {"snr infinite", [](Message& m) { set_float(m.frames[0], 7, kInf); },
         "peak 0: snr is not a finite number"},
        {"sigma negative", [](Message& m) { set_float(m.frames[0], 6, -1.0f); },
         "peak 0: sigma -1.000000 is negative"},
        {"segment negative", [](Message& m) { set_int(m.frames[1], 2, -3); },
         "peak 1: segment -3 is negative"},
        {"num_pixels zero", [](Message& m) { set_int(m.frames[1], 1, 0); },
         "peak 0: num_pixels must be at least 1, got 0"},
        {"another topic", [](Message& m) { m.topic = "image"; }, "topic is 'image', not 'peaks'"},
    };
    expect_refusals(
        cases, make_peaks_message(sample_peaks()), [](const Message& m) { peaks_from_message(m); },
        QStringLiteral("peaks "));
  }

  void theEncoderRefusesWhatTheDecoderWould() {
    EventPeaks too_few_found = sample_peaks();
    too_few_found.found = 1;
    QVERIFY_THROWS_EXCEPTION(ProtocolError, make_peaks_message(too_few_found));
    EventPeaks not_finite = sample_peaks();
    not_finite.peaks[2].fs = kNaN;
    QVERIFY_THROWS_EXCEPTION(ProtocolError, make_peaks_message(not_finite));
    EventPeaks too_many = sample_peaks();
    too_many.peaks.resize(kMaxPeaksPerMessage + 1, too_many.peaks[0]);
    too_many.found = too_many.peaks.size();
    try {
      make_peaks_message(too_many);
      QFAIL("encoded more peaks than a subscriber accepts");
    } catch (const ProtocolError& error) {
      QVERIFY2(QString::fromUtf8(error.what()).contains(QStringLiteral("is more than 65536")),
               error.what());
    }
  }

  // --- image -----------------------------------------------------------------------------------

  void imageRoundTripKeepsPixelsOccupancyAndPeaks() {
    const ImageFrame original = sample_image();
    Message message = make_image_message(original);
    message.run = 3;
    const Message decoded = through_the_wire(message);
    QCOMPARE(decoded.topic, std::string("image"));
    QCOMPARE(decoded.sequence, original.sequence);
    QCOMPARE(decoded.pulse_id, original.pulse_id);

    const ImageFrame image = image_from_message(decoded);
    QCOMPARE(image.sequence, original.sequence);
    QCOMPARE(image.pulse_id, original.pulse_id);
    QCOMPARE(image.height, std::uint64_t(4));
    QCOMPARE(image.width, std::uint64_t(5));
    QCOMPARE(image.unit, std::string("keV"));
    QCOMPARE(image.segments, std::uint64_t(2));
    QCOMPARE(image.gain_modes, (std::vector<std::string>{"g0", "g1", "bad"}));
    QCOMPARE(image.pixels.size(), std::size_t(20));
    for (std::size_t pixel = 0; pixel < 20; ++pixel)
      QVERIFY(same_bits(image.pixels[pixel], original.pixels[pixel]));
    QVERIFY(std::isnan(image.pixels[2]));
    QCOMPARE(image.pixels[19], 6.5f);
    QCOMPARE(image.gain_occupancy, original.gain_occupancy);
    QVERIFY(image.has_peaks);
    QCOMPARE(image.peaks.sequence, original.sequence);
    QCOMPARE(image.peaks.found, std::uint64_t(2));
    QCOMPARE(image.peaks.hit, true);
    QCOMPARE(image.peaks.rerun, true);
    QCOMPARE(image.peaks.params_version, std::uint64_t(2));
    compare_rows(image.peaks.peaks, original.peaks.peaks);
  }

  void imagePayloadAndFramesAreWhatTheDocumentSays() {
    const Message message = make_image_message(sample_image());
    const json& payload = message.payload;
    QCOMPARE(payload.at("height").get<std::uint64_t>(), std::uint64_t(4));
    QCOMPARE(payload.at("width").get<std::uint64_t>(), std::uint64_t(5));
    QCOMPARE(payload.at("unit").get<std::string>(), std::string("keV"));
    QCOMPARE(payload.at("gain_modes").dump(), std::string(R"(["g0","g1","bad"])"));
    QCOMPARE(payload.at("segments").get<std::uint64_t>(), std::uint64_t(2));
    QCOMPARE(payload.at("has_peaks").get<bool>(), true);
    QCOMPARE(payload.at("count").get<std::uint64_t>(), std::uint64_t(2));
    QCOMPARE(payload.at("found").get<std::uint64_t>(), std::uint64_t(2));
    QCOMPARE(message.frames.size(), std::size_t(4));
    QCOMPARE(message.frames[0].dtype, DType::Float32);
    QCOMPARE(message.frames[0].shape, (std::vector<std::uint64_t>{4, 5}));
    QCOMPARE(float_at(message.frames[0], 2 * 5 + 3), 0.5f * 13 - 3);  // row 2, column 3
    QCOMPARE(message.frames[1].dtype, DType::Float32);
    QCOMPARE(message.frames[1].shape, (std::vector<std::uint64_t>{2, 3}));
    QCOMPARE(float_at(message.frames[1], 1 * 3 + 1), 0.25f);  // segment 1, mode g1
    QCOMPARE(message.frames[2].shape, (std::vector<std::uint64_t>{2, 8}));
    QCOMPARE(message.frames[3].shape, (std::vector<std::uint64_t>{2, 2}));
  }

  void imageWithoutPeaksOrOccupancyHasTwoFrames() {
    ImageFrame original = sample_image();
    original.has_peaks = false;
    original.peaks = {};
    original.gain_modes.clear();
    original.gain_occupancy.clear();
    const Message message = make_image_message(original);
    QVERIFY(!message.payload.contains("count"));
    QVERIFY(!message.payload.contains("found"));
    QCOMPARE(message.frames.size(), std::size_t(2));
    QCOMPARE(message.frames[1].shape, (std::vector<std::uint64_t>{0, 0}));
    const ImageFrame image = image_from_message(through_the_wire(message));
    QVERIFY(!image.has_peaks);
    QVERIFY(image.peaks.peaks.empty());
    QVERIFY(image.gain_modes.empty());
    QVERIFY(image.gain_occupancy.empty());
    QCOMPARE(image.segments, std::uint64_t(2));
    QCOMPARE(image.pixels[4], -1.0f);
  }

  void anUnknownUnitTravelsAsAnEmptyString() {
    // Float32 detectors deliver values calibrated upstream, in a unit livedrp does not know.
    ImageFrame original = sample_image();
    original.unit.clear();
    const ImageFrame image = image_from_message(through_the_wire(make_image_message(original)));
    QCOMPARE(image.unit, std::string());
    QCOMPARE(image.pixels[19], 6.5f);
  }

  void imageWithAnEmptyPeakListKeepsItsPeakFrames() {
    // The pipeline finds peaks but this event has none: has_peaks with count 0.
    ImageFrame original = sample_image();
    original.peaks.peaks.clear();
    original.peaks.found = 0;
    original.peaks.hit = false;
    const Message message = make_image_message(original);
    QCOMPARE(message.frames.size(), std::size_t(4));
    const ImageFrame image = image_from_message(through_the_wire(message));
    QVERIFY(image.has_peaks);
    QVERIFY(image.peaks.peaks.empty());
    QCOMPARE(image.peaks.hit, false);
  }

  void float64ImageAndOccupancyAreAccepted() {
    const ImageFrame original = sample_image();
    Message message = make_image_message(original);
    message.frames[0] = as_float64(message.frames[0]);
    message.frames[1] = as_float64(message.frames[1]);
    const ImageFrame image = image_from_message(through_the_wire(message));
    for (std::size_t pixel = 0; pixel < 20; ++pixel)
      QVERIFY(same_bits(image.pixels[pixel], original.pixels[pixel]));
    QCOMPARE(image.gain_occupancy, original.gain_occupancy);
  }

  void malformedImagesAreRefusedWithTheFieldNamed() {
    const std::vector<BadCase> cases = {
        {"payload not an object", [](Message& m) { m.payload = "image"; },
         "the payload must be a JSON object"},
        {"height missing", [](Message& m) { m.payload.erase("height"); },
         "field 'height' is missing"},
        {"height zero", [](Message& m) { m.payload["height"] = 0; },
         "field 'height' must be in 1..16384, got 0"},
        {"width beyond the limit", [](Message& m) { m.payload["width"] = 16'385; },
         "field 'width' must be in 1..16384, got 16385"},
        {"height disagrees with the image", [](Message& m) { m.payload["height"] = 5; },
         "frame 0 (image) must have shape [5, 5], got [4, 5]"},
        {"unit missing", [](Message& m) { m.payload.erase("unit"); }, "field 'unit' is missing"},
        {"unit not a string", [](Message& m) { m.payload["unit"] = json::array(); },
         "field 'unit' must be a string, got array"},
        {"gain_modes not an array", [](Message& m) { m.payload["gain_modes"] = "g0"; },
         "field 'gain_modes' must be an array of strings"},
        {"gain mode not a string", [](Message& m) { m.payload["gain_modes"][1] = 1; },
         "field 'gain_modes[1]' must be a string, got number 1"},
        {"gain modes without bad",
         [](Message& m) {
           m.payload["gain_modes"] = json::array({"g0", "g1", "g2"});
         },
         "gain_modes must list at least one mode and end with \"bad\""},
        {"gain modes repeated",
         [](Message& m) {
           m.payload["gain_modes"] = json::array({"g0", "g0", "bad"});
         },
         "gain_modes names 'g0' twice"},
        {"too many gain modes",
         [](Message& m) {
           json names = json::array();
           for (int mode = 0; mode < 17; ++mode) names.push_back("m" + std::to_string(mode));
           m.payload["gain_modes"] = names;
         },
         "field 'gain_modes' has 17 names, more than 16"},
        {"modes disagree with the occupancy",
         [](Message& m) {
           m.payload["gain_modes"] = json::array({"g0", "bad"});
         },
         "frame 1 (gain_occupancy) must have shape [2, 2], got [2, 3]"},
        {"segments zero", [](Message& m) { m.payload["segments"] = 0; },
         "field 'segments' must be in 1..4096, got 0"},
        {"segments disagree with the occupancy", [](Message& m) { m.payload["segments"] = 3; },
         "frame 1 (gain_occupancy) must have shape [3, 3], got [2, 3]"},
        {"has_peaks missing", [](Message& m) { m.payload.erase("has_peaks"); },
         "field 'has_peaks' is missing"},
        {"has_peaks false with peak frames", [](Message& m) { m.payload["has_peaks"] = false; },
         "needs 2 frames (image, gain_occupancy) with has_peaks false, got 4"},
        {"peak frames missing",
         [](Message& m) {
           m.frames.pop_back();
           m.frames.pop_back();
         },
         "needs 4 frames (image, gain_occupancy, peak values, peak segment and num_pixels) with "
         "has_peaks true, got 2"},
        {"peak count missing", [](Message& m) { m.payload.erase("count"); },
         "field 'count' is missing"},
        {"image as uint32", [](Message& m) { m.frames[0].dtype = DType::UInt32; },
         "frame 0 (image) must be float32 (or float64), got uint32"},
        {"image flat", [](Message& m) { m.frames[0].shape = {20}; },
         "frame 0 (image) must have shape [4, 5], got [20]"},
        {"image transposed",
         [](Message& m) {
           m.frames[0].shape = {5, 4};
         },
         "frame 0 (image) must have shape [4, 5], got [5, 4]"},
        {"an infinite pixel", [](Message& m) { set_float(m.frames[0], 13, kInf); },
         "image pixel (row 2, column 3) is infinite"},
        {"occupancy as uint8",
         [](Message& m) {
           m.frames[1].dtype = DType::UInt8;
           m.frames[1].data.resize(6);
         },
         "frame 1 (gain_occupancy) must be float32 (or float64), got uint8"},
        {"occupancy not summing to 1", [](Message& m) { set_float(m.frames[1], 4, 0.2f); },
         "gain_occupancy row of segment 1 sums to 0.950000, not 1"},
        {"occupancy off by more than the tolerance",
         [](Message& m) { set_float(m.frames[1], 0, 0.752f); },
         "gain_occupancy row of segment 0 sums to 1.002000, not 1"},
        {"occupancy negative",
         [](Message& m) {
           set_float(m.frames[1], 0, 1.0f);
           set_float(m.frames[1], 1, -0.125f);
         },
         "gain_occupancy[0][1] (g1) = -0.125000 is not a fraction in [0, 1]"},
        {"occupancy not a number", [](Message& m) { set_float(m.frames[1], 5, kNaN); },
         "gain_occupancy[1][2] (bad) = nan is not a fraction"},
        {"occupancy without names", [](Message& m) { m.payload["gain_modes"] = json::array(); },
         "frame 1 (gain_occupancy) must have shape [0, 0], got [2, 3]"},
        {"peak segment beyond the detector", [](Message& m) { set_int(m.frames[3], 2, 2); },
         "peak 1: segment 2 is not below segments (2)"},
        {"peak outside the image", [](Message& m) { set_float(m.frames[2], 8 + 2, 4.75f); },
         "peak 1: x 4.750000 is outside the image (width 5)"},
        {"peak above the image", [](Message& m) { set_float(m.frames[2], 3, -0.75f); },
         "peak 0: y -0.750000 is outside the image (height 4)"},
        {"found below the listed count", [](Message& m) { m.payload["found"] = 1; },
         "found (1) is less than the 2 peaks listed"},
        {"peak num_pixels zero", [](Message& m) { set_int(m.frames[3], 3, 0); },
         "peak 1: num_pixels must be at least 1, got 0"},
        {"another topic", [](Message& m) { m.topic = "peaks"; }, "topic is 'peaks', not 'image'"},
    };
    expect_refusals(
        cases, make_image_message(sample_image()), [](const Message& m) { image_from_message(m); },
        QStringLiteral("image "));
  }

  void theImageEncoderRefusesWhatTheDecoderWould() {
    ImageFrame short_pixels = sample_image();
    short_pixels.pixels.pop_back();
    QVERIFY_THROWS_EXCEPTION(ProtocolError, make_image_message(short_pixels));
    ImageFrame infinite = sample_image();
    infinite.pixels[0] = -kInf;
    QVERIFY_THROWS_EXCEPTION(ProtocolError, make_image_message(infinite));
    ImageFrame other_event = sample_image();
    other_event.peaks.sequence = 4'241;
    try {
      make_image_message(other_event);
      QFAIL("encoded the peaks of another event with an image");
    } catch (const ProtocolError& error) {
      QVERIFY2(
          QString::fromUtf8(error.what()).contains(QStringLiteral("the peaks are of event 4241")),
          error.what());
    }
    ImageFrame short_occupancy = sample_image();
    short_occupancy.gain_occupancy.pop_back();
    QVERIFY_THROWS_EXCEPTION(ProtocolError, make_image_message(short_occupancy));
  }

  // --- stats.peak_finding ----------------------------------------------------------------------

  void statsCarryThePeakFindingBlock() {
    StatsPayload stats;
    stats.backend = "cpu";
    stats.device = "CPU (2 threads)";
    stats.peak_finding = sample_stats();
    const Message message = through_the_wire(make_stats_message(stats));
    const json& block = message.payload.at("peak_finding");
    QCOMPARE(block.at("interval_events").get<std::uint64_t>(), std::uint64_t(40));
    QCOMPARE(block.at("interval_hit_rate").get<double>(), 0.075);
    const StatsPayload decoded = stats_from_json(message.payload);
    QVERIFY(decoded.peak_finding.has_value());
    const PeakFindingStats& got = *decoded.peak_finding;
    QCOMPARE(got.interval_events, std::uint64_t(40));
    QCOMPARE(got.interval_hits, std::uint64_t(3));
    QCOMPARE(got.interval_peaks, std::uint64_t(97));
    QCOMPARE(got.total_events, std::uint64_t(1'000));
    QCOMPARE(got.total_hits, std::uint64_t(81));
    QCOMPARE(got.total_peaks, std::uint64_t(2'345));
    QCOMPARE(got.interval_hit_rate, 3.0 / 40.0);
    QCOMPARE(got.params_version, std::uint64_t(2));
    QCOMPARE(got.peaks_messages, std::uint64_t(70));
    QCOMPARE(got.hits_not_sent, std::uint64_t(11));
  }

  void statsWithoutPeakFindingHaveNoBlock() {
    StatsPayload stats;
    const json payload = to_json(stats);
    QVERIFY(!payload.contains("peak_finding"));
    QVERIFY(!stats_from_json(payload).peak_finding.has_value());
  }

  void anIntervalWithoutEventsHasANullHitRate() {
    PeakFindingStats stats = sample_stats();
    stats.interval_events = 0;
    stats.interval_hits = 0;
    stats.interval_peaks = 0;
    stats.interval_hit_rate = std::numeric_limits<double>::quiet_NaN();
    const json block = to_json(stats);
    QVERIFY(block.at("interval_hit_rate").is_null());
    const PeakFindingStats decoded =
        peak_finding_stats_from_json(json::parse(block.dump()));  // as on the wire
    QVERIFY(std::isnan(decoded.interval_hit_rate));
    QCOMPARE(decoded.total_hits, std::uint64_t(81));
  }

  void malformedPeakFindingBlocksAreRefusedWithTheFieldNamed() {
    struct BlockCase {
      const char* name;
      std::function<void(json&)> spoil;
      const char* expected;
    };
    const std::vector<BlockCase> cases = {
        {"not an object", [](json& b) { b = 3; },
         "field 'peak_finding' must be an object, got number 3"},
        {"interval_hits missing", [](json& b) { b.erase("interval_hits"); },
         "field 'peak_finding.interval_hits' is missing"},
        {"total_peaks negative", [](json& b) { b["total_peaks"] = -4; },
         "field 'peak_finding.total_peaks' must not be negative"},
        {"hit rate a string", [](json& b) { b["interval_hit_rate"] = "high"; },
         "field 'peak_finding.interval_hit_rate' must be a number, got string 'high'"},
        {"hit rate above 1", [](json& b) { b["interval_hit_rate"] = 1.5; },
         "field 'peak_finding.interval_hit_rate' must be in [0, 1] or null"},
        {"more hits than events", [](json& b) { b["interval_hits"] = 41; },
         "field 'peak_finding.interval_hits' (41) cannot exceed interval_events (40)"},
        {"more total hits than events", [](json& b) { b["total_hits"] = 1'001; },
         "field 'peak_finding.total_hits' (1001) cannot exceed total_events (1000)"},
        {"interval beyond the run", [](json& b) { b["total_peaks"] = 96; },
         "cannot exceed the run's totals"},
        {"hits_not_sent missing", [](json& b) { b.erase("hits_not_sent"); },
         "field 'peak_finding.hits_not_sent' is missing"},
    };
    StatsPayload stats;
    stats.peak_finding = sample_stats();
    for (const BlockCase& bad : cases) {
      json payload = to_json(stats);
      bad.spoil(payload["peak_finding"]);
      try {
        stats_from_json(payload);
        QFAIL(qPrintable(QStringLiteral("accepted: %1").arg(bad.name)));
      } catch (const ProtocolError& error) {
        const QString text = QString::fromUtf8(error.what());
        QVERIFY2(text.contains(QString::fromUtf8(bad.expected)),
                 qPrintable(QStringLiteral("%1: got \"%2\"").arg(bad.name, text)));
        QVERIFY2(text.startsWith(QStringLiteral("stats payload: ")), qPrintable(text));
      }
    }
  }

  void randomPayloadsNeverCrashTheDecoders() {
    std::mt19937 random(11);
    const std::vector<json> odd_values = {nullptr,
                                          true,
                                          -1,
                                          0,
                                          3,
                                          1e300,
                                          "x",
                                          json::array(),
                                          json::object(),
                                          json::array({"g0", "bad"})};
    const std::vector<std::string> image_fields = {
        "height", "width", "unit", "segments", "has_peaks", "gain_modes", "count", "found", "hit"};
    int refused = 0;
    for (int round = 0; round < 400; ++round) {
      Message message = make_image_message(sample_image());
      message.payload[image_fields[random() % image_fields.size()]] =
          odd_values[random() % odd_values.size()];
      try {
        image_from_message(through_the_wire(message));
      } catch (const ProtocolError&) {
        ++refused;
      }
      Message peaks = make_peaks_message(sample_peaks());
      peaks.payload[image_fields[6 + random() % 3]] = odd_values[random() % odd_values.size()];
      try {
        peaks_from_message(through_the_wire(peaks));
      } catch (const ProtocolError&) {
        ++refused;
      }
    }
    QVERIFY(refused > 650);  // a few replacements are valid (e.g. found 3)
  }
};

QTEST_MAIN(ProtocolPeaksTest)
#include "test_protocol_peaks.moc"
