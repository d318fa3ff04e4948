// The tuning loop (see ktune/tuner.h) as named steps: start the strategy, register the run,
// the ask-compile-measure pipeline, the finalists' re-timing and the best, the summary. Every
// way out of a run writes its status: finished, interrupted (Ctrl-C), or failed (an exception
// from the strategy, store or backend, rethrown after the run row says so).
#include "ktune/tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "ktune/compiler.h"
#include "ktune/error.h"
#include "ktune/stagnation.h"
#include "loop/records.h"

namespace ktune {

using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

bool has_budget(std::uint64_t evaluations) {
  return evaluations != std::numeric_limits<std::uint64_t>::max();
}

// A configuration the strategy asked for: answered from the database, or compiling.
struct Pending {
  Config config;
  std::string key;
  std::optional<TrialRecord> cached;
  std::shared_future<CompileResult> compiled;
  bool has_compile = false;
  Clock::time_point submitted;  // to the backend
  bool busy = false;            // another process has claimed it: its trial will answer it
};

// Prepares the backend (for the CUDA backend: worker start, inputs, reference) on another thread
// as soon as the first configuration that must be measured is queued, so it overlaps the first
// compilations; a run answered wholly from the database never starts it.
class BackendPreparer {
 public:
  BackendPreparer(Backend& backend, const KernelInstance& instance, const MeasureOptions& measure)
      : backend_(backend), instance_(instance), measure_(measure) {}
  ~BackendPreparer() {
    if (preparing_.valid()) preparing_.wait();
  }
  void start() {
    if (!prepared_ && !preparing_.valid())
      preparing_ = std::async(std::launch::async, [this] {
        began_ = Clock::now();
        backend_.prepare(instance_, measure_);
        ended_ = Clock::now();
        seconds_ = std::chrono::duration<double>(ended_ - began_).count();
      });
  }
  // Returns the seconds the caller waited for the preparation (0 once it is done).
  double wait() {
    if (prepared_) return 0;
    start();
    prepared_ = true;
    const auto w0 = Clock::now();
    preparing_.get();
    return seconds_since(w0);
  }
  // Wall time of the preparation itself, and when it ran (after wait()).
  double seconds() const { return seconds_; }
  Clock::time_point began() const { return began_; }
  Clock::time_point ended() const { return ended_; }
  bool ready() const { return prepared_; }

 private:
  Backend& backend_;
  const KernelInstance& instance_;
  const MeasureOptions& measure_;
  bool prepared_ = false;
  std::future<void> preparing_;
  double seconds_ = 0;
  Clock::time_point began_, ended_;
};

// The run's own timers (TuneSummary's seconds), from what the loop reports.
class RunTimers final : public RunObserver {
 public:
  explicit RunTimers(TuneSummary& summary) : s_(summary) {}
  void activity(Activity what, RunClock::time_point begin, RunClock::time_point end) override {
    const double seconds = std::chrono::duration<double>(end - begin).count();
    seconds_of(what) += seconds;
  }
  void prepared(RunClock::time_point begin, RunClock::time_point end,
                const std::map<std::string, double>& steps) override {
    s_.prepare_seconds = std::chrono::duration<double>(end - begin).count();
    s_.prepare_phases_seconds = steps;
  }

 private:
  double& seconds_of(Activity what) {
    switch (what) {
      case Activity::kStrategy:
        return s_.strategy_seconds;
      case Activity::kStore:
        return s_.store_seconds;
      case Activity::kBackend:
        return s_.backend_seconds;
      case Activity::kWaitCompile:
        return s_.wait_compile_seconds;
      case Activity::kWaitClaim:
        return s_.wait_claim_seconds;
      case Activity::kWaitPrepare:
        break;
    }
    return s_.wait_prepare_seconds;
  }
  TuneSummary& s_;
};

class TuningRun {
 public:
  TuningRun(const KernelInstance& instance, Backend& backend, Store& store, Strategy& strategy,
            const TuneOptions& options, CompilePool* pool, RunObserver* observer,
            const std::atomic<bool>* stop)
      : instance_(instance),
        space_(instance.space()),
        backend_(backend),
        store_(store),
        strategy_(&strategy),
        options_(options),
        pool_(pool),
        stop_(stop),
        device_(backend.device()),
        preparer_(backend, instance, options.measure),
        stagnation_(options.budget.stagnation) {
    observers_.add(&timers_);
    observers_.add(observer);
    observed_ = observer != nullptr;
  }

