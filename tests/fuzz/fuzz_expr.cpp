// libFuzzer target: the expression language (ktune/expr.h). Any text is parsed against a scope
// of parameters, problem parameters and device limits; what parses is evaluated with integer,
// float and string values in every way the tuner evaluates expressions.
#include <array>
#include <string_view>

#include "fuzz_common.h"
#include "ktune/expr.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ktune;
  static const Scope scope = [] {
    Scope s;
    for (const char* name : {"block_size", "unroll", "variant", "n", "layout", "x", "max_threads"})
      s.add(name);
    return s;
  }();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fuzz::refusals_allowed([&] {
    const Expr e = Expr::parse(text, scope);
    const std::array<std::array<Value, 7>, 3> cases = {{
        {Value(256), Value(4), Value(7), Value(std::int64_t{1} << 28), Value("soa"), Value(0.5),
         Value(1024)},
        {Value(0), Value(-1), Value(std::int64_t{-9223372036854775807 - 1}),
         Value(std::int64_t{9223372036854775807}), Value(""), Value(-0.0), Value(1)},
        {Value(1), Value(3), Value(1e308), Value(3), Value("aos"), Value(2.5e-308), Value(0)},
    }};
    for (const auto& slots : cases) {
      fuzz::refusals_allowed([&] { (void)e.eval(slots); });
      fuzz::refusals_allowed([&] { (void)e.eval_bool(slots); });
      fuzz::refusals_allowed([&] { (void)e.eval_int(slots); });
      fuzz::refusals_allowed([&] { (void)e.eval_double(slots); });
    }
  });
  return 0;
}
