// `ktune tune --devices all|0,1,...`: every GPU of this host at once, one `ktune tune` worker
// process per device. The workers of one device model share one Optuna study (a journal file
// beside the results database), which splits the work between them: brute force splits the
// valid space (optuna:grid), a sampler's proposals are drawn under the study's lock, so no
// configuration is measured twice and each is compiled by the one worker that measures it
// (the compiled-kernel cache is shared too). Mixed models get one study each (its name holds
// the device limits), so each model is tuned as its own device. All workers write the same
// results database. This process shows every device's progress, and restarts a worker that
// dies: it costs the trial it was measuring, not the run (docs/scale-out.md).
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "cli.h"
#include "ktune/error.h"
#include "ktune/job.h"
#include "ktune/store.h"
#include "ktune/strategy.h"

namespace ktune::cli {

namespace {

constexpr int kMaxRestarts = 3;

// Ctrl-C reaches the workers (the terminal's process group): they stop after their trial in
// flight and say so; this process only waits for them. A handler, not SIG_IGN, which the
// workers would inherit.
extern "C" void on_interrupt_while_waiting(int) {}

struct DeviceWorker {
  int device = 0;
  std::string label;  // "device 1 (NVIDIA H200)"
  std::vector<std::string> argv;
  pid_t pid = -1;
  int out_fd = -1, err_fd = -1;
  std::string out, err_line, progress;
  int restarts = 0;
  int code = -1;
};

// The device ordinals of --devices: "all" (every CUDA device; with --replay, not allowed: a
// recording has no devices to count) or a comma-separated list.
std::vector<int> parse_devices(const std::string& text, bool replay) {
  std::vector<int> out;
  if (text == "all") {
    if (replay)
      throw Error(ErrorKind::kUsage,
                  "--devices all: a replay has no devices to count; name the workers (--devices "
                  "0,1,2,3)");
    const DeviceQuery q = list_devices();
    if (q.devices.empty())
      throw Error(ErrorKind::kDevice, fmt::format("--devices all: no CUDA device{}",
                                                  q.problem.empty() ? "" : " (" + q.problem + ")"));
    for (std::size_t i = 0; i < q.devices.size(); ++i) out.push_back(static_cast<int>(i));
    return out;
  }
  // getline drops an empty last item: "0," must be refused as "0,,1" is.
  if (text.empty() || text.back() == ',')
    throw Error(ErrorKind::kUsage,
                fmt::format("--devices '{}': expected all or device ordinals such as 0,1", text));
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    std::size_t used = 0;
    int n = -1;
    try {
      n = std::stoi(item, &used);
    } catch (const std::exception&) {
    }
    if (item.empty() || used != item.size() || n < 0)
      throw Error(ErrorKind::kUsage,
                  fmt::format("--devices '{}': expected all or device ordinals such as 0,1", text));
    if (std::find(out.begin(), out.end(), n) != out.end())
      throw Error(ErrorKind::kUsage, fmt::format("--devices '{}': device {} twice", text, n));
    out.push_back(n);
  }
  if (out.empty()) throw Error(ErrorKind::kUsage, "--devices: name at least one device");
  return out;
}

std::string strategy_of(const po::variables_map& vm) {
  return vm.count("strategy") ? vm["strategy"].as<std::string>() : "auto";
}

// How the workers of one device model share the search. An Optuna strategy shares one study
// (a journal beside the database, or --study-storage): one sampler, proposals drawn under the
// study's lock. Every other strategy runs as parts of one search on the shared results
// database (--part): brute force and random search split their order, a native search runs
// seeded apart per worker; the database's claims keep any configuration from being measured
// twice and answer what another worker measured.
bool shares_a_study(const po::variables_map& vm) {
  return strategy_traits(strategy_of(vm)).shares_study;
}

// The worker's command line: this one without --devices, --study-storage, --device,
// --progress and --budget-evals, then the worker's own. `part`: its rank among the workers
// of its device model, and their number; `budget`: its share of the job's evaluation budget,
// if the job has one.
std::vector<std::string> worker_argv(const std::vector<std::string>& args, const std::string& exe,
                                     const po::variables_map& vm, int device, int workers,
                                     std::pair<int, int> part,
                                     std::optional<std::uint64_t> budget) {
  static const char* kDropped[] = {
      "--devices", "--study-storage", "--device",       "--progress", "--json",
      "-q",        "--quiet",         "--budget-evals", "--part",     "--trace"};
  static const char* kTakesValue[] = {"--devices",      "--study-storage", "--device", "--progress",
                                      "--budget-evals", "--part",          "--trace"};
  std::vector<std::string> out = {exe, "tune"};
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool dropped = false;
    for (const char* d : kDropped) {
      const std::string name = d;
      if (a == name) {
        dropped = true;
        for (const char* v : kTakesValue)
          if (name == v) ++i;  // and its value
      } else if (a.rfind(name + "=", 0) == 0) {
        dropped = true;
      }
    }
    if (!dropped) out.push_back(a);
  }
  out.insert(out.end(), {"--device", std::to_string(device), "--progress", "always", "--json"});
  if (vm.count("trace")) {
    // One timeline per worker: FILE.json becomes FILE.gpuN.json.
    std::filesystem::path trace = vm["trace"].as<std::string>();
    const std::string ext = trace.extension().string();
    trace.replace_filename(fmt::format("{}.gpu{}{}", trace.stem().string(), device, ext));
    out.insert(out.end(), {"--trace", trace.string()});
  }
  if (shares_a_study(vm)) {
    const std::string db = vm["db"].as<std::string>();
    out.insert(out.end(),
               {"--study-storage", vm.count("study-storage") ? vm["study-storage"].as<std::string>()
                                                             : "journal:" + db + ".study.log"});
  } else if (part.second > 1) {
    out.insert(out.end(), {"--part", fmt::format("{}/{}", part.first + 1, part.second)});
  }
  if (budget) out.insert(out.end(), {"--budget-evals", std::to_string(*budget)});
  if (vm["compile-threads"].defaulted()) {
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    out.insert(out.end(), {"--compile-threads",
                           std::to_string(std::max(1u, cores / static_cast<unsigned>(workers)))});
  }
  return out;
}

