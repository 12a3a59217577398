// validate --db: each link judged against what the run store remembers, beside the
// run's own rules. Two references, each over the newest validate runs of the same SU
// config that completed:
//   history: the link's own bandwidth in those runs (a link that always ran at its
//            rail's median and today runs 20% under it changed, even where 20% is
//            inside the within-run threshold);
//   fleet:   every link's bandwidth in those runs (a link that sits well under where
//            the fleet's links of its kind sit, run after run).
// Bandwidth is a link's fraction of its rail's median in the same run (what the store
// keeps as tx/rail and rx/rail), so a busier host or a slower day that moves every link
// alike is no finding. A link is below a reference when it is more than 3.5 robust
// z-scores (median and scaled MAD; Iglewicz and Hoaglin's outlier rule) and more than
// thresholds.history_bw_below under it. A link's own noise is never taken below the
// median of every link's own noise: 20 runs or fewer can show one link a spread smaller
// than the SU's links have. Such a link is a WARN (it still passes the run's own rules), its
// reason naming the rule that fired and the reference's figures; one that already has
// a finding gets the comparison added to it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/commands/validate/su_config.h"
#include "bench/commands/validate/verdict.h"

namespace railbench {

struct Reference {
  int values = 0;     // how many figures it is drawn from
  double median = 0;  // of the fraction of rail median
  double noise = 0;   // scaled MAD
};

struct FleetHistory {
  std::string store;  // as messages name it
  std::string su;
  int runs = 0;  // the validate runs of this SU it was drawn from
  // Per NIC ("node03:rail1") and direction ("tx", "rx"): its own history.
  std::map<std::string, std::map<std::string, Reference>> own;
  std::map<std::string, Reference> fleet;      // per direction: every NIC's figures
  std::map<std::string, double> pooled_noise;  // per direction: the median of the NICs' own noise
};

inline constexpr int kHistoryRuns = 20;          // the newest runs a reference is drawn from
inline constexpr int kHistoryMinRuns = 5;        // fewer: no judgement (the noise is not known)
inline constexpr double kHistoryZ = 3.5;         // robust z-score beyond which a link is below
inline constexpr double kHistoryMinDrop = 0.05;  // and never for less than 5% of its rail's median

// Reads the references for `su` from the store `store` (store_path's answer). Throws
// IoError / UsageError as the store does (none there, unreadable, newer schema).
FleetHistory load_fleet_history(const std::string& store, const std::string& su);
nlohmann::json to_json(const FleetHistory& h);
FleetHistory fleet_history_from_json(const nlohmann::json& j);

// Adds the findings (kind history) for every measured link below its own history or the
// fleet's; returns how many links had a reference to be judged against.
int judge_against_history(const SuConfig& config, const std::vector<std::string>& node_names,
                          const std::vector<std::vector<LinkStats>>& stats, const FleetHistory& history,
                          std::vector<Finding>& findings);

}  // namespace railbench
