// The slsDetectorPackage receiver stream as a live source (issue 33; docs/formats.md, "Live
// detector streams"): headers as the receivers send them are read field by field and bad ones
// refused with the reason and the field named; ports map to modules and halves as the package's
// Jungfrau firmware numbers them; the assembler waits for every part, keeps frame order, and counts
// every part and event it cannot use; over real sockets, a stand-in for the receivers
// (tests/tools/sls_publisher.hpp) streams simulated Jungfrau 4M events that come out bit-identical,
// with one and with two ports per module, and each kind of bad input is counted under its reason,
// named in last_problem, and followed by good events that still assemble.
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cstring>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "counting_allocator.hpp"
#include "replay/hdf5_event_file.hpp"
#include "sim/simulator.hpp"
#include "stream/sls/sls_assembler.hpp"
#include "stream/sls/sls_header.hpp"
#include "stream/sls/sls_layout.hpp"
#include "stream/sls/sls_source.hpp"
#include "stream/stream_source.hpp"
#include "tools/sls_publisher.hpp"

using namespace livedrp;
using namespace livedrp::stream;
using namespace livedrp::stream::sls;
using nlohmann::json;

namespace {

// A frame header as slsDetectorPackage 9.x's receiver writes it (its field order and spacing, and
// the newline it ends with): module 5's inner (top) half of a Jungfrau 4M with two ports per
// module.
constexpr const char* kReceiverFrameHeader =
    R"({"jsonversion":5, "bitmode":16, "fileIndex":3, "detshape":[2, 8], "shape":[1024, 256], )"
    R"("size":524288, "acqIndex":1017, "frameIndex":16, "progress":17, "fname":"/data/run", )"
    R"("data":1, "completeImage":1, "frameNumber":1017, "expLength":0, "packetNumber":64, )"
    R"("detSpec1":0, "timestamp":123456789, "modId":5, "row":5, "column":1, "detSpec2":0, )"
    R"("detSpec3":0, "detSpec4":0, "detType":3, "version":2, "flipRows":0, "quad":0, )"
    R"("rx_roi":[-1, -1, -1, -1]})"
    "\n";

// The end-of-acquisition (dummy) header: every field zero but the version, data 0.
constexpr const char* kReceiverEndHeader =
    R"({"jsonversion":5, "bitmode":0, "fileIndex":0, "detshape":[0, 0], "shape":[0, 0], )"
    R"("size":0, "acqIndex":0, "frameIndex":0, "progress":0, "fname":"", "data":0, )"
    R"("completeImage":0, "frameNumber":0, "expLength":0, "packetNumber":0, "detSpec1":0, )"
    R"("timestamp":0, "modId":0, "row":0, "column":0, "detSpec2":0, "detSpec3":0, "detSpec4":0, )"
    R"("detType":0, "version":0, "flipRows":0, "quad":0, "rx_roi":[0, 0, 0, 0]})"
    "\n";

// Release 7.x: version 4, an additional JSON header, no rx_roi.
constexpr const char* kRelease7Header =
    R"({"jsonversion":4, "bitmode":16, "fileIndex":0, "detshape":[1, 1], "shape":[1024, 512], )"
    R"("size":1048576, "acqIndex":4, "frameIndex":0, "progress":100, "fname":"//run", "data":1, )"
    R"("completeImage":1, "frameNumber":4, "expLength":0, "packetNumber":128, "detSpec1":0, )"
    R"("timestamp":0, "modId":0, "row":0, "column":0, "detSpec2":0, "detSpec3":0, "detSpec4":0, )"
    R"("detType":3, "version":2, "flipRows":0, "quad":0, "addJsonHeader": {"emin":"500"} })"
    "\n";

json frame_header() {
  return json::parse(kReceiverFrameHeader);
}

SlsHeader parsed(const std::string& text) {
  const SlsHeaderResult result = parse_sls_header(text);
  if (!result.header) qFatal("header refused: %s", result.problem.c_str());
  return *result.header;
}

constexpr std::size_t kModuleBytes = 512 * 1024 * 2;

// Simulator events of the Jungfrau 4M (the truth the assembled events must equal), made once.
struct Jungfrau4m {
  DetectorDescription detector = find_detector("jungfrau4m");
  std::vector<std::vector<std::byte>> raw;
  std::vector<std::int64_t> time_ns;
};
const Jungfrau4m& jungfrau4m_events() {
  static const Jungfrau4m events = [] {
    Jungfrau4m made;
    ThreadPool pool(2);
    DetectorSimulator simulator(made.detector, SimulatorConfig{}, &pool);
    for (std::uint64_t i = 0; i < 3; ++i) {
      made.raw.emplace_back(made.detector.raw_event_bytes());
      simulator.generate(i, made.raw.back().data(), nullptr, &pool);
      made.time_ns.push_back(simulator.header_for(i).timestamp_ns);
    }
    return made;
  }();
  return events;
}

// A Jungfrau of two 4 x 8 modules, one above the other, for the assembler's tests.
DetectorDescription tiny_jungfrau() {
  DetectorDescription detector = find_detector("jungfrau4m");
  detector.name = "tiny_jungfrau";
  detector.segments = 2;
  detector.rows = 4;
  detector.cols = 8;
  detector.asic_rows = 4;
  detector.asic_cols = 8;
  detector.bank_columns = 8;
  detector.placement = {{0, 0, 0}, {0, 10, 0}};
  return detector;
}

// One message of the tiny detector (one port per module): header and pixels, as parts.
struct TinyMessage {
  std::string header;
  std::vector<std::byte> pixels;
  std::vector<std::span<const std::byte>> parts() const {
    std::vector<std::span<const std::byte>> views{
        {reinterpret_cast<const std::byte*>(header.data()), header.size()}};
    if (!pixels.empty()) views.emplace_back(pixels.data(), pixels.size());
    return views;
  }
};
TinyMessage tiny_part(std::uint64_t frame, int row, bool complete = true) {
  json header = frame_header();
  header["detshape"] = {1, 2};
  header["shape"] = {8, 4};
  header["size"] = 64;
  header["frameNumber"] = frame;
  header["row"] = row;
  header["column"] = 0;
  header["completeImage"] = complete ? 1 : 0;
  TinyMessage message{header.dump(), std::vector<std::byte>(64)};
  // Each byte says which frame and module it is: frame * 16 + row.
  for (auto& b : message.pixels) b = std::byte(frame * 16 + std::uint64_t(row));
  return message;
}
TinyMessage tiny_end() {
  return {kReceiverEndHeader, {}};
}

// Drives an SlsAssembler on a fake clock and collects what it delivers.
struct TinyAssembly {
  using Clock = SlsAssembler::Clock;
  EventBufferPool pool{128};
  std::vector<AssembledEvent> delivered;
  bool engine_full = false;
  Clock::time_point now{};
  SlsAssembler assembler;
  explicit TinyAssembly(std::size_t max_pending = 16, std::size_t max_message_bytes = std::size_t(1)
                                                                                      << 30)
      : assembler(SlsLayout(tiny_jungfrau(), 1), {"tcp://port-a:1", "tcp://port-b:2"},
                  AssemblerSettings{std::chrono::milliseconds(500), max_pending, max_message_bytes},
                  pool, [this](AssembledEvent& event) {
                    if (engine_full) return false;
                    delivered.push_back(std::move(event));
                    return true;
                  }) {}
  void send(int port, const TinyMessage& message) {
    const auto parts = message.parts();
    assembler.on_message(port, parts, now);
  }
  void wait(int ms) {
    now += std::chrono::milliseconds(ms);
    assembler.expire(now);
  }
  std::vector<std::uint64_t> frames() const {
    std::vector<std::uint64_t> numbers;
    for (const auto& event : delivered) numbers.push_back(event.frame_number);
    return numbers;
  }
  StreamCounts counts() const { return assembler.counts(); }
};

std::uint64_t count_of(const std::map<std::string, std::uint64_t>& counts, const char* reason) {
  const auto it = counts.find(reason);
  return it == counts.end() ? 0 : it->second;
}

QString problem_of(const StreamCounts& counts) {
  return QString::fromStdString(counts.last_problem);
}

QString input_error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& error) {
    return QString::fromStdString(error.what());
  }
  return {};
}

