// Optuna's samplers as ktune strategies. Everything that needs Python lives in
// libktune_optuna.so, which the strategies dlopen on first use, so `ktune` starts and runs
// without Python. This side keeps the study constraint-exact: Optuna samples value indices over
// the Cartesian product, and a proposal that breaks a restriction is projected onto the nearest
// valid configuration (or, with constraints=reject, told as failed and asked again) before the
// loop ever sees it. Proposals of configurations already told are answered at once; see
// docs/optuna.md for the design and its measured cost.
#include "strategies/optuna/strategy.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <unordered_map>

#include "ktune/error.h"
#include "ktune/hash.h"
#include "strategies/registry.h"

#ifndef KTUNE_OPTUNA_MODULE_PATHS
#define KTUNE_OPTUNA_MODULE_PATHS ""
#endif
#ifndef KTUNE_OPTUNA_RELATIVE_DIR
#define KTUNE_OPTUNA_RELATIVE_DIR "../lib/ktune"
#endif
#ifndef KTUNE_OPTUNA_PYTHON_VERSION
#define KTUNE_OPTUNA_PYTHON_VERSION "3"
#endif
#ifndef KTUNE_OPTUNA_BUILT
#define KTUNE_OPTUNA_BUILT 0
#endif

namespace ktune::optuna {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kModuleFile = "libktune_optuna.so";

std::string install_hint() {
  return fmt::format(
      "the Optuna strategies need Python 3 and Optuna: apt-get install libpython{} python3-optuna",
      KTUNE_OPTUNA_PYTHON_VERSION);
}

std::vector<std::string> split_paths(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(':', start), text.size());
    if (end > start) out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// Turns a module status code into ktune's error kinds.
[[noreturn]] void raise(const KtuneOptunaApi& api, int code, char* message,
                        std::string_view context) {
  std::string text = message ? message : "unknown failure";
  if (message) api.free_message(message);
  if (!context.empty()) text = fmt::format("{}: {}", context, text);
  switch (code) {
    case KTUNE_OPTUNA_E_USAGE:
      throw Error(ErrorKind::kUsage, text);
    case KTUNE_OPTUNA_E_UNAVAILABLE:
      throw Error(ErrorKind::kPlugin, text);
    default:
      throw Error(ErrorKind::kInternal, text);
  }
}

std::uint64_t parse_count(const std::string& strategy, const std::string& key,
                          const std::string& text) {
  try {
    std::size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used == text.size() && v >= 1) return static_cast<std::uint64_t>(v);
  } catch (const std::exception&) {
  }
  throw Error(ErrorKind::kUsage,
              fmt::format("{}: option {}={}: expected a positive integer", strategy, key, text));
}

}  // namespace

int trial_state(TrialStatus status) {
  return is_ok(status) ? KTUNE_OPTUNA_COMPLETE : KTUNE_OPTUNA_FAIL;
}

std::vector<std::string> module_candidates() {
  if (const char* env = std::getenv("KTUNE_OPTUNA_MODULE"); env && *env) return {env};
  std::vector<std::string> out;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    // Next to the binary (the build tree), then where an install puts it relative to bin/.
    out.push_back((exe.parent_path() / kModuleFile).string());
    out.push_back(
        (exe.parent_path() / KTUNE_OPTUNA_RELATIVE_DIR / kModuleFile).lexically_normal().string());
  }
  for (const std::string& dir : split_paths(KTUNE_OPTUNA_MODULE_PATHS)) {
    const std::string path = (fs::path(dir) / kModuleFile).lexically_normal().string();
    if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(path);
  }
  return out;
}

