/* A C++ builder over the plugin ABI (ktune/plugin.h): a ktune_kernel_desc filled in one
 * expression, with every table's count taken from the array itself. Optional: the C structs stay
 * the ABI, and what this builds is exactly such a struct. Header-only, C++17.
 *
 *   const ktune_kernel_desc kSaxpy = ktune::KernelDesc("saxpy", saxpy_source, "saxpy.cu", "saxpy")
 *                                        .params(kParams)
 *                                        .problem(kProblem)
 *                                        .buffers(kBuffers)
 *                                        .args(kArgs)
 *                                        .grid("div_up(n, block_size)")
 *                                        .block("block_size")
 *                                        .reference(saxpy_reference)
 *                                        .bytes("3 * 4 * n");
 */
#ifndef KTUNE_KERNEL_DESC_HPP
#define KTUNE_KERNEL_DESC_HPP

#include <cstddef>

#include "ktune/plugin.h"

namespace ktune {

class KernelDesc {
 public:
  KernelDesc(const char* name, const char* source, const char* source_name, const char* entry)
      : d_{} {
    d_.struct_size = sizeof(ktune_kernel_desc);
    d_.name = name;
    d_.source = source;
    d_.source_name = source_name;
    d_.entry = entry;
  }

  KernelDesc& description(const char* text) { return set(d_.description, text); }
  template <std::size_t N>
  KernelDesc& options(const char* const (&options)[N]) {
    return table(d_.compile_options, d_.compile_option_count, options);
  }
  template <std::size_t N>
  KernelDesc& params(const ktune_param_desc (&params)[N]) {
    return table(d_.params, d_.param_count, params);
  }
  template <std::size_t N>
  KernelDesc& restrictions(const char* const (&restrictions)[N]) {
    return table(d_.restrictions, d_.restriction_count, restrictions);
  }
  template <std::size_t N>
  KernelDesc& problem(const ktune_problem_desc (&problem)[N]) {
    return table(d_.problem, d_.problem_count, problem);
  }
  template <std::size_t N>
  KernelDesc& buffers(const ktune_buffer_desc (&buffers)[N]) {
    return table(d_.buffers, d_.buffer_count, buffers);
  }
  template <std::size_t N>
  KernelDesc& args(const ktune_arg_desc (&args)[N]) {
    return table(d_.args, d_.arg_count, args);
  }
  // Launch geometry: expressions for x, y, z (NULL / left out: "1").
  KernelDesc& grid(const char* x, const char* y = nullptr, const char* z = nullptr) {
    d_.grid[0] = x, d_.grid[1] = y, d_.grid[2] = z;
    return *this;
  }
  KernelDesc& block(const char* x, const char* y = nullptr, const char* z = nullptr) {
    d_.block[0] = x, d_.block[1] = y, d_.block[2] = z;
    return *this;
  }
  KernelDesc& shared_mem(const char* bytes) { return set(d_.shared_mem, bytes); }
  // Compile for the architecture-specific target (sm_90a on an sm_90 device): see plugin.h.
  KernelDesc& arch_specific() {
    d_.arch_specific = 1;
    return *this;
  }
  KernelDesc& reference(ktune_reference_fn fn) {
    d_.reference = fn;
    return *this;
  }
  KernelDesc& reference_config(const char* config) { return set(d_.reference_config, config); }
  KernelDesc& bytes(const char* expression) { return set(d_.bytes, expression); }
  KernelDesc& flops(const char* expression) { return set(d_.flops, expression); }
  KernelDesc& run(ktune_run_fn fn) {
    d_.run = fn;
    return *this;
  }
  KernelDesc& generate(ktune_generate_fn fn) {
    d_.generate = fn;
    return *this;
  }
  KernelDesc& user_data(void* data) {
    d_.user_data = data;
    return *this;
  }

  operator ktune_kernel_desc() const { return d_; }  // NOLINT(google-explicit-constructor)
  const ktune_kernel_desc& desc() const { return d_; }

 private:
  KernelDesc& set(const char*& field, const char* value) {
    field = value;
    return *this;
  }
  template <typename T, std::size_t N>
  KernelDesc& table(const T*& field, std::size_t& count, const T (&values)[N]) {
    field = values;
    count = N;
    return *this;
  }

  ktune_kernel_desc d_;
};

}  // namespace ktune

#endif /* KTUNE_KERNEL_DESC_HPP */
