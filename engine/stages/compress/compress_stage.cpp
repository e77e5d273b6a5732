#include "stages/compress/compress_stage.hpp"

#include "codec/compression_input.hpp"
#include "core/error.hpp"

namespace livedrp::stages {

CompressStage::CompressStage(const DetectorDescription& detector, codec::CodecParams params,
                             CompressionBookSettings book)
    : params_(params), book_(std::move(book)) {
  const codec::CompressionInput input = codec::compression_input(detector.encoding, params_.codec);
  dtype_ = input.dtype;
  calibrated_image_ = input.calibrated_image;
  count_ = detector.pixels();
  bytes_in_ = count_ * (dtype_ == codec::DType::Float32 ? 4 : 2);
  shape_ = {std::uint64_t(detector.segments), std::uint64_t(detector.rows),
            std::uint64_t(detector.cols)};
  // The codec's own rules, now: a bad bound or chunk size is refused when the run is configured
  // rather than on its first event.
  try {
    codec::compressed_bound(dtype_, count_, unsigned(shape_.size()), params_);
  } catch (const InputError& e) {
    throw InputError(std::string("compression: ") + e.what());
  }
}

std::any CompressStage::run_cpu(const CpuEvent& event) {
  const void* data =
      calibrated_image_ ? static_cast<const void*>(event.calibrated.data()) : event.raw;
  last_stream_ = compressor_.compress(data, dtype_, shape_, params_, event.pool);
  return CompressedSize{bytes_in_, last_stream_.size()};
}

std::unique_ptr<StageBook> CompressStage::make_book() const {
  return std::make_unique<CompressionBook>(book_);
}

std::shared_ptr<CompressStage> make_compress_stage(const CompressionConfig& config,
                                                   const DetectorDescription& detector) {
  if (!config.enabled()) return nullptr;
  codec::CodecParams params;
  params.codec = config.codec == "lossy" ? codec::Codec::Lossy : codec::Codec::Lossless;
  params.error_bound = params.codec == codec::Codec::Lossy ? config.error_bound : 0.0;
  params.chunk_bytes = config.chunk_bytes;
  return std::make_shared<CompressStage>(detector, params,
                                         CompressionBookSettings{config.codec, config.error_bound});
}

}  // namespace livedrp::stages
