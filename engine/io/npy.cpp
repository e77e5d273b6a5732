#include "io/npy.hpp"

#include <cctype>
#include <cstring>
#include <fstream>
#include <string>

#include "core/error.hpp"

namespace livedrp::io {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicBytes = 6;

[[noreturn]] void bad(const std::filesystem::path& path, const std::string& what) {
  throw InputError(".npy file " + path.string() + ": " + what);
}

// The value of `key` in NumPy's header dictionary, as written (quotes and brackets kept).
std::string dictionary_value(const std::string& header, const std::string& key,
                             const std::filesystem::path& path) {
  const std::string quoted[] = {"'" + key + "'", "\"" + key + "\""};
  std::size_t at = std::string::npos;
  for (const std::string& q : quoted)
    if ((at = header.find(q)) != std::string::npos) {
      at += q.size();
      break;
    }
  if (at == std::string::npos) bad(path, "header has no '" + key + "' entry");
  at = header.find(':', at);
  if (at == std::string::npos) bad(path, "header entry '" + key + "' has no value");
  ++at;
  while (at < header.size() && std::isspace(static_cast<unsigned char>(header[at]))) ++at;
  if (at >= header.size()) bad(path, "header entry '" + key + "' has no value");
  const char open = header[at];
  if (open == '\'' || open == '"') {
    const std::size_t end = header.find(open, at + 1);
    if (end == std::string::npos) bad(path, "header entry '" + key + "' is not closed");
    return header.substr(at + 1, end - at - 1);
  }
  if (open == '(') {
    const std::size_t end = header.find(')', at);
    if (end == std::string::npos) bad(path, "header entry '" + key + "' is not closed");
    return header.substr(at, end - at + 1);
  }
  std::size_t end = at;
  while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  std::string value = header.substr(at, end - at);
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
  return value;
}

std::vector<std::uint64_t> parse_shape(const std::string& text, const std::filesystem::path& path) {
  // "(a, b, c)", "(a,)" or "()".
  std::vector<std::uint64_t> shape;
  std::size_t at = 1;
  while (at < text.size()) {
    while (at < text.size() &&
           (std::isspace(static_cast<unsigned char>(text[at])) || text[at] == ','))
      ++at;
    if (at >= text.size() || text[at] == ')') break;
    if (!std::isdigit(static_cast<unsigned char>(text[at])))
      bad(path, "shape " + text + " is not a tuple of non-negative integers");
    std::uint64_t value = 0;
    while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) {
      const std::uint64_t digit = std::uint64_t(text[at] - '0');
      if (value > (~0ull - digit) / 10) bad(path, "shape " + text + " has an extent too large");
      value = value * 10 + digit;
      ++at;
    }
    if (at < text.size() && text[at] == 'L') ++at;  // Python 2 long literals
    shape.push_back(value);
    if (shape.size() > 32) bad(path, "shape " + text + " has more than 32 dimensions");
  }
  return shape;
}

}  // namespace

