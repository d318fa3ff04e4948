// In-process GPU evaluation: verification and timing of compiled configurations on the GPU of
// this process. It is what the CUDA backend's worker process runs; a tuning run goes through
// CudaBackend, so a faulting kernel costs a worker and not the run. Use it directly only where
// a fault may take the process down: benchmarks that time a stored best beside a peer library,
// examples.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ktune/backend.h"
#include "ktune/compiler.h"
#include "ktune/instance.h"

namespace ktune {

class GpuEvaluator {
 public:
  // Creates a context on `device`, allocates the kernel's buffers, generates its inputs and
  // computes the reference: the kernel's host function, or the output of its reference
  // configuration (compiled here) for kernels that name one. Throws Error(kDevice) for CUDA
  // failures, Error(kInput) for a failing reference or one that does not compile.
  GpuEvaluator(const KernelSpec& kernel, const Problem& problem, int device,
               const MeasureOptions& options);
  ~GpuEvaluator();
  GpuEvaluator(const GpuEvaluator&) = delete;
  GpuEvaluator& operator=(const GpuEvaluator&) = delete;

  const KernelInstance& instance() const;
  const DeviceInfo& device() const;
  // Loads, checks resources, verifies and times one configuration (docs/measuring.md).
  Measurement evaluate(const Config& config, const CompileResult& compiled);
  // Interleaved re-timing; the candidates must have verified before.
  std::vector<Measurement> retime(const std::vector<RetimeCandidate>& candidates, int rounds);
  // After a fault that poisoned the CUDA context, nothing more can run in this process.
  bool context_lost() const;
  // Device pointer and element count of one of the kernel's buffers (as last sized).
  void* buffer(const std::string& name, std::size_t* count) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ktune
