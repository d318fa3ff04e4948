// The tuner's side of the CUDA backend: starts the worker process, sends it CUBINs, waits for
// answers under a watchdog, and turns a dead or hung worker into one crashed / timed-out trial
// followed by a fresh worker.
#include <fmt/format.h>

#include <chrono>
#include <deque>
#include <memory>
#include <utility>

#include "backends/cuda/protocol.h"
#include "ktune/cuda_backend.h"
#include "ktune/error.h"
#include "ktune/ipc.h"
#include "ktune/subprocess.h"

namespace ktune {

using nlohmann::json;

struct CudaBackend::Impl {
  Options options;
  DeviceInfo device;
  MeasureOptions measure;
  json init;
  const KernelInstance* instance = nullptr;
  double cut_above_ms = 0;  // set_cutoff
  Subprocess worker;
  int starts = 0;
  std::map<std::string, double> phases;  // of the last start: the worker's steps and the process
  // Evaluation requests sent and not yet answered, oldest first; the worker is busy with the
  // front one since `busy_since`.
  struct Sent {
    json header;
    std::string blob;
  };
  std::deque<Sent> sent;
  std::chrono::steady_clock::time_point busy_since;

  // After the worker died or was killed: a new one, and everything it had not answered again.
  void restart_and_resend() {
    if (sent.empty()) return;
    start();
    resend();
  }
  void resend() {
    for (const auto& s : sent) {
      if (!worker.send({s.header, s.blob}))
        throw Error(ErrorKind::kDevice,
                    "the restarted GPU worker stopped at once: " + worker.output_tail());
    }
    busy_since = std::chrono::steady_clock::now();
  }

  std::string stop(bool kill) {
    const std::string how = worker.stop(kill);
    return how.empty() ? how : "worker " + how;
  }

  // Starts the worker process, which begins its CUDA context at once (`--device`).
  void spawn() {
    std::vector<std::string> command = options.worker_command;
    command.insert(command.end(), {"--device", std::to_string(options.device)});
    worker.start(command, /*own_group=*/true);
    ++starts;
  }

  // Sends `init` to the worker and waits for it to be ready: a worker already running (the one
  // started with the backend, or one that served another kernel instance, which the init
  // replaces in the same context) or a new one.
  void start() {
    const auto t0 = std::chrono::steady_clock::now();
    const bool early = worker.running();
    if (!early) spawn();
    ipc::Message reply;
    const auto handshake = [&] {
      return worker.send({init, {}}) ? worker.receive(reply, options.start_timeout_seconds)
                                     : ipc::ReadStatus::kClosed;
    };
    auto status = handshake();
    if (early && status == ipc::ReadStatus::kClosed) {
      // The running worker is gone (ended while it waited): a fresh one.
      worker.stop(true);
      spawn();
      status = handshake();
    }
    const double total =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    phases.clear();
    double steps = 0;
    if (auto it = reply.header.find("startup"); it != reply.header.end() && it->is_object()) {
      for (const auto& [step, seconds] : it->items()) {
        if (!seconds.is_number()) continue;
        phases[step] = seconds.get<double>();
        steps += seconds.get<double>();
      }
    }
    // The rest: process creation, loading the program and its libraries, the messages.
    phases["process"] = std::max(0.0, total - steps);
    if (status != ipc::ReadStatus::kOk || reply.header.value("op", "") != "ready") {
      std::string why =
          status == ipc::ReadStatus::kTimeout
              ? fmt::format("did not start within {} s", options.start_timeout_seconds)
              : reply.header.value("message", "");
      // A start that failed on the kernel's description (a reference configuration that does not
      // compile, a buffer that cannot be fetched) is the input's error, not the device's.
      const ErrorKind kind =
          reply.header.value("kind", "") == "input" ? ErrorKind::kInput : ErrorKind::kDevice;
      const std::string output = worker.output_tail();
      const std::string exit_text = stop(status == ipc::ReadStatus::kTimeout);
      if (why.empty()) why = exit_text;
      throw Error(kind, fmt::format("GPU worker failed to start: {}{}", why,
                                    output.empty() ? "" : "\n" + output));
    }
  }

