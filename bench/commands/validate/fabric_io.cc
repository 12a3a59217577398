#include "bench/commands/validate/fabric_io.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "lib/observe/flow_socket.h"

namespace railbench {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// Writes all of `bytes` by the deadline (the flow's id header).
bool write_all(int fd, const void* data, size_t bytes, Clock::time_point deadline) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    pollfd pfd{fd, POLLOUT, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0 || ::poll(&pfd, 1, static_cast<int>(left)) <= 0) return false;
    const ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

bool read_all(int fd, void* data, size_t bytes, Clock::time_point deadline) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    pollfd pfd{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0 || ::poll(&pfd, 1, static_cast<int>(left)) <= 0) return false;
    const ssize_t n = ::recv(fd, p, bytes, 0);
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

json trace_json(int id, const FlowTrace& t) {
  json hops = json::array();
  for (const auto& h : t.hops) hops.push_back(json{h.ttl, h.address, h.rtt_us});
  return json{{"id", id}, {"hops", hops}, {"reached", t.reached}, {"error", t.error}};
}

FlowTrace trace_from_json(const json& j) {
  FlowTrace t;
  for (const auto& h : j.at("hops"))
    t.hops.push_back({h.at(0).get<int>(), h.at(1).get<std::string>(), h.at(2).get<double>()});
  t.reached = j.at("reached").get<bool>();
  t.error = j.at("error").get<std::string>();
  return t;
}

FlowSockets::~FlowSockets() {
  for (const auto* side : {&out, &in}) {
    for (const auto& [id, fd] : *side) {
      if (abort) {
        flow_socket::abort_close(fd);
      } else {
        ::close(fd);
      }
    }
  }
}

// Several at once: a cut path waits out its silent hops, and one at a time they would add up.
json trace_mine(const std::vector<PlannedFlow>& batch, const std::vector<FabricNic>& nics, int me, const FabricTests& t,
                ProbePacer& pacer, FlowSockets& sockets) {
  constexpr size_t kTracers = 8;
  TraceOptions options;
  options.max_ttl = t.max_ttl;
  options.max_silent = 2;
  options.hop_timeout = std::chrono::milliseconds(250);
  std::vector<const PlannedFlow*> mine;
  for (const auto& flow : batch)
    if (nics[flow.src].rank == me) mine.push_back(&flow);
  std::vector<json> traces(mine.size());
  std::vector<int> fds(mine.size(), -1);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < mine.size(); i = next++) {
      const PlannedFlow& flow = *mine[i];
      const FlowTuple tuple{nics[flow.src].ip, nics[flow.dst].ip, flow.src_port, nics[flow.dst].port, FlowProto::tcp};
      int fd = -1;
      FlowTrace trace = trace_and_connect(tuple, options, pacer, fd);
      if (fd >= 0) {
        const uint32_t id = static_cast<uint32_t>(flow.id);
        if (!write_all(fd, &id, sizeof id, Clock::now() + std::chrono::seconds(2))) {
          ::close(fd);
          fd = -1;
          trace.reached = false;
          trace.error = "connected, but the flow's first bytes did not go through";
        }
      }
      fds[i] = fd;
      traces[i] = trace_json(flow.id, trace);
    }
  };
  {
    std::vector<std::jthread> tracers;
    for (size_t k = 0; k < std::min(kTracers, mine.size()); ++k) tracers.emplace_back(work);
  }
  json out = json::array();
  for (size_t i = 0; i < mine.size(); ++i) {
    if (fds[i] >= 0) sockets.out[mine[i]->id] = fds[i];
    out.push_back(std::move(traces[i]));
  }
  return out;
}

json probe_spines_mine(const std::vector<PlannedFlow>& batch, const std::vector<FabricNic>& nics, int me,
                       ProbePacer& pacer) {
  constexpr size_t kProbers = 8;
  TraceOptions options;
  options.hop_timeout = std::chrono::milliseconds(250);
  std::vector<const PlannedFlow*> mine;
  for (const auto& flow : batch)
    if (nics[flow.src].rank == me) mine.push_back(&flow);
  std::vector<std::string> answers(mine.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < mine.size(); i = next++) {
      const PlannedFlow& flow = *mine[i];
      const FlowTuple tuple{nics[flow.src].ip, nics[flow.dst].ip, flow.src_port, nics[flow.dst].port, FlowProto::tcp};
      answers[i] = switch_at_ttl(tuple, 2, options, pacer);
    }
  };
  {
    std::vector<std::jthread> probers;
    for (size_t k = 0; k < std::min(kProbers, mine.size()); ++k) probers.emplace_back(work);
  }
  json out = json::array();
  for (size_t i = 0; i < mine.size(); ++i) out.push_back(json{{"id", mine[i]->id}, {"address", answers[i]}});
  return out;
}

void accept_ids(FlowListener& listener, const std::set<int>& expected, Clock::time_point deadline,
                FlowSockets& sockets) {
  size_t got = 0;
  for (int id : expected) got += sockets.in.count(id);
  while (got < expected.size()) {
    const int fd = listener.accept_until(deadline);
    if (fd < 0) break;
    uint32_t id = 0;
    if (!read_all(fd, &id, sizeof id, deadline) || !expected.count(static_cast<int>(id)) ||
        sockets.in.count(static_cast<int>(id))) {
      ::close(fd);
      continue;
    }
    sockets.in[static_cast<int>(id)] = fd;
    ++got;
  }
}

}  // namespace railbench
