// The GPU worker process (`ktune __worker`): reads the init message, builds the kernel's Worker
// and answers evaluate / retime requests (and inits for another kernel instance, which replace
// the Worker in the same context) until EOF or "quit". A fault that poisons the CUDA
// context ends the process after answering; the tuner starts another.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <map>
#include <set>
#include <thread>

#include "backends/cuda/protocol.h"
#include "backends/cuda/worker.h"
#include "ktune/cuda_backend.h"
#include "ktune/error.h"
#include "ktune/ipc.h"
#include "ktune/registry.h"

namespace ktune {

namespace {

using nlohmann::json;

constexpr int kRequestFd = 3;
constexpr int kReplyFd = 4;

// If the tuner dies, so does the worker, even in the middle of a hung kernel. (Not
// PR_SET_PDEATHSIG: it fires when the *thread* that started the worker ends, and the tuner
// starts workers from short-lived threads.)
void exit_with_parent() {
  const pid_t parent = ::getppid();
  std::thread([parent] {
    while (::getppid() == parent) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::_exit(4);
  }).detach();
}

// The kernels the worker knows: the built-ins and the plugins of every init so far, each loaded
// once (a re-init names the same plugins again). The registry outlives every Worker: plugin
// kernels point into its libraries.
class WorkerKernels {
 public:
  // The kernel as tuned: the registry's, with the space the tuner sent (a job file may have
  // changed value lists and added restrictions), so both sides agree on every config key.
  KernelSpec tuned(const protocol::WorkerInit& init) {
    if (!builtins_) {
      register_builtin_kernels(registry_);
      registry_.load_env_path();
      builtins_ = true;
    }
    for (const auto& p : init.plugins)
      if (plugins_.insert(p).second) registry_.load_path(p);
    KernelSpec kernel = registry_.get(init.kernel);
    if (!init.params.empty()) {
      kernel.remember_declared();  // the reference configuration is found there
      kernel.params = init.params;
      kernel.restrictions = init.restrictions;
    }
    for (auto& b : kernel.buffers) {  // inputs as tuned (a job may change them), paths absolute
      if (auto it = init.inputs.find(b.name); it != init.inputs.end()) b.init = it->second;
      if (auto it = init.expected.find(b.name); it != init.expected.end()) b.expected = it->second;
    }
    kernel.validate();
    return kernel;
  }