  // Sends a request and waits for the answer under the watchdog. A dead or hung worker gives
  // the status crashed / timeout and is replaced on the next request.
  json request(const json& header, const std::string& blob, double timeout, bool& failed,
               TrialStatus& status, std::string& error) {
    failed = false;
    if (!worker.running()) start();
    if (!worker.send({header, blob})) {
      failed = true;
      status = TrialStatus::kCrashed;
      error = "GPU worker is gone: " + stop(true);
      return {};
    }
    ipc::Message reply;
    const auto rs = worker.receive(reply, timeout);
    if (rs == ipc::ReadStatus::kTimeout) {
      failed = true;
      status = TrialStatus::kTimeout;
      stop(true);
      error = fmt::format("no result within {:.1f} s; the worker was killed and will be restarted",
                          timeout);
      return {};
    }
    if (rs == ipc::ReadStatus::kClosed) {
      failed = true;
      status = TrialStatus::kCrashed;
      const std::string output = worker.output_tail();
      error =
          stop(true) + (output.empty()
                            ? ""
                            : ": " + output.substr(output.size() > 500 ? output.size() - 500 : 0));
      return {};
    }
    // A worker that reports a crash exits by itself (its context is poisoned); reap it.
    if (reply.header.value("status", "") == "crashed") stop(false);
    return reply.header;
  }
};

CudaBackend::CudaBackend(Options options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  if (impl_->options.worker_command.empty())
    throw Error(ErrorKind::kInternal, "the CUDA backend needs a worker command");
  // The worker starts first, so that its CUDA context (0.1-0.15 s on an H200) is made while this
  // process queries the device (as long again), not after it. Where no driver can be loaded
  // there is nothing to overlap, and require_device says what is missing.
  // The driver stays loaded through the query, which would otherwise load it a second time.
  const std::shared_ptr<void> driver = load_cuda_driver();
  if (driver) {
    try {
      impl_->spawn();
    } catch (const Error&) {
      // prepare() starts it again and reports a failure there.
    }
  }
  impl_->device = require_device(impl_->options.device);
}

CudaBackend::~CudaBackend() = default;

DeviceInfo CudaBackend::device() const { return impl_->device; }

int CudaBackend::worker_starts() const { return impl_->starts; }

std::map<std::string, double> CudaBackend::prepare_phases() const { return impl_->phases; }

void CudaBackend::prepare(const KernelInstance& instance, const MeasureOptions& options) {
  if (!impl_->sent.empty())
    throw Error(ErrorKind::kInternal, "CudaBackend::prepare with evaluations not collected");
  impl_->measure = options;
  protocol::WorkerInit init;
  init.kernel = instance.kernel().name;
  // The space as tuned (a job file may have changed value lists and added restrictions): the
  // worker applies it to its copy of the kernel, so both sides agree on every config key.
  init.params = instance.kernel().params;
  init.restrictions = instance.kernel().restrictions;
  for (const auto& b : instance.kernel().buffers) {
    init.inputs[b.name] = b.init;
    init.expected[b.name] = b.expected;
  }
  init.problem = instance.problem();
  init.plugins = impl_->options.plugins;
  init.device = impl_->options.device;
  init.measure = options;
  // A reference configuration is the worker's to compile, beside the context's creation (here
  // it would delay the worker's start by its NVRTC time); one that does not compile fails the
  // start with the kernel's input error.
  impl_->instance = &instance;
  impl_->cut_above_ms = 0;  // the new instance's run sets its own
  impl_->init = protocol::to_json(init);
  impl_->start();
}

void CudaBackend::set_cutoff(double ms) { impl_->cut_above_ms = ms > 0 ? ms : 0; }

Measurement CudaBackend::evaluate(const Config& config, const CompileResult* compiled) {
  submit(config, compiled);
  return collect();
}

void CudaBackend::submit(const Config& config, const CompileResult* compiled) {
  auto& m = *impl_;
  if (compiled == nullptr || !compiled->ok || m.instance == nullptr)
    throw Error(ErrorKind::kInternal,
                "the CUDA backend evaluates compiled configurations after prepare()");
  Impl::Sent s{protocol::to_json(protocol::EvaluateRequest{m.instance->space().key(config),
                                                           compiled->lowered_name, m.cut_above_ms}),
               compiled->cubin};
  if (!m.worker.running()) {
    m.start();
    m.resend();  // nothing, unless earlier requests are waiting
  }
  if (m.sent.empty()) m.busy_since = std::chrono::steady_clock::now();
  m.sent.push_back(std::move(s));
  // A failed write means the worker is gone; collect() finds out and reports it on this trial.
  m.worker.send({m.sent.back().header, m.sent.back().blob});
}

Measurement CudaBackend::collect() {
  auto& m = *impl_;
  if (m.sent.empty()) throw Error(ErrorKind::kInternal, "collect() without a submitted evaluation");
  using Clock = std::chrono::steady_clock;
  // The watchdog runs from when the worker could start on this request.
  const double timeout = m.measure.timeout_seconds;
  const double left =
      std::max(0.0, timeout - std::chrono::duration<double>(Clock::now() - m.busy_since).count());
  ipc::Message reply;
  const auto rs = m.worker.running() ? m.worker.receive(reply, left) : ipc::ReadStatus::kClosed;
  Measurement out;
  const double waited_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - m.busy_since).count();
  m.sent.pop_front();
  m.busy_since = Clock::now();
  if (rs == ipc::ReadStatus::kOk) {
    out = protocol::measurement_from_message(reply.header, reply.blob);
    if (!out.outputs.empty()) {
      if (out.status == TrialStatus::kOk && m.options.host_check) {
        if (auto wrong = m.options.host_check(out.outputs)) {
          out.status = TrialStatus::kWrongResult;
          out.error = *wrong;
        }
      }
      out.outputs.clear();
    }
    // A worker that reports a crash exits by itself (its context is poisoned): reap it and give
    // what it had not answered to a new one.
    if (out.status == TrialStatus::kCrashed) {
      m.stop(false);
      m.restart_and_resend();
    }
    return out;
  }
  if (rs == ipc::ReadStatus::kTimeout) {
    out.status = TrialStatus::kTimeout;
    m.stop(true);
    out.error =
        fmt::format("no result within {:.1f} s; the worker was killed and restarted", timeout);
  } else {
    out.status = TrialStatus::kCrashed;
    const std::string output = m.worker.output_tail();
    out.error = m.stop(true);
    if (out.error.empty()) out.error = "GPU worker is gone";
    if (!output.empty())
      out.error += ": " + output.substr(output.size() > 500 ? output.size() - 500 : 0);
  }
  out.eval_ms = waited_ms;
  m.restart_and_resend();
  return out;
}

