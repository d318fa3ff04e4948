// The compile pool: a queue served by N threads, each compiling in this process or through a
// compile process of its own, with the cache in front.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "compile/internal.h"
#include "ktune/compiler.h"
#include "ktune/error.h"
#include "ktune/subprocess.h"

namespace ktune {

using Clock = std::chrono::steady_clock;

struct CompilePool::Impl {
  struct Task {
    CompileRequest request;
    std::string key;
    std::shared_ptr<std::promise<CompileResult>> promise;
  };

  std::shared_ptr<CompileCache> cache;
  std::vector<std::string> process_command;  // empty: compile in this process
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<Task> queue;
  std::unordered_map<std::string, std::shared_future<CompileResult>> in_flight;
  bool stopping = false;
  std::vector<std::thread> workers;
  std::atomic<long long> busy_ns{0};
  std::atomic<std::size_t> compiles{0};

  // Configurations per NVRTC program at most (set_max_batch).
  std::size_t max_batch = 16;
  CompileObserver observer;             // under `mutex`
  CompileTimeout timeout;               // under `mutex`
  std::vector<double> compile_seconds;  // per configuration, of those compiled; under `mutex`

  double per_config_limit() {
    std::lock_guard lock(mutex);
    return timeout.limit(compile_seconds);
  }

  // The limit per configuration, plus the median configuration's time for each other one.
  double batch_limit(std::size_t configs) {
    std::vector<double> seconds;
    CompileTimeout t;
    {
      std::lock_guard lock(mutex);
      seconds = compile_seconds;
      t = timeout;
    }
    const double limit = t.limit(seconds);
    if (configs <= 1) return limit;
    double typical = limit / CompileTimeout::kFactor;
    if (!seconds.empty()) {
      auto middle = seconds.begin() + static_cast<std::ptrdiff_t>(seconds.size() / 2);
      std::nth_element(seconds.begin(), middle, seconds.end());
      typical = *middle;
    }
    return limit + static_cast<double>(configs - 1) * typical;
  }

  void work(std::size_t index) {
    Subprocess process;  // this thread's compile process, when the pool uses processes
    // Start the compile process now rather than at the first request: it loads and warms NVRTC
    // (compile_worker_main) while the tuner enumerates the space and the GPU worker starts, so
    // the first configurations do not pay NVRTC's first-compile cost on the critical path.
    if (!process_command.empty()) {
      try {
        process.start(process_command, /*own_group=*/true);
      } catch (const Error&) {
        // remote_compile starts it again on the first request and reports the failure there.
      }
    }
    // At the end the process is asked to leave rather than killed, so that it removes what it
    // keeps on disk (its precompiled headers' directory, compile_worker_main).
    struct Farewell {
      Subprocess& process;
      ~Farewell() { process.stop(false); }
    } farewell{process};
    for (;;) {
      std::vector<Task> tasks;
      {
        std::unique_lock lock(mutex);
        wake.wait(lock, [&] { return stopping || !queue.empty(); });
        if (queue.empty()) return;  // stopping and drained
        tasks.push_back(std::move(queue.front()));
        queue.pop_front();
        // Take queued requests of the same batch group along, sharing the queue fairly among
        // the threads so that batching never leaves threads idle.
        // A copy: tasks grows below, which moves what a reference would point into.
        const std::string group = tasks.front().request.batch_group;
        if (!group.empty() && max_batch > 1) {
          const std::size_t fair = (queue.size() + 1 + workers.size() - 1) / workers.size();
          const std::size_t limit = std::min(max_batch, std::max<std::size_t>(1, fair));
          for (auto it = queue.begin(); it != queue.end() && tasks.size() < limit;) {
            if (it->request.batch_group == group) {
              tasks.push_back(std::move(*it));
              it = queue.erase(it);
            } else {
              ++it;
            }
          }
        }
      }
      std::vector<CompileResult> results;
      std::exception_ptr failure;
      CompileBatchRecord record;
      record.thread = index;
      record.begin = Clock::now();
      try {
        results = run(tasks, process, record);
      } catch (...) {
        failure = std::current_exception();
      }
      record.end = Clock::now();
      record.requests = tasks.size();
      if (failure) record.failed = tasks.size();
      CompileObserver observe;
      {
        std::lock_guard lock(mutex);
        observe = observer;
      }
      if (observe) observe(record);
      // Leave the in-flight map before the futures become ready, so a submission that follows
      // a finished one goes through the cache instead of holding on to a future.
      {
        std::lock_guard lock(mutex);
        for (const Task& t : tasks) in_flight.erase(t.key);
      }
      for (std::size_t i = 0; i < tasks.size(); ++i) {
        if (failure) {
          tasks[i].promise->set_exception(failure);
        } else {
          tasks[i].promise->set_value(std::move(results[i]));
        }
      }
    }
  }