const KtuneOptunaApi& load_module() {
  static std::mutex mutex;
  static std::map<std::string, const KtuneOptunaApi*> loaded;  // modules are never closed
  const std::lock_guard<std::mutex> lock(mutex);
  const std::vector<std::string> candidates = module_candidates();
  std::vector<std::string> problems;
  for (const std::string& path : candidates) {
    if (auto it = loaded.find(path); it != loaded.end()) return *it->second;
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      problems.push_back(fmt::format("{}: not found", path));
      continue;
    }
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      // The usual cause: libpython of the version the module was built against is missing.
      const char* why = ::dlerror();
      std::string text = why ? why : "cannot be loaded";
      if (text.rfind(path, 0) != 0)
        text = path + ": " + text;  // name the module, not only its dependency
      problems.push_back(text);
      continue;
    }
    auto entry = reinterpret_cast<KtuneOptunaEntry>(::dlsym(handle, KTUNE_OPTUNA_ENTRY));
    const KtuneOptunaApi* api = entry ? entry() : nullptr;
    if (!api) {
      problems.push_back(
          fmt::format("{}: no entry '{}' (not a ktune Optuna module)", path, KTUNE_OPTUNA_ENTRY));
      ::dlclose(handle);
      continue;
    }
    if (api->abi_version != KTUNE_OPTUNA_ABI_VERSION || api->struct_size < sizeof(KtuneOptunaApi)) {
      problems.push_back(fmt::format("{}: built for Optuna module ABI {}, this ktune needs {}",
                                     path, api->abi_version, KTUNE_OPTUNA_ABI_VERSION));
      ::dlclose(handle);
      continue;
    }
    loaded.emplace(path, api);
    return *api;
  }
  std::string where = fmt::format("{}", fmt::join(problems, "; "));
  if (!KTUNE_OPTUNA_BUILT && std::getenv("KTUNE_OPTUNA_MODULE") == nullptr)
    where =
        "this ktune was built without the Optuna module (CMake found no Python 3 development files "
        "or "
        "pybind11); " +
        where;
  throw Error(ErrorKind::kPlugin, fmt::format("optuna: cannot load {} ({}); {}; keep {} next to "
                                              "the ktune binary or set KTUNE_OPTUNA_MODULE",
                                              kModuleFile, where, install_hint(), kModuleFile));
}

std::string describe_python() {
  const KtuneOptunaApi& api = load_module();
  char* text = nullptr;
  char* error = nullptr;
  if (int code = api.describe(&text, &error)) raise(api, code, error, "optuna");
  std::string out = text;
  api.free_message(text);
  return out;
}

// ---------------------------------------------------------------------------------------------

struct OptunaStrategy::Impl {
  // What ktune knows of one valid configuration.
  enum class Seen : std::uint8_t { kNew, kPending, kKnown };
  struct Waiting {
    std::int64_t number;
    bool projected;  // the trial proposed another (invalid) configuration
  };
  struct Slot {
    Seen seen = Seen::kNew;
    bool taken = false;  // started by another worker of a shared study (grid)
    Outcome outcome;
    std::vector<Waiting> waiting;  // Optuna trials to tell with this configuration's outcome
  };

  std::string name;
  std::string sampler;
  const KtuneOptunaApi* api = nullptr;
  KtuneOptunaStudy* study = nullptr;
  const SearchSpace* space = nullptr;
  bool reject = false;
  bool shared = false;           // the study lives in a storage other workers may write
  bool loop_duplicates = false;  // duplicates=loop: hand them to the loop instead of a neighbour
  std::uint64_t max_rejections = 10000;

  std::vector<Config> valid;        // every valid configuration
  std::vector<std::uint32_t> flat;  // valid, flattened for the projection scan
  std::vector<double> weight;       // distance per index step, per parameter
  std::vector<bool> categorical;
  std::unordered_map<Config, std::size_t, ConfigHash> index;  // config -> position in valid
  std::vector<Slot> slots;
  std::size_t new_count = 0;     // slots still kNew
  std::optional<Config> detour;  // the neighbour replacing a duplicate
  std::vector<Config> warm;      // proposed first, as fixed trials
  std::size_t warm_next = 0;
  std::vector<std::size_t> grid_order;  // grid: a seeded shuffle of valid
  std::size_t grid_next = 0;
  std::int64_t synced = 0;  // trials below this number were read
  std::mt19937_64 rng;
  Stats stats;

  ~Impl() {
    if (study) api->destroy_study(study);
  }

  // error by reference: it is read after the call that fills it, whatever the argument order.
  void check(int code, char*& error) const {
    if (code != KTUNE_OPTUNA_OK) raise(*api, code, error, name);
  }

