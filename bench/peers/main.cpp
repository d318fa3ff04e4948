// ktune_peers: times ktune's tuned kernels beside the libraries people use, in one process, on
// the same buffers, each side alone after a sustained load (bench/peers/README.md). A benchmark: it
// prints ratios and writes JSON; it passes or fails on nothing but errors.
#include <fmt/format.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ceilings.h"
#include "ktune/compiler.h"
#include "ktune/device.h"
#include "ktune/error.h"
#include "ktune/gpu_evaluator.h"
#include "ktune/registry.h"
#include "ktune/store.h"
#include "ktune/tuner.h"
#include "peers.h"

namespace po = boost::program_options;
using json = nlohmann::ordered_json;

namespace ktune {
namespace {

enum class Peer { kMemcpy, kCub, kSgeam, kSgemm, kSgemmTf32 };

// The device limit a case is measured against (README.md, "Ceilings").
enum class Ceiling { kRead, kCopy, kFma };

struct Case {
  std::string label;   // row name
  std::string kernel;  // ktune kernel
  Problem problem;
  Peer peer;
  std::string peer_name;
  std::optional<double> target;  // ratio ktune speed / peer speed the issue asks for
  Ceiling ceiling;
  std::optional<double> ceiling_target;  // fraction of the ceiling asked for
};

Case reduce_case(int log2_n, std::optional<double> target, std::optional<double> ceiling_target) {
  return {fmt::format("reduce int32 2^{}", log2_n),
          "reduce",
          {{"n", std::int64_t{1} << log2_n}},
          Peer::kCub,
          "CUB DeviceReduce::Sum",
          target,
          Ceiling::kRead,
          ceiling_target};
}

// fp32 SGEMM without tensor cores against cuBLAS in pedantic fp32 (target 0.92), or a TF32
// tensor-core kernel (mma.sync, or wgmma on sm_90) against cuBLAS in TF32 (target 0.7).
Case matmul_case(const std::string& kernel, std::int64_t size) {
  const bool tf32 = kernel.starts_with("matmul_tf32");
  return {fmt::format("{} {}^3 {}", kernel, size, tf32 ? "tf32" : "fp32"),
          kernel,
          {{"m", size}, {"n", size}, {"k", size}},
          tf32 ? Peer::kSgemmTf32 : Peer::kSgemm,
          tf32 ? "cublasGemmEx (TF32 tensor cores)" : "cublasSgemm (pedantic fp32)",
          tf32 ? 0.7 : 0.92,
          Ceiling::kFma,
          std::nullopt};
}

std::vector<Case> all_cases() {
  const std::int64_t n28 = std::int64_t{1} << 28;
  return {
      {"copy 2^28 fp32",
       "copy",
       {{"n", n28}},
       Peer::kMemcpy,
       "cudaMemcpy D2D",
       0.98,
       Ceiling::kCopy,
       std::nullopt},
      reduce_case(28, 1.0, 0.97),
      reduce_case(25, 1.0, 0.90),
      reduce_case(22, std::nullopt, std::nullopt),
      reduce_case(20, std::nullopt, std::nullopt),
      {"transpose 8192^2 fp32",
       "transpose",
       {{"rows", 8192}, {"cols", 8192}},
       Peer::kSgeam,
       "cublasSgeam",
       1.0,
       Ceiling::kCopy,
       std::nullopt},
      matmul_case("matmul", 4096),
      matmul_case("matmul", 8192),
      matmul_case("matmul_tf32", 4096),
      matmul_case("matmul_tf32", 8192),
      matmul_case("matmul_tf32_wgmma", 4096),  // sm_90 alone
      matmul_case("matmul_tf32_wgmma", 8192),
      matmul_case("matmul_tf32_tma", 4096),  // sm_90 alone
      matmul_case("matmul_tf32_tma", 8192),
      {"stencil3d 512^3 fp32",
       "stencil3d",
       {{"nx", 512}, {"ny", 512}, {"nz", 512}},
       Peer::kMemcpy,
       "cudaMemcpy D2D of the grid",
       0.85,
       Ceiling::kCopy,
       0.93},
      {"convolution2d 4096^2 f=15",
       "convolution2d",
       {{"h", 4096}, {"w", 4096}, {"f", 15}},
       Peer::kMemcpy,
       "cudaMemcpy D2D of the image",
       std::nullopt,
       Ceiling::kFma,
       0.6},
  };
}

double median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

void check(const std::string& error) {
  if (!error.empty()) throw Error(ErrorKind::kDevice, error);
}

// The configuration to time: the database's fastest best for this kernel, problem and device
// (runs over differently narrowed spaces keep one each); else the newest best of the kernel on this
// device for another problem that is valid here (a matmul tuned at 4096 timed at 8192); else the
// kernel's default (each said so in the output).
struct Chosen {
  Config config;
  std::string source;  // "stored best (trial N)" or "default (no stored best)"
  double stored_ms = std::nan("");
};

Chosen choose(const KernelInstance& inst, const DeviceInfo& dev, const Store* store) {
  Chosen c{inst.space().default_config(), "default (no stored best)"};
  if (!store) return c;
  std::optional<BestRecord> pick;
  for (const BestRecord& b : store->bests(inst.kernel().name)) {
    if (b.problem_key != inst.problem_key() || b.device.name != dev.name ||
        b.device.arch != dev.arch)
      continue;
    // Runs over differently narrowed spaces (job files) each keep a best: the fastest is
    // ktune's answer for this problem.
    if (!pick || b.trial.time_ms < pick->trial.time_ms) pick = b;
  }
  if (!pick) {
    // The problem most recently tuned on this device whose bests are valid here, its fastest.
    std::vector<BestRecord> usable;
    for (const BestRecord& b : store->bests(inst.kernel().name)) {
      if (b.device.name != dev.name || b.device.arch != dev.arch) continue;
      try {
        if (!inst.space().is_valid(inst.space().parse_key(b.trial.config_key))) continue;
      } catch (const Error&) {
        continue;  // a key of another version of the space
      }
      usable.push_back(b);
    }
    for (const BestRecord& b : usable)
      if (!pick || b.updated_at > pick->updated_at) pick = b;
    if (!pick) return c;
    const std::string problem = pick->problem_key;
    for (const BestRecord& b : usable)
      if (b.problem_key == problem && b.trial.time_ms < pick->trial.time_ms) pick = b;
    c.config = inst.space().parse_key(pick->trial.config_key);
    c.source = fmt::format("stored best for {} (trial {})", pick->problem_key, pick->trial_id);
    return c;  // its stored time is of another problem
  }
  c.config = inst.space().parse_key(pick->trial.config_key);
  c.source = fmt::format("stored best (trial {})", pick->trial_id);
  c.stored_ms = pick->trial.time_ms;
  return c;
}

struct PeerRun {
  std::function<std::string()> launch;
  // Compares the peer's output with ktune's verified output; returns "" or what differs.
  std::function<std::string()> check;
  std::string version;
};

template <typename T>
std::vector<T> to_host(const void* device, std::size_t count) {
  std::vector<T> v(count);
  if (!peers::copy_to_host(v.data(), device, count * sizeof(T)))
    throw Error(ErrorKind::kDevice, "copy to host failed");
  return v;
}

std::string compare_floats(const std::vector<float>& got, const std::vector<float>& want,
                           double rel, double abs_tol) {
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = std::abs(double(got[i]) - double(want[i]));
    if (!(d <= abs_tol + rel * std::abs(double(want[i])))) {
      if (bad++ == 0) first = i;
    }
  }
  if (bad == 0) return {};
  return fmt::format("{} of {} elements differ (first at {}: peer {} vs ktune {})", bad, got.size(),
                     first, got[first], want[first]);
}

struct Row {
  Case c;
  std::string config_key, source, error, peer_error;
  double ktune_ms = std::nan(""), peer_ms = std::nan(""), metric = std::nan(""),
         peer_metric = std::nan(""), stored_ms = std::nan("");
  std::string unit;
  std::vector<double> ktune_rounds, peer_rounds;
  // NVML's lowest SM clock while each of ktune's rounds ran, and the device's highest (-1: no NVML)
  std::vector<int> ktune_sm_mhz;
  int max_sm_mhz = -1;
  double gflops = std::nan("");  // the kernel's FLOPs per second, where it counts them
  // matmul: the error against the product in double of sampled elements, ktune's and the peer's
  double max_error = std::nan(""), rms_error = std::nan("");
  double peer_max_error = std::nan(""), peer_rms_error = std::nan("");
  int samples_differing = -1;      // sampled elements where ktune's and the peer's C differ
  double fraction = std::nan("");  // of the case's ceiling
  // Read rows smaller than the ceiling's 1 GiB: the read kernel's bandwidth over the row's bytes
  double read_at_size = std::nan("");           // GB/s
  double read_at_size_fraction = std::nan("");  // of the read ceiling
  std::string read_at_size_best;
  double ratio() const { return peer_ms / ktune_ms; }
};

const char* ceiling_name(Ceiling c) {
  switch (c) {
    case Ceiling::kRead:
      return "read";
    case Ceiling::kCopy:
      return "copy";
    case Ceiling::kFma:
      return "fma";
  }
  return "";
}

// The row's rate over its ceiling's: bytes per second over the read or copy bandwidth, FLOPs per
// second over the FMA peak.
double fraction_of_ceiling(const Row& r, const peers::Ceilings& ceilings) {
  switch (r.c.ceiling) {
    case Ceiling::kRead:
      return r.unit == "GB/s" ? r.metric / ceilings.read.rate : std::nan("");
    case Ceiling::kCopy:
      return r.unit == "GB/s" ? r.metric / ceilings.copy.rate : std::nan("");
    case Ceiling::kFma:
      return r.gflops / ceilings.fma.rate;
  }
  return std::nan("");
}

// The peer, on ktune's own buffers: inputs as ktune generated them, its own output. Holds what
// the peer allocated for as long as it runs.
struct PeerSetup {
  PeerRun peer;
  std::vector<std::shared_ptr<void>> owned;
  std::shared_ptr<peers::CubSum> cub;
  std::shared_ptr<peers::Blas> blas;
  double peer_work = 0;
  const float* peer_output = nullptr;  // matmul: the peer's C, for the accuracy figures

