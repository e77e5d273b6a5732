// CrystFEL .geom files: a hand-made two-panel geometry and an ePix10ka2M-like module (both
// written for these tests) parsed, with pixel-centre positions, radii, panel rectangles and the
// bad-pixel mask checked against values computed here from the numbers written in the files;
// and malformed files rejected with the file, the line and the problem named.
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/crystfel_geometry.hpp"
#include "core/error.hpp"

using namespace livedrp;
using namespace livedrp::crystfel;

namespace {

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& e) {
    return e.what();
  }
  return {};
}

std::string join(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

// Two 8 x 6 panels stacked along ss in a 12 x 8 slab; the bottom one turned by 180 degrees.
// Windows line ends on purpose (CrystFEL accepts them).
const char* kTwoPanels =
    "; two panels, written for livedrp's tests\r\n"
    "clen = 0.1 m\r\n"
    "photon_energy = 9000 eV\r\n"
    "adu_per_eV = 0.001\r\n"
    "res = 10000   ; 100 um pixels\r\n"
    "data = /entry/data\r\n"
    "dim0 = %\r\n"
    "dim1 = ss\r\n"
    "dim2 = fs\r\n"
    "mask = /entry/mask\r\n"
    "mask_good = 0x1\r\n"
    "mask_bad = 0xfe\r\n"
    "rigid_group_q0 = top,bottom\r\n"
    "rigid_group_collection_all = q0\r\n"
    "\r\n"
    "top/min_fs = 0\r\n"
    "top/max_fs = 7\r\n"
    "top/min_ss = 0\r\n"
    "top/max_ss = 5\r\n"
    "top/fs = +1.0x\r\n"
    "top/ss = +1.0y\r\n"
    "top/corner_x = -4\r\n"
    "top/corner_y = 2\r\n"
    "top/coffset = 0.001\r\n"
    "adu_per_photon = 9\r\n"  // a default for the panels after this line only
    "bottom/min_fs = 0\r\n"
    "bottom/max_fs = 7\r\n"
    "bottom/min_ss = 6\r\n"
    "bottom/max_ss = 11\r\n"
    "bottom/fs = -x\r\n"
    "bottom/ss = -1.0y\r\n"
    "bottom/corner_x = 4\r\n"
    "bottom/corner_y = -2\r\n"
    "bottom/no_index = false\r\n"
    "badcorner/min_fs = 0\r\n"
    "badcorner/max_fs = 1\r\n"
    "badcorner/min_ss = 6\r\n"
    "badcorner/max_ss = 7\r\n"
    "badcorner/panel = bottom\r\n"
    "badstrip/min_x = -1.0\r\n"
    "badstrip/max_x = 1.0\r\n"
    "badstrip/min_y = 2.0\r\n"
    "badstrip/max_y = 3.0\r\n";

// An ePix10ka2M-like module: 4 ASICs of 176 x 192 in a 352 x 384 slab, turned by 0.5 degrees,
// one ASIC slightly tilted (a z component), gaps between ASICs. Not a calibrated geometry.
const char* kEpixModule =
    R"(; ePix10ka2M-like excerpt: one module of four ASICs (written for livedrp's tests)
clen = /LCLS/detector_1/EncoderValue mm
photon_energy = /LCLS/photon_energy_eV eV
adu_per_eV = 0.0001
res = 10000
coffset = 0.0
data = /entry_1/data_1/data
dim0 = %
dim1 = ss
dim2 = fs
mask = /entry_1/data_1/mask
mask_good = 0x0000
mask_bad = 0xffff
flag_morethan = 60000

rigid_group_m0 = m0a0,m0a1,m0a2,m0a3
rigid_group_collection_asics = m0

m0a0/min_fs = 0
m0a0/max_fs = 191
m0a0/min_ss = 0
m0a0/max_ss = 175
m0a0/fs = +0.999962x +0.008727y
m0a0/ss = +0.008727x -0.999962y
m0a0/corner_x = -386.5
m0a0/corner_y = 370.25
m0a0/max_adu = 30000

m0a1/min_fs = 192
m0a1/max_fs = 383
m0a1/min_ss = 0
m0a1/max_ss = 175
m0a1/fs = +0.999962x +0.008727y
m0a1/ss = +0.008727x -0.999962y
m0a1/corner_x = -192.3
m0a1/corner_y = 372.0
m0a1/no_index = 1

m0a2/min_fs = 0
m0a2/max_fs = 191
m0a2/min_ss = 176
m0a2/max_ss = 351
m0a2/fs = +0.999962x +0.008727y
m0a2/ss = +0.008727x -0.999962y
m0a2/corner_x = -385.0
m0a2/corner_y = 192.1

m0a3/min_fs = 192
m0a3/max_fs = 383
m0a3/min_ss = 176
m0a3/max_ss = 351
m0a3/fs = +0.999962x +0.008727y +0.001z
m0a3/ss = +0.008727x -0.999962y
m0a3/corner_x = -190.8
m0a3/corner_y = 193.8
m0a3/mask_edge_pixels = 1

bad_a0_column/min_fs = 10
bad_a0_column/max_fs = 10
bad_a0_column/min_ss = 0
bad_a0_column/max_ss = 175
bad_a0_column/panel = m0a0

bad_spot/min_x = -250
bad_spot/max_x = -240
bad_spot/min_y = 300
bad_spot/max_y = 310
)";

