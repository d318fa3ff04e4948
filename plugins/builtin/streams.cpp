// Built-in kernel `streams`: overlap of host <-> device copies and a kernel with CUDA streams, as
// in the streams lecture. A run is the whole pipeline on pinned host memory: host -> device copy
// of x, y = a * x + b (kernels_src/streams.cu), device -> host copy of y, split into `chunks`
// chunks issued round-robin over `streams` streams. chunks = 1 is the lecture's non-overlapped
// baseline.
//
// What is measured and what is verified:
//   - The run hook records an event on the timed stream, makes every pipeline stream wait for
//     it (so the pipeline starts after the output was poisoned), issues the chunks, then records
//     an event on each pipeline stream and makes the timed stream wait for all of them: ktune's
//     events around the hook cover the whole pipeline, copies included.
//   - Pinned host memory (x's mirror and y's destination), streams and events are created on
//     first use and kept in static state for the life of the process: one worker process runs
//     many configurations, and allocating pinned memory per run would dominate. The pinned
//     buffers are reallocated when n grows; the mirror of x is refreshed (one synchronous copy
//     from the `x` input) when the input buffer's address or size changes. ktune fills inputs
//     once per worker, so within a worker the mirror always matches x. (Two GpuEvaluators in one
//     process with different seeds, equal n and a reused device address would keep a stale
//     mirror: that fails verification, it never passes a wrong result.)
//   - The kernel writes each chunk straight into the `y` output buffer, and the device -> host
//     copy reads it from there, so ktune's check of y verifies every chunk's host -> device copy
//     and kernel. The device -> host copies' destination (pinned host memory) is timed but not
//     compared: checking it would need a further copy inside the measured run.
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <mutex>
#include <vector>

#include "builtin.h"
#include "ktune/kernel_desc.hpp"
#include "ktune/plugin.h"

extern const char* const ktune_kernel_src_streams;

namespace ktune::builtin {
namespace {

constexpr float kA = 2.0f;
constexpr float kB = 0.5f;

int streams_reference(const ktune_reference_ctx* ctx, char* error, std::size_t error_size) {
  const ktune_host_buffer* x = find_buffer(ctx, "x");
  const ktune_host_buffer* y = find_buffer(ctx, "y");
  if (!x || !y || x->count != y->count) {
    std::snprintf(error, error_size, "streams: reference needs buffers x and y of the same size");
    return 1;
  }
  const auto* in = static_cast<const float*>(x->data);
  auto* out = static_cast<float*>(y->data);
  for (std::size_t i = 0; i < x->count; ++i) out[i] = kA * in[i] + kB;
  return 0;
}

// The CUDA runtime functions the hook uses, by signature (handles are pointers, enums ints).
struct Dim3 {
  unsigned x, y, z;  // the layout of CUDA's dim3, passed by value the same way
};
struct Cuda {
  int (*memcpy_async)(void*, const void*, std::size_t, int, void*);
  int (*memcpy)(void*, const void*, std::size_t, int);
  int (*malloc_host)(void**, std::size_t);
  int (*free_host)(void*);
  int (*stream_create_with_flags)(void**, unsigned);
  int (*stream_synchronize)(void*);
  int (*stream_wait_event)(void*, void*, unsigned);
  int (*event_create_with_flags)(void**, unsigned);
  int (*event_record)(void*, void*);
  int (*launch_kernel)(const void*, Dim3, Dim3, void**, std::size_t, void*);
};
constexpr int kHostToDevice = 1, kDeviceToHost = 2;  // cudaMemcpyKind
constexpr unsigned kNonBlocking = 1;                 // cudaStreamNonBlocking
constexpr unsigned kDisableTiming = 2;               // cudaEventDisableTiming

template <typename F>
bool get(const ktune_run_ctx* ctx, const char* name, F& f) {
  f = reinterpret_cast<F>(ctx->cuda_function(name));
  return f != nullptr;
}

bool load(const ktune_run_ctx* ctx, Cuda& c) {
  return get(ctx, "cudaMemcpyAsync", c.memcpy_async) && get(ctx, "cudaMemcpy", c.memcpy) &&
         get(ctx, "cudaMallocHost", c.malloc_host) && get(ctx, "cudaFreeHost", c.free_host) &&
         get(ctx, "cudaStreamCreateWithFlags", c.stream_create_with_flags) &&
         get(ctx, "cudaStreamSynchronize", c.stream_synchronize) &&
         get(ctx, "cudaStreamWaitEvent", c.stream_wait_event) &&
         get(ctx, "cudaEventCreateWithFlags", c.event_create_with_flags) &&
         get(ctx, "cudaEventRecord", c.event_record) &&
         get(ctx, "cudaLaunchKernel", c.launch_kernel);
}

// Kept for the life of the process (see the top of the file); never freed: the driver releases
// it when the process ends.
struct Pipeline {
  std::mutex mutex;
  float* host_x = nullptr;         // pinned mirror of the `x` input
  float* host_y = nullptr;         // pinned destination of y
  std::size_t capacity = 0;        // floats in each
  const void* mirrored = nullptr;  // the `x` buffer host_x mirrors, and its size
  std::size_t mirrored_count = 0;
  void* start = nullptr;  // recorded on the timed stream
  std::vector<void*> streams;
  std::vector<void*> done;  // one per stream, recorded after its last chunk
};

Pipeline& pipeline() {
  static Pipeline* p = new Pipeline;
  return *p;
}

// One run of the hook: what it reads from the context, and the steps of the pipeline. Every
// step returns 0 or the hook's failure code, with the error message written.
class StreamsRun {
 public:
  StreamsRun(const ktune_run_ctx* ctx, char* error, std::size_t error_size)
      : ctx_(ctx), error_(error), error_size_(error_size) {}