  TuneSummary run() {
    // The pool outlives the run: its threads stop reporting to this run's observer at the end.
    struct Observing {
      CompilePool* pool;
      ~Observing() {
        if (pool) pool->set_observer({});
      }
    } observing{observed_ ? pool_ : nullptr};
    if (observing.pool)
      observing.pool->set_observer([this](const CompileBatchRecord& r) { observers_.compiled(r); });
    try {
      start_strategy();
      search();
      summary_.search_seconds = seconds_since(t0_);
      observers_.phase(RunPhase::kSearch, t0_, Clock::now(), 0);
      const auto w0 = Clock::now();
      choose_winner();
      observers_.phase(RunPhase::kRetime, w0, Clock::now(), summary_.finalists.size());
      finish();
      observers_.phase(RunPhase::kFinish, w0, Clock::now(), summary_.finalists.size());
    } catch (...) {
      fail();
      throw;
    }
    return summary_;
  }

 private:
  // Runs `body`, telling the observers how long it took as `what`.
  template <typename F>
  decltype(auto) timed(Activity what, F&& body) {
    struct Report {
      RunObservers& to;
      Activity what;
      Clock::time_point begin = Clock::now();
      ~Report() { to.activity(what, begin, Clock::now()); }
    } report{observers_, what};
    return body();
  }

  // --- Step 1: the strategy starts, with the warm start, before anything is written ----------
  // Until the strategy has accepted its options the database is only read: a refused run leaves
  // an existing database as it was.
  void start_strategy() {
    if (backend_.needs_compilation() && pool_ == nullptr)
      throw Error(ErrorKind::kInternal, "the backend compiles, but no compile pool was given");
    const DeviceRecord device = device_record(device_);
    ProblemRecord problem;
    problem.kernel_name = instance_.kernel().name;
    problem.key = instance_.problem_key();
    problem.json = json(instance_.problem()).dump();
    ids_.device = store_.find_device(device).value_or(0);
    ids_.problem = store_.find_problem(problem.kernel_name, problem.key).value_or(0);
    if (!std::isnan(options_.stop_at_ceiling)) {
      if (ids_.device != 0) ceilings_ = store_.ceilings(ids_.device);
      summary_.ceiling.wanted = options_.stop_at_ceiling;
      summary_.ceiling.stored = ceilings_.has_value();
    }
    const StrategyContext context = strategy_context();
    if (options_.warm_start) {
      std::vector<TransferSource> sources = options_.transfer;
      for (auto& s : stored_sources()) sources.push_back(std::move(s));
      if (!sources.empty()) {
        transfer_.emplace(*strategy_, std::move(sources), options_.warm_start_top);
        strategy_ = &*transfer_;
      }
    }
    strategy_->start(context);  // rejects bad options before anything is written
    ids_.device = store_.upsert_device(device);
    ids_.kernel = store_.upsert_kernel(kernel_record(instance_));
    ids_.problem = store_.upsert_problem(problem);
    compile_busy_start_ = pool_ ? pool_->busy_seconds() : 0;

    progress_state_.total = std::min<std::uint64_t>(
        {options_.budget.evaluations, static_cast<std::uint64_t>(space_.cartesian_size()),
         kValidCountLimit});
    std::uint64_t valid = 0;
    space_.for_each_valid([&](const Config&) { return ++valid < progress_state_.total; });
    progress_state_.total = std::min(progress_state_.total, valid);
    max_repeats_ = std::max<std::uint64_t>(1000, 2 * valid);
  }

  // What the strategy starts from: the space, seed, budget, options, and the seeds given as
  // configuration keys that are valid configurations of this space.
  StrategyContext strategy_context() {
    StrategyContext context;
    context.space = &space_;
    context.seed = options_.seed;
    context.budget = options_.budget.evaluations;
    context.budget_seconds = options_.budget.seconds;
    context.options = options_.strategy_options;
    context.part = options_.part;
    context.parts = options_.parts;
    for (const std::string& key : options_.seeds) {
      try {
        Config c = space_.parse_key(key);
        if (space_.is_valid(c) && seed_keys_.insert(space_.key(c)).second)
          context.warm_start.push_back(std::move(c));
      } catch (const Error&) {
        // A key of another space: not a seed here.
      }
    }
    return context;
  }

  // This kernel's trials stored for other devices or problems, one source per (device,
  // problem) and the latest kernel version of each.
  std::vector<TransferSource> stored_sources() const {
    std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> kernel_of;
    for (const RunRecord& r : store_.runs(instance_.kernel().name))
      if (r.device_id != ids_.device || r.problem_id != ids_.problem)
        kernel_of[{r.device_id, r.problem_id}] = r.kernel_id;
    std::vector<TransferSource> out;
    for (const auto& [where, kernel] : kernel_of) {
      TransferSource s;
      s.name = fmt::format("device {} problem {}", where.first, where.second);
      for (const TrialRecord& t : store_.trials_for(kernel, where.first, where.second)) {
        if (t.kind != TrialKind::kSearch && t.kind != TrialKind::kWarmStart) continue;
        const json config = json::parse(t.config_json.empty() ? "{}" : t.config_json);
        std::vector<Value> row;
        if (s.params.empty())
          for (auto it = config.begin(); it != config.end(); ++it) s.params.push_back(it.key());
        for (const auto& name : s.params)
          row.push_back(config.contains(name) ? value_from_json(config.at(name))
                                              : Value(std::int64_t{0}));
        s.configs.push_back(std::move(row));
        s.times.push_back(t.status == TrialStatus::kOk ? t.time_ms : std::nan(""));
      }
      out.push_back(std::move(s));
    }
    return out;
  }

