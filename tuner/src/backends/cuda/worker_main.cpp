// The GPU worker process (`ktune __worker`): reads the init message, builds the kernel's Worker
// and answers evaluate / retime requests until EOF or "quit". A fault that poisons the CUDA
// context ends the process after answering; the tuner starts another.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>

#include "backends/cuda/protocol.h"
#include "backends/cuda/worker.h"
#include "ktune/cuda_backend.h"
#include "ktune/error.h"
#include "ktune/registry.h"
#include "process/ipc.h"

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

// The kernel as tuned: the registry's, with the space the tuner sent (a job file may have
// changed value lists and added restrictions), so both sides agree on every config key.
KernelSpec tuned_kernel(Registry& registry, const protocol::WorkerInit& init) {
  register_builtin_kernels(registry);
  registry.load_env_path();
  for (const auto& p : init.plugins) registry.load_path(p);
  KernelSpec kernel = registry.get(init.kernel);
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

bool reply(const json& header, std::string blob = {}) {
  return ipc::write_message(kReplyFd, {header, std::move(blob)});
}

// Writes the replies to evaluations on a thread of its own, in order, so that serialising and
// writing one, and the tuner's wake-up that can take the worker's core on a host whose cores all
// compile, overlap the next evaluation (its request is already in the pipe) instead of delaying
// its GPU work. The destructor writes what is queued, then joins.
class ReplyWriter {
 public:
  ReplyWriter() : thread_([this] { run(); }) {}
  ~ReplyWriter() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  ReplyWriter(const ReplyWriter&) = delete;
  ReplyWriter& operator=(const ReplyWriter&) = delete;

  // Queues a reply, made on the writer's thread; false once a write has failed (the tuner is
  // gone).
  bool post(std::function<ipc::Message()> make) {
    if (failed_) return false;
    if (inline_) {  // KTUNE_REPLY_THREAD=0: written here, as before the writer had a thread
      const auto t0 = std::chrono::steady_clock::now();
      if (!ipc::write_message(kReplyFd, make())) failed_ = true;
      last_write_ms_ =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      return !failed_;
    }
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(make));
    }
    wake_.notify_one();
    return true;
  }
  bool failed() const { return failed_; }
  // Milliseconds the last reply took to make and write, on the writer's thread.
  double last_write_ms() const { return last_write_ms_; }

 private:
  void run() {
    for (;;) {
      std::function<ipc::Message()> make;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        make = std::move(queue_.front());
        queue_.pop_front();
      }
      const auto t0 = std::chrono::steady_clock::now();
      if (!failed_ && !ipc::write_message(kReplyFd, make())) failed_ = true;
      last_write_ms_ =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
  }

  const bool inline_ = [] {
    const char* v = std::getenv("KTUNE_REPLY_THREAD");
    return v && std::string_view(v) == "0";
  }();
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<ipc::Message()>> queue_;
  bool stopping_ = false;
  std::atomic<bool> failed_{false};
  std::atomic<double> last_write_ms_{0};
  std::thread thread_;
};

}  // namespace

int cuda_worker_main() {
  // The tuner handles Ctrl-C; the worker finishes its trial.
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGPIPE, SIG_IGN);
  exit_with_parent();
  ipc::Message msg;
  if (ipc::read_message(kRequestFd, msg, -1) != ipc::ReadStatus::kOk) return 2;
  std::unique_ptr<worker::Worker> w;
  Registry registry;  // outlives the worker: plugin kernels point into its libraries
  std::map<std::string, double> startup;
  try {
    const protocol::WorkerInit init = protocol::worker_init_from_json(msg.header);
    const auto k0 = std::chrono::steady_clock::now();
    KernelSpec kernel = tuned_kernel(registry, init);
    startup["kernel"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - k0).count();
    w = std::make_unique<worker::Worker>(kernel, init.problem, init.device, init.measure);
    for (const auto& [step, seconds] : w->startup()) startup[step] = seconds;
  } catch (const worker::CudaFailure& f) {
    reply(json{{"op", "fatal"},
               {"message", fmt::format("{}: {}", f.where, worker::cuda_text(f.code))}});
    return 3;
  } catch (const Error& e) {
    json fatal{{"op", "fatal"}, {"message", e.what()}};
    if (e.kind() == ErrorKind::kInput) fatal["kind"] = "input";  // the tuner's error kind
    reply(fatal);
    return 3;
  } catch (const std::exception& e) {
    reply(json{{"op", "fatal"}, {"message", e.what()}});
    return 3;
  }
  reply(json{{"op", "ready"}, {"startup", startup}});
  // The worker's time between evaluations, reported with the next one's phases: waiting for and
  // reading its request (`wait_request`: the tuner had not sent it yet, or its CUBIN was still on
  // the way), parsing it (`parse_request`), and handing the reply before it to the writer's thread
  // (`previous_reply`); the writer's own time for the last reply it wrote is `reply_write`.
  using Clock = std::chrono::steady_clock;
  const auto ms_between = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  double previous_reply_ms = 0;
  ReplyWriter writer;  // destroyed first: what it holds is written before the worker goes
  for (;;) {
    const auto r0 = Clock::now();
    if (writer.failed() || ipc::read_message(kRequestFd, msg, -1) != ipc::ReadStatus::kOk) return 0;
    const auto r1 = Clock::now();
    const protocol::Request request = protocol::request_from_json(msg.header);
    const auto r2 = Clock::now();
    Clock::time_point done = r2;  // the work's end: handing the reply over follows
    bool posted = true;
    switch (request.op) {
      case protocol::Request::Op::kEvaluate: {
        Measurement m =
            w->evaluate(request.evaluate.config, request.evaluate.lowered_name, msg.blob);
        done = Clock::now();
        m.phases_ms["wait_request"] = ms_between(r0, r1);
        m.phases_ms["parse_request"] = ms_between(r1, r2);
        m.phases_ms["previous_reply"] = previous_reply_ms;
        m.phases_ms["reply_write"] = writer.last_write_ms();
        posted = writer.post([m = std::move(m)] {
          json answer = protocol::to_json(m);
          answer["op"] = "result";
          return ipc::Message{answer, protocol::outputs_blob(m)};
        });
        break;
      }
      case protocol::Request::Op::kRetime: {
        json answer = protocol::to_json(w->retime(request.retime, msg.blob));
        done = Clock::now();
        answer["op"] = "result";
        posted = writer.post([answer = std::move(answer)] { return ipc::Message{answer, {}}; });
        break;
      }
      case protocol::Request::Op::kQuit:
        return 0;
      case protocol::Request::Op::kUnknown:
        posted = writer.post([name = request.name] {
          return ipc::Message{json{{"op", "result"}, {"error", "unknown request '" + name + "'"}},
                              {}};
        });
        break;
    }
    if (!posted) return 0;
    previous_reply_ms = ms_between(done, Clock::now());
    if (w->dead()) return 3;  // the context is poisoned; the tuner starts a new worker
  }
}

}  // namespace ktune
