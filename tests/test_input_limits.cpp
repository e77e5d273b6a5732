// Hostile input of every kind that reaches a JSON parser or announces a size (issue 35's defects):
// values nested 100,000 deep in a pipeline configuration, a control request, a PONI
// Detector_config, a detector description and a peak-finder parameter file are refused naming
// the nesting, not answered with a stack overflow; 1e309 is refused as a number out of range;
// error texts quote a bounded excerpt of a 10 MB value; a detector whose segments hold more
// pixels than 32-bit indices or whose placement is 1e300 is refused; an HDF5 dataset declaring
// 10^12 floats in a file of a few kB is refused before any allocation; settings that would hold
// more events than memory are refused naming the most that fit; a TCP port beyond 65535 is
// refused before ZeroMQ binds another.
#include <QtTest/QtTest>

#include <hdf5.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/builtin_detectors.hpp"
#include "core/detector.hpp"
#include "core/error.hpp"
#include "core/json_input.hpp"
#include "core/memory_limit.hpp"
#include "exec/engine.hpp"
#include "integrate/poni.hpp"
#include "io/array_file.hpp"
#include "peaks/peak_params.hpp"
#include "protocol/control.hpp"
#include "protocol/message.hpp"
#include "publish/bind_endpoint.hpp"
#include "publish/publisher.hpp"

#include "engine_error_text.hpp"

using namespace livedrp;
using nlohmann::json;

namespace {

std::string nested_arrays(int depth) {
  return std::string(std::size_t(depth), '[') + std::string(std::size_t(depth), ']');
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::filesystem::path write_file(const QTemporaryDir& dir, const std::string& name,
                                 const std::string& text) {
  const std::filesystem::path path = std::filesystem::path(dir.path().toStdString()) / name;
  std::ofstream(path) << text;
  return path;
}

json builtin_detector_json(const std::string& name) {
  for (const auto& builtin : builtin_detector_sources())
    if (builtin.name == name) return json::parse(builtin.json);
  throw std::runtime_error("no built-in detector " + name);
}

const std::string kDeep = nested_arrays(100000);
const std::string kDepthRefusal = "nested more than 64 deep";

}  // namespace

class TestInputLimits : public QObject {
  Q_OBJECT
 private slots:
  // The bound itself: 64 levels are read, 65 are not, and the text says which bound.
  void depthBound() {
    std::string error;
    QVERIFY(try_parse_json(nested_arrays(kMaxJsonDepth), error).has_value());
    QVERIFY(!try_parse_json(nested_arrays(kMaxJsonDepth + 1), error).has_value());
    QVERIFY2(has(error, kDepthRefusal), error.c_str());
    QVERIFY(!try_parse_json(kDeep, error).has_value());
    QVERIFY2(has(error, kDepthRefusal), error.c_str());
  }

  void deepPipelineConfiguration() {
    QTemporaryDir dir;
    const auto path = write_file(dir, "deep.json", "{\"source\": " + kDeep + "}");
    const std::string error = thrown_text([&] { load_engine_config_file(path.string()); });
    QVERIFY2(has(error, kDepthRefusal) && has(error, "deep.json"), error.c_str());
  }

  void hugeNumberInConfiguration() {
    QTemporaryDir dir;
    const auto path =
        write_file(dir, "overflow.json", "{\"source\": \"sim:epix10ka2m\", \"events\": 1e309}");
    const std::string error = thrown_text([&] { load_engine_config_file(path.string()); });
    QVERIFY2(has(error, "overflow.json") && has(error, "1e309"), error.c_str());
  }

