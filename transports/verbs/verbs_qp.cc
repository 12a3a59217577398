#include "transports/verbs/verbs_qp.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench::verbs {

namespace {

// "RBVB": a blob of another transport or build is named as such.
constexpr uint32_t kMagic = 0x52425642;
constexpr uint16_t kVersion = 1;

// RC retry policy. timeout 14 is 4.096 us * 2^14 = 67 ms per attempt; 7 retries.
// rnr_retry 7 retries forever on "receiver not ready", so a receive posted a little
// after its send arrives only delays it; min_rnr_timer 6 makes that delay 0.08 ms
// (12, the common choice, costs 0.64 ms per late receive; rxe rounds up to a jiffy).
constexpr uint8_t kTimeout = 14;
constexpr uint8_t kRetryCount = 7;
constexpr uint8_t kRnrRetryForever = 7;
constexpr uint8_t kMinRnrTimer = 6;
constexpr uint8_t kHopLimit = 64;

class Writer {
 public:
  template <class T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out_.insert(out_.end(), p, p + sizeof(T));
  }
  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  std::vector<uint8_t> out_;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  template <class T>
  T get() {
    if (pos_ + sizeof(T) > in_.size()) {
      throw TransportError(fmt::format(
          "verbs address blob is truncated ({} bytes): do all ranks run the same railbench build?", in_.size()));
    }
    T v;
    std::memcpy(&v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  size_t left() const { return in_.size() - pos_; }

 private:
  std::span<const uint8_t> in_;
  size_t pos_ = 0;
};

void modify(ibv_qp* qp, ibv_qp_attr& attr, int mask, const char* state, const std::string& what,
            const std::string& hint) {
  if (int rc = ibv_modify_qp(qp, &attr, mask); rc != 0) {
    throw TransportError(fmt::format("ibv_modify_qp({}) {} failed: {}{}", state, what, errno_text(rc), hint));
  }
}

}  // namespace

// Host byte order: every rank of one job runs on the same architecture.
std::vector<uint8_t> encode(const RailAddress& a) {
  Writer w;
  w.put(kMagic);
  w.put(kVersion);
  w.put(uint16_t{0});
  w.put(a.rank);
  w.put(a.world_size);
  w.put(a.channels);
  w.put(a.link_layer);
  w.put(a.mtu);
  w.put(a.max_dest_rd_atomic);
  w.put(a.use_grh);
  w.put(a.lid);
  w.put(uint16_t{0});
  w.put(a.gid);
  w.put(a.flush_addr);
  w.put(a.flush_rkey);
  w.put(static_cast<uint32_t>(a.ends.size()));
  for (const auto& e : a.ends) {
    w.put(e.data_qpn);
    w.put(e.data_psn);
    w.put(e.rma_qpn);
    w.put(e.rma_psn);
  }
  return w.take();
}

RailAddress decode_rail_address(std::span<const uint8_t> blob) {
  Reader r(blob);
  if (blob.size() < sizeof(kMagic) || r.get<uint32_t>() != kMagic) {
    throw TransportError(
        fmt::format("a {}-byte address blob is not from the verbs transport: do all ranks use -t verbs?", blob.size()));
  }
  if (const auto v = r.get<uint16_t>(); v != kVersion) {
    throw TransportError(
        fmt::format("verbs address blob version {} (this build speaks {}): run one railbench build "
                    "on every rank",
                    v, kVersion));
  }
  r.get<uint16_t>();
  RailAddress a;
  a.rank = r.get<uint32_t>();
  a.world_size = r.get<uint32_t>();
  a.channels = r.get<uint32_t>();
  a.link_layer = r.get<uint8_t>();
  a.mtu = r.get<uint8_t>();
  a.max_dest_rd_atomic = r.get<uint8_t>();
  a.use_grh = r.get<uint8_t>();
  a.lid = r.get<uint16_t>();
  r.get<uint16_t>();
  a.gid = r.get<Gid>();
  a.flush_addr = r.get<uint64_t>();
  a.flush_rkey = r.get<uint32_t>();
  const auto n = r.get<uint32_t>();
  if (n > r.left() / 16) {
    throw TransportError(
        fmt::format("verbs address blob claims {} queue pairs but holds {} bytes for them", n, r.left()));
  }
  a.ends.resize(n);
  for (auto& e : a.ends) {
    e.data_qpn = r.get<uint32_t>();
    e.data_psn = r.get<uint32_t>();
    e.rma_qpn = r.get<uint32_t>();
    e.rma_psn = r.get<uint32_t>();
  }
  return a;
}

VerbsPtr<ibv_qp> create_rc_qp(const QpRequest& req, ibv_qp_cap& granted, const std::string& what) {
  // Devices cap inline data differently (rxe and mlx5 take a few hundred bytes, some
  // none); step down instead of failing.
  for (uint32_t inline_bytes : {req.inline_bytes, 64u, 0u}) {
    if (inline_bytes > req.inline_bytes) continue;
    ibv_qp_init_attr attr{};
    attr.send_cq = req.cq;
    attr.recv_cq = req.cq;
    attr.srq = req.srq;
    attr.qp_type = IBV_QPT_RC;
    attr.sq_sig_all = 0;  // selective signaling: see verbs_queue.h
    attr.cap.max_send_wr = req.send_depth;
    attr.cap.max_recv_wr = req.srq != nullptr ? 0 : req.recv_depth;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = req.srq != nullptr ? 0 : 1;
    attr.cap.max_inline_data = inline_bytes;
    ibv_qp* qp = ibv_create_qp(req.pd, &attr);
    if (qp != nullptr) {
      granted = attr.cap;
      return VerbsPtr<ibv_qp>(qp);
    }
    const int err = errno;
    if (err != EINVAL || inline_bytes == 0) {
      throw TransportError(fmt::format(
          "ibv_create_qp(RC, {} send / {} receive WRs) {} failed: {}{}", req.send_depth,
          req.srq != nullptr ? 0 : req.recv_depth, what, errno_text(err),
          err == ENOMEM ? ": out of queue pairs or locked memory (ulimit -l); fewer ranks or --qps-per-peer help"
                        : ""));
    }
  }
  throw TransportError(fmt::format("ibv_create_qp {} failed", what));  // not reached
}

void qp_to_init(ibv_qp* qp, int port, const std::string& what) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = static_cast<uint8_t>(port);
  attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  modify(qp, attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "INIT", what, "");
}

