// The HTML report in a real browser: headless Chromium loads a report of a fake-backend tuning
// run (two devices, failures, re-timing) from a file:// URL with no network, the page's check
// script must find every SVG plot laid out with a non-zero size, and a screenshot must show a
// page that is not blank (coloured plot pixels, not only white and text grey). Skips with a
// visible reason when Chromium is not installed (Debian: apt-get install chromium).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <regex>
#include <set>

#include "ktune/backend.h"
#include "ktune/registry.h"
#include "ktune/report.h"
#include "ktune/strategy.h"
#include "ktune/tuner.h"
#include "tuner/cli_test_util.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> find_chromium() {
  for (const char* name :
       {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}) {
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/bin:/bin";
    std::size_t start = 0;
    while (start <= dirs.size()) {
      const std::size_t end = std::min(dirs.find(':', start), dirs.size());
      const fs::path candidate = fs::path(dirs.substr(start, end - start)) / name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
      start = end + 1;
    }
  }
  return std::nullopt;
}

// Runs argv with stdout to `out` and stderr to `err`; kills its whole process group after
// `timeout`. Returns the exit status, or -1 when it was killed.
int run_process(const std::vector<std::string>& args, const fs::path& out, const fs::path& err,
                std::chrono::seconds timeout) {
  std::vector<char*> argv;
  std::vector<std::string> copy = args;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    FILE* o = std::freopen(out.c_str(), "w", stdout);
    FILE* e = std::freopen(err.c_str(), "w", stderr);
    if (!o || !e) _exit(126);
    execv(argv[0], argv.data());
    _exit(127);
  }
  if (pid < 0) return -2;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<std::string> chromium_args(const std::string& chromium, const fs::path& profile) {
  return {chromium,
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--disable-quic",
          "--no-first-run",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-sync",
          "--disable-dev-shm-usage",
          "--hide-scrollbars",
          "--user-data-dir=" + profile.string()};
}

// --- A PNG reader just good enough for Chromium's screenshots (8-bit RGB/RGBA, no interlace),
// inflating with the system's zlib through dlopen so the test needs no extra link dependency.

struct Image {
  int width = 0, height = 0;
  std::vector<unsigned char> rgb;  // width * height * 3
};

std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         p[3];
}

std::optional<Image> read_png(const std::string& bytes, std::string& why) {
  using Uncompress = int (*)(unsigned char*, unsigned long*, const unsigned char*, unsigned long);
  void* z = dlopen("libz.so.1", RTLD_NOW);
  if (!z) {
    why = "libz.so.1 not found";
    return std::nullopt;
  }
  auto uncompress = reinterpret_cast<Uncompress>(dlsym(z, "uncompress"));
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 8 || std::memcmp(p, "\x89PNG\r\n\x1a\n", 8) != 0) {
    why = "not a PNG";
    return std::nullopt;
  }
  Image img;
  int channels = 0;
  std::string idat;
  for (std::size_t at = 8; at + 12 <= bytes.size();) {
    const std::uint32_t len = be32(p + at);
    const std::string type(bytes.data() + at + 4, 4);
    const unsigned char* data = p + at + 8;
    if (type == "IHDR") {
      img.width = static_cast<int>(be32(data));
      img.height = static_cast<int>(be32(data + 4));
      const int depth = data[8], color = data[9], interlace = data[12];
      channels = color == 2 ? 3 : color == 6 ? 4 : 0;
      if (depth != 8 || channels == 0 || interlace != 0) {
        why = "unsupported PNG layout";
        return std::nullopt;
      }
    } else if (type == "IDAT") {
      idat.append(reinterpret_cast<const char*>(data), len);
    }
    at += 12 + len;
  }
  const std::size_t stride =
      static_cast<std::size_t>(img.width) * static_cast<std::size_t>(channels);
  std::vector<unsigned char> raw((stride + 1) * static_cast<std::size_t>(img.height));
  unsigned long raw_len = raw.size();
  if (!uncompress ||
      uncompress(raw.data(), &raw_len, reinterpret_cast<const unsigned char*>(idat.data()),
                 idat.size()) != 0 ||
      raw_len != raw.size()) {
    why = "inflate failed";
    return std::nullopt;
  }
  // Undo the per-row filters (None, Sub, Up, Average, Paeth).
  std::vector<unsigned char> cur(stride), prev(stride, 0);
  img.rgb.resize(static_cast<std::size_t>(img.width) * static_cast<std::size_t>(img.height) * 3);
  for (int y = 0; y < img.height; ++y) {
    const unsigned char* row = raw.data() + static_cast<std::size_t>(y) * (stride + 1);
    const int filter = row[0];
    for (std::size_t i = 0; i < stride; ++i) {
      const int a =
          i >= static_cast<std::size_t>(channels) ? cur[i - static_cast<std::size_t>(channels)] : 0;
      const int b = prev[i];
      const int c = i >= static_cast<std::size_t>(channels)
                        ? prev[i - static_cast<std::size_t>(channels)]
                        : 0;
      int v = row[1 + i];
      switch (filter) {
        case 1:
          v += a;
          break;
        case 2:
          v += b;
          break;
        case 3:
          v += (a + b) / 2;
          break;
        case 4: {
          const int pp = a + b - c, pa = std::abs(pp - a), pb = std::abs(pp - b),
                    pc = std::abs(pp - c);
          v += (pa <= pb && pa <= pc) ? a : pb <= pc ? b : c;
          break;
        }
        default:
          break;
      }
      cur[i] = static_cast<unsigned char>(v & 0xff);
    }
    for (int x = 0; x < img.width; ++x)
      for (int k = 0; k < 3; ++k)
        img.rgb[(static_cast<std::size_t>(y) * static_cast<std::size_t>(img.width) +
                 static_cast<std::size_t>(x)) *
                    3 +
                static_cast<std::size_t>(k)] = cur[static_cast<std::size_t>(x * channels + k)];
    std::swap(cur, prev);
  }
  return img;
}

