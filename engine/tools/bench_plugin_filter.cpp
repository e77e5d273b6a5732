#include "bench_plugin_filter.hpp"

#include <dlfcn.h>
#include <hdf5.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "core/error.hpp"

namespace livedrp::bench {
namespace {

// Where HDF5 itself would look: HDF5_PLUGIN_PATH (':'-separated), then Debian's folders.
std::vector<std::filesystem::path> plugin_folders() {
  std::vector<std::filesystem::path> folders;
  if (const char* path = std::getenv("HDF5_PLUGIN_PATH")) {
    std::istringstream list(path);
    for (std::string folder; std::getline(list, folder, ':');)
      if (!folder.empty()) folders.emplace_back(folder);
  }
  folders.emplace_back("/usr/lib/x86_64-linux-gnu/hdf5/serial/plugins");
  folders.emplace_back("/usr/lib/aarch64-linux-gnu/hdf5/serial/plugins");
  return folders;
}

const H5Z_class2_t& as_class(const void* p) {
  return *static_cast<const H5Z_class2_t*>(p);
}

}  // namespace

std::unique_ptr<PluginFilter> PluginFilter::load(const std::string& file_name, std::string* why) {
  for (const auto& folder : plugin_folders()) {
    const std::filesystem::path candidate = folder / file_name;
    if (!std::filesystem::exists(candidate)) continue;
    void* library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      *why = candidate.string() + ": " + dlerror();
      return nullptr;
    }
    using Info = const void* (*)();
    const auto info = reinterpret_cast<Info>(dlsym(library, "H5PLget_plugin_info"));
    const void* filter_class = info ? info() : nullptr;
    if (!filter_class || !as_class(filter_class).filter) {
      dlclose(library);
      *why = candidate.string() + " is not an HDF5 filter plugin";
      return nullptr;
    }
    std::unique_ptr<PluginFilter> plugin(new PluginFilter);
    plugin->library_ = library;
    plugin->filter_class_ = filter_class;
    plugin->path_ = candidate.string();
    return plugin;
  }
  *why = file_name + " not found on HDF5_PLUGIN_PATH or in Debian's HDF5 plugin folder";
  return nullptr;
}

PluginFilter::~PluginFilter() {
  std::free(buffer_);
  if (library_) dlclose(library_);
}

int PluginFilter::id() const {
  return as_class(filter_class_).id;
}

std::span<const std::uint8_t> PluginFilter::run(bool reverse, const std::vector<unsigned>& cd,
                                                std::span<const std::uint8_t> in) {
  // The filter replaces the buffer it is given (HDF5's contract): hand it a copy of the input in
  // memory of its allocator, the C library's, as HDF5 1.10 does. Decoding the last output needs
  // no copy: it is that buffer already.
  if (in.data() != buffer_) {
    if (buffer_size_ < in.size()) {
      std::free(buffer_);
      buffer_ = std::malloc(in.size());
      buffer_size_ = buffer_ ? in.size() : 0;
      if (!buffer_) throw RuntimeFault("plugin filter: out of memory");
    }
    std::memcpy(buffer_, in.data(), in.size());
  }
  const std::size_t n = as_class(filter_class_)
                            .filter(reverse ? H5Z_FLAG_REVERSE : 0, cd.size(), cd.data(), in.size(),
                                    &buffer_size_, &buffer_);
  if (n == 0) throw RuntimeFault("plugin filter " + path_ + " failed");
  return {static_cast<const std::uint8_t*>(buffer_), n};
}

}  // namespace livedrp::bench