// Each worker's part of its device model's search: (rank among the workers of its model, their
// number). Workers of one model split the search; each model is tuned as its own device.
std::vector<std::pair<int, int>> parts_of(const std::vector<std::string>& models) {
  std::vector<std::pair<int, int>> out;
  for (auto it = models.begin(); it != models.end(); ++it)
    out.emplace_back(static_cast<int>(std::count(models.begin(), it, *it)),
                     static_cast<int>(std::count(models.begin(), models.end(), *it)));
  return out;
}

// The job's evaluation budget (--budget-evals, else the job file's [budget] evaluations) is
// the job's, not each worker's: the workers of one device model share it, the first ones taking
// the remainder; each model gets the whole budget, as it is tuned as its own device.
std::optional<std::uint64_t> budget_share(const po::variables_map& vm, std::pair<int, int> part) {
  std::optional<std::uint64_t> total;
  if (vm.count("budget-evals"))
    total = vm["budget-evals"].as<Unsigned>().value;
  else if (vm.count("config"))
    total = load_job(vm["config"].as<std::string>()).budget_evaluations;
  if (!total) return std::nullopt;
  const auto [rank, peers] = part;
  const std::uint64_t share = *total / static_cast<std::uint64_t>(peers) +
                              (static_cast<std::uint64_t>(rank) < *total % peers ? 1 : 0);
  return std::max<std::uint64_t>(share, 1);  // at least one: one beyond the total beats none
}

struct Options {
  bool quiet = false, json = false, progress = true;
};

