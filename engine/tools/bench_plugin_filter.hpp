#pragma once
// An installed HDF5 filter plugin (Debian's bitshuffle, libh5bshuf.so) called the way HDF5 calls
// it, without a file: the bench then times the filter's own work on the same arrays as the other
// CPU rows, not HDF5's chunk I/O around it. The plugin is found on HDF5_PLUGIN_PATH, else in
// Debian's serial HDF5 plugin folder; without it the rows are left out, saying why.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace livedrp::bench {

class PluginFilter {
 public:
  // The plugin library `file_name` (for example "libh5bshuf.so"); null, with `why`, when it is
  // not found or is not an HDF5 filter plugin.
  static std::unique_ptr<PluginFilter> load(const std::string& file_name, std::string* why);
  ~PluginFilter();
  PluginFilter(const PluginFilter&) = delete;
  PluginFilter& operator=(const PluginFilter&) = delete;

  // One call of the filter on `in` (forward: encode; reverse: decode) with client data `cd`; the
  // result stays valid until the next call. Throws RuntimeFault when the filter fails.
  std::span<const std::uint8_t> run(bool reverse, const std::vector<unsigned>& cd,
                                    std::span<const std::uint8_t> in);

  const std::string& path() const { return path_; }
  int id() const;

 private:
  PluginFilter() = default;
  void* library_ = nullptr;
  const void* filter_class_ = nullptr;  // the plugin's H5Z_class2_t
  std::string path_;
  void* buffer_ = nullptr;  // the filter's last output (malloc'ed, as HDF5's filters reallocate)
  std::size_t buffer_size_ = 0;
};

}  // namespace livedrp::bench
