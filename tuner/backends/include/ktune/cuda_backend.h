// The CUDA backend: measures configurations on a GPU in a separate worker process, so a kernel
// that faults or hangs costs one trial (status crashed / timeout) and a restarted worker, never
// the tuning run. docs/measuring.md describes what is measured and how.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ktune/backend.h"
#include "ktune/compiler.h"

namespace ktune {

class CudaBackend final : public Backend {
 public:
  struct Options {
    int device = 0;
    // How to start a worker: an executable and its arguments, e.g. {"/usr/bin/ktune",
    // "__worker"}. The worker reads requests on fd 3 and answers on fd 4.
    std::vector<std::string> worker_command;
    // Plugin paths the worker loads to find the kernel (KTUNE_PLUGIN_PATH is inherited).
    std::vector<std::string> plugins;
    // Compiles the reference configuration of manifest kernels; may be null.
    std::shared_ptr<CompileCache> cache;
    // Seconds a worker may take to start (CUDA context, buffers, inputs, reference).
    double start_timeout_seconds = 300;
    // The caller's own check of a configuration's outputs (Kernel Tuner's `verify`): given the
    // buffers of MeasureOptions::fetch_outputs after the first run (name -> bytes), it returns
    // why they are wrong, or nothing. A configuration it rejects is a wrong_result trial.
    std::function<std::optional<std::string>(const std::map<std::string, std::string>&)> host_check;
  };

  // Throws Error(kDevice) when there is no CUDA device.
  explicit CudaBackend(Options options);
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  DeviceInfo device() const override;
  bool needs_compilation() const override { return true; }
  // For another kernel instance after the first (a family's next problem, another kernel), the
  // running worker frees the last one's buffers and makes this one's in the same CUDA context:
  // no new process, no new context.
  void prepare(const KernelInstance& instance, const MeasureOptions& options) override;
  std::map<std::string, double> prepare_phases() const override;
  Measurement evaluate(const Config& config, const CompileResult* compiled) override;
  // Two requests in flight: the worker starts on the next configuration while the tuner stores
  // the previous result.
  std::size_t pipeline_depth() const override { return 2; }
  void set_cutoff(double ms) override;
  void submit(const Config& config, const CompileResult* compiled) override;
  Measurement collect() override;
  std::vector<Measurement> retime(const std::vector<RetimeCandidate>& candidates,
                                  int rounds) override;

  int worker_starts() const;  // how many worker processes were started (1 + restarts)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Entry of the worker process (`ktune __worker [--device N]`); returns its exit code. With a
// device (`early_device` >= 0) the worker creates that device's CUDA context at once, before the
// init message arrives: the tuner starts its worker while it queries the device itself.
int cuda_worker_main(int early_device = -1);

}  // namespace ktune
