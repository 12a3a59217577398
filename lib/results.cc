#include "lib/results.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>

#include <fmt/format.h>

#include "lib/errors.h"
#include "lib/version.h"

namespace railbench {

using nlohmann::json;

json to_json(const Summary& s) {
  return json{{"count", s.count}, {"min", s.min}, {"max", s.max}, {"mean", s.mean}, {"stdev", s.stdev},
              {"p50", s.p50},     {"p90", s.p90}, {"p99", s.p99}, {"p99_9", s.p999}};
}

Summary summary_from_json(const json& j) {
  Summary s;
  s.count = j.at("count").get<size_t>();
  s.min = j.at("min").get<double>();
  s.max = j.at("max").get<double>();
  s.mean = j.at("mean").get<double>();
  s.stdev = j.at("stdev").get<double>();
  s.p50 = j.at("p50").get<double>();
  s.p90 = j.at("p90").get<double>();
  s.p99 = j.at("p99").get<double>();
  s.p999 = j.at("p99_9").get<double>();
  return s;
}

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

std::string now_iso8601() {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
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

void validate_result_document(const json& doc) {
  auto require = [&](const char* field, json::value_t type) {
    if (!doc.contains(field)) throw IoError(fmt::format("results document has no '{}' field", field));
    const auto& v = doc.at(field);
    bool ok = v.type() == type || (type == json::value_t::number_integer && v.is_number_integer());
    if (!ok) throw IoError(fmt::format("results field '{}' has type {}, expected another", field, v.type_name()));
  };
  require("schema", json::value_t::string);
  if (doc.at("schema") != kResultSchema) throw IoError(fmt::format("results 'schema' is not {}", kResultSchema));
  require("schema_version", json::value_t::number_integer);
  if (doc.at("schema_version").get<int>() > kResultSchemaVersion) {
    throw IoError(fmt::format("results schema_version {} is newer than this railbench understands ({}): upgrade",
                              doc.at("schema_version").get<int>(), kResultSchemaVersion));
  }
  require("railbench_version", json::value_t::string);
  require("command", json::value_t::string);
  require("config", json::value_t::object);
  require("world", json::value_t::object);
  require("transport", json::value_t::object);
  require("results", json::value_t::array);
  require("status", json::value_t::string);
}

ResultsFile::ResultsFile(std::string path, json header) : path_(std::move(path)) {
  doc_ = json{{"schema", kResultSchema},
              {"schema_version", kResultSchemaVersion},
              {"railbench_version", railbench_version()},
              {"railbench_commit", railbench_git_commit()},
              {"started_at", now_iso8601()}};
  for (auto& [k, v] : header.items()) doc_[k] = v;
  doc_["results"] = json::array();
  doc_["status"] = "running";
  write();
}

void ResultsFile::add(json size_result) {
  doc_["results"].push_back(std::move(size_result));
  write();
}

void ResultsFile::set(const std::string& key, json value) {
  doc_[key] = std::move(value);
  write();
}

void ResultsFile::finish(bool complete, const std::string& error) {
  doc_["status"] = complete ? "complete" : "failed";
  doc_["finished_at"] = now_iso8601();
  if (!error.empty()) doc_["error"] = error;
  write();
}

void ResultsFile::write() const {
  if (path_.empty()) return;
  // Write beside the target and rename: a reader never sees half a file, and a crash
  // mid-write leaves the previous complete version.
  const std::string tmp = path_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out)
      throw IoError(fmt::format("cannot write results to '{}': check the directory exists and is writable", tmp));
    out << doc_.dump(2) << '\n';
    if (!out.flush()) throw IoError(fmt::format("writing results to '{}' failed (disk full?)", tmp));
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
    throw IoError(fmt::format("cannot rename '{}' to '{}': check permissions", tmp, path_));
  }
}

}  // namespace railbench
