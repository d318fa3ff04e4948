// Several problems of one kernel at once, for tuning a family of sizes: each problem parameter is
// given one value, a list, a geometric range, or an expression of the other parameters, and the
// problems are every combination of the values (a grid), the derived parameters computed for each.
//
//   n=2**20                  one value
//   n=[2**18, 2**20, 2**24]  a list
//   n=2**18..2**28           a geometric range of factor 2: 2**18, 2**19, ..., 2**28
//   n=2**18..2**28..4        of factor 4: 2**18, 2**20, ..., 2**28 (the end only where reached)
//   cols=rows                an expression of the parameters above, for each problem
//
// The same texts serve the command line (`--problem`) and job files ([problem], where a TOML
// array is a list and a string is any of the forms above).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ktune/problem.h"

namespace ktune {

class ProblemSet {
 public:
  // At most this many problems in a set, and values in one list or range.
  static constexpr std::size_t kMaxProblems = 1024;

  // Gives a parameter its values (replacing any given before). `where` prefixes errors
  // ("--problem", "job.toml: problem"): Error(kUsage) for a malformed text, an empty list, a
  // range that is not increasing, a factor below 2, a value that is not a 64-bit integer, or too
  // many values.
  void set(const std::string& name, const std::string& text, const std::string& where);
  void set(const std::string& name, std::int64_t value);
  bool empty() const { return params_.empty(); }

  // Every combination of the listed values, the first parameter (by name) varying slowest, each
  // derived parameter evaluated for it. Error(kUsage) where a derived parameter names an unknown
  // one or another derived one, or the grid has more than kMaxProblems problems.
  std::vector<Problem> problems() const;

 private:
  struct Param {
    std::vector<std::int64_t> values;  // given values
    std::string expression;            // derived: an expression of the other parameters
    std::string where;
  };
  std::map<std::string, Param> params_;
};

// The order in which to tune a family so that each problem meets tuned neighbours: first the one
// nearest to all the others, then again and again the untuned one nearest to a tuned one
// (distances in log2 of each parameter; ties to the earlier). Indices into `problems`.
std::vector<std::size_t> family_order(const std::vector<Problem>& problems);

// The tuned problem nearest to `problem` among `tuned` (log2 distance, as family_order); an index
// into `tuned`, or tuned.size() where it is empty.
std::size_t nearest_problem(const Problem& problem, const std::vector<Problem>& tuned);

}  // namespace ktune