// A source on the publisher's ports, subscribed and started.
std::unique_ptr<StreamSource> open_subscribed(tools::SlsPublisher& publisher,
                                              std::chrono::milliseconds module_timeout) {
  StreamOptions options;
  options.detector = "jungfrau4m";
  options.module_timeout = module_timeout;
  auto source = open_stream_source(publisher.source_string(), options);
  // The hang guard only: a subscription on the loopback takes milliseconds.
  if (!publisher.wait_for_subscribers(std::chrono::seconds(60))) return nullptr;
  source->start();
  return source;
}

// The next event, with a generous hang guard (never a performance limit).
std::optional<StreamEvent> next_event(StreamSource& source) {
  return source.next(std::chrono::seconds(60));
}

bool same_bytes(const StreamEvent& event, const std::vector<std::byte>& truth) {
  return std::memcmp(event.data, truth.data(), truth.size()) == 0;
}

}  // namespace

class TestStreamSls : public QObject {
  Q_OBJECT
 private slots:
  // --- headers ----------------------------------------------------------------------------

  void reads_every_field_of_a_receiver_frame_header() {
    const SlsHeader header = parsed(kReceiverFrameHeader);
    QVERIFY(header.data);
    QCOMPARE(header.json_version, std::uint64_t(5));
    QCOMPARE(header.bit_mode, std::uint64_t(16));
    QCOMPARE(header.detector_port_columns, std::uint64_t(2));
    QCOMPARE(header.detector_port_rows, std::uint64_t(8));
    QCOMPARE(header.part_columns, std::uint64_t(1024));
    QCOMPARE(header.part_rows, std::uint64_t(256));
    QCOMPARE(header.size, std::uint64_t(524288));
    QCOMPARE(header.frame_number, std::uint64_t(1017));
    QCOMPARE(header.row, std::uint64_t(5));
    QCOMPARE(header.column, std::uint64_t(1));
    QVERIFY(header.complete_image);
    QCOMPARE(header.timestamp, std::uint64_t(123456789));
    QCOMPARE(header.detector_type.value_or(99), std::uint64_t(3));
    QCOMPARE(header.packets, std::uint64_t(64));
  }

  void reads_the_end_of_acquisition_header_and_a_release_7_header() {
    QVERIFY(!parsed(kReceiverEndHeader).data);
    // Only "data" matters at the end: a bare one is an end too.
    QVERIFY(!parsed(R"({"data":0})").data);
    const SlsHeader old = parsed(kRelease7Header);
    QCOMPARE(old.json_version, std::uint64_t(4));
    QCOMPARE(old.part_rows, std::uint64_t(512));
    QCOMPARE(old.frame_number, std::uint64_t(4));
  }

  void refuses_headers_naming_the_reason_and_the_field_data() {
    QTest::addColumn<QByteArray>("message");
    QTest::addColumn<QString>("reason");
    QTest::addColumn<QString>("named");
    const auto with = [](const char* field, const json& value) {
      json header = frame_header();
      header[field] = value;
      return QByteArray::fromStdString(header.dump());
    };
    const auto without = [](const char* field) {
      json header = frame_header();
      header.erase(field);
      return QByteArray::fromStdString(header.dump());
    };
    QTest::newRow("binary") << QByteArray("\x89PNG\r\n\x1a\n\0\0", 10) << "foreign"
                            << "89 50 4e 47";
    QTest::newRow("empty") << QByteArray() << "foreign"
                           << "an empty part";
    QTest::newRow("plain text") << QByteArray("frame 12") << "foreign"
                                << "not an sls JSON header";
    QTest::newRow("broken JSON") << QByteArray(R"({"data":1, "bitmode":)") << "malformed"
                                 << "not valid JSON";
    QTest::newRow("no data") << without("data") << "malformed"
                             << "'data' is missing";
    QTest::newRow("no row") << without("row") << "malformed"
                            << "'row' is missing";
    QTest::newRow("no frameNumber") << without("frameNumber") << "malformed"
                                    << "'frameNumber' is missing";
    QTest::newRow("no timestamp") << without("timestamp") << "malformed"
                                  << "'timestamp' is missing";
    QTest::newRow("size as text") << with("size", "big") << "malformed"
                                  << "field 'size' is \"big\"";
    QTest::newRow("negative column") << with("column", -1) << "malformed"
                                     << "field 'column' is -1";
    QTest::newRow("fractional row") << with("row", 1.5) << "malformed"
                                    << "field 'row' is 1.5";
    QTest::newRow("detshape not a pair") << with("detshape", 8) << "malformed"
                                         << "field 'detshape' is 8";
    QTest::newRow("shape of three") << with("shape", json::array({1024, 256, 1})) << "malformed"
                                    << "field 'shape'";
    QTest::newRow("bit mode 32") << with("bitmode", 32) << "unsupported"
                                 << "bit mode 32";
    QTest::newRow("bit mode 8") << with("bitmode", 8) << "unsupported"
                                << "bit mode 16 only";
    QTest::newRow("flipped rows") << with("flipRows", 1) << "unsupported"
                                  << "'flipRows' is 1";
    QTest::newRow("quad") << with("quad", 1) << "unsupported"
                          << "'quad' is 1";
  }
  void refuses_headers_naming_the_reason_and_the_field() {
    QFETCH(QByteArray, message);
    QFETCH(QString, reason);
    QFETCH(QString, named);
    const SlsHeaderResult result = parse_sls_header(message.toStdString());
    QVERIFY(!result.header);
    QCOMPARE(QString::fromStdString(result.reason), reason);
    QVERIFY2(QString::fromStdString(result.problem).contains(named), result.problem.c_str());
  }

  void keeps_only_epoch_nanosecond_timestamps() {
    SlsHeader header;
    header.timestamp = 123456789;  // Jungfrau: 10 MHz ticks since power-on (12 s)
    QCOMPARE(epoch_timestamp_ns(header), std::int64_t(0));
    header.timestamp = 1'767'225'600'000'000'000ull;  // 2026-01-01 in ns
    QCOMPARE(epoch_timestamp_ns(header), std::int64_t(1'767'225'600'000'000'000));
    header.timestamp = 1'767'225'600ull;  // seconds, not ns
    QCOMPARE(epoch_timestamp_ns(header), std::int64_t(0));
  }

