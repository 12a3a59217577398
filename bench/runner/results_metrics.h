// Metrics of a results document (lib/results/metrics_text.h) for the fleet's monitoring,
// one set per command family, as each command's result kind (bench/kinds/result_kind.h)
// names it. Every series is derived from the same JSON document --json writes.
//   validate                           per link (node x rail; labels node, rail, nic, leaf):
//                                      tx/rx/bidir bandwidth, latency p50/p99, failed pairs,
//                                      link downs, verdict code; findings by severity and
//                                      kind; per rail the line rate; the SU collectives;
//                                      with pairs: every node -> peer per rail
//   sendrecv                           per size x pair x rail (labels node, peer, ranks):
//                                      bandwidth each way and latency p50/p99/p99.9
//   allreduce, allgather, reducescatter, alltoall
//                                      per size x placement: busbw, algbw, time p50/p99
#pragma once

#include <nlohmann/json.hpp>

#include "lib/results/metrics_text.h"

namespace railbench {

void validate_metrics(const nlohmann::json& doc, const MetricsOptions& options, MetricsText& out);
void sendrecv_metrics(const nlohmann::json& doc, const MetricsOptions& options, MetricsText& out);
void collective_metrics(const nlohmann::json& doc, const MetricsOptions& options, MetricsText& out);

}  // namespace railbench