  Slot* slot(const Config& c) {
    const auto it = index.find(c);
    return it == index.end() ? nullptr : &slots[it->second];
  }

  std::pair<std::int64_t, Config> ask_trial(const Config* fixed) {
    const auto t0 = Clock::now();
    std::int64_t number = 0;
    Config params(space->size());
    char* error = nullptr;
    check(api->ask(study, fixed ? fixed->data() : nullptr, &number, params.data(), &error), error);
    stats.optuna_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    ++stats.asks;
    return {number, std::move(params)};
  }

  void tell_trial(std::int64_t number, const Outcome& outcome, const Config* evaluated) {
    int state = trial_state(outcome.status);
    // An ok outcome without a finite time cannot be a value; Optuna would reject it.
    if (state == KTUNE_OPTUNA_COMPLETE && !std::isfinite(outcome.time_ms))
      state = KTUNE_OPTUNA_FAIL;
    const std::string key = evaluated ? space->key(*evaluated) : std::string();
    const std::string status(to_string(outcome.status));
    const auto t0 = Clock::now();
    char* error = nullptr;
    check(api->tell(study, number, state, outcome.time_ms, evaluated ? key.c_str() : nullptr,
                    is_ok(outcome.status) ? nullptr : status.c_str(), &error),
          error);
    stats.optuna_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    ++stats.tells;
  }

  // The valid configuration nearest to p (with only_new, the nearest not yet proposed):
  // ordered parameters count their index distance scaled to [0, 1], categorical ones 1 when
  // different. Among the nearest, configurations not yet proposed win (so the projection keeps
  // finding new ones), then a seeded random pick, so ties do not all fall to the first in
  // enumeration order. p itself is never chosen with only_new (it is not new).
  // With only_new and nothing new left (every new one running in another worker), it returns an
  // empty configuration.
  Config nearest(const Config& p, bool only_new) {
    const std::size_t k = p.size();
    double best = std::numeric_limits<double>::infinity();
    bool best_new = false, found = false;
    std::size_t chosen = 0, ties = 0;
    for (std::size_t v = 0; v < valid.size(); ++v) {
      if (only_new && !is_free(slots[v])) continue;
      found = true;
      const std::uint32_t* q = &flat[v * k];
      double d = 0;
      for (std::size_t i = 0; i < k && d <= best; ++i) {
        if (categorical[i])
          d += q[i] != p[i] ? 1.0 : 0.0;
        else
          d += weight[i] * (q[i] > p[i] ? q[i] - p[i] : p[i] - q[i]);
      }
      if (d > best) continue;
      const bool is_new = is_free(slots[v]);
      if (d < best - 1e-12 || (is_new && !best_new)) {
        best = d;
        best_new = is_new;
        chosen = v;
        ties = 1;
      } else if (is_new == best_new && d <= best + 1e-12) {
        // Reservoir sampling over the ties.
        if (std::uniform_int_distribution<std::size_t>(0, ties)(rng) == 0) chosen = v;
        ++ties;
      }
    }
    if (only_new && !found) return {};
    return valid[chosen];
  }

  // Neither proposed by this worker nor being measured by another.
  static bool is_free(const Slot& s) { return s.seen == Seen::kNew && !s.taken; }

  // Reads trials written since the last call: outcomes become known, and (for the grid)
  // configurations another worker has started are skipped.
  void sync() {
    // Running trials are always read again (synced stays below the first), so what is taken is
    // exactly what the running trials of this read say.
    if (shared)
      for (Slot& s : slots) s.taken = false;
    struct Context {
      Impl* self;
      std::int64_t next = 0;
      std::int64_t first_running = std::numeric_limits<std::int64_t>::max();
    } ctx{this, synced};
    char* error = nullptr;
    check(api->trials(
              study, synced,
              [](void* c, const KtuneOptunaTrial* t) {
                auto& ctx = *static_cast<Context*>(c);
                ctx.next = std::max(ctx.next, t->number + 1);
                if (t->state == KTUNE_OPTUNA_RUNNING || t->state == KTUNE_OPTUNA_WAITING)
                  ctx.first_running = std::min(ctx.first_running, t->number);
                ctx.self->absorb(*t);
              },
              &ctx, &error),
          error);
    // Running trials are read again next time: they may have finished by then. Abandoned ones
    // are not (their process is gone), which holds only for a read under the study's lock.
    synced = std::min(ctx.next, ctx.first_running);
  }

