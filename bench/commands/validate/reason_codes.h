// Stable reason codes for validate's findings, as DCGM's DCGM_FR_* codes are for GPU
// health: a scheduler or ticketing system keys on them, so a code never changes meaning
// once shipped (a new fault gets a new code). Every FindingKind has a code of its own
// (reason_code); where one kind covers faults an operator acts on differently, the
// producer that knows which sets a finer one on the Finding. The validate guide's
// "Reason codes" table lists exactly the codes of all_reason_codes() (a unit test reads
// it), each with what to do.
#pragma once

#include <vector>

namespace railbench {

enum class FindingKind;

namespace reason {
// Inventory: the NIC as read against the config.
inline constexpr const char* kInventoryFault = "RB-INVENTORY-FAULT";
inline constexpr const char* kInventoryNicMissing = "RB-INVENTORY-NIC-MISSING";
inline constexpr const char* kInventoryPortDown = "RB-INVENTORY-PORT-DOWN";
inline constexpr const char* kInventorySpeedWrong = "RB-INVENTORY-SPEED-WRONG";
inline constexpr const char* kInventoryMtuWrong = "RB-INVENTORY-MTU-WRONG";
inline constexpr const char* kInventoryNodeAbsent = "RB-INVENTORY-NODE-ABSENT";
// One link (a node's NIC on one rail, its cable to the leaf), from the pair tests.
inline constexpr const char* kLinkUnreachable = "RB-LINK-UNREACHABLE";
inline constexpr const char* kLinkBwLow = "RB-LINK-BW-LOW";
inline constexpr const char* kLinkBwLowTx = "RB-LINK-BW-LOW-TX";
inline constexpr const char* kLinkBwLowRx = "RB-LINK-BW-LOW-RX";
inline constexpr const char* kLinkBwLowBoth = "RB-LINK-BW-LOW-BOTH";
inline constexpr const char* kLinkBidirLow = "RB-LINK-BIDIR-LOW";
inline constexpr const char* kLinkLatHigh = "RB-LINK-LAT-HIGH";
inline constexpr const char* kLinkLatP50High = "RB-LINK-LAT-P50-HIGH";
inline constexpr const char* kLinkLatP99High = "RB-LINK-LAT-P99-HIGH";
inline constexpr const char* kLinkIntermittent = "RB-LINK-INTERMITTENT";
inline constexpr const char* kLinkFlapping = "RB-LINK-FLAPPING";
inline constexpr const char* kLinkCutOff = "RB-LINK-CUT-OFF";
inline constexpr const char* kLinkUnsteady = "RB-LINK-UNSTEADY";
inline constexpr const char* kLinkBurnInDips = "RB-LINK-BURN-IN-DIPS";
inline constexpr const char* kLinkBelowBaseline = "RB-LINK-BELOW-BASELINE";
inline constexpr const char* kRailBelowBaseline = "RB-RAIL-BELOW-BASELINE";
// validate --db: a link against what the run store remembers (fleet_history.h).
inline constexpr const char* kLinkBelowHistory = "RB-LINK-BELOW-HISTORY";
inline constexpr const char* kLinkBelowFleet = "RB-LINK-BELOW-FLEET";
// A link's NIC counters during its pair tests.
inline constexpr const char* kCountersHigh = "RB-COUNTERS-HIGH";
inline constexpr const char* kCountersErrors = "RB-COUNTERS-ERRORS";
inline constexpr const char* kCountersDrops = "RB-COUNTERS-DROPS";
inline constexpr const char* kCountersRetransmits = "RB-COUNTERS-RETRANSMITS";
// Cabling: a NIC on the wrong leaf.
inline constexpr const char* kCableMiscabled = "RB-CABLE-MISCABLED";
inline constexpr const char* kCableSwapped = "RB-CABLE-SWAPPED";
inline constexpr const char* kCableWrongLeaf = "RB-CABLE-WRONG-LEAF";
// Paths through the spine, and the SU as a whole.
inline constexpr const char* kCrossRailFault = "RB-CROSS-RAIL-FAULT";
inline constexpr const char* kCrossRailUnreachable = "RB-CROSS-RAIL-UNREACHABLE";
inline constexpr const char* kCrossRailBwLow = "RB-CROSS-RAIL-BW-LOW";
inline constexpr const char* kCollectiveFault = "RB-COLLECTIVE-FAULT";
inline constexpr const char* kCollectiveIncomplete = "RB-COLLECTIVE-INCOMPLETE";
inline constexpr const char* kCollectiveBusbwLow = "RB-COLLECTIVE-BUSBW-LOW";
inline constexpr const char* kBisectionLow = "RB-BISECTION-LOW";
inline constexpr const char* kBisectionRailLow = "RB-BISECTION-RAIL-LOW";
inline constexpr const char* kBisectionCrossRailLow = "RB-BISECTION-CROSS-RAIL-LOW";
inline constexpr const char* kBisectionIncomplete = "RB-BISECTION-INCOMPLETE";
// Tenants.
inline constexpr const char* kIsolationFault = "RB-ISOLATION-FAULT";
inline constexpr const char* kIsolationBreached = "RB-ISOLATION-BREACHED";
inline constexpr const char* kIsolationPortWrongTenant = "RB-ISOLATION-PORT-WRONG-TENANT";
inline constexpr const char* kIsolationPkeyMissing = "RB-ISOLATION-PKEY-MISSING";
inline constexpr const char* kIsolationPkeyMembership = "RB-ISOLATION-PKEY-MEMBERSHIP";
inline constexpr const char* kIsolationPkeyForeign = "RB-ISOLATION-PKEY-FOREIGN";
inline constexpr const char* kTenantInterference = "RB-TENANT-INTERFERENCE";
// A leaf-spine link inside the fabric (fabric_verdict.h).
inline constexpr const char* kFabricFault = "RB-FABRIC-FAULT";
inline constexpr const char* kFabricLinkSlow = "RB-FABRIC-LINK-SLOW";
inline constexpr const char* kFabricLinkLossy = "RB-FABRIC-LINK-LOSSY";
inline constexpr const char* kFabricLinkBlackholed = "RB-FABRIC-LINK-BLACKHOLED";
inline constexpr const char* kFabricLinkDown = "RB-FABRIC-LINK-DOWN";
inline constexpr const char* kFabricRouteWithdrawn = "RB-FABRIC-ROUTE-WITHDRAWN";
inline constexpr const char* kFabricEcmpPolarized = "RB-FABRIC-ECMP-POLARIZED";
inline constexpr const char* kFabricEcmpPortsIgnored = "RB-FABRIC-ECMP-PORTS-IGNORED";
inline constexpr const char* kFabricConfigMismatch = "RB-FABRIC-CONFIG-MISMATCH";
}  // namespace reason

// The code of a finding of kind `k` whose producer set no finer one, and of a finding
// read back from a results file written before codes existed.
const char* reason_code(FindingKind k);

// Every code validate can write, once each, with the kind whose findings carry it.
struct ReasonCode {
  const char* code;
  FindingKind kind;
};
const std::vector<ReasonCode>& all_reason_codes();

}  // namespace railbench