std::vector<Measurement> CudaBackend::retime(const std::vector<RetimeCandidate>& candidates,
                                             int rounds) {
  if (impl_->instance == nullptr) throw Error(ErrorKind::kInternal, "retime() before prepare()");
  protocol::RetimeRequest request;
  request.rounds = rounds;
  std::string blob;
  for (const auto& c : candidates) {
    request.candidates.push_back({impl_->instance->space().key(c.config), c.compiled->lowered_name,
                                  c.compiled->cubin.size()});
    blob += c.compiled->cubin;
  }
  bool failed = false;
  TrialStatus status = TrialStatus::kOk;
  std::string error;
  // Every finalist already ran within the watchdog; the re-timing runs each `rounds` times more,
  // after the sustained load.
  const double timeout =
      impl_->measure.timeout_seconds * (2.0 + static_cast<double>(candidates.size())) +
      impl_->measure.sustain_limit_seconds();
  const json header =
      impl_->request(protocol::to_json(request), blob, timeout, failed, status, error);
  protocol::RetimeReply reply =
      failed ? protocol::RetimeReply{} : protocol::retime_reply_from_json(header);
  if (failed || !reply.error.empty())
    throw Error(ErrorKind::kDevice,
                fmt::format("re-timing the finalists failed: {}", failed ? error : reply.error));
  if (!reply.results.empty()) reply.results.front().gpu_ms = reply.gpu_ms;
  return std::move(reply.results);
}

}  // namespace ktune