  // --- Step 2: the run row, written with the first trial ------------------------------------
  void ensure_registered() {
    if (ids_.run != 0) return;
    RunRecord run;
    run.kernel_id = ids_.kernel;
    run.device_id = ids_.device;
    run.problem_id = ids_.problem;
    run.backend = backend_.name();
    run.replayed = backend_.replays();
    if (!run.replayed) run.flush_l2 = options_.measure.flush_l2;
    run.strategy = options_.strategy;
    run.strategy_chosen = options_.strategy_chosen;
    run.strategy_options = json(options_.strategy_options).dump();
    json budget = json::object();
    if (has_budget(options_.budget.evaluations))
      budget["evaluations"] = options_.budget.evaluations;
    if (std::isfinite(options_.budget.seconds)) budget["seconds"] = options_.budget.seconds;
    if (options_.budget.stagnation > 0) budget["stagnation"] = options_.budget.stagnation;
    run.budget = budget.dump();
    run.ktune_version = KTUNE_VERSION;
    run.nvrtc_version = nvrtc_version();
    run.driver_version = device_.driver_version;
    run.command_line = options_.command_line;
    run.seed = options_.seed;
    run.objective = options_.objective.name;
    run.objective_higher_is_better = options_.objective.higher_is_better;
    ids_.run = store_.begin_run(run);
    summary_.run_id = ids_.run;
  }

  // --- Step 3: the pipeline ------------------------------------------------------------------
  void search() {
    // Enough queued that every compile thread has work; for a strategy whose order is fixed,
    // enough that each takes full batches (kFixedOrderBatch configurations per NVRTC program:
    // 35 ms per reduce configuration against 44 ms in batches of 4, bench_compile).
    constexpr std::size_t kFixedOrderBatch = 16;
    const std::size_t threads = pool_ ? pool_->threads() : 1;
    const std::size_t lookahead =
        options_.lookahead
            ? options_.lookahead
            : std::max<std::size_t>(
                  8, (strategy_->fixed_order() && pool_ ? kFixedOrderBatch : 4) * threads);
    const std::size_t depth = std::max<std::size_t>(1, backend_.pipeline_depth());
    for (;;) {
      beat();
      const bool stopping = stop_ && stop_->load();
      if (stopping) status_ = RunStatus::kInterrupted;
      if (repeats_ > max_repeats_) break;
      if (!stopping && stagnation_.stagnant()) summary_.stagnated = true;
      if (stopping || summary_.trials + in_flight_.size() >= options_.budget.evaluations ||
          seconds_since(t0_) >= options_.budget.seconds || summary_.stagnated ||
          summary_.ceiling.reached) {
        // What is already on the GPU is measured: keep it.
        if (in_flight_.empty()) break;
        collect();
        continue;
      }
      const bool starved = fill_queue(lookahead);
      const std::uint64_t told_before = summary_.trials;
      feed_backend(depth);
      const bool silent = starved && summary_.trials == told_before;
      silent_asks_ = silent ? silent_asks_ + 1 : 0;
      if (!in_flight_.empty()) {
        collect();
      } else if (queue_.empty() &&
                 (strategy_->exhausted() || (silent && silent_asks_ >= kSilentAsks))) {
        // Nothing outstanding and nothing more to propose. A strategy that had nothing to
        // propose before answers from the database were told (a resumed run's whole batch)
        // is asked again, and so is one that proposed nothing this time (a sampler whose
        // draws were all rejected as invalid): where an uninterrupted run would have had a
        // measurement in flight and asked again after it, a resumed run, whose answers come
        // from the database at once, must not stop. Only a strategy that stays silent for
        // kSilentAsks asks in a row, with nothing told in between, is done.
        break;
      }
    }
    // What is left in the queue will not be measured by this run: others may take it now.
    store_.release_claims();
  }

  // Tells readers on other hosts, who cannot check this process, that the run is alive.
  void beat() {
    if (ids_.run == 0 || seconds_since(last_beat_) < Store::heartbeat_seconds) return;
    store_.heartbeat(ids_.run);
    last_beat_ = Clock::now();
  }

