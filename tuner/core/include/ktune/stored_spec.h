// The one format of a kernel's description in the results database (kernels.spec_json): what
// the tuner writes, and what the run-time client and replay read back to render, launch and
// re-enumerate a stored kernel version. Written and parsed only here.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/value.h"

namespace ktune {

struct StoredSpec {
  struct Param {
    std::string name;
    std::vector<Value> values;  // in declaration order
    Value default_value;        // the default; 0 where a spec names none
  };
  struct ProblemParam {
    std::string name;
    std::int64_t default_value = 0;
  };
  std::vector<Param> params;          // declaration order
  std::vector<ProblemParam> problem;  // declaration order
  std::vector<std::string> restrictions;
  std::array<std::string, 3> grid{"1", "1", "1"};  // launch expressions
  std::array<std::string, 3> block{"1", "1", "1"};
  std::string shared_mem = "0";
  std::string bytes;  // expression or empty
  std::string flops;
  std::vector<std::string> compile_options;
  bool arch_specific = false;  // compiled for sm_90a rather than sm_90 (written only when true)
  std::string source_name;     // empty: "<kernel>.cu"
  // "kernel_tuner": rendered as Kernel Tuner does (DefineStyle::kKernelTuner, with these
  // block names); empty: ktune's rule.
  std::string defines;
  std::array<std::string, 3> block_names{"block_size_x", "block_size_y", "block_size_z"};
  std::optional<Defines> user_defines;  // Kernel Tuner's `defines`, where given

  // {"parameters": [{"name", "values": [text], "default": text}], "problem": [{"name",
  // "default"}], "restrictions", "grid", "block", "shared_mem", "bytes", "flops",
  // "compile_options", "source_name", where true "arch_specific", and where not ktune's rule
  // "defines" and "block_names", and Kernel Tuner's defines where given as
  // "kernel_tuner_defines": [[name, value]]};
  // values as their canonical text (Value::to_string).
  std::string to_json() const;
  // Reads a spec written by any ktune (fields it lacks take the defaults above; values may also
  // be JSON numbers). Throws Error(kInput) "<where>: unreadable spec_json (...)".
  static StoredSpec parse(std::string_view json, const std::string& where);
};

}  // namespace ktune
