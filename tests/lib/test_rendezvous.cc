// The TCP rendezvous admits only its own job (a port open on the network is found by
// scanners and other jobs' ranks; lib/runtime/README.md): the frame's checks, and rank 0
// with real sockets facing strangers that send garbage, another job's token or nothing.
// tests/rendezvous/strangers.py does the same to the railbench binary.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "lib/core/clock.h"
#include "lib/core/errors.h"
#include "lib/runtime/bootstrap.h"
#include "lib/runtime/rendezvous_frame.h"
#include "lib/runtime/rendezvous_socket.h"
#include "lib/runtime/rendezvous_tree.h"
#include "tests/support/free_port.h"

using namespace railbench;
using namespace railbench::rendezvous;
using Catch::Matchers::Contains;

namespace {

// A stranger: a plain socket to 127.0.0.1:port, retried while rank 0 starts listening.
class Client {
 public:
  explicit Client(int port, int tries = 200) {
    for (int i = 0; i < tries; ++i) {
      fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      sa.sin_port = htons(static_cast<uint16_t>(port));
      sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0) return;
      ::close(fd_);
      fd_ = -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ~Client() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool connected() const { return fd_ >= 0; }
  void send(const void* data, size_t len) { CHECK(::send(fd_, data, len, MSG_NOSIGNAL) == static_cast<ssize_t>(len)); }
  template <size_t N>
  void send(const std::array<std::byte, N>& a) {
    send(a.data(), a.size());
  }
  // What rank 0 sends until it closes the connection; nullopt-like `closed == false`
  // when it is still open after `seconds`.
  struct Answer {
    std::vector<std::byte> bytes;
    bool closed = false;
  };
  Answer read_until_closed(double seconds) {
    Answer a;
    auto deadline = Deadline::after(seconds);
    while (!deadline.passed()) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      std::array<std::byte, 256> buf{};
      ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
      if (n <= 0) {
        a.closed = true;
        return a;
      }
      a.bytes.insert(a.bytes.end(), buf.begin(), buf.begin() + n);
    }
    return a;
  }

 private:
  int fd_ = -1;
};

std::array<std::byte, kHeaderBytes + kHelloBytes> hello_frame(std::string_view token, int rank, int size,
                                                              uint64_t length = kHelloBytes) {
  std::array<std::byte, kHeaderBytes + kHelloBytes> out{};
  const auto h = encode(Header{kMagic, kVersion, static_cast<uint16_t>(Kind::hello), token_digest(token), length});
  const auto body = encode(Hello{rank, size});
  std::copy(h.begin(), h.end(), out.begin());
  std::copy(body.begin(), body.end(), out.begin() + kHeaderBytes);
  return out;
}

// A 2-rank job with token "job-A" on `port`: rank 0 in a thread, rank 1 started by
// `join_rank1` when the test says so; both gather and report failures.
struct Job {
  explicit Job(int port, double timeout_s = 10.0) : root(fmt::format("127.0.0.1:{}", port)), timeout(timeout_s) {
    rank0 = std::thread([this] { run(0); });
  }
  void join_rank1() {
    rank1 = std::thread([this] { run(1); });
  }
  void wait() {
    rank0.join();
    if (rank1.joinable()) rank1.join();
  }
  void run(int r) {
    try {
      auto b = make_tcp_bootstrap(r, 2, {root, "job-A"}, timeout);
      auto v = b->all_gather_value<int>(r + 100);
      if (v != std::vector<int>{100, 101}) errors[r] = "wrong gather result";
      done[r] = Clock::now();
    } catch (const std::exception& e) {
      errors[r] = e.what();
    }
  }
  std::string root;
  double timeout;
  std::thread rank0, rank1;
  std::array<std::string, 2> errors;
  std::array<Clock::time_point, 2> done{};
};

}  // namespace

