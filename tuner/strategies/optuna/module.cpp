// libktune_optuna.so: the only part of ktune that links libpython. One Interpreter object owns
// the embedded CPython for the life of the process; every entry point takes the GIL through a
// scoped guard and catches everything, turning exceptions into a status code and a message
// (see optuna_module.h for the ABI).
#include "strategies/optuna/module.h"

#include <dlfcn.h>
#include <pybind11/embed.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace py = pybind11;

extern const char* const ktune_optuna_py;  // ktune_optuna.py, embedded at build time

namespace {

// A failure with the status code it becomes at the ABI.
struct Failure : std::runtime_error {
  Failure(int code, const std::string& message) : std::runtime_error(message), code(code) {}
  int code;
};

// Owns the embedded interpreter. Python starts on the first instance() call (the first Optuna
// study) and stays up until the process exits: numpy, which Optuna imports, cannot be imported
// again after Py_Finalize, so a second start in the same process is not an option. Between
// calls the GIL is free (release_), so any thread may enter through a gil_scoped_acquire.
class Interpreter {
 public:
  static Interpreter& instance() {
    static Interpreter interpreter;
    if (!interpreter.start_error_.empty())
      throw Failure(KTUNE_OPTUNA_E_UNAVAILABLE, interpreter.start_error_);
    return interpreter;
  }

  // The helper module; the caller holds the GIL. Throws Failure naming the interpreter when
  // optuna cannot be imported.
  py::module_ helper() {
    py::module_ m = py::reinterpret_borrow<py::module_>(*helper_);
    if (!py::none().is(m.attr("IMPORT_ERROR"))) {
      throw Failure(
          KTUNE_OPTUNA_E_UNAVAILABLE,
          "the Optuna strategies need Optuna in the embedded " +
              m.attr("interpreter")().cast<std::string>() +
              ": import optuna failed: " + m.attr("IMPORT_ERROR").cast<std::string>() +
              "; install it for that interpreter (apt-get install python3-optuna) or put it "
              "on PYTHONPATH");
    }
    return m;
  }

  bool alive() const { return alive_; }

  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

 private:
  Interpreter() : owner_(std::this_thread::get_id()) {
    try {
      // ktune dlopens this module RTLD_LOCAL, which leaves libpython's symbols local too; the
      // extension modules Python loads (lib-dynload, numpy) resolve them globally.
      Dl_info info{};
      if (::dladdr(reinterpret_cast<void*>(&Py_InitializeFromConfig), &info) && info.dli_fname)
        (void)::dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
      if (Py_IsInitialized()) {
        // A host program (say, Python loading ktune through ctypes) already runs Python: use it,
        // never finalize it.
        borrowed_ = true;
      } else {
        PyConfig config;
        // pybind11's recipe: isolated defaults (no locale changes, no argv parsing, no script
        // directory on sys.path), then the environment back on so that PYTHONPATH and
        // PYTHONHOME work.
        PyConfig_InitIsolatedConfig(&config);
        config.isolated = 0;
        config.use_environment = 1;
        config.user_site_directory = 1;
        config.install_signal_handlers = 0;  // Ctrl-C belongs to ktune's loop
        // Compute sys.prefix from the interpreter ktune was configured with, not from the first
        // python3 on PATH (a pyenv or venv python there would bring its own stdlib and
        // site-packages, without Optuna). See docs/optuna.md.
        if (const char* exe = KTUNE_PYTHON_EXECUTABLE; exe[0] != '\0') {
          const PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, exe);
          if (PyStatus_Exception(status)) {
            PyConfig_Clear(&config);
            throw std::runtime_error(status.err_msg ? status.err_msg : "bad program name");
          }
        }
        interpreter_ = std::make_unique<py::scoped_interpreter>(&config, 0, nullptr, false);
      }
      {
        py::gil_scoped_acquire gil;  // a no-op for the thread that just started Python
        py::module_ m = py::reinterpret_steal<py::module_>(PyModule_New("ktune_optuna"));
        if (!m) throw py::error_already_set();
        py::dict scope = m.attr("__dict__");
        scope["__builtins__"] = py::module_::import("builtins");
        py::exec(ktune_optuna_py, scope);
        py::module_::import("sys").attr("modules")["ktune_optuna"] = m;
        if (py::none().is(m.attr("IMPORT_ERROR"))) m.attr("quiet")();
        helper_ = std::make_unique<py::object>(std::move(m));
      }
      if (interpreter_) release_ = std::make_unique<py::gil_scoped_release>();
      alive_ = true;
    } catch (const std::exception& e) {
      start_error_ = std::string("the embedded Python (") + KTUNE_PYTHON_EXECUTABLE +
                     ") did not start: " + e.what() +
                     "; the Optuna strategies need Python 3 and Optuna: apt-get install libpython" +
                     std::to_string(PY_MAJOR_VERSION) + "." + std::to_string(PY_MINOR_VERSION) +
                     " python3-optuna";
    }
  }

