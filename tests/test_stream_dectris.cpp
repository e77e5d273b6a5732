// The Dectris SIMPLON stream v2 source (engine/stream/dectris/): message decoding checked on
// CBOR bytes written by hand (tags per RFC 8949 and RFC 8746), then the source fed over
// tcp://127.0.0.1 by the test publisher (tests/tools/dectris_publisher): the detector described
// from the start message, images bit-identical to the frames sent (raw, bslz4, lz4; uint16,
// uint32, int32), every bad message counted under its reason and named in last_problem while
// the good images around it still come, images that never came (missing ones, and those an end
// in the middle of a series cut off) counted and named when the series ends, and a full queue
// dropping images as engine_busy.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "cbor_writer.hpp"
#include "core/error.hpp"
#include "counting_allocator.hpp"
#include "dectris_publisher.hpp"
#include "dectris_publisher_process.hpp"
#include "replay/chunk_decoder.hpp"
#include "replay/hdf5_event_file.hpp"
#include "simulated_events.hpp"
#include "stream/dectris/cbor_reader.hpp"
#include "stream/dectris/dectris_source.hpp"
#include "stream/dectris/simplon_messages.hpp"
#include "stream/dectris/simplon_receiver.hpp"

using namespace livedrp;
using namespace livedrp::stream;
using livedrp::testing::Compression;
using livedrp::testing::PixelType;
using livedrp::testing::SeriesSettings;

namespace {

// "A4 64 74..." to bytes.
std::vector<std::byte> hex(const std::string& text) {
  std::vector<std::byte> bytes;
  std::istringstream in(text);
  std::string pair;
  while (in >> pair) bytes.push_back(std::byte(std::stoul(pair, nullptr, 16)));
  return bytes;
}

void append(std::vector<std::byte>& out, const std::vector<std::byte>& more) {
  out.insert(out.end(), more.begin(), more.end());
}

// A frame of width x height elements with counts of every size the type holds: mostly small
// (compressible, as photon counts are), some near the type's top, little-endian.
std::vector<std::byte> make_frame(PixelType type, std::uint32_t width, std::uint32_t height,
                                  std::uint32_t seed) {
  std::mt19937 random(seed);
  const std::size_t size = testing::element_size(type);
  std::vector<std::byte> frame(std::size_t(width) * height * size);
  for (std::size_t i = 0; i < std::size_t(width) * height; ++i) {
    std::uint32_t value = random() % 8;
    if (i % 23 == 0) value = random();  // the full width of the word
    if (type == PixelType::Uint16) value &= 0xffff;
    for (std::size_t b = 0; b < size; ++b) frame[i * size + b] = std::byte(value >> (8 * b));
  }
  return frame;
}

bool same_bytes(const std::byte* data, const std::vector<std::byte>& expected) {
  return data && std::memcmp(data, expected.data(), expected.size()) == 0;
}

// A detector description file for the stream's images: one segment of rows x cols.
std::string write_detector(const QTemporaryDir& dir, const std::string& encoding, int rows,
                           int cols) {
  const nlohmann::json description = {
      {"schema_version", 1},
      {"name", "stream_test_" + encoding},
      {"raw_encoding", encoding},
      {"segments", 1},
      {"segment_shape", {rows, cols}},
      {"pixel_size_um", 75.0},
      {"asic_shape", {rows, cols}},
      {"bank_columns", 0},
      {"gain_modes", {{{"name", "counts"}, {"nominal_adu_per_kev", 1.0}}}},
      {"placement", {{{"x_px", 0}, {"y_px", 0}, {"rotation_deg", 0}}}}};
  const std::string path = dir.filePath(QString::fromStdString(encoding + ".json")).toStdString();
  std::ofstream(path) << description.dump();
  return path;
}

// 2026-01-01T00:00:00Z in Unix seconds.
constexpr std::int64_t kNewYear2026 = 1'767'225'600;

}  // namespace

class TestStreamDectris : public QObject {
  Q_OBJECT

 private slots:
  // --- CBOR and message decoding on hand-written bytes ----------------------------------------

  void cbor_reader_reads_every_major_type() {
    // {"a": [1, -2, h'0102', "xy", 1.5 (half), true, null, 40("t")], "b": {_ "c": 1000000}}
    const auto bytes =
        hex("A2 61 61 88 01 21 42 01 02 62 78 79 F9 3E 00 F5 F6 D8 28 61 74"
            " 61 62 BF 61 63 1A 00 0F 42 40 FF");
    const auto read = stream::cbor::read(bytes);
    QVERIFY2(read.failure == stream::cbor::ReadFailure::None, read.error.c_str());
    using Type = stream::cbor::Value::Type;
    const auto* a = read.value.find("a");
    QVERIFY(a && a->is(Type::Array));
    QCOMPARE(a->items.size(), std::size_t(8));
    QCOMPARE(a->items[0].number, std::uint64_t(1));
    QVERIFY(a->items[1].is(Type::Negative));
    QCOMPARE(a->items[1].number, std::uint64_t(1));  // -1 - 1 = -2
    QCOMPARE(a->items[2].bytes.size(), std::size_t(2));
    QCOMPARE(std::string(a->items[3].text()), std::string("xy"));
    QCOMPARE(a->items[4].real, 1.5);
    QVERIFY(a->items[5].is(Type::Bool) && a->items[5].number == 1);
    QVERIFY(a->items[6].is(Type::Null));
    QVERIFY(a->items[7].is(Type::Tagged) && a->items[7].number == 40);
    QCOMPARE(std::string(a->items[7].untagged().text()), std::string("t"));
    const auto* b = read.value.find("b");
    QVERIFY(b && b->find("c"));
    QCOMPARE(b->find("c")->number, std::uint64_t(1000000));
  }

  void cbor_reader_refuses_what_is_not_one_item() {
    using stream::cbor::ReadFailure;
    QVERIFY(stream::cbor::read(hex("A2 61 61 01")).failure == ReadFailure::EndOfInput);
    QVERIFY(stream::cbor::read(hex("01 02")).failure == ReadFailure::TrailingBytes);
    QVERIFY(stream::cbor::read(hex("1C")).failure == ReadFailure::Invalid);  // reserved info 28
    QVERIFY(stream::cbor::read(hex("FF")).failure == ReadFailure::Invalid);  // a lone break
    QVERIFY(stream::cbor::read(hex("5F 41 00 FF")).failure == ReadFailure::Unsupported);
    // An array that announces 2^32 items in five bytes is refused before anything is reserved.
    const auto lying = stream::cbor::read(hex("9A FF FF FF FF 01"));
    QVERIFY(lying.failure == ReadFailure::EndOfInput);
    QVERIFY2(lying.error.find("announces") != std::string::npos, lying.error.c_str());
    // Nesting deeper than the reader allows: 40 nested arrays.
    std::vector<std::byte> deep(40, std::byte(0x81));
    deep.push_back(std::byte(0x01));
    QVERIFY(stream::cbor::read(deep).failure == ReadFailure::Unsupported);
  }