 private:
  Registry registry_;
  bool builtins_ = false;
  std::set<std::string> plugins_;
};

bool reply(const json& header, std::string blob = {}) {
  return ipc::write_message(kReplyFd, {header, std::move(blob)});
}

// The context, the slowest step of the start, is made while the tuner still queries the device
// and sets the run up; the start's own context step then finds it made (a failure shows there,
// from its checked calls). None where the device is not known before the init message.
std::future<void> create_context_early(int device) {
  std::future<void> context;
  if (device >= 0)
    context = std::async(std::launch::async, [device] {
      if (cudaSetDevice(device) == cudaSuccess) cudaFree(nullptr);
    });
  return context;
}

// The start: the kernel as tuned and its Worker, from the init message `msg` (the Worker of an
// earlier init, if any, freed first), then the "ready" reply with the seconds of each step. A
// failure is answered with a fatal reply (the tuner's error kind where it is an input error) and
// returns false.
bool start_worker(const ipc::Message& msg, WorkerKernels& kernels,
                  std::unique_ptr<worker::Worker>& w) {
  std::map<std::string, double> startup;
  w.reset();
  try {
    const protocol::WorkerInit init = protocol::worker_init_from_json(msg.header);
    const auto k0 = std::chrono::steady_clock::now();
    KernelSpec kernel = kernels.tuned(init);
    startup["kernel"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - k0).count();
    w = std::make_unique<worker::Worker>(kernel, init.problem, init.device, init.measure);
    for (const auto& [step, seconds] : w->startup()) startup[step] = seconds;
  } catch (const worker::CudaFailure& f) {
    reply(json{{"op", "fatal"},
               {"message", fmt::format("{}: {}", f.where, worker::cuda_text(f.code))}});
    return false;
  } catch (const Error& e) {
    json fatal{{"op", "fatal"}, {"message", e.what()}};
    if (e.kind() == ErrorKind::kInput) fatal["kind"] = "input";  // the tuner's error kind
    reply(fatal);
    return false;
  } catch (const std::exception& e) {
    reply(json{{"op", "fatal"}, {"message", e.what()}});
    return false;
  }
  reply(json{{"op", "ready"}, {"startup", startup}});
  return true;
}

// Answers evaluate and retime requests, and inits that make the worker another kernel
// instance's, until EOF, "quit" or a poisoned context; returns the process's exit code. `msg`
// is the buffer each request is read into.
int serve_requests(WorkerKernels& kernels, std::unique_ptr<worker::Worker>& worker,
                   ipc::Message& msg) {
  // The worker's time between evaluations, reported with the next one's phases: waiting for and
  // reading its request (`wait_request`: the tuner had not sent it yet, or its CUBIN was still on
  // the way), parsing it (`parse_request`), and serialising and writing the reply before it
  // (`previous_reply`).
  using Clock = std::chrono::steady_clock;
  const auto ms_between = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  double previous_reply_ms = 0;
  for (;;) {
    const auto r0 = Clock::now();
    if (ipc::read_message(kRequestFd, msg, -1) != ipc::ReadStatus::kOk) return 0;
    const auto r1 = Clock::now();
    const protocol::Request request = protocol::request_from_json(msg.header);
    const auto r2 = Clock::now();
    if (request.op == protocol::Request::Op::kInit) {
      if (!start_worker(msg, kernels, worker)) return 3;
      previous_reply_ms = 0;
      continue;
    }
    worker::Worker& w = *worker;
    json answer;
    std::string blob;
    Clock::time_point done = r2;  // the work's end: the reply's serialising and writing follow
    switch (request.op) {
      case protocol::Request::Op::kEvaluate: {
        Measurement m = w.evaluate(request.evaluate.config, request.evaluate.lowered_name, msg.blob,
                                   request.evaluate.cut_above_ms);
        done = Clock::now();
        m.phases_ms["wait_request"] = ms_between(r0, r1);
        m.phases_ms["parse_request"] = ms_between(r1, r2);
        m.phases_ms["previous_reply"] = previous_reply_ms;
        answer = protocol::to_json(m);
        blob = protocol::outputs_blob(m);
        break;
      }
      case protocol::Request::Op::kRetime:
        answer = protocol::to_json(w.retime(request.retime, msg.blob));
        done = Clock::now();
        break;
      case protocol::Request::Op::kQuit:
        return 0;
      case protocol::Request::Op::kInit:  // answered above
        break;
      case protocol::Request::Op::kUnknown:
        answer = json{{"error", "unknown request '" + request.name + "'"}};
        break;
    }
    answer["op"] = "result";
    if (!reply(answer, std::move(blob))) return 0;
    previous_reply_ms = ms_between(done, Clock::now());
    if (w.dead()) return 3;  // the context is poisoned; the tuner starts a new worker
  }
}

}  // namespace

int cuda_worker_main(int early_device) {
  // The tuner handles Ctrl-C; the worker finishes its trial.
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGPIPE, SIG_IGN);
  exit_with_parent();
  std::future<void> early_context = create_context_early(early_device);
  ipc::Message msg;
  if (ipc::read_message(kRequestFd, msg, -1) != ipc::ReadStatus::kOk) return 2;
  WorkerKernels kernels;  // outlives every worker: plugin kernels point into its libraries
  std::unique_ptr<worker::Worker> w;
  if (!start_worker(msg, kernels, w)) return 3;
  return serve_requests(kernels, w, msg);
}

}  // namespace ktune