  std::vector<CompileResult> run(const std::vector<Task>& tasks, Subprocess& process,
                                 CompileBatchRecord& record) {
    std::vector<CompileResult> results(tasks.size());
    std::vector<std::size_t> misses;
    std::vector<CompileRequest> requests;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      std::optional<CompileResult> hit = cache ? cache->get(tasks[i].request) : std::nullopt;
      if (hit) {
        results[i] = std::move(*hit);
      } else {
        misses.push_back(i);
        requests.push_back(tasks[i].request);
      }
    }
    if (requests.empty()) return results;
    Clock::time_point start = Clock::now();
    std::vector<CompileResult> compiled =
        process_command.empty() ? compile_batch(requests) : compile_remotely(process, requests);
    busy_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
    compiles += requests.size();
    record.compiled = requests.size();
    {
      std::lock_guard lock(mutex);
      for (const CompileResult& r : compiled)
        if (r.ok && r.compile_ms > 0) compile_seconds.push_back(r.compile_ms / 1000);
    }
    for (std::size_t k = 0; k < misses.size(); ++k) {
      if (!compiled[k].ok) ++record.failed;
      if (cache) cache->put(compiled[k]);
      results[misses[k]] = std::move(compiled[k]);
    }
    return results;
  }

  // A batch that timed out is compiled again a configuration at a time, so that only the slow
  // one fails (its limit then its own).
  std::vector<CompileResult> compile_remotely(Subprocess& process,
                                              const std::vector<CompileRequest>& requests) {
    const detail::CompileLimits limits{[this](std::size_t n) { return batch_limit(n); },
                                       [this] { return per_config_limit(); }};
    bool timed_out = false;
    std::vector<CompileResult> results =
        detail::remote_compile(process, process_command, requests, limits, timed_out);
    if (!timed_out || requests.size() == 1) return results;
    for (std::size_t i = 0; i < requests.size(); ++i)
      results[i] = std::move(
          detail::remote_compile(process, process_command, {requests[i]}, limits, timed_out)
              .front());
    return results;
  }
};

double CompileTimeout::limit(std::vector<double> seconds) const {
  if (fixed) return *fixed;
  if (seconds.empty()) return kFirst;
  auto q90 = seconds.begin() +
             static_cast<std::ptrdiff_t>(std::ceil(0.9 * static_cast<double>(seconds.size())) - 1);
  std::nth_element(seconds.begin(), q90, seconds.end());
  return std::max(kFloor, kFactor * *q90);
}

CompilePool::CompilePool(std::size_t threads, std::shared_ptr<CompileCache> cache,
                         std::vector<std::string> process_command)
    : impl_(std::make_unique<Impl>()) {
  impl_->cache = std::move(cache);
  impl_->process_command = std::move(process_command);
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  impl_->workers.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) {
    impl_->workers.emplace_back([impl = impl_.get(), i] { impl->work(i); });
  }
}

CompilePool::~CompilePool() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  for (std::thread& worker : impl_->workers) worker.join();
}

std::shared_future<CompileResult> CompilePool::submit(CompileRequest request) {
  std::vector<CompileRequest> one;
  one.push_back(std::move(request));
  return submit(std::move(one)).front();
}

std::vector<std::shared_future<CompileResult>> CompilePool::submit(
    std::vector<CompileRequest> requests) {
  std::vector<std::string> keys;
  keys.reserve(requests.size());
  for (const CompileRequest& r : requests) keys.push_back(r.key());
  std::vector<std::shared_future<CompileResult>> futures;
  futures.reserve(requests.size());
  std::size_t queued = 0;
  {
    std::lock_guard lock(impl_->mutex);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (auto found = impl_->in_flight.find(keys[i]); found != impl_->in_flight.end()) {
        futures.push_back(found->second);
        continue;
      }
      auto promise = std::make_shared<std::promise<CompileResult>>();
      futures.push_back(promise->get_future().share());
      impl_->in_flight.emplace(keys[i], futures.back());
      impl_->queue.push_back(
          Impl::Task{std::move(requests[i]), std::move(keys[i]), std::move(promise)});
      ++queued;
    }
  }
  // Woken after the whole group is queued, the threads share it out fairly (work()).
  if (queued == 1) {
    impl_->wake.notify_one();
  } else if (queued > 1) {
    impl_->wake.notify_all();
  }
  return futures;
}

std::size_t CompilePool::threads() const { return impl_->workers.size(); }

void CompilePool::set_max_batch(std::size_t n) {
  std::lock_guard lock(impl_->mutex);
  impl_->max_batch = std::max<std::size_t>(1, n);
}

void CompilePool::set_observer(CompileObserver observer) {
  std::lock_guard lock(impl_->mutex);
  impl_->observer = std::move(observer);
}

void CompilePool::set_timeout(CompileTimeout timeout) {
  std::lock_guard lock(impl_->mutex);
  impl_->timeout = timeout;
}

double CompilePool::timeout_seconds() const { return impl_->per_config_limit(); }

double CompilePool::busy_seconds() const { return impl_->busy_ns.load() * 1e-9; }

std::size_t CompilePool::compiles() const { return impl_->compiles.load(); }

}  // namespace ktune