  void* alloc(std::size_t bytes) {
    void* p = peers::device_alloc(bytes);
    if (!p) throw Error(ErrorKind::kDevice, fmt::format("cudaMalloc of {} bytes failed", bytes));
    owned.emplace_back(p, peers::device_free);
    return p;
  }
};

void set_up_memcpy(const Case& c, const GpuEvaluator& ev, PeerSetup& s) {
  std::size_t count = 0;
  const std::string in_name = c.kernel == "convolution2d" ? "image" : "in";
  void* in = ev.buffer(in_name, &count);
  const std::size_t bytes = count * 4;
  void* out = s.alloc(bytes);
  s.peer.launch = [=] { return peers::memcpy_d2d(out, in, bytes); };
  s.peer_work = 2.0 * double(bytes);  // read and written, as copy's own metric counts
  if (c.kernel == "copy") {
    s.peer.check = [=] {
      return compare_floats(to_host<float>(out, count), to_host<float>(in, count), 0, 0);
    };
  }
  s.peer.version = "CUDA runtime";
}

void set_up_cub(const GpuEvaluator& ev, PeerSetup& s) {
  std::size_t count = 0;
  auto* in = static_cast<const std::int32_t*>(ev.buffer("in", &count));
  auto* out = static_cast<std::int32_t*>(s.alloc(sizeof(std::int32_t)));
  s.cub = std::make_shared<peers::CubSum>(in, out, static_cast<std::int64_t>(count));
  check(s.cub->error());
  s.peer.launch = [cub = s.cub] { return cub->run(); };
  s.peer.check = [&ev, out] {
    std::size_t one = 0;
    const auto want = to_host<std::int32_t>(ev.buffer("out", &one), 1);
    const auto got = to_host<std::int32_t>(out, 1);
    return got[0] == want[0] ? std::string()
                             : fmt::format("CUB sum {} vs ktune {}", got[0], want[0]);
  };
  s.peer.version = "CUB (CUDA toolkit)";
}

void set_up_sgeam(const Case& c, const GpuEvaluator& ev, PeerSetup& s) {
  std::size_t count = 0;
  const int rows = int(c.problem.at("rows")), cols = int(c.problem.at("cols"));
  auto* in = static_cast<const float*>(ev.buffer("in", &count));
  auto* out = static_cast<float*>(s.alloc(count * 4));
  s.blas = std::make_shared<peers::Blas>();
  check(s.blas->error());
  s.peer.launch = [=, blas = s.blas] { return blas->transpose(in, out, rows, cols); };
  s.peer.check = [&ev, out, count] {
    std::size_t n = 0;
    return compare_floats(to_host<float>(out, count), to_host<float>(ev.buffer("out", &n), count),
                          0, 0);
  };
  s.peer.version = "cuBLAS " + s.blas->version();
}

void set_up_sgemm(const Case& c, const GpuEvaluator& ev, PeerSetup& s, bool tf32) {
  const int mm = int(c.problem.at("m")), nn = int(c.problem.at("n")), kk = int(c.problem.at("k"));
  std::size_t na = 0, nb = 0;
  auto* a = static_cast<const float*>(ev.buffer("a", &na));
  auto* b = static_cast<const float*>(ev.buffer("b", &nb));
  const std::size_t count = std::size_t(mm) * std::size_t(nn);
  auto* out = static_cast<float*>(s.alloc(count * 4));
  s.blas = std::make_shared<peers::Blas>(tf32);
  check(s.blas->error());
  if (tf32)
    s.peer.launch = [=, blas = s.blas] { return blas->sgemm_tf32(a, b, out, mm, nn, kk); };
  else
    s.peer.launch = [=, blas = s.blas] { return blas->sgemm(a, b, out, mm, nn, kk); };
  // fp32: both sum the products in fp32, in different orders: as close as the kernel's own
  // check. TF32: both round the inputs; within the kernel's TF32 tolerance.
  s.peer.check = [&ev, out, count, tf32] {
    std::size_t n = 0;
    return compare_floats(to_host<float>(out, count), to_host<float>(ev.buffer("c", &n), count),
                          tf32 ? 1e-3 : 1e-4, tf32 ? 0.1 : 5e-3);
  };
  s.peer_output = out;
  s.peer.version = "cuBLAS " + s.blas->version();
}

// The error of C against the product in double, over 4096 elements sampled evenly from rows and
// columns (each a k-long dot product on the host), for ktune's output and the peer's.
void sampled_errors(const Case& c, const GpuEvaluator& ev, const float* peer_c, Row& row) {
  const std::int64_t m = c.problem.at("m"), n = c.problem.at("n"), k = c.problem.at("k");
  std::size_t count = 0;
  const auto a = to_host<float>(ev.buffer("a", &count), std::size_t(m * k));
  const auto b = to_host<float>(ev.buffer("b", &count), std::size_t(k * n));
  const auto got = to_host<float>(ev.buffer("c", &count), std::size_t(m * n));
  const auto peer = to_host<float>(peer_c, std::size_t(m * n));
  double max_k = 0, sq_k = 0, max_p = 0, sq_p = 0;
  int differing = 0;
  constexpr int kSamples = 4096;
  std::uint64_t state = 0x9e3779b97f4a7c15ull;
  for (int s = 0; s < kSamples; ++s) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const std::int64_t i = std::int64_t((state >> 33) % std::uint64_t(m));
    const std::int64_t j = std::int64_t((state >> 13) % std::uint64_t(n));
    double exact = 0;
    for (std::int64_t q = 0; q < k; ++q) exact += double(a[i * k + q]) * double(b[q * n + j]);
    differing += got[i * n + j] != peer[i * n + j];
    const double ek = std::abs(double(got[i * n + j]) - exact);
    const double ep = std::abs(double(peer[i * n + j]) - exact);
    max_k = std::max(max_k, ek);
    max_p = std::max(max_p, ep);
    sq_k += ek * ek;
    sq_p += ep * ep;
  }
  row.max_error = max_k;
  row.rms_error = std::sqrt(sq_k / kSamples);
  row.peer_max_error = max_p;
  row.peer_rms_error = std::sqrt(sq_p / kSamples);
  row.samples_differing = differing;
}