// --- The run to report on. ---

class Fake final : public Backend {
 public:
  Fake(std::string name, double scale) : name_(std::move(name)), scale_(scale) {}
  std::string name() const override { return "fake"; }
  DeviceInfo device() const override {
    DeviceInfo d;
    d.name = name_;
    d.arch = "sm_90";
    d.cc_major = 9;
    d.sm_count = 132;
    d.memory_bytes = 80ll << 30;
    return d;
  }
  bool needs_compilation() const override { return false; }
  void prepare(const KernelInstance&, const MeasureOptions&) override {}
  Measurement evaluate(const Config& c, const CompileResult*) override {
    Measurement m;
    if ((c[0] + 2 * c[1]) % 11 == 3) {
      m.status = (c[0] % 2) ? TrialStatus::kWrongResult : TrialStatus::kResourcesExceeded;
      m.error = (c[0] % 2) ? "output differs from the reference"
                           : "launch: too many resources requested for launch";
      return m;
    }
    m.time_ms = time_of(c);
    m.samples_ms = {m.time_ms * 0.99, m.time_ms, m.time_ms * 1.02};
    m.time_min_ms = m.time_ms * 0.99;
    m.time_mean_ms = m.time_ms;
    m.time_spread = 0.02;
    m.registers = 20 + static_cast<int>(c[1]) * 4;
    m.dynamic_shared_bytes = 1024;
    m.occupancy = 0.75;
    return m;
  }
  std::vector<Measurement> retime(const std::vector<RetimeCandidate>& cs, int rounds) override {
    std::vector<Measurement> out;
    for (const auto& c : cs) {
      Measurement m;
      m.time_ms = time_of(c.config);
      m.samples_ms.assign(static_cast<std::size_t>(rounds), m.time_ms);
      out.push_back(m);
    }
    return out;
  }
  double time_of(const Config& c) const {
    double t = scale_;
    for (std::size_t i = 0; i < c.size(); ++i)
      t *= 1.0 + 0.35 * static_cast<double>((c[i] * 7 + i * 3) % 5);
    return t;
  }

 private:
  std::string name_;
  double scale_;
};