  // The study's storage (empty: none other workers share), its name (empty: the default), and
  // the options for the sampler.
  struct StudyOptions {
    std::string storage, study_name;
    std::vector<std::pair<std::string, std::string>> sampler_options;
  };

  // ktune's own options; the rest go to the sampler, which names any it does not know.
  StudyOptions read_options(const StrategyContext& context) {
    StudyOptions o;
    reject = false;
    loop_duplicates = false;
    for (const auto& [key, value] : context.options) {
      if (key == "study_storage") {
        o.storage = value;
      } else if (key == "study_name") {
        o.study_name = value;
      } else if (key == "constraints") {
        if (value != "project" && value != "reject")
          throw Error(
              ErrorKind::kUsage,
              fmt::format("{}: option constraints={}: expected project or reject", name, value));
        reject = value == "reject";
      } else if (key == "duplicates") {
        if (value != "neighbour" && value != "loop")
          throw Error(
              ErrorKind::kUsage,
              fmt::format("{}: option duplicates={}: expected neighbour or loop", name, value));
        loop_duplicates = value == "loop";
      } else if (key == "max_rejections") {
        max_rejections = parse_count(name, key, value);
      } else {
        o.sampler_options.emplace_back(key, value);
      }
    }
    return o;
  }

  // The same space under the same constants (problem, device limits) continues the same study.
  std::string default_study_name() const {
    Hasher h;
    h.add(space->hash());
    for (const auto& [constant, value] : space->constants()) h.add(constant).add(value.to_string());
    return "ktune-" + h.hex().substr(0, 16);
  }

  // The valid configurations, for the projection, duplicates and the grid; returns the
  // parameters as the study is told them.
  std::vector<KtuneOptunaParam> index_space() {
    valid = space->enumerate();
    if (valid.empty())
      throw Error(ErrorKind::kUsage,
                  fmt::format("{}: the search space has no valid configuration", name));
    const std::size_t k = space->size();
    flat.clear();
    flat.reserve(valid.size() * k);
    index.clear();
    index.reserve(valid.size());
    for (std::size_t v = 0; v < valid.size(); ++v) {
      flat.insert(flat.end(), valid[v].begin(), valid[v].end());
      index.emplace(valid[v], v);
    }
    slots.assign(valid.size(), Slot{});
    new_count = valid.size();
    weight.assign(k, 0);
    categorical.assign(k, false);
    std::vector<KtuneOptunaParam> params(k);
    for (std::size_t i = 0; i < k; ++i) {
      const Parameter& p = space->params()[i];
      categorical[i] = p.categorical();
      weight[i] = p.values.size() > 1 ? 1.0 / static_cast<double>(p.values.size() - 1) : 0.0;
      params[i] = {p.name.c_str(), static_cast<std::uint32_t>(p.values.size()),
                   p.categorical() ? 1 : 0};
    }
    return params;
  }

  // The fixed trials' order: warm starts, then (grid) a seeded shuffle of the valid
  // configurations.
  void reset_order(const StrategyContext& context) {
    warm = context.warm_start;
    warm_next = 0;
    detour.reset();
    grid_order.clear();
    grid_next = 0;
    if (sampler == "grid") {
      grid_order.resize(valid.size());
      for (std::size_t v = 0; v < valid.size(); ++v) grid_order[v] = v;
      std::shuffle(grid_order.begin(), grid_order.end(), rng);
    }
  }

  void create_study(const StrategyContext& context, const StudyOptions& o,
                    const std::vector<KtuneOptunaParam>& params) {
    std::vector<KtuneOptunaOption> options;
    for (const auto& [key, value] : o.sampler_options)
      options.push_back({key.c_str(), value.c_str()});
    KtuneOptunaStudySpec spec{};
    spec.sampler = sampler.c_str();
    spec.seed = context.seed;
    spec.params = params.data();
    spec.param_count = static_cast<std::uint32_t>(params.size());
    spec.options = options.data();
    spec.option_count = static_cast<std::uint32_t>(options.size());
    spec.storage = o.storage.c_str();
    spec.study_name = o.study_name.c_str();
    char* error = nullptr;
    check(api->create_study(&spec, &study, &error), error);
  }