// `work` is what ktune's metric counts; a memcpy peer counts its own bytes instead.
void set_up_peer(const Case& c, const GpuEvaluator& ev, double work, PeerSetup& s) {
  s.peer_work = work;
  switch (c.peer) {
    case Peer::kMemcpy:
      set_up_memcpy(c, ev, s);
      break;
    case Peer::kCub:
      set_up_cub(ev, s);
      break;
    case Peer::kSgeam:
      set_up_sgeam(c, ev, s);
      break;
    case Peer::kSgemm:
    case Peer::kSgemmTf32:
      set_up_sgemm(c, ev, s, c.peer == Peer::kSgemmTf32);
      break;
  }
}

// How each row is timed: rounds x samples per side, each side after a sustained load.
struct Timing {
  int rounds = 7;
  int samples = 20;
  double sustain_ms = 100;
};

double time_peer(const PeerRun& peer, peers::EventTimer& timer, int samples) {
  for (int w = 0; w < 3; ++w) check(peer.launch());
  check(peers::last_error());
  std::string error;
  const std::vector<double> s = timer.time(peer.launch, samples, error);
  check(error);
  return median(s);
}

// Calls `round` (one timed round of one side, returning its time) in windows of window_ms of
// wall time until the window's median has settled by the rule of the tuner's final re-timing
// (ktune tune --sustain, sustain_settled): the side's state under a sustained load.
void sustain(const std::function<double()>& round, double window_ms) {
  if (window_ms <= 0) return;
  SustainWindow before{{std::nan("")}, -1};
  for (int w = 0; w < MeasureOptions::kSustainWindows; ++w) {
    std::vector<double> times;
    const auto t0 = std::chrono::steady_clock::now();
    do {
      times.push_back(round());
    } while (
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() <
        window_ms);
    SustainWindow now{{median(times)}, -1};
    if (sustain_settled(before, now)) return;
    before = std::move(now);
  }
}