  ~Interpreter() {
    if (!alive_) return;
    alive_ = false;
    if (borrowed_ || !interpreter_) {
      // ktune dlopens this module RTLD_LOCAL, which leaves libpython's symbols local too; the
      // extension modules Python loads (lib-dynload, numpy) resolve them globally.
      Dl_info info{};
      if (::dladdr(reinterpret_cast<void*>(&Py_InitializeFromConfig), &info) && info.dli_fname)
        (void)::dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
      if (Py_IsInitialized()) {
        py::gil_scoped_acquire gil;
        helper_.reset();
      } else {
        (void)helper_.release();
      }
      return;
    }
    if (std::this_thread::get_id() != owner_) {
      // The GIL state saved by release_ belongs to the thread that started Python; finalizing
      // from another thread is undefined, so leave Python to the process exit.
      (void)release_.release();
      (void)helper_.release();
      (void)interpreter_.release();
      return;
    }
    release_.reset();  // takes the GIL back
    helper_.reset();
    interpreter_.reset();  // Py_Finalize
  }

  std::thread::id owner_;
  bool borrowed_ = false;
  bool alive_ = false;
  std::string start_error_;
  std::unique_ptr<py::scoped_interpreter> interpreter_;
  std::unique_ptr<py::object> helper_;
  std::unique_ptr<py::gil_scoped_release> release_;
};

// Turns any exception into a status code and a message (malloc'd, freed by free_message).
template <class F>
int guarded(char** error, F&& body) {
  const auto fail = [&](int code, const std::string& message) {
    if (error) *error = ::strdup(message.c_str());
    return code;
  };
  try {
    body();
    return KTUNE_OPTUNA_OK;
  } catch (const Failure& e) {
    return fail(e.code, e.what());
  } catch (py::error_already_set& e) {
    // ktune_optuna.UsageError and .Unavailable carry their own message; anything else is
    // Optuna's or ours.
    int code = KTUNE_OPTUNA_E_INTERNAL;
    std::string message;
    {
      py::gil_scoped_acquire gil;
      py::module_ helper = py::module_::import("ktune_optuna");
      if (e.matches(helper.attr("UsageError"))) {
        code = KTUNE_OPTUNA_E_USAGE;
        message = py::str(e.value()).cast<std::string>();
      } else if (e.matches(helper.attr("Unavailable"))) {
        code = KTUNE_OPTUNA_E_UNAVAILABLE;
        message = py::str(e.value()).cast<std::string>();
      } else {
        message = e.what();
      }
    }
    return fail(code, message);
  } catch (const std::exception& e) {
    return fail(KTUNE_OPTUNA_E_INTERNAL, e.what());
  } catch (...) {
    return fail(KTUNE_OPTUNA_E_INTERNAL, "unknown exception");
  }
}

}  // namespace

struct KtuneOptunaStudy {
  py::object study;  // ktune_optuna.Study
  std::size_t param_count = 0;
};

