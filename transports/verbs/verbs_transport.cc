// The verbs Transport's control path: opening rails, connecting peers, registering
// memory, counters. The data path is in verbs_data_path.cc.
#include <algorithm>
#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lib/core/errors.h"
#include "lib/transport/gpu.h"
#include "transports/verbs/verbs_device.h"
#include "transports/verbs/verbs_transport_impl.h"

namespace railbench::verbs {

namespace {

constexpr int kMaxChannels = 64;

}  // namespace

VerbsTransport::VerbsTransport(const PortChoice& ports, const VerbsOptions& options, int rank, int world_size)
    : RailTransport("verbs", rank, world_size), channels_(options.qps_per_peer) {
  RailConfig cfg;
  cfg.rank = rank;
  cfg.world_size = world_size;
  cfg.channels = options.qps_per_peer;
  cfg.gid_index = options.gid_index;
  std::vector<std::string> devices;
  for (size_t i = 0; i < ports.ports.size(); ++i) {
    rails_.push_back(std::make_unique<Rail>(static_cast<int>(i), ports.ports[i], cfg));
    devices.push_back(ports.ports[i].device);
  }
  provider_ = fmt::format("{}", fmt::join(devices, ","));
  if (rank == 0) {
    for (const auto& w : ports.warnings) fmt::print(stderr, "railbench: {}\n", w);
  }
  caps_.send_recv = caps_.write = caps_.read = caps_.write_with_imm = true;
  // GPU memory through dma-buf or nvidia-peermem (tried at registration, which says why not).
  caps_.device_memory = gpu::built_in();
  // Writes and a trailing write-with-imm share one rma QP only with a single channel.
  caps_.ordered_writes = channels_ == 1;
  caps_.max_msg_size = SIZE_MAX;
  caps_.inject_size = SIZE_MAX;
  caps_.cpu_driven_nic = !rails_.empty();
  for (const auto& r : rails_) {
    caps_.cpu_driven_nic = caps_.cpu_driven_nic && r->software_device();
    caps_.max_msg_size = std::min(caps_.max_msg_size, r->max_msg_size);
    caps_.inject_size = std::min<size_t>(caps_.inject_size, r->max_inline);
    // What one queue pair granted; with several per peer, posts may all land on one.
    for (int peer = 0; peer < world_size; ++peer) {
      const Channel& c = r->channel(peer, 0);
      const size_t depth = std::min<size_t>(c.queues[0].queue.depth(), c.queues[1].queue.depth());
      caps_.max_outstanding = caps_.max_outstanding == 0 ? depth : std::min(caps_.max_outstanding, depth);
      // A batch must fit the rma send queue with its flush slot; half of it, so that a
      // second batch can be posted while the first is in flight.
      const size_t batch = std::max<size_t>((c.queues[2].queue.depth() - 1) / 2, 1);
      caps_.max_batch = caps_.max_batch == 0 ? batch : std::min(caps_.max_batch, batch);
    }
  }
  constexpr size_t kMaxBatch = 128;  // one doorbell per 128 writes is already cheap
  caps_.max_batch = std::clamp<size_t>(caps_.max_batch, 1, kMaxBatch);
  batch_wr_.resize(caps_.max_batch);
  batch_sge_.resize(caps_.max_batch);
}

std::unique_ptr<MemoryRegion> VerbsTransport::register_memory(void* data, size_t length, MemoryKind kind) {
  // Pinned host memory from CUDA is host memory to the NIC; device memory goes through
  // GPUDirect RDMA (dma-buf, else nvidia-peermem), see VerbsMemoryRegion.
  if (data == nullptr || length == 0) {
    throw UsageError(fmt::format("cannot register an empty buffer ({} bytes at {})", length, data));
  }
  return std::make_unique<VerbsMemoryRegion>(data, length, kind, this, rails_);
}

std::vector<ChannelCounters> VerbsTransport::channel_counters() const {
  std::vector<ChannelCounters> out;
  for (const auto& r : rails_) {
    for (int peer = 0; peer < world_size_; ++peer) {
      for (int c = 0; c < channels_; ++c) {
        const Channel& ch = r->channel(peer, c);
        if (ch.connected) out.push_back(ch.counters);
      }
    }
  }
  return out;
}

std::vector<NetworkFlow> VerbsTransport::network_flows() const {
  std::vector<NetworkFlow> out;
  for (size_t i = 0; i < rails_.size(); ++i) {
    const Rail& r = *rails_[i];
    const std::string own_ip = ipv4_of(r.gid).value_or("");
    for (int peer = 0; peer < world_size_; ++peer) {
      for (int c = 0; c < channels_; ++c) {
        const Channel& ch = r.channel(peer, c);
        if (!ch.connected || own_ip.empty() || ch.peer_ip.empty()) continue;
        const auto flow = [&](const char* role, const ibv_qp* qp, uint32_t dest_qpn, uint16_t sport) {
          out.push_back(NetworkFlow{.peer = peer,
                                    .rail = static_cast<int>(i),
                                    .channel = c,
                                    .role = role,
                                    .qpn = qp->qp_num,
                                    .dest_qpn = dest_qpn,
                                    .src_ip = own_ip,
                                    .dst_ip = ch.peer_ip,
                                    .src_port = sport,
                                    .dst_port = kRoceV2Port});
        };
        flow("data", ch.data_qp.get(), ch.data_dest_qpn, ch.data_sport);
        flow("rma", ch.rma_qp.get(), ch.rma_dest_qpn, ch.rma_sport);
      }
    }
  }
  return out;
}

std::unique_ptr<Transport> make_transport(const VerbsOptions& options, int rank, int world_size) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    throw UsageError(fmt::format("invalid rank {} for a world of {} rank(s)", rank, world_size));
  }
  if (options.qps_per_peer < 1 || options.qps_per_peer > kMaxChannels) {
    throw UsageError(fmt::format("--qps-per-peer {} must be 1..{}", options.qps_per_peer, kMaxChannels));
  }
  if (options.gid_index < -1) {
    throw UsageError(
        fmt::format("--gid-index {} must be 0 or more (or left out to pick the RoCE v2 GID)", options.gid_index));
  }
  if (options.devices.empty() && options.num_rails < 1) {
    throw UsageError(fmt::format("--rails {} must be 1 or more", options.num_rails));
  }
  std::vector<RailSpec> named;
  for (const auto& d : options.devices) named.push_back(parse_rail_spec(d));
  const PortChoice ports = choose_ports(scan_ports(), named, options.num_rails);
  return std::make_unique<VerbsTransport>(ports, options, rank, world_size);
}

}  // namespace railbench::verbs
