// Compile processes (`ktune __compile`): the same compile_batch(), in a child process, over the
// ipc framing. Some NVRTC builds serialise compilations inside one process; separate processes
// always run in parallel.
#include <fmt/format.h>
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "compile/internal.h"
#include "ktune/compiler.h"
#include "ktune/error.h"
#include "ktune/ipc.h"
#include "ktune/subprocess.h"

namespace ktune {

using detail::resource_fields;

namespace {

using nlohmann::json;

json resources_json(const CompiledResources& r) {
  json j;
  for (const auto& [name, field] : resource_fields()) j[std::string(name)] = r.*field;
  return j;
}

CompiledResources resources_from(const json& j) {
  CompiledResources r;
  for (const auto& [name, field] : resource_fields()) r.*field = j.value(std::string(name), -1);
  return r;
}

// NVRTC logs and sources are text, but not necessarily valid UTF-8; replace what JSON cannot hold.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json request_json(const CompileRequest& r) {
  return json{{"source", r.source}, {"source_name", r.source_name},
              {"entry", r.entry},   {"options", r.options},
              {"arch", r.arch},     {"batch_group", r.batch_group},
              {"body", r.body},     {"defines", r.defines}};
}

CompileRequest request_from(const json& h) {
  CompileRequest r;
  r.source = h.value("source", "");
  r.source_name = h.value("source_name", "");
  r.entry = h.value("entry", "");
  r.options = h.value("options", std::vector<std::string>{});
  r.arch = h.value("arch", "");
  r.batch_group = h.value("batch_group", "");
  r.body = h.value("body", "");
  r.defines = h.value("defines", std::vector<std::pair<std::string, std::string>>{});
  return r;
}

// The results of a batch travel as JSON headers plus one blob holding each distinct CUBIN once.
ipc::Message results_message(std::vector<CompileResult>& results) {
  json out = json::array();
  std::vector<std::string> cubins;
  std::string blob;
  json sizes = json::array();
  for (CompileResult& r : results) {
    int index = -1;
    if (!r.cubin.empty()) {
      auto it = std::find(cubins.begin(), cubins.end(), r.cubin);
      index = static_cast<int>(it - cubins.begin());
      if (it == cubins.end()) {
        cubins.push_back(r.cubin);
        sizes.push_back(r.cubin.size());
        blob += r.cubin;
      }
    }
    out.push_back({{"ok", r.ok},
                   {"lowered_name", r.lowered_name},
                   {"error", r.error},
                   {"log", r.log},
                   {"options", r.options},
                   {"arch", r.arch},
                   {"key", r.key},
                   {"resources", resources_json(r.resources)},
                   {"compile_ms", r.compile_ms},
                   {"precompiled_header", r.precompiled_header},
                   {"cubin", index}});
  }
  return {json::parse(dump(json{{"results", out}, {"cubin_sizes", sizes}})), std::move(blob)};
}

}  // namespace

namespace detail {

std::vector<CompileResult> remote_compile(Subprocess& process,
                                          const std::vector<std::string>& command,
                                          const std::vector<CompileRequest>& requests,
                                          const CompileLimits& limits, bool& timed_out) {
  timed_out = false;
  const auto all_failed = [&](const std::string& error, const std::string& log) {
    std::vector<CompileResult> out;
    for (const CompileRequest& r : requests) {
      CompileResult failed;
      failed.arch = r.arch;
      failed.options = r.options;
      failed.key = r.key();
      failed.error = error;
      failed.log = log;
      out.push_back(std::move(failed));
    }
    return out;
  };
  if (!process.running()) {
    try {
      process.start(command, /*own_group=*/true);
    } catch (const Error& e) {
      return all_failed(e.what(), "");
    }
  }
  json batch = json::array();
  for (const CompileRequest& r : requests) batch.push_back(request_json(r));
  if (!process.send({json::parse(dump(json{{"batch", batch}})), {}})) {
    const std::string output = process.output_tail();
    return all_failed("compile process " + process.stop(true), output);
  }
  // The limit is asked again every second: it shrinks as the pool's other compilations finish.
  const auto begin = std::chrono::steady_clock::now();
  for (;;) {
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    const double left = limits.batch(requests.size()) - waited;
    if (left <= 0) {
      process.stop(true);
      timed_out = true;
      return all_failed(fmt::format("compile timed out after {:.0f} s", limits.per_config()), "");
    }
    if (process.wait_for_answer(std::min(left, 1.0))) break;
  }
  // The answer has begun; the rest of it follows at once from a process that is alive.
  constexpr double kAnswerSeconds = 60;
  ipc::Message reply;
  if (process.receive(reply, kAnswerSeconds) != ipc::ReadStatus::kOk) {
    const std::string output = process.output_tail();
    return all_failed("compile process " + process.stop(true), output);
  }
  std::vector<std::string> cubins;
  std::size_t offset = 0;
  for (const auto& size : reply.header.value("cubin_sizes", json::array())) {
    const auto n = size.get<std::size_t>();
    cubins.push_back(reply.blob.substr(offset, n));
    offset += n;
  }
  std::vector<CompileResult> out;
  for (const json& h : reply.header.value("results", json::array())) {
    CompileResult r;
    r.ok = h.value("ok", false);
    const int index = h.value("cubin", -1);
    if (index >= 0 && static_cast<std::size_t>(index) < cubins.size())
      r.cubin = cubins[static_cast<std::size_t>(index)];
    r.lowered_name = h.value("lowered_name", "");
    r.error = h.value("error", "");
    r.log = h.value("log", "");
    r.options = h.value("options", std::vector<std::string>{});
    r.arch = h.value("arch", "");
    r.key = h.value("key", "");
    r.resources = resources_from(h.value("resources", json::object()));
    r.compile_ms = h.value("compile_ms", 0.0);
    r.precompiled_header = h.value("precompiled_header", false);
    out.push_back(std::move(r));
  }
  if (out.size() != requests.size())
    return all_failed("compile process answered a different number of results", "");
  return out;
}

}  // namespace detail

