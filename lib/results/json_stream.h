// A results document written straight to a file descriptor, its largest arrays made one
// element at a time: validate's 4 M pair records of a 1,024-node x 8-rail SU would take
// GBs as a JSON DOM (and as many again as text) before a byte reached the disk.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace railbench {

// An array held by its owner, not as JSON: `count` elements, element(i) the i-th.
struct StreamedArray {
  size_t count = 0;
  std::function<nlohmann::json(size_t)> element;
};
// By where each sits in the document, as a JSON pointer: "/rail_pairs", "/rails/0/bw_gbs".
using StreamedArrays = std::map<std::string, StreamedArray>;

// Writes `doc` to `fd` as the bytes of doc.dump(2) + '\n', with each array of `streamed`
// written from its elements in place of the value `doc` holds at its pointer. Returns
// false with errno set when a write fails.
bool write_json_streamed(int fd, const nlohmann::json& doc, const StreamedArrays& streamed);

// doc with each streamed array's elements put in: the document as one JSON value
// (small documents only: the signal handlers' copy).
nlohmann::json with_streamed(nlohmann::json doc, const StreamedArrays& streamed);

}  // namespace railbench
