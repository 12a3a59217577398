#include "bench/runner/records.h"

#include "lib/results/results.h"

namespace railbench {

using nlohmann::json;

namespace {

json side_json(const CollectiveSide& s) {
  return json{{"time_us", s.time_us},
              {"algbw_gbps", s.algbw},
              {"busbw_gbps", s.busbw},
              {"wrong", s.wrong},
              {"iteration_us", to_json(s.iter_us)}};
}

CollectiveSide side_from_json(const json& j) {
  CollectiveSide s;
  s.time_us = j.at("time_us").get<double>();
  s.algbw = j.at("algbw_gbps").get<double>();
  s.busbw = j.at("busbw_gbps").get<double>();
  s.wrong = j.at("wrong").get<uint64_t>();
  s.iter_us = summary_from_json(j.at("iteration_us"));
  return s;
}

}  // namespace

json to_json(const CollectiveRecord& r) {
  return json{{"bytes", r.bytes},
              {"count", r.count},
              {"type", r.type},
              {"redop", r.redop},
              {"root", r.root},
              {"algo", r.algo},
              {"out_of_place", side_json(r.out_of_place)},
              {"in_place", side_json(r.in_place)}};
}

CollectiveRecord collective_from_json(const json& j) {
  CollectiveRecord r;
  r.bytes = j.at("bytes").get<uint64_t>();
  r.count = j.at("count").get<uint64_t>();
  r.type = j.at("type").get<std::string>();
  r.redop = j.at("redop").get<std::string>();
  r.root = j.at("root").get<int>();
  r.algo = j.at("algo").get<std::string>();
  r.out_of_place = side_from_json(j.at("out_of_place"));
  r.in_place = side_from_json(j.at("in_place"));
  return r;
}

json to_json(const SendRecvRecord& r) {
  json pairs = json::array();
  for (const auto& p : r.pairs) {
    pairs.push_back(json{{"a", p.a},
                         {"b", p.b},
                         {"rail", p.rail},
                         {"latency_us", to_json(p.latency_us)},
                         {"bw_ab_gbps", to_json(p.bw_ab)},
                         {"bw_ba_gbps", to_json(p.bw_ba)},
                         {"bw_bidir_gbps", to_json(p.bw_bidir)},
                         {"wrong", p.wrong}});
  }
  return json{{"bytes", r.bytes}, {"op", r.op}, {"pairs", std::move(pairs)}};
}

SendRecvRecord sendrecv_from_json(const json& j) {
  SendRecvRecord r;
  r.bytes = j.at("bytes").get<uint64_t>();
  r.op = j.at("op").get<std::string>();
  for (const auto& pj : j.at("pairs")) {
    PairRecord p;
    p.a = pj.at("a").get<int>();
    p.b = pj.at("b").get<int>();
    p.rail = pj.at("rail").get<int>();
    p.latency_us = summary_from_json(pj.at("latency_us"));
    p.bw_ab = summary_from_json(pj.at("bw_ab_gbps"));
    p.bw_ba = summary_from_json(pj.at("bw_ba_gbps"));
    p.bw_bidir = summary_from_json(pj.at("bw_bidir_gbps"));
    p.wrong = pj.at("wrong").get<uint64_t>();
    r.pairs.push_back(p);
  }
  return r;
}

}  // namespace railbench
