// The UCX transport's ping-pong (Transport::ping_pong): tagged messages as post_send's,
// on the rail's worker alone. Why it exists: through post/poll a round trip also pays
// for the operation pool, the completion ring and Progress's slots on both ranks, which
// over shared memory is a third of an 8 B round trip. Here, as in ucx_perftest's tag_lat,
// a request is waited on by polling the worker until it ends (requests carry no
// callback, nothing is allocated per message by railbench), the reply is sent before
// the next receive is handed to UCX, and the clock is read once per round trip, after
// the send.
#include <sched.h>

#include <fmt/format.h>

#include "transports/ucx/ucx_status.h"
#include "transports/ucx/ucx_transport_impl.h"

namespace railbench::ucx {

namespace {

// Idle polls between clock reads while spinning: about 30 us over shared memory, so a
// wait on a live peer never reads the clock (a round trip is a few hundred polls).
constexpr uint32_t kSpinCheck = 1024;
// While yielding, each idle poll is a system call: the clock is read more often.
constexpr uint32_t kYieldCheck = 32;
// A gap this long between two clock reads means the process was stopped (SIGSTOP, a
// debugger): that time is not the peer's silence, as in Progress's waits.
constexpr double kStoppedGap_s = 1.0;

}  // namespace

// Consumes `req`: it is released however the wait ends.
ucs_status_t UcxTransport::await(void* req, Rail& r, const PingPong& pp) noexcept {
  if (req == nullptr) return UCS_OK;
  if (UCS_PTR_IS_ERR(req)) return UCS_PTR_STATUS(req);
  ucp_worker_h worker = r.core->worker;
  const ucs_status_t& failed = r.failed[static_cast<size_t>(pp.peer)];
  uint32_t idle = 0;
  bool yielding = false;
  Clock::time_point since, last;
  ucs_status_t st;
  while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
    if (ucp_worker_progress(worker) != 0) {
      idle = 0;
      yielding = false;
      continue;
    }
    ++idle;
    if (yielding) sched_yield();
    if (idle % (yielding ? kYieldCheck : kSpinCheck) != 0) continue;
    const auto now = Clock::now();
    if (idle == kSpinCheck) {
      since = last = now;
    } else if (seconds_between(last, now) > kStoppedGap_s) {
      since += now - last;
    }
    last = now;
    // UCX ends a failed endpoint's sends, but not the receives tied to the worker.
    st = failed != UCS_OK ? failed : seconds_between(since, now) >= pp.timeout_s ? UCS_ERR_TIMED_OUT : UCS_OK;
    if (st != UCS_OK) {
      ucp_request_cancel(worker, req);
      wait_request(worker, req, 2.0);  // releases it
      return st;
    }
    yielding = seconds_between(since, now) > pp.spin_s;
  }
  ucp_request_free(req);
  return st;
}

// Names the failure for last_error() and ends the other request still pending, if any.
Status UcxTransport::ping_pong_failed(Rail& r, const PingPong& pp, ucs_status_t st, void* pending) noexcept {
  if (pending != nullptr && UCS_PTR_IS_PTR(pending)) {
    ucp_request_cancel(r.core->worker, pending);
    wait_request(r.core->worker, pending, 2.0);
  }
  const ucs_status_t ep_st = r.failed[static_cast<size_t>(pp.peer)];
  if (st == UCS_ERR_TIMED_OUT && ep_st == UCS_OK) {
    set_error("ping-pong with peer {} on rail {} ({}): nothing from that peer for {:g} s", pp.peer, pp.rail,
              r.core->device, pp.timeout_s);
  } else {
    const ucs_status_t why = ep_st != UCS_OK ? ep_st : st;
    set_error("ping-pong with peer {} on rail {} ({}): {} ({}){}", pp.peer, pp.rail, r.core->device,
              ucs_status_string(why), status_name(why),
              ep_st != UCS_OK ? "; the endpoint to that peer failed: the peer process died or its link went down" : "");
  }
  return Status::error;
}

Status UcxTransport::ping_pong(const PingPong& pp) noexcept {
  if (!valid_target("ping-pong", pp.peer, pp.rail)) return Status::error;
  Rail& r = *rails_[static_cast<size_t>(pp.rail)];
  ucp_ep_h ep = r.eps[static_cast<size_t>(pp.peer)];
  if (ep == nullptr) {
    set_error("ping-pong with peer {} on rail {}: not connected", pp.peer, pp.rail);
    return Status::error;
  }
  if (deferred_ != kNoOp) hand_over_receive();  // another peer's (none of this one's may wait)
  ucp_worker_h worker = r.core->worker;
  ucp_request_param_t p{};  // no callback: each request is waited on where it is posted
  void* src = pp.src.mr->at(pp.src.offset);
  void* dst = pp.dst.mr->at(pp.dst.offset);
  const auto out_tag = static_cast<ucp_tag_t>(rank_);
  const auto in_tag = static_cast<ucp_tag_t>(pp.peer);
  // The leader: send, stamp, receive the reply. The other rank: receive, reply, and only
  // then hand UCX the next receive (the next message cannot come before the reply lands).
  void* recv = pp.leader ? nullptr : ucp_tag_recv_nbx(worker, dst, pp.dst.length, in_tag, kAllBits, &p);
  for (int it = 0; it < pp.iters; ++it) {
    ucs_status_t st = UCS_OK;
    if (!pp.leader && (st = await(recv, r, pp)) != UCS_OK) return ping_pong_failed(r, pp, st, nullptr);
    void* send = ucp_tag_send_nbx(ep, src, pp.src.length, out_tag, &p);
    if (pp.leader) pp.stamps[it] = Clock::now();
    recv =
        pp.leader || it + 1 < pp.iters ? ucp_tag_recv_nbx(worker, dst, pp.dst.length, in_tag, kAllBits, &p) : nullptr;
    if ((st = await(send, r, pp)) != UCS_OK) return ping_pong_failed(r, pp, st, recv);
    if (pp.leader && (st = await(recv, r, pp)) != UCS_OK) return ping_pong_failed(r, pp, st, nullptr);
  }
  if (pp.leader) pp.stamps[pp.iters] = Clock::now();
  return Status::ok;
}

}  // namespace railbench::ucx