  // --- ports, modules, halves --------------------------------------------------------------

  void places_one_port_per_module_by_row_and_column() {
    const SlsLayout layout(find_detector("jungfrau4m"), 1);
    QCOMPARE(layout.ports(), 8);
    QCOMPARE(layout.port_rows(), 4);
    QCOMPARE(layout.port_columns(), 2);
    QCOMPARE(layout.part_bytes(), kModuleBytes);
    // jungfrau4m's placement: x 0 or 1039 (columns), y 0, 550, 1100, 1650 (rows), in segment order.
    for (int segment = 0; segment < 8; ++segment) {
      QCOMPARE(layout.position_of(segment, 0).row, segment / 2);
      QCOMPARE(layout.position_of(segment, 0).column, segment % 2);
    }
    json header = frame_header();
    header["detshape"] = {2, 4};
    header["shape"] = {1024, 512};
    header["size"] = kModuleBytes;
    header["row"] = 3;
    header["column"] = 1;
    const SlsPartCheck check = layout.place(parsed(header.dump()), kModuleBytes);
    QVERIFY2(check.place, check.problem.c_str());
    QCOMPARE(check.place->segment, 7);
    QCOMPARE(check.place->half, 0);
    QCOMPARE(check.place->byte_offset, 7 * kModuleBytes);
    QCOMPARE(check.place->position, 7);
  }

  void places_two_ports_per_module_outer_half_first() {
    const SlsLayout layout(find_detector("jungfrau4m"), 2);
    QCOMPARE(layout.ports(), 16);
    QCOMPARE(layout.port_rows(), 8);
    QCOMPARE(layout.part_rows(), 256);
    // Module 5 sits in module row 2, column 1: its outer interface reports row 4, the inner row 5.
    QCOMPARE(layout.position_of(5, 0).row, 4);
    QCOMPARE(layout.position_of(5, 1).row, 5);
    QCOMPARE(layout.position_of(5, 1).column, 1);
    const SlsPartCheck inner = layout.place(parsed(kReceiverFrameHeader), kModuleBytes / 2);
    QVERIFY2(inner.place, inner.problem.c_str());
    QCOMPARE(inner.place->segment, 5);
    QCOMPARE(inner.place->half, 1);
    // Module rows 256..511 of segment 5.
    QCOMPARE(inner.place->byte_offset, 5 * kModuleBytes + kModuleBytes / 2);
    json outer = frame_header();
    outer["row"] = 4;
    outer["column"] = 0;
    const SlsPartCheck outer_check = layout.place(parsed(outer.dump()), kModuleBytes / 2);
    QVERIFY(outer_check.place);
    QCOMPARE(outer_check.place->segment, 4);
    QCOMPARE(outer_check.place->half, 0);
    QCOMPARE(outer_check.place->byte_offset, 4 * kModuleBytes);
  }

  void refuses_parts_that_do_not_fit_the_detector_data() {
    QTest::addColumn<QByteArray>("header");
    QTest::addColumn<int>("data_bytes");
    QTest::addColumn<QString>("reason");
    QTest::addColumn<QString>("named");
    const auto with = [](const char* field, const json& value) {
      json header = frame_header();
      header[field] = value;
      return QByteArray::fromStdString(header.dump());
    };
    const int half = int(kModuleBytes / 2);
    QTest::newRow("one port per module")
        << with("detshape", json::array({2, 4})) << half << "wrong_detector"
        << "detshape [2, 4]";
    QTest::newRow("Eiger port shape")
        << with("shape", json::array({512, 256})) << half << "wrong_detector"
        << "shape [512, 256]";
    QTest::newRow("rows and columns swapped")
        << with("shape", json::array({256, 1024})) << half << "wrong_detector"
        << "[1024, 256]";
    QTest::newRow("size") << with("size", 1048576) << half << "wrong_detector"
                          << "size 1048576";
    QTest::newRow("Eiger") << with("detType", 1) << half << "wrong_detector"
                           << "detType 1";
    QTest::newRow("row 8") << with("row", 8) << half << "wrong_detector"
                           << "row 8, column 1 is outside";
    QTest::newRow("column 2") << with("column", 2) << half << "wrong_detector"
                              << "outside the detector's 8 x 2 ports";
    QTest::newRow("truncated") << with("row", 5) << half - 100 << "truncated"
                               << "524188 bytes, the header's size says 524288";
    QTest::newRow("oversized") << with("row", 5) << half + 2 << "oversized"
                               << "524290 bytes";
  }
  void refuses_parts_that_do_not_fit_the_detector() {
    QFETCH(QByteArray, header);
    QFETCH(int, data_bytes);
    QFETCH(QString, reason);
    QFETCH(QString, named);
    const SlsLayout layout(find_detector("jungfrau4m"), 2);
    const SlsPartCheck check = layout.place(parsed(header.toStdString()), std::size_t(data_bytes));
    QVERIFY(!check.place);
    QCOMPARE(QString::fromStdString(check.reason), reason);
    QVERIFY2(QString::fromStdString(check.problem).contains(named), check.problem.c_str());
  }

  void refuses_detectors_and_port_counts_it_cannot_feed() {
    QVERIFY(input_error_of([] {
              SlsLayout(find_detector("epix10ka2m"), 1);
            }).contains("Jungfrau raw words"));
    QVERIFY(input_error_of([] {
              SlsLayout(find_detector("generic_f32"), 1);
            }).contains("float32 raw words"));
    QVERIFY(
        input_error_of([] { SlsLayout(find_detector("jungfrau4m"), 3); }).contains("1 or 2 ports"));
    DetectorDescription rotated = find_detector("jungfrau4m");
    rotated.placement[3].rotation_deg = 90;
    QVERIFY(input_error_of([&] { SlsLayout(rotated, 1); }).contains("segment 3 is rotated"));
    const DetectorDescription jungfrau = find_detector("jungfrau4m");
    QCOMPARE(SlsLayout::ports_per_module_for(jungfrau, 8), 1);
    QCOMPARE(SlsLayout::ports_per_module_for(jungfrau, 16), 2);
    const QString five = input_error_of([&] { SlsLayout::ports_per_module_for(jungfrau, 5); });
    QVERIFY2(five.contains("8 ports") && five.contains("16") && five.contains("got 5"),
             qPrintable(five));
  }

  // --- the source string -------------------------------------------------------------------