  void absorb(const KtuneOptunaTrial& t) {
    if (!t.has_params && !t.config_key) return;
    Config c;
    if (t.config_key) {
      try {
        c = space->parse_key(t.config_key);
      } catch (const Error&) {
        return;  // a study of another version of the space
      }
    } else {
      c.assign(t.params, t.params + space->size());
    }
    Slot* s = slot(c);
    if (!s) return;                                 // invalid: a rejected proposal
    if (t.state == KTUNE_OPTUNA_ABANDONED) return;  // its worker is gone: free to measure
    if (t.state == KTUNE_OPTUNA_RUNNING || t.state == KTUNE_OPTUNA_WAITING) {
      s->taken = true;
      return;
    }
    if (s->seen != Seen::kNew) return;  // ours, or already known
    Outcome o;
    if (t.state == KTUNE_OPTUNA_COMPLETE && std::isfinite(t.value)) {
      o.time_ms = t.value;
    } else if (t.state == KTUNE_OPTUNA_FAIL && t.status) {
      const auto status = trial_status_from_string(t.status);
      if (!status || is_ok(*status)) return;
      o.status = *status;
    } else {
      return;  // failed outside ktune, or pruned: says nothing
    }
    o.from_cache = true;
    s->seen = Seen::kKnown;
    s->outcome = o;
    --new_count;
  }

  // The next configuration to enqueue as a fixed trial: a duplicate's neighbour, warm starts,
  // then (grid) the order.
  std::optional<Config> next_fixed() {
    if (detour) {
      std::optional<Config> c;
      c.swap(detour);
      return c;
    }
    while (warm_next < warm.size()) {
      const Config& c = warm[warm_next++];
      if (Slot* s = slot(c); s && s->seen == Seen::kNew) return c;
    }
    if (sampler != "grid") return std::nullopt;
    // Round the seeded order, from where the last call stopped: what other workers are measuring
    // is skipped, and what one of them abandoned is found on a later round.
    for (std::size_t scanned = 0; scanned < grid_order.size(); ++scanned) {
      if (grid_next == grid_order.size()) grid_next = 0;
      const std::size_t v = grid_order[grid_next++];
      if (is_free(slots[v])) return valid[v];
    }
    return std::nullopt;
  }

  // A proposal of a configuration another worker is measuring: the trial is failed with
  // ktune_status running_elsewhere (samplers leave failed trials out), never measured again.
  void tell_elsewhere(std::int64_t number) {
    char* error = nullptr;
    check(api->tell(study, number, KTUNE_OPTUNA_FAIL, std::numeric_limits<double>::quiet_NaN(),
                    nullptr, "running_elsewhere", &error),
          error);
    ++stats.tells;
    ++stats.elsewhere;
  }

  void claim(std::int64_t number, const Config& config) {
    const std::string key = space->key(config);
    char* error = nullptr;
    check(api->claim(study, number, key.c_str(), &error), error);
  }

  // The steps of ask() for one proposal of trial `number`.

  // rejection=reject: a proposal outside the valid space is told invalid.
  void reject_invalid(std::int64_t number) {
    Outcome invalid;
    invalid.status = TrialStatus::kInvalid;
    tell_trial(number, invalid, nullptr);
    ++stats.rejected;
  }

  // A new configuration another worker is measuring: the trial is failed as running elsewhere,
  // and the nearest free configuration is enqueued next.
  void detour_from_taken(std::int64_t number, const Config& config) {
    tell_elsewhere(number);
    detour = nearest(config, true);
    if (detour->empty()) detour.reset();
  }

  // A new configuration: proposed to the loop, the trial waiting for its outcome.
  void propose(Slot& s, std::int64_t number, bool projected, Config& config,
               std::vector<Config>& out) {
    s.seen = Seen::kPending;
    s.waiting.push_back({number, projected});
    --new_count;
    out.push_back(std::move(config));
    ++stats.proposed;
  }

