// What a set of flows on fixed paths can carry at best: the fluid model that ECMP
// studies use. Each flow crosses some resources (a NIC's send or receive side, one
// direction of a leaf-spine link), each resource has a capacity, and at every moment the
// flows share them max-min fairly (progressive filling: every flow's rate grows alike
// until a resource is full; the flows through it stop growing, the others go on). When
// a flow finishes, the rest share again. The time the last flow finishes is what the
// paths allow; set beside the time a perfect spread would take (every resource group
// pooled, e.g. a leaf's uplinks as one), it says how much of the fabric the ECMP hash
// left unused, whatever the hosts that run the flows could carry.
#pragma once

#include <vector>

namespace railbench {

struct FluidFlow {
  std::vector<int> resources;  // indexes into the capacities, each at most once
  double bytes = 0;
};

// Seconds until the last flow finishes under max-min fair sharing (capacities in bytes
// per second). A flow that crosses no resource, or one of capacity 0, is left out (it
// would never finish); 0 when no flow is left.
double fluid_completion_s(const std::vector<FluidFlow>& flows, const std::vector<double>& capacity_bytes_per_s);

// Each flow's max-min fair rate (bytes per second) at the start, all flows at once.
std::vector<double> max_min_rates(const std::vector<FluidFlow>& flows, const std::vector<double>& capacity_bytes_per_s);

}  // namespace railbench