  void parses_the_endpoint_list_and_refuses_bad_ones() {
    const auto endpoints =
        parse_sls_endpoint_list("tcp://rx1:30001,tcp://[::1]:30002,ipc:///tmp/a");
    QCOMPARE(endpoints.size(), std::size_t(3));
    QCOMPARE(QString::fromStdString(endpoints[1]), QString("tcp://[::1]:30002"));

    StreamOptions options;
    const auto refusal = [&](const std::string& source) {
      return input_error_of([&] { open_stream_source(source, options); });
    };
    QVERIFY(refusal("sls:").contains("names no endpoint"));
    QVERIFY(refusal("sls:tcp://a:1,,tcp://b:2").contains("endpoint 2 is empty"));
    QVERIFY(refusal("sls:tcp://a:1,").contains("endpoint 2 is empty"));
    QVERIFY(refusal("sls:http://a:1").contains("'http://a:1' is not tcp://HOST:PORT"));
    QVERIFY(refusal("sls:tcp://rx1").contains("'tcp://rx1' has no HOST:PORT"));
    QVERIFY(refusal("sls:tcp://rx1:99999").contains("port '99999'"));
    QVERIFY(refusal("sls:tcp://rx1:1,tcp://rx1:1").contains("'tcp://rx1:1' is listed twice"));
    // jungfrau4m (the default) has 8 modules: 8 or 16 endpoints.
    QVERIFY(refusal("sls:tcp://127.0.0.1:30001,tcp://127.0.0.1:30002").contains("got 2 endpoints"));
    std::string sixteen = "sls:";
    for (int port = 0; port < 16; ++port)
      sixteen += (port ? "," : "") + std::string("tcp://127.0.0.1:") + std::to_string(30001 + port);
    options.detector = "epix10ka2m";
    QVERIFY(refusal(sixteen).contains("'epix10ka2m' has epix10ka raw words"));
    options.detector = "jungfrau4m";
    options.module_timeout = std::chrono::milliseconds(0);
    QVERIFY(refusal(sixteen).contains("module timeout 0 ms"));
  }

  // --- assembly, on a fake clock -----------------------------------------------------------

  void assembles_parts_into_events_in_frame_order() {
    TinyAssembly tiny;
    tiny.send(1, tiny_part(1, 1));  // the lower module first: the order of ports does not matter
    tiny.send(0, tiny_part(1, 0));
    tiny.send(0, tiny_part(2, 0));
    tiny.send(0, tiny_part(3, 0));
    tiny.send(1, tiny_part(3, 1));  // frame 3 is complete but waits for frame 2
    QCOMPARE(tiny.frames(), std::vector<std::uint64_t>({1}));
    tiny.send(1, tiny_part(2, 1));
    QCOMPARE(tiny.frames(), std::vector<std::uint64_t>({1, 2, 3}));
    // Module 0 (row 0) fills bytes 0..63, module 1 bytes 64..127.
    for (const AssembledEvent& event : tiny.delivered) {
      QCOMPARE(event.data[0], std::byte(event.frame_number * 16 + 0));
      QCOMPARE(event.data[63], std::byte(event.frame_number * 16 + 0));
      QCOMPARE(event.data[64], std::byte(event.frame_number * 16 + 1));
      QCOMPARE(event.data[127], std::byte(event.frame_number * 16 + 1));
      QCOMPARE(event.timestamp_ns, std::int64_t(0));  // 10 MHz ticks are not epoch time
    }
    const StreamCounts counts = tiny.counts();
    QCOMPARE(counts.messages, std::uint64_t(6));
    QCOMPARE(counts.events, std::uint64_t(3));
    QCOMPARE(counts.acquisitions, std::uint64_t(1));
    QCOMPARE(counts.rejected_total() + counts.dropped_total(), std::uint64_t(0));
    QCOMPARE(tiny.assembler.pending_events(), std::size_t(0));
  }

  void a_batch_hands_events_on_only_after_its_copies() {
    // The receiving thread notes a round of parts, then copies them together (spread over
    // threads): nothing may be handed on before its bytes are there, and no two copies of a
    // round may write the same bytes, even when an event is dropped in the middle of the round
    // (its buffer must not be reused by an event begun in the same round).
    TinyAssembly tiny(/*max_pending=*/1);
    std::vector<TinyMessage> kept;  // the messages' bytes stay valid until end_batch
    tiny.assembler.begin_batch();
    for (const auto& [frame, row] : std::vector<std::pair<int, int>>{{1, 1}, {2, 0}, {2, 1}}) {
      kept.push_back(tiny_part(std::uint64_t(frame), row));
      tiny.send(row, kept.back());
    }
    // Frame 1 was dropped when frame 2 began (one event may wait); frame 2 is complete but its
    // parts are not copied yet.
    QCOMPARE(count_of(tiny.counts().dropped, "missing_module"), std::uint64_t(1));
    QVERIFY(tiny.delivered.empty());
    std::vector<SlsAssembler::PartCopy> made;
    tiny.assembler.end_batch([&made](const std::vector<SlsAssembler::PartCopy>& copies) {
      made = copies;
      for (const auto& part : copies) std::memcpy(part.to, part.from, part.bytes);
    });
    QCOMPARE(made.size(), std::size_t(3));
    for (std::size_t i = 0; i < made.size(); ++i)
      for (std::size_t j = i + 1; j < made.size(); ++j)
        QVERIFY2(
            made[i].to + made[i].bytes <= made[j].to || made[j].to + made[j].bytes <= made[i].to,
            "two copies of one round write the same bytes");
    QCOMPARE(tiny.frames(), std::vector<std::uint64_t>({2}));
    const AssembledEvent& event = tiny.delivered.front();
    QCOMPARE(event.data[0], std::byte(2 * 16 + 0));
    QCOMPARE(event.data[63], std::byte(2 * 16 + 0));
    QCOMPARE(event.data[64], std::byte(2 * 16 + 1));
    QCOMPARE(event.data[127], std::byte(2 * 16 + 1));
    // Outside a batch, parts are copied at once again.
    tiny.send(0, tiny_part(3, 0));
    tiny.send(1, tiny_part(3, 1));
    QCOMPARE(tiny.frames(), std::vector<std::uint64_t>({2, 3}));
    QCOMPARE(tiny.delivered.back().data[127], std::byte(3 * 16 + 1));
  }

  void hands_an_event_buffer_over_instead_of_a_copy() {
    // With the engine's allocator set, the buffer of the event next() returned can become a ring
    // slot as it is: the caller gets the event's own bytes and gives a buffer of the same
    // allocator in its place, which the source reuses; every buffer is freed exactly once, by
    // the allocator that made it.
    const Jungfrau4m& truth = jungfrau4m_events();
    testing::CountingAllocator counting;
    const BufferAllocator allocator = counting.allocator();
    const std::set<void*>& live = counting.counts->live;  // made and not yet freed
    std::vector<void*> handed_over;
    {
      tools::SlsPublisher publisher(truth.detector);
      StreamOptions options;
      options.detector = "jungfrau4m";
      auto source = open_stream_source(publisher.source_string(), options);
      source->set_buffer_allocator(allocator);
      QVERIFY(counting.counts->made >=
              int(options.pending_events));  // made ahead, before the first event
      QVERIFY(publisher.wait_for_subscribers(std::chrono::seconds(60)));
      source->start();
      for (std::size_t i = 0; i < 6; ++i)
        publisher.send_event(1 + i, truth.raw[i % truth.raw.size()].data(), 0);
      for (std::size_t i = 0; i < 6; ++i) {
        const auto event = next_event(*source);
        QVERIFY(event);
        QCOMPARE(event->frame_number, std::uint64_t(1 + i));
        void* replacement = allocator.allocate(truth.detector.raw_event_bytes());
        void* buffer = source->exchange_event_buffer(replacement);
        QCOMPARE(buffer, static_cast<const void*>(event->data));
        QVERIFY(std::memcmp(buffer, truth.raw[i % truth.raw.size()].data(), truth.raw[0].size()) ==
                0);
        handed_over.push_back(buffer);
      }
      QCOMPARE(source->counts().dropped_total(), std::uint64_t(0));
    }
    // The source freed all it held; what it handed over is the caller's.
    QCOMPARE(live.size(), handed_over.size());
    for (void* buffer : handed_over) QVERIFY(live.count(buffer) == 1);
    for (void* buffer : handed_over) allocator.free(buffer);
    QCOMPARE(counting.counts->freed_unknown, 0);
    QVERIFY(live.empty());
  }