  // A duplicate. The trial learns the configuration's own outcome: at once when it is known,
  // with the configuration's tell when it is in flight. Then the loop gets the duplicate
  // (duplicates=loop) or the slot goes to a neighbour.
  void answer_duplicate(Slot& s, std::int64_t number, bool projected, Config& config,
                        std::vector<Config>& out) {
    if (s.seen == Seen::kKnown) {
      tell_trial(number, s.outcome, projected ? &config : nullptr);
      ++stats.answered;
    } else {
      s.waiting.push_back({number, projected});
      ++stats.waited;
    }
    if (loop_duplicates) {
      // Optuna's own behaviour: the loop answers it from the database, and counts it.
      out.push_back(std::move(config));
      ++stats.proposed;
    } else if (new_count > 0) {
      // The slot goes to the nearest configuration not yet proposed, as an enqueued trial: a
      // step of local search around the sampler's favourite instead of a wasted evaluation.
      detour = nearest(config, true);
      if (detour->empty())
        detour.reset();
      else
        ++stats.neighbours;
    }
  }

  // Holds the shared study's lock (nothing for a study of one worker).
  struct Locked {
    Impl& m;
    explicit Locked(Impl& impl) : m(impl) {
      char* error = nullptr;
      m.check(m.api->lock(m.study, &error), error);
    }
    ~Locked() {
      char* error = nullptr;
      if (m.api->unlock(m.study, &error) != KTUNE_OPTUNA_OK && error) m.api->free_message(error);
    }
  };
};

OptunaStrategy::OptunaStrategy(std::string name, std::string sampler)
    : impl_(std::make_unique<Impl>()) {
  impl_->name = std::move(name);
  impl_->sampler = std::move(sampler);
  // Fail at make_strategy(), before a run is recorded, when the module or libpython is missing.
  impl_->api = &load_module();
}

OptunaStrategy::~OptunaStrategy() = default;

std::string OptunaStrategy::name() const { return impl_->name; }

const Stats& OptunaStrategy::stats() const { return impl_->stats; }

void OptunaStrategy::start(const StrategyContext& context) {
  Impl& m = *impl_;
  if (m.study) {
    m.api->destroy_study(m.study);
    m.study = nullptr;
  }
  if (context.parts > 1)
    throw Error(ErrorKind::kUsage,
                "--part is for strategies that share a results database; an Optuna strategy's "
                "processes share its study instead (--study-storage)");
  m.space = context.space;
  m.stats = Stats{};
  m.rng.seed(context.seed ^ 0x9e3779b97f4a7c15ull);

  Impl::StudyOptions options = m.read_options(context);
  m.shared = !options.storage.empty();
  if (options.study_name.empty()) options.study_name = m.default_study_name();
  const std::vector<KtuneOptunaParam> params = m.index_space();
  m.reset_order(context);
  m.create_study(context, options, params);
  // A continued or shared study: what it already knows is not proposed to the loop again. A
  // shared study is read under its lock, as ask() reads it: without the lock, another worker's
  // trial still being drawn (created, its parameters and ktune_worker not yet written) would
  // read as abandoned, and sync() would never read it again, nor learn what it measures.
  m.synced = 0;
  std::optional<Impl::Locked> locked;
  if (m.shared) locked.emplace(m);
  m.sync();
}

