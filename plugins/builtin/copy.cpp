// Built-in kernel `copy`: a copy of fp32 in three ways (kernels_src/copy.cu), the device's
// attainable memory bandwidth against which the other memory-bound kernels are read.
#include <iterator>

#include "builtin.h"
#include "ktune/kernel_desc.hpp"
#include "ktune/plugin.h"

extern const char* const ktune_kernel_src_copy;

namespace ktune::builtin {
namespace {

const ktune_param_desc kParams[] = {
    {"block_size", "64, 128, 256, 512, 1024", "256", "threads per block"},
    {"vector_width", "1, 2, 4", "4", "floats per access: float, float2, float4"},
    {"blocks_per_sm", "1, 2, 4, 8, 16, 32", "8",
     "blocks per multiprocessor; the grid is blocks_per_sm * multiprocessor_count (variants 0, 1)"},
    {"unroll", "1, 2, 4, 8", "2", "independent accesses per thread and iteration"},
    {"cache_hint", "0, 1, 2", "0",
     "cache operators: 0 none, 1 streaming stores (st.global.cs), 2 streaming loads and stores "
     "(ld.global.cs, st.global.cs)"},
    {"variant", "0, 1, 2", "0",
     "0: grid-stride loads and stores; 1: bulk copies through shared memory (cp.async.bulk, "
     "sm_90 and later); 2: one pass, a block per piece of block_size * unroll vectors"},
    {"chunk_kb", "4, 8, 16, 32", "16", "KiB moved by one bulk copy (variant 1)"},
    {"stages", "2, 4, 8", "4",
     "bulk copies in flight per block, one shared-memory stage each (variant 1)"},
};

const char* const kRestrictions[] = {
    // One resident wave: more blocks than a multiprocessor holds only queue behind it.
    "block_size * blocks_per_sm <= max_threads_per_multiprocessor",
    // Each variant's own parameters; the other's stay at one value, so no config is counted twice.
    "variant == 1 or (chunk_kb == 16 and stages == 4)",
    "variant != 1 or (block_size == 128 and vector_width == 4 and unroll == 2 and cache_hint == 0)",
    "variant != 2 or blocks_per_sm == 1",
    // The bulk copy engine is sm_90's; the grid's stages fit the shared memory.
    "variant != 1 or (compute_capability >= 90 and "
    "blocks_per_sm * stages * chunk_kb * 1024 <= max_shared_memory_per_block_optin)",
};

const ktune_problem_desc kProblem[] = {
    {"n", "268435456", "number of floats to copy (2^28: 1 GiB read, 1 GiB written)"},
};

const ktune_buffer_desc kBuffers[] = {
    {"in", KTUNE_TYPE_F32, KTUNE_BUFFER_INPUT, "n", "random", 0, 0},
    // A copy is exact: the tolerance is zero.
    {"out", KTUNE_TYPE_F32, KTUNE_BUFFER_OUTPUT, "n", nullptr, 0, 0},
};

const ktune_arg_desc kArgs[] = {
    {"in", nullptr, 0},
    {"out", nullptr, 0},
    {nullptr, "n", KTUNE_TYPE_U64},
};

const char* const kOptions[] = {"-std=c++17"};

const ktune_kernel_desc kCopy =
    KernelDesc("copy", ktune_kernel_src_copy, "copy.cu", "copy<VECTOR_WIDTH>")
        .description(
            "copy of float32 (grid-stride, bulk copy engine, one pass): the memory-bandwidth "
            "yardstick")
        .options(kOptions)
        .params(kParams)
        .restrictions(kRestrictions)
        .problem(kProblem)
        // Variants 0 and 1: one resident wave; variant 2: a block per piece.
        .grid(
            "div_up(n, block_size * vector_width * unroll) if variant == 2 else blocks_per_sm * "
            "multiprocessor_count")
        .block("block_size")
        .shared_mem("stages * chunk_kb * 1024 if variant == 1 else 0")  // the bulk variant's stages
        .buffers(kBuffers)
        .args(kArgs)
        // The reference is the plainest configuration's output, made on the GPU: a grid-stride
        // loop of single floats. Its input is made there too, so a start over 1 GiB in and out
        // passes over no host memory (a host reference read the whole input and wrote the whole
        // output on the host, then uploaded both). The GPU test
        // CopyReferenceConfigurationCopiesItsInputExactly checks it against a host copy.
        .reference_config(
            "variant=0,block_size=256,vector_width=1,blocks_per_sm=8,unroll=1,cache_hint=0,"
            "chunk_kb=16,stages=4")
        .bytes("2 * 4 * n");

}  // namespace

const ktune_kernel_desc* copy_kernel() { return &kCopy; }

}  // namespace ktune::builtin
