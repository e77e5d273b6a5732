#include "integrate/pyfai_detectors.hpp"

#include <algorithm>
#include <cctype>

namespace livedrp::integrate {
namespace {

using M = MidModuleGap;

// Module tilings of pyFAI's families (MODULE_SIZE, MODULE_GAP).
constexpr int kEigerModule[2] = {514, 1030}, kEigerGap[2] = {37, 10};
constexpr int kEiger2Module[2] = {512, 1028}, kEiger2Gap[2] = {38, 12};
constexpr int kPilatusModule[2] = {195, 487}, kPilatusGap[2] = {17, 7};
constexpr int kPilatus4Module[2] = {255, 513}, kPilatus4Gap[2] = {20, 7};
constexpr int kJungfrau4MModule[2] = {514, 1030}, kJungfrau4MGap[2] = {36, 8};

constexpr PyfaiDetector eiger(std::string_view name, std::string_view alias, int rows, int cols) {
  return {name,         {alias},      75e-6,  75e-6, rows, cols, kEigerModule[0], kEigerModule[1],
          kEigerGap[0], kEigerGap[1], M::None};
}
constexpr PyfaiDetector eiger2(std::string_view name, std::string_view alias, int rows, int cols,
                               MidModuleGap mid = M::None) {
  return {
      name,          {alias},       75e-6, 75e-6, rows, cols, kEiger2Module[0], kEiger2Module[1],
      kEiger2Gap[0], kEiger2Gap[1], mid};
}
constexpr PyfaiDetector pilatus(std::string_view name, std::array<std::string_view, 4> aliases,
                                int rows, int cols, MidModuleGap mid = M::None) {
  return {name,
          aliases,
          172e-6,
          172e-6,
          rows,
          cols,
          kPilatusModule[0],
          kPilatusModule[1],
          kPilatusGap[0],
          kPilatusGap[1],
          mid};
}
constexpr PyfaiDetector pilatus4(std::string_view name, std::string_view alias, int rows,
                                 int cols) {
  return {name,
          {alias},
          150e-6,
          150e-6,
          rows,
          cols,
          kPilatus4Module[0],
          kPilatus4Module[1],
          kPilatus4Gap[0],
          kPilatus4Gap[1],
          M::None};
}
// A detector of uniform pixels without gaps.
constexpr PyfaiDetector plain(std::string_view name, std::array<std::string_view, 4> aliases,
                              double pixel1, double pixel2, int rows, int cols) {
  return {name, aliases, pixel1, pixel2, rows, cols};
}

// pyFAI's MAX_SHAPE and aliases class by class. Detectors whose default pixel size is a binned
// one (Perkin, Pixium, Apex2) and those placed by per-module tables (Jungfrau 8M, Jungfrau 16M
// cor) are left out: their shape is not one pair of numbers.
constexpr PyfaiDetector kTable[] = {
    // Dectris Eiger (pyFAI/detectors/_dectris.py), 75 um.
    eiger("Eiger500k", "Eiger 500k", 514, 1030),
    eiger("Eiger1M", "Eiger 1M", 1065, 1030),
    eiger("Eiger4M", "Eiger 4M", 2167, 2070),
    eiger("Eiger9M", "Eiger 9M", 3269, 3110),
    eiger("Eiger16M", "Eiger 16M", 4371, 4150),
    eiger2("Eiger2_250k", "Eiger2 250k", 512, 512),
    eiger2("Eiger2_500k", "Eiger2 500k", 512, 1028),
    eiger2("Eiger2_1M", "Eiger2 1M", 1062, 1028),
    eiger2("Eiger2_1MW", "Eiger2 1M-W", 512, 2068),
    eiger2("Eiger2_2MW", "Eiger2 2M-W", 512, 4148),
    eiger2("Eiger2_4M", "Eiger2 4M", 2162, 2068),
    eiger2("Eiger2_9M", "Eiger2 9M", 3262, 3108),
    eiger2("Eiger2_16M", "Eiger2 16M", 4362, 4148),
    eiger2("Eiger2CdTe_500k", "Eiger2 CdTe 500k", 512, 1028, M::EigerCdTe2),
    eiger2("Eiger2CdTe_1M", "Eiger2 CdTe 1M", 1062, 1028, M::EigerCdTe2),
    eiger2("Eiger2CdTe_1MW", "Eiger2 CdTe 1M-W", 512, 2068, M::EigerCdTe2),
    eiger2("Eiger2CdTe_2MW", "Eiger2 CdTe 2M-W", 512, 4148, M::EigerCdTe2),
    eiger2("Eiger2CdTe_4M", "Eiger2 CdTe 4M", 2162, 2068, M::EigerCdTe2),
    eiger2("Eiger2CdTe_9M", "Eiger2 CdTe 9M", 3262, 3108, M::EigerCdTe2),
    eiger2("Eiger2CdTe_16M", "Eiger2 CdTe 16M", 4362, 4148, M::EigerCdTe2),
    // Dectris Pilatus, 172 um; Pilatus4, 150 um.
    pilatus("Pilatus100k", {"Pilatus 100k"}, 195, 487),
    pilatus("Pilatus200k", {"Pilatus 200k"}, 407, 487),
    pilatus("Pilatus300k", {"Pilatus 300k"}, 619, 487),
    pilatus("Pilatus300kw", {"Pilatus 300kw"}, 195, 1475),
    pilatus("Pilatus900k", {"Pilatus 900k"}, 619, 1475),
    pilatus("Pilatus1M", {"Pilatus 1M"}, 1043, 981),
    pilatus("Pilatus2M", {"Pilatus 2M"}, 1679, 1475),
    pilatus("Pilatus6M", {"Pilatus 6M"}, 2527, 2463),
    pilatus("PilatusCdTe300k",
            {"Pilatus CdTe 300k", "Pilatus 300k CdTe", "Pilatus300k CdTe", "Pilatus300kCdTe"}, 619,
            487, M::PilatusCdTe3),
    pilatus("PilatusCdTe300kw",
            {"Pilatus CdTe 300kw", "Pilatus 300kw CdTe", "Pilatus300kw CdTe", "Pilatus300kwCdTe"},
            195, 1475, M::PilatusCdTe3),
    pilatus("PilatusCdTe900kw",
            {"Pilatus CdTe 900kw", "Pilatus 900kw CdTe", "Pilatus900kw CdTe", "Pilatus900kwCdTe"},
            195, 4439, M::PilatusCdTe3),
    pilatus("PilatusCdTe1M",
            {"Pilatus CdTe 1M", "Pilatus 1M CdTe", "Pilatus1M CdTe", "Pilatus1MCdTe"}, 1043, 981,
            M::PilatusCdTe3),
    pilatus("PilatusCdTe2M",
            {"Pilatus CdTe 2M", "Pilatus 2M CdTe", "Pilatus2M CdTe", "Pilatus2MCdTe"}, 1679, 1475,
            M::PilatusCdTe3),
    pilatus4("Pilatus4_1M", "Pilatus4 1M", 1080, 1033),
    pilatus4("Pilatus4_2M", "Pilatus4 2M", 1630, 1553),
    pilatus4("Pilatus4_4M", "Pilatus4 4M", 2180, 2073),
    pilatus4("Pilatus4_260k", "Pilatus4 260k", 530, 513),
    pilatus4("Pilatus4_260kw", "Pilatus4 260kw", 255, 1033),
    // Mythen strips (8 mm x 50 um), one row.
    {"Mythen", {"Mythen 1280"}, 8e-3, 50e-6, 1, 1280, 0, 0, 0, 0, M::None},
    // PSI (pyFAI/detectors/_psi.py): the raw Jungfrau module and the Jungfrau 4M, 75 um.
    {"Jungfrau", {"Jungfrau 500k"}, 75e-6, 75e-6, 512, 1024, 0, 0, 0, 0, M::None, 256},
    {"Jungfrau4M",
     {"Jungfrau 4M"},
     75e-6,
     75e-6,
     2164,
     2068,
     kJungfrau4MModule[0],
     kJungfrau4MModule[1],
     kJungfrau4MGap[0],
     kJungfrau4MGap[1],
     M::None},
    // Others (pyFAI/detectors/_others.py).
    plain("Fairchild", {"Condor", "Fairchild Condor 486:90"}, 15e-6, 15e-6, 4096, 4096),
    plain("Titan", {"Titan 2k x 2k", "OXD Titan", "Agilent Titan"}, 60e-6, 60e-6, 2048, 2048),
    plain("Dexela2923", {"Dexela 2923"}, 75e-6, 75e-6, 3888, 3072),
    plain("Basler", {"aca1300"}, 3.75e-6, 3.75e-6, 966, 1296),
    plain("RaspberryPi5M", {"Picam v1"}, 1.4e-6, 1.4e-6, 1944, 2592),
    plain("RaspberryPi8M", {"Picam v2"}, 1.12e-6, 1.12e-6, 2464, 3280),
    // LCLS's ePix10ka detectors are not in pyFAI's own table: LCLS's pyFAI Detector classes
    // (btx, LCLSGeom) name them and stack the 352 x 384 segments of 100 um pixels, unassembled.
    {"Epix10kaQuad",
     {"ePix10kaQuad"},
     100e-6,
     100e-6,
     4 * 352,
     384,
     0,
     0,
     0,
     0,
     M::None,
     0,
     "LCLS btx/LCLSGeom (4 segments of 352 x 384, stacked)"},
    {"Epix10k2M",
     {"ePix10k2M"},
     100e-6,
     100e-6,
     16 * 352,
     384,
     0,
     0,
     0,
     0,
     M::None,
     0,
     "LCLS btx/LCLSGeom (16 segments of 352 x 384, stacked)"},
};

// pyFAI's detector_factory: case does not matter and a space stands for '_'.
std::string normalised(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (c == ' ') c = '_';
  }
  return out;
}

}  // namespace

