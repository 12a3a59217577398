// The TCP rendezvous's wire format and limits (lib/runtime/bootstrap_tcp.cc). Every message
// between ranks, the hello included, is one frame: a fixed header (magic, protocol
// version, kind, the job token's digest, payload length) and its payload. Rank 0 checks
// a connection's header before it reads or allocates anything for it, so a stranger on
// the port (another job, a port scanner, a health checker) is closed and logged, never
// admitted, never a crash. The token only stops accidents: lib/runtime/README.md, "The rendezvous:
// who may join", says what would stop an attacker.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace railbench::rendezvous {

inline constexpr uint32_t kMagic = 0x7261696c;  // "rail"
// 1 was the unframed hello {magic, rank, size}; 2 had no gather to the root (`block`); 3
// had no tree (`topology`, `parent`).
inline constexpr uint16_t kVersion = 4;
inline constexpr size_t kHeaderBytes = 24;
inline constexpr size_t kHelloBytes = 8;    // rank, world size
inline constexpr size_t kRefusalBytes = 4;  // a Refusal code

// Limits on connections that have not sent a valid hello yet (lib/runtime/README.md, "The rendezvous: who may join").
inline constexpr int kMaxPending = 64;        // beyond it, the oldest is closed
inline constexpr double kHelloSeconds = 5.0;  // each connection's time to send its hello
inline constexpr int kListenBacklog = 128;    // the kernel's queue of unaccepted connections, at least;
                                              // rank 0 raises it to the world size when it admits
inline constexpr int kLoggedRefusals = 10;    // refusals printed one by one; the rest are counted

// gather: an all_gather's block to rank 0; result: rank 0's answer to it (or the blocks of
// a gather forwarded to its root); block: a gather's block to rank 0, any length;
// topology: rank 0's choice of star or tree (1 byte); parent: rank 0 to a rank, the
// address of its parent in the tree (empty when that is rank 0). In the tree, `gather`
// and `result` also travel between a rank and its parent.
enum class Kind : uint16_t {
  hello = 1,
  welcome = 2,
  refused = 3,
  gather = 4,
  result = 5,
  block = 6,
  topology = 7,
  parent = 8
};

// Why rank 0 turned a railbench rank away (the payload of a `refused` frame).
enum class Refusal : uint32_t {
  wrong_token = 1,
  wrong_version = 2,
  world_size = 3,
  duplicate_rank = 4,
  rank_out_of_range = 5,
};

struct Header {
  uint32_t magic = kMagic;
  uint16_t version = kVersion;
  uint16_t kind = 0;
  uint64_t token = 0;   // token_digest() of the sender's job token
  uint64_t length = 0;  // payload bytes that follow
};

// 64-bit FNV-1a of the job token: both sides compare digests, so the token itself never
// crosses the wire. Empty tokens on both sides match.
uint64_t token_digest(std::string_view token);

// Little-endian on the wire whatever the host's order.
std::array<std::byte, kHeaderBytes> encode(const Header& h);
Header decode_header(std::span<const std::byte, kHeaderBytes> bytes);

struct Hello {
  int32_t rank = 0;
  int32_t size = 0;
};
std::array<std::byte, kHelloBytes> encode(const Hello& h);
Hello decode_hello(std::span<const std::byte, kHelloBytes> bytes);
std::array<std::byte, kRefusalBytes> encode(Refusal r);
uint32_t decode_refusal(std::span<const std::byte, kRefusalBytes> bytes);

// What is wrong with a frame header, in the order it is checked; `none` when it is the
// frame the receiver expects.
enum class Fault { none, not_railbench, version, token, kind, length };

struct Verdict {
  Fault fault = Fault::none;
  std::string why;  // for a log line or an error: what arrived and what was expected
  explicit operator bool() const { return fault == Fault::none; }
};

// The first bytes of a connection, before a whole header has arrived: a wrong magic is
// refused at once (an HTTP request or TLS hello is caught by its first byte).
Verdict check_prefix(std::span<const std::byte> prefix);

// A whole header: magic, version, job token, kind, and a length of exactly `length`,
// the payload the receiver expects (8 bytes for a hello, the caller's block for a
// gather): checked before any payload is read, so no length from the wire sizes a buffer.
Verdict check_header(const Header& h, uint64_t token, Kind kind, uint64_t length);

// A short printable quote of bytes that are not a railbench frame ("GET / HT").
std::string quote_bytes(std::span<const std::byte> bytes);

// What a refused rank is told, with the fix.
std::string describe(Refusal r);

}  // namespace railbench::rendezvous
