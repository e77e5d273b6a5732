#pragma once
// The point-to-point messages of an MPI run (docs/mpi.md), one tag each, all on MPI_COMM_WORLD
// between the collector (rank 0) and a processing rank. No collectives after start-up: a rank
// that is gone must not hold the others in one.
namespace livedrp::mpi {

inline constexpr int kCollectorRank = 0;

inline constexpr int kTagReport = 1;  // rank -> collector: a RankReport (CBOR bytes)
inline constexpr int kTagStop = 2;    // collector -> rank: stop your engine (one int)
inline constexpr int kTagEnd = 3;     // collector -> rank: the run is over (one int)
// collector -> rank: a control request, validated on the collector (rank_requests.hpp, CBOR)
inline constexpr int kTagRequest = 4;
inline constexpr int kTagAnswer = 5;  // rank -> collector: its answer to one request (CBOR)

}  // namespace livedrp::mpi