  void keeps_buffers_made_before_the_allocator_to_itself() {
    // A buffer made before the engine's allocator was set cannot become a ring slot (the ring
    // would free it with the wrong allocator): the exchange is refused and the caller copies.
    int made = 0, freed = 0;  // before the pool: its destructor frees through the allocator
    EventBufferPool pool(64);
    std::byte* early = pool.acquire();
    pool.set_allocator({[&](std::size_t bytes) {
                          ++made;
                          return ::operator new(bytes);
                        },
                        [&](void* buffer) {
                          ++freed;
                          ::operator delete(buffer);
                        }});
    auto* replacement = static_cast<std::byte*>(::operator new(64));
    QVERIFY(!pool.exchange(early, replacement));
    pool.give_back(early);
    // A free buffer of the old allocator is not lent again: the next one is made by the new.
    std::byte* later = pool.acquire();
    QCOMPARE(made, 1);
    QVERIFY(pool.exchange(later, replacement));
    pool.give_back(replacement);
    ::operator delete(later);  // handed over: the caller's now (the test's own operator new)
    QVERIFY(pool.acquire() == replacement);
    pool.give_back(replacement);
    QCOMPARE(freed, 0);
    QVERIFY_THROWS_EXCEPTION(RuntimeFault, pool.set_bytes(128));
  }

  void drops_an_event_whose_part_does_not_come_in_time() {
    TinyAssembly tiny;
    tiny.send(0, tiny_part(1, 0));
    tiny.send(1, tiny_part(1, 1));
    tiny.send(0, tiny_part(2, 0));
    tiny.send(0, tiny_part(3, 0));
    tiny.send(1, tiny_part(3, 1));
    tiny.wait(499);
    QCOMPARE(tiny.counts().dropped_total(), std::uint64_t(0));
    tiny.wait(1);
    const StreamCounts counts = tiny.counts();
    QCOMPARE(count_of(counts.dropped, "missing_module"), std::uint64_t(1));
    const QString problem = problem_of(counts);
    QVERIFY2(problem.contains("frame 2") && problem.contains("row 1, column 0") &&
                 problem.contains("tcp://port-b:2") && problem.contains("500 ms"),
             qPrintable(problem));
    QCOMPARE(tiny.frames(), std::vector<std::uint64_t>({1, 3}));
    // Its part, late, is absorbed: no new event, no second drop.
    tiny.send(1, tiny_part(2, 1));
    tiny.wait(1000);
    QCOMPARE(tiny.counts().dropped_total(), std::uint64_t(1));
    QCOMPARE(tiny.counts().events, std::uint64_t(2));
    QCOMPARE(tiny.assembler.pending_events(), std::size_t(0));
  }

  void drops_the_oldest_incomplete_event_when_too_many_wait() {
    TinyAssembly tiny(2);
    tiny.send(0, tiny_part(10, 0));
    tiny.send(0, tiny_part(11, 0));
    tiny.send(0, tiny_part(12, 0));
    StreamCounts counts = tiny.counts();
    QCOMPARE(count_of(counts.dropped, "missing_module"), std::uint64_t(1));
    QVERIFY2(problem_of(counts).contains("frame 10: more than 2 events waiting"),
             counts.last_problem.c_str());
    tiny.send(1, tiny_part(11, 1));
    tiny.send(1, tiny_part(12, 1));
    QCOMPARE(tiny.frames(), std::vector<std::uint64_t>({11, 12}));
  }

  void counts_incomplete_duplicate_and_refused_parts() {
    TinyAssembly tiny;
    tiny.send(0, tiny_part(1, 0, /*complete=*/false));
    tiny.send(1, tiny_part(1, 1));  // the rest of a dropped frame: absorbed
    StreamCounts counts = tiny.counts();
    QCOMPARE(count_of(counts.dropped, "incomplete"), std::uint64_t(1));
    QVERIFY2(problem_of(counts).contains("tcp://port-a:1: frame 1, row 0, column 0") &&
                 problem_of(counts).contains("completeImage 0"),
             counts.last_problem.c_str());
    tiny.send(0, tiny_part(2, 0));
    tiny.send(1, tiny_part(2, 0));  // port b claims row 0 as well
    counts = tiny.counts();
    QCOMPARE(count_of(counts.rejected, "wrong_detector"), std::uint64_t(1));
    QVERIFY2(problem_of(counts).contains("came twice"), counts.last_problem.c_str());
    tiny.send(1, {"not json", {}});
    QCOMPARE(count_of(tiny.counts().rejected, "foreign"), std::uint64_t(1));
    TinyMessage short_part = tiny_part(2, 1);
    short_part.pixels.resize(60);
    tiny.send(1, short_part);
    QCOMPARE(count_of(tiny.counts().rejected, "truncated"), std::uint64_t(1));
    TinyMessage header_only = tiny_part(2, 1);
    header_only.pixels.clear();
    tiny.send(1, header_only);
    counts = tiny.counts();
    QCOMPARE(count_of(counts.rejected, "truncated"), std::uint64_t(2));
    QVERIFY2(problem_of(counts).contains("no pixel part came"), counts.last_problem.c_str());
    tiny.send(1, tiny_part(2, 1));
    QCOMPARE(tiny.frames(), std::vector<std::uint64_t>({2}));
    tiny.engine_full = true;
    tiny.send(0, tiny_part(3, 0));
    tiny.send(1, tiny_part(3, 1));
    counts = tiny.counts();
    QCOMPARE(count_of(counts.dropped, "engine_busy"), std::uint64_t(1));
    QCOMPARE(counts.messages, std::uint64_t(10));
    QCOMPARE(counts.events, std::uint64_t(1));
  }

