#include "collectives/workload/formats/proto_wire.h"

#include <fmt/format.h>

#include "lib/core/errors.h"

namespace railbench::workload::formats::wire {

void Reader::fail(const std::string& what) const {
  throw UsageError(
      fmt::format("{}: byte {}: {}: the file is truncated or not a Chakra execution trace (record it "
                  "again, or check the copy is whole)",
                  where_, pos_, what));
}

uint64_t Reader::varint() {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ >= data_.size()) fail("a varint runs past the end");
    const auto b = static_cast<uint8_t>(data_[pos_++]);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  fail("a varint is longer than 10 bytes");
}

std::string_view Reader::take(uint64_t n) {
  if (data_.size() - pos_ < n) fail(fmt::format("{} bytes are needed, {} are left", n, data_.size() - pos_));
  const std::string_view s = data_.substr(pos_, static_cast<size_t>(n));
  pos_ += static_cast<size_t>(n);
  return s;
}

bool Reader::next(Field& f) {
  if (done()) return false;
  const uint64_t key = varint();
  f.number = static_cast<uint32_t>(key >> 3);
  f.bytes = {};
  f.value = 0;
  const auto type = static_cast<uint8_t>(key & 7);
  if (f.number == 0) fail("field number 0");
  switch (type) {
    case 0: f.type = Type::varint, f.value = varint(); break;
    case 1: {
      f.type = Type::fixed64;
      const auto s = take(8);
      for (int i = 7; i >= 0; --i) f.value = f.value << 8 | static_cast<uint8_t>(s[static_cast<size_t>(i)]);
      break;
    }
    case 2: f.type = Type::bytes, f.bytes = take(static_cast<size_t>(varint())); break;
    case 5: {
      f.type = Type::fixed32;
      const auto s = take(4);
      for (int i = 3; i >= 0; --i) f.value = f.value << 8 | static_cast<uint8_t>(s[static_cast<size_t>(i)]);
      break;
    }
    default: fail(fmt::format("field {} has wire type {}, which protobuf does not define", f.number, type));
  }
  return true;
}

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_varint_field(std::string& out, uint32_t number, uint64_t v) {
  put_varint(out, uint64_t{number} << 3);
  put_varint(out, v);
}

void put_bytes_field(std::string& out, uint32_t number, std::string_view bytes) {
  put_varint(out, uint64_t{number} << 3 | 2);
  put_varint(out, bytes.size());
  out.append(bytes);
}

void put_fixed64_field(std::string& out, uint32_t number, uint64_t v) {
  put_varint(out, uint64_t{number} << 3 | 1);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

void put_delimited(std::string& out, std::string_view message) {
  put_varint(out, message.size());
  out.append(message);
}

}  // namespace railbench::workload::formats::wire
