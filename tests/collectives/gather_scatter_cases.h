// The ring all-gather and reduce-scatter test body, run over any Net, in nccl-tests'
// in-place and out-of-place layouts, checked element by element.
#pragma once

#include <cstring>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "collectives/check.h"
#include "collectives/gather_scatter.h"
#include "lib/transport/progress.h"
#include "tests/collectives/rank_buffers.h"
#include "tests/support/net.h"

namespace railbench::testing {

enum class Which { allgather, reducescatter };

inline void gather_scatter_case(Which which, const Net& net, int n, int rails, size_t slice_bytes,
                                const std::vector<std::pair<DataType, ReduceOp>>& kinds,
                                const std::vector<size_t>& counts) {
  run_ranks_on(net, n, rails, [&](Bootstrap& b, Transport& t) {
    Progress p(t, 30);
    RankBuffers buf(t, counts, static_cast<size_t>(n));
    const size_t max_bytes = buf.bytes;
    auto& recv = buf.recv;
    const MemoryRegion* rmr = buf.rmr.get();
    const RingOptions ring{max_bytes, slice_bytes, rails, RingProtocol::send};
    auto ag = make_ring_allgather(p, ring);
    auto rs = make_ring_reducescatter(p, ring);
    uint32_t seed = 0;
    for (auto [type, op] : kinds) {
      const size_t es = size_of(type);
      for (size_t count : counts) {
        for (bool in_place : {false, true}) {
          ++seed;
          const size_t own = static_cast<size_t>(b.rank()) * count * es;
          std::memset(recv.data(), 0xff, max_bytes);
          uint64_t wrong = 0;
          if (which == Which::allgather) {
            const CollectiveBuffers bufs = in_place ? CollectiveBuffers{rmr, own, rmr, 0} : buf.placed(false);
            fill_block(type, b.rank(), 0, seed, bufs.send->at(bufs.send_offset), count);
            ag->run(bufs, count, type);
            wrong = count_wrong_allgather(type, n, seed, recv.data(), count);
          } else {
            const CollectiveBuffers bufs = in_place ? CollectiveBuffers{rmr, 0, rmr, own} : buf.placed(false);
            fill_input(type, op, b.rank(), seed, bufs.send->data(), count * static_cast<size_t>(n));
            rs->run(bufs, count, type, op);
            wrong = count_wrong_allreduce(type, op, n, seed, bufs.recv->at(bufs.recv_offset), count,
                                          static_cast<size_t>(b.rank()) * count);
          }
          expect(wrong == 0,
                 fmt::format("{} {} n={} {} {} count={} {} rank {}: {} wrong",
                             which == Which::allgather ? "all-gather" : "reduce-scatter", net.name, n, to_string(type),
                             to_string(op), count, in_place ? "in-place" : "out-of-place", b.rank(), wrong));
        }
      }
    }
    b.barrier();  // no endpoint closes while a peer's last send is in flight
  });
}

}  // namespace railbench::testing
