// The `image` payload's `assembly` block (docs/protocol.md): the engine's placement of the
// detector's pixels travels with the image value for value, in the documented form and in a few
// hundred bytes; an image without it (an older engine) decodes with none; every malformed block
// is refused with its field named, and the encoder refuses what the decoder would.
#include <QtTest/QtTest>

#include <cctype>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/detector.hpp"
#include "core/image_assembly.hpp"
#include "protocol/message.hpp"
#include "protocol/peaks_topic.hpp"

using namespace livedrp;
using namespace livedrp::protocol;
using nlohmann::json;

namespace {

// A 5 x 4 image (width x height) of two segments of 2 x 3 pixels: segment 0 unrotated at the
// origin (columns 0-2, rows 0-1), segment 1 turned 90 degrees about its corner at x 5, y 1 (its
// fast scan runs down columns 4 and 3, rows 1-3).
ImageFrame sample_image() {
  ImageFrame image;
  image.sequence = 17;
  image.pulse_id = 1'700;
  image.height = 4;
  image.width = 5;
  image.pixels.assign(20, 1.5f);
  image.unit = "keV";
  image.segments = 2;
  AssemblyLayout layout;
  layout.grid = {2, 3, 2, 3, 1};
  layout.placement = {{0, 0, 0}, {5, 1, 90}};
  layout.origin_x = 0;
  layout.origin_y = 0;
  layout.height = 4;
  layout.width = 5;
  image.assembly = layout;
  return image;
}

Message through_the_wire(const Message& message) {
  const std::vector<std::string> parts = encode(message);
  return decode(std::vector<std::string_view>(parts.begin(), parts.end()));
}

struct BadCase {
  const char* name;
  std::function<void(json& assembly)> spoil;
  const char* expected;  // part of the error text
};

}  // namespace

class ProtocolImageAssemblyTest : public QObject {
  Q_OBJECT

 private slots:
  void theAssemblyTravelsWithTheImageValueForValue() {
    ImageFrame original = sample_image();
    // Fractional positions keep every digit.
    original.assembly->placement[0] = {0.25, 0.125, 0};
    const ImageFrame image = image_from_message(through_the_wire(make_image_message(original)));
    QVERIFY(image.assembly.has_value());
    QVERIFY(*image.assembly == *original.assembly);
    QCOMPARE(image.assembly->placement[0].x_px, 0.25);
    QCOMPARE(image.assembly->placement[1].rotation_deg, 90);
    QCOMPARE(image.assembly->height, std::size_t(4));
    QCOMPARE(image.assembly->width, std::size_t(5));
  }

  void theBlockIsWhatTheDocumentSays() {
    const Message message = make_image_message(sample_image());
    QCOMPARE(message.payload.at("assembly").dump(),
             std::string(R"({"asic_shape":[2,3],"large_pixel_factor":1,)"
                         R"("origin":{"x_px":0.0,"y_px":0.0},)"
                         R"("placement":[{"rotation_deg":0,"x_px":0.0,"y_px":0.0},)"
                         R"({"rotation_deg":90,"x_px":5.0,"y_px":1.0}],"segment_shape":[2,3]})"));
    QCOMPARE(message.frames.size(), std::size_t(2));  // the block adds no frame
  }

  void theEngineLayoutsTakeAFewHundredBytes() {
    // Sent beside an 8.9 MB image twice a second: it must stay small.
    // docs/protocol.md gives these sizes.
    const std::vector<std::pair<const char*, std::size_t>> detectors = {{"epix10ka2m", 832},
                                                                        {"jungfrau4m", 477}};
    for (const auto& [name, documented_bytes] : detectors) {
      const DetectorDescription detector = find_detector(name);
      const ImageAssembly assembly(detector);
      ImageFrame image = sample_image();
      image.height = assembly.height();
      image.width = assembly.width();
      image.pixels.assign(image.height * image.width, 0.0f);
      image.segments = std::uint64_t(detector.segments);
      image.assembly = assembly.layout();
      const Message message = make_image_message(image);
      const std::size_t bytes = message.payload.at("assembly").dump().size();
      qInfo("%s: assembly block of %zu bytes", name, bytes);
      QCOMPARE(bytes, documented_bytes);
      const ImageFrame decoded = image_from_message(through_the_wire(message));
      QVERIFY(decoded.assembly && *decoded.assembly == assembly.layout());
    }
  }

  void anImageWithoutTheBlockDecodesWithoutAnAssembly() {
    // An engine older than the block: the image shows, its pixels' segments are unknown.
    ImageFrame original = sample_image();
    original.assembly.reset();
    const Message message = make_image_message(original);
    QVERIFY(!message.payload.contains("assembly"));
    const ImageFrame image = image_from_message(through_the_wire(message));
    QVERIFY(!image.assembly.has_value());
    QCOMPARE(image.pixels.size(), std::size_t(20));
  }

