#include "bench/commands/validate/fabric_flows.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "bench/commands/validate/rank_layout.h"

namespace railbench {

std::vector<FabricNic> fabric_nics(const SuFabric& f, const SuLayout& L, const std::vector<std::string>& ips,
                                   const std::vector<uint16_t>& ports) {
  std::vector<FabricNic> out;
  for (size_t r = 0; r < L.node_of.size(); ++r) {
    FabricNic n;
    n.rank = static_cast<int>(r);
    n.node = L.node_of[r];
    n.rail = L.slot_of[r];
    n.leaf = f.leaf_index(f.su_of(L.node_names[n.node]), n.rail);
    n.ip = ips.at(r);
    n.port = ports.at(r);
    n.label = fmt::format("{} rail{}", L.node_names[n.node], n.rail);
    out.push_back(std::move(n));
  }
  return out;
}

std::vector<PlannedFlow> plan_leaf_pair(const std::vector<FabricNic>& nics, int a, int b, int count, int& next_id,
                                        std::vector<uint16_t>& next_port, std::map<std::pair<int, int>, int>& used) {
  std::vector<int> src, dst;
  for (size_t i = 0; i < nics.size(); ++i) {
    if (nics[i].ip.empty() || nics[i].port == 0) continue;
    if (nics[i].leaf == a) src.push_back(static_cast<int>(i));
    if (nics[i].leaf == b) dst.push_back(static_cast<int>(i));
  }
  std::vector<PlannedFlow> out;
  if (src.empty() || dst.empty()) return out;
  for (int k = 0; k < count; ++k) {
    // Sources in turn; each takes the destination it has used least, so the flows of a
    // leaf pair cover its NIC pairs before any repeats.
    const int s = src[(next_id + k) % src.size()];
    // Never a NIC of the same node: the kernel delivers that locally, through no switch.
    int best = -1;
    for (int d : dst)
      if (nics[d].node != nics[s].node && (best < 0 || used[{s, d}] < used[{s, best}])) best = d;
    if (best < 0) continue;
    used[{s, best}] += 1;
    out.push_back({next_id + static_cast<int>(out.size()), s, best, next_port[s]++});
  }
  next_id += static_cast<int>(out.size());
  return out;
}

namespace {

int spine_index(const SuFabric& f, const std::string& name) {
  for (size_t i = 0; i < f.spines.size(); ++i)
    if (f.spines[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace

FlowPath map_path(const SuFabric& f, const FabricNic& src, const FabricNic& dst, const FlowTrace& trace) {
  FlowPath p;
  p.reached = trace.reached;
  const std::string& src_leaf = f.leaves.at(src.leaf).name;
  const std::string& dst_leaf = f.leaves.at(dst.leaf).name;
  int last_known = 0;  // hops of the leaf-spine-leaf path seen: 1 source leaf, 2 spine, 3 destination leaf
  for (const auto& h : trace.hops) {
    std::string sw;
    if (!h.address.empty() && h.address != dst.ip) {
      sw = f.switch_of(h.address);
      if (sw.empty() && p.mismatch.empty())
        p.mismatch = fmt::format(
            "hop {} answered from {}, which is in no switch of the config's fabric: add it to its "
            "leaf's or spine's addresses (or its link's)",
            h.ttl, h.address);
    }
    p.switches.push_back(sw);
    if (sw.empty()) continue;
    if (h.ttl == 1 && sw != src_leaf && p.mismatch.empty())
      p.mismatch = fmt::format("the first hop is {}, but the config puts {} under {}", sw, src.label, src_leaf);
    if (h.ttl == 2 && f.is_spine(sw)) p.spine = spine_index(f, sw);
    last_known = std::max(last_known, std::min(h.ttl, 3));
  }
  if (p.spine >= 0 && !p.reached && last_known >= 3) {
    // Every switch on the way answered but the destination did not: the SYN got there
    // (or to its last link), and the answer died on its way back, from the destination
    // leaf over some spine down to the source leaf: one of those leaves' links, unknown
    // which (the return path hashes on its own).
    for (size_t i = 0; i < f.links.size(); ++i)
      if (f.links[i].leaf == dst_leaf || f.links[i].leaf == src_leaf) p.next_candidates.push_back(static_cast<int>(i));
  } else if (p.spine >= 0) {
    const int up = f.link_index(src_leaf, f.spines[p.spine].name);
    const int down = f.link_index(dst_leaf, f.spines[p.spine].name);
    if (up >= 0) p.links.push_back(up);
    if (p.reached) {
      if (down >= 0) p.links.push_back(down);
    } else {
      // Cut after the spine: the probe died on the spine's one link down to the
      // destination leaf, or the destination leaf's answer died on its way back (over
      // one of its uplinks and one of the source leaf's links, the return path's hash
      // unknown). The link down is one of these too.
      for (size_t i = 0; i < f.links.size(); ++i)
        if (f.links[i].leaf == dst_leaf || f.links[i].leaf == src_leaf)
          p.next_candidates.push_back(static_cast<int>(i));
    }
  } else if (!p.reached || trace.hops.size() >= 2) {
    // The spine never answered: the flow took one of the source leaf's uplinks.
    for (size_t i = 0; i < f.links.size(); ++i)
      if (f.links[i].leaf == src_leaf) p.next_candidates.push_back(static_cast<int>(i));
  }
  return p;
}

std::vector<std::vector<int>> measurement_rounds(const std::vector<PlannedFlow>& flows,
                                                 const std::vector<FlowPath>& paths, const std::vector<bool>& connected,
                                                 int max_per_round) {
  std::vector<std::vector<int>> rounds;
  std::vector<std::set<int>> nics_in, links_in;
  for (size_t i = 0; i < flows.size(); ++i) {
    if (!connected[i]) continue;
    std::vector<int> links = paths[i].links;
    links.insert(links.end(), paths[i].next_candidates.begin(), paths[i].next_candidates.end());
    size_t r = 0;
    for (; r < rounds.size(); ++r) {
      const bool nic_free = !nics_in[r].count(flows[i].src) && !nics_in[r].count(flows[i].dst);
      const bool links_free = std::none_of(links.begin(), links.end(), [&](int l) { return links_in[r].count(l) > 0; });
      const bool room = max_per_round <= 0 || static_cast<int>(rounds[r].size()) < max_per_round;
      if (nic_free && links_free && room) break;
    }
    if (r == rounds.size()) {
      rounds.emplace_back();
      nics_in.emplace_back();
      links_in.emplace_back();
    }
    rounds[r].push_back(static_cast<int>(i));
    nics_in[r].insert({flows[i].src, flows[i].dst});
    links_in[r].insert(links.begin(), links.end());
  }
  return rounds;
}

}  // namespace railbench