namespace {

// NVRTC allocates and frees tens of MiB for every program. By default glibc gives the top of its
// heap back to the kernel once more than 128 KiB of it is free, and serves large blocks from
// fresh mappings, so each program faults the same pages in again (about 2,000 page faults per
// configuration, the kernel zeroing every page). A compile process keeps what it has had
// instead: the heap grows in steps of 64 MiB, is given back only above 512 MiB free, and blocks
// up to 32 MiB come from it (what it gives: docs/measuring-throughput.md). What it costs is memory
// the process keeps until it exits, at most its largest program's peak plus 512 MiB; measured, its
// peak stays within 2 MiB of glibc's (about 100 MiB of a compile process running a pool's
// programs).
void keep_the_heap() {
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 512 << 20);
  ::mallopt(M_TOP_PAD, 64 << 20);
}

// The directory NVRTC keeps this process's precompiled headers in: `ktune-pch-<pid>` in the
// temporary directory, removed when the process ends (NVRTC empties it then too). Those of
// compile processes that were killed are removed first.
class PrecompiledHeaderDir {
 public:
  PrecompiledHeaderDir() {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path tmp = fs::temp_directory_path(ec);
    if (ec) return;
    for (const auto& entry : fs::directory_iterator(tmp, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("ktune-pch-", 0) != 0) continue;
      const long pid = std::strtol(name.c_str() + 10, nullptr, 10);
      std::error_code ignored;
      if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
        fs::remove_all(entry.path(), ignored);
    }
    path_ = tmp / fmt::format("ktune-pch-{}", ::getpid());
    if (fs::create_directories(path_, ec) || fs::is_directory(path_))
      detail::allow_precompiled_headers(path_.string());
    else
      path_.clear();  // no precompiled headers then
  }
  ~PrecompiledHeaderDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  PrecompiledHeaderDir(const PrecompiledHeaderDir&) = delete;
  PrecompiledHeaderDir& operator=(const PrecompiledHeaderDir&) = delete;

 private:
  std::filesystem::path path_;
};

}  // namespace

int compile_worker_main() {
  keep_the_heap();
  const PrecompiledHeaderDir pch_dir;
  // Compiling is throughput work; the tuning loop and the GPU worker, which keep the GPU fed, are
  // not: below them in the scheduler, the worker's start (context, inputs) and each measurement
  // get a core at once while NVRTC fills the rest.
  constexpr int kNiceness = 5;
  errno = 0;
  if (::nice(kNiceness) == -1 && errno != 0) {
    // Not allowed to lower it (a restricted sandbox): compile at the inherited priority.
  }
  detail::warm_up_nvrtc();
  for (;;) {
    ipc::Message message;
    if (ipc::read_message(3, message, -1) != ipc::ReadStatus::kOk) return 0;
    const json& h = message.header;
    if (h.value("op", "") == "quit") return 0;
    std::vector<CompileRequest> requests;
    for (const json& r : h.value("batch", json::array())) requests.push_back(request_from(r));
    std::vector<CompileResult> results = compile_batch(requests);
    if (!ipc::write_message(4, results_message(results))) return 0;
  }
}

}  // namespace ktune