  int run() {
    if (!load(ctx_, cuda_)) return fail("a CUDA runtime function is not available", 0);
    if (const int rc = read_context()) return rc;
    Pipeline& p = pipeline();
    std::lock_guard<std::mutex> lock(p.mutex);
    if (const int rc = create_streams(p)) return rc;
    if (const int rc = prepare_host_memory(p)) return rc;
    return issue_pipeline(p);
  }

 private:
  int fail(const char* what, int rc) const {
    if (rc != 0)
      std::snprintf(error_, error_size_, "streams: %s failed (CUDA error %d)", what, rc);
    else
      std::snprintf(error_, error_size_, "streams: %s", what);
    return rc != 0 ? rc : 1;
  }

  // The configuration's values and the kernel's buffers.
  int read_context() {
    std::int64_t v[4];
    static const char* const kNames[] = {"n", "chunks", "streams", "block_size"};
    for (std::size_t i = 0; i < std::size(kNames); ++i) {
      int found = 0;
      v[i] = ctx_->value(ctx_, kNames[i], &found);
      if (!found || v[i] < 1) {
        std::snprintf(error_, error_size_, "streams: no positive value for %s", kNames[i]);
        return 1;
      }
    }
    int found = 0;
    breadth_first_ = ctx_->value(ctx_, "breadth_first", &found) != 0;
    n_ = static_cast<std::size_t>(v[0]);
    chunks_ = static_cast<std::size_t>(v[1]);
    stream_count_ = static_cast<std::size_t>(v[2]);
    block_ = static_cast<unsigned>(v[3]);
    std::size_t x_count = 0, y_count = 0, dev_count = 0;
    x_ = ctx_->buffer(ctx_, "x", &x_count);
    y_ = static_cast<float*>(ctx_->buffer(ctx_, "y", &y_count));
    x_dev_ = static_cast<float*>(ctx_->buffer(ctx_, "x_dev", &dev_count));
    if (!x_ || !y_ || !x_dev_ || x_count < n_ || y_count < n_ || dev_count < n_)
      return fail("buffers x, y and x_dev must hold n values", 0);
    return 0;
  }

  int sync_all(const Pipeline& p) const {
    for (void* s : p.streams)
      if (const int rc = cuda_.stream_synchronize(s)) return rc;
    return 0;
  }

