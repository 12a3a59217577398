#include "bench/commands/validate/pair_runner.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "lib/core/clock.h"
#include "lib/core/errors.h"
#include "lib/core/stats.h"

namespace railbench {

using nlohmann::json;

std::optional<json> PairRunner::run(PairResult key, int peer, bool leader) {
  const SuTests& t = c_.tests;
  PairResult& r = key;
  const int a = leader ? ctx_.rank() : peer;
  const int b = leader ? peer : ctx_.rank();
  bool skip = peer < 0;
  if (!skip && broken_.count({std::min(a, b), std::max(a, b)})) {
    r.ok = false;
    r.error = "not run: this pair already failed";
    skip = true;
  }
  ctx_.counters_begin();  // this rank's rail, around the whole test
  auto guarded = [&](auto&& step) {
    if (skip || !r.ok) return;
    try {
      step();
    } catch (const Error& e) {
      r.ok = false;
      r.error = e.what();
      ctx_.progress().abandon_peer(peer);
    }
  };
  guarded([&] {
    double longest_rtt_s = 0;
    auto lat = test_.latency(peer, 0, t.lat_bytes, std::min(100, t.lat_iters), t.lat_iters, leader, &longest_rtt_s);
    r.test_s = longest_rtt_s;  // the streams' seconds are added below
    if (leader) {
      const Summary s = summarize(lat);
      r.lat_p50 = s.p50, r.lat_p99 = s.p99, r.lat_p999 = s.p999;
    }
  });
  ctx_.bootstrap().barrier();
  guarded([&] {
    const Clock::time_point start = Clock::now();
    const uint32_t seed = static_cast<uint32_t>(key.node_a * 131 + key.node_b);
    auto ab = test_.stream(peer, 0, t.bw_bytes, t.bw_window, 1, t.bw_iters, a, seed, nullptr);
    if (!ab.empty()) r.bw_ab = summarize(ab).p50;
    auto ba = test_.stream(peer, 0, t.bw_bytes, t.bw_window, 1, t.bw_iters, b, seed + 1, nullptr);
    if (!ba.empty()) r.bw_ba = summarize(ba).p50;
    auto bi = test_.bidirectional(peer, 0, t.bw_bytes, t.bw_window, 1, t.bw_iters);
    if (leader) r.bidir = summarize(bi).p50;
    // A link that stalls now and then shows in its slowest window, not in the median:
    // keep the worst stream's spread (each side has the streams it timed).
    r.bw_spread = std::max({window_spread(ab), window_spread(ba), leader ? window_spread(bi) : 0.0});
    r.test_s += seconds_between(start, Clock::now());
  });
  if (peer < 0) return std::nullopt;
  // One rail per rank in validate: its entry, {} when nothing moved, null when off.
  const json counters = ctx_.counters_end_local();
  if (!counters.is_null()) (leader ? r.counters_a : r.counters_b) = counters.empty() ? json::object() : counters[0];
  return side_json(r, leader, peer);
}

std::vector<PairResult> PairRunner::exchange(const std::optional<json>& mine) {
  std::map<std::tuple<PairPhase, int, int, int, int>, PairResult> merged;
  for (const auto& text : ctx_.bootstrap().all_gather_strings(mine ? mine->dump() : "null")) {
    const json j = json::parse(text);
    if (j.is_null()) continue;
    PairResult side = j.at("result").get<PairResult>();
    auto [it, fresh] = merged.try_emplace({side.phase, side.node_a, side.node_b, side.rail_a, side.rail_b}, side);
    PairResult& m = it->second;
    if (!fresh) {
      if (j.at("leader")) {
        m.lat_p50 = side.lat_p50, m.lat_p99 = side.lat_p99, m.lat_p999 = side.lat_p999;
        m.bw_ab = side.bw_ab, m.bidir = side.bidir;
      } else {
        m.bw_ba = side.bw_ba;
      }
      m.bw_spread = std::max(m.bw_spread, side.bw_spread);
      (j.at("leader") ? m.counters_a : m.counters_b) = j.at("leader") ? side.counters_a : side.counters_b;
      m.test_s = std::max(m.test_s, side.test_s);
      if (!side.ok && m.ok) m.ok = false, m.error = side.error;
    }
    if (!m.ok)
      broken_.insert({std::min(j.at("rank_a").get<int>(), j.at("rank_b").get<int>()),
                      std::max(j.at("rank_a").get<int>(), j.at("rank_b").get<int>())});
  }
  std::vector<PairResult> out;
  for (auto& [k, v] : merged) out.push_back(v);
  return out;
}

json PairRunner::side_json(const PairResult& r, bool leader, int peer) const {
  return json{{"result", r}, {"leader", leader}, {"rank_a", ctx_.rank()}, {"rank_b", peer}};
}

}  // namespace railbench