  void refuses_messages_of_the_wrong_shape() {
    TinyAssembly tiny(16, 2000);
    TinyMessage three_parts = tiny_part(1, 0);
    auto parts = three_parts.parts();
    parts.push_back(parts[1]);
    tiny.assembler.on_message(0, parts, tiny.now);
    StreamCounts counts = tiny.counts();
    QCOMPARE(count_of(counts.rejected, "malformed"), std::uint64_t(1));
    QVERIFY2(problem_of(counts).contains("3 parts"), counts.last_problem.c_str());
    TinyMessage end_with_pixels = tiny_end();
    end_with_pixels.pixels.resize(8);
    tiny.send(0, end_with_pixels);
    counts = tiny.counts();
    QCOMPARE(count_of(counts.rejected, "malformed"), std::uint64_t(2));
    QVERIFY2(problem_of(counts).contains("end-of-acquisition header (data 0) followed by"),
             counts.last_problem.c_str());
    TinyMessage large = tiny_part(1, 0);
    large.header += std::string(2000, ' ');  // whitespace is valid JSON; the message is too large
    tiny.send(0, large);
    counts = tiny.counts();
    QCOMPARE(count_of(counts.rejected, "oversized"), std::uint64_t(1));
    QVERIFY2(problem_of(counts).contains("more than the largest accepted (2000)"),
             counts.last_problem.c_str());
    QCOMPARE(counts.messages, std::uint64_t(3));
    QCOMPARE(tiny.assembler.pending_events(), std::size_t(0));
  }

  void counts_frames_that_no_port_sent_once_every_port_is_past_them() {
    TinyAssembly tiny;
    tiny.send(0, tiny_part(1, 0));
    tiny.send(1, tiny_part(1, 1));
    tiny.send(0, tiny_part(2, 0));
    tiny.send(1, tiny_part(2, 1));
    // Frames 3 and 4 never come from either port (lost upstream); frame 5 comes from port a
    // first: port b may still send 3 and 4, so nothing is counted yet.
    tiny.send(0, tiny_part(5, 0));
    QCOMPARE(count_of(tiny.counts().dropped, "missing_frame"), std::uint64_t(0));
    tiny.send(1, tiny_part(5, 1));
    StreamCounts counts = tiny.counts();
    QCOMPARE(count_of(counts.dropped, "missing_frame"), std::uint64_t(2));
    QVERIFY2(problem_of(counts).contains("frames 2 to 4: 2 of them came from no port"),
             counts.last_problem.c_str());
    QCOMPARE(tiny.frames(), std::vector<std::uint64_t>({1, 2, 5}));
    // A frame one port lacks is missing_module (after the timeout), not missing_frame.
    tiny.send(0, tiny_part(6, 0));
    tiny.send(0, tiny_part(7, 0));
    tiny.send(1, tiny_part(7, 1));
    tiny.wait(500);
    counts = tiny.counts();
    QCOMPARE(count_of(counts.dropped, "missing_module"), std::uint64_t(1));
    QCOMPARE(count_of(counts.dropped, "missing_frame"), std::uint64_t(2));
    // A new acquisition's frame numbers start again; frames before its first one are not counted
    // (a subscriber that joins late cannot know them), the gap after it is.
    tiny.send(0, tiny_end());
    tiny.send(1, tiny_end());
    tiny.send(0, tiny_part(3, 0));
    tiny.send(1, tiny_part(3, 1));
    tiny.send(0, tiny_part(5, 0));
    tiny.send(1, tiny_part(5, 1));
    counts = tiny.counts();
    QCOMPARE(count_of(counts.dropped, "missing_frame"), std::uint64_t(3));
    QCOMPARE(tiny.frames(), std::vector<std::uint64_t>({1, 2, 5, 7, 3, 5}));
    // Events in = events handed on + dropped: every frame number of the acquisitions is there.
    QCOMPARE(counts.events + counts.dropped_total(), std::uint64_t(3 + 2 + 1 + 1 + 2 + 1));
  }

  void ends_acquisitions_port_by_port() {
    TinyAssembly tiny;
    tiny.send(0, tiny_part(1, 0));
    tiny.send(1, tiny_part(1, 1));
    tiny.send(0, tiny_part(2, 0));
    // Port a ends first (its part of frame 3 never comes) and already streams the next
    // acquisition; port b's last parts and its end come later.
    tiny.send(0, tiny_end());
    tiny.send(0, tiny_part(4, 0));
    tiny.send(1, tiny_part(2, 1));
    tiny.send(1, tiny_part(3, 1));
    StreamCounts counts = tiny.counts();
    QCOMPARE(count_of(counts.dropped, "cut_by_end"), std::uint64_t(0));
    QCOMPARE(counts.acquisitions, std::uint64_t(2));
    QCOMPARE(counts.acquisitions_ended, std::uint64_t(0));
    tiny.send(1, tiny_end());
    counts = tiny.counts();
    // Frame 3 lacks port a's part, and port a had ended: cut. Frame 4 is the next acquisition's.
    QCOMPARE(count_of(counts.dropped, "cut_by_end"), std::uint64_t(1));
    QVERIFY2(problem_of(counts).contains("frame 3"), counts.last_problem.c_str());
    QCOMPARE(counts.acquisitions_ended, std::uint64_t(1));
    tiny.send(1, tiny_part(4, 1));
    QCOMPARE(tiny.frames(), std::vector<std::uint64_t>({1, 2, 4}));
    // The detector's frame numbers may start again in a new acquisition.
    tiny.send(0, tiny_end());
    tiny.send(1, tiny_end());
    tiny.send(0, tiny_part(1, 0));
    tiny.send(1, tiny_part(1, 1));
    QCOMPARE(tiny.frames(), std::vector<std::uint64_t>({1, 2, 4, 1}));
    counts = tiny.counts();
    QCOMPARE(counts.acquisitions, std::uint64_t(3));
    QCOMPARE(counts.acquisitions_ended, std::uint64_t(2));
    QCOMPARE(counts.rejected_total(), std::uint64_t(0));
  }

  // --- over sockets, with the receivers' stand-in -------------------------------------------

  void streams_events_bit_identical_to_the_simulator_data() {
    QTest::addColumn<int>("ports_per_module");
    QTest::newRow("one port per module") << 1;
    QTest::newRow("two ports per module") << 2;
  }
  void streams_events_bit_identical_to_the_simulator() {
    QFETCH(int, ports_per_module);
    const Jungfrau4m& truth = jungfrau4m_events();
    tools::SlsPublisherOptions publishing;
    publishing.ports_per_module = ports_per_module;
    tools::SlsPublisher publisher(truth.detector, publishing);
    QCOMPARE(publisher.ports(), 8 * ports_per_module);
    auto source = open_subscribed(publisher, std::chrono::milliseconds(500));
    QVERIFY(source);
    QVERIFY(QString::fromStdString(source->describe())
                .contains(QString::fromStdString(publisher.endpoints().back())));

    for (std::size_t i = 0; i < truth.raw.size(); ++i)
      publisher.send_event(1000 + i, truth.raw[i].data(), truth.time_ns[i]);
    publisher.send_end_of_acquisition();
    for (std::size_t i = 0; i < truth.raw.size(); ++i) {
      const auto event = next_event(*source);
      QVERIFY(event);
      QCOMPARE(event->frame_number, std::uint64_t(1000 + i));
      QVERIFY2(same_bytes(*event, truth.raw[i]), "assembled bytes differ from the simulator's");
      QCOMPARE(event->timestamp_ns, std::int64_t(0));  // Jungfrau's 10 MHz ticks
    }
    QTRY_VERIFY_WITH_TIMEOUT(source->counts().acquisitions_ended == 1, 60000);
    const StreamCounts counts = source->counts();
    QCOMPARE(counts.messages, publisher.messages_sent());
    QCOMPARE(counts.events, std::uint64_t(truth.raw.size()));
    QCOMPARE(counts.acquisitions, std::uint64_t(1));
    QCOMPARE(counts.rejected_total(), std::uint64_t(0));
    QCOMPARE(counts.dropped_total(), std::uint64_t(0));
    QVERIFY(counts.last_problem.empty());
    source->stop();
    QVERIFY(!source->next(std::chrono::milliseconds(0)));
  }