  void typed_array_tags_follow_rfc8746() {
    // RFC 8746 table 2, independently written out.
    const std::vector<std::pair<std::uint64_t, std::string>> table = {{64, "uint8"},
                                                                      {65, "uint16 big-endian"},
                                                                      {66, "uint32 big-endian"},
                                                                      {67, "uint64 big-endian"},
                                                                      {68, "uint8"},
                                                                      {69, "uint16"},
                                                                      {70, "uint32"},
                                                                      {71, "uint64"},
                                                                      {72, "int8"},
                                                                      {73, "int16 big-endian"},
                                                                      {74, "int32 big-endian"},
                                                                      {75, "int64 big-endian"},
                                                                      {77, "int16"},
                                                                      {78, "int32"},
                                                                      {79, "int64"},
                                                                      {80, "float16 big-endian"},
                                                                      {81, "float32 big-endian"},
                                                                      {82, "float64 big-endian"},
                                                                      {83, "float128 big-endian"},
                                                                      {84, "float16"},
                                                                      {85, "float32"},
                                                                      {86, "float64"},
                                                                      {87, "float128"}};
    for (const auto& [tag, name] : table) {
      const auto type = stream::dectris::element_type_of_tag(tag);
      QVERIFY2(type.has_value(), std::to_string(tag).c_str());
      QCOMPARE(type->name(), name);
    }
    QCOMPARE(stream::dectris::element_type_of_tag(69)->size, std::size_t(2));
    QCOMPARE(stream::dectris::element_type_of_tag(78)->size, std::size_t(4));
    QCOMPARE(stream::dectris::element_type_of_tag(86)->size, std::size_t(8));
    QVERIFY(!stream::dectris::element_type_of_tag(76));  // not assigned
    QVERIFY(!stream::dectris::element_type_of_tag(63));
    QVERIFY(!stream::dectris::element_type_of_tag(88));
  }

  void image_message_decodes_from_hand_written_bytes() {
    // {"type": "image", "series_id": 7, "image_id": 3,
    //  "data": {"default": 40([[2, 3], 69(h'0100 0200 0300 0400 0500 FFFF')])}}
    // tag 40 = D8 28 (multi-dimensional, row-major), tag 69 = D8 45 (uint16, little-endian).
    const auto bytes =
        hex("A4 64 74 79 70 65 65 69 6D 61 67 65"
            " 69 73 65 72 69 65 73 5F 69 64 07"
            " 68 69 6D 61 67 65 5F 69 64 03"
            " 64 64 61 74 61 A1 67 64 65 66 61 75 6C 74"
            " D8 28 82 82 02 03 D8 45 4C 01 00 02 00 03 00 04 00 05 00 FF FF");
    const auto decoded = stream::dectris::decode_message(bytes);
    QVERIFY2(decoded.message.has_value(), decoded.problem.what.c_str());
    const auto& image = std::get<stream::dectris::ImageMessage>(*decoded.message);
    QCOMPARE(image.series_id, std::uint64_t(7));
    QCOMPARE(image.image_id, std::uint64_t(3));
    QCOMPARE(image.channels.size(), std::size_t(1));
    QCOMPARE(image.channels[0].name, std::string("default"));
    const auto& data = image.channels[0].data;
    QCOMPARE(data.dimensions, (std::vector<std::uint64_t>{2, 3}));
    QCOMPARE(data.type.name(), std::string("uint16"));
    std::vector<std::uint16_t> values(6);
    const auto problem =
        stream::dectris::decode_array(data, std::as_writable_bytes(std::span(values)));
    QVERIFY2(problem.reason.empty(), problem.what.c_str());
    QCOMPARE(values, (std::vector<std::uint16_t>{1, 2, 3, 4, 5, 65535}));

    // The same with tag 78 (D8 4E: int32, little-endian) on one element of -1.
    const auto int32 =
        hex("A4 64 74 79 70 65 65 69 6D 61 67 65 69 73 65 72 69 65 73 5F 69 64 07"
            " 68 69 6D 61 67 65 5F 69 64 03 64 64 61 74 61 A1 67 64 65 66 61 75 6C 74"
            " D8 28 82 82 01 01 D8 4E 44 FF FF FF FF");
    const auto signed_decoded = stream::dectris::decode_message(int32);
    QVERIFY2(signed_decoded.message.has_value(), signed_decoded.problem.what.c_str());
    const auto& signed_data =
        std::get<stream::dectris::ImageMessage>(*signed_decoded.message).channels[0].data;
    QCOMPARE(signed_data.type.name(), std::string("int32"));
    std::int32_t value = 0;
    QVERIFY(stream::dectris::decode_array(signed_data, std::as_writable_bytes(std::span(&value, 1)))
                .reason.empty());
    QCOMPARE(value, -1);
  }

  void start_message_with_date_tags_and_small_floats_decodes() {
    // 55799({"type": "start", "series_id": 42, "image_size_x": 1024, "image_size_y": 512,
    //        "arm_date": 0("2026-01-01T00:00:00Z"), "beam_center_x": 1.5 (half),
    //        "count_time": 1.0 (single), "pixel_size_x": 7.5e-05 (double)})
    // Tag 0 (C0) is a date/time string; nlohmann::json::from_cbor refuses it in every mode.
    auto bytes =
        hex("D9 D9 F7 A8 64 74 79 70 65 65 73 74 61 72 74"
            " 69 73 65 72 69 65 73 5F 69 64 18 2A"
            " 6C 69 6D 61 67 65 5F 73 69 7A 65 5F 78 19 04 00"
            " 6C 69 6D 61 67 65 5F 73 69 7A 65 5F 79 19 02 00"
            " 68 61 72 6D 5F 64 61 74 65 C0 74"
            " 32 30 32 36 2D 30 31 2D 30 31 54 30 30 3A 30 30 3A 30 30 5A"
            " 6D 62 65 61 6D 5F 63 65 6E 74 65 72 5F 78 F9 3E 00"
            " 6A 63 6F 75 6E 74 5F 74 69 6D 65 FA 3F 80 00 00"
            " 6C 70 69 78 65 6C 5F 73 69 7A 65 5F 78 FB");
    const std::uint64_t bits = std::bit_cast<std::uint64_t>(7.5e-05);
    for (int i = 7; i >= 0; --i) bytes.push_back(std::byte(bits >> (8 * i)));
    const auto decoded = stream::dectris::decode_message(bytes);
    QVERIFY2(decoded.message.has_value(), decoded.problem.what.c_str());
    const auto& start = std::get<stream::dectris::StartMessage>(*decoded.message);
    QCOMPARE(start.series_id, std::uint64_t(42));
    QCOMPARE(start.image_size_x, std::uint64_t(1024));
    QCOMPARE(start.image_size_y, std::uint64_t(512));
    QCOMPARE(start.arm_date, std::string("2026-01-01T00:00:00Z"));
    QCOMPARE(*start.beam_center_x_px, 1.5);
    QCOMPARE(*start.count_time_s, 1.0);
    QCOMPARE(*start.pixel_size_x_m, 7.5e-05);
    QVERIFY(!start.image_type);  // Eiger-like: the element type comes with the images
    QVERIFY(start.pixel_masks.empty());
  }