  void malformedBlocksAreRefusedWithTheFieldNamed() {
    const std::vector<BadCase> cases = {
        {"not an object", [](json& a) { a = 5; },
         "image payload: field 'assembly' must be an object, got number 5"},
        {"segment_shape missing", [](json& a) { a.erase("segment_shape"); },
         "field 'assembly.segment_shape' is missing"},
        {"segment_shape of one number", [](json& a) { a["segment_shape"] = {2}; },
         "field 'assembly.segment_shape' must be an array of two integers, got array"},
        {"segment_shape negative", [](json& a) { a["segment_shape"][0] = -2; },
         "field 'assembly.segment_shape[0]' must not be negative, got -2"},
        {"segment_shape fractional", [](json& a) { a["segment_shape"][1] = 2.5; },
         "field 'assembly.segment_shape[1]' must be a non-negative integer, got number 2.5"},
        {"segment_shape beyond the limit", [](json& a) { a["segment_shape"][0] = 16'385; },
         "field 'assembly.segment_shape[0]' must be at most 16384, got 16385"},
        {"segment_shape empty", [](json& a) { a["segment_shape"][0] = 0; },
         "image message: assembly segment_shape must be 1..16384 raw pixels a side, got [0, 3]"},
        {"segments wider than the image", [](json& a) { a["segment_shape"][1] = 6; },
         "image message: assembly places segment 0 over columns 0.0 to 6.0 and rows 0.0 to 2.0, "
         "outside the image's 5 x 4 pixels (width x height)"},
        {"asic_shape not an array", [](json& a) { a["asic_shape"] = "x"; },
         "field 'assembly.asic_shape' must be an array of two integers, got string 'x'"},
        {"asic_shape larger than the segment",
         [](json& a) {
           a["asic_shape"] = {3, 3};
         },
         "assembly asic_shape [3, 3] does not fit segment_shape [2, 3]"},
        {"large_pixel_factor missing", [](json& a) { a.erase("large_pixel_factor"); },
         "field 'assembly.large_pixel_factor' is missing"},
        {"large_pixel_factor zero", [](json& a) { a["large_pixel_factor"] = 0; },
         "field 'assembly.large_pixel_factor' must be in 1..16, got 0"},
        {"large_pixel_factor beyond the limit", [](json& a) { a["large_pixel_factor"] = 17; },
         "field 'assembly.large_pixel_factor' must be in 1..16, got 17"},
        {"origin missing", [](json& a) { a.erase("origin"); },
         "field 'assembly.origin' is missing"},
        {"origin an array",
         [](json& a) {
           a["origin"] = {0, 0};
         },
         "field 'assembly.origin' must be an object {\"x_px\": X, \"y_px\": Y}, got array"},
        {"origin x not a number", [](json& a) { a["origin"]["x_px"] = "left"; },
         "field 'assembly.origin.x_px' must be a finite number, got string 'left'"},
        {"origin y null (NaN on the wire)", [](json& a) { a["origin"]["y_px"] = nullptr; },
         "field 'assembly.origin.y_px' must be a finite number, got null"},
        {"origin far away", [](json& a) { a["origin"]["x_px"] = 1e7; },
         "assembly origin (10000000.0, 0.0) must be finite and within +-2097152.0 pixels"},
        {"origin off by one", [](json& a) { a["origin"]["x_px"] = 1; },
         "assembly places segment 0 over columns -1.0 to 2.0 and rows 0.0 to 2.0, outside the "
         "image's 5 x 4 pixels"},
        {"placement missing", [](json& a) { a.erase("placement"); },
         "field 'assembly.placement' is missing"},
        {"placement an object", [](json& a) { a["placement"] = json::object(); },
         "field 'assembly.placement' must be an array of one object per segment, got object"},
        {"placement of one segment", [](json& a) { a["placement"].erase(1); },
         "field 'assembly.placement' has 1 entries for 2 segments"},
        {"placement of three segments",
         [](json& a) { a["placement"].push_back(a["placement"][0]); },
         "field 'assembly.placement' has 3 entries for 2 segments"},
        {"placement entry a number", [](json& a) { a["placement"][1] = 7; },
         "field 'assembly.placement[1]' must be an object {\"x_px\", \"y_px\", \"rotation_deg\"}, "
         "got number 7"},
        {"placement x missing", [](json& a) { a["placement"][1].erase("x_px"); },
         "field 'assembly.placement[1].x_px' is missing"},
        {"placement y a boolean", [](json& a) { a["placement"][0]["y_px"] = true; },
         "field 'assembly.placement[0].y_px' must be a finite number, got boolean true"},
        {"rotation of 45 degrees", [](json& a) { a["placement"][1]["rotation_deg"] = 45; },
         "field 'assembly.placement[1].rotation_deg' must be 0, 90, 180 or 270, got number 45"},
        {"rotation of -90 degrees", [](json& a) { a["placement"][1]["rotation_deg"] = -90; },
         "field 'assembly.placement[1].rotation_deg' must be 0, 90, 180 or 270, got number -90"},
        {"rotation not an integer", [](json& a) { a["placement"][1]["rotation_deg"] = 90.5; },
         "field 'assembly.placement[1].rotation_deg' must be 0, 90, 180 or 270, got number 90.5"},
        {"rotation missing", [](json& a) { a["placement"][0].erase("rotation_deg"); },
         "field 'assembly.placement[0].rotation_deg' is missing"},
        {"placement far away", [](json& a) { a["placement"][1]["x_px"] = 3e6; },
         "assembly places segment 1 at (3000000.0, 1.0): offsets must be finite and within "
         "+-2097152.0 pixels"},
        {"segment off the image", [](json& a) { a["placement"][1]["x_px"] = 6; },
         "assembly places segment 1 over columns 4.0 to 6.0 and rows 1.0 to 4.0, outside the "
         "image's 5 x 4 pixels"},
    };
    const Message good = make_image_message(sample_image());
    for (const BadCase& bad : cases) {
      Message message = good;
      bad.spoil(message.payload["assembly"]);
      try {
        image_from_message(message);
        QFAIL(qPrintable(QStringLiteral("accepted: %1").arg(bad.name)));
      } catch (const ProtocolError& error) {
        QVERIFY2(std::string(error.what()).find(bad.expected) != std::string::npos,
                 qPrintable(QStringLiteral("%1: got \"%2\"").arg(bad.name, error.what())));
      }
    }
  }

  void theEncoderRefusesWhatTheDecoderWould() {
    const auto refusal = [](const ImageFrame& image) -> std::string {
      try {
        make_image_message(image);
      } catch (const ProtocolError& error) {
        return error.what();
      }
      return "accepted";
    };
    ImageFrame one_placement = sample_image();
    one_placement.assembly->placement.pop_back();
    QCOMPARE(refusal(one_placement),
             std::string("image message: assembly places 1 segments of the image's 2"));
    ImageFrame other_size = sample_image();
    other_size.assembly->height = 5;
    QCOMPARE(refusal(other_size),
             std::string("image message: assembly describes an image of 5 x 5 pixels, the image "
                         "has 5 x 4 (width x height)"));
    ImageFrame quarter_turn_missing = sample_image();
    quarter_turn_missing.assembly->placement[1].rotation_deg = 45;
    QCOMPARE(refusal(quarter_turn_missing),
             std::string("image message: assembly rotates segment 1 by 45 degrees, not 0, 90, "
                         "180 or 270"));
    ImageFrame not_finite = sample_image();
    not_finite.assembly->origin_y = std::numeric_limits<double>::quiet_NaN();
    QVERIFY(refusal(not_finite).find("assembly origin (0.0, null) must be finite") !=
            std::string::npos);
  }

  void randomBlocksNeverCrashTheDecoder() {
    // Any field replaced by any kind of value: decoded, or refused with a ProtocolError.
    const std::vector<json> values = {nullptr,
                                      true,
                                      -1,
                                      0,
                                      1,
                                      2,
                                      90,
                                      16'384,
                                      1e300,
                                      -1e300,
                                      0.5,
                                      "x",
                                      json::array(),
                                      json::array({1, 2}),
                                      json::array({json::object()}),
                                      json::object()};
    const std::vector<std::vector<std::string>> paths = {{"segment_shape"},
                                                         {"segment_shape", "0"},
                                                         {"asic_shape"},
                                                         {"asic_shape", "1"},
                                                         {"large_pixel_factor"},
                                                         {"origin"},
                                                         {"origin", "x_px"},
                                                         {"placement"},
                                                         {"placement", "0"},
                                                         {"placement", "1", "x_px"},
                                                         {"placement", "1", "rotation_deg"}};
    const Message good = make_image_message(sample_image());
    std::mt19937 random(34);
    std::size_t refused = 0, decoded = 0;
    for (int trial = 0; trial < 2000; ++trial) {
      Message message = good;
      // One to three fields spoilt at once.
      for (int spoil = 0, spoils = 1 + int(random() % 3); spoil < spoils; ++spoil) {
        json* target = &message.payload["assembly"];
        for (const std::string& key : paths[random() % paths.size()]) {
          if (target->is_array() && std::isdigit(key[0])) {
            const std::size_t index = std::stoul(key);
            if (index >= target->size()) break;
            target = &(*target)[index];
          } else if (target->is_object()) {
            target = &(*target)[key];
          } else {
            break;
          }
        }
        *target = values[random() % values.size()];
      }
      try {
        image_from_message(message);
        ++decoded;
      } catch (const ProtocolError&) {
        ++refused;
      }
    }
    QCOMPARE(refused + decoded, std::size_t(2000));
    QVERIFY(refused > 0);
  }
};

QTEST_APPLESS_MAIN(ProtocolImageAssemblyTest)
#include "test_protocol_image_assembly.moc"
