// The control socket's "replay_candidates" request (docs/protocol.md, "Control socket"): files
// written here with the HDF5 C API (a NeXus file with two sets of events, an Eiger-style master
// file whose data files are external links, a file with none) are answered with the datasets that
// could be replayed, each with the shape, element type and event count that were written, the
// default (what a replay naming no dataset reads) marked; every bad request (no path, a path that
// is no string, no such file, a directory, not HDF5, a missing data file, an unknown field) is
// refused naming what is wrong, and the server goes on answering.
#include <QtTest>

#include <hdf5.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/engine.hpp"
#include "exec/engine_controller.hpp"
#include "protocol/control.hpp"
#include "protocol/control_client.hpp"
#include "publish/control_server.hpp"
#include "replay/dataset_discovery.hpp"

using namespace livedrp;
using nlohmann::json;
using protocol::ControlClient;
namespace fs = std::filesystem;

namespace {

// A dataset of `file_type` and `dims` at `path` (groups created on the way), left unwritten: the
// request reads shapes and types, never the data.
void add_dataset(hid_t file, const char* path, hid_t file_type, std::vector<hsize_t> dims) {
  const hid_t space = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
  const hid_t links = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(links, 1);
  const hid_t set = H5Dcreate2(file, path, file_type, space, links, H5P_DEFAULT, H5P_DEFAULT);
  QVERIFY(set >= 0);
  H5Dclose(set);
  H5Pclose(links);
  H5Sclose(space);
}

void set_string_attribute(hid_t file, const char* object_path, const char* name,
                          const std::string& value) {
  const hid_t object = H5Oopen(file, object_path, H5P_DEFAULT);
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, value.size());
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attribute = H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attribute, type, value.data());
  H5Aclose(attribute);
  H5Sclose(space);
  H5Tclose(type);
  H5Oclose(object);
}

