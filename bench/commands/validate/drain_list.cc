#include "bench/commands/validate/drain_list.h"

#include <sys/stat.h>

#include <map>
#include <set>

#include <fmt/format.h>

#include "lib/results/results.h"
#include "lib/runtime/hostlist.h"

namespace railbench {

using nlohmann::json;

namespace {

// Rails on which every node of the run (two or more) has a FAIL of its own: one leaf
// switch down, or a config naming the wrong NIC for that rail, fails every node alike,
// and draining the whole SU would send technicians to every node instead of the switch.
std::set<int> rail_wide_failures(const std::vector<Finding>& findings, size_t nodes) {
  std::map<int, std::set<int>> failing;  // rail -> nodes
  for (const auto& f : findings)
    if (f.severity == Severity::fail && f.ends.empty() && f.node >= 0 && f.rail >= 0) failing[f.rail].insert(f.node);
  std::set<int> out;
  for (const auto& [rail, who] : failing)
    if (nodes >= 2 && who.size() == nodes) out.insert(rail);
  return out;
}

}  // namespace

BadNodes find_bad_nodes(const std::vector<Finding>& findings, const std::vector<std::string>& node_names) {
  BadNodes out;
  std::vector<std::string> bad;
  const std::set<int> rail_wide = rail_wide_failures(findings, node_names.size());
  std::set<int> rail_wide_listed;
  for (const auto& f : findings) {
    if (f.severity != Severity::fail) continue;
    const std::string text = fmt::format("{} {}: {}", to_string(f.kind), f.subject, f.reason);
    if (f.kind == FindingKind::fabric) {
      out.switch_ports.push_back(fmt::format("{}: {}", f.subject, f.reason));
      out.switch_port_codes.push_back(code_of(f));
      out.switch_port_links.push_back(f.fabric_link);
    } else if (f.ends.empty() && f.node >= 0 && rail_wide.count(f.rail)) {
      // One suspect entry per rail, with every node as an end.
      if (!rail_wide_listed.insert(f.rail).second) continue;
      SuspectLink s{fmt::format("rail{} (every node)", f.rail), f.kind, node_names,
                    fmt::format("every node fails on rail {} ({}): a rail-wide fault (its leaf switch, or the "
                                "config's NIC for this rail), not a node's: check the switch and the config first",
                                f.rail, f.reason),
                    code_of(f)};
      out.suspect_links.push_back(std::move(s));
    } else if (!f.ends.empty()) {
      SuspectLink s{f.subject, f.kind, {}, f.reason, code_of(f)};
      for (int n : f.ends) s.ends.push_back(node_names.at(n));
      out.suspect_links.push_back(std::move(s));
    } else if (f.node >= 0) {
      const std::string& host = node_names.at(f.node);
      bad.push_back(host);
      out.reasons[host].push_back(text);
      out.codes[host].push_back(code_of(f));
    }
  }
  out.hostlist = compress_hostlist(bad);
  if (!out.hostlist.empty()) out.hosts = expand_hostlist(out.hostlist);
  return out;
}

void to_json(json& j, const BadNodes& b) {
  json links = json::array();
  for (const auto& s : b.suspect_links) {
    links.push_back(json{
        {"subject", s.subject}, {"kind", to_string(s.kind)}, {"code", s.code}, {"ends", s.ends}, {"reason", s.reason}});
  }
  j = json{{"hosts", b.hosts},
           {"hostlist", b.hostlist},
           {"reasons", b.reasons},
           {"codes", b.codes},
           {"suspect_links", links},
           {"switch_ports", b.switch_ports},
           {"switch_port_codes", b.switch_port_codes},
           {"switch_port_links", b.switch_port_links}};
}

DrainListFile::DrainListFile(std::string path) : path_(std::move(path)) {
  write(BadNodes{}, false);
}

void DrainListFile::write(const BadNodes& bad, bool final) {
  if (path_.empty()) return;
  struct stat st {};
  const bool special = ::stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  if (special && !final) return;  // a device or fifo: once, at the end
  write_text_file(path_, bad.hostlist.empty() ? "" : bad.hostlist + "\n", "--drain-list");
}

}  // namespace railbench