struct Expected {
  const char* name;
  int min_fs, max_fs, min_ss, max_ss;
  double fsx, fsy, ssx, ssy, corner_x, corner_y;
  bool no_index;
  int edge;
};

const Expected kEpix[] = {
    {"m0a0", 0, 191, 0, 175, 0.999962, 0.008727, 0.008727, -0.999962, -386.5, 370.25, false, 0},
    {"m0a1", 192, 383, 0, 175, 0.999962, 0.008727, 0.008727, -0.999962, -192.3, 372.0, true, 0},
    {"m0a2", 0, 191, 176, 351, 0.999962, 0.008727, 0.008727, -0.999962, -385.0, 192.1, false, 0},
    {"m0a3", 192, 383, 176, 351, 0.999962, 0.008727, 0.008727, -0.999962, -190.8, 193.8, false, 1},
};

}  // namespace

class TestCrystfelGeometry : public QObject {
  Q_OBJECT

 private slots:
  void two_panels_parsed() {
    const Geometry g = parse_geometry(kTwoPanels, "two.geom");
    QCOMPARE(g.panels.size(), std::size_t(2));
    QCOMPARE(g.slab_height, 12);
    QCOMPARE(g.slab_width, 8);
    QCOMPARE(g.clen, std::string("0.1 m"));
    QCOMPARE(g.photon_energy, std::string("9000 eV"));
    QVERIFY2(g.warnings.empty(), g.warnings.empty() ? "" : g.warnings.front().c_str());

    const GeomPanel& top = g.panels[0];
    const GeomPanel& bottom = g.panels[1];
    QCOMPARE(top.name, std::string("top"));
    QCOMPARE(top.line, 16);
    QCOMPARE(top.res, 10000.0);
    QCOMPARE(top.coffset, 0.001);
    QCOMPARE(top.clen, std::string("0.1 m"));
    QCOMPARE(top.data, std::string("/entry/data"));
    QCOMPARE(top.dims, (std::vector<std::string>{"%", "ss", "fs"}));
    QCOMPARE(top.mask, std::string("/entry/mask"));
    QCOMPARE(top.mask_good, std::uint64_t(1));
    QCOMPARE(top.mask_bad, std::uint64_t(0xfe));
    QVERIFY(top.adu_per_eV && *top.adu_per_eV == 0.001 && !top.adu_per_photon);
    // The default given between the panels reaches only the panel after it.
    QVERIFY(bottom.adu_per_photon && *bottom.adu_per_photon == 9 && !bottom.adu_per_eV);
    QCOMPARE(bottom.coffset, 0.0);
    QCOMPARE(bottom.fs.x, -1.0);
    QCOMPARE(bottom.ss.y, -1.0);
    QVERIFY(!bottom.no_index);

    // Pixel centres: corner + (i + 0.5) fs + (j + 0.5) ss, from the numbers in the file.
    const std::vector<float> radius = radius_map(g);
    const std::vector<std::int32_t> panels = panel_map(g);
    for (int ss = 0; ss < 12; ++ss)
      for (int fs = 0; fs < 8; ++fs) {
        double x, y;
        if (ss < 6) {
          x = -4 + (fs + 0.5);
          y = 2 + (ss + 0.5);
        } else {
          x = 4 - (fs + 0.5);
          y = -2 - (ss - 6 + 0.5);
        }
        const LabPoint c = pixel_centre(g.panels[ss < 6 ? 0 : 1], fs, ss);
        QCOMPARE(c.x, x);
        QCOMPARE(c.y, y);
        QCOMPARE(panels[std::size_t(ss * 8 + fs)], ss < 6 ? 0 : 1);
        QVERIFY(std::fabs(radius[std::size_t(ss * 8 + fs)] - std::hypot(x, y)) < 1e-5);
      }
    // The beam moved: radii from it.
    const std::vector<float> moved = radius_map(g, 1.0, -2.0);
    QVERIFY(std::fabs(moved[0] - std::hypot(-3.5 - 1.0, 2.5 + 2.0)) < 1e-5);

    const std::vector<peaks::Asic> asics = panel_asics(g);
    QCOMPARE(asics.size(), std::size_t(2));
    QCOMPARE(asics[0].first_ss, 0);
    QCOMPARE(asics[0].first_fs, 0);
    QCOMPARE(asics[0].height, 6);
    QCOMPARE(asics[0].width, 8);
    QCOMPARE(asics[0].segment, 0);
    QCOMPARE(asics[1].first_ss, 6);
    QCOMPARE(asics[1].first_fs, 0);
    QCOMPARE(asics[1].height, 6);
    QCOMPARE(asics[1].width, 8);
    QCOMPARE(asics[1].segment, 1);

    // Bad: fs 0-1, ss 6-7 (badcorner, slab coordinates, inclusive) and the top panel's pixels
    // whose outer corner (x = -4 + fs, y = 2 + ss) lies in x [-1, 1], y [2, 3]: fs 3-5, ss 0-1.
    const std::vector<std::uint8_t> bad = bad_mask(g);
    QCOMPARE(bad.size(), std::size_t(96));
    for (int ss = 0; ss < 12; ++ss)
      for (int fs = 0; fs < 8; ++fs) {
        const bool expected = (fs <= 1 && ss >= 6 && ss <= 7) || (fs >= 3 && fs <= 5 && ss <= 1);
        QVERIFY2((bad[std::size_t(ss * 8 + fs)] != 0) == expected,
                 qPrintable(QString("fs %1 ss %2").arg(fs).arg(ss)));
      }
  }