// Times ktune and the peer, `rounds` rounds each, into the row; false (the row's error said)
// when either fails. Each side runs alone, after its own sustained load, in blocks ordered
// ktune, peer, peer, ktune (a drift of the GPU over the row cancels). Not round by round: a
// kernel at the GPU's power limit runs at the clock the load before it left, so interleaved
// with cuBLAS a TF32 kernel ran 7-10% slower (SM clock 1470-1770 MHz) than alone after a
// sustained load (1815 MHz), and interleaved rounds made each side's time depend on the
// other's power draw.
bool time_rounds(GpuEvaluator& ev, const Config& config, const CompileResult& compiled,
                 const PeerRun& peer, const Timing& timing, Row& row) {
  peers::EventTimer timer;
  const auto ktune_once = [&] {
    const Measurement meas = ev.evaluate(config, compiled);
    if (meas.status != TrialStatus::kOk)
      throw Error(ErrorKind::kDevice, fmt::format("{}: {}", to_string(meas.status), meas.error));
    return meas;
  };
  const std::function<double()> ktune_round = [&] { return ktune_once().time_ms; };
  const std::function<double()> peer_round = [&] { return time_peer(peer, timer, timing.samples); };
  const int first = (timing.rounds + 1) / 2, second = timing.rounds - first;
  try {
    for (int block = 0; block < 4; ++block) {
      const bool ktune_side = block == 0 || block == 3;
      const int n = block < 2 ? first : second;
      if (n == 0) continue;
      sustain(ktune_side ? ktune_round : peer_round, timing.sustain_ms);
      for (int r = 0; r < n; ++r) {
        if (!ktune_side) {
          row.peer_rounds.push_back(peer_round());
          continue;
        }
        const Measurement meas = ktune_once();
        row.ktune_rounds.push_back(meas.time_ms);
        if (meas.sm_clock_mhz > 0) row.ktune_sm_mhz.push_back(meas.sm_clock_mhz);
        row.max_sm_mhz = std::max(row.max_sm_mhz, meas.max_sm_clock_mhz);
      }
    }
  } catch (const Error& e) {
    row.error = e.what();
    return false;
  }
  return true;
}