// /entry/data/data: 7 events of 4x6 uint16 (livedrp's place, the default); /scan_1/frames, an
// NXdata group whose signal "images" is 3 events of 8x2 float32; a 2-D mask that is not events.
void write_nexus_with_two(const fs::path& path) {
  const hid_t file = H5Fcreate(path.string().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  add_dataset(file, "/entry/data/data", H5T_STD_U16LE, {7, 4, 6});
  add_dataset(file, "/scan_1/frames/images", H5T_IEEE_F32LE, {3, 8, 2});
  set_string_attribute(file, "/scan_1/frames", "NX_class", "NXdata");
  set_string_attribute(file, "/scan_1/frames", "signal", "images");
  add_dataset(file, "/entry/instrument/mask", H5T_STD_U8LE, {4, 6});
  H5Fclose(file);
}

// An Eiger-style data file: `events` frames of 3x5 int32 at /entry/data/data.
void write_data_file(const fs::path& path, hsize_t events) {
  const hid_t file = H5Fcreate(path.string().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  add_dataset(file, "/entry/data/data", H5T_STD_I32LE, {events, 3, 5});
  H5Fclose(file);
}

// A master file: /entry/data/data_00000K links (external links) to data_files[K-1].
void write_master_file(const fs::path& path, const std::vector<std::string>& data_files) {
  const hid_t file = H5Fcreate(path.string().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t links = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(links, 1);
  for (std::size_t k = 0; k < data_files.size(); ++k) {
    char name[32];
    std::snprintf(name, sizeof name, "/entry/data/data_%06zu", k + 1);
    H5Lcreate_external(data_files[k].c_str(), "/entry/data/data", file, name, links, H5P_DEFAULT);
  }
  H5Pclose(links);
  H5Fclose(file);
}

std::vector<std::uint64_t> shape_of(const json& candidate) {
  return candidate.at("shape").get<std::vector<std::uint64_t>>();
}

QString refusal(const json& reply) {
  if (reply.at("ok").get<bool>()) return "unexpectedly ok: " + QString::fromStdString(reply.dump());
  return QString::fromStdString(reply.at("error").get<std::string>());
}

json candidates_request(const json& fields) {
  return protocol::make_control_request("replay_candidates", fields);
}

// A controller with a small simulator source: the request does not depend on the run's source.
EngineConfig idle_config() {
  EngineConfig c;
  c.source = "sim:generic_f32";
  c.backend = "cpu";
  c.publish = "";
  c.simulator_pool = 1;
  c.cpu_threads = 1;
  return c;
}

}  // namespace

class TestControlReplayCandidates : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::unique_ptr<EngineController> controller_;
  std::unique_ptr<ControlServer> server_;
  std::unique_ptr<ControlClient> client_;

  std::string file(const char* name) const {
    return (fs::path(dir_.path().toStdString()) / name).string();
  }
  json ask(const std::string& path) {
    return client_->request(candidates_request({{"path", path}}));
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    controller_ = std::make_unique<EngineController>(idle_config());
    server_ = std::make_unique<ControlServer>(*controller_, "tcp://127.0.0.1:*");
    client_ = std::make_unique<ControlClient>(server_->endpoint());
  }

  void a_nexus_file_answers_both_candidates_default_first() {
    const std::string path = file("scan.nxs");
    write_nexus_with_two(path);
    const json reply = ask(path);
    QVERIFY2(reply.at("ok").get<bool>(), reply.dump().c_str());
    const json& result = reply.at("result");
    QCOMPARE(result.at("path").get<std::string>(), path);
    QCOMPARE(result.at("default").get<int>(), 0);
    const json& candidates = result.at("candidates");
    QCOMPARE(candidates.size(), std::size_t(2));

    const json& own = candidates[0];
    QCOMPARE(own.at("dataset").get<std::string>(), std::string("/entry/data/data"));
    QCOMPARE(own.at("source").get<std::string>(), "replay:" + path + ":/entry/data/data");
    QCOMPARE(shape_of(own), (std::vector<std::uint64_t>{7, 4, 6}));
    QCOMPARE(own.at("dtype").get<std::string>(), std::string("uint16"));
    QCOMPARE(own.at("events").get<std::uint64_t>(), std::uint64_t(7));
    QCOMPARE(own.at("default").get<bool>(), true);
    QCOMPARE(own.at("parts"), json::array({"/entry/data/data"}));

    const json& nexus = candidates[1];
    QCOMPARE(nexus.at("dataset").get<std::string>(), std::string("/scan_1/frames/images"));
    QCOMPARE(nexus.at("source").get<std::string>(), "replay:" + path + ":/scan_1/frames/images");
    QCOMPARE(shape_of(nexus), (std::vector<std::uint64_t>{3, 8, 2}));
    QCOMPARE(nexus.at("dtype").get<std::string>(), std::string("float32"));
    QCOMPARE(nexus.at("events").get<std::uint64_t>(), std::uint64_t(3));
    QCOMPARE(nexus.at("default").get<bool>(), false);

    // The default is the dataset a replay naming none reads.
    QCOMPARE(replay::event_dataset_parts(path), std::vector<std::string>{"/entry/data/data"});
  }

  void a_master_file_answers_its_parts_together_and_each_alone() {
    write_data_file(file("eiger_data_000001.h5"), 2);
    write_data_file(file("eiger_data_000002.h5"), 3);
    const std::string master = file("eiger_master.h5");
    write_master_file(master, {"eiger_data_000001.h5", "eiger_data_000002.h5"});
    const json reply = ask(master);
    QVERIFY2(reply.at("ok").get<bool>(), reply.dump().c_str());
    const json& candidates = reply.at("result").at("candidates");
    QCOMPARE(candidates.size(), std::size_t(3));

    const json& together = candidates[0];
    QCOMPARE(together.at("dataset").get<std::string>(), std::string());
    QCOMPARE(together.at("source").get<std::string>(), "replay:" + master);
    QCOMPARE(together.at("parts"),
             json::array({"/entry/data/data_000001", "/entry/data/data_000002"}));
    QCOMPARE(shape_of(together), (std::vector<std::uint64_t>{5, 3, 5}));  // 2 + 3 events
    QCOMPARE(together.at("events").get<std::uint64_t>(), std::uint64_t(5));
    QCOMPARE(together.at("dtype").get<std::string>(), std::string("int32"));
    QCOMPARE(together.at("default").get<bool>(), true);

    const std::vector<std::uint64_t> part_events = {2, 3};
    for (std::size_t k = 0; k < 2; ++k) {
      const json& part = candidates[k + 1];
      const std::string name = "/entry/data/data_00000" + std::to_string(k + 1);
      QCOMPARE(part.at("dataset").get<std::string>(), name);
      QCOMPARE(part.at("source").get<std::string>(), "replay:" + master + ":" + name);
      QCOMPARE(shape_of(part), (std::vector<std::uint64_t>{part_events[k], 3, 5}));
      QCOMPARE(part.at("events").get<std::uint64_t>(), part_events[k]);
      QCOMPARE(part.at("default").get<bool>(), false);
    }
  }

  void a_master_file_missing_a_data_file_is_refused_naming_it() {
    write_data_file(file("lost_data_000001.h5"), 2);
    const std::string master = file("lost_master.h5");
    write_master_file(master, {"lost_data_000001.h5", "lost_data_000002.h5"});
    const QString error = refusal(ask(master));
    QVERIFY2(error.contains("request 'replay_candidates' refused"), qPrintable(error));
    QVERIFY2(error.contains("/entry/data/data_000002"), qPrintable(error));
    QVERIFY2(error.contains("lost_data_000002.h5"), qPrintable(error));
  }

  void a_file_without_events_says_why() {
    const std::string path = file("masks.h5");
    const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    add_dataset(f, "/entry/data/data", H5T_IEEE_F32LE, {4, 5});  // one image, not events
    H5Fclose(f);
    const QString error = refusal(ask(path));
    QVERIFY2(error.contains(QString::fromStdString(path)), qPrintable(error));
    QVERIFY2(error.contains("no dataset of events found"), qPrintable(error));
    QVERIFY2(error.contains("/entry/data/data_NNNNNN"), qPrintable(error));
  }

  void bad_requests_are_refused_naming_what_is_wrong() {
    QVERIFY2(refusal(client_->request(candidates_request(json::object())))
                 .contains("lacks field 'path'"),
             "no path");
    QVERIFY(refusal(client_->request(candidates_request({{"path", 42}})))
                .contains("field 'path' must be a non-empty string (a file), got 42"));
    QVERIFY(refusal(client_->request(candidates_request({{"path", ""}})))
                .contains("field 'path' must be a non-empty string"));
    QVERIFY(refusal(ask(file("missing.h5"))).contains(" does not exist (on the engine's machine)"));
    QVERIFY(refusal(ask(dir_.path().toStdString())).contains("is a directory"));
    const std::string text = file("notes.txt");
    std::ofstream(text) << "not HDF5\n";
    const QString not_hdf5 = refusal(ask(text));
    QVERIFY2(not_hdf5.contains("is not an HDF5 file") && not_hdf5.contains("notes.txt"),
             qPrintable(not_hdf5));
    QVERIFY(refusal(client_->request(candidates_request({{"path", file("scan.nxs")}, {"x", 1}})))
                .contains("request 'replay_candidates': unknown field 'x'"));
    // Still answering, and the unknown-request list names the new request.
    QVERIFY(refusal(client_->request(protocol::make_control_request("nope")))
                .contains("replay_candidates"));
    QCOMPARE(client_->status().at("state").get<std::string>(), std::string("idle"));
  }

  void cleanupTestCase() {
    client_.reset();
    server_.reset();
    controller_.reset();
  }
};

QTEST_GUILESS_MAIN(TestControlReplayCandidates)
#include "test_control_replay_candidates.moc"