  void keeps_epoch_timestamps_of_a_sender_that_stamps_them() {
    const Jungfrau4m& truth = jungfrau4m_events();
    tools::SlsPublisherOptions publishing;
    publishing.epoch_timestamps = true;
    tools::SlsPublisher publisher(truth.detector, publishing);
    auto source = open_subscribed(publisher, std::chrono::milliseconds(500));
    QVERIFY(source);
    publisher.send_event(7, truth.raw[1].data(), truth.time_ns[1]);
    const auto event = next_event(*source);
    QVERIFY(event);
    QCOMPARE(event->timestamp_ns, truth.time_ns[1]);
    QVERIFY(same_bytes(*event, truth.raw[1]));
  }

  void drops_what_the_engine_does_not_take_and_never_waits() {
    const Jungfrau4m& truth = jungfrau4m_events();
    tools::SlsPublisher publisher(truth.detector);
    StreamOptions options;
    options.queue_events = 1;
    auto source = open_stream_source(publisher.source_string(), options);
    QVERIFY(publisher.wait_for_subscribers(std::chrono::seconds(60)));
    source->start();
    for (std::size_t i = 0; i < truth.raw.size(); ++i)
      publisher.send_event(1 + i, truth.raw[i].data(), truth.time_ns[i]);
    // Nobody takes events: the first fills the queue, the others are dropped, and reading goes on.
    QTRY_VERIFY_WITH_TIMEOUT(source->counts().events + source->counts().dropped_total() == 3,
                             60000);
    const StreamCounts counts = source->counts();
    QCOMPARE(counts.events, std::uint64_t(1));
    QCOMPARE(count_of(counts.dropped, "engine_busy"), std::uint64_t(2));
    QVERIFY2(problem_of(counts).contains("frame 3: the engine's queue"),
             counts.last_problem.c_str());
    const auto first = next_event(*source);
    QVERIFY(first);
    QCOMPARE(first->frame_number, std::uint64_t(1));
    QVERIFY(same_bytes(*first, truth.raw[0]));
    publisher.send_event(4, truth.raw[1].data(), truth.time_ns[1]);
    const auto fourth = next_event(*source);
    QVERIFY(fourth);
    QCOMPARE(fourth->frame_number, std::uint64_t(4));
    QVERIFY(same_bytes(*fourth, truth.raw[1]));
  }

  void assembles_a_backlog_of_every_port_in_step() {
    // Events queued on every port before the source reads (a burst, or a slow engine start) come
    // out whole: the ports are read in step, so the backlog never begins more events than may
    // wait (16).
    QTemporaryDir directory;
    const DetectorDescription tiny = tiny_jungfrau();
    const QString description = directory.filePath("tiny_jungfrau.json");
    {
      QFile file(description);
      QVERIFY(file.open(QIODevice::WriteOnly));
      file.write(QByteArray::fromStdString(to_json(tiny).dump()));
    }
    tools::SlsPublisherOptions publishing;
    publishing.ports_per_module = 2;
    tools::SlsPublisher publisher(tiny, publishing);
    StreamOptions options;
    options.detector = description.toStdString();
    options.queue_events = 1000;
    auto source = open_stream_source(publisher.source_string(), options);
    QVERIFY(publisher.wait_for_subscribers(std::chrono::seconds(60)));
    constexpr int kEvents = 200;
    std::vector<std::vector<std::byte>> raw(kEvents,
                                            std::vector<std::byte>(tiny.raw_event_bytes()));
    for (int i = 0; i < kEvents; ++i) {
      for (std::size_t b = 0; b < raw[i].size(); ++b) raw[i][b] = std::byte((i * 7 + b) & 0xff);
      publisher.send_event(std::uint64_t(i + 1), raw[i].data(), 0);
    }
    source->start();
    for (int i = 0; i < kEvents; ++i) {
      const auto event = next_event(*source);
      QVERIFY(event);
      QCOMPARE(event->frame_number, std::uint64_t(i + 1));
      QVERIFY(same_bytes(*event, raw[i]));
    }
    const StreamCounts counts = source->counts();
    QCOMPARE(counts.dropped_total(), std::uint64_t(0));
    QCOMPARE(counts.messages, std::uint64_t(4 * kEvents));
  }

