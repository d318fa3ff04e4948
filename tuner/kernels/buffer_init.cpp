// How a buffer is filled: its init text parsed (KernelSpec::parse_init), an output's expected
// file, and data paths made relative to where they were written.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "ktune/error.h"
#include "ktune/expr.h"
#include "ktune/kernel.h"

namespace ktune {

namespace {

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

// "name(inner)" split into name and inner (trimmed); a bare "name" has no inner.
struct Call {
  std::string name;
  std::optional<std::string> inner;
};

std::optional<Call> split_call(const std::string& text) {
  const std::string t = trim(text);
  const auto open = t.find('(');
  if (open == std::string::npos) return Call{t, std::nullopt};
  if (t.back() != ')') return std::nullopt;
  return Call{trim(std::string_view(t).substr(0, open)),
              trim(std::string_view(t).substr(open + 1, t.size() - open - 2))};
}

class InitParser {
 public:
  explicit InitParser(const BufferSpec& b) : b_(b) {}

  Error bad(const std::string& expected) const {
    return Error(ErrorKind::kInput,
                 fmt::format("buffer '{}': init '{}': {}", b_.name, b_.init, expected));
  }

  // Arguments: constant expressions separated by commas.
  std::vector<double> numbers(const std::string& inner) const {
    std::vector<double> out;
    std::size_t start = 0;
    while (start <= inner.size()) {
      const auto comma = inner.find(',', start);
      Scope none;
      try {
        out.push_back(Expr::parse(inner.substr(start, comma - start), none).eval_double({}));
      } catch (const Error& e) {
        throw bad(e.what());
      }
      if (!std::isfinite(out.back())) throw bad("arguments must be finite");
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return out;
  }

  BufferInit scratch(const std::string& text) const {
    BufferInit s;
    if (text == "none")
      s.kind = BufferInit::Kind::kNone;
    else if (text.empty() || text == "zero")
      s.kind = BufferInit::Kind::kValue;
    else
      throw bad("a scratch buffer is \"zero\" (the default) or \"none\"");
    return s;
  }

  BufferInit distribution(const std::string& name, const std::vector<double>& a) const {
    BufferInit s;
    if (name == "random" || name == "uniform") {
      if (a.size() != 2 || !(a[0] < a[1])) throw bad("expected " + name + "(lo, hi) with lo < hi");
      s.has_range = true;
      s.lo = a[0];
      s.hi = a[1];
    } else if (name == "value") {
      if (a.size() != 1) throw bad("expected value(x)");
      s.kind = BufferInit::Kind::kValue;
      s.value = a[0];
    } else if (name == "normal") {
      if (a.size() != 2 || !(a[1] > 0)) throw bad("expected normal(mean, stddev) with stddev > 0");
      s.kind = BufferInit::Kind::kNormal;
      s.value = a[0];
      s.spread = a[1];
    } else if (name == "zipf") {
      if (a.empty() || a.size() > 2 || !(a[0] > 0))
        throw bad("expected zipf(s) or zipf(s, n) with s > 0");
      if (a.size() == 2 && !(a[1] >= 1 && a[1] == std::floor(a[1]) && a[1] <= 0x1p53))
        throw bad("zipf(s, n): n must be a whole number of at least 1");
      if (a.size() == 1 && !(a[0] > 1))
        throw bad("zipf(s) without n needs s > 1 (the sum diverges otherwise); give zipf(s, n)");
      s.kind = BufferInit::Kind::kZipf;
      s.value = a[0];
      s.spread = a.size() == 2 ? a[1] : 0;
    } else if (name == "choice") {
      s.kind = BufferInit::Kind::kChoice;
      s.choices = a;
    } else {
      throw unknown();
    }
    return s;
  }

  Error unknown() const {
    return bad(
        "expected random, random(lo, hi), uniform(lo, hi), normal(mean, stddev), zipf(s), "
        "zipf(s, n), choice(v1, v2, ...), iota, value(x), zero, file(PATH) or generator");
  }

  BufferInit parse() const {
    const auto call = split_call(b_.init);
    if (!call) throw unknown();
    if (b_.role == BufferRole::kScratch) return scratch(trim(b_.init));
    if (b_.role == BufferRole::kOutput) {
      (void)KernelSpec::expected_file(b_);  // an output's init names its expected contents
      return {};
    }
    BufferInit s;
    if (!call->inner) {
      if (call->name.empty() || call->name == "random") return s;
      if (call->name == "iota")
        s.kind = BufferInit::Kind::kIota;
      else if (call->name == "zero")
        s.kind = BufferInit::Kind::kValue;
      else if (call->name == "generator")
        s.kind = BufferInit::Kind::kGenerator;
      else
        throw unknown();
      return s;
    }
    if (call->name == "file") {
      if (call->inner->empty()) throw bad("file(PATH) needs a path");
      s.kind = BufferInit::Kind::kFile;
      s.text = *call->inner;
      return s;
    }
    if (call->name == "generator") {
      s.kind = BufferInit::Kind::kGenerator;
      s.text = *call->inner;
      return s;
    }
    if (call->inner->empty()) throw unknown();
    return distribution(call->name, numbers(*call->inner));
  }

 private:
  const BufferSpec& b_;
};

// The path inside file(...), or empty when `text` is not a file(...).
std::string file_path(const std::string& text) {
  const auto call = split_call(text);
  return call && call->name == "file" && call->inner ? *call->inner : std::string();
}

std::string rebased(const std::string& text, const std::string& base) {
  const std::string path = file_path(text);
  if (path.empty() || std::filesystem::path(path).is_absolute()) return text;
  return "file(" + (std::filesystem::absolute(base) / path).lexically_normal().string() + ")";
}

}  // namespace

BufferInit KernelSpec::parse_init(const BufferSpec& b) { return InitParser(b).parse(); }

std::string KernelSpec::expected_file(const BufferSpec& b) {
  // An output's init may name its expected contents as well (the C ABI has no other field);
  // "zero" or "none" there (a recording's synthesized kernel) says nothing about them.
  const bool from_init = b.expected.empty() && b.role == BufferRole::kOutput;
  const std::string text = trim(from_init ? b.init : b.expected);
  if (text.empty() || (from_init && (text == "zero" || text == "none"))) return {};
  const std::string path = file_path(text);
  if (path.empty())
    throw Error(ErrorKind::kInput,
                fmt::format("buffer '{}': expected '{}': expected file(PATH) (or nothing: the "
                            "kernel's reference)",
                            b.name, text));
  if (b.role == BufferRole::kInput || b.role == BufferRole::kScratch ||
      b.role == BufferRole::kConstant)
    throw Error(ErrorKind::kInput,
                fmt::format("buffer '{}': expected contents are for output and inout buffers, "
                            "this one is {}",
                            b.name, to_string(b.role)));
  return path;
}

void KernelSpec::resolve_data_paths(const std::string& base) {
  for (auto& b : buffers) {
    b.init = rebased(b.init, base);
    b.expected = rebased(b.expected, base);
  }
}

}  // namespace ktune
