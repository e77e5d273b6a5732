#include "mpi/rank_control.hpp"

#include <spdlog/spdlog.h>

#include "mpi/mpi_session.hpp"
#include "mpi/mpi_tags.hpp"

namespace livedrp::mpi {

RankControl::~RankControl() {
  for (Send& send : sends_)
    if (send.request != MPI_REQUEST_NULL) MPI_Request_free(&send.request);
}

void RankControl::poll(RankEngines& engines) {
  for (;;) {
    int flag = 0;
    MPI_Message message;
    MPI_Status status;
    check(MPI_Improbe(kCollectorRank, kTagRequest, MPI_COMM_WORLD, &flag, &message, &status),
          "probing for control requests");
    if (!flag) break;
    answer(engines, message, status);
  }
  if (preparing_) {
    if (const std::optional<std::string> error = engines.prepared()) {
      RankAnswer done;
      done.id = *preparing_;
      done.rank = rank_;
      done.ok = error->empty();
      done.error = *error;
      preparing_.reset();
      send(done);
    }
  }
  if (committing_ && engines.commit_ready()) {
    send(answer_request(engines, rank_, {*committing_, "commit_apply"}));
    committing_.reset();
  }
  for (auto it = sends_.begin(); it != sends_.end();) {
    int done = 0;
    check(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE), "testing a control answer's send");
    it = done ? sends_.erase(it) : std::next(it);
  }
}

void RankControl::answer(RankEngines& engines, MPI_Message& message, const MPI_Status& status) {
  int count = 0;
  check(MPI_Get_count(&status, MPI_BYTE, &count), "sizing a control request");
  std::vector<std::uint8_t> bytes(std::size_t(std::max(count, 0)));
  MPI_Status received;
  check(MPI_Mrecv(bytes.data(), count, MPI_BYTE, &message, &received),
        "receiving a control request");
  // A request this rank cannot read is still answered (with id 0 when even that is unreadable:
  // the collector then names this rank missing), so that nothing waits on it in vain.
  RankAnswer reply;
  reply.rank = rank_;
  try {
    const RankRequest request = decode_request(bytes);
    reply.id = request.id;
    if (request.name == "prepare_apply") {
      // Built on a thread of its own; answered by a later poll.
      engines.prepare(EngineConfig::from_json(request.fields.at("config"), "apply"));
      preparing_ = request.id;
      return;
    }
    if (request.name == "commit_apply") {
      // Answered once the running engine has drained.
      engines.begin_commit();
      committing_ = request.id;
      return;
    }
    reply = answer_request(engines, rank_, request);
  } catch (const std::exception& e) {
    spdlog::error("rank {}: {}", rank_, e.what());
    reply.ok = false;
    reply.error = e.what();
  }
  send(reply);
}

void RankControl::send(const RankAnswer& answer) {
  RankAnswer reply = answer;
  std::vector<std::uint8_t> encoded;
  try {
    encoded = encode_answer(reply);
  } catch (const std::exception& e) {
    // The newest hit's message would not encode: the answer goes without it, saying why.
    reply.newest_hit.reset();
    reply.ok = false;
    reply.result = nlohmann::json::object();
    reply.error = std::string("the answer could not be encoded: ") + e.what();
    encoded = encode_answer(reply);
  }
  Send& send = sends_.emplace_back();
  send.bytes = std::move(encoded);
  check(MPI_Isend(send.bytes.data(), int(send.bytes.size()), MPI_BYTE, kCollectorRank, kTagAnswer,
                  MPI_COMM_WORLD, &send.request),
        "sending a control answer to the collector");
}

void RankControl::finish() {
  for (Send& send : sends_)
    check(MPI_Wait(&send.request, MPI_STATUS_IGNORE), "completing a control answer's send");
  sends_.clear();
}

}  // namespace livedrp::mpi
