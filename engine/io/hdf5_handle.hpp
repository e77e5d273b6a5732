#pragma once
// RAII for HDF5 identifiers and a guard that keeps HDF5 from printing its error stack: livedrp
// reports its own messages, naming the file and the dataset.
#include <hdf5.h>

namespace livedrp::io {

// Owns one HDF5 identifier and closes it with the matching function.
class H5Handle {
 public:
  H5Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~H5Handle() {
    if (id_ >= 0) close_(id_);
  }
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// HDF5 prints its error stack to stderr by default; silenced while this lives.
struct QuietHdf5Errors {
  QuietHdf5Errors() {
    H5Eget_auto2(H5E_DEFAULT, &old_function, &old_data);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5Errors() { H5Eset_auto2(H5E_DEFAULT, old_function, old_data); }
  QuietHdf5Errors(const QuietHdf5Errors&) = delete;
  QuietHdf5Errors& operator=(const QuietHdf5Errors&) = delete;
  H5E_auto2_t old_function = nullptr;
  void* old_data = nullptr;
};

}  // namespace livedrp::io