void qp_to_rtr(ibv_qp* qp, const PathToPeer& path, const std::string& what, const std::string& hint) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = static_cast<ibv_mtu>(path.path_mtu);
  attr.dest_qp_num = path.dest_qpn;
  attr.rq_psn = path.rq_psn;
  attr.max_dest_rd_atomic = static_cast<uint8_t>(path.max_dest_rd_atomic);
  attr.min_rnr_timer = kMinRnrTimer;
  attr.ah_attr.port_num = static_cast<uint8_t>(path.port);
  attr.ah_attr.dlid = path.dlid;
  attr.ah_attr.sl = 0;
  attr.ah_attr.src_path_bits = 0;
  if (path.use_grh) {
    attr.ah_attr.is_global = 1;
    std::memcpy(attr.ah_attr.grh.dgid.raw, path.dgid.data(), path.dgid.size());
    attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(path.sgid_index);
    attr.ah_attr.grh.hop_limit = kHopLimit;
    attr.ah_attr.grh.traffic_class = 0;
    attr.ah_attr.grh.flow_label = path.flow_label;
  }
  modify(qp, attr,
         IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
             IBV_QP_MIN_RNR_TIMER,
         "RTR", what, hint);
}

void qp_to_rts(ibv_qp* qp, uint32_t sq_psn, int max_rd_atomic, const std::string& what) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = kTimeout;
  attr.retry_cnt = kRetryCount;
  attr.rnr_retry = kRnrRetryForever;
  attr.sq_psn = sq_psn;
  attr.max_rd_atomic = static_cast<uint8_t>(max_rd_atomic);
  modify(qp, attr,
         IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
         "RTS", what, "");
}

}  // namespace railbench::verbs