TEST_CASE("rendezvous frames: magic, version, token, kind and exact length are checked", "[bootstrap][robustness]") {
  // FNV-1a 64: the empty token is the offset basis, so two empty tokens match.
  CHECK(token_digest("") == 0xcbf29ce484222325ull);
  CHECK(token_digest("a") == 0xaf63dc4c8601ec8cull);
  CHECK(token_digest("job-A") != token_digest("job-B"));

  const uint64_t token = token_digest("job-A");
  const Header good{kMagic, kVersion, static_cast<uint16_t>(Kind::hello), token, kHelloBytes};
  const auto bytes = encode(good);
  const Header back = decode_header(bytes);
  CHECK(back.magic == good.magic);
  CHECK(back.token == good.token);
  CHECK(back.length == good.length);
  CHECK(static_cast<uint8_t>(bytes[0]) == 0x6c);  // little-endian on the wire
  CHECK(check_header(good, token, Kind::hello, kHelloBytes));

  Header h = good;
  h.magic = 0x20544547;  // "GET "
  CHECK(check_header(h, token, Kind::hello, kHelloBytes).fault == Fault::not_railbench);
  CHECK_THAT(check_header(h, token, Kind::hello, kHelloBytes).why, Contains("GET "));
  h = good;
  h.version = 1;
  CHECK(check_header(h, token, Kind::hello, kHelloBytes).fault == Fault::version);
  h = good;
  h.token = token_digest("job-B");
  CHECK(check_header(h, token, Kind::hello, kHelloBytes).fault == Fault::token);
  CHECK_THAT(check_header(h, token, Kind::hello, kHelloBytes).why, Contains("wrong job token"));
  h = good;
  h.kind = static_cast<uint16_t>(Kind::gather);
  CHECK(check_header(h, token, Kind::hello, kHelloBytes).fault == Fault::kind);
  h = good;
  h.length = uint64_t{1} << 62;  // a stranger's huge length is refused, never allocated
  CHECK(check_header(h, token, Kind::hello, kHelloBytes).fault == Fault::length);
  CHECK_THAT(check_header(h, token, Kind::hello, kHelloBytes).why, Contains("4611686018427387904 bytes"));
  h.length = 4;
  CHECK(check_header(h, token, Kind::hello, kHelloBytes).fault == Fault::length);

  // A prefix is judged by its first bytes: an HTTP request or a TLS hello at once.
  const std::array<std::byte, 1> tls{std::byte{0x16}};
  CHECK(check_prefix(tls).fault == Fault::not_railbench);
  CHECK(check_prefix(std::span(bytes.data(), 3)));
  CHECK(quote_bytes(std::as_bytes(std::span("GE\x01T", 4))) == "GE\\x01T");

  const auto hello = decode_hello(encode(Hello{7, 9}));
  CHECK(hello.rank == 7);
  CHECK(hello.size == 9);
}

TEST_CASE("rendezvous: strangers are closed and the job still completes", "[bootstrap][robustness]") {
  const int port = railbench::testing::free_tcp_port();
  Job job(port);

  Client garbage(port);
  REQUIRE(garbage.connected());
  garbage.send("GET / HTTP/1.0\r\n\r\n", 18);
  Client huge(port);
  huge.send(hello_frame("job-A", 1, 2, uint64_t{1} << 62));
  Client wrong_token(port);
  wrong_token.send(hello_frame("job-B", 1, 2));
  Client silent(port);  // holds the socket and sends nothing

  // Each is closed; only the railbench of another job is told why (wrong token).
  CHECK(garbage.read_until_closed(3).closed);
  CHECK(huge.read_until_closed(3).closed);
  const auto answer = wrong_token.read_until_closed(3);
  CHECK(answer.closed);
  REQUIRE(answer.bytes.size() == kHeaderBytes + kRefusalBytes);
  const Header refusal = decode_header(std::span<const std::byte, kHeaderBytes>(answer.bytes.data(), kHeaderBytes));
  CHECK(refusal.kind == static_cast<uint16_t>(Kind::refused));
  CHECK(refusal.token == token_digest("job-B"));  // its own digest echoed, never ours
  CHECK(decode_refusal(std::span<const std::byte, kRefusalBytes>(answer.bytes.data() + kHeaderBytes, kRefusalBytes)) ==
        static_cast<uint32_t>(Refusal::wrong_token));

  // The silent one does not hold up the real rank, who comes now.
  const auto started = Clock::now();
  job.join_rank1();
  job.wait();
  CHECK(job.errors[0].empty());
  CHECK(job.errors[1].empty());
  CHECK(seconds_between(started, job.done[0]) < 3.0);
  // Once every rank has joined the silent one is closed, and the port is shut.
  CHECK(silent.read_until_closed(3).closed);
  Client late(port, 1);
  CHECK_FALSE(late.connected());
}

TEST_CASE("rendezvous: a rank of another job on the port is refused, naming the token", "[bootstrap][robustness]") {
  const int port = railbench::testing::free_tcp_port();
  Job job(port);
  const std::string root = fmt::format("127.0.0.1:{}", port);
  std::string other;
  try {
    make_tcp_bootstrap(1, 2, {root, "job-B"}, 5.0);
  } catch (const UsageError& e) {
    other = e.what();
  }
  CHECK_THAT(other, Contains("refused this rank") && Contains("job token") && Contains(root));
  job.join_rank1();
  job.wait();
  CHECK(job.errors[0].empty());
  CHECK(job.errors[1].empty());
}

TEST_CASE("rendezvous: the same token with another world size is still a usage error", "[bootstrap][robustness]") {
  const int port = railbench::testing::free_tcp_port();
  const std::string root = fmt::format("127.0.0.1:{}", port);
  std::string root_error, rank_error;
  std::thread t0([&] {
    try {
      make_tcp_bootstrap(0, 2, {root, "job-A"}, 5.0);
    } catch (const UsageError& e) {
      root_error = e.what();
    }
  });
  try {
    make_tcp_bootstrap(1, 3, {root, "job-A"}, 5.0);
  } catch (const UsageError& e) {
    rank_error = e.what();
  }
  t0.join();
  CHECK_THAT(root_error, Contains("RAILBENCH_WORLD_SIZE=3, rank 0 with 2"));
  CHECK_THAT(rank_error, Contains("RAILBENCH_WORLD_SIZE"));
}