  int create_streams(Pipeline& p) const {
    if (!p.start) {
      if (const int rc = cuda_.event_create_with_flags(&p.start, kDisableTiming))
        return fail("cudaEventCreate", rc);
    }
    while (p.streams.size() < stream_count_) {
      void* s = nullptr;
      void* e = nullptr;
      if (const int rc = cuda_.stream_create_with_flags(&s, kNonBlocking))
        return fail("cudaStreamCreate", rc);
      p.streams.push_back(s);
      if (const int rc = cuda_.event_create_with_flags(&e, kDisableTiming))
        return fail("cudaEventCreate", rc);
      p.done.push_back(e);
    }
    return 0;
  }

  // Pinned buffers large enough for n, and the mirror of x up to date.
  int prepare_host_memory(Pipeline& p) const {
    const std::size_t n = n_;
    if (p.capacity < n) {
      if (const int rc = sync_all(p)) return fail("cudaStreamSynchronize", rc);
      if (p.host_x) cuda_.free_host(p.host_x);
      if (p.host_y) cuda_.free_host(p.host_y);
      p.host_x = p.host_y = nullptr;
      p.capacity = 0;
      p.mirrored = nullptr;
      void* hx = nullptr;
      void* hy = nullptr;
      if (const int rc = cuda_.malloc_host(&hx, n * sizeof(float)))
        return fail("cudaMallocHost", rc);
      p.host_x = static_cast<float*>(hx);
      if (const int rc = cuda_.malloc_host(&hy, n * sizeof(float)))
        return fail("cudaMallocHost", rc);
      p.host_y = static_cast<float*>(hy);
      p.capacity = n;
    }
    if (p.mirrored != x_ || p.mirrored_count != n) {
      if (const int rc = sync_all(p)) return fail("cudaStreamSynchronize", rc);
      if (const int rc = cuda_.memcpy(p.host_x, x_, n * sizeof(float), kDeviceToHost))
        return fail("the copy of x to pinned memory", rc);
      p.mirrored = x_;
      p.mirrored_count = n;
    }
    return 0;
  }

  // Stage 0: host -> device copy of a chunk; 1: its kernel; 2: device -> host copy. Returns the
  // CUDA error.
  int issue(const Pipeline& p, int stage, std::size_t c, std::size_t begin,
            std::size_t count) const {
    void* stream = p.streams[c % stream_count_];
    if (stage == 0)
      return cuda_.memcpy_async(x_dev_ + begin, p.host_x + begin, count * sizeof(float),
                                kHostToDevice, stream);
    if (stage == 2)
      return cuda_.memcpy_async(p.host_y + begin, y_ + begin, count * sizeof(float), kDeviceToHost,
                                stream);
    const float* xp = x_dev_ + begin;
    float* yp = y_ + begin;
    unsigned cnt = static_cast<unsigned>(count);
    float a = kA, b = kB;
    void* args[] = {&xp, &yp, &cnt, &a, &b};
    const Dim3 grid{static_cast<unsigned>((count + block_ - 1) / block_), 1, 1};
    const Dim3 threads{block_, 1, 1};
    return cuda_.launch_kernel(ctx_->kernel, grid, threads, args, 0, stream);
  }

  // The pipeline between the timed stream's start event and its wait for every stream.
  int issue_pipeline(const Pipeline& p) const {
    const std::size_t n = n_;
    // Chunks of whole kilobytes; the last one takes the rest, and chunks past n are left out.
    const std::size_t chunk = (n + chunks_ - 1) / chunks_;
    const std::size_t step = (chunk + 255) / 256 * 256;
    if (const int rc = cuda_.event_record(p.start, ctx_->stream))
      return fail("cudaEventRecord", rc);
    for (std::size_t s = 0; s < stream_count_; ++s) {
      if (const int rc = cuda_.stream_wait_event(p.streams[s], p.start, 0))
        return fail("cudaStreamWaitEvent", rc);
    }
    static const char* const kStage[] = {"host -> device copy", "kernel launch",
                                         "device -> host copy"};
    // Depth first: each chunk's copy, kernel, copy in turn. Breadth first: every chunk's
    // host -> device copy, then every kernel, then every device -> host copy (the lecture's
    // second issue order, which overlapped better on GPUs with one queue per engine).
    const int passes = breadth_first_ ? 3 : 1;
    for (int pass = 0; pass < passes; ++pass) {
      const int first = breadth_first_ ? pass : 0, last = breadth_first_ ? pass : 2;
      for (std::size_t c = 0; c * step < n; ++c) {
        const std::size_t begin = c * step;
        const std::size_t count = std::min(step, n - begin);
        for (int stage = first; stage <= last; ++stage) {
          if (const int rc = issue(p, stage, c, begin, count)) return fail(kStage[stage], rc);
        }
      }
    }
    for (std::size_t s = 0; s < stream_count_; ++s) {
      if (const int rc = cuda_.event_record(p.done[s], p.streams[s]))
        return fail("cudaEventRecord", rc);
      if (const int rc = cuda_.stream_wait_event(ctx_->stream, p.done[s], 0))
        return fail("cudaStreamWaitEvent", rc);
    }
    return 0;
  }