Row run_case(const Case& c, const Registry& registry, const DeviceInfo& dev, const Store* store,
             const peers::Ceilings& ceilings, const Timing& timing) {
  Row row{c};
  const KernelSpec& spec = registry.get(c.kernel);
  MeasureOptions m;
  m.samples = timing.samples;
  m.warmup = 3;
  m.flush_l2 = ktune::FlushL2::kNever;  // every case's buffers are far larger than the L2; peers
                                        // run the same way

  GpuEvaluator ev(spec, c.problem, dev.ordinal, m);  // compiles a reference configuration itself
  const KernelInstance& inst = ev.instance();
  const Chosen chosen = choose(inst, dev, store);
  row.config_key = inst.space().key(chosen.config);
  row.source = chosen.source;
  row.stored_ms = chosen.stored_ms;
  const CompileResult compiled = compile(render(inst, chosen.config, dev.arch));
  if (!compiled.ok) {
    row.error = "does not compile: " + compiled.error;
    return row;
  }
  const bool gflops = !std::isnan(inst.flops(chosen.config)) && c.kernel.starts_with("matmul");
  row.unit = gflops ? "GFLOP/s" : "GB/s";
  const double work = gflops ? inst.flops(chosen.config) : inst.bytes(chosen.config);

  PeerSetup setup;
  set_up_peer(c, ev, work, setup);
  const PeerRun& peer = setup.peer;
  if (!time_rounds(ev, chosen.config, compiled, peer, timing, row)) return row;
  if (peer.check) {
    try {
      row.peer_error = peer.check();
    } catch (const Error& e) {
      row.peer_error = e.what();
    }
  }
  if (setup.peer_output) sampled_errors(c, ev, setup.peer_output, row);
  row.ktune_ms = median(row.ktune_rounds);
  row.peer_ms = median(row.peer_rounds);
  row.metric = work / (row.ktune_ms * 1e6);
  row.peer_metric = (c.peer == Peer::kMemcpy ? setup.peer_work : work) / (row.peer_ms * 1e6);
  row.gflops = inst.flops(chosen.config) / (row.ktune_ms * 1e6);
  row.fraction = fraction_of_ceiling(row, ceilings);
  // A read below the ceiling's size pays the launch, ramp-up and tail on fewer bytes; the read
  // kernel over the same bytes says what that costs the machine's own streaming read.
  const std::size_t bytes = static_cast<std::size_t>(work) / 16 * 16;
  if (c.ceiling == Ceiling::kRead && row.unit == "GB/s" && bytes > 0 &&
      bytes < (std::size_t{1} << 30)) {
    const peers::CeilingFigure at =
        peers::measure_read(dev.sm_count, bytes, timing.rounds, timing.samples);
    row.read_at_size = at.rate;
    row.read_at_size_fraction = at.rate / ceilings.read.rate;
    row.read_at_size_best = at.best;
  }
  return row;
}

