#include "bench/commands/validate/reason_codes.h"

#include "bench/commands/validate/verdict.h"

namespace railbench {

const char* reason_code(FindingKind k) {
  switch (k) {
    case FindingKind::inventory: return reason::kInventoryFault;
    case FindingKind::unreachable: return reason::kLinkUnreachable;
    case FindingKind::bandwidth: return reason::kLinkBwLow;
    case FindingKind::bidirectional: return reason::kLinkBidirLow;
    case FindingKind::latency: return reason::kLinkLatHigh;
    case FindingKind::cross_rail: return reason::kCrossRailFault;
    case FindingKind::collective: return reason::kCollectiveFault;
    case FindingKind::intermittent: return reason::kLinkIntermittent;
    case FindingKind::baseline: return reason::kLinkBelowBaseline;
    case FindingKind::counters: return reason::kCountersHigh;
    case FindingKind::cabling: return reason::kCableMiscabled;
    case FindingKind::isolation: return reason::kIsolationFault;
    case FindingKind::interference: return reason::kTenantInterference;
    case FindingKind::bisection: return reason::kBisectionLow;
    case FindingKind::fabric: return reason::kFabricFault;
    case FindingKind::history: return reason::kLinkBelowHistory;
  }
  return reason::kInventoryFault;
}

const std::vector<ReasonCode>& all_reason_codes() {
  using K = FindingKind;
  namespace r = reason;
  static const std::vector<ReasonCode> codes{
      {r::kInventoryFault, K::inventory},
      {r::kInventoryNicMissing, K::inventory},
      {r::kInventoryPortDown, K::inventory},
      {r::kInventorySpeedWrong, K::inventory},
      {r::kInventoryMtuWrong, K::inventory},
      {r::kInventoryNodeAbsent, K::inventory},
      {r::kLinkUnreachable, K::unreachable},
      {r::kLinkBwLow, K::bandwidth},
      {r::kLinkBwLowTx, K::bandwidth},
      {r::kLinkBwLowRx, K::bandwidth},
      {r::kLinkBwLowBoth, K::bandwidth},
      {r::kLinkBidirLow, K::bidirectional},
      {r::kLinkLatHigh, K::latency},
      {r::kLinkLatP50High, K::latency},
      {r::kLinkLatP99High, K::latency},
      {r::kLinkIntermittent, K::intermittent},
      {r::kLinkFlapping, K::intermittent},
      {r::kLinkCutOff, K::intermittent},
      {r::kLinkUnsteady, K::intermittent},
      {r::kLinkBurnInDips, K::intermittent},
      {r::kLinkBelowBaseline, K::baseline},
      {r::kRailBelowBaseline, K::baseline},
      {r::kLinkBelowHistory, K::history},
      {r::kLinkBelowFleet, K::history},
      {r::kCountersHigh, K::counters},
      {r::kCountersErrors, K::counters},
      {r::kCountersDrops, K::counters},
      {r::kCountersRetransmits, K::counters},
      {r::kCableMiscabled, K::cabling},
      {r::kCableSwapped, K::cabling},
      {r::kCableWrongLeaf, K::cabling},
      {r::kCrossRailFault, K::cross_rail},
      {r::kCrossRailUnreachable, K::cross_rail},
      {r::kCrossRailBwLow, K::cross_rail},
      {r::kCollectiveFault, K::collective},
      {r::kCollectiveIncomplete, K::collective},
      {r::kCollectiveBusbwLow, K::collective},
      {r::kBisectionLow, K::bisection},
      {r::kBisectionRailLow, K::bisection},
      {r::kBisectionCrossRailLow, K::bisection},
      {r::kBisectionIncomplete, K::bisection},
      {r::kIsolationFault, K::isolation},
      {r::kIsolationBreached, K::isolation},
      {r::kIsolationPortWrongTenant, K::isolation},
      {r::kIsolationPkeyMissing, K::isolation},
      {r::kIsolationPkeyMembership, K::isolation},
      {r::kIsolationPkeyForeign, K::isolation},
      {r::kTenantInterference, K::interference},
      {r::kFabricFault, K::fabric},
      {r::kFabricLinkSlow, K::fabric},
      {r::kFabricLinkLossy, K::fabric},
      {r::kFabricLinkBlackholed, K::fabric},
      {r::kFabricLinkDown, K::fabric},
      {r::kFabricRouteWithdrawn, K::fabric},
      {r::kFabricEcmpPolarized, K::fabric},
      {r::kFabricEcmpPortsIgnored, K::fabric},
      {r::kFabricConfigMismatch, K::fabric},
  };
  return codes;
}

}  // namespace railbench