  void epix_module_parsed() {
    const Geometry g = parse_geometry(kEpixModule, "epix.geom");
    QCOMPARE(g.panels.size(), std::size_t(4));
    QCOMPARE(g.slab_height, 352);
    QCOMPARE(g.slab_width, 384);
    QCOMPARE(g.clen, std::string("/LCLS/detector_1/EncoderValue mm"));
    QCOMPARE(g.panels[3].fs.z, 0.001);
    QCOMPARE(g.panels[3].clen, std::string("/LCLS/detector_1/EncoderValue mm"));
    // flag_morethan and max_adu are CrystFEL's but unused here: warnings with their lines.
    QCOMPARE(g.warnings.size(), std::size_t(2));
    QVERIFY(g.warnings[0].find("epix.geom:14:") != std::string::npos);
    QVERIFY(g.warnings[1].find("epix.geom:27:") != std::string::npos);
    QCOMPARE(g.bad_regions.size(), std::size_t(2));
    QVERIFY(g.bad_regions[0].in_slab);
    QCOMPARE(g.bad_regions[0].panel, 0);
    QVERIFY(!g.bad_regions[1].in_slab);
    QCOMPARE(g.bad_regions[1].panel, -1);

    const std::vector<float> radius = radius_map(g);
    const std::vector<std::uint8_t> bad = bad_mask(g);
    const std::vector<peaks::Asic> asics = panel_asics(g);
    QCOMPARE(asics.size(), std::size_t(4));
    std::size_t bad_count = 0, spot_count = 0;
    for (int n = 0; n < 4; ++n) {
      const Expected& e = kEpix[n];
      QCOMPARE(g.panels[std::size_t(n)].name, std::string(e.name));
      QCOMPARE(asics[std::size_t(n)].first_ss, e.min_ss);
      QCOMPARE(asics[std::size_t(n)].first_fs, e.min_fs);
      QCOMPARE(asics[std::size_t(n)].height, e.max_ss - e.min_ss + 1);
      QCOMPARE(asics[std::size_t(n)].width, e.max_fs - e.min_fs + 1);
      QCOMPARE(asics[std::size_t(n)].segment, n);
      for (int ss = e.min_ss; ss <= e.max_ss; ++ss)
        for (int fs = e.min_fs; fs <= e.max_fs; ++fs) {
          const double i = fs - e.min_fs, j = ss - e.min_ss;
          const double x = e.corner_x + (i + 0.5) * e.fsx + (j + 0.5) * e.ssx;
          const double y = e.corner_y + (i + 0.5) * e.fsy + (j + 0.5) * e.ssy;
          const std::size_t p = std::size_t(ss) * 384 + std::size_t(fs);
          if (std::fabs(radius[p] - std::hypot(x, y)) > 1e-3 * std::hypot(x, y) * 1e-3)
            QFAIL(qPrintable(QString("%1 fs %2 ss %3: radius %4, expected %5")
                                 .arg(e.name)
                                 .arg(fs)
                                 .arg(ss)
                                 .arg(radius[p])
                                 .arg(std::hypot(x, y))));
          // The x/y region tests the pixel's outer corner (CrystFEL's convention).
          const double cx = e.corner_x + i * e.fsx + j * e.ssx;
          const double cy = e.corner_y + i * e.fsy + j * e.ssy;
          const bool spot = cx >= -250 && cx <= -240 && cy >= 300 && cy <= 310;
          const bool edge =
              e.edge > 0 && (fs == e.min_fs || fs == e.max_fs || ss == e.min_ss || ss == e.max_ss);
          const bool expected = e.no_index || edge || (n == 0 && fs == 10) || spot;
          if ((bad[p] != 0) != expected)
            QFAIL(qPrintable(
                QString("%1 fs %2 ss %3: bad %4").arg(e.name).arg(fs).arg(ss).arg(bad[p])));
          bad_count += expected;
          spot_count += spot && !e.no_index;
        }
    }
    QVERIFY(spot_count > 50);  // the x/y region really covers pixels of the module
    QVERIFY(bad_count > std::size_t(192 * 176));
  }