std::string fmt_num(double v, int digits) {
  return std::isnan(v) ? std::string("-") : fmt::format("{:.{}f}", v, digits);
}

po::options_description peer_options() {
  po::options_description opts("ktune_peers [options]");
  opts.add_options()("help,h", "this help")(
      "db", po::value<std::string>(),
      "ktune results database with the stored bests (default: kernel defaults)")(
      "device", po::value<int>()->default_value(0), "CUDA device ordinal")(
      "rounds", po::value<int>()->default_value(7),
      "timed rounds per side, in two blocks each (ktune, peer, peer, ktune)")(
      "samples", po::value<int>()->default_value(20), "timed runs per round and side")(
      "sustain", po::value<double>()->default_value(100),
      "each side runs in windows of this many milliseconds before its rounds, until its time "
      "settles (a sustained load, as ktune tune --sustain; 0: none)")(
      "only", po::value<std::string>(),
      "comma-separated kernels (copy,reduce,transpose,matmul,matmul_tf32,matmul_tf32_wgmma,"
      "matmul_tf32_tma,stencil3d,convolution2d)")("json", po::value<std::string>(),
                                                  "write the results as JSON here")(
      "store-ceilings",
      "store the measured ceilings in --db for this device, where ktune tune --stop-at-ceiling "
      "reads them (opens --db for writing)")("ceilings-only",
                                             "measure the ceilings and time no kernel");
  return opts;
}

std::vector<Case> selected_cases(const po::variables_map& vm) {
  std::vector<Case> cases = all_cases();
  if (vm.count("only")) {
    const std::string only = "," + vm["only"].as<std::string>() + ",";
    std::erase_if(
        cases, [&](const Case& c) { return only.find("," + c.kernel + ",") == std::string::npos; });
    if (cases.empty())
      throw Error(ErrorKind::kUsage, "--only names none of the benchmark's kernels");
  }
  return cases;
}

// Runs every case, saying each on stderr as it goes; a case that fails becomes a row with its
// error.
std::vector<Row> run_cases(const std::vector<Case>& cases, const Registry& registry,
                           const DeviceInfo& dev, const Store* store,
                           const peers::Ceilings& ceilings, const Timing& timing) {
  std::vector<Row> rows;
  for (const Case& c : cases) {
    std::cerr << "  " << c.label << " ..." << std::endl;
    try {
      rows.push_back(run_case(c, registry, dev, store, ceilings, timing));
    } catch (const Error& e) {
      Row r{c};
      r.error = e.what();
      rows.push_back(r);
    }
    const Row& r = rows.back();
    std::cerr << fmt::format("    {} [{}]: ktune {} ms, peer {} ms{}\n", r.config_key, r.source,
                             fmt_num(r.ktune_ms, 4), fmt_num(r.peer_ms, 4),
                             r.error.empty() ? "" : "  ERROR " + r.error);
  }
  return rows;
}

// "met", "MISSED" or "" (no target) for a figure against its target.
std::string verdict(bool ok, double figure, const std::optional<double>& target) {
  if (!ok) return "error";
  if (!target) return "";
  return figure >= *target ? "met" : "MISSED";
}