namespace {

int create_study(const KtuneOptunaStudySpec* spec, KtuneOptunaStudy** out, char** error) {
  return guarded(error, [&] {
    *out = nullptr;
    Interpreter& interpreter = Interpreter::instance();
    py::gil_scoped_acquire gil;
    py::module_ helper = interpreter.helper();
    py::list params, options;
    for (uint32_t i = 0; i < spec->param_count; ++i)
      params.append(py::make_tuple(spec->params[i].name, spec->params[i].count,
                                   spec->params[i].categorical != 0));
    for (uint32_t i = 0; i < spec->option_count; ++i)
      options.append(py::make_tuple(spec->options[i].key, spec->options[i].value));
    auto study = std::make_unique<KtuneOptunaStudy>();
    study->study = helper.attr("Study")(spec->sampler, spec->seed, params, options,
                                        spec->storage ? spec->storage : "",
                                        spec->study_name ? spec->study_name : "");
    study->param_count = spec->param_count;
    *out = study.release();
  });
}

void destroy_study(KtuneOptunaStudy* study) {
  if (!study) return;
  if (Py_IsInitialized()) {
    py::gil_scoped_acquire gil;
    delete study;
  } else {
    (void)study->study.release();  // Python is gone; its objects went with it
    delete study;
  }
}

int ask(KtuneOptunaStudy* study, const uint32_t* fixed, int64_t* number, uint32_t* params,
        char** error) {
  return guarded(error, [&] {
    py::gil_scoped_acquire gil;
    py::object fixed_list = py::none();
    if (fixed) fixed_list = py::cast(std::vector<uint32_t>(fixed, fixed + study->param_count));
    const auto [n, values] =
        study->study.attr("ask")(fixed_list).cast<std::pair<int64_t, std::vector<uint32_t>>>();
    if (values.size() != study->param_count)
      throw std::runtime_error("trial holds the wrong number of params");
    *number = n;
    std::copy(values.begin(), values.end(), params);
  });
}

int tell(KtuneOptunaStudy* study, int64_t number, int32_t state, double value,
         const char* config_key, const char* status, char** error) {
  return guarded(error, [&] {
    py::gil_scoped_acquire gil;
    study->study.attr("tell")(number, state, value,
                              config_key ? py::object(py::str(config_key)) : py::none(),
                              status ? py::object(py::str(status)) : py::none());
  });
}

int trials(KtuneOptunaStudy* study, int64_t first, KtuneOptunaTrialVisitor visit, void* context,
           char** error) {
  return guarded(error, [&] {
    using Row = std::tuple<int64_t, int, bool, double, std::vector<uint32_t>,
                           std::optional<std::string>, std::optional<std::string>>;
    std::vector<Row> rows;
    {
      py::gil_scoped_acquire gil;
      rows = study->study.attr("trials")(first).cast<std::vector<Row>>();
    }
    // The visitor runs without the GIL: it is ktune's code.
    for (const Row& r : rows) {
      KtuneOptunaTrial t{};
      t.number = std::get<0>(r);
      t.state = std::get<1>(r);
      t.has_params = std::get<2>(r) ? 1 : 0;
      t.value = std::get<3>(r);
      t.params = std::get<4>(r).data();
      t.config_key = std::get<5>(r) ? std::get<5>(r)->c_str() : nullptr;
      t.status = std::get<6>(r) ? std::get<6>(r)->c_str() : nullptr;
      visit(context, &t);
    }
  });
}

void free_message(char* message) { std::free(message); }

int lock(KtuneOptunaStudy* study, char** error) {
  return guarded(error, [&] {
    py::gil_scoped_acquire gil;
    study->study.attr("lock")();
  });
}

int claim(KtuneOptunaStudy* study, int64_t number, const char* config_key, char** error) {
  return guarded(error, [&] {
    py::gil_scoped_acquire gil;
    study->study.attr("claim")(number, config_key);
  });
}

int unlock(KtuneOptunaStudy* study, char** error) {
  return guarded(error, [&] {
    py::gil_scoped_acquire gil;
    study->study.attr("unlock")();
  });
}

int describe(char** description, char** error) {
  return guarded(error, [&] {
    Interpreter& interpreter = Interpreter::instance();
    py::gil_scoped_acquire gil;
    py::module_ helper = py::reinterpret_borrow<py::module_>(py::module_::import("ktune_optuna"));
    (void)interpreter;
    *description = ::strdup(helper.attr("describe")().cast<std::string>().c_str());
  });
}

const KtuneOptunaApi kApi = {
    KTUNE_OPTUNA_ABI_VERSION,
    sizeof(KtuneOptunaApi),
    create_study,
    destroy_study,
    ask,
    tell,
    trials,
    free_message,
    describe,
    lock,
    unlock,
    claim,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const KtuneOptunaApi* ktune_optuna_api(void) {
  return &kApi;
}