fs::path make_report(const fs::path& dir) {
  Registry registry;
  register_builtin_kernels(registry);
  KernelSpec k = registry.get("reduce");
  for (auto& p : k.params)
    if (p.name == "maxrregcount" || p.name == "launch_bounds")
      p.values = {p.values[0]}, p.default_index = 0;
  const KernelInstance instance(k, Problem{{"n", 1 << 24}}, DeviceLimits::for_arch(90));
  {
    Store store = Store::open(dir / "r.db");
    for (const auto& [name, scale, strategy] :
         {std::tuple{"NVIDIA H100", 0.3, "random"}, std::tuple{"NVIDIA H100", 0.3, "brute_force"},
          std::tuple{"NVIDIA H200", 0.25, "random"}}) {
      Fake backend(name, scale);
      auto s = make_strategy(strategy);
      TuneOptions options;
      options.strategy = strategy;
      options.budget.evaluations = 150;
      options.reuse = false;
      tune(instance, backend, store, *s, options, nullptr);
    }
  }
  Store store = Store::open(dir / "r.db", Store::Mode::kReadOnly);
  ReportOptions options;
  options.database = "r.db";
  const fs::path html = dir / "report.html";
  test::write_file(html, render_html(build_report(store, {}, options)));
  return html;
}

TEST(ReportInChromium, RendersEveryPlotAndAScreenshotThatIsNotBlank) {
  const auto chromium = find_chromium();
  if (!chromium)
    GTEST_SKIP()
        << "chromium is not installed (Debian: apt-get install chromium); the HTML report was not "
           "opened in a browser";
  test::TempDir dir;
  const fs::path html = make_report(dir.path());
  const std::string page = test::read_file(html);
  std::size_t plots = 0;
  for (std::size_t at = 0; (at = page.find("<svg class=\"plot\"", at)) != std::string::npos; ++at)
    ++plots;
  ASSERT_GT(plots, 5u);

  // After load, the page's own check counts the plots laid out with a size.
  auto args = chromium_args(*chromium, dir / "profile-dom");
  args.push_back("--virtual-time-budget=5000");
  args.push_back("--dump-dom");
  args.push_back("file://" + html.string());
  const int dom_rc =
      run_process(args, dir / "dom.html", dir / "dom.err", std::chrono::seconds(120));
  const std::string dom = test::read_file(dir / "dom.html");
  ASSERT_EQ(dom_rc, 0) << "chromium --dump-dom failed; stderr:\n"
                       << test::read_file(dir / "dom.err");
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(dom, m, std::regex("data-plots=\"(\\d+)\" data-rendered=\"(\\d+)\"")))
      << "no render-check marker in the DOM; stderr:\n"
      << test::read_file(dir / "dom.err") << "\nDOM tail:\n"
      << dom.substr(dom.size() > 2000 ? dom.size() - 2000 : 0);
  EXPECT_EQ(std::stoul(m[1].str()), plots);
  EXPECT_EQ(std::stoul(m[2].str()), plots) << "some plots were laid out with no size";

  // A screenshot of the top of the page: header, tables and the convergence plots.
  args = chromium_args(*chromium, dir / "profile-shot");
  args.push_back("--window-size=1280,1600");
  args.push_back("--screenshot=" + (dir / "shot.png").string());
  args.push_back("file://" + html.string());
  const int shot_rc =
      run_process(args, dir / "shot.out", dir / "shot.err", std::chrono::seconds(120));
  ASSERT_EQ(shot_rc, 0) << "chromium --screenshot failed; stderr:\n"
                        << test::read_file(dir / "shot.err");
  std::string why;
  const auto img = read_png(test::read_file(dir / "shot.png"), why);
  if (!img) GTEST_SKIP() << "screenshot taken but not checked: " << why;
  EXPECT_EQ(img->width, 1280);
  EXPECT_EQ(img->height, 1600);
  std::size_t not_white = 0, coloured = 0;
  std::set<std::uint32_t> colours;
  for (std::size_t i = 0; i + 2 < img->rgb.size(); i += 3) {
    const int r = img->rgb[i], g = img->rgb[i + 1], b = img->rgb[i + 2];
    if (std::min({r, g, b}) < 235) ++not_white;
    if (std::max({r, g, b}) - std::min({r, g, b}) > 60) ++coloured;  // plot colours, not text grey
    colours.insert(static_cast<std::uint32_t>((r >> 4) << 8 | (g >> 4) << 4 | (b >> 4)));
  }
  const double pixels = static_cast<double>(img->width) * img->height;
  EXPECT_GT(not_white / pixels, 0.05) << "the screenshot is almost blank";
  EXPECT_GT(coloured, 2000u) << "no coloured plot pixels in the screenshot";
  EXPECT_GT(colours.size(), 50u);
}

}  // namespace
}  // namespace ktune
