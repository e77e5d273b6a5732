#include "mpi/rank_requests.hpp"

#include "core/error.hpp"
#include "exec/peak_requests.hpp"
#include "mpi/rank_report.hpp"

namespace livedrp::mpi {

using nlohmann::json;

std::vector<std::uint8_t> encode_request(const RankRequest& request) {
  return json::to_cbor({{"id", request.id}, {"request", request.name}, {"fields", request.fields}});
}

RankRequest decode_request(const std::vector<std::uint8_t>& bytes) {
  try {
    const json j = json::from_cbor(bytes);
    RankRequest request;
    request.id = j.at("id").get<std::uint64_t>();
    request.name = j.at("request").get<std::string>();
    request.fields = j.at("fields");
    if (!request.fields.is_object()) throw std::runtime_error("its fields are not an object");
    return request;
  } catch (const std::exception& e) {
    throw RuntimeFault(std::string("MPI: the collector's control request cannot be read: ") +
                       e.what());
  }
}

std::vector<std::uint8_t> encode_answer(const RankAnswer& answer) {
  json j = {{"id", answer.id},
            {"rank", answer.rank},
            {"ok", answer.ok},
            {"result", answer.result},
            {"error", answer.error}};
  if (answer.newest_hit) j["newest_hit"] = encode_peaks(*answer.newest_hit);
  return json::to_cbor(j);
}

RankAnswer decode_answer(const std::vector<std::uint8_t>& bytes, int from_rank) {
  try {
    const json j = json::from_cbor(bytes);
    RankAnswer answer;
    answer.id = j.at("id").get<std::uint64_t>();
    answer.rank = j.at("rank").get<int>();
    if (answer.rank != from_rank)
      throw std::runtime_error("it says it is rank " + std::to_string(answer.rank));
    answer.ok = j.at("ok").get<bool>();
    answer.result = j.at("result");
    answer.error = j.at("error").get<std::string>();
    if (const auto hit = j.find("newest_hit"); hit != j.end())
      answer.newest_hit = decode_peaks(*hit);
    return answer;
  } catch (const std::exception& e) {
    throw RuntimeFault("MPI: the answer of rank " + std::to_string(from_rank) +
                       " to a control request cannot be read: " + e.what());
  }
}

RankAnswer answer_request(RankEngines& engines, int rank, const RankRequest& request) {
  RankAnswer answer;
  answer.id = request.id;
  answer.rank = rank;
  try {
    Engine& engine = engines.engine();
    if (request.name == "set_peak_params") {
      apply_peak_params_request(engine, request.fields.at("params"));
      answer.result = peak_params_reply(engine.peak_params());
    } else if (request.name == "rerun_peaks") {
      std::optional<std::uint64_t> frames;
      if (const auto f = request.fields.find("frames"); f != request.fields.end())
        frames = f->get<std::uint64_t>();
      PeakRerun rerun = engine.rerun_peaks(frames);
      answer.result = rerun_peaks_reply(rerun);
      answer.result["pulse_ids"] = rerun.pulse_ids;
      answer.newest_hit = std::move(rerun.newest_hit);
    } else if (request.name == "prepare_apply") {
      const EngineConfig config = EngineConfig::from_json(request.fields.at("config"), "apply");
      engines.prepare(config);
      if (const std::string error = engines.wait_prepared(); !error.empty())
        throw InputError(error);
      answer.result = {{"run", config.run}};
    } else if (request.name == "commit_apply") {
      engines.commit();
      answer.result = {{"run", engines.engine().config().run}};
    } else if (request.name == "discard_apply") {
      engines.discard();
    } else {
      throw InputError("request '" + request.name + "' is not one a processing rank answers");
    }
    answer.ok = true;
  } catch (const std::exception& e) {
    answer.ok = false;
    answer.result = json::object();
    answer.error = e.what();
  }
  return answer;
}

}  // namespace livedrp::mpi
