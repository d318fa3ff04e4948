/*
 * ktune plugin ABI: how a shared library (or a built-in) describes tunable CUDA kernels.
 *
 * A plugin is a shared library that exports one C function,
 *
 *     const ktune_plugin* ktune_plugin_entry(void);
 *
 * returning a pointer to a static ktune_plugin. ktune loads it with `--plugin PATH` or from the
 * directories in KTUNE_PLUGIN_PATH, checks abi_version, and copies every description into its
 * own types, so the data only has to live as long as the library stays loaded.
 *
 * Compatibility rules (as SQLite's sqlite3_vfs): fields of these structs are only ever appended,
 * and every struct that can grow starts with its own size, so a plugin compiled against an
 * older header (a smaller struct_size) keeps loading once fields are added: ktune reads only
 * the fields that struct_size covers. KTUNE_PLUGIN_ABI_VERSION changes only when an existing
 * field changes meaning, and ktune refuses a plugin built for any other ABI version, naming
 * both versions.
 *
 * Everything given as `const char*` "expression" is text in ktune's expression language
 * (docs/expressions.md): names are the kernel's parameters, its problem parameters and the
 * device limits. Values of the kernel's tunable parameters reach the source as macros named by
 * the parameter in upper case (`block_size` -> `#define BLOCK_SIZE 256`). Two parameter names
 * are special: `maxrregcount` becomes the NVRTC option --maxrregcount (0: no limit) and
 * `launch_bounds` defines the macro KTUNE_LAUNCH_BOUNDS, which the kernel puts in front of its
 * name: empty when 0, else __launch_bounds__(threads per block, launch_bounds).
 *
 * Plugin functions (reference, run) must not throw or longjmp across this boundary; they return
 * 0 on success, or non-zero with a message written into `error`.
 */
#ifndef KTUNE_PLUGIN_H
#define KTUNE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KTUNE_PLUGIN_ABI_VERSION 1u
/* Counts the fields appended since version 1.0 (a plugin built against any minor version of
   ABI 1 loads): 1.1 appended ktune_kernel_desc.generate, 1.2 arch_specific. */
#define KTUNE_PLUGIN_ABI_MINOR_VERSION 2u

#if defined(_WIN32)
#define KTUNE_PLUGIN_EXPORT __declspec(dllexport)
#else
#define KTUNE_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* Element types of buffers and scalar arguments. Stored values never change. */
typedef enum ktune_type {
  KTUNE_TYPE_I8 = 1,
  KTUNE_TYPE_U8 = 2,
  KTUNE_TYPE_I16 = 3,
  KTUNE_TYPE_U16 = 4,
  KTUNE_TYPE_I32 = 5,
  KTUNE_TYPE_U32 = 6,
  KTUNE_TYPE_I64 = 7,
  KTUNE_TYPE_U64 = 8,
  KTUNE_TYPE_F32 = 9,
  KTUNE_TYPE_F64 = 10
} ktune_type;

/* What a buffer is to the kernel. */
typedef enum ktune_buffer_role {
  KTUNE_BUFFER_INPUT = 1,   /* filled once per worker from `init`; must not be written */
  KTUNE_BUFFER_OUTPUT = 2,  /* poisoned before every run, then compared with the reference */
  KTUNE_BUFFER_INOUT = 3,   /* filled from `init` before every run, then compared */
  KTUNE_BUFFER_SCRATCH = 4, /* work space: set from `init` ("zero" or "none") once, not checked */
  KTUNE_BUFFER_CONSTANT = 5 /* filled from `init` like an input and copied into the kernel's
                               __constant__ variable of the same name before it runs; not an
                               argument (newer than ABI 1.1's first release: older ktune refuse
                               it by name) */
} ktune_buffer_role;

typedef struct ktune_param_desc {
  const char* name;          /* identifier; the macro is its upper-case form */
  const char* values;        /* comma-separated literals: "32,64,128" or "\"aos\",\"soa\"" */
  const char* default_value; /* one of values; NULL: the first */
  const char* description;   /* may be NULL */
} ktune_param_desc;