std::span<const PyfaiDetector> pyfai_detectors() {
  return kTable;
}

const PyfaiDetector* find_pyfai_detector(std::string_view name) {
  const std::string wanted = normalised(name);
  if (wanted.empty()) return nullptr;
  for (const PyfaiDetector& d : kTable) {
    if (normalised(d.name) == wanted) return &d;
    for (const std::string_view alias : d.aliases)
      if (!alias.empty() && normalised(alias) == wanted) return &d;
  }
  return nullptr;
}

std::string pyfai_detector_examples() {
  return "Eiger2_4M, Eiger4M, Pilatus1M, Pilatus6M, Jungfrau, Jungfrau4M, Epix10kaQuad, "
         "Mythen, ... (docs/formats.md lists them all)";
}

std::vector<std::uint8_t> pyfai_gap_mask(const PyfaiDetector& d, int rows, int cols,
                                         int module_rows, int module_cols) {
  const bool gaps = module_rows > 0 && module_cols > 0 && (d.gap_rows > 0 || d.gap_cols > 0);
  if (!gaps || rows <= 0 || cols <= 0) return {};
  std::vector<std::uint8_t> mask(std::size_t(rows) * std::size_t(cols), 0);
  const auto mask_rows = [&](int first, int last) {  // [first, last)
    for (int r = std::max(first, 0); r < std::min(last, rows); ++r)
      std::fill_n(mask.begin() + std::ptrdiff_t(r) * cols, cols, std::uint8_t(1));
  };
  const auto mask_cols = [&](int first, int last) {
    for (int r = 0; r < rows; ++r)
      for (int c = std::max(first, 0); c < std::min(last, cols); ++c)
        mask[std::size_t(r) * std::size_t(cols) + std::size_t(c)] = 1;
  };
  // A gap follows every module: rows module_rows .. module_rows + gap_rows, then one module
  // further on, up to the detector's edge.
  for (int r = module_rows; r < rows; r += module_rows + d.gap_rows) mask_rows(r, r + d.gap_rows);
  for (int c = module_cols; c < cols; c += module_cols + d.gap_cols) mask_cols(c, c + d.gap_cols);
  if (d.mid_gap != MidModuleGap::None) {
    const int after = d.mid_gap == MidModuleGap::EigerCdTe2 ? 1 : 2;
    for (int c = module_cols / 2; c < cols; c += module_cols + d.gap_cols)
      mask_cols(c - 1, c + after);
  }
  return mask;
}

}  // namespace livedrp::integrate