  void start_message_pixel_mask_and_lookup_table_decode_compressed() {
    // Written with the test publisher's CBOR writer and bitshuffle encoder: a 3x5 uint32 mask
    // in bslz4 and a uint16 lookup table in lz4, with Jungfraujoch's image_dtype.
    const std::vector<std::uint32_t> mask = {0, 1, 0, 0, 2, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0x80000000u};
    const std::vector<std::uint16_t> table = {0, 1, 2, 3, 5, 8, 13, 21, 34, 55};
    testing::CborWriter cbor;
    cbor.map(8);
    cbor.text("type"), cbor.text("start");
    cbor.text("series_id"), cbor.unsigned_integer(3);
    cbor.text("image_size_x"), cbor.unsigned_integer(5);
    cbor.text("image_size_y"), cbor.unsigned_integer(3);
    cbor.text("image_dtype"), cbor.text("int32");
    cbor.text("channels"), cbor.array(1), cbor.text("default");
    cbor.text("pixel_mask"), cbor.map(1), cbor.text("default");
    cbor.tag(40), cbor.array(2), cbor.array(2), cbor.unsigned_integer(3), cbor.unsigned_integer(5);
    cbor.tag(70), cbor.tag(56500), cbor.array(3), cbor.text("bslz4"), cbor.unsigned_integer(4);
    cbor.bytes(testing::bitshuffle_lz4_frame(std::as_bytes(std::span(mask)), 4));
    cbor.text("countrate_correction_lookup_table");
    cbor.tag(69), cbor.tag(56500), cbor.array(3), cbor.text("lz4"), cbor.unsigned_integer(0);
    cbor.bytes(testing::lz4_frame(std::as_bytes(std::span(table))));
    const auto decoded = stream::dectris::decode_message(cbor.take());
    QVERIFY2(decoded.message.has_value(), decoded.problem.what.c_str());
    const auto& start = std::get<stream::dectris::StartMessage>(*decoded.message);
    QCOMPARE(start.image_type->name(), std::string("int32"));
    QCOMPARE(start.pixel_masks.size(), std::size_t(1));
    QCOMPARE(start.pixel_masks[0].channel, std::string("default"));
    QCOMPARE(start.pixel_masks[0].rows, std::uint64_t(3));
    QCOMPARE(start.pixel_masks[0].cols, std::uint64_t(5));
    QCOMPARE(start.pixel_masks[0].bits, mask);
    QCOMPARE(start.countrate_correction_lookup_table,
             std::vector<std::uint32_t>(table.begin(), table.end()));
  }

  void bad_messages_are_refused_with_their_reason_and_field() {
    const auto problem_of = [](const std::vector<std::byte>& bytes) {
      const auto decoded = stream::dectris::decode_message(bytes);
      return decoded.message ? stream::dectris::Problem{} : decoded.problem;
    };
    const std::string text = "hello, not CBOR";
    auto problem = problem_of({reinterpret_cast<const std::byte*>(text.data()),
                               reinterpret_cast<const std::byte*>(text.data()) + text.size()});
    QCOMPARE(problem.reason, std::string("foreign"));
    problem = problem_of(hex("82 01 02"));  // [1, 2]
    QCOMPARE(problem.reason, std::string("malformed"));
    QVERIFY2(problem.what.find("not a SIMPLON message") != std::string::npos, problem.what.c_str());
    problem = problem_of(hex("A1 61 61 01"));  // {"a": 1}
    QCOMPARE(problem.reason, std::string("malformed"));
    QVERIFY2(problem.what.find("'type'") != std::string::npos, problem.what.c_str());
    // {"type": "image", "series_id": 7, "data": {}}: no image_id.
    problem =
        problem_of(hex("A3 64 74 79 70 65 65 69 6D 61 67 65 69 73 65 72 69 65 73 5F 69 64"
                       " 07 64 64 61 74 61 A0"));
    QCOMPARE(problem.reason, std::string("malformed"));
    QVERIFY2(problem.what.find("'image_id' is missing") != std::string::npos, problem.what.c_str());
    // {"type": "end", "series_id": "7"}: a text where a number belongs.
    problem = problem_of(hex("A2 64 74 79 70 65 63 65 6E 64 69 73 65 72 69 65 73 5F 69 64 61 37"));
    QCOMPARE(problem.reason, std::string("malformed"));
    QVERIFY2(problem.what.find("'series_id' is a text string") != std::string::npos,
             problem.what.c_str());
    // A message cut inside its map.
    SeriesSettings series{.width = 4, .height = 2};
    const auto whole = testing::image_message(series, 0, make_frame(PixelType::Uint16, 4, 2, 1));
    problem = problem_of({whole.begin(), whole.begin() + 40});
    QCOMPARE(problem.reason, std::string("truncated"));
    // A column-major array (tag 1040) in place of tag 40.
    problem =
        problem_of(hex("A4 64 74 79 70 65 65 69 6D 61 67 65 69 73 65 72 69 65 73 5F 69 64 07"
                       " 68 69 6D 61 67 65 5F 69 64 03 64 64 61 74 61 A1 61 64"
                       " D9 04 10 82 82 01 01 D8 45 42 01 00"));
    QCOMPARE(problem.reason, std::string("unsupported"));
    QVERIFY2(problem.what.find("1040") != std::string::npos, problem.what.c_str());
  }

  void compressed_data_that_do_not_decode_are_truncated_or_unsupported() {
    SeriesSettings series{.width = 40, .height = 30, .compression = Compression::Bslz4};
    const auto frame = make_frame(PixelType::Uint16, 40, 30, 2);
    const auto data_of = [](const std::vector<std::byte>& bytes) {
      const auto decoded = stream::dectris::decode_message(bytes);
      return std::get<stream::dectris::ImageMessage>(*decoded.message).channels[0].data;
    };
    std::vector<std::byte> out(frame.size());
    // The messages are kept: a decoded array points into its message's bytes.
    const auto cut_message = testing::image_message(series, 0, frame, {.cut_data_bytes = 10});
    const auto cut = data_of(cut_message);
    auto problem = stream::dectris::decode_array(cut, out);
    QCOMPARE(problem.reason, std::string("truncated"));
    QVERIFY2(problem.what.find("bslz4") != std::string::npos, problem.what.c_str());
    const auto unknown_message = testing::image_message(series, 0, frame, {.algorithm = "bszstd"});
    const auto unknown = data_of(unknown_message);
    problem = stream::dectris::decode_array(unknown, out);
    QCOMPARE(problem.reason, std::string("unsupported"));
    QVERIFY2(problem.what.find("'bszstd'") != std::string::npos, problem.what.c_str());
    series.compression = Compression::None;
    const auto short_message = testing::image_message(series, 0, frame, {.cut_data_bytes = 2});
    const auto short_raw = data_of(short_message);
    problem = stream::dectris::decode_array(short_raw, out);
    QCOMPARE(problem.reason, std::string("truncated"));
  }