void start(DeviceWorker& w, const Options& o) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
    throw Error(ErrorKind::kInternal, std::string("tune --devices: pipe: ") + std::strerror(errno));
  std::vector<char*> argv;
  for (auto& a : w.argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  w.pid = ::fork();
  if (w.pid < 0)
    throw Error(ErrorKind::kInternal, std::string("tune --devices: fork: ") + std::strerror(errno));
  if (w.pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  w.out_fd = out[0];
  w.err_fd = err[0];
  w.out.clear();
  if (!o.quiet) std::cerr << fmt::format("{}: worker {}\n", w.label, w.pid);
}

// Reads what a worker wrote: stdout is kept for the end; stderr lines are its progress (kept
// for the combined line) or messages (passed on with the device's name).
bool drain(DeviceWorker& w, int fd, bool quiet) {
  char buffer[4096];
  const ssize_t n = ::read(fd, buffer, sizeof buffer);
  if (n <= 0) return false;
  if (fd == w.out_fd) {
    w.out.append(buffer, static_cast<std::size_t>(n));
    return true;
  }
  w.err_line.append(buffer, static_cast<std::size_t>(n));
  for (std::size_t eol; (eol = w.err_line.find('\n')) != std::string::npos;) {
    std::string line = w.err_line.substr(0, eol);
    w.err_line.erase(0, eol + 1);
    if (line.rfind("progress ", 0) == 0)
      w.progress = line.substr(9);
    else if (!quiet)
      std::cerr << w.label << ": " << line << "\n";
  }
  return true;
}

// Waits for the worker's exit; a worker killed by a signal other than an interrupt is started
// again (it rejoins the study: what it had committed is in the database, the trial it was
// measuring is lost). Returns false while it runs on.
bool reap(DeviceWorker& w, const Options& o) {
  int status = 0;
  ::waitpid(w.pid, &status, 0);
  if (WIFSIGNALED(status) && WTERMSIG(status) != SIGINT && w.restarts < kMaxRestarts) {
    ++w.restarts;
    if (!o.quiet)
      std::cerr << fmt::format("{}: worker killed by signal {} ({}); started again\n", w.label,
                               WTERMSIG(status), ::strsignal(WTERMSIG(status)));
    start(w, o);
    return false;
  }
  w.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return true;
}

void show_progress(const std::vector<DeviceWorker>& workers, bool& drawn) {
  std::string line;
  for (const DeviceWorker& w : workers)
    line += fmt::format("{}{}: {}", line.empty() ? "" : "  |  ", w.label,
                        w.code >= 0 ? "done" : (w.progress.empty() ? "starting" : w.progress));
  std::cerr << "progress " << line << "\n" << std::flush;
  drawn = true;
}

int summarize(std::vector<DeviceWorker>& workers, const Options& o) {
  int code = 0;
  nlohmann::json all = nlohmann::json::array();
  for (DeviceWorker& w : workers) {
    if (w.code != 0 && (code == 0 || code == 1)) code = w.code;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(w.out);
    } catch (const nlohmann::json::exception&) {
      j = nlohmann::json::object();
    }
    j["device"] = w.device;
    j["worker_exit"] = w.code;
    j["worker_restarts"] = w.restarts;
    all.push_back(j);
    if (o.json || o.quiet) continue;
    std::cout << fmt::format("{}: exit {}{}", w.label, w.code,
                             w.restarts ? fmt::format(", restarted {} time(s)", w.restarts) : "");
    if (j.contains("trials"))
      std::cout << fmt::format(", {} trials ({} measured), run {}", j["trials"].get<int>(),
                               j["measured"].get<int>(), j["run_id"].get<std::int64_t>());
    if (j.contains("best"))
      std::cout << fmt::format(", best {} {:.4f} ms", j["best"]["key"].get<std::string>(),
                               j["best"]["time_ms"].get<double>());
    std::cout << "\n";
  }
  if (o.json) print_json({{"workers", all}});
  return code;
}

// How this process speaks: -q, --json, and whether it draws the combined progress line.
Options options_from(const po::variables_map& vm) {
  Options o;
  o.quiet = vm.count("quiet") > 0;
  o.json = json_output(vm);
  o.progress = !o.quiet && !o.json && vm["progress"].as<std::string>() != "never";
  return o;
}

// One worker per device, labelled with the device's name where the host has it; `models` gets
// each worker's device model ("" for replay workers, which are of one model).
std::vector<DeviceWorker> device_workers(const std::vector<int>& devices, const DeviceQuery& q,
                                         std::vector<std::string>& models) {
  std::vector<DeviceWorker> workers(devices.size());
  models.assign(devices.size(), std::string());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    DeviceWorker& w = workers[i];
    w.device = devices[i];
    w.label = fmt::format("device {}", w.device);
    if (static_cast<std::size_t>(w.device) < q.devices.size()) {
      models[i] = q.devices[static_cast<std::size_t>(w.device)].name;
      w.label += " (" + models[i] + ")";
    }
  }
  return workers;
}