  // The control socket's decoder: a request 10^5 deep (200 kB, under the request size bound)
  // is refused with a protocol error, as is a number out of range.
  void deepControlRequest() {
    const std::string request =
        R"({"schema": "livedrp", "schema_version": 1, "request": "apply", "config": )" + kDeep +
        "}";
    QVERIFY(request.size() < protocol::kControlMaxRequestBytes);
    const std::string error =
        thrown_text<protocol::ProtocolError>([&] { protocol::parse_control_request(request); });
    QVERIFY2(has(error, kDepthRefusal), error.c_str());
    const std::string overflow = thrown_text<protocol::ProtocolError>([&] {
      protocol::parse_control_request(
          R"({"schema": "livedrp", "schema_version": 1, "request": "stop", "x": -1e400})");
    });
    QVERIFY2(has(overflow, "not valid JSON"), overflow.c_str());
  }

  void deepPoniDetectorConfig() {
    const std::string text =
        "poni_version: 2\nDetector: Detector\nDetector_config: {\"pixel1\": " + kDeep +
        "}\nDistance: 0.08\nPoni1: 0.0019\nPoni2: 0.0035\nRot1: 0\nRot2: 0\nRot3: 0\n"
        "Wavelength: 7.293e-11\n";
    const std::string error = thrown_text([&] { integrate::parse_poni(text, "deep.poni"); });
    QVERIFY2(has(error, "Detector_config is refused") && has(error, kDepthRefusal), error.c_str());
  }

  // Any readable file named as a PONI file (a remote `apply` can name one) is refused without
  // its content in the message.
  void poniRefusalDoesNotQuoteTheFile() {
    QTemporaryDir dir;
    const auto path = write_file(dir, "not_a.poni", "secret-token-8d1f\nmore\n");
    const std::string error = thrown_text([&] { integrate::read_poni(path); });
    QVERIFY2(has(error, "line 1") && !has(error, "secret-token"), error.c_str());
  }

  void deepDetectorAndParameterFiles() {
    QTemporaryDir dir;
    const auto detector = write_file(dir, "deep_detector.json", "{\"name\": " + kDeep + "}");
    std::string error = thrown_text([&] { load_detector_description(detector); });
    QVERIFY2(has(error, kDepthRefusal) && has(error, "deep_detector.json"), error.c_str());
    const auto params = write_file(dir, "deep_params.json", "{\"minimum_snr\": " + kDeep + "}");
    error = thrown_text([&] { peaks::load_peak_params(params.string()); });
    QVERIFY2(has(error, kDepthRefusal) && has(error, "deep_params.json"), error.c_str());
  }

