#include "lib/runtime/rendezvous_frame.h"

#include <fmt/format.h>

namespace railbench::rendezvous {

namespace {

template <class T>
void put(std::byte* p, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<std::byte>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
}

template <class T>
T get(const std::byte* p) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return static_cast<T>(v);
}

const char* kind_name(uint16_t kind) {
  switch (static_cast<Kind>(kind)) {
    case Kind::hello: return "hello";
    case Kind::welcome: return "welcome";
    case Kind::refused: return "refusal";
    case Kind::gather: return "gather block";
    case Kind::result: return "gather result";
    case Kind::block: return "block for the root";
    case Kind::topology: return "topology";
    case Kind::parent: return "tree parent";
  }
  return "unknown frame";
}

}  // namespace

uint64_t token_digest(std::string_view token) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : token) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

std::array<std::byte, kHeaderBytes> encode(const Header& h) {
  std::array<std::byte, kHeaderBytes> out{};
  put(out.data(), h.magic);
  put(out.data() + 4, h.version);
  put(out.data() + 6, h.kind);
  put(out.data() + 8, h.token);
  put(out.data() + 16, h.length);
  return out;
}

Header decode_header(std::span<const std::byte, kHeaderBytes> b) {
  return Header{get<uint32_t>(b.data()), get<uint16_t>(b.data() + 4), get<uint16_t>(b.data() + 6),
                get<uint64_t>(b.data() + 8), get<uint64_t>(b.data() + 16)};
}

std::array<std::byte, kHelloBytes> encode(const Hello& h) {
  std::array<std::byte, kHelloBytes> out{};
  put(out.data(), static_cast<uint32_t>(h.rank));
  put(out.data() + 4, static_cast<uint32_t>(h.size));
  return out;
}

Hello decode_hello(std::span<const std::byte, kHelloBytes> b) {
  return Hello{static_cast<int32_t>(get<uint32_t>(b.data())), static_cast<int32_t>(get<uint32_t>(b.data() + 4))};
}

std::array<std::byte, kRefusalBytes> encode(Refusal r) {
  std::array<std::byte, kRefusalBytes> out{};
  put(out.data(), static_cast<uint32_t>(r));
  return out;
}

uint32_t decode_refusal(std::span<const std::byte, kRefusalBytes> b) {
  return get<uint32_t>(b.data());
}

std::string quote_bytes(std::span<const std::byte> bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < 8; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    out += (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? std::string(1, static_cast<char>(c))
                                                            : fmt::format("\\x{:02x}", c);
  }
  return out;
}

Verdict check_prefix(std::span<const std::byte> prefix) {
  const auto magic = encode(Header{});
  for (size_t i = 0; i < prefix.size() && i < 4; ++i) {
    if (prefix[i] != magic[i]) {
      return {Fault::not_railbench, fmt::format("not a railbench rank (it sent \"{}\")",
                                                quote_bytes(prefix.first(std::min<size_t>(prefix.size(), 8))))};
    }
  }
  return {};
}

Verdict check_header(const Header& h, uint64_t token, Kind kind, uint64_t length) {
  if (h.magic != kMagic) return check_prefix(encode(h));
  if (h.version != kVersion) {
    return {Fault::version,
            fmt::format("rendezvous protocol version {}, this railbench speaks {} (a different railbench build?)",
                        h.version, kVersion)};
  }
  if (h.token != token) return {Fault::token, "wrong job token (another job on this port?)"};
  if (h.kind != static_cast<uint16_t>(kind)) {
    return {Fault::kind,
            fmt::format("sent a {} where a {} belongs", kind_name(h.kind), kind_name(static_cast<uint16_t>(kind)))};
  }
  if (h.length != length) {
    return {Fault::length,
            fmt::format("a {} of {} bytes announced where {} belong", kind_name(h.kind), h.length, length)};
  }
  return {};
}

std::string describe(Refusal r) {
  switch (r) {
    case Refusal::wrong_token:
      return "its job token differs from this rank's (another job on the same port? give every rank of one launch the "
             "same RAILBENCH_JOB_TOKEN, and each job its own port)";
    case Refusal::wrong_version:
      return "it runs a different railbench rendezvous protocol: run the same railbench build on every rank";
    case Refusal::world_size:
      return "it was started with another world size: give every rank the same RAILBENCH_WORLD_SIZE";
    case Refusal::duplicate_rank:
      return "another process already joined with this rank: give each rank its own RAILBENCH_RANK";
    case Refusal::rank_out_of_range:
      return "this rank is outside 0..world size-1: give each rank its own RAILBENCH_RANK below the world size";
  }
  return "for a reason this railbench does not know (a different railbench build?)";
}

}  // namespace railbench::rendezvous