void print_row(const Row& r, bool ok, double ratio) {
  const double fraction = ok ? r.fraction : std::nan("");
  std::cout << fmt::format(
      "{:<28} {:<34} {:>10} {:>10} {:>12} {:>12} {:>7} {:>7} {:>6} {:>7} {:>7}  {} [{}] {} {}\n",
      r.c.label, r.c.peer_name, fmt_num(r.ktune_ms, 4), fmt_num(r.peer_ms, 4),
      fmt_num(r.metric, 1) + " " + (r.unit == "GB/s" ? "GB" : "GF"),
      fmt_num(r.peer_metric, 1) + " " + (r.unit == "GB/s" ? "GB" : "GF"), fmt_num(ratio, 3),
      r.c.target ? fmt_num(*r.c.target, 2) : "-", ceiling_name(r.c.ceiling), fmt_num(fraction, 3),
      r.c.ceiling_target ? fmt_num(*r.c.ceiling_target, 2) : "-", r.config_key, r.source,
      verdict(ok, ratio, r.c.target), verdict(ok, fraction, r.c.ceiling_target));
  if (std::isfinite(r.stored_ms) && std::isfinite(r.ktune_ms) && r.ktune_ms > 0) {
    // The stored best's time against this run's: they must agree within 1%.
    const double off = r.stored_ms / r.ktune_ms - 1;
    std::cout << fmt::format("    stored {} ms, {:+.1f}% from this run's{}\n",
                             fmt_num(r.stored_ms, 4), 100 * off,
                             std::abs(off) > 0.01 ? "  (more than 1% apart)" : "");
  }
  if (std::isfinite(r.max_error))
    std::cout << fmt::format(
        "    error against double (4096 sampled elements): ktune max {:.2e} rms {:.2e}, peer max "
        "{:.2e} rms {:.2e}; the two differ in {} of them\n",
        r.max_error, r.rms_error, r.peer_max_error, r.peer_rms_error, r.samples_differing);
  if (!r.ktune_sm_mhz.empty()) {
    // Under a sustained load a kernel at the GPU's power limit runs below the boost clock.
    const auto [lo, hi] = std::minmax_element(r.ktune_sm_mhz.begin(), r.ktune_sm_mhz.end());
    std::cout << fmt::format("    SM clock under ktune's rounds: {}-{} MHz (highest {} MHz)\n", *lo,
                             *hi, r.max_sm_mhz);
  }
  if (std::isfinite(r.read_at_size) && ok)
    std::cout << fmt::format(
        "    the read kernel over the same bytes: {:.1f} GB/s ({:.3f} of the ceiling, {}); the "
        "row reaches {:.3f} of it\n",
        r.read_at_size, r.read_at_size_fraction, r.read_at_size_best, r.metric / r.read_at_size);
  if (!r.error.empty()) std::cout << "    error: " << r.error << "\n";
  if (!r.peer_error.empty()) std::cout << "    peer output differs: " << r.peer_error << "\n";
}

json row_json(const Row& r, double ratio) {
  json j;
  j["case"] = r.c.label;
  j["kernel"] = r.c.kernel;
  j["problem"] = r.c.problem;
  j["peer"] = r.c.peer_name;
  j["config"] = r.config_key;
  j["config_source"] = r.source;
  j["unit"] = r.unit;
  j["ktune_ms"] = r.ktune_ms;
  j["peer_ms"] = r.peer_ms;
  j["ktune_rate"] = r.metric;
  j["peer_rate"] = r.peer_metric;
  j["ratio"] = ratio;  // peer time / ktune time: above 1, ktune is faster
  j["target"] = r.c.target ? json(*r.c.target) : json(nullptr);
  j["ceiling"] = ceiling_name(r.c.ceiling);
  j["ktune_gflops"] = r.gflops;
  j["fraction_of_ceiling"] = std::isnan(ratio) ? json(nullptr) : json(r.fraction);
  j["ceiling_target"] = r.c.ceiling_target ? json(*r.c.ceiling_target) : json(nullptr);
  j["ktune_round_ms"] = r.ktune_rounds;
  j["peer_round_ms"] = r.peer_rounds;
  j["stored_ms"] = r.stored_ms;
  j["stored_vs_now"] = r.stored_ms / r.ktune_ms;  // the stored best's time / this run's
  j["ktune_sm_clock_mhz"] = r.ktune_sm_mhz;
  if (std::isfinite(r.read_at_size))
    j["read_at_size"] = {{"rate", r.read_at_size},
                         {"fraction_of_ceiling", r.read_at_size_fraction},
                         {"best", r.read_at_size_best}};
  if (std::isfinite(r.max_error))
    j["error_vs_double"] = {{"ktune_max", r.max_error},
                            {"ktune_rms", r.rms_error},
                            {"peer_max", r.peer_max_error},
                            {"peer_rms", r.peer_rms_error},
                            {"samples_differing", r.samples_differing},
                            {"samples", 4096}};
  j["error"] = r.error;
  j["peer_error"] = r.peer_error;
  return j;
}