  void publisher_framings_decode_with_the_replay_decoders() {
    // Element counts below one group of 8, on block boundaries, and with short last blocks.
    for (std::size_t size : {std::size_t(2), std::size_t(4)})
      for (std::size_t elements : {3, 8, 128, 4096, 4103, 10007}) {
        const PixelType type = size == 2 ? PixelType::Uint16 : PixelType::Uint32;
        const auto frame = make_frame(type, std::uint32_t(elements), 1, std::uint32_t(elements));
        std::vector<std::byte> out(frame.size());
        QVERIFY(replay::bitshuffle_lz4_decode_chunk(testing::bitshuffle_lz4_frame(frame, size), out,
                                                    size)
                    .empty());
        QVERIFY(out == frame);
        std::fill(out.begin(), out.end(), std::byte(0));
        QVERIFY(replay::lz4_decode_chunk(testing::lz4_frame(frame, 1024), out).empty());
        QVERIFY(out == frame);
      }
  }

  void rfc3339_times_parse_to_unix_ns() {
    using stream::dectris::parse_rfc3339_ns;
    QCOMPARE(*parse_rfc3339_ns("1970-01-01T00:00:01Z"), std::int64_t(1'000'000'000));
    QCOMPARE(*parse_rfc3339_ns("2026-01-01T00:00:00Z"), kNewYear2026 * 1'000'000'000);
    QCOMPARE(*parse_rfc3339_ns("2026-01-01T01:00:00.25+01:00"),
             kNewYear2026 * 1'000'000'000 + 250'000'000);
    QCOMPARE(*parse_rfc3339_ns("2025-12-31T23:59:59.000000001-00:00"),
             kNewYear2026 * 1'000'000'000 - 999'999'999);
    QVERIFY(!parse_rfc3339_ns("2026-02-30T00:00:00Z"));
    QVERIFY(!parse_rfc3339_ns("2026-01-01T00:00:00"));  // no zone
    QVERIFY(!parse_rfc3339_ns("yesterday"));
  }

  void damaged_messages_never_escape_their_count() {
    // Valid messages with random bytes changed, or cut at random lengths, straight into the
    // receiver: every one becomes an event or a counted refusal, none throws or crashes.
    QTemporaryDir dir;
    stream::dectris::EventQueue queue(4);
    stream::dectris::SimplonReceiver receiver(
        "test", find_detector(write_detector(dir, "uint16", 48, 64)), 1 << 20, queue);
    SeriesSettings series{.width = 64, .height = 48, .number_of_images = 1000};
    receiver.handle(testing::start_message(series));
    std::mt19937 random(33);
    std::vector<std::vector<std::byte>> originals;
    for (Compression compression : {Compression::None, Compression::Bslz4, Compression::Lz4}) {
      series.compression = compression;
      originals.push_back(
          testing::image_message(series, 1, make_frame(PixelType::Uint16, 64, 48, 5)));
    }
    constexpr int kDamaged = 3000;
    for (int i = 0; i < kDamaged; ++i) {
      std::vector<std::byte> message = originals[std::size_t(i) % originals.size()];
      if (i % 2 == 0) {
        message.resize(random() % message.size());
      } else {
        for (int changes = 1 + int(random() % 4); changes > 0; --changes)
          message[random() % message.size()] = std::byte(random());
      }
      receiver.handle(message);
      while (queue.next(std::chrono::milliseconds(0))) {
      }
    }
    const StreamCounts counts = receiver.counts();
    QCOMPARE(counts.messages, std::uint64_t(1 + kDamaged));
    QCOMPARE(counts.events + counts.rejected_total() + counts.dropped_total(),
             std::uint64_t(kDamaged));
    QVERIFY(counts.rejected_total() > kDamaged / 2);  // cut messages are all refused
  }

  // Images that never came and an end in the middle of a series (the stream's counterparts of a
  // missing module and of an end of acquisition cutting an event): counted when the series ends,
  // from the image ids that came, whatever their order; an image that came and was refused is not
  // missing; each named in last_problem.
  void missing_images_and_an_end_in_the_middle_are_counted_and_named() {
    QTemporaryDir dir;
    stream::dectris::EventQueue queue(16);
    stream::dectris::SimplonReceiver receiver(
        "test", find_detector(write_detector(dir, "uint16", 48, 64)), 1 << 20, queue);
    const auto frame = [](std::uint32_t i) { return make_frame(PixelType::Uint16, 64, 48, i); };
    std::vector<std::uint64_t> handed_on;
    const auto drain = [&] {
      while (const auto event = queue.next(std::chrono::milliseconds(0)))
        handed_on.push_back(event->frame_number);
    };
    const auto count_of = [&](const std::map<std::string, std::uint64_t>& counts,
                              const char* reason) {
      const auto it = counts.find(reason);
      return it == counts.end() ? std::uint64_t(0) : it->second;
    };

    // Series 1 announces 10 images; 0, 1, 4, 3 (out of order) and 6 come, 2 comes refused (its
    // shape is wrong), 5 never comes, and the end comes after image 6: 7 to 9 are not sent.
    SeriesSettings series{.series_id = 1, .width = 64, .height = 48, .number_of_images = 10};
    receiver.handle(testing::start_message(series));
    for (const std::uint64_t id : {0, 1, 4, 3, 6})
      receiver.handle(testing::image_message(series, id, frame(std::uint32_t(id))));
    const auto half = frame(2);
    receiver.handle(
        testing::image_message(series, 2, std::span(half).first(half.size() / 2), {.height = 24}));
    drain();
    QCOMPARE(handed_on, (std::vector<std::uint64_t>{0, 1, 4, 3, 6}));
    // Until the end, an image that has not come may still come (out of order): nothing counted.
    QCOMPARE(receiver.counts().dropped_total(), std::uint64_t(0));
    receiver.handle(testing::end_message(series));
    StreamCounts counts = receiver.counts();
    QCOMPARE(count_of(counts.dropped, "missing_image"), std::uint64_t(1));
    QCOMPARE(counts.dropped_total(), std::uint64_t(1));
    QCOMPARE(count_of(counts.rejected, "wrong_detector"), std::uint64_t(1));
    QCOMPARE(counts.events, std::uint64_t(5));
    QCOMPARE(counts.acquisitions_ended, std::uint64_t(1));
    auto summary = receiver.acquisition();
    QVERIFY(summary && summary->ended);
    QCOMPARE(summary->images_announced, std::uint64_t(10));
    QCOMPARE(summary->images_received, std::uint64_t(5));
    QCOMPARE(summary->images_rejected, std::uint64_t(1));
    QCOMPARE(summary->images_missing, std::uint64_t(1));
    QCOMPARE(summary->images_cut_by_end, std::uint64_t(3));
    for (const char* named :
         {"series 1 ended (its end message came) with 6 of its 10 announced",
          "1 before the last that came never came (image 5)", "missing_image",
          "the end came in the middle of the series", "images 7 to 9 were not sent"})
      QVERIFY2(counts.last_problem.find(named) != std::string::npos, counts.last_problem.c_str());

    // Series 2: images 0 and 3 of 4, and no end message: the next start ends it, and its images
    // 1 and 2 are counted then. Series 3 comes whole: nothing more is counted.
    series.series_id = 2;
    series.number_of_images = 4;
    receiver.handle(testing::start_message(series));
    for (const std::uint64_t id : {0, 3})
      receiver.handle(testing::image_message(series, id, frame(std::uint32_t(id))));
    QCOMPARE(count_of(receiver.counts().dropped, "missing_image"), std::uint64_t(1));
    SeriesSettings whole{.series_id = 3, .width = 64, .height = 48, .number_of_images = 2};
    receiver.handle(testing::start_message(whole));
    counts = receiver.counts();
    QCOMPARE(count_of(counts.dropped, "missing_image"), std::uint64_t(3));
    for (const char* named : {"series 2 ended (series 3 started before its end message came)",
                              "with 2 of its 4 announced", "(image 1 the first)"})
      QVERIFY2(counts.last_problem.find(named) != std::string::npos, counts.last_problem.c_str());
    QVERIFY2(counts.last_problem.find("not sent") == std::string::npos,
             counts.last_problem.c_str());
    for (const std::uint64_t id : {1, 0})
      receiver.handle(testing::image_message(whole, id, frame(std::uint32_t(id))));
    receiver.handle(testing::end_message(whole));
    drain();
    counts = receiver.counts();
    QCOMPARE(count_of(counts.dropped, "missing_image"), std::uint64_t(3));
    QCOMPARE(counts.dropped_total(), std::uint64_t(3));
    summary = receiver.acquisition();
    QVERIFY(summary && summary->ended);
    QCOMPARE(summary->images_missing, std::uint64_t(0));
    QCOMPARE(summary->images_cut_by_end, std::uint64_t(0));
    QCOMPARE(counts.events, std::uint64_t(5 + 2 + 2));
    // An image of an ended series is refused, not counted as having come late.
    receiver.handle(testing::image_message(series, 1, frame(1)));
    QCOMPARE(count_of(receiver.counts().rejected, "out_of_acquisition"), std::uint64_t(1));
    QCOMPARE(receiver.counts().dropped_total(), std::uint64_t(3));
  }

  // --- The source, fed over tcp://127.0.0.1 ----------------------------------------------------

  void the_queue_hands_an_image_buffer_over_instead_of_a_copy() {
    // With the engine's allocator set, the buffer of the image next() returned becomes a ring
    // slot as it is: the caller gets the image's own bytes and gives a buffer of the same
    // allocator in its place, which the queue lends again; every buffer is freed exactly once.
    testing::CountingAllocator counting;
    const stream::BufferAllocator allocator = counting.allocator();
    const std::set<void*>& live = counting.counts->live;
    std::vector<void*> handed_over;
    {
      stream::dectris::EventQueue queue(4);
      queue.set_event_bytes(32);
      queue.set_buffer_allocator(allocator);
      for (std::uint64_t image = 1; image <= 6; ++image) {
        std::byte* buffer = queue.acquire_buffer();
        QVERIFY(buffer);
        QVERIFY(live.count(buffer) == 1);  // from the engine's allocator
        std::memset(buffer, int(image), 32);
        queue.publish(buffer, image, 0);
        const auto event = queue.next(std::chrono::milliseconds(0));
        QVERIFY(event);
        QCOMPARE(event->frame_number, image);
        void* replacement = allocator.allocate(32);
        void* taken = queue.exchange_held_buffer(replacement);
        QCOMPARE(taken, static_cast<const void*>(event->data));
        QCOMPARE(static_cast<const std::byte*>(taken)[31], std::byte(image));
        handed_over.push_back(taken);
      }
      // Nothing held after a next() that found nothing: no exchange then.
      QVERIFY(!queue.next(std::chrono::milliseconds(0)));
      void* refused = allocator.allocate(32);
      QVERIFY(queue.exchange_held_buffer(refused) == nullptr);
      handed_over.push_back(refused);  // still the test's
    }
    // The queue freed all it held; what it handed over (and the refused buffer) is the test's.
    QCOMPARE(live.size(), handed_over.size());
    for (void* buffer : handed_over) allocator.free(buffer);
    QCOMPARE(counting.counts->freed_unknown, 0);
    QVERIFY(live.empty());
  }

  void malformed_endpoints_are_refused_naming_them() {
    const StreamOptions options{.detector = "generic_f32"};
    for (const std::string& source :
         {std::string("dectris:udp://127.0.0.1:5000"), std::string("dectris:tcp://127.0.0.1"),
          std::string("dectris:tcp://127.0.0.1:99999"), std::string("dectris:")}) {
      try {
        open_stream_source(source, options);
        QFAIL(("accepted " + source).c_str());
      } catch (const InputError& error) {
        const std::string text = error.what();
        QVERIFY2(text.find("'" + source + "'") != std::string::npos, text.c_str());
        QVERIFY2(text.find("tcp://HOST:PORT") != std::string::npos, text.c_str());
      }
    }
  }

  void detector_comes_from_the_start_message_and_first_image() {
    testing::DectrisPublisher publisher;
    SeriesSettings series{.series_id = 5,
                          .width = 97,
                          .height = 83,
                          .type = PixelType::Uint32,
                          .compression = Compression::Bslz4,
                          .number_of_images = 3};
    series.pixel_size_m = 172e-6;  // a Pilatus pixel
    for (std::uint32_t i = 0; i < series.width * series.height; ++i)
      series.pixel_mask.push_back(i % 101 == 0 ? 1u : (i % 211 == 0 ? 0x10u : 0u));
    std::vector<std::vector<std::byte>> frames;
    for (std::uint32_t i = 0; i < 3; ++i)
      frames.push_back(make_frame(series.type, series.width, series.height, 100 + i));
    // The constructor waits for the start and the first image: the detector sends meanwhile.
    std::thread detector([&] {
      publisher.send_start(series);
      for (std::uint64_t i = 0; i < frames.size(); ++i) publisher.send_image(series, i, frames[i]);
      publisher.send_end(series);
    });
    std::unique_ptr<StreamSource> source;
    try {
      source = open_stream_source("dectris:" + publisher.endpoint(), StreamOptions{});
    } catch (...) {
      detector.join();
      throw;
    }
    source->start();
    const DetectorDescription& d = source->detector();
    QCOMPARE(d.segments, 1);
    QCOMPARE(d.rows, 83);
    QCOMPARE(d.cols, 97);
    QCOMPARE(d.encoding, RawEncoding::Uint32);
    QVERIFY(std::abs(d.pixel_size_um - 172.0) < 1e-9);
    QCOMPARE(d.raw_event_bytes(), std::size_t(97 * 83 * 4));
    for (std::uint64_t i = 0; i < frames.size(); ++i) {
      const auto event = source->next(std::chrono::seconds(20));
      QVERIFY(event.has_value());
      QCOMPARE(event->frame_number, i);
      QVERIFY(same_bytes(event->data, frames[i]));
      // series_date + start_time: 10 ms per image.
      QCOMPARE(event->timestamp_ns, kNewYear2026 * 1'000'000'000 + std::int64_t(i) * 10'000'000);
    }
    detector.join();
    QTRY_VERIFY_WITH_TIMEOUT(source->counts().messages == 5, 20000);  // the end message too
    const auto* dectris_source = dynamic_cast<const stream::dectris::DectrisSource*>(source.get());
    QVERIFY(dectris_source);
    const auto mask = dectris_source->pixel_mask();
    QVERIFY(mask);
    QCOMPARE(mask->channel, std::string("threshold_1"));
    QCOMPARE(mask->bits, series.pixel_mask);
    QCOMPARE(dectris_source->start_message()->series_id, std::uint64_t(5));
    const StreamCounts counts = source->counts();
    QCOMPARE(counts.events, std::uint64_t(3));
    QCOMPARE(counts.acquisitions, std::uint64_t(1));
    QCOMPARE(counts.acquisitions_ended, std::uint64_t(1));
    QCOMPARE(counts.rejected_total(), std::uint64_t(0));
    QCOMPARE(counts.dropped_total(), std::uint64_t(0));
    QVERIFY(counts.last_problem.empty());
  }

  void images_arrive_bit_identical_data() {
    QTest::addColumn<int>("type");
    QTest::addColumn<int>("compression");
    QTest::addColumn<bool>("announce_dtype");
    for (auto [type, type_name] :
         {std::pair{PixelType::Uint16, "uint16"}, std::pair{PixelType::Uint32, "uint32"},
          std::pair{PixelType::Int32, "int32"}})
      for (auto [compression, compression_name] :
           {std::pair{Compression::None, "raw"}, std::pair{Compression::Bslz4, "bslz4"},
            std::pair{Compression::Lz4, "lz4"}})
        QTest::newRow((std::string(type_name) + " " + compression_name).c_str())
            << int(type) << int(compression) << (type == PixelType::Int32);
  }
  void images_arrive_bit_identical() {
    QFETCH(int, type);
    QFETCH(int, compression);
    QFETCH(bool, announce_dtype);
    testing::DectrisPublisher publisher;
    SeriesSettings series{.width = 131,
                          .height = 67,
                          .type = PixelType(type),
                          .compression = Compression(compression),
                          .number_of_images = 4,
                          .announce_dtype = announce_dtype};
    std::vector<std::vector<std::byte>> frames;
    for (std::uint32_t i = 0; i < 4; ++i)
      frames.push_back(make_frame(series.type, series.width, series.height, 7 * i + 1));
    std::thread detector([&] {
      publisher.send_start(series);
      for (std::uint64_t i = 0; i < frames.size(); ++i) publisher.send_image(series, i, frames[i]);
      publisher.send_end(series);
    });
    std::unique_ptr<StreamSource> source;
    try {
      source = open_stream_source("dectris:" + publisher.endpoint(), StreamOptions{});
    } catch (...) {
      detector.join();
      throw;
    }
    source->start();
    QCOMPARE(std::string(to_string(source->detector().encoding)),
             std::string(testing::type_name(series.type)));
    for (std::uint64_t i = 0; i < frames.size(); ++i) {
      const auto event = source->next(std::chrono::seconds(20));
      QVERIFY(event.has_value());
      QCOMPARE(event->frame_number, i);
      QVERIFY2(same_bytes(event->data, frames[i]), ("image " + std::to_string(i)).c_str());
    }
    detector.join();
    QTRY_VERIFY_WITH_TIMEOUT(source->counts().messages == 6, 20000);  // the end message too
    QCOMPARE(source->counts().acquisitions_ended, std::uint64_t(1));
    QCOMPARE(source->counts().rejected_total(), std::uint64_t(0));
  }

  void bad_messages_are_counted_named_and_survived() {
    QTemporaryDir dir;
    StreamOptions options;
    options.detector = write_detector(dir, "uint16", 48, 64);
    options.max_message_bytes = 64 * 1024;
    testing::DectrisPublisher publisher;
    auto source = open_stream_source("dectris:" + publisher.endpoint(), options);
    source->start();
    SeriesSettings series{.series_id = 1,
                          .width = 64,
                          .height = 48,
                          .compression = Compression::Bslz4,
                          .number_of_images = 10};
    const auto frame = [&](std::uint32_t i) { return make_frame(PixelType::Uint16, 64, 48, i); };
    const auto rejected = [&](const char* reason) {
      const StreamCounts counts = source->counts();
      const auto it = counts.rejected.find(reason);
      return it == counts.rejected.end() ? std::uint64_t(0) : it->second;
    };
    const auto problem_names = [&](const std::vector<std::string>& words) {
      const std::string problem = source->counts().last_problem;
      for (const std::string& word : words)
        if (problem.find(word) == std::string::npos) {
          qWarning("last_problem '%s' does not name '%s'", problem.c_str(), word.c_str());
          return false;
        }
      return true;
    };
    const auto next_is = [&](std::uint64_t id, const std::vector<std::byte>& pixels) {
      const auto event = source->next(std::chrono::seconds(20));
      return event && event->frame_number == id && same_bytes(event->data, pixels);
    };
    const std::string endpoint = "dectris " + publisher.endpoint();

    // An image before its series' start.
    publisher.send_image(series, 0, frame(0));
    QTRY_COMPARE_WITH_TIMEOUT(rejected("out_of_acquisition"), std::uint64_t(1), 20000);
    QVERIFY(problem_names({endpoint, "image 0 of series 1", "before any start message"}));

    publisher.send_start(series);
    publisher.send_image(series, 0, frame(10));
    QVERIFY(next_is(0, frame(10)));

    publisher.send_garbage();
    QTRY_COMPARE_WITH_TIMEOUT(rejected("foreign"), std::uint64_t(1), 20000);
    QVERIFY(problem_names({endpoint, "not one CBOR data item", "(foreign)"}));

    publisher.send_image(series, 1, frame(11), {.cut_data_bytes = 20});
    QTRY_COMPARE_WITH_TIMEOUT(rejected("truncated"), std::uint64_t(1), 20000);
    QVERIFY(problem_names({endpoint, "image 1 of series 1", "bslz4", "(truncated)"}));

    const auto half = frame(12);
    publisher.send_image(series, 2, std::span(half).first(half.size() / 2), {.height = 24});
    QTRY_COMPARE_WITH_TIMEOUT(rejected("wrong_detector"), std::uint64_t(1), 20000);
    QVERIFY(problem_names({endpoint, "image 2 of series 1", "24x64", "48x64"}));

    publisher.send_image(series, 3, frame(13), {.algorithm = "bszstd"});
    QTRY_COMPARE_WITH_TIMEOUT(rejected("unsupported"), std::uint64_t(1), 20000);
    QVERIFY(problem_names({endpoint, "image 3 of series 1", "'bszstd'", "not supported"}));

    publisher.send_image(series, 4, frame(14));
    QVERIFY(next_is(4, frame(14)));

    publisher.send_image(series, 5, frame(15), {.padding_bytes = 100 * 1024});
    QTRY_COMPARE_WITH_TIMEOUT(rejected("oversized"), std::uint64_t(1), 20000);
    QVERIFY(problem_names({endpoint, "limit of 65536", "(oversized)"}));

    publisher.send_cut(testing::image_message(series, 6, frame(16)), 200);
    QTRY_COMPARE_WITH_TIMEOUT(rejected("truncated"), std::uint64_t(2), 20000);
    QVERIFY(problem_names({endpoint, "not one CBOR data item", "(truncated)"}));

    publisher.send(testing::other_message("calibration"));
    QTRY_COMPARE_WITH_TIMEOUT(rejected("unsupported"), std::uint64_t(2), 20000);
    QVERIFY(problem_names({endpoint, "'calibration'"}));

    SeriesSettings other_series = series;
    other_series.series_id = 9;
    publisher.send_image(other_series, 0, frame(17));
    QTRY_COMPARE_WITH_TIMEOUT(rejected("out_of_acquisition"), std::uint64_t(2), 20000);
    QVERIFY(problem_names({endpoint, "image 0 of series 9", "current series is 1"}));

    publisher.send_image(series, 7, frame(18));
    QVERIFY(next_is(7, frame(18)));

    // The detector stops mid-series: 3 of 10 images came, which ends the acquisition normally.
    publisher.send_end(series);
    QTRY_COMPARE_WITH_TIMEOUT(source->counts().acquisitions_ended, std::uint64_t(1), 20000);
    const auto summary = dynamic_cast<const stream::dectris::DectrisSource&>(*source).acquisition();
    QVERIFY(summary && summary->ended && !summary->refused);
    QCOMPARE(summary->images_announced, std::uint64_t(10));
    QCOMPARE(summary->images_received, std::uint64_t(3));
    QCOMPARE(summary->images_rejected, std::uint64_t(3));  // truncated, shape, compression
    // Images 5 (oversized) and 6 (cut) never came as images: missing; 8 and 9 were not sent.
    QCOMPARE(summary->images_missing, std::uint64_t(2));
    QCOMPARE(summary->images_cut_by_end, std::uint64_t(2));
    QCOMPARE(source->counts().dropped.at("missing_image"), std::uint64_t(2));
    QVERIFY(problem_names({endpoint, "series 1 ended", "6 of its 10 announced",
                           "(image 5 the first)", "images 8 to 9 were not sent"}));

    publisher.send_image(series, 8, frame(19));
    QTRY_COMPARE_WITH_TIMEOUT(rejected("out_of_acquisition"), std::uint64_t(3), 20000);
    QVERIFY(problem_names({endpoint, "image 8 of series 1", "after the end"}));

    // An acquisition of another shape: refused at its start, its images with it.
    SeriesSettings wide{.series_id = 2, .width = 128, .height = 48, .number_of_images = 1};
    publisher.send_start(wide);
    QTRY_COMPARE_WITH_TIMEOUT(rejected("wrong_detector"), std::uint64_t(2), 20000);
    QVERIFY(problem_names({endpoint, "start message of series 2", "48x128", "48x64"}));
    publisher.send_image(wide, 0, make_frame(PixelType::Uint16, 128, 48, 20));
    QTRY_COMPARE_WITH_TIMEOUT(rejected("wrong_detector"), std::uint64_t(3), 20000);
    QVERIFY(problem_names({endpoint, "image 0 of series 2", "refused acquisition"}));
    publisher.send_end(wide);

    // The same shape in uint32: the start says no element type, its images are refused.
    SeriesSettings deep{.series_id = 3, .width = 64, .height = 48, .type = PixelType::Uint32};
    publisher.send_start(deep);
    publisher.send_image(deep, 0, make_frame(PixelType::Uint32, 64, 48, 21));
    QTRY_COMPARE_WITH_TIMEOUT(rejected("wrong_detector"), std::uint64_t(4), 20000);
    QVERIFY(problem_names({endpoint, "image 0 of series 3", "uint32", "uint16"}));
    publisher.send_end(deep);

    // And a good acquisition after all that.
    SeriesSettings last{.series_id = 4,
                        .width = 64,
                        .height = 48,
                        .compression = Compression::Lz4,
                        .number_of_images = 1};
    publisher.send_start(last);
    publisher.send_image(last, 0, frame(22));
    QVERIFY(next_is(0, frame(22)));
    publisher.send_end(last);
    // Every message is counted: 4 images became events, 13 messages were refused (the start of
    // series 2 among them), 3 starts were accepted, and 4 ends came (the refused series' too).
    QTRY_COMPARE_WITH_TIMEOUT(source->counts().messages, std::uint64_t(4 + 13 + 3 + 4), 20000);

    const StreamCounts counts = source->counts();
    QCOMPARE(counts.acquisitions_ended, std::uint64_t(3));  // series 1, 3 and 4
    QCOMPARE(counts.acquisitions, std::uint64_t(3));        // series 1, 3 and 4 (2 was refused)
    QCOMPARE(counts.events, std::uint64_t(4));
    const std::map<std::string, std::uint64_t> expected = {
        {"foreign", 1},   {"malformed", 0},   {"out_of_acquisition", 3}, {"oversized", 1},
        {"truncated", 2}, {"unsupported", 2}, {"wrong_detector", 4}};
    for (const auto& [reason, count] : expected) QCOMPARE(rejected(reason.c_str()), count);
    QCOMPARE(counts.rejected_total(), std::uint64_t(13));
    QCOMPARE(counts.dropped_total(), std::uint64_t(2));  // series 1's missing images
  }

  void a_full_queue_drops_images_as_engine_busy() {
    QTemporaryDir dir;
    StreamOptions options;
    options.detector = write_detector(dir, "uint16", 48, 64);
    options.queue_events = 2;
    testing::DectrisPublisher publisher;
    auto source = open_stream_source("dectris:" + publisher.endpoint(), options);
    source->start();
    SeriesSettings series{.width = 64, .height = 48, .number_of_images = 7};
    publisher.send_start(series);
    for (std::uint32_t i = 0; i < 6; ++i)
      publisher.send_image(series, i, make_frame(PixelType::Uint16, 64, 48, i));
    // Nobody takes events: two wait, four are dropped, none waits for the engine.
    QTRY_VERIFY_WITH_TIMEOUT(source->counts().events + source->counts().dropped_total() == 6,
                             20000);
    StreamCounts counts = source->counts();
    QCOMPARE(counts.events, std::uint64_t(2));
    QCOMPARE(counts.dropped.at("engine_busy"), std::uint64_t(4));
    for (std::uint32_t i = 0; i < 2; ++i) {
      const auto event = source->next(std::chrono::seconds(5));
      QVERIFY(event && event->frame_number == i);
      QVERIFY(same_bytes(event->data, make_frame(PixelType::Uint16, 64, 48, i)));
    }
    QVERIFY(!source->next(std::chrono::milliseconds(50)));
    // Room again: the next image comes through.
    publisher.send_image(series, 6, make_frame(PixelType::Uint16, 64, 48, 6));
    const auto event = source->next(std::chrono::seconds(20));
    QVERIFY(event && event->frame_number == 6);
    QVERIFY(same_bytes(event->data, make_frame(PixelType::Uint16, 64, 48, 6)));
    source->stop();
    QVERIFY(!source->next(std::chrono::milliseconds(10)));
  }

  // --- livedrp-dectris-publisher, the stand-in detector anyone can run -----------------------

  void the_publisher_tool_streams_poisson_counts() {
    QProcess tool;
    const std::string endpoint = livedrp::testing::start_dectris_publisher(
        tool, {"--source", "poisson:64x48", "--dtype", "uint32", "--compression", "bslz4",
               "--images", "5", "--rate", "0", "--distinct-frames", "2", "--mean-counts", "3"});
    QVERIFY2(!endpoint.empty(), qPrintable(tool.readAllStandardError()));
    auto source = open_stream_source("dectris:" + endpoint, StreamOptions{});
    source->start();
    QCOMPARE(source->detector().rows, 48);
    QCOMPARE(source->detector().cols, 64);
    QVERIFY(source->detector().encoding == RawEncoding::Uint32);
    std::vector<std::vector<std::uint32_t>> images;
    for (std::uint64_t i = 0; i < 5; ++i) {
      const auto event = source->next(std::chrono::seconds(20));
      QVERIFY(event && event->frame_number == i);
      std::vector<std::uint32_t> counts(48 * 64);
      std::memcpy(counts.data(), event->data, counts.size() * 4);
      images.push_back(std::move(counts));
    }
    // Two frames drawn, then cycled: image 2 is image 0 again, image 1 differs.
    QVERIFY(images[2] == images[0] && images[3] == images[1] && images[1] != images[0]);
    // Photon counts around a mean of 3 with a brighter ring: a mean well above the background
    // and nothing near the top of the word.
    double sum = 0;
    std::uint32_t highest = 0;
    for (std::uint32_t count : images[0]) sum += count, highest = std::max(highest, count);
    const double mean = sum / double(images[0].size());
    QVERIFY2(mean > 3.0 && mean < 10.0, std::to_string(mean).c_str());
    QVERIFY2(highest < 100, std::to_string(highest).c_str());
    QVERIFY(tool.waitForFinished(20000));
    QCOMPARE(tool.exitCode(), 0);
    QTRY_VERIFY_WITH_TIMEOUT(source->counts().acquisitions_ended == 1, 20000);
    QCOMPARE(source->counts().rejected_total(), std::uint64_t(0));
  }

  void the_publisher_tool_streams_a_replayed_run() {
    // Two simulated ePix10ka2M events written as replay input, streamed in lz4 as 5632x384
    // uint16 images (16 segments of 352x384 stacked) to a source that names the detector.
    QTemporaryDir dir;
    const test::SimulatedEvents events(2);
    const std::string path = dir.filePath("run.h5").toStdString();
    {
      replay::Hdf5EventWriter writer(path, events.detector, replay::WriteLayout{}, "{}");
      for (std::size_t i = 0; i < events.raw.size(); ++i)
        writer.append(events.headers[i], events.raw[i].data());
      writer.close();
    }
    QProcess tool;
    const std::string endpoint = livedrp::testing::start_dectris_publisher(
        tool, {"--source", QString::fromStdString("replay:" + path), "--compression", "lz4",
               "--images", "2", "--rate", "0"});
    QVERIFY2(!endpoint.empty(), qPrintable(tool.readAllStandardError()));
    auto source =
        open_stream_source("dectris:" + endpoint, StreamOptions{.detector = "epix10ka2m"});
    source->start();
    for (std::uint64_t i = 0; i < 2; ++i) {
      const auto event = source->next(std::chrono::seconds(60));
      QVERIFY(event && event->frame_number == i);
      QVERIFY(same_bytes(event->data, events.raw[i]));
    }
    QVERIFY(tool.waitForFinished(60000));
    QCOMPARE(tool.exitCode(), 0);
    QTRY_VERIFY_WITH_TIMEOUT(source->counts().acquisitions_ended == 1, 20000);
    QCOMPARE(source->counts().rejected_total(), std::uint64_t(0));
  }

  void without_a_start_message_the_source_says_what_it_waited_for() {
    testing::DectrisPublisher publisher;
    StreamOptions options;
    options.wait_for_start = std::chrono::milliseconds(300);
    try {
      open_stream_source("dectris:" + publisher.endpoint(), options);
      QFAIL("a source without a detector and without a start message was opened");
    } catch (const InputError& error) {
      const std::string text = error.what();
      QVERIFY2(text.find(publisher.endpoint()) != std::string::npos, text.c_str());
      QVERIFY2(text.find("no start message within 300 ms") != std::string::npos, text.c_str());
    }
    // A start, but no image to say the element type (a fresh detector: the closed source's
    // connection may still be in the first one's round robin).
    testing::DectrisPublisher armed;
    SeriesSettings series{.series_id = 2, .width = 8, .height = 8};
    std::thread detector([&] { armed.send_start(series); });
    options.wait_for_start = std::chrono::milliseconds(1500);
    try {
      open_stream_source("dectris:" + armed.endpoint(), options);
      detector.join();
      QFAIL("a source was opened without knowing the element type");
    } catch (const InputError& error) {
      detector.join();
      const std::string text = error.what();
      QVERIFY2(text.find("a start message came but no image") != std::string::npos, text.c_str());
    }
  }
};

QTEST_GUILESS_MAIN(TestStreamDectris)
#include "test_stream_dectris.moc"