typedef struct ktune_problem_desc {
  const char* name;          /* identifier, e.g. "n"; problem values are 64-bit integers */
  const char* default_value; /* decimal integer */
  const char* description;   /* may be NULL */
} ktune_problem_desc;

typedef struct ktune_buffer_desc {
  const char* name;
  int type;         /* ktune_type */
  int role;         /* ktune_buffer_role */
  const char* size; /* element count: expression over problem and parameters */
  /* Inputs (docs/plugins.md, "Input data"): "random" (default; integers in [-100, 100], floats
     in [-1, 1)), "random(lo, hi)" = "uniform(lo, hi)", "normal(mean, stddev)", "zipf(s)" or
     "zipf(s, n)", "choice(v1, v2, ...)", "iota", "value(x)", "file(PATH)" (raw or .npy) or
     "generator" / "generator(TEXT)" (the kernel's generate function). Outputs: NULL, or
     "file(PATH)": the expected contents. Scratch: "zero" (default) or "none". */
  const char* init;
  double abs_tol; /* floating-point outputs pass where |out - ref| <= abs_tol + */
  double rel_tol; /*   rel_tol * |ref|; integers are compared exactly */
} ktune_buffer_desc;

typedef struct ktune_arg_desc {
  const char* buffer; /* the buffer passed (its device pointer), or NULL for a scalar */
  const char* value;  /* scalar: expression over problem and parameters */
  int type;           /* scalar: ktune_type */
} ktune_arg_desc;

/* A host copy of a buffer, given to reference functions. */
typedef struct ktune_host_buffer {
  const char* name;
  int type;     /* ktune_type */
  int role;     /* ktune_buffer_role */
  size_t count; /* elements */
  void* data;   /* inputs: the generated data; outputs: to be filled */
} ktune_host_buffer;

/* What a reference function sees: the problem, and every buffer on the host. */
typedef struct ktune_reference_ctx {
  size_t struct_size;
  size_t problem_count;
  const char* const* problem_names;
  const int64_t* problem_values;
  size_t buffer_count;
  ktune_host_buffer* buffers;
  void* user_data; /* ktune_kernel_desc.user_data */
} ktune_reference_ctx;

/* Fills the expected contents of every OUTPUT and INOUT buffer from the inputs. */
typedef int (*ktune_reference_fn)(const ktune_reference_ctx* ctx, char* error, size_t error_size);

/* What a run hook sees: enough to replace the single launch of a measurement with its own
   sequence (several launches, streams, copies). Everything it enqueues must go to `stream`
   or be synchronised with it, because the measurement's events are recorded on it. */
typedef struct ktune_run_ctx {
  size_t struct_size;
  void* stream;         /* cudaStream_t the run is timed on */
  void* kernel;         /* the compiled entry, a cudaKernel_t */
  const unsigned* grid; /* geometry from the kernel's expressions */
  const unsigned* block;
  size_t shared_mem;
  void** args; /* the kernel's argument array, as launched */
  /* Launches `kernel` (or the entry when NULL) with this geometry; returns a cudaError_t. */
  int (*launch)(const struct ktune_run_ctx* ctx, void* kernel, const unsigned grid[3],
                const unsigned block[3], size_t shared_mem, void** args);
  /* Device pointer and element count of a buffer by name; NULL if there is none. */
  void* (*buffer)(const struct ktune_run_ctx* ctx, const char* name, size_t* count);
  /* Problem or numeric parameter value by name; 0 with *found = 0 if unknown. */
  int64_t (*value)(const struct ktune_run_ctx* ctx, const char* name, int* found);
  /* Address of a CUDA runtime function ktune carries ("cudaMemcpyAsync", "cudaStreamCreate",
     "cudaEventRecord", "cudaMallocHost" ...), or of a driver function ("cuTensorMapEncodeTiled",
     its CUDA 12.0 form), so a plugin needs to link no CUDA library. */
  void* (*cuda_function)(const char* name);
  void* user_data; /* ktune_kernel_desc.user_data */
  void* internal;  /* ktune's own state; do not touch */
  /* Device address and size of a __device__ or __constant__ variable of the compiled program
     (e.g. a filter in constant memory, filled with cudaMemcpyAsync); NULL if there is none. */
  void* (*global)(const struct ktune_run_ctx* ctx, const char* name, size_t* bytes);
} ktune_run_ctx;

