#include "io/profile_writer_csv.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"

namespace livedrp::io {
namespace {

class CsvProfileWriter final : public ProfileWriter {
 public:
  explicit CsvProfileWriter(const std::string& output) : output_(output) {
    out_ = output == "-" ? stdout : std::fopen(output.c_str(), "w");
    // The path is the user's to fix (a missing folder, no permission): bad input.
    if (!out_)
      throw InputError("cannot write output file '" + output + "': " + std::strerror(errno));
    std::fprintf(out_, "frame,radial,intensity,sigma\n");
  }
  ~CsvProfileWriter() override {
    if (out_ && out_ != stdout) std::fclose(out_);
  }

  void write(std::uint64_t frame, const integrate::Profile& p) override {
    for (std::size_t b = 0; b < p.radial.size(); ++b)
      std::fprintf(out_, "%llu,%.10g,%.10g,%.10g\n", (unsigned long long)frame, p.radial[b],
                   p.intensity[b], p.sigma[b]);
  }

  void close() override {
    const bool written = std::fflush(out_) == 0 && !std::ferror(out_);
    const bool closed = out_ == stdout || std::fclose(out_) == 0;
    out_ = nullptr;
    if (!written || !closed) throw RuntimeFault("writing output file '" + output_ + "' failed");
  }

  std::string destination() const override { return output_; }

 private:
  std::string output_;
  std::FILE* out_ = nullptr;
};

}  // namespace

std::unique_ptr<ProfileWriter> open_csv_profile_writer(const std::string& output,
                                                       const ProfileOutputContext&) {
  return std::make_unique<CsvProfileWriter>(output);
}

}  // namespace livedrp::io