// Options that --devices decides itself: --study-storage is for a shared study only, and each
// worker's --part is given by --devices.
void refuse_options_devices_decide(const po::variables_map& vm) {
  if (vm.count("study-storage") && !shares_a_study(vm))
    throw Error(ErrorKind::kUsage,
                fmt::format("--study-storage is for the Optuna strategies, whose study the "
                            "workers share; '{}' shares its search through the results database "
                            "(drop --study-storage)",
                            strategy_of(vm)));
  if (vm.count("part"))
    throw Error(ErrorKind::kUsage, "--part and --devices: --devices gives each worker its part");
}

// Ctrl-C while waiting: the workers get it and stop; this process waits on for them.
void wait_through_interrupts() {
  struct sigaction action {};
  action.sa_handler = on_interrupt_while_waiting;
  ::sigaction(SIGINT, &action, nullptr);
}

// Passes on what the workers write until every one has ended (restarting those killed by a
// signal, see reap()), with the combined progress line every two seconds.
void watch_workers(std::vector<DeviceWorker>& workers, const Options& o) {
  std::size_t running = workers.size();
  bool drawn = false;
  auto last = std::chrono::steady_clock::now();
  while (running > 0) {
    std::vector<pollfd> fds;
    std::vector<std::pair<std::size_t, int>> owner;
    for (std::size_t i = 0; i < workers.size(); ++i)
      for (int fd : {workers[i].out_fd, workers[i].err_fd})
        if (fd >= 0) fds.push_back({fd, POLLIN, 0}), owner.emplace_back(i, fd);
    ::poll(fds.data(), fds.size(), 500);
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      DeviceWorker& w = workers[owner[k].first];
      const int fd = owner[k].second;
      if (drain(w, fd, o.quiet)) continue;
      ::close(fd);  // end of file: the worker closed it, or ended
      (fd == w.out_fd ? w.out_fd : w.err_fd) = -1;
      if (w.out_fd < 0 && w.err_fd < 0 && reap(w, o)) --running;
    }
    if (o.progress && std::chrono::steady_clock::now() - last > std::chrono::seconds(2)) {
      show_progress(workers, drawn);
      last = std::chrono::steady_clock::now();
    }
  }
}

// The database this run created, where it was left without a run (every worker refused it),
// goes again, as a single run's does.
void remove_if_left_empty(const std::string& db) {
  bool empty = false;
  try {
    empty = Store::open(db, Store::Mode::kReadOnly).runs().empty();
  } catch (const Error&) {
    // Unreadable now: leave it for the user to see.
  }
  if (empty)
    for (const char* suffix : {"", "-wal", "-shm"}) {
      std::error_code ec;
      std::filesystem::remove(db + suffix, ec);
    }
}

}  // namespace

int tune_on_devices(const std::vector<std::string>& args, const po::variables_map& vm,
                    const std::string& exe) {
  const std::vector<int> devices =
      parse_devices(vm["devices"].as<std::string>(), vm.count("replay") > 0);
  const Options o = options_from(vm);
  const DeviceQuery q = vm.count("replay") ? DeviceQuery{} : list_devices();
  std::vector<std::string> models;
  std::vector<DeviceWorker> workers = device_workers(devices, q, models);
  refuse_options_devices_decide(vm);
  const auto parts = parts_of(models);
  for (std::size_t i = 0; i < devices.size(); ++i)
    workers[i].argv =
        worker_argv(args, exe, vm, workers[i].device, static_cast<int>(devices.size()), parts[i],
                    budget_share(vm, parts[i]));
  // The shared results database is made here (its schema, the WAL journal) before the workers
  // start: workers creating a fresh file at the same moment could find it locked past SQLite's
  // busy handler, and one then ended at once ("database is locked"). Made for this run and left
  // without a run (every worker refused it), it goes again, as a single run's does.
  const std::string db = vm["db"].as<std::string>();
  const bool created = !std::filesystem::exists(db);
  (void)Store::open(db);
  wait_through_interrupts();
  for (DeviceWorker& w : workers) start(w, o);
  watch_workers(workers, o);
  const int code = summarize(workers, o);
  if (created) remove_if_left_empty(db);
  return code;
}

}  // namespace ktune::cli
