#pragma once
// Live compression as a stage of the contract (stages/stage.hpp): the configuration's
// "compression" section makes it (the engine's own section, so the engine builds it); its CPU
// part is the CpuCompressor, its CUDA part a DeviceCodec per backend lane (the stream written
// to the lane's device buffer, overwritten by its next event; the size word copied to the
// position's pinned result block), its result the event's bytes in and out (CompressedSize) and
// its book the CompressionBook (stats.compression). The codec reads the raw words (lossless)
// or the calibrated image (lossy) as codec/compression_input.hpp says, in the detector's
// [segments, rows, cols] shape, so both parts write the same bytes.
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "codec/codec.hpp"
#include "core/detector.hpp"
#include "exec/engine.hpp"
#include "stages/compress/compression_book.hpp"
#include "stages/stage.hpp"

namespace livedrp::stages {

// Where the CUDA part of one backend lane leaves each event's stream: device memory that the
// lane's next event overwrites. A stage after compress in the run's list (fidelity) reads it on
// the same stream; holding this keeps the memory alive.
struct CompressDeviceStream {
  const void* bytes = nullptr;               // device memory, `capacity` bytes
  const std::uint64_t* size_word = nullptr;  // device memory: the byte size of the last stream
  std::size_t capacity = 0;                  // the codec's bound for one event
};

class CompressStage final : public Stage {
 public:
  // Throws InputError (naming "compression") for parameters the codec refuses for this
  // detector.
  CompressStage(const DetectorDescription& detector, codec::CodecParams params,
                CompressionBookSettings book);

  std::string name() const override { return "compress"; }
  std::uint64_t input_bytes() const override { return bytes_in_; }
  std::any run_cpu(const CpuEvent& event) override;
#ifdef LIVEDRP_HAVE_CUDA
  // In its own file (..._cuda.cpp); without CUDA the stage has none (Stage's default).
  std::unique_ptr<CudaStageLane> make_cuda_lane(const CudaLaneSpec& spec) const override;
#endif
  std::unique_ptr<StageBook> make_book() const override;

  const codec::CodecParams& params() const {
    return params_;
  }
  // The CPU part's stream of the event it compressed last, valid until its next run_cpu: a stage
  // after it in the list (the fidelity sampler) reads the very bytes a storage path would keep,
  // on the same thread, for the same event.
  std::span<const std::uint8_t> last_stream() const {
    return last_stream_;
  }
  // Whether the codec reads the calibrated image (lossy) rather than the raw words.
  bool compresses_calibrated_image() const {
    return calibrated_image_;
  }
#ifdef LIVEDRP_HAVE_CUDA
  // The stream of the CUDA part made last for backend lane `lane` (make_cuda_lane, which the
  // backend calls for this stage before the stages after it). Throws RuntimeFault when that lane
  // has no CUDA part of this stage alive.
  std::shared_ptr<const CompressDeviceStream> device_stream(int lane) const;
#endif

 private:
  codec::CodecParams params_;
  CompressionBookSettings book_;
  codec::DType dtype_;
  bool calibrated_image_ = false;  // the codec's input: the calibrated image, else the raw words
  std::uint64_t count_ = 0;        // elements an event
  std::uint64_t bytes_in_ = 0;
  std::vector<std::uint64_t> shape_;  // [segments, rows, cols]
  codec::CpuCompressor compressor_;   // run_cpu's; its buffers are reused event after event
  std::span<const std::uint8_t> last_stream_;  // into compressor_'s output
#ifdef LIVEDRP_HAVE_CUDA
  // The CUDA parts' streams by lane (set-up only, but on whichever thread makes a backend).
  mutable std::mutex device_mutex_;
  mutable std::vector<std::weak_ptr<const CompressDeviceStream>> device_streams_;
#endif
};

// The stage the "compression" section describes; null when the codec is off.
std::shared_ptr<CompressStage> make_compress_stage(const CompressionConfig& config,
                                                   const DetectorDescription& detector);

}  // namespace livedrp::stages
