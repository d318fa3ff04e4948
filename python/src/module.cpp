// ktune._ktune: the C++ half of the Python package. It tunes a kernel described by a manifest
// (the Python half writes one from tune_kernel's arguments) through the same Session as `ktune
// tune`, so the GPU worker is the same separate process (a kernel that faults or hangs costs one
// trial), and it reads the database: a run's trials, and the run-time client's look-ups.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ktune/client.h"
#include "ktune/device.h"
#include "ktune/error.h"
#include "ktune/objectives.h"
#include "ktune/registry.h"
#include "ktune/replay.h"
#include "ktune/session.h"
#include "ktune/store.h"
#include "ktune/tuner.h"

namespace py = pybind11;

namespace {

using Problem = std::map<std::string, std::int64_t>;

// What one tune() call is given besides the manifest; mirrors `ktune tune`'s options.
struct TuneRequest {
  std::string manifest;
  std::string kernel;
  Problem problem;
  std::string db;
  std::string ktune;  // the ktune executable: its __worker and __compile
  std::string strategy = "brute_force";
  std::map<std::string, std::string> strategy_options;
  std::optional<std::uint64_t> budget_evaluations;
  std::optional<double> budget_seconds;
  std::optional<int> samples;
  std::optional<std::string> effort;  // quick | default | thorough (ktune/effort.h)
  std::optional<std::string> replay;  // a recording (Kernel Tuner cache): no GPU is used
  std::uint64_t seed = 1;
  int device = 0;
  int compile_processes = 0;  // 0: ktune tune's default, one per core less one
  // Buffers whose outputs the caller's check (tune()'s `check`) is given: Kernel Tuner's verify.
  std::vector<std::string> fetch_outputs;
  // When set, the space holds only these configurations (values as literals, one row each,
  // columns named by listed_names): what restrictions given as Python functions let through.
  std::vector<std::string> listed_names;
  std::vector<std::vector<std::string>> listed_rows;
  // What the run ranks configurations by: "time", or the name of the value tune()'s
  // `objective` computes from each trial (Kernel Tuner's objective over its metrics).
  std::string objective = "time";
  bool objective_higher_is_better = false;
  // GPU milliseconds each configuration runs back to back for its energy (MeasureOptions::
  // energy_ms); none: only where the objective needs it.
  std::optional<double> energy_ms;
};

// A trial as a dict: config (JSON text), status, error, times in ms, resources, the objective.
py::dict trial_dict(const ktune::TrialRecord& t) {
  py::dict d;
  d["config_key"] = t.config_key;
  d["config_json"] = t.config_json;
  d["kind"] = static_cast<int>(t.kind);
  d["status"] = std::string(ktune::to_string(t.status));
  d["error"] = t.error;
  d["time_ms"] = t.time_ms;
  d["time_mean_ms"] = t.time_mean_ms;
  d["samples_ms"] = t.samples_ms;
  d["registers"] = t.registers;
  d["compile_ms"] = t.compile_ms;
  d["eval_ms"] = t.eval_ms;
  d["created_at"] = t.created_at;
  d["objective"] = t.objective;
  d["sm_clock_mhz"] = t.sm_clock_mhz;
  d["temperature_c"] = t.temperature_c;
  d["energy_j"] = t.energy_j;
  d["power_w"] = t.power_w;
  return d;
}

// The manifest's kernel, with the listed configurations when there are any.
void load_kernel(ktune::Registry& registry, const TuneRequest& r) {
  if (r.listed_names.empty()) {
    registry.load_path(r.manifest);
    return;
  }
  ktune::Registry loaded;
  loaded.load_path(r.manifest);
  ktune::KernelSpec k = loaded.get(r.kernel);
  auto list = std::make_shared<ktune::KernelSpec::ConfigList>();
  list->names = r.listed_names;
  for (const auto& row : r.listed_rows) {
    if (row.size() != r.listed_names.size())
      throw ktune::Error(ktune::ErrorKind::kUsage, "listed configuration of the wrong length");
    std::vector<ktune::Value> values;
    for (const auto& v : row) values.push_back(ktune::Value::parse(v));
    list->rows.push_back(std::move(values));
  }
  k.listed = std::move(list);
  registry.add(std::move(k));
}

py::dict device_dict(const ktune::DeviceInfo& d) {
  py::dict out;
  out["name"] = d.name;
  out["arch"] = d.arch;
  out["cc_major"] = d.cc_major;
  out["cc_minor"] = d.cc_minor;
  out["sm_count"] = d.sm_count;
  out["memory_bytes"] = d.memory_bytes;
  out["driver_version"] = d.driver_version;
  return out;
}

ktune::JobOverrides overrides_of(const TuneRequest& r) {
  ktune::JobOverrides o;
  o.kernel = r.kernel;
  o.problem = r.problem;
  o.strategy = r.strategy;
  o.strategy_options = r.strategy_options;
  o.budget_evaluations = r.budget_evaluations;
  o.budget_seconds = r.budget_seconds;
  o.samples = r.samples;
  o.energy_ms = r.energy_ms;
  // ktune's own objectives (energy, edp) are resolved with the job, as --objective is.
  if (r.objective != "time" && ktune::is_builtin_objective(r.objective)) o.objective = r.objective;
  o.effort = r.effort;
  o.seed = r.seed;
  o.replay = r.replay;
  o.reuse = false;  // every configuration of this call is in its run (Kernel Tuner's results)
  o.command_line = "python: ktune.tune_kernel";
  return o;
}

// The caller's check as the CUDA backend's host check: called on the tuning thread with the
// GIL taken, given {buffer name: bytes}; it returns None (right) or why the output is wrong. An
// exception it raises is that trial's error; a Ctrl-C during it is raised again when tune()
// returns. The function object lives in the backend's options, which tune() destroys with the
// GIL held.
std::function<std::optional<std::string>(const std::map<std::string, std::string>&)> host_check(
    py::object check) {
  if (check.is_none()) return nullptr;
  return [check](const std::map<std::string, std::string>& outputs) -> std::optional<std::string> {
    py::gil_scoped_acquire gil;
    try {
      py::dict arrays;
      for (const auto& [name, bytes] : outputs) arrays[py::str(name)] = py::bytes(bytes);
      py::object said = check(arrays);
      if (said.is_none()) return std::nullopt;
      return py::str(said).cast<std::string>();
    } catch (py::error_already_set& e) {
      if (e.matches(PyExc_KeyboardInterrupt)) PyErr_SetInterrupt();
      return std::string("verify raised ") + e.what();
    }
  };
}

// Tunes; returns {"run_id", "status", "device", "replayed", "strategy", "notes", "wall_s"}.
// progress(done, total, best_ms or None, phase) after each trial, with the GIL held: the Python
// half's progress bar. An exception it raises is dropped (a display never ends a run), but a
// Ctrl-C in it is raised again once the run returns.
std::unique_ptr<ktune::ProgressObserver> progress_observer(py::object progress) {
  if (progress.is_none()) return nullptr;
  return std::make_unique<ktune::ProgressObserver>([progress](const ktune::Progress& p) {
    py::gil_scoped_acquire gil;
    try {
      progress(p.done, p.total, p.best_ms ? py::object(py::float_(*p.best_ms)) : py::none(),
               p.phase);
    } catch (py::error_already_set& e) {
      if (e.matches(PyExc_KeyboardInterrupt)) PyErr_SetInterrupt();
    }
  });
}

// The caller's objective(trial dict) as the run's objective_value, called on the tuning thread
// with the GIL taken: a number, or NaN where it returns something else (None: no value). An
// exception it raises ends the run with an Error naming the objective (as Kernel Tuner stops on
// a metric that raises); what was measured stays in the database. A Ctrl-C during it is raised
// again when tune() returns.
std::function<double(const ktune::TrialRecord&)> objective_value(const TuneRequest& r,
                                                                 py::object objective) {
  if (objective.is_none()) return nullptr;
  return [objective, name = r.objective](const ktune::TrialRecord& t) -> double {
    py::gil_scoped_acquire gil;
    try {
      py::object v = objective(trial_dict(t));
      if (v.is_none() || py::isinstance<py::str>(v) || py::isinstance<py::bool_>(v) ||
          !py::hasattr(v, "__float__"))
        return std::nan("");
      return py::float_(v).cast<double>();
    } catch (py::error_already_set& e) {
      if (e.matches(PyExc_KeyboardInterrupt)) {
        PyErr_SetInterrupt();
        return std::nan("");
      }
      throw ktune::Error(ktune::ErrorKind::kUsage,
                         "objective '" + name + "' raised " + e.what() + " for " + t.config_key);
    }
  };
}

py::dict tune(const TuneRequest& r, py::object check, py::object progress, py::object objective) {
  ktune::Registry registry;
  load_kernel(registry, r);
  // The engine runs inside python3: the shipped recordings are those of the ktune program the
  // package runs, installed beside it.
  ktune::use_shipped_data_of(r.ktune);
  ktune::SessionOptions options;
  options.overrides = overrides_of(r);
  options.database = r.db;
  options.executable = r.ktune;
  options.device = r.device;
  options.plugins = {r.manifest};
  if (r.compile_processes > 0) options.compile_threads = static_cast<unsigned>(r.compile_processes);
  options.host_check = host_check(std::move(check));
  options.fetch_outputs = r.fetch_outputs;
  if (!ktune::is_builtin_objective(r.objective))
    options.objective = {r.objective.empty() ? std::string("time") : r.objective,
                         r.objective_higher_is_better};
  if (!options.objective.is_time() && objective.is_none())
    throw ktune::Error(ktune::ErrorKind::kUsage,
                       "objective '" + r.objective + "' needs tune()'s objective function");
  options.objective_value = objective_value(r, std::move(objective));
  ktune::Session session(registry, std::move(options));
  const std::unique_ptr<ktune::ProgressObserver> observer = progress_observer(std::move(progress));
  ktune::TuneSummary summary;
  {
    py::gil_scoped_release release;  // the tuning loop runs no Python but the callbacks
    summary = session.run(observer.get());
  }
  py::dict out;
  out["run_id"] = summary.run_id;
  out["status"] = std::string(ktune::to_string(summary.status));
  out["device"] = device_dict(session.backend().device());
  out["replayed"] = session.replays();
  out["strategy"] = session.strategy();
  out["problem_key"] = session.instance().problem_key();
  out["wall_s"] = summary.wall_seconds;
  out["compile_s"] = summary.compile_seconds;
  out["backend_s"] = summary.backend_seconds;
  out["best_key"] = summary.best ? summary.best->config_key : std::string();
  out["notes"] = session.notes();
  return out;
}

// A run's trials as dicts (trial_dict).
py::list trials(const std::string& db, std::int64_t run_id) {
  const ktune::Store store = ktune::Store::open(db, ktune::Store::Mode::kReadOnly);
  py::list out;
  for (const auto& t : store.trials_of_run(run_id)) out.append(trial_dict(t));
  return out;
}

py::object value_object(const ktune::Value& v) {
  if (v.is_int()) return py::int_(v.as_int());
  if (v.is_string()) return py::str(v.as_string());
  return py::float_(v.as_double());
}

py::dict best_dict(const ktune::BestConfig& b) {
  py::dict config;
  for (const auto& [name, v] : b.config) config[py::str(name)] = value_object(v);
  py::dict out;
  out["kernel"] = b.kernel;
  out["config"] = config;
  out["config_key"] = b.config_key;
  out["problem"] = b.problem;
  out["problem_key"] = b.problem_key;
  out["match"] = b.describe();
  out["problem_match"] = std::string(ktune::to_string(b.problem_match));
  out["device_match"] = std::string(ktune::to_string(b.device_match));
  out["time_ms"] = b.measurement.time_ms;
  out["objective"] = b.objective;
  out["objective_higher_is_better"] = b.objective_higher_is_better;
  out["objective_value"] = b.measurement.objective;
  out["energy_j"] = b.measurement.energy_j;
  out["power_w"] = b.measurement.power_w;
  out["policy"] = b.policy;
  out["policy_note"] = b.policy_note;
  out["time_min_ms"] = b.measurement.time_min_ms;
  out["samples"] = b.measurement.sample_count;
  out["device"] = b.provenance.device_name;
  out["arch"] = b.provenance.device_arch;
  out["run_id"] = b.provenance.run_id;
  out["trial_id"] = b.provenance.trial_id;
  out["binary_key"] = b.provenance.binary_key;
  return out;
}

// The run-time client: best() answers as ktune::Client::best does, or None with the reason
// kept in last_message.
class PyClient {
 public:
  PyClient(const std::string& db, const std::string& device, const std::string& arch)
      : client_(device.empty()
                    ? ktune::Client(db)
                    : ktune::Client(db, ktune::ClientDevice::describe(device, arch, 0, 0))) {}
  py::object best(const std::string& kernel, const Problem& problem, bool other_devices,
                  bool nearest_problem, const std::string& policy) {
    ktune::LookupOptions o;
    o.other_devices = other_devices;
    o.nearest_problem = nearest_problem;
    o.policy = ktune::EnergyPolicy::parse(policy);
    const ktune::LookupResult r = client_.best(kernel, problem, o);
    if (!r) {
      last_message_ = r.message;
      return py::none();
    }
    last_message_.clear();
    return best_dict(*r);
  }
  py::dict device() const {
    return py::dict(py::arg("name") = client_.device().name,
                    py::arg("arch") = client_.device().arch);
  }
  std::string last_message() const { return last_message_; }

