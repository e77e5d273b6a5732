#include "hdf5_filter/filter_class.hpp"

#include <hdf5.h>

#include <cstring>
#include <exception>
#include <vector>

#include "codec/codec_format.hpp"
#include "hdf5_filter/livedrp_filter.hpp"

namespace {

using namespace livedrp::hdf5_filter;

// The codec's element type for an HDF5 type: uint16 and float32 only (what it compresses).
unsigned codec_dtype(hid_t type) {
  const H5T_class_t type_class = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  if (type_class == H5T_INTEGER && size == 2 && H5Tget_sign(type) == H5T_SGN_NONE)
    return unsigned(livedrp::codec::DType::UInt16);
  if (type_class == H5T_FLOAT && size == 4) return unsigned(livedrp::codec::DType::Float32);
  return 0;
}

// Is this dataset one the codec can take (chunked, uint16 or float32, little-endian)?
htri_t can_apply(hid_t, hid_t type, hid_t) {
  if (codec_dtype(type) == 0 || H5Tget_order(type) != H5T_ORDER_LE) {
    H5Epush2(H5E_DEFAULT, __FILE__, "can_apply", __LINE__, H5E_ERR_CLS, H5E_PLINE, H5E_BADTYPE,
             "the livedrp codec takes little-endian uint16 or float32 datasets only");
    return 0;
  }
  return 1;
}

// Completes the client data with what the dataset says: element type and chunk bytes.
herr_t set_local(hid_t dcpl, hid_t type, hid_t) {
  unsigned flags = 0;
  size_t count = kCdCount;
  unsigned cd[kCdCount] = {};
  if (H5Pget_filter_by_id2(dcpl, kFilterId, &flags, &count, cd, 0, nullptr, nullptr) < 0) return -1;
  std::vector<unsigned> values = filter_parameters(false);
  for (size_t i = 0; i < count && i < kCdCount; ++i) values[i] = cd[i];
  values[kCdDType] = codec_dtype(type);
  hsize_t chunk[H5S_MAX_RANK];
  const int rank = H5Pget_chunk(dcpl, H5S_MAX_RANK, chunk);
  if (rank <= 0) return -1;
  std::uint64_t bytes = H5Tget_size(type);
  for (int d = 0; d < rank; ++d) bytes *= chunk[d];
  // HDF5 chunks are below 4 GiB, so their bytes fit an unsigned.
  values[kCdRawChunkBytes] = unsigned(bytes);
  return H5Pmodify_filter(dcpl, kFilterId, flags, values.size(), values.data());
}

// HDF5's filter call: forward (write) encodes, H5Z_FLAG_REVERSE (read) decodes. Returns the new
// size, or 0 for failure, the reason pushed on HDF5's error stack.
size_t filter(unsigned flags, size_t cd_count, const unsigned cd[], size_t bytes,
              size_t* buffer_size, void** buffer) {
  try {
    const auto* in = static_cast<const std::uint8_t*>(*buffer);
    const std::vector<std::uint8_t> out = (flags & H5Z_FLAG_REVERSE)
                                              ? decode_chunk(cd, cd_count, in, bytes)
                                              : encode_chunk(cd, cd_count, in, bytes);
    void* replaced = H5allocate_memory(out.empty() ? 1 : out.size(), false);
    if (!replaced) return 0;
    std::memcpy(replaced, out.data(), out.size());
    H5free_memory(*buffer);
    *buffer = replaced;
    *buffer_size = out.empty() ? 1 : out.size();
    return out.size();
  } catch (const std::exception& e) {
    H5Epush2(H5E_DEFAULT, __FILE__, "livedrp filter", __LINE__, H5E_ERR_CLS, H5E_PLINE,
             H5E_CANTFILTER, "%s", e.what());
    return 0;
  } catch (...) {
    return 0;
  }
}

const H5Z_class2_t kFilterClass = {
    H5Z_CLASS_T_VERS, kFilterId, 1,         1,
    kFilterName,      can_apply, set_local, static_cast<H5Z_func_t>(filter)};

}  // namespace

namespace livedrp::hdf5_filter {

const H5Z_class2_t& filter_class() {
  return kFilterClass;
}

bool register_filter() {
  return H5Zregister(&kFilterClass) >= 0;
}

}  // namespace livedrp::hdf5_filter