  // A 10 MB string in a field is quoted by its head only, and no InputError carries more than
  // its bound.
  void longValuesAreExcerpted() {
    const std::string long_text(10'000'000, 'x');
    const std::string excerpt = json_excerpt(json(long_text));
    QVERIFY2(excerpt.size() < 200, excerpt.substr(0, 300).c_str());
    QVERIFY(has(excerpt, "10000000 bytes"));
    const std::string error = thrown_text([&] {
      EngineConfig::from_json(json{{"source", long_text}}, "test");
    });
    QVERIFY2(!error.empty() && error.size() < 1000, error.substr(0, 300).c_str());
    QVERIFY(has(error, "'source'"));
    const std::string bounded = InputError(std::string(100'000, 'y')).what();
    QVERIFY(bounded.size() <= kMaxInputErrorChars + 100);
    QVERIFY(has(bounded, "100000 characters"));
  }

  void detectorPlacementAndSizeBounds() {
    json far = builtin_detector_json("epix10ka2m");
    far["placement"][0]["x_px"] = 1e300;
    std::string error = thrown_text([&] { parse_detector_description(far, "far"); });
    QVERIFY2(has(error, "x_px") && has(error, "1e+300"), error.c_str());

    json huge = builtin_detector_json("generic_f32");
    huge["segment_shape"] = {65536, 65536};
    huge["asic_shape"] = {65536, 65536};
    error = thrown_text([&] { parse_detector_description(huge, "huge"); });
    QVERIFY2(has(error, "65536 x 65536") && has(error, "268435456"), error.c_str());

    json spun = builtin_detector_json("epix10ka2m");
    spun["placement"][0]["rotation_deg"] = 90LL * 100000000000LL;
    error = thrown_text([&] { parse_detector_description(spun, "spun"); });
    QVERIFY2(has(error, "rotation_deg"), error.c_str());
  }

  // A chunked dataset of 10^12 float32 with no chunk written: a file of a few kB. Reading it as a
  // mask or map is refused with the memory bound, before anything is allocated.
  void hdf5DatasetDeclaringATerabyte() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("huge.h5").toStdString();
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t dims[2] = {1'000'000, 1'000'000};
    const hsize_t chunk[2] = {64, 64};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t properties = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(properties, 2, chunk);
    const hid_t set =
        H5Dcreate2(file, "/mask", H5T_IEEE_F32LE, space, H5P_DEFAULT, properties, H5P_DEFAULT);
    QVERIFY(set >= 0);
    H5Dclose(set);
    H5Pclose(properties);
    H5Sclose(space);
    H5Fclose(file);
    QVERIFY(std::filesystem::file_size(path) < 100'000);
    const std::string error =
        thrown_text([&] { io::read_array(io::parse_array_location(path + ":/mask")); });
    QVERIFY2(has(error, "4000000000000 bytes") && has(error, "half of this machine's memory"),
             error.c_str());
  }

  // ZeroMQ would bind port 99999 modulo 65536 without a word: refused before it sees it.
  void bindEndpoints() {
    QVERIFY(has(bind_endpoint_problem("tcp://127.0.0.1:99999", "publish"), "1..65535"));
    std::string error = thrown_text([] { Publisher publisher("tcp://127.0.0.1:99999"); });
    QVERIFY2(has(error, "cannot bind publisher to 'tcp://127.0.0.1:99999'") && has(error, "99999"),
             error.c_str());
    error = thrown_text([] { Publisher publisher("tcp://127.0.0.1:0"); });
    QVERIFY2(has(error, "port 0"), error.c_str());
    QVERIFY(
        has(bind_endpoint_problem("tcp://127.0.0.1:http", "control"), "a number from 1 to 65535"));
    QVERIFY(bind_endpoint_problem("tcp://127.0.0.1:*", "publish").empty());
    QVERIFY(bind_endpoint_problem("inproc://engine", "publish").empty());
    QVERIFY(is_loopback_endpoint("tcp://127.0.0.1:5555"));
    QVERIFY(is_loopback_endpoint("tcp://localhost:5555"));
    QVERIFY(!is_loopback_endpoint("tcp://0.0.0.0:5555"));
    QVERIFY(!is_loopback_endpoint("tcp://*:5555"));
  }

  void allocationCheck() {
    const std::uint64_t limit = input_allocation_limit();
    QVERIFY(limit > 0);
    check_input_allocation(limit, "exactly the limit");
    const std::string error =
        thrown_text([&] { check_input_allocation(limit + 1, "one byte more"); });
    QVERIFY2(has(error, "one byte more needs " + std::to_string(limit + 1)), error.c_str());
  }

  // 4096 pooled Jungfrau 4M events are 34 GB: refused naming the field and the most that fit,
  // on any machine with less than 68 GB (this project's machines have 24 GB).
  void simulatorPoolBeyondMemory() {
    const DetectorDescription jungfrau = find_detector("jungfrau4m");
    const std::uint64_t fit = input_allocation_limit() / jungfrau.raw_event_bytes();
    if (fit >= 4096) QSKIP("this machine holds 4096 Jungfrau 4M events");
    EngineConfig config;
    config.source = "sim:jungfrau4m";
    config.backend = "cpu";
    config.publish = "";
    config.simulator_pool = 4096;
    const std::string error = thrown_text([&] { Engine engine(config); });
    QVERIFY2(has(error, "simulator.pool_events 4096") &&
                 has(error, "at most " + std::to_string(fit) + " fit"),
             error.c_str());
  }
};

QTEST_APPLESS_MAIN(TestInputLimits)
#include "test_input_limits.moc"
