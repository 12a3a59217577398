#include "lib/results/metrics_text.h"

#include <cmath>
#include <ctime>
#include <stdexcept>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench {

using nlohmann::json;

MetricsFormat parse_metrics_format(const std::string& s) {
  if (s == "prometheus") return MetricsFormat::prometheus;
  if (s == "openmetrics") return MetricsFormat::openmetrics;
  throw UsageError(
      fmt::format("unknown --format '{}': use prometheus (the text format node_exporter's textfile collector reads) or "
                  "openmetrics",
                  s));
}

namespace {

bool valid_name(const std::string& n, bool label) {
  if (n.empty()) return false;
  for (size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!label && c == ':');
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return !(label && n.rfind("__", 0) == 0);
}

// Label values may hold anything; the format escapes backslash, quote and newline.
std::string escape_value(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// HELP text escapes only backslash and newline.
std::string escape_help(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

double unix_seconds(const json& doc, const char* key) {
  const auto it = doc.find(key);
  if (it == doc.end() || !it->is_string()) return NAN;
  std::tm tm{};
  if (strptime(it->get<std::string>().c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) == nullptr) return NAN;
  return static_cast<double>(timegm(&tm));
}

}  // namespace

const json& field_of(const json& j, const char* key) {
  static const json kNone;
  if (!j.is_object()) return kNone;
  const auto it = j.find(key);
  return it == j.end() ? kNone : *it;
}

std::string text_of(const json& j, const char* key) {
  const json& v = field_of(j, key);
  return v.is_string() ? v.get<std::string>() : "";
}

void MetricsText::gauge(const std::string& name, const std::string& help, const std::string& unit) {
  if (!valid_name(name, false)) throw std::logic_error("metric name not valid in Prometheus: " + name);
  if (!unit.empty() && (name.size() <= unit.size() || name.compare(name.size() - unit.size(), unit.size(), unit) != 0))
    throw std::logic_error(fmt::format("metric {} must end with its unit {}", name, unit));
  auto [it, fresh] = families_.try_emplace(name, Family{help, unit, {}});
  if (fresh) {
    order_.push_back(name);
  } else if (it->second.help != help || it->second.unit != unit) {
    throw std::logic_error("metric declared twice with different help or unit: " + name);
  }
}

void MetricsText::sample(const std::string& name, const MetricLabels& labels, double value) {
  auto it = families_.find(name);
  if (it == families_.end()) throw std::logic_error("sample of an undeclared metric: " + name);
  if (!std::isfinite(value)) return;
  std::string line;
  if (!labels.empty()) {
    line += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (!valid_name(labels[i].first, true)) throw std::logic_error("label name not valid: " + labels[i].first);
      line += fmt::format("{}{}=\"{}\"", i ? "," : "", labels[i].first, escape_value(labels[i].second));
    }
    line += '}';
  }
  // Shortest text that reads back as the same double.
  line += fmt::format(" {}", value);
  it->second.samples.push_back(std::move(line));
}

std::string MetricsText::render(MetricsFormat format) const {
  std::string out;
  for (const auto& name : order_) {
    const Family& f = families_.at(name);
    if (f.samples.empty()) continue;  // a family without samples says nothing
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, escape_help(f.help), name);
    if (format == MetricsFormat::openmetrics && !f.unit.empty()) out += fmt::format("# UNIT {} {}\n", name, f.unit);
    for (const auto& s : f.samples) out += name + s + '\n';
  }
  if (format == MetricsFormat::openmetrics) out += "# EOF\n";
  return out;
}

std::string rank_host(const json& doc, int rank) {
  const json& ranks = field_of(field_of(doc, "world"), "ranks");
  if (ranks.is_array() && rank >= 0 && static_cast<size_t>(rank) < ranks.size())
    return text_of(ranks[static_cast<size_t>(rank)], "host");
  return "";
}

void run_metrics(const json& doc, MetricsText& out) {
  const std::string command = text_of(doc, "command");
  const json& transport = field_of(doc, "transport");
  std::string tname = text_of(transport, "name");
  if (!text_of(transport, "provider").empty()) tname += ":" + text_of(transport, "provider");
  out.gauge("railbench_run_info", "A railbench run: its command, version, commit, status and transport (always 1)");
  out.sample("railbench_run_info",
             {{"command", command},
              {"version", text_of(doc, "railbench_version")},
              {"commit", text_of(doc, "railbench_commit")},
              {"status", text_of(doc, "status")},
              {"transport", tname}},
             1);
  out.gauge("railbench_run_start_timestamp_seconds", "When the run started (Unix time)", "seconds");
  out.sample("railbench_run_start_timestamp_seconds", {{"command", command}}, unix_seconds(doc, "started_at"));
  out.gauge("railbench_run_end_timestamp_seconds", "When the run ended, or last wrote its results (Unix time)",
            "seconds");
  out.sample("railbench_run_end_timestamp_seconds", {{"command", command}},
             unix_seconds(doc, field_of(doc, "finished_at").is_string() ? "finished_at" : "updated_at"));
  const json& world = field_of(doc, "world");
  const json& size = field_of(world, "size");
  out.gauge("railbench_run_ranks", "Ranks in the run");
  out.sample("railbench_run_ranks", {{"command", command}}, size.is_number() ? size.get<double>() : NAN);
  if (field_of(world, "hosts").is_array()) {
    out.gauge("railbench_run_hosts", "Hosts in the run");
    out.sample("railbench_run_hosts", {{"command", command}}, static_cast<double>(world["hosts"].size()));
  }
  const std::string verdict = text_of(doc, "verdict");
  if (!verdict.empty()) {
    // A state set: one series per verdict, 1 for the run's.
    out.gauge("railbench_run_verdict", "The run's verdict as a state set: 1 for the verdict it reached");
    for (const char* v : {"PASS", "WARN", "FAIL"})
      out.sample("railbench_run_verdict", {{"command", command}, {"verdict", v}}, verdict == v ? 1 : 0);
  }
}

}  // namespace railbench
