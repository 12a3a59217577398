// A test-only door to bench/commands/validate/fabric/flow_probe for
// tests/netns/fabric_probe.sh, which runs it inside network namespaces and checks it
// against Debian's traceroute. Each command prints one JSON object on stdout:
//   trace tcp|udp SRC DST SPORT[,SPORT...] DPORT [--max-ttl N] [--timeout-ms N] [--tries N] [--rate P]
//       every source port traced at once (a thread each, one shared ProbePacer):
//       {"seconds", "traces": [{"src_port", "reached", "error", "hops": [{"ttl", "address", "rtt_us"}]}]}
//   listen IP SECONDS       {"port"} at once, then takes connections until SECONDS pass, resets them
//   receive IP BYTES SECONDS  {"port"} at once, then one flow's figures: {"flow": {...}}
//   send SRC DST SPORT DPORT BYTES SECONDS   the flow traced, connected and sent: {"trace", "flow"}
// A setup error (FlowListener's) prints "error: <what>" on stderr and exits 2.
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/commands/validate/fabric/flow_probe.h"
#include "lib/core/errors.h"

namespace {

using railbench::FlowFigures;
using railbench::FlowTrace;
using railbench::FlowTuple;
using Clock = std::chrono::steady_clock;

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "fabric_probe_driver: " << why
            << "\nusage: trace tcp|udp SRC DST SPORT[,SPORT...] DPORT [--max-ttl N] [--timeout-ms N] [--tries N] "
               "[--rate P] | listen IP SECONDS | receive IP BYTES SECONDS | send SRC DST SPORT DPORT BYTES SECONDS\n";
  std::exit(2);
}

