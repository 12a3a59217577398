// What every run's section opens with: what ran, where, when, and whether it finished.
#include <map>
#include <set>

#include <fmt/format.h>

#include "bench/offline/report/html.h"
#include "bench/offline/report/sections.h"

namespace railbench::report {

namespace {

// argv as one line a user could paste: words with shell metacharacters single-quoted.
std::string command_line(const nlohmann::json& argv) {
  std::string out;
  if (!argv.is_array()) return out;
  for (const auto& a : argv) {
    const std::string w = a.is_string() ? a.get<std::string>() : a.dump();
    const bool plain = !w.empty() && w.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789_-+=./:,@%") == std::string::npos;
    std::string quoted = "'";
    for (char c : w) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += (out.empty() ? "" : " ") + (plain ? w : quoted + "'");
  }
  return out;
}

std::string transport_line(const nlohmann::json& t) {
  if (!t.is_object()) return "-";
  std::string out = text_at(t, "name", "?");
  const std::string provider = text_at(t, "provider");
  if (!provider.empty()) out += ", provider " + provider;
  if (t.contains("rails")) out += fmt::format(", {} rail(s)", t["rails"].is_number() ? t["rails"].get<int>() : 0);
  const std::string nccl = text_at(t, "nccl_version");
  if (!nccl.empty()) out += ", NCCL " + nccl;
  return out;
}

std::string world_line(const nlohmann::json& w) {
  if (!w.is_object()) return "-";
  std::string out = fmt::format("{} rank(s)", w.value("size", 0));
  std::vector<std::string> hosts;
  std::set<std::string> seen, gpus, nics;
  const nlohmann::json ranks = w.value("ranks", nlohmann::json::array());
  for (const auto& r : ranks) {
    const std::string h = text_at(r, "host");
    if (!h.empty() && seen.insert(h).second) hosts.push_back(h);
    if (r.contains("gpu")) gpus.insert(h + "/" + r["gpu"].dump());
    for (const auto& rail : r.value("rails", nlohmann::json::array())) nics.insert(h + "/" + text_at(rail, "name"));
    const std::string nic = text_at(r, "nic");
    if (!nic.empty()) nics.insert(h + "/" + nic);
  }
  const int nhosts = w.value("hosts", static_cast<int>(hosts.size()));
  std::string names;
  for (size_t i = 0; i < hosts.size() && i < 8; ++i) names += (i ? ", " : "") + hosts[i];
  if (hosts.size() > 8) names += fmt::format(", ... ({} more)", hosts.size() - 8);
  out += fmt::format(" on {} host(s){}", nhosts, names.empty() ? "" : " (" + names + ")");
  if (!gpus.empty()) out += fmt::format(", {} GPU(s)", gpus.size());
  if (!nics.empty()) out += fmt::format(", {} NIC(s)", nics.size());
  const std::string launcher = text_at(w, "launcher"), bootstrap = text_at(w, "bootstrap");
  if (!launcher.empty() || !bootstrap.empty())
    out += fmt::format("; launcher {}, bootstrap {}", launcher.empty() ? "-" : launcher,
                       bootstrap.empty() ? "-" : bootstrap);
  return out;
}

}  // namespace

std::string run_header(const RunContext& ctx) {
  const auto& d = ctx.run.doc;
  const std::string status = text_at(d, "status", "unknown");
  std::string out = fmt::format("<section class=\"run\" id=\"{}\">\n<h2>{} &mdash; {}</h2>\n", ctx.id,
                                esc(text_at(d, "command")), esc(ctx.run.path));
  if (status == "failed") {
    out += fmt::format(
        "<div class=\"banner fail\">This run failed: {}<small>What it measured before that is shown below.</small>"
        "</div>\n",
        esc(text_at(d, "error", "no error recorded")));
  } else if (status == "running") {
    // Rank 0 writes the file: whether its process still exists tells the two apart.
    std::string writer;
    const auto& ranks = d.value("world", nlohmann::json::object()).value("ranks", nlohmann::json::array());
    if (!ranks.empty() && ranks[0].is_object() && ranks[0].contains("pid") && ranks[0]["pid"].is_number_integer())
      writer = fmt::format(" It was written by pid {} on {}: if no railbench runs under that pid there, the run died.",
                           ranks[0]["pid"].get<long>(), text_at(ranks[0], "host", "its host"));
    out += fmt::format(
        "<div class=\"banner warn\">This run had not finished when the file was last written ({}): it is still "
        "running, or it died without a verdict.{}<small>What it measured until then is shown below.</small></div>\n",
        esc(text_at(d, "updated_at", "unknown time")), esc(writer));
  }
  Table t({"run", ""}, "head");
  t.row({"command line", "<code>" + esc(command_line(d.value("argv", nlohmann::json::array()))) + "</code>"});
  t.row({"railbench", esc(fmt::format("{} (commit {})", text_at(d, "railbench_version", "?"),
                                      text_at(d, "railbench_commit", "unknown")))});
  t.row({"transport", esc(transport_line(d.value("transport", nlohmann::json::object())))});
  t.row({"world", esc(world_line(d.value("world", nlohmann::json::object())))});
  t.row({"date",
         esc(fmt::format("started {}, finished {}", text_at(d, "started_at", "?"), text_at(d, "finished_at", "-")))});
  std::string st = fmt::format("<span class=\"status {}\">{}</span>", esc(status), esc(status));
  if (d.contains("error") && d["error"].is_string() && !d["error"].get<std::string>().empty())
    st += " " + esc(d["error"].get<std::string>());
  t.row({"status", st});
  if (ctx.baseline) {
    const auto& b = ctx.baseline->doc;
    t.row({"baseline", esc(fmt::format("{} (started {}, railbench {}): dashed in every chart", ctx.baseline->path,
                                       text_at(b, "started_at", "?"), text_at(b, "railbench_version", "?")))});
  }
  return out + t.html();
}

}  // namespace railbench::report
