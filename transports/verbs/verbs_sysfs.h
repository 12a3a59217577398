// RDMA devices as sysfs shows them, without libibverbs: `railbench info` prints these
// in builds without the verbs transport, and on hosts whose kernel has no RDMA.
#pragma once

namespace railbench::verbs {

// One line per (device, port) under /sys/class/infiniband, or one line saying there is
// none and why.
void print_sysfs_devices();

}  // namespace railbench::verbs
