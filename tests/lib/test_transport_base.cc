#include <catch2/catch.hpp>

#include <string>

#include "lib/transport/transport_base.h"

using namespace railbench;

namespace {

// The smallest transport on the shared base: two rails, every post refused.
class StubTransport final : public TransportBase {
 public:
  StubTransport() : TransportBase(1, 4) { provider_ = "stub"; }

  std::string name() const override { return "stub"; }
  int num_rails() const override { return 2; }
  RailInfo rail_info(int) const override { return {}; }
  std::vector<uint8_t> local_address(int) const override { return {}; }
  void connect(int, int, std::span<const uint8_t>) override {}
  std::unique_ptr<MemoryRegion> register_memory(void*, size_t, MemoryKind) override { return nullptr; }

  Status post_send(int peer, int rail, const LocalSpan&, uint64_t) noexcept override {
    return valid_target("send", peer, rail) ? Status::ok : Status::error;
  }
  Status post_recv(int, int, const LocalSpan&, uint64_t) noexcept override { return Status::error; }
  Status post_write(int, int, const LocalSpan&, const RemoteSpan&, uint64_t) noexcept override { return Status::error; }
  Status post_write_imm(int, int, const LocalSpan&, const RemoteSpan&, uint32_t, uint64_t) noexcept override {
    return Status::error;
  }
  Status post_read(int, int, const LocalSpan&, const RemoteSpan&, uint64_t) noexcept override { return Status::error; }
  size_t poll(std::span<Completion>) noexcept override { return 0; }

  using TransportBase::has_error;
  using TransportBase::set_error;
  // The string-out form every Transport has, for comparing texts.
  std::string old_reason(int peer, int rail) const {
    std::string why;
    Transport::valid_target("send", peer, rail, why);
    return why;
  }
};

}  // namespace

TEST_CASE("the data path is noexcept in the interface itself", "[transport]") {
  StubTransport t;
  Transport& base = t;
  LocalSpan span;
  RemoteSpan remote;
  std::span<Completion> none;
  STATIC_REQUIRE(noexcept(base.post_send(0, 0, span, 0)));
  STATIC_REQUIRE(noexcept(base.post_recv(0, 0, span, 0)));
  STATIC_REQUIRE(noexcept(base.post_write(0, 0, span, remote, 0)));
  STATIC_REQUIRE(noexcept(base.post_write_imm(0, 0, span, remote, 0, 0)));
  STATIC_REQUIRE(noexcept(base.post_read(0, 0, span, remote, 0)));
  STATIC_REQUIRE(noexcept(base.post_collective(CollectiveOp{}, 0)));
  STATIC_REQUIRE(noexcept(base.poll(none)));
}

TEST_CASE("the shared base answers rank, size, provider and caps", "[transport]") {
  StubTransport t;
  CHECK(t.rank() == 1);
  CHECK(t.world_size() == 4);
  CHECK(t.provider() == "stub");
  CHECK_FALSE(t.caps().send_recv);
  CHECK_FALSE(t.has_error());
  CHECK(t.last_error().empty());
}

TEST_CASE("a bad peer or rail is refused with the same words as Transport::valid_target", "[transport]") {
  StubTransport t;
  CHECK(t.post_send(0, 1, {}, 0) == Status::ok);
  CHECK_FALSE(t.has_error());
  CHECK(t.post_send(0, 2, {}, 0) == Status::error);
  CHECK(t.last_error() == "send with peer 0: rail 2 does not exist (2 rail(s))");
  CHECK(t.last_error() == t.old_reason(0, 2));
  CHECK(t.post_send(4, 0, {}, 0) == Status::error);
  CHECK(t.last_error() == "send on rail 0: peer 4 is not a rank (world size 4)");
  CHECK(t.last_error() == t.old_reason(4, 0));
}

TEST_CASE("set_error replaces the last error and cuts text that does not fit", "[transport]") {
  StubTransport t;
  t.set_error("{} to peer {} failed", "write", 3);
  CHECK(t.has_error());
  CHECK(t.last_error() == "write to peer 3 failed");
  t.set_error("short");
  CHECK(t.last_error() == "short");
  const std::string long_text(5000, 'x');
  t.set_error("{}", long_text);
  CHECK(t.last_error().size() < long_text.size());
  CHECK(t.last_error() == long_text.substr(0, t.last_error().size()));
}