  const ktune_run_ctx* ctx_;
  char* error_;
  std::size_t error_size_;
  Cuda cuda_{};
  std::size_t n_ = 0, chunks_ = 0, stream_count_ = 0;
  unsigned block_ = 0;
  bool breadth_first_ = false;
  const void* x_ = nullptr;
  float* y_ = nullptr;
  float* x_dev_ = nullptr;
};

int streams_run(const ktune_run_ctx* ctx, char* error, std::size_t error_size) {
  return StreamsRun(ctx, error, error_size).run();
}

const ktune_param_desc kParams[] = {
    {"chunks", "1, 2, 4, 8, 16, 32, 64", "16",
     "pieces the data is split into (1: no overlap, the baseline)"},
    {"streams", "1, 2, 3, 4, 8", "4", "streams the chunks are issued to, round-robin"},
    {"breadth_first", "0, 1", "0",
     "issue order: 0 each chunk's three steps in turn; 1 all copies in, all kernels, all copies "
     "out"},
    {"block_size", "128, 256, 512, 1024", "256", "threads per block of the kernel"},
};

const char* const kRestrictions[] = {
    "streams <= chunks",
    "breadth_first == 0 or streams > 1",
    "n < 2**32",
};

const ktune_problem_desc kProblem[] = {
    {"n", "33554432", "number of fp32 values (each crosses PCIe twice)"},
};

const ktune_buffer_desc kBuffers[] = {
    {"x", KTUNE_TYPE_F32, KTUNE_BUFFER_INPUT, "n", "random", 0, 0},
    {"y", KTUNE_TYPE_F32, KTUNE_BUFFER_OUTPUT, "n", nullptr, 0, 1e-6},
    {"x_dev", KTUNE_TYPE_F32, KTUNE_BUFFER_SCRATCH, "n", "none", 0, 0},  // host -> device target
};

// The kernel's signature; the hook passes each chunk's pointers and size.
const ktune_arg_desc kArgs[] = {
    {"x_dev", nullptr, 0},
    {"y", nullptr, 0},
    {nullptr, "n", KTUNE_TYPE_U32},
    {nullptr, "2.0", KTUNE_TYPE_F32},  // kA
    {nullptr, "0.5", KTUNE_TYPE_F32},  // kB
};

const char* const kOptions[] = {"-std=c++17"};

const ktune_kernel_desc kStreams =
    KernelDesc("streams", ktune_kernel_src_streams, "streams.cu",
               "streams_axpb")
        .description(
            "host->device copy, y = a*x + b, device->host copy on pinned memory, chunked over CUDA "
            "streams")
        .options(kOptions)
        .params(kParams)
        .restrictions(kRestrictions)
        .problem(kProblem)
        .grid("div_up(n, block_size)")  // of one chunk as large as the data; chunks use fewer
        .block("block_size")
        .buffers(kBuffers)
        .args(kArgs)
        .reference(streams_reference)
        .bytes("8 * n")  // over PCIe: x in, y out
        .flops("2 * n")
        .run(streams_run);

}  // namespace

const ktune_kernel_desc* streams_kernel() { return &kStreams; }

}  // namespace ktune::builtin