 private:
  ktune::Client client_;
  std::string last_message_;
};

}  // namespace

PYBIND11_MODULE(_ktune, m) {
  m.doc() = "ktune's engine for the ktune Python package";
  static py::exception<ktune::Error> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ktune::Error& e) {
      error(e.what());
    }
  });
  py::class_<TuneRequest>(m, "TuneRequest")
      .def(py::init<>())
      .def_readwrite("manifest", &TuneRequest::manifest)
      .def_readwrite("kernel", &TuneRequest::kernel)
      .def_readwrite("problem", &TuneRequest::problem)
      .def_readwrite("db", &TuneRequest::db)
      .def_readwrite("ktune", &TuneRequest::ktune)
      .def_readwrite("strategy", &TuneRequest::strategy)
      .def_readwrite("strategy_options", &TuneRequest::strategy_options)
      .def_readwrite("budget_evaluations", &TuneRequest::budget_evaluations)
      .def_readwrite("budget_seconds", &TuneRequest::budget_seconds)
      .def_readwrite("samples", &TuneRequest::samples)
      .def_readwrite("effort", &TuneRequest::effort)
      .def_readwrite("replay", &TuneRequest::replay)
      .def_readwrite("seed", &TuneRequest::seed)
      .def_readwrite("device", &TuneRequest::device)
      .def_readwrite("compile_processes", &TuneRequest::compile_processes)
      .def_readwrite("fetch_outputs", &TuneRequest::fetch_outputs)
      .def_readwrite("listed_names", &TuneRequest::listed_names)
      .def_readwrite("listed_rows", &TuneRequest::listed_rows)
      .def_readwrite("objective", &TuneRequest::objective)
      .def_readwrite("objective_higher_is_better", &TuneRequest::objective_higher_is_better)
      .def_readwrite("energy_ms", &TuneRequest::energy_ms);
  m.def("tune", &tune, py::arg("request"), py::arg("check") = py::none(),
        py::arg("progress") = py::none(), py::arg("objective") = py::none(),
        "tune a manifest kernel; returns the run's summary. check(outputs) is called with the "
        "fetched outputs of each configuration ({name: bytes}) and returns None or an error; "
        "progress(done, total, best_ms, phase) after each trial; objective(trial) returns the "
        "trial's value of the request's objective where it is not time");
  m.def("trials", &trials, py::arg("db"), py::arg("run_id"));
  m.def("version", [] { return std::string(KTUNE_VERSION); });
  m.def(
      "device_name", [](int ordinal) { return ktune::require_device(ordinal).name; },
      py::arg("ordinal") = 0, "the CUDA device's name (no context is created); Error without one");
  py::class_<PyClient>(m, "Client")
      .def(py::init<const std::string&, const std::string&, const std::string&>(), py::arg("db"),
           py::arg("device") = "", py::arg("arch") = "")
      .def("best", &PyClient::best, py::arg("kernel"), py::arg("problem"),
           py::arg("other_devices") = true, py::arg("nearest_problem") = true,
           py::arg("policy") = "fastest")
      .def("device", &PyClient::device)
      .def_property_readonly("last_message", &PyClient::last_message);
}
