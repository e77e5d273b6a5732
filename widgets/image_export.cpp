#include "widgets/image_export.hpp"

#include <bit>
#include <cstring>

#include <QtEndian>

#include "widgets/csv_table.hpp"

namespace livedrp::widgets {
namespace {

// NumPy's format 1.0: magic, version, a little-endian uint16 header length, then the header dict
// padded with spaces and ended by '\n' so that the data starts on a 64-byte boundary.
constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr std::size_t kNpyAlignment = 64;
constexpr std::size_t kNpyPreamble = 10;  // magic (6), version (2), header length (2)

}  // namespace

QByteArray imageNpy(const protocol::ImageFrame& image) {
  QByteArray header =
      QStringLiteral("{'descr': '<f4', 'fortran_order': False, 'shape': (%1, %2), }")
          .arg(image.height)
          .arg(image.width)
          .toLatin1();
  const std::size_t unpadded = kNpyPreamble + std::size_t(header.size()) + 1;
  const std::size_t padded = (unpadded + kNpyAlignment - 1) / kNpyAlignment * kNpyAlignment;
  header.append(qsizetype(padded - unpadded), ' ');
  header.append('\n');

  QByteArray out;
  const std::size_t pixels = std::size_t(image.height * image.width);
  out.reserve(qsizetype(padded + pixels * sizeof(float)));
  out.append(kNpyMagic, 6);
  out.append(char(1));
  out.append(char(0));
  const quint16 length = qToLittleEndian(quint16(header.size()));
  out.append(reinterpret_cast<const char*>(&length), 2);
  out.append(header);
  const qsizetype data_at = out.size();
  out.resize(data_at + qsizetype(pixels * sizeof(float)));
  char* data = out.data() + data_at;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(data, image.pixels.data(), pixels * sizeof(float));
  } else {
    for (std::size_t i = 0; i < pixels; ++i)
      qToLittleEndian(std::bit_cast<quint32>(image.pixels[i]), data + i * sizeof(float));
  }
  return out;
}

QByteArray imageCsv(const protocol::ImageFrame& image) {
  QByteArray out;
  out += QStringLiteral(
             "# livedrp detector image: event #%1 (pulse id %2), %3 rows x %4 columns, "
             "row 0 first\n")
             .arg(image.sequence)
             .arg(image.pulse_id)
             .arg(image.height)
             .arg(image.width)
             .toUtf8();
  out += QStringLiteral("# unit: %1; nan: a gap (no detector pixel)\n")
             .arg(image.unit.empty() ? QStringLiteral("calibrated value")
                                     : QString::fromStdString(image.unit))
             .toUtf8();
  // About 10 characters a pixel: reserved once, not grown line by line for 2 Mpixels.
  out.reserve(out.size() + qsizetype(image.pixels.size() * 10));
  for (std::uint64_t row = 0; row < image.height; ++row) {
    const float* pixels = image.pixels.data() + row * image.width;
    for (std::uint64_t column = 0; column < image.width; ++column) {
      if (column > 0) out += ',';
      appendNumber(out, pixels[column]);
    }
    out += '\n';
  }
  return out;
}

}  // namespace livedrp::widgets
