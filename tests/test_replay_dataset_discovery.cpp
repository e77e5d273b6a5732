// Replay finds the events in a file when no dataset is named (replay/dataset_discovery.hpp):
// livedrp's /entry/data/data, a NeXus NXdata group's signal (and the old signal = 1 attribute),
// CXI's /entry_1/data_1/data; in that order of preference; 2-D datasets (masks, pedestals) are
// not events; a file with nothing to replay is refused with a message that names the file and the
// places looked at. The events found are read back bit-identical to what was written.
#include <QtTest>

#include <hdf5.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "replay/dataset_discovery.hpp"
#include "replay/hdf5_event_file.hpp"
#include "replay/replay_source.hpp"
#include "simulated_events.hpp"

using namespace livedrp;
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kEvents = 2;

const test::SimulatedEvents& events() {
  static const test::SimulatedEvents cached(kEvents);
  return cached;
}

void write_events(const fs::path& path, const std::string& dataset) {
  replay::WriteLayout layout;
  layout.dataset = dataset;
  replay::Hdf5EventWriter writer(path, events().detector, layout, "{}");
  for (std::uint64_t i = 0; i < kEvents; ++i)
    writer.append(events().headers[i], events().raw[i].data());
  writer.close();
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

void set_integer_attribute(hid_t file, const char* object_path, const char* name, int value) {
  const hid_t object = H5Oopen(file, object_path, H5P_DEFAULT);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attribute = H5Acreate2(object, name, H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attribute, H5T_NATIVE_INT, &value);
  H5Aclose(attribute);
  H5Sclose(space);
  H5Oclose(object);
}

// A 2-D float dataset (a mask, a pedestal) at `path`, its groups created.
void add_2d_dataset(hid_t file, const char* path) {
  const hsize_t dims[2] = {4, 5};
  const hid_t space = H5Screate_simple(2, dims, nullptr);
  const hid_t links = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(links, 1);
  const hid_t set = H5Dcreate2(file, path, H5T_IEEE_F32LE, space, links, H5P_DEFAULT, H5P_DEFAULT);
  H5Dclose(set);
  H5Pclose(links);
  H5Sclose(space);
}

// An unwritten dataset of `file_type` and `dims` at `path`, its groups created.
void add_dataset(hid_t file, const char* path, hid_t file_type, std::vector<hsize_t> dims) {
  const hid_t space = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
  const hid_t links = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(links, 1);
  const hid_t set = H5Dcreate2(file, path, file_type, space, links, H5P_DEFAULT, H5P_DEFAULT);
  H5Dclose(set);
  H5Pclose(links);
  H5Sclose(space);
}

template <typename Edit>
void edit_file(const fs::path& path, Edit edit) {
  const hid_t file = H5Fopen(path.string().c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  QVERIFY(file >= 0);
  edit(file);
  H5Fclose(file);
}

// The events of `path` read through the dataset replay chose equal what was written.
void verify_events_read_back(const fs::path& path, const std::string& dataset) {
  replay::Hdf5EventReader reader(path, dataset, events().detector);
  QCOMPARE(reader.events(), kEvents);
  std::vector<std::byte> raw(events().detector.raw_event_bytes());
  for (std::uint64_t i = 0; i < kEvents; ++i) {
    std::uint64_t pulse_id = 0;
    std::int64_t timestamp = 0;
    reader.read(i, raw.data(), pulse_id, timestamp);
    QVERIFY(raw == events().raw[i]);
    QCOMPARE(pulse_id, events().headers[i].pulse_id);
  }
}

std::string discovery_error(const fs::path& path) {
  try {
    replay::find_event_dataset(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

class TestReplayDatasetDiscovery : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  fs::path file(const char* name) const { return fs::path(dir_.path().toStdString()) / name; }

 private slots:
  void cxi_data_is_found_and_replayed() {
    const fs::path path = file("run.cxi");
    write_events(path, "/entry_1/data_1/data");
    edit_file(path, [](hid_t f) { add_2d_dataset(f, "/entry_1/instrument_1/detector_1/mask"); });
    QCOMPARE(replay::event_dataset_candidates(path),
             std::vector<std::string>{"/entry_1/data_1/data"});
    replay::ReplayOptions options;
    options.files = {path};
    options.readers = 1;
    options.prefetch_events = 2;
    const replay::ReplaySource source(options);  // no dataset named
    QCOMPARE(source.dataset(), std::string("/entry_1/data_1/data"));
    QCOMPARE(source.detector().name, events().detector.name);
    verify_events_read_back(path, source.dataset());
  }

  void a_nexus_nxdata_signal_is_found() {
    const fs::path path = file("scan.nxs");
    write_events(path, "/scan_1/frames/images");
    edit_file(path, [](hid_t f) {
      set_string_attribute(f, "/scan_1/frames", "NX_class", "NXdata");
      set_string_attribute(f, "/scan_1/frames", "signal", "images");
      // An NXdata whose signal is a 2-D map is not a run of events.
      add_2d_dataset(f, "/scan_1/map/values");
      set_string_attribute(f, "/scan_1/map", "NX_class", "NXdata");
      set_string_attribute(f, "/scan_1/map", "signal", "values");
    });
    QCOMPARE(replay::find_event_dataset(path), std::string("/scan_1/frames/images"));
    verify_events_read_back(path, "/scan_1/frames/images");
  }

  void an_old_style_signal_attribute_is_found() {
    const fs::path path = file("old.nxs");
    write_events(path, "/measurement/counts");
    edit_file(path, [](hid_t f) { set_integer_attribute(f, "/measurement/counts", "signal", 1); });
    QCOMPARE(replay::find_event_dataset(path), std::string("/measurement/counts"));
  }

  void livedrp_recordings_come_first() {
    const fs::path path = file("both.h5");
    write_events(path, "/entry_1/data_1/data");
    {
      // And livedrp's own dataset in the same file, written second.
      const fs::path other = file("own.h5");
      write_events(other, replay::kDefaultDataset);
      edit_file(path, [&](hid_t f) {
        const hid_t source = H5Fopen(other.string().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
        QVERIFY(H5Ocopy(source, "/entry", f, "/entry", H5P_DEFAULT, H5P_DEFAULT) >= 0);
        H5Fclose(source);
      });
    }
    QCOMPARE(replay::event_dataset_candidates(path),
             (std::vector<std::string>{"/entry/data/data", "/entry_1/data_1/data"}));
    QCOMPARE(replay::find_event_dataset(path), std::string("/entry/data/data"));
  }

  // Each candidate with the shape and numpy element type it was created with, the default first.
  void candidates_are_described_with_shape_dtype_and_events() {
    const fs::path path = file("described.cxi");
    const hid_t f = H5Fcreate(path.string().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    add_dataset(f, "/entry/data/data", H5T_STD_U32BE, {2, 3, 4});  // big-endian is still uint32
    add_dataset(f, "/entry_1/data_1/data", H5T_STD_I16LE, {5, 2, 2, 2});
    add_dataset(f, "/entry_1/instrument_1/detector_1/data", H5T_IEEE_F64LE, {1, 6, 7});
    add_dataset(f, "/entry_1/instrument_1/detector_1/mask", H5T_STD_I8LE, {6, 7});
    H5Fclose(f);
    const std::vector<replay::EventDatasetCandidate> described =
        replay::describe_event_datasets(path);
    QCOMPARE(described.size(), std::size_t(3));
    QCOMPARE(described[0].dataset, std::string("/entry/data/data"));
    QCOMPARE(described[0].shape, (std::vector<std::uint64_t>{2, 3, 4}));
    QCOMPARE(described[0].dtype, std::string("uint32"));
    QCOMPARE(described[0].events, std::uint64_t(2));
    QVERIFY(described[0].is_default);
    QCOMPARE(described[0].parts, std::vector<std::string>{"/entry/data/data"});
    QCOMPARE(described[1].dataset, std::string("/entry_1/data_1/data"));
    QCOMPARE(described[1].shape, (std::vector<std::uint64_t>{5, 2, 2, 2}));
    QCOMPARE(described[1].dtype, std::string("int16"));
    QCOMPARE(described[1].events, std::uint64_t(5));
    QVERIFY(!described[1].is_default);
    QCOMPARE(described[2].dataset, std::string("/entry_1/instrument_1/detector_1/data"));
    QCOMPARE(described[2].dtype, std::string("float64"));
    QCOMPARE(described[2].events, std::uint64_t(1));
    QVERIFY(!described[2].is_default);
    // The order and the default are discovery's.
    QCOMPARE(replay::find_event_dataset(path), described[0].dataset);
  }

  void a_file_without_events_is_refused_by_name() {
    const fs::path path = file("masks.h5");
    const hid_t f = H5Fcreate(path.string().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    add_2d_dataset(f, "/entry/data/data");  // 2-D: a single image, not events
    add_2d_dataset(f, "/mask");
    H5Fclose(f);
    const std::string error = discovery_error(path);
    QVERIFY2(error.find(path.string()) != std::string::npos, error.c_str());
    QVERIFY2(error.find("no dataset of events found") != std::string::npos, error.c_str());
    QVERIFY2(error.find("FILE.h5:/path/to/dataset") != std::string::npos, error.c_str());
    // Describing the candidates refuses the file with the same reason, not an empty list.
    try {
      replay::describe_event_datasets(path);
      QFAIL("a file without events was described");
    } catch (const InputError& e) {
      const std::string described = e.what();
      QVERIFY2(described.find("no dataset of events found") != std::string::npos &&
                   described.find(path.string()) != std::string::npos,
               described.c_str());
    }

    const fs::path text = file("notes.txt");
    std::ofstream(text) << "not HDF5\n";
    QVERIFY(discovery_error(text).find("is not an HDF5 file") != std::string::npos);
    QVERIFY(discovery_error(file("missing.h5")).find("does not exist") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestReplayDatasetDiscovery)
#include "test_replay_dataset_discovery.moc"