std::vector<Config> OptunaStrategy::ask(std::size_t max_count) {
  Impl& m = *impl_;
  if (!m.study) throw Error(ErrorKind::kInternal, fmt::format("{}: ask() before start()", m.name));
  std::vector<Config> out;
  std::uint64_t rejections = 0;
  // A shared study: under its lock, read what the other workers have started and finished, so
  // that nothing they measure is drawn here (the lock makes the read and the draws one step).
  std::optional<Impl::Locked> locked;
  if (m.shared) {
    locked.emplace(m);
    m.sync();
  }
  // Each pass adds a configuration or sets a detour that adds one next pass; the cap only
  // guards against a shared study whose other workers keep taking our enqueued trials.
  for (std::size_t pass = 0; out.size() < max_count && m.new_count > 0 && pass < 4 * max_count + 64;
       ++pass) {
    const std::optional<Config> fixed = m.next_fixed();
    if (!fixed && m.sampler == "grid") break;
    auto [number, proposal] = m.ask_trial(fixed ? &*fixed : nullptr);
    Config config = std::move(proposal);
    bool projected = false;
    if (!m.slot(config)) {
      if (m.reject) {
        m.reject_invalid(number);
        if (++rejections >= m.max_rejections) break;
        --pass;  // rejections have their own cap
        continue;
      }
      config = m.nearest(config, false);
      projected = true;
      ++m.stats.projected;
    }
    // Other workers see what this trial measures by its params, or by ktune_config where the
    // proposal was projected.
    if (projected && m.shared && m.is_free(*m.slot(config))) m.claim(number, config);
    Impl::Slot& s = *m.slot(config);
    if (s.seen == Impl::Seen::kNew && s.taken) {
      m.detour_from_taken(number, config);
    } else if (s.seen == Impl::Seen::kNew) {
      m.propose(s, number, projected, config, out);
      rejections = 0;
    } else {
      m.answer_duplicate(s, number, projected, config, out);
    }
  }
  return out;
}

std::size_t OptunaStrategy::ask_batch() const { return impl_->shared ? 4 : 1; }

void OptunaStrategy::tell(const Config& config, const Outcome& outcome) {
  Impl& m = *impl_;
  Impl::Slot* s = m.slot(config);
  if (!s) return;  // not a valid configuration of the space: never proposed by this strategy
  if (s->seen == Impl::Seen::kNew) --m.new_count;
  s->seen = Impl::Seen::kKnown;
  s->outcome = outcome;
  std::vector<Impl::Waiting> waiting;
  waiting.swap(s->waiting);
  for (const Impl::Waiting& w : waiting)
    m.tell_trial(w.number, outcome, w.projected ? &config : nullptr);
}

bool OptunaStrategy::exhausted() const { return impl_->study != nullptr && impl_->new_count == 0; }

std::vector<StudyTrial> OptunaStrategy::study_trials() const {
  const Impl& m = *impl_;
  std::vector<StudyTrial> out;
  if (!m.study) return out;
  struct Context {
    std::vector<StudyTrial>* out;
    std::size_t k;
  } ctx{&out, m.space->size()};
  char* error = nullptr;
  m.check(m.api->trials(
              m.study, 0,
              [](void* c, const KtuneOptunaTrial* t) {
                auto& ctx = *static_cast<Context*>(c);
                StudyTrial s;
                s.number = t->number;
                s.state = t->state;
                s.value = t->value;
                if (t->has_params) s.params = Config(t->params, t->params + ctx.k);
                if (t->config_key) s.config = t->config_key;
                if (t->status) s.status = t->status;
                ctx.out->push_back(std::move(s));
              },
              &ctx, &error),
          error);
  return out;
}

}  // namespace ktune::optuna

namespace ktune {

void add_optuna_strategies(std::vector<StrategyEntry>& table) {
  struct Sampler {
    const char* name;
    const char* sampler;
    const char* summary;
  };
  static constexpr Sampler kSamplers[] = {
      {"optuna", "tpe", "Optuna's TPE sampler (same as optuna:tpe; needs Python 3 and Optuna)"},
      {"optuna:tpe", "tpe", "Optuna: tree-structured Parzen estimator"},
      {"optuna:cmaes", "cmaes", "Optuna: CMA-ES over the value indices"},
      {"optuna:nsgaii", "nsgaii", "Optuna: NSGA-II genetic algorithm"},
      {"optuna:qmc", "qmc", "Optuna: quasi-Monte Carlo (Sobol or Halton) sampling"},
      {"optuna:random", "random", "Optuna: random sampling"},
      {"optuna:grid", "grid",
       "Optuna: every valid configuration once, in a seeded order (brute force)"},
  };
  for (const Sampler& s : kSamplers) {
    const std::string name = s.name, sampler = s.sampler;
    // The study lives in a storage that other processes can share (study_storage).
    table.push_back(
        {name, s.summary,
         [name, sampler] { return std::make_unique<optuna::OptunaStrategy>(name, sampler); },
         StrategyTraits{.shares_study = true}});
  }
}

}  // namespace ktune
