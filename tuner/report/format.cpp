// Reports: number, time and text formatting shared by the HTML and Markdown renderers.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "report/internal.h"

namespace ktune::report_detail {

TimeUnit time_unit_for(double typical_ms) {
  if (!std::isfinite(typical_ms)) return {1, "ms"};
  if (typical_ms < 0.1) return {1e3, "µs"};
  if (typical_ms >= 1e4) return {1e-3, "s"};
  return {1, "ms"};
}

std::string format_number(double v, int significant) {
  if (!std::isfinite(v)) return "-";
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 1e6 || a < 1e-4) return fmt::format("{:.{}g}", v, significant);
  // Fixed notation with `significant` digits, trailing zeros of the fraction kept off.
  const int magnitude = static_cast<int>(std::floor(std::log10(a)));
  const int decimals = std::max(0, significant - 1 - magnitude);
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

std::string format_time(double ms, const TimeUnit& unit, int significant) {
  if (!std::isfinite(ms)) return "-";
  const double v = ms * unit.per_ms;
  const double a = std::fabs(v);
  if (a == 0) return "0";
  // Fixed decimals, so a column lines up and keeps its trailing zeros.
  const int magnitude = static_cast<int>(std::floor(std::log10(a)));
  const int decimals = std::clamp(significant - 1 - magnitude, 0, 6);
  return fmt::format("{:.{}f}", v, decimals);
}

std::string format_time_auto(double ms) {
  if (!std::isfinite(ms)) return "-";
  const TimeUnit u = time_unit_for(ms);
  return format_time(ms, u) + " " + u.name;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  if (seconds < 60) return format_number(seconds, seconds < 10 ? 2 : 3) + " s";
  const auto s = static_cast<long long>(std::llround(seconds));
  if (s < 3600) return fmt::format("{} min {:02} s", s / 60, s % 60);
  return fmt::format("{} h {:02} min", s / 3600, s / 60 % 60);
}

std::string format_percent(double share, int decimals) {
  if (!std::isfinite(share)) return "-";
  return fmt::format("{:.{}f}%", 100 * share, decimals);
}

std::string format_driver(int version) {
  if (version <= 0) return "-";
  return fmt::format("{}.{}", version / 1000, version % 1000 / 10);
}

std::string format_bytes(std::int64_t bytes) {
  if (bytes <= 0) return "-";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  return format_number(v, 3) + " " + units[u];
}

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string md_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else if (c == '\r')
      continue;
    else
      out += c;
  }
  return out;
}

std::string status_color(TrialStatus s) {
  switch (s) {
    case TrialStatus::kOk:
      return "#59a14f";
    case TrialStatus::kInvalid:
      return "#9d9d9d";
    case TrialStatus::kCompileFailed:
      return "#f28e2b";
    case TrialStatus::kLaunchFailed:
      return "#b07aa1";
    case TrialStatus::kResourcesExceeded:
      return "#9c755f";
    case TrialStatus::kWrongResult:
      return "#e15759";
    case TrialStatus::kTimeout:
      return "#edc948";
    case TrialStatus::kCrashed:
      return "#8b1e3f";
  }
  return "#333333";
}

std::string series_color(std::size_t i) {
  static const char* const kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1",
                                         "#76b7b2", "#9c755f", "#edc948", "#ff9da7", "#bab0ac"};
  return kPalette[i % std::size(kPalette)];
}

}  // namespace ktune::report_detail