  // Asks the strategy for more until `lookahead` configurations are queued and starts their
  // compilations; true when the strategy has nothing to propose for now.
  bool fill_queue(std::size_t lookahead) {
    bool starved = strategy_->exhausted();
    // Room for fewer than a batch while work is queued: wait for more room.
    const std::size_t batch = std::min(strategy_->ask_batch(), lookahead);
    if (!queue_.empty() && lookahead - std::min(lookahead, queue_.size()) < batch) return starved;
    while (queue_.size() < lookahead && !strategy_->exhausted()) {
      const std::uint64_t committed = summary_.trials + in_flight_.size() + queue_.size();
      const std::uint64_t left =
          options_.budget.evaluations > committed ? options_.budget.evaluations - committed : 0;
      const auto want =
          static_cast<std::size_t>(std::min<std::uint64_t>(lookahead - queue_.size(), left));
      if (want == 0) break;
      const std::vector<Config> configs =
          timed(Activity::kStrategy, [&] { return strategy_->ask(want); });
      if (configs.empty()) {
        starved = true;
        break;
      }
      for (const Config& c : configs) {
        Pending p;
        p.config = c;
        p.key = space_.key(c);
        claim(p);
        queue_.push_back(std::move(p));
      }
    }
    return starved;
  }

  // Waits for the backend's preparation the first time it is needed, and reports it.
  void wait_prepared() {
    if (preparer_.ready()) return;
    const auto w0 = Clock::now();
    const double waited = preparer_.wait();
    observers_.prepared(preparer_.began(), preparer_.ended(), backend_.prepare_phases());
    if (waited > 0) observers_.activity(Activity::kWaitPrepare, w0, Clock::now());
  }

  // Answers a configuration from the database, or claims it there and starts its compilation
  // (one transaction, so concurrent processes never both measure it), or marks it busy: another
  // process measures it.
  void claim(Pending& p) {
    if (options_.reuse) {
      const Store::Claim c = timed(Activity::kStore, [&] {
        return store_.claim(ids_.kernel, ids_.device, ids_.problem, p.key, backend_.replays());
      });
      p.busy = c.state == Store::Claim::State::kBusy;
      if (c.trial && reusable(*c.trial)) p.cached = c.trial;
    }
    if (p.cached || p.busy || !space_.is_valid(p.config)) return;
    preparer_.start();
    if (backend_.needs_compilation()) {
      p.compiled = pool_->submit(render(instance_, p.config, device_.arch));
      p.has_compile = true;
    }
  }