  void file_read_and_missing_file_named() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath("two.geom").toStdString();
    std::ofstream(path) << kTwoPanels;
    QCOMPARE(read_geometry(path).panels.size(), std::size_t(2));
    const std::string missing = dir.filePath("missing.geom").toStdString();
    QVERIFY(error_of([&] { read_geometry(missing); }).find("missing.geom") != std::string::npos);
  }

  void unused_and_unknown_keys_warn() {
    std::vector<std::string> lines = panel("p0", 0, 5);
    lines.insert(lines.begin(), "res = 10000");
    lines.push_back("p0/frobnicate = 3");
    lines.push_back("res = 20000");  // a default that no later panel takes
    const Geometry g = parse_geometry(join(lines), "w.geom");
    QCOMPARE(g.warnings.size(), std::size_t(2));
    QVERIFY(g.warnings[0].find("w.geom:10: unknown key 'frobnicate'") != std::string::npos);
    QVERIFY(g.warnings[1].find("w.geom:11:") != std::string::npos);
  }

  void malformed_files_named() {
    // A valid 8 x 6 panel is lines 2-9 after "res = 10000" on line 1; index k of the panel's
    // lines is on line k + 2.
    const std::vector<std::string> head = {"res = 10000"};
    auto one = [&](int k, const std::string& replacement) {
      std::vector<std::string> lines = head;
      std::vector<std::string> p = panel("p0", 0, 5);
      if (replacement.empty())
        p.erase(p.begin() + k);
      else
        p[std::size_t(k)] = replacement;
      lines.insert(lines.end(), p.begin(), p.end());
      return lines;
    };
    auto with = [](std::vector<std::string> a, const std::vector<std::string>& b) {
      a.insert(a.end(), b.begin(), b.end());
      return a;
    };
    const std::vector<std::string> p0 = with(head, panel("p0", 0, 5));
    struct Case {
      std::vector<std::string> lines;
      int line;
      std::string problem;
    };
    const std::vector<Case> cases = {
        {one(0, "p0/min_fs 0"), 2, "expected 'key = value'"},
        {one(1, "p0/max_fs ="), 3, "'p0/max_fs' has no value"},
        {one(2, "p0/min_ss = ten"), 4, "min_ss must be a whole number"},
        {one(4, "p0/fs = +1.0q"), 6, "fs must be a direction"},
        {one(4, "p0/fs = +1.0x +2y -0.5x"), 6, "fs must be a direction"},
        {one(5, "p0/ss = -2.0x"), 7, "directions are parallel"},
        {one(4, "p0/fs = 0x"), 6, "fs direction is zero"},
        {one(4, "p0/fs = +1.0z"), 7, "span no area across the beam"},
        {one(7, ""), 2, "panel 'p0' has no corner_y"},
        {one(0, "p0/min_fs = 9"), 3, "max_fs 7 is below min_fs 9"},
        {with(p0, panel("p1", 5, 10)), 10, "panel 'p1' (fs 0-7, ss 5-10) overlaps panel 'p0'"},
        {with(p0, {"bad1/min_x = 0", "bad1/min_fs = 0"}), 11, "mixes x/y and fs/ss"},
        {with(p0, {"bad1/min_fs = 0", "bad1/max_fs = 1", "bad1/min_ss = 0", "bad1/max_ss = 1",
                   "bad1/panel = nope"}),
         10, "names panel 'nope', which is not defined"},
        {with(p0, {"bad1/min_fs = 0", "bad1/max_fs = 1", "bad1/min_ss = 0", "bad1/max_ss = 6",
                   "bad1/panel = p0"}),
         10, "is outside panel 'p0'"},
        {with(p0, {"bad1/min_x = 0", "bad1/max_x = 1", "bad1/min_y = 0"}), 10,
         "needs min_x, max_x, min_y and max_y"},
        {{"res = 10000", "clen = 0.1"}, 2, "no panels"},
        {with(with(p0, {"data = /other"}), panel("p1", 6, 11)), 11, "livedrp reads one slab"},
        {with({"res = 10000", "dim0 = %", "dim1 = fs", "dim2 = ss"}, panel("p0", 0, 5)), 5,
         "ss before fs"},
        {with({"res = -5"}, panel("p0", 0, 5)), 1, "res (pixels per metre) must be positive"},
        {with(head, {"group_a/min_fs = 0"}), 2, "names starting with 'group'"},
        {with({"clen = 0.1 furlongs"}, panel("p0", 0, 5)), 1, "clen must be a length"},
        {with(p0, {"p0/no_index = maybe"}), 10, "no_index must be 0, 1, true or false"},
        {with(p0, {"p0/mask_bad = 0xZZ"}), 10, "mask_bad must be a bit mask"},
        {{"p0/min_fs = 0"}, 1, "has no max_fs"},
    };
    for (const Case& c : cases) {
      const std::string text = join(c.lines);
      const std::string message = error_of([&] { parse_geometry(text, "bad.geom"); });
      const std::string where = "bad.geom:" + std::to_string(c.line) + ": ";
      QVERIFY2(
          message.find(where) != std::string::npos && message.find(c.problem) != std::string::npos,
          qPrintable(QString("expected '%1...%2', got '%3' for:\n%4")
                         .arg(QString::fromStdString(where), QString::fromStdString(c.problem),
                              QString::fromStdString(message), QString::fromStdString(text))));
    }
  }

 private:
  // An 8 x 6 panel at slab rows min_ss..max_ss: 8 lines.
  static std::vector<std::string> panel(const std::string& name, int min_ss, int max_ss) {
    return {name + "/min_fs = 0",
            name + "/max_fs = 7",
            name + "/min_ss = " + std::to_string(min_ss),
            name + "/max_ss = " + std::to_string(max_ss),
            name + "/fs = +1.0x",
            name + "/ss = +1.0y",
            name + "/corner_x = 0",
            name + "/corner_y = 0"};
  }
};

QTEST_GUILESS_MAIN(TestCrystfelGeometry)
#include "test_crystfel_geometry.moc"