  void counts_bad_input_and_keeps_assembling_data() {
    QTest::addColumn<QString>("fault");
    QTest::addColumn<QString>("rejected");     // reason of the one refused message, or empty
    QTest::addColumn<QString>("dropped");      // reason of the one dropped event, or empty
    QTest::addColumn<QStringList>("problem");  // what last_problem names
    // Port 5 (two ports per module) is module 2's inner half; module 2 sits in module row 1,
    // column 0, so the port reports row 3, column 0.
    const QString port5 = "row 3, column 0";
    QTest::newRow("missing module part")
        << "drop"
        << ""
        << "missing_module"
        << QStringList{"frame 2", "the part of row 3, column 0", "did not come within 1000 ms"};
    QTest::newRow("truncated part")
        << "truncate"
        << "truncated"
        << "" << QStringList{"frame 2", port5, "the header's size says 524288"};
    QTest::newRow("garbage") << "garbage"
                             << "foreign"
                             << "" << QStringList{"not an sls JSON header", "6e 6f 69 73 65"};
    QTest::newRow("another detector") << "eiger"
                                      << "wrong_detector"
                                      << "" << QStringList{"frame 2", "detType 1"};
    QTest::newRow("32-bit mode") << "bitmode32"
                                 << "unsupported"
                                 << "" << QStringList{"bit mode 32", "16 only"};
    QTest::newRow("incomplete part")
        << "incomplete"
        << ""
        << "incomplete" << QStringList{"frame 2", port5, "completeImage 0"};
    QTest::newRow("end in the middle") << "end"
                                       << ""
                                       << "cut_by_end" << QStringList{"frame 2", "acquisition"};
  }
  void counts_bad_input_and_keeps_assembling() {
    QFETCH(QString, fault);
    QFETCH(QString, rejected);
    QFETCH(QString, dropped);
    QFETCH(QStringList, problem);
    const Jungfrau4m& truth = jungfrau4m_events();
    tools::SlsPublisherOptions publishing;
    publishing.ports_per_module = 2;
    tools::SlsPublisher publisher(truth.detector, publishing);
    auto source = open_subscribed(publisher, std::chrono::milliseconds(1000));
    QVERIFY(source);
    constexpr int kPort = 5;
    const std::string faulty_port = publisher.endpoints()[kPort];

    publisher.send_event(1, truth.raw[0].data(), truth.time_ns[0]);
    // Frame 2: either the event itself goes wrong (it is then dropped) or one bad message comes
    // before it on port 5 (refused; the event still assembles).
    const std::byte* second = truth.raw[1].data();
    bool second_survives = true;
    using tools::PartFault;
    const auto bad_message_then_event = [&](PartFault part_fault) {
      publisher.send_part(2, second, truth.time_ns[1], kPort, part_fault);
      publisher.send_event(2, second, truth.time_ns[1]);
    };
    if (fault == "drop" || fault == "incomplete") {
      tools::EventFaults faults;
      faults.fault = fault == "drop" ? PartFault::Drop : PartFault::Incomplete;
      faults.port = kPort;
      publisher.send_event(2, second, truth.time_ns[1], faults);
      second_survives = false;
    } else if (fault == "end") {
      tools::EventFaults faults;
      faults.ports_sent = publisher.ports() / 2;
      publisher.send_event(2, second, truth.time_ns[1], faults);
      publisher.send_end_of_acquisition();
      second_survives = false;
    } else if (fault == "garbage") {
      publisher.send_garbage(kPort, "noise on the wire");
      publisher.send_event(2, second, truth.time_ns[1]);
    } else {
      bad_message_then_event(fault == "truncate" ? PartFault::Truncate
                             : fault == "eiger"  ? PartFault::OtherDetector
                                                 : PartFault::BitMode32);
    }
    publisher.send_event(3, truth.raw[2].data(), truth.time_ns[2]);

    std::vector<std::uint64_t> expected_frames{1};
    if (second_survives) expected_frames.push_back(2);
    expected_frames.push_back(3);
    for (std::uint64_t frame : expected_frames) {
      const auto event = next_event(*source);
      QVERIFY(event);
      QCOMPARE(event->frame_number, frame);
      QVERIFY2(same_bytes(*event, truth.raw[frame - 1]), "assembled bytes differ");
    }
    // Every message sent precedes frame 3's parts on its port, so all are counted by now.
    const StreamCounts counts = source->counts();
    QCOMPARE(counts.messages, publisher.messages_sent());
    QCOMPARE(counts.events, std::uint64_t(expected_frames.size()));
    QCOMPARE(counts.rejected_total(), std::uint64_t(rejected.isEmpty() ? 0 : 1));
    if (!rejected.isEmpty())
      QCOMPARE(count_of(counts.rejected, rejected.toUtf8().constData()), std::uint64_t(1));
    QCOMPARE(counts.dropped_total(), std::uint64_t(dropped.isEmpty() ? 0 : 1));
    if (!dropped.isEmpty())
      QCOMPARE(count_of(counts.dropped, dropped.toUtf8().constData()), std::uint64_t(1));
    const QString last = problem_of(counts);
    for (const QString& named : problem) QVERIFY2(last.contains(named), qPrintable(last));
    // The port at fault is named (at an end, whichever port's end cut the event is).
    if (fault != "end")
      QVERIFY2(last.contains(QString::fromStdString(faulty_port)), qPrintable(last));
    if (fault == "end") {
      QCOMPARE(counts.acquisitions, std::uint64_t(2));
      QCOMPARE(counts.acquisitions_ended, std::uint64_t(1));
    }
  }
  // --- the command-line publisher ------------------------------------------------------------

  void the_publisher_tool_streams_a_replayed_file() {
    const QString executable = qEnvironmentVariable("LIVEDRP_SLS_PUBLISHER_EXE");
    QVERIFY2(!executable.isEmpty(), "LIVEDRP_SLS_PUBLISHER_EXE is not set (run through CTest)");
    const Jungfrau4m& truth = jungfrau4m_events();
    QTemporaryDir directory;
    const std::string file = directory.filePath("run.h5").toStdString();
    {
      replay::Hdf5EventWriter writer(file, truth.detector, replay::WriteLayout{}, "{}");
      for (std::size_t i = 0; i < truth.raw.size(); ++i)
        writer.append(EventHeader{i, 3 * i, truth.time_ns[i]}, truth.raw[i].data());
      writer.close();
    }

    QProcess publisher;
    publisher.start(executable,
                    {"--source", QString::fromStdString("replay:" + file), "--bind",
                     "tcp://127.0.0.1:*", "--ports-per-module", "2", "--rate", "0", "--first-frame",
                     "50", "--epoch-timestamps", "--wait-for-subscribers", "600"});
    // It prints the source string to receive it with, then waits for the subscription.
    QString source_string;
    QByteArray printed;
    while (source_string.isEmpty() && publisher.waitForReadyRead(60000)) {
      printed += publisher.readAllStandardOutput();
      for (const QString& word : QString::fromUtf8(printed).split(QRegularExpression("\\s+")))
        if (word.startsWith("sls:tcp://") && printed.endsWith('\n')) source_string = word;
    }
    QVERIFY2(!source_string.isEmpty(), printed.constData());
    QCOMPARE(source_string.count("tcp://"), 16);

    StreamOptions options;
    auto source = open_stream_source(source_string.toStdString(), options);
    source->start();
    for (std::size_t i = 0; i < truth.raw.size(); ++i) {
      const auto event = next_event(*source);
      QVERIFY(event);
      QCOMPARE(event->frame_number, std::uint64_t(50 + i));
      QCOMPARE(event->timestamp_ns, truth.time_ns[i]);
      QVERIFY2(same_bytes(*event, truth.raw[i]), "assembled bytes differ from the file's");
    }
    QVERIFY(publisher.waitForFinished(60000));
    QCOMPARE(publisher.exitCode(), 0);
    QTRY_VERIFY_WITH_TIMEOUT(source->counts().acquisitions_ended == 1, 60000);
    const StreamCounts counts = source->counts();
    QCOMPARE(counts.rejected_total() + counts.dropped_total(), std::uint64_t(0));
    QCOMPARE(counts.messages, std::uint64_t(16 * (truth.raw.size() + 1)));
  }

  void the_publisher_tool_refuses_bad_input() {
    const QString executable = qEnvironmentVariable("LIVEDRP_SLS_PUBLISHER_EXE");
    QVERIFY2(!executable.isEmpty(), "LIVEDRP_SLS_PUBLISHER_EXE is not set (run through CTest)");
    const auto refusal = [&](const QStringList& arguments) {
      QProcess process;
      process.start(executable, arguments);
      if (!process.waitForFinished(120000)) return QString("timed out");
      return QString::number(process.exitCode()) + " " +
             QString::fromUtf8(process.readAllStandardError());
    };
    const QString epix = refusal({"--source", "sim:epix10ka2m", "--events", "1"});
    QVERIFY2(epix.startsWith("2 ") && epix.contains("Jungfrau raw words"), qPrintable(epix));
    const QString missing = refusal({"--source", "replay:/nonexistent/run.h5"});
    QVERIFY2(missing.startsWith("2 ") && missing.contains("/nonexistent/run.h5"),
             qPrintable(missing));
    const QString bind = refusal({"--bind", "udp://127.0.0.1:1", "--events", "1"});
    QVERIFY2(bind.startsWith("2 ") && bind.contains("udp://127.0.0.1:1"), qPrintable(bind));
  }
};

QTEST_GUILESS_MAIN(TestStreamSls)
#include "test_stream_sls.moc"
