// Internal to transports/verbs: reliable-connected queue pairs (creation and the
// RESET -> INIT -> RTR -> RTS walk) and the address blob peers exchange to connect them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "transports/verbs/verbs_common.h"
#include "transports/verbs/verbs_select.h"

namespace railbench::verbs {

// What one rank tells every peer about one rail. `ends` holds, for each peer p and
// channel c, the two QPs this rank opened towards p (index p * channels + c): the
// peer takes the entries at its own rank.
struct ChannelEnd {
  uint32_t data_qpn = 0;  // sends and receives
  uint32_t data_psn = 0;
  uint32_t rma_qpn = 0;  // writes, reads, write-with-imm
  uint32_t rma_psn = 0;
  bool operator==(const ChannelEnd&) const = default;
};

struct RailAddress {
  uint32_t rank = 0;
  uint32_t world_size = 0;
  uint32_t channels = 0;
  uint8_t link_layer = 0;  // IBV_LINK_LAYER_*
  uint8_t mtu = 0;         // ibv_mtu code of the port's active MTU
  uint8_t max_dest_rd_atomic = 0;
  uint8_t use_grh = 0;
  uint16_t lid = 0;
  Gid gid{};
  // A small region of the sender's, target of our zero-length flush writes.
  uint64_t flush_addr = 0;
  uint32_t flush_rkey = 0;
  std::vector<ChannelEnd> ends;
  bool operator==(const RailAddress&) const = default;
};

std::vector<uint8_t> encode(const RailAddress& address);
// Throws TransportError for a blob that is truncated or not from a verbs transport.
RailAddress decode_rail_address(std::span<const uint8_t> blob);

// Queue sizes wanted for one QP; the grant is read back from ibv_qp_cap.
struct QpRequest {
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;    // send and receive completions
  ibv_srq* srq = nullptr;  // null: the QP has its own receive queue
  uint32_t send_depth = 0;
  uint32_t recv_depth = 0;
  uint32_t inline_bytes = 0;  // asked for; smaller grants are accepted
};

// Creates an RC QP, stepping the inline size down when the device refuses it.
// `what` names the QP in errors ("to peer 3 on rail rxe0:1").
VerbsPtr<ibv_qp> create_rc_qp(const QpRequest& request, ibv_qp_cap& granted, const std::string& what);

// RESET -> INIT: port, pkey 0, local write plus remote read and write.
void qp_to_init(ibv_qp* qp, int port, const std::string& what);

// Everything INIT -> RTR needs about both ends.
struct PathToPeer {
  int port = 1;
  int sgid_index = 0;
  bool use_grh = false;
  Gid dgid{};
  uint16_t dlid = 0;
  int path_mtu = 0;  // ibv_mtu code: the smaller of both ports' active MTUs
  uint32_t dest_qpn = 0;
  uint32_t rq_psn = 0;
  int max_dest_rd_atomic = 1;
  uint32_t flow_label = 0;  // GRH flow label (RoCE v2: picks the UDP source port); 0: the driver's
};
// `hint` ends the error message (e.g. the GID table for RoCE).
void qp_to_rtr(ibv_qp* qp, const PathToPeer& path, const std::string& what, const std::string& hint);
void qp_to_rts(ibv_qp* qp, uint32_t sq_psn, int max_rd_atomic, const std::string& what);

}  // namespace railbench::verbs
