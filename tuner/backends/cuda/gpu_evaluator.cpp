// GpuEvaluator: the worker's evaluation in this process (ktune/gpu_evaluator.h).
#include "ktune/gpu_evaluator.h"

#include <fmt/format.h>

#include "backends/cuda/worker.h"
#include "ktune/device.h"
#include "ktune/error.h"

namespace ktune {

struct GpuEvaluator::Impl {
  std::unique_ptr<worker::Worker> worker;
};

GpuEvaluator::GpuEvaluator(const KernelSpec& kernel, const Problem& problem, int device,
                           const MeasureOptions& options)
    : impl_(std::make_unique<Impl>()) {
  try {
    impl_->worker =
        std::make_unique<worker::Worker>(kernel, kernel.make_problem(problem), device, options);
  } catch (const worker::CudaFailure& f) {
    throw Error(ErrorKind::kDevice, fmt::format("{}: {}", f.where, worker::cuda_text(f.code)));
  }
}

GpuEvaluator::~GpuEvaluator() = default;

const KernelInstance& GpuEvaluator::instance() const { return impl_->worker->instance(); }
const DeviceInfo& GpuEvaluator::device() const { return impl_->worker->device(); }
bool GpuEvaluator::context_lost() const { return impl_->worker->dead(); }
void* GpuEvaluator::buffer(const std::string& name, std::size_t* count) const {
  return impl_->worker->buffer(name, count);
}

Measurement GpuEvaluator::evaluate(const Config& config, const CompileResult& compiled) {
  if (!compiled.ok)
    throw Error(ErrorKind::kInternal, "GpuEvaluator::evaluate needs a successful compilation");
  return impl_->worker->evaluate(instance().space().key(config), compiled.lowered_name,
                                 compiled.cubin);
}

std::vector<Measurement> GpuEvaluator::retime(const std::vector<RetimeCandidate>& candidates,
                                              int rounds) {
  protocol::RetimeRequest request;
  request.rounds = rounds;
  std::string blob;
  for (const auto& c : candidates) {
    request.candidates.push_back(
        {instance().space().key(c.config), c.compiled->lowered_name, c.compiled->cubin.size()});
    blob += c.compiled->cubin;
  }
  protocol::RetimeReply reply = impl_->worker->retime(request, blob);
  if (!reply.error.empty()) throw Error(ErrorKind::kDevice, reply.error);
  if (!reply.results.empty()) reply.results.front().gpu_ms = reply.gpu_ms;
  return std::move(reply.results);
}

}  // namespace ktune