  // A configuration another process has claimed waits for its trial: it goes to the back of the
  // queue while others can go ahead, else the loop waits a little. False: stop feeding for now.
  bool wait_for_claim() {
    claim(queue_.front());
    if (!queue_.front().busy) return true;
    const auto ready =
        std::find_if(queue_.begin(), queue_.end(), [](const Pending& p) { return !p.busy; });
    if (ready != queue_.end()) {
      std::rotate(queue_.begin(), ready, queue_.end());
      return true;
    }
    if (in_flight_.empty())
      timed(Activity::kWaitClaim,
            [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
    return false;
  }

  // Submits queued configurations up to the backend's pipeline depth; those that need no
  // backend (from the database, invalid, failed to compile) are recorded here.
  void feed_backend(std::size_t depth) {
    while (!queue_.empty() && in_flight_.size() < depth) {
      if (strategy_->fixed_order()) bring_ready_forward();
      if (queue_.front().busy && !wait_for_claim()) break;
      Pending& p = queue_.front();
      // A duplicate proposed earlier in this run may have been measured since it was queued.
      if (!p.cached) p.cached = lookup(p.key);
      if (p.cached) {
        // An answer from the database takes the place its measurement took in the pipeline, so
        // a resumed run tells the strategy in the order an uninterrupted one does (Optuna's
        // samplers ask differently after a different order of tells).
        if (measured_in_pipeline(p))
          in_flight_.push_back(std::move(p));
        else
          record(p, nullptr, nullptr);
        queue_.pop_front();
        continue;
      }
      if (auto broken = space_.violated(p.config)) {
        Measurement m;
        m.status = TrialStatus::kInvalid;
        m.error = fmt::format(
            "strategy proposed an invalid configuration: restriction '{}' does not hold", *broken);
        record(p, &m, nullptr);
        queue_.pop_front();
        continue;
      }
      const CompileResult* c = nullptr;
      if (p.has_compile) {
        // With a measurement in flight, collect it rather than wait for this compilation.
        if (!in_flight_.empty() &&
            p.compiled.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
          break;
        c = &timed(Activity::kWaitCompile,
                   [&]() -> const CompileResult& { return p.compiled.get(); });
        if (!c->ok) {
          Measurement m;
          m.status = TrialStatus::kCompileFailed;
          m.error = c->error;
          record(p, &m, c);
          queue_.pop_front();
          continue;
        }
      }
      wait_prepared();
      p.submitted = Clock::now();
      timed(Activity::kBackend, [&] { backend_.submit(p.config, c); });
      in_flight_.push_back(std::move(p));
      queue_.pop_front();
      observers_.in_flight(in_flight_.size(), Clock::now());
    }
  }

  // A strategy whose order is fixed (brute force, random search) learns nothing from the order
  // of its answers, so the GPU takes the first queued configuration whose compilation is done
  // rather than wait on the queue's head while later ones, finished by other compile processes,
  // sit ready (compilations finish out of order: each process compiles a batch at a time). With
  // nothing in flight it waits for whichever compilation finishes first.
  void bring_ready_forward() {
    const auto ready = [](const Pending& p) {
      return !p.has_compile ||
             p.compiled.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    };
    timed(Activity::kWaitCompile, [&] {
      for (;;) {
        if (queue_.front().busy || ready(queue_.front())) return;
        const auto it = std::find_if(std::next(queue_.begin()), queue_.end(),
                                     [&](const Pending& p) { return !p.busy && ready(p); });
        if (it != queue_.end()) {
          Pending p = std::move(*it);
          queue_.erase(it);
          queue_.push_front(std::move(p));
          return;
        }
        if (!in_flight_.empty()) return;  // collect that measurement meanwhile
        queue_.front().compiled.wait_for(std::chrono::milliseconds(1));
      }
    });
  }

  // Whether a configuration's trial came from the backend (rather than a restriction or the
  // compiler, which answer it before the pipeline).
  bool measured_in_pipeline(const Pending& p) const {
    return !space_.violated(p.config) && p.cached->status != TrialStatus::kCompileFailed;
  }

  void collect() {
    Pending p = std::move(in_flight_.front());
    in_flight_.pop_front();
    if (p.cached) {
      record(p, nullptr, nullptr);
      return;
    }
    const Measurement m = timed(Activity::kBackend, [&] { return backend_.collect(); });
    if (observed_) {
      const auto now = Clock::now();
      observers_.measured(p.key, m, p.has_compile ? p.compiled.get().cubin.size() : 0, p.submitted,
                          now);
      observers_.in_flight(in_flight_.size(), now);
    }
    record(p, &m, p.has_compile ? &p.compiled.get() : nullptr);
  }

  std::optional<TrialRecord> lookup(const std::string& key) {
    if (!options_.reuse) return std::nullopt;
    std::optional<TrialRecord> t = timed(Activity::kStore, [&] {
      return store_.find_trial(ids_.kernel, ids_.device, ids_.problem, key, backend_.replays());
    });
    if (t && !reusable(*t)) return std::nullopt;
    return t;
  }

  // A run that times every configuration fully (--no-cutoff) measures again what the early
  // cut-off stopped in an earlier run.
  // A run of another objective than time reuses only the trials of runs with that objective,
  // whose values of it are stored with them.
  bool reusable(const TrialRecord& t) {
    if (t.cut && !options_.measure.cutoff) return false;
    if (options_.objective.is_time()) return true;
    auto it = run_objectives_.find(t.run_id);
    if (it == run_objectives_.end()) {
      const std::optional<RunRecord> run = store_.run(t.run_id);
      it = run_objectives_.emplace(t.run_id, run ? run->ranked_by() : Objective{}).first;
    }
    return it->second == options_.objective;
  }

  // Stores a trial (unless it came from the database), tells the strategy, reports progress.
  void record(const Pending& p, const Measurement* m, const CompileResult* c) {
    TrialRecord t;
    if (p.cached) {
      t = *p.cached;  // of a run with this run's objective (reusable)
      ++summary_.from_database;
    } else {
      t = measured_trial(instance_, p.config, device_.arch, *m, c);
      const bool opening =
          (transfer_ && transfer_->from_opening(p.config)) || seed_keys_.count(p.key);
      t.kind = opening && !told_keys_.count(p.key) ? TrialKind::kWarmStart : TrialKind::kSearch;
      evaluate_objective(t);
      ensure_registered();
      ids_.stamp(t);
      t.id = timed(Activity::kStore, [&] { return store_.add_trial(t); });
      ++summary_.measured;
      summary_.cut += t.cut ? 1 : 0;
      for (const auto& [phase, ms] : m->phases_ms) summary_.phases_seconds[phase] += ms * 1e-3;
      summary_.gpu_seconds += m->gpu_ms * 1e-3;
      summary_.timed_seconds += m->timed_ms * 1e-3;
      summary_.clocks.add(*m);
      if (options_.measure.energy_ms > 0 && t.status == TrialStatus::kOk && !t.cut &&
          !std::isfinite(t.energy_j) && summary_.energy_missing.empty())
        summary_.energy_missing = m->energy_source.empty() ? "not measured" : m->energy_source;
    }
    // A strategy that only repeats configurations told before would never end a run without a
    // budget; after max_repeats_ repeats in a row the run ends.
    repeats_ = told_keys_.insert(p.key).second ? 0 : repeats_ + 1;
    timed(Activity::kStrategy,
          [&] { strategy_->tell(p.config, outcome(t, p.cached.has_value())); });
    if (summary_.trials == 0) summary_.first_result_seconds = seconds_since(t0_);
    const bool counts = t.status == TrialStatus::kOk && !t.cut;
    stagnation_.tell(counts ? score(t) : std::nan(""), t.time_spread);
    ++summary_.trials;
    ++summary_.by_status[std::string(to_string(t.status))];
    report_progress(t);
  }

  // --- The objective (ktune/store.h Objective; docs/python.md#objectives)
  // --------------------------- A trial's value of another objective than time: the caller's
  // function of an ok trial that was not cut; NaN for the others.
  void evaluate_objective(TrialRecord& t) const {
    if (options_.objective.is_time()) return;
    t.objective = t.status == TrialStatus::kOk && !t.cut && options_.objective_value
                      ? options_.objective_value(t)
                      : std::nan("");
  }

  // What ranks a trial, lower is better and above zero: its time, its objective's value, or
  // the inverse of a value where higher is better (a rate: its inverse is proportional to the
  // time), so that the strategies see the same kind of number as a time. NaN where there is no
  // such number.
  double score(const TrialRecord& t) const {
    const double v = options_.objective.is_time() ? t.time_ms : t.objective;
    if (!std::isfinite(v) || v <= 0) return std::nan("");
    return !options_.objective.is_time() && options_.objective.higher_is_better ? 1.0 / v : v;
  }

  // What the strategy is told: an ok trial without a usable value of the objective is a failed
  // one to the search (it can never be the best either).
  Outcome outcome(const TrialRecord& t, bool cached) const {
    if (options_.objective.is_time()) return Outcome{t.status, t.time_ms, cached};
    const double s = score(t);
    if (t.status == TrialStatus::kOk && !std::isfinite(s))
      return Outcome{TrialStatus::kWrongResult, 0, cached};
    return Outcome{t.status, s, cached};
  }

  void report_progress(const TrialRecord& t) {
    Progress& prog = progress_state_;
    const double s = score(t);
    if (t.status == TrialStatus::kOk && !t.cut && std::isfinite(s) &&
        (!best_score_ || s < *best_score_)) {
      best_score_ = s;
      prog.best_ms = t.time_ms;
      prog.best_key = t.config_key;
      prog.best_gbps = t.gbps;
      // The early cut-off follows the best (docs/measuring.md#early-cut-off); a run of another
      // objective has none (TuneOptions::objective).
      if (options_.measure.cutoff && options_.objective.is_time())
        backend_.set_cutoff(MeasureOptions::kCutoffFactor * t.time_ms);
      check_ceiling(t);
    }
    prog.done = summary_.trials;
    prog.measured = summary_.measured;
    prog.elapsed_seconds = seconds_since(t0_);
    observers_.progress(prog);
  }

  // --stop-at-ceiling: the best's rate against the device's measured limit, the nearer of its
  // FLOP/s against the FMA peak and its GB/s against the bandwidth
  // (docs/effort.md#stop-at-the-speed-of-light).
  void check_ceiling(const TrialRecord& best) {
    if (!ceilings_) return;
    double fraction = std::nan("");
    const auto nearer = [&](double rate, double limit) {
      if (std::isfinite(rate) && rate > 0 && std::isfinite(limit) && limit > 0)
        fraction = std::isnan(fraction) ? rate / limit : std::max(fraction, rate / limit);
    };
    nearer(best.gflops, ceilings_->fma_gflops);
    nearer(best.gbps, ceilings_->bandwidth_gbps());
    if (std::isnan(fraction)) return;
    summary_.ceiling.fraction = fraction;
    summary_.ceiling.declared = true;
    if (fraction >= options_.stop_at_ceiling) summary_.ceiling.reached = true;
  }

  // --- Step 4: the finalists, the best and its binary ----------------------------------------
  // The winner comes from every verified search trial of this kernel, device and problem (of
  // earlier runs too, measured or replayed as this run is), after re-timing the leaders
  // interleaved so that noise cannot crown one (not after Ctrl-C: the user wants out).
  void choose_winner() {
    std::vector<TrialRecord> ok = leaders();
    if (ok.empty()) return;
    TrialRecord winner = ok.front();
    const std::size_t top = std::min<std::size_t>(
        ok.size(), static_cast<std::size_t>(std::max(options_.retime_top, 0)));
    if (status_ == RunStatus::kFinished && top >= 2) {
      ok.resize(top);
      progress_state_.phase = fmt::format("re-timing {} finalists", top);
      if (!backend_.replays() && options_.measure.sustain_ms > 0)
        progress_state_.phase += " after a sustained load";
      progress_state_.elapsed_seconds = seconds_since(t0_);
      observers_.progress(progress_state_);
      retime(ok);
      if (!summary_.finalists.empty()) winner = summary_.finalists.front();
    }
    ensure_registered();
    store_.set_best(winner.id, options_.objective);
    // The configurations no other beats in time and energy, where trials have an energy.
    summary_.pareto =
        store_.update_pareto(ids_.kernel, ids_.device, ids_.problem, backend_.replays());
    // Keep the winner's CUBIN, so a client can launch it without compiling.
    if (backend_.needs_compilation()) {
      const CompileResult c =
          pool_->submit(render(instance_, space_.parse_key(winner.config_key), device_.arch)).get();
      if (c.ok) store_.put_binary(c.key, c.arch, c.lowered_name, c.cubin);
    }
    summary_.best = winner;
  }

  // Ok search trials, the latest of each configuration, fastest first: as many as the
  // re-timing takes, at least the winner.
  std::vector<TrialRecord> leaders() const {
    const auto n = static_cast<std::size_t>(std::max(options_.retime_top, 1));
    return store_.leaders(ids_.kernel, ids_.device, ids_.problem, backend_.replays(), n,
                          options_.objective);
  }

  // Re-times the finalists interleaved and stores each as a re-timing trial.
  void retime(const std::vector<TrialRecord>& finalists) {
    // The finalists' compilations go to the pool together (mostly cache hits).
    std::vector<Config> configs;
    std::vector<CompileRequest> requests;
    for (const TrialRecord& f : finalists) {
      configs.push_back(space_.parse_key(f.config_key));
      if (backend_.needs_compilation())
        requests.push_back(render(instance_, configs.back(), device_.arch));
    }
    std::vector<CompileResult> compiled(finalists.size());
    if (backend_.needs_compilation()) {
      std::vector<std::shared_future<CompileResult>> futures = pool_->submit(std::move(requests));
      for (std::size_t i = 0; i < futures.size(); ++i) compiled[i] = futures[i].get();
    }
    std::vector<RetimeCandidate> candidates;
    for (std::size_t i = 0; i < finalists.size(); ++i)
      candidates.push_back({configs[i], backend_.needs_compilation() ? &compiled[i] : nullptr});
    wait_prepared();
    const std::vector<Measurement> re = backend_.retime(candidates, options_.retime_rounds);
    ensure_registered();
    for (std::size_t i = 0; i < finalists.size() && i < re.size(); ++i) {
      summary_.gpu_seconds += re[i].gpu_ms * 1e-3;
      summary_.retime_clocks.add(re[i]);
      if (auto it = re[i].phases_ms.find("sustain"); it != re[i].phases_ms.end())
        summary_.sustain_seconds = it->second * 1e-3;
      TrialRecord r = finalists[i];
      r.kind = TrialKind::kRetime;
      r.error.clear();
      r.created_at.clear();
      ids_.stamp(r);
      set_timing(r, re[i], throughput(instance_, configs[i], re[i].time_ms));
      evaluate_objective(r);
      r.id = store_.add_trial(r);
      summary_.finalists.push_back(r);
    }
    if (!options_.objective.is_time()) {
      // Ranked on their re-timed value of the objective; one without a value is no finalist.
      std::erase_if(summary_.finalists,
                    [this](const TrialRecord& t) { return !std::isfinite(score(t)); });
      std::stable_sort(
          summary_.finalists.begin(), summary_.finalists.end(),
          [this](const TrialRecord& a, const TrialRecord& b) { return score(a) < score(b); });
      return;
    }
    // Ranked on the rounds the backend ranked them on, where it kept those apart from the rounds
    // that time them (the CUDA backend: the stored time of the winner is not the draw that made
    // it win); else on the time.
    std::stable_sort(
        summary_.finalists.begin(), summary_.finalists.end(),
        [](const TrialRecord& a, const TrialRecord& b) { return a.ranking_ms() < b.ranking_ms(); });
  }

  // --- Step 5: the summary and the run's status ----------------------------------------------
  void finish() {
    summary_.status = status_;
    summary_.wall_seconds = seconds_since(t0_);
    if (pool_) summary_.compile_seconds = pool_->busy_seconds() - compile_busy_start_;
    ensure_registered();
    store_.finish_run(ids_.run, status_, summary_json(summary_).dump());
    store_.release_claims();
  }

  // A failure: a registered run says so; one that stored nothing leaves no row.
  void fail() noexcept {
    try {
      store_.release_claims();
    } catch (...) {
      // Left behind, they expire with this process.
    }
    if (ids_.run == 0) return;
    try {
      summary_.wall_seconds = seconds_since(t0_);
      json s = summary_json(summary_);
      try {
        throw;
      } catch (const std::exception& e) {
        s["error"] = e.what();
      } catch (...) {
        s["error"] = "unknown exception";
      }
      store_.finish_run(ids_.run, RunStatus::kFailed, s.dump());
    } catch (...) {
      // The original failure is what the caller must see.
    }
  }

  const KernelInstance& instance_;
  const SearchSpace& space_;
  Backend& backend_;
  Store& store_;
  Strategy* strategy_;                      // the caller's, or transfer_ around it
  std::optional<TransferSearch> transfer_;  // --warm-start: the transfer opening
  const TuneOptions& options_;
  CompilePool* pool_;
  const std::atomic<bool>* stop_;
  const DeviceInfo device_;
  const Clock::time_point t0_ = Clock::now();
  Clock::time_point last_beat_ = Clock::now();  // begin_run is the first beat

  BackendPreparer preparer_;
  TrialIds ids_;
  TuneSummary summary_;
  RunTimers timers_{summary_};
  RunObservers observers_;  // the timers, then the caller's observer
  bool observed_ = false;   // the caller gave an observer
  Progress progress_state_;
  std::optional<double> best_score_;                  // the best score(t) so far
  std::map<std::int64_t, Objective> run_objectives_;  // reusable(): the objective of each run
  StagnationWatch stagnation_;                        // Budget::stagnation
  std::optional<DeviceCeilings> ceilings_;  // --stop-at-ceiling: the device's, where stored
  RunStatus status_ = RunStatus::kFinished;
  double compile_busy_start_ = 0;
  std::deque<Pending> queue_;      // asked; compiling or compiled
  std::deque<Pending> in_flight_;  // submitted to the backend, result not yet collected
  std::set<std::string> told_keys_;
  std::set<std::string> seed_keys_;  // TuneOptions::seeds valid here
  std::uint64_t repeats_ = 0;
  static constexpr int kSilentAsks = 4;
  int silent_asks_ = 0;  // asks in a row that proposed nothing and were followed by no tell
  std::uint64_t max_repeats_ = 1000;
};

}  // namespace

namespace {
json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(); }
}  // namespace

json summary_json(const TuneSummary& m) {
  json s;
  s["run_id"] = m.run_id;
  s["status"] = to_string(m.status);
  s["trials"] = m.trials;
  s["measured"] = m.measured;
  s["from_database"] = m.from_database;
  s["cut"] = m.cut;
  s["stagnated"] = m.stagnated;
  if (m.pareto > 0) s["pareto"] = m.pareto;
  if (!m.energy_missing.empty()) s["energy_missing"] = m.energy_missing;
  if (!std::isnan(m.ceiling.wanted))
    s["ceiling"] = {
        {"stop_at", m.ceiling.wanted},
        {"stored", m.ceiling.stored},
        {"declared", m.ceiling.declared},
        {"fraction", std::isnan(m.ceiling.fraction) ? json() : json(m.ceiling.fraction)},
        {"reached", m.ceiling.reached}};
  s["by_status"] = m.by_status;
  s["wall_seconds"] = m.wall_seconds;
  s["first_result_seconds"] = m.first_result_seconds;
  s["prepare_seconds"] = m.prepare_seconds;
  s["wait_prepare_seconds"] = m.wait_prepare_seconds;
  s["prepare_phases_seconds"] = m.prepare_phases_seconds;
  s["search_seconds"] = m.search_seconds;
  s["configs_per_second"] = m.wall_seconds > 0 ? m.trials / m.wall_seconds : 0;
  s["gpu_seconds"] = m.gpu_seconds;
  s["timed_seconds"] = m.timed_seconds;
  s["gpu_share"] = m.wall_seconds > 0 ? m.gpu_seconds / m.wall_seconds : 0;
  s["timed_share"] = m.wall_seconds > 0 ? m.timed_seconds / m.wall_seconds : 0;
  s["compile_seconds"] = m.compile_seconds;
  s["backend_seconds"] = m.backend_seconds;
  s["wait_compile_seconds"] = m.wait_compile_seconds;
  s["store_seconds"] = m.store_seconds;
  s["wait_claim_seconds"] = m.wait_claim_seconds;
  s["strategy_seconds"] = m.strategy_seconds;
  s["phases_seconds"] = m.phases_seconds;
  if (m.clocks.readings > 0) s["gpu_clocks"] = clocks_json(m.clocks);
  if (!m.finalists.empty()) s["retime"] = retime_json(m);
  if (m.best)
    s["best"] = {{"config", json::parse(m.best->config_json.empty() ? "{}" : m.best->config_json)},
                 {"key", m.best->config_key},
                 {"time_ms", m.best->time_ms},
                 {"gbps", m.best->gbps},
                 {"energy_j", finite_or_null(m.best->energy_j)},
                 {"power_w", finite_or_null(m.best->power_w)},
                 {"trial_id", m.best->id}};
  for (const auto& f : m.finalists)
    s["finalists"].push_back({{"key", f.config_key},
                              {"time_ms", f.time_ms},
                              {"gbps", f.gbps},
                              {"energy_j", finite_or_null(f.energy_j)}});
  return s;
}

TuneSummary tune(const KernelInstance& instance, Backend& backend, Store& store, Strategy& strategy,
                 const TuneOptions& options, CompilePool* pool, RunObserver* observer,
                 const std::atomic<bool>* stop) {
  return TuningRun(instance, backend, store, strategy, options, pool, observer, stop).run();
}

}  // namespace ktune
