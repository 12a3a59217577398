// The protobuf wire format, the little of it a Chakra execution trace needs: varints,
// length-delimited fields, fixed 32/64-bit fields, and a stream of varint32-length-
// prefixed messages. Read without generated code (no .proto compiled into the build), so
// a field of a newer schema is skipped by its wire type, never misread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace railbench::workload::formats::wire {

enum class Type : uint8_t { varint = 0, fixed64 = 1, bytes = 2, fixed32 = 5 };

// One field of a message as read: its number, wire type, and value (varint and fixed
// values in `value`, length-delimited ones in `bytes`).
struct Field {
  uint32_t number = 0;
  Type type = Type::varint;
  uint64_t value = 0;
  std::string_view bytes;
};

// Reads the fields of one message in turn. Throws UsageError with `where` and the byte
// offset on a truncated or malformed message.
class Reader {
 public:
  Reader(std::string_view data, std::string where) : data_(data), where_(std::move(where)) {}
  bool next(Field& f);  // false at the end of the message
  uint64_t varint();
  // The next n bytes (a length-prefixed message's body); fails when fewer are left.
  std::string_view take(uint64_t n);
  size_t offset() const { return pos_; }
  bool done() const { return pos_ >= data_.size(); }
  [[noreturn]] void fail(const std::string& what) const;

 private:
  std::string_view data_;
  std::string where_;
  size_t pos_ = 0;
};

// A packed or unpacked repeated varint field's values, appended to `out`.
template <class Out>
void repeated_varints(const Field& f, Out& out, const std::string& where) {
  if (f.type == Type::varint) return out.push_back(f.value);
  Reader r(f.bytes, where);
  while (!r.done()) out.push_back(r.varint());
}

// Writing: fields appended to a message's bytes.
void put_varint(std::string& out, uint64_t v);
void put_varint_field(std::string& out, uint32_t number, uint64_t v);
void put_bytes_field(std::string& out, uint32_t number, std::string_view bytes);
void put_fixed64_field(std::string& out, uint32_t number, uint64_t v);
// A message as one element of a length-prefixed stream.
void put_delimited(std::string& out, std::string_view message);

}  // namespace railbench::workload::formats::wire