long number(const std::string& text) {
  try {
    size_t used = 0;
    const long v = std::stol(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  usage(fmt::format("'{}' is not a number", text));
}

Clock::time_point after_seconds(const std::string& text) {
  return Clock::now() + std::chrono::seconds(number(text));
}

// No TIME_WAIT left behind on the flow's 4-tuple: a later trace of the same ports must bind it.
void reset_close(int fd) {
  const linger off{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &off, sizeof off);
  ::close(fd);
}

nlohmann::json to_json(const FlowTrace& t) {
  nlohmann::json hops = nlohmann::json::array();
  for (const auto& h : t.hops) hops.push_back({{"ttl", h.ttl}, {"address", h.address}, {"rtt_us", h.rtt_us}});
  return {{"reached", t.reached}, {"error", t.error}, {"hops", hops}};
}

nlohmann::json to_json(const FlowFigures& f) {
  return {{"completed", f.completed},     {"bytes", f.bytes},   {"seconds", f.seconds}, {"gbps", f.gbps},
          {"retransmits", f.retransmits}, {"rtt_us", f.rtt_us}, {"error", f.error}};
}

int trace(const std::vector<std::string>& a) {
  if (a.size() < 6 || (a[1] != "tcp" && a[1] != "udp")) usage("trace needs tcp|udp SRC DST SPORT[,SPORT...] DPORT");
  railbench::TraceOptions options;
  double rate = 200;
  for (size_t i = 6; i < a.size(); i += 2) {
    if (i + 1 >= a.size()) usage(fmt::format("{} needs a value", a[i]));
    const long v = number(a[i + 1]);
    if (a[i] == "--max-ttl")
      options.max_ttl = static_cast<int>(v);
    else if (a[i] == "--timeout-ms")
      options.hop_timeout = std::chrono::milliseconds(v);
    else if (a[i] == "--tries")
      options.tries = static_cast<int>(v);
    else if (a[i] == "--rate")
      rate = static_cast<double>(v);
    else
      usage(fmt::format("unknown option '{}'", a[i]));
  }
  std::vector<uint16_t> ports;
  for (size_t at = 0; at <= a[4].size();) {
    const size_t comma = std::min(a[4].find(',', at), a[4].size());
    ports.push_back(static_cast<uint16_t>(number(a[4].substr(at, comma - at))));
    at = comma + 1;
  }
  const auto dport = static_cast<uint16_t>(number(a[5]));
  const auto proto = a[1] == "tcp" ? railbench::FlowProto::tcp : railbench::FlowProto::udp;
  railbench::ProbePacer pacer(rate);
  std::vector<FlowTrace> traces(ports.size());
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (size_t i = 0; i < ports.size(); ++i) {
    threads.emplace_back([&, i] {
      const FlowTuple tuple{a[2], a[3], ports[i], dport, proto};
      int fd = -1;
      traces[i] = proto == railbench::FlowProto::tcp ? railbench::trace_and_connect(tuple, options, pacer, fd)
                                                     : railbench::trace_udp(tuple, options, pacer);
      if (fd >= 0) reset_close(fd);
    });
  }
  for (auto& t : threads) t.join();
  nlohmann::json out = {{"seconds", std::chrono::duration<double>(Clock::now() - start).count()},
                        {"traces", nlohmann::json::array()}};
  for (size_t i = 0; i < ports.size(); ++i) {
    auto j = to_json(traces[i]);
    j["src_port"] = ports[i];
    out["traces"].push_back(j);
  }
  std::cout << out.dump() << std::endl;
  return 0;
}

int listen(const std::vector<std::string>& a) {
  if (a.size() != 3) usage("listen needs IP SECONDS");
  railbench::FlowListener listener(a[1]);
  std::cout << nlohmann::json{{"port", listener.port()}}.dump() << std::endl;
  const auto deadline = after_seconds(a[2]);
  // Held open until the end: a connection reset at once could reach the tracer before its
  // own poll() saw the connection.
  std::vector<int> taken;
  for (int fd; (fd = listener.accept_until(deadline)) >= 0;) taken.push_back(fd);
  for (int fd : taken) reset_close(fd);
  return 0;
}

int receive(const std::vector<std::string>& a) {
  if (a.size() != 4) usage("receive needs IP BYTES SECONDS");
  railbench::FlowListener listener(a[1]);
  std::cout << nlohmann::json{{"port", listener.port()}}.dump() << std::endl;
  const auto deadline = after_seconds(a[3]);
  const int fd = listener.accept_until(deadline);
  FlowFigures f;
  if (fd < 0) {
    f.error = "no connection before the deadline";
  } else {
    f = railbench::receive_flow(fd, static_cast<uint64_t>(number(a[2])), deadline);
    ::close(fd);
  }
  std::cout << nlohmann::json{{"flow", to_json(f)}}.dump() << std::endl;
  return f.completed ? 0 : 1;
}

int send(const std::vector<std::string>& a) {
  if (a.size() != 7) usage("send needs SRC DST SPORT DPORT BYTES SECONDS");
  const auto deadline = after_seconds(a[6]);
  const FlowTuple tuple{a[1], a[2], static_cast<uint16_t>(number(a[3])), static_cast<uint16_t>(number(a[4]))};
  railbench::ProbePacer pacer(200);
  int fd = -1;
  const FlowTrace t = railbench::trace_and_connect(tuple, railbench::TraceOptions{}, pacer, fd);
  FlowFigures f;
  if (fd < 0) {
    f.error = "not connected";
  } else {
    f = railbench::send_flow(fd, static_cast<uint64_t>(number(a[5])), deadline);
    ::close(fd);
  }
  std::cout << nlohmann::json{{"trace", to_json(t)}, {"flow", to_json(f)}}.dump() << std::endl;
  return f.completed ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> a(argv + 1, argv + argc);
  if (a.empty()) usage("give a command");
  try {
    if (a[0] == "trace") return trace(a);
    if (a[0] == "listen") return listen(a);
    if (a[0] == "receive") return receive(a);
    if (a[0] == "send") return send(a);
  } catch (const railbench::Error& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 2;
  }
  usage(fmt::format("unknown command '{}'", a[0]));
}