TEST_CASE("rendezvous: a flood of silent connections does not keep the ranks out", "[bootstrap][robustness]") {
  const int port = railbench::testing::free_tcp_port();
  Job job(port);
  std::vector<std::unique_ptr<Client>> flood;
  for (int i = 0; i < 200; ++i) flood.push_back(std::make_unique<Client>(port));
  job.join_rank1();
  job.wait();
  CHECK(job.errors[0].empty());
  CHECK(job.errors[1].empty());
  // Every one of them was closed (at most kMaxPending were ever held at once).
  int closed = 0;
  for (auto& c : flood) closed += c->read_until_closed(1).closed ? 1 : 0;
  CHECK(closed == 200);
}

TEST_CASE("rendezvous: rank 0 binds the root's address, not every address", "[bootstrap][robustness]") {
  // 192.0.2.1 (TEST-NET-1) is nobody's address: the error names it and the override.
  const int port = railbench::testing::free_tcp_port();
  std::string error;
  try {
    make_tcp_bootstrap(0, 2, {fmt::format("192.0.2.1:{}", port)}, 1.0);
  } catch (const UsageError& e) {
    error = e.what();
  }
  CHECK_THAT(error,
             Contains("'192.0.2.1'") && Contains("not an address of this machine") && Contains("RAILBENCH_BIND=any"));

  auto pair = [](const TcpRendezvous& at0, const TcpRendezvous& at1) {
    std::string e0, e1;
    std::thread t0([&] {
      try {
        make_tcp_bootstrap(0, 2, at0, 10.0)->barrier();
      } catch (const std::exception& e) {
        e0 = e.what();
      }
    });
    try {
      make_tcp_bootstrap(1, 2, at1, 10.0)->barrier();
    } catch (const std::exception& e) {
      e1 = e.what();
    }
    t0.join();
    return e0 + e1;
  };
  // Debian names the host 127.0.1.1 in /etc/hosts: rank 0 listens there
  // (tests/rendezvous/bind_case.sh does it by name).
  const std::string root = fmt::format("127.0.1.1:{}", railbench::testing::free_tcp_port());
  CHECK(pair({root}, {root}).empty());

  // With bind_any, a root host that is not this machine's still listens (on every address).
  const int any_port = railbench::testing::free_tcp_port();
  CHECK(pair({fmt::format("192.0.2.1:{}", any_port), "", true}, {fmt::format("127.0.0.1:{}", any_port)}).empty());
  // So does an explicit bind address.
  const int addr_port = railbench::testing::free_tcp_port();
  CHECK(pair({fmt::format("192.0.2.1:{}", addr_port), "", false, "127.0.0.1"}, {fmt::format("127.0.0.1:{}", addr_port)})
            .empty());
}

TEST_CASE("a parent in the bootstrap tree admits only its own children", "[bootstrap]") {
  // A listener on loopback, as listen_for_children makes one.
  Fd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(sa);
  REQUIRE(::bind(listener.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0);
  REQUIRE(::listen(listener.get(), 16) == 0);
  REQUIRE(::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&sa), &len) == 0);
  const int port = ntohs(sa.sin_port);
  // Rank 4 of 8: its children are 6 and 5. Before them: a stranger's bytes, another job's
  // hello, a rank that is not 4's child, and a child of another world size.
  std::vector<Fd> admitted;
  std::string error;
  std::thread parent([&] {
    try {
      admitted = accept_children(listener.get(), 4, 8, tree_children(4, 8), token_digest("job-A"), Deadline::after(10));
    } catch (const Error& e) {
      error = e.what();
    }
  });
  const std::string http = "GET / HTTP/1.0\r\nHost: railbench\r\n\r\n";
  Client stranger(port);
  stranger.send(http.data(), http.size());
  Client other_job(port);
  other_job.send(hello_frame("job-B", 6, 8));
  Client not_a_child(port);
  not_a_child.send(hello_frame("job-A", 7, 8));
  Client other_world(port);
  other_world.send(hello_frame("job-A", 5, 9));
  Client six(port);
  six.send(hello_frame("job-A", 6, 8));
  Client five(port);
  five.send(hello_frame("job-A", 5, 8));
  parent.join();
  CHECK(error.empty());
  REQUIRE(admitted.size() == 2);
  CHECK((admitted[0] && admitted[1]));
  for (Client* c : {&stranger, &other_job, &not_a_child, &other_world}) {
    const auto a = c->read_until_closed(2.0);
    CHECK(a.closed);
    CHECK(a.bytes.empty());
  }
  for (Client* c : {&six, &five}) {
    const auto a = c->read_until_closed(0.3);
    CHECK_FALSE(a.closed);
    REQUIRE(a.bytes.size() == kHeaderBytes);
    const Header h = decode_header(std::span<const std::byte, kHeaderBytes>(a.bytes.data(), kHeaderBytes));
    CHECK(check_header(h, token_digest("job-A"), Kind::welcome, 0));
  }
}