// Prints the table of the rows on stdout and returns them as JSON.
void print_ceilings(const peers::Ceilings& c) {
  std::cout << fmt::format(
      "ceilings: read {:.1f} GB/s [{}], copy {:.1f} GB/s [{}], fp32 FMA "
      "{:.2f} TFLOP/s [{}]\n",
      c.read.rate, c.read.best, c.copy.rate, c.copy.best, c.fma.rate / 1000, c.fma.best);
}

json report(const std::vector<Row>& rows, const DeviceInfo& dev, const peers::Ceilings& ceilings,
            const Timing& timing) {
  json out;
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  out["device"] = dev.name;
  out["arch"] = dev.arch;
  out["date"] = date;
  out["rounds"] = timing.rounds;
  out["samples"] = timing.samples;
  out["sustain_ms"] = timing.sustain_ms;
  out["ceilings"] = peers::to_json(ceilings);
  json list = json::array();
  std::cout << "\n";
  print_ceilings(ceilings);
  std::cout << fmt::format(
      "{:<28} {:<34} {:>10} {:>10} {:>12} {:>12} {:>7} {:>7} {:>6} {:>7} "
      "{:>7}  {}\n",
      "case", "peer", "ktune ms", "peer ms", "ktune", "peer", "ratio", "target", "ceil", "of ceil",
      "target", "config");
  for (const Row& r : rows) {
    const bool ok = r.error.empty() && r.peer_error.empty();
    const double ratio = ok ? r.ratio() : std::nan("");
    print_row(r, ok, ratio);
    list.push_back(row_json(r, ratio));
  }
  out["cases"] = list;
  return out;
}

int run(int argc, char** argv) {
  const po::options_description opts = peer_options();
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, opts), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  const Timing timing{vm["rounds"].as<int>(), vm["samples"].as<int>(), vm["sustain"].as<double>()};
  if (timing.rounds < 1 || timing.samples < 1)
    throw Error(ErrorKind::kUsage, "--rounds and --samples must be at least 1");
  if (!std::isfinite(timing.sustain_ms) || timing.sustain_ms < 0)
    throw Error(ErrorKind::kUsage, "--sustain: expected milliseconds of at least 0");
  const DeviceInfo dev = require_device(vm["device"].as<int>());
  const bool store_ceilings = vm.count("store-ceilings") > 0;
  if (store_ceilings && !vm.count("db"))
    throw Error(ErrorKind::kUsage, "--store-ceilings needs the database: --db FILE");
  std::optional<Store> store;
  if (vm.count("db"))
    store.emplace(Store::open(vm["db"].as<std::string>(),
                              store_ceilings ? Store::Mode::kReadWrite : Store::Mode::kReadOnly));
  Registry registry;
  register_builtin_kernels(registry);

  const std::vector<Case> cases =
      vm.count("ceilings-only") ? std::vector<Case>{} : selected_cases(vm);
  std::cerr << fmt::format("ktune_peers on {} ({}), {} rounds x {} samples after {} ms sustained\n",
                           dev.name, dev.arch, timing.rounds, timing.samples, timing.sustain_ms);
  std::cerr << "  ceilings ..." << std::endl;
  const peers::Ceilings ceilings =
      peers::measure_ceilings(dev.sm_count, timing.rounds, timing.samples);
  if (store_ceilings) {
    DeviceCeilings c;
    c.read_gbps = ceilings.read.rate;
    c.copy_gbps = ceilings.copy.rate;
    c.fma_gflops = ceilings.fma.rate;
    c.source = fmt::format("bench/peers ({} rounds x {} samples)", timing.rounds, timing.samples);
    store->set_ceilings(store->upsert_device(device_record(dev)), c);
    std::cerr << fmt::format("  ceilings stored in {}\n", vm["db"].as<std::string>());
  }
  const std::vector<Row> rows =
      run_cases(cases, registry, dev, store ? &*store : nullptr, ceilings, timing);

  const json out = report(rows, dev, ceilings, timing);
  if (vm.count("json")) {
    std::ofstream f(vm["json"].as<std::string>());
    f << out.dump(2) << "\n";
    if (!f) throw Error(ErrorKind::kUsage, "cannot write " + vm["json"].as<std::string>());
  }
  bool any_error = false;
  for (const Row& r : rows) any_error |= !r.error.empty() || !r.peer_error.empty();
  return any_error ? 1 : 0;
}

}  // namespace
}  // namespace ktune

int main(int argc, char** argv) {
  try {
    return ktune::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "ktune_peers: " << e.what() << "\n";
    return 2;
  }
}