Array read_npy(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) bad(path, "cannot be opened");
  file.seekg(0, std::ios::end);
  const std::uint64_t file_bytes = std::uint64_t(file.tellg());
  file.seekg(0);
  char preamble[12] = {};
  if (file_bytes < 10 || !file.read(preamble, 10)) bad(path, "too short to be a .npy file");
  if (std::memcmp(preamble, kMagic, kMagicBytes) != 0) bad(path, "not a .npy file (no magic)");
  const int major = static_cast<unsigned char>(preamble[6]);
  std::uint64_t header_bytes = 0, prefix_bytes = 10;
  if (major == 1) {
    header_bytes = std::uint64_t(static_cast<unsigned char>(preamble[8])) |
                   std::uint64_t(static_cast<unsigned char>(preamble[9])) << 8;
  } else if (major == 2 || major == 3) {
    if (file_bytes < 12 || !file.read(preamble + 10, 2)) bad(path, "truncated header length");
    for (int i = 0; i < 4; ++i)
      header_bytes |= std::uint64_t(static_cast<unsigned char>(preamble[8 + i])) << (8 * i);
    prefix_bytes = 12;
  } else {
    bad(path, "format version " + std::to_string(major) + " (this reader knows 1, 2 and 3)");
  }
  if (prefix_bytes + header_bytes > file_bytes)
    bad(path, "header of " + std::to_string(header_bytes) + " bytes runs past the end of the file");
  std::string header(header_bytes, '\0');
  if (!file.read(header.data(), std::streamsize(header_bytes))) bad(path, "cannot read the header");

  const std::string descr = dictionary_value(header, "descr", path);
  if (!descr.empty() && descr.front() == '>')
    bad(path, "dtype '" + descr + "' is big endian; livedrp reads little-endian arrays");
  const auto type = element_type_from_name(descr);
  if (!type)
    bad(path, "dtype '" + descr +
                  "' is not one livedrp reads (uint8, uint16, uint32, int16, "
                  "int32, float32, float64)");
  const std::string fortran = dictionary_value(header, "fortran_order", path);
  if (fortran == "True") bad(path, "Fortran-ordered arrays are not supported; save in C order");
  if (fortran != "False") bad(path, "fortran_order is '" + fortran + "', not True or False");
  const std::string shape_value = dictionary_value(header, "shape", path);
  if (shape_value.empty() || shape_value.front() != '(')
    bad(path, "shape '" + shape_value + "' is not a tuple");

  Array array;
  array.type = *type;
  array.shape = parse_shape(shape_value, path);
  const auto elements = checked_elements(array.shape, array.type);
  if (!elements) bad(path, "shape " + shape_text(array.shape) + " is too large");
  const std::uint64_t data_bytes = *elements * element_bytes(array.type);
  const std::uint64_t data_start = prefix_bytes + header_bytes;
  if (file_bytes - data_start < data_bytes)
    bad(path, "truncated: shape " + shape_text(array.shape) + " of " +
                  std::string(to_string(array.type)) + " needs " + std::to_string(data_bytes) +
                  " data bytes, the file has " + std::to_string(file_bytes - data_start));
  if (file_bytes - data_start > data_bytes)
    bad(path, std::to_string(file_bytes - data_start - data_bytes) +
                  " bytes follow the array's data (not a single .npy array)");
  array.bytes.resize(data_bytes);
  if (data_bytes > 0 &&
      !file.read(reinterpret_cast<char*>(array.bytes.data()), std::streamsize(data_bytes)))
    bad(path, "cannot read the data");
  return array;
}

void write_npy(const std::filesystem::path& path, const Array& array) {
  const std::string_view kinds[] = {"|u1", "<u2", "<u4", "<i2", "<i4", "<f4", "<f8"};
  const std::string descr(kinds[static_cast<int>(array.type)]);
  // Python tuple syntax: "()", "(n,)", "(a, b)".
  std::string shape = "(";
  for (std::size_t i = 0; i < array.shape.size(); ++i)
    shape += (i ? ", " : "") + std::to_string(array.shape[i]);
  shape += array.shape.size() == 1 ? ",)" : ")";
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Version 1 if the header length fits 16 bits; the total prefix is padded to 64 bytes with
  // spaces and ends in a newline, as NumPy writes it.
  const bool version2 = header.size() + 1 + 10 > 65535;
  const std::size_t prefix = version2 ? 12 : 10;
  const std::size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header.push_back('\n');
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw RuntimeFault(".npy file " + path.string() + ": cannot be created");
  file.write(kMagic, kMagicBytes);
  const char version[2] = {char(version2 ? 2 : 1), 0};
  file.write(version, 2);
  const std::uint64_t length = header.size();
  for (std::size_t i = 0; i < (version2 ? 4u : 2u); ++i) file.put(char((length >> (8 * i)) & 0xFF));
  file.write(header.data(), std::streamsize(header.size()));
  file.write(reinterpret_cast<const char*>(array.bytes.data()),
             std::streamsize(array.bytes.size()));
  if (!file) throw RuntimeFault(".npy file " + path.string() + ": write failed");
}

}  // namespace livedrp::io