typedef int (*ktune_run_fn)(const ktune_run_ctx* ctx, char* error, size_t error_size);

/* What a generate function sees (ABI 1.1): one input buffer to fill, on the host. The same
   (problem, seed, args) must give the same data: every worker process generates its own copy. */
typedef struct ktune_generate_ctx {
  size_t struct_size;
  size_t problem_count;
  const char* const* problem_names;
  const int64_t* problem_values;
  const char* buffer; /* the buffer's name */
  int type;           /* ktune_type */
  size_t count;       /* elements to write at data */
  void* data;
  uint64_t seed;    /* the run's seed (--seed), mixed with the buffer's position */
  const char* args; /* the text inside generator(...); "" for a bare "generator" */
  void* user_data;  /* ktune_kernel_desc.user_data */
} ktune_generate_ctx;

/* Fills ctx->data with ctx->count elements for an input buffer whose init is "generator". */
typedef int (*ktune_generate_fn)(const ktune_generate_ctx* ctx, char* error, size_t error_size);

typedef struct ktune_kernel_desc {
  size_t struct_size; /* sizeof(ktune_kernel_desc) as the plugin was compiled */
  const char* name;   /* unique identifier, e.g. "reduce" */
  const char* description;
  const char* source;      /* the templated CUDA text */
  const char* source_name; /* a file name for compiler messages, e.g. "reduce.cu" */
  const char* entry;       /* NVRTC name expression: "reduce<BLOCK_SIZE, VARIANT>" or "saxpy" */
  const char* const* compile_options; /* extra NVRTC options, e.g. "-std=c++17"; may be NULL */
  size_t compile_option_count;
  const ktune_param_desc* params;
  size_t param_count;
  const char* const* restrictions; /* expressions that must hold for a valid config */
  size_t restriction_count;
  const ktune_problem_desc* problem;
  size_t problem_count;
  const char* grid[3]; /* expressions; NULL entries mean "1" */
  const char* block[3];
  const char* shared_mem; /* dynamic shared memory in bytes; NULL means 0 */
  const ktune_buffer_desc* buffers;
  size_t buffer_count;
  const ktune_arg_desc* args; /* kernel arguments in order */
  size_t arg_count;
  ktune_reference_fn reference; /* host reference; or NULL and ... */
  const char* reference_config; /* ... a config whose output is the reference,
                                   "variant=1,block_size=256" (others default) */
  const char* bytes;            /* bytes moved per run (expression; NULL: none) -> GB/s */
  const char* flops;            /* floating-point operations per run (NULL: none) -> GFLOP/s */
  ktune_run_fn run;             /* optional: replaces the single launch */
  void* user_data;              /* passed to reference, run and generate */
  /* ABI 1.1; a plugin built against 1.0 has a struct_size without it */
  ktune_generate_fn generate; /* optional: fills inputs whose init is "generator" */
  /* ABI 1.2: nonzero compiles for the device's architecture-specific target (sm_90a on compute
     capability 9.0) instead of sm_NN, for instructions only that architecture has (wgmma,
     setmaxnreg); restrict such a kernel to the capabilities it was written for. */
  int arch_specific;
} ktune_kernel_desc;

typedef struct ktune_plugin {
  unsigned abi_version; /* KTUNE_PLUGIN_ABI_VERSION the plugin was built against */
  size_t struct_size;   /* sizeof(ktune_plugin) as the plugin was compiled */
  const char* name;
  const char* version;
  const ktune_kernel_desc* const* kernels;
  size_t kernel_count;
} ktune_plugin;

/* The one symbol a plugin library exports. */
typedef const ktune_plugin* (*ktune_plugin_entry_fn)(void);
#define KTUNE_PLUGIN_ENTRY_NAME "ktune_plugin_entry"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KTUNE_PLUGIN_H */
