// An MPI run's control requests without processes (engine/mpi/control_fanout, answer_merge,
// rank_requests): a request that is wrong is refused on the collector and queues nothing for
// the ranks; a valid one waits for the MPI thread's answer and then changes the configuration in
// force; the end of the run answers every request still waiting; the ranks' answers merge as one
// engine's reply would read (sums, frames in sequence order, the newest hit by pulse id); a rank
// that refused makes the reply an error naming it and where the change took effect; requests and
// answers survive their encoding. test_mpi_control runs them over real ranks. Skipped (QSKIP)
// when the build has no MPI.
#include <QtTest>

#include <future>

#ifdef LIVEDRP_TEST_HAVE_MPI
#include "core/error.hpp"
#include "mpi/answer_merge.hpp"
#include "mpi/control_fanout.hpp"
#include "mpi/rank_requests.hpp"
#include "peaks/peak_params.hpp"
#endif

#ifdef LIVEDRP_TEST_HAVE_MPI
using namespace livedrp;
using namespace livedrp::mpi;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

EngineConfig peak_config() {
  EngineConfig c;
  c.source = "sim:epix10ka2m";
  c.peak_finding.enabled = true;
  c.peak_finding.recent_frames = 4;
  return c;
}

// Waits until the control thread's request is queued and returns it.
ControlFanOut::Job next_job(ControlFanOut& fanout) {
  for (;;) {
    std::deque<ControlFanOut::Job> jobs = fanout.take_jobs();
    if (!jobs.empty()) return jobs.front();
    std::this_thread::sleep_for(1ms);
  }
}

RankAnswer rerun_answer(int rank, std::vector<std::uint64_t> sequences,
                        std::vector<std::uint64_t> found, std::uint64_t hits,
                        std::optional<std::uint64_t> newest_hit_pulse) {
  RankAnswer a;
  a.rank = rank;
  a.ok = true;
  std::vector<std::uint64_t> pulses;
  for (std::uint64_t s : sequences) pulses.push_back(1000 + s);
  a.result = {{"frames", sequences.size()}, {"hits", hits},        {"peaks_per_frame", found},
              {"sequences", sequences},     {"pulse_ids", pulses}, {"params_version", 2}};
  if (newest_hit_pulse) {
    protocol::EventPeaks hit;
    hit.pulse_id = *newest_hit_pulse;
    hit.sequence = *newest_hit_pulse - 1000;
    hit.found = 3;
    hit.hit = true;
    hit.rerun = true;
    hit.params_version = 2;
    hit.min_peaks_for_hit = 1;
    hit.peaks.resize(3);
    for (protocol::PeakRow& row : hit.peaks) row.num_pixels = 2;
    a.newest_hit = hit;
  }
  return a;
}

}  // namespace
#endif

class TestMpiFanout : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
#ifndef LIVEDRP_TEST_HAVE_MPI
    QSKIP(
        "this build has no MPI run: CMake found no MPI library (install libopenmpi-dev, or "
        "MPICH, and configure again)");
#endif
  }

#ifdef LIVEDRP_TEST_HAVE_MPI
  void a_wrong_request_is_refused_on_the_collector_and_reaches_no_rank() {
    ControlFanOut fanout(peak_config(), 3);
    const auto refused = [&](const std::function<void()>& call, const std::string& words) {
      try {
        call();
      } catch (const InputError& e) {
        return std::string(e.what()).find(words) != std::string::npos;
      }
      return false;
    };
    QVERIFY(refused(
        [&] {
          fanout.set_peak_params({{"min_pixel_count", 5}, {"max_pixel_count", 3}});
        },
        "max_pixel_count"));
    QVERIFY(refused(
        [&] {
          fanout.set_peak_params({{"no_such_parameter", 1}});
        },
        "no_such_parameter"));
    QVERIFY(refused([&] { fanout.rerun_peaks(5); }, "frames must be 1..4"));
    QVERIFY(refused([&] { fanout.apply({{"rate_hz", "fast"}}); }, "rate_hz"));
    QVERIFY(refused([&] { fanout.apply({{"no_such_field", 1}}); }, "no_such_field"));
    QVERIFY(refused(
        [&] {
          fanout.apply({{"mpi", {{"collector", "processing"}}}});
        },
        "section 'mpi' cannot change"));
    QVERIFY(refused(
        [&] {
          fanout.apply({{"publish", "tcp://127.0.0.1:6000"}});
        },
        "field 'publish' cannot change"));
    QVERIFY(refused([&] { fanout.replay({"pause"}); }, "several MPI ranks"));
    QVERIFY(fanout.take_jobs().empty());

    EngineConfig off = peak_config();
    off.peak_finding.enabled = false;
    ControlFanOut without(off, 3);
    QVERIFY(refused([&] { without.rerun_peaks(std::nullopt); }, "peak finding is off"));
    QVERIFY(refused(
        [&] {
          without.set_peak_params({{"minimum_snr", 8.0}});
        },
        "peak finding is off"));
    QVERIFY(without.take_jobs().empty());
  }

  void a_valid_change_waits_for_the_ranks_and_then_is_in_force() {
    const EngineConfig config = peak_config();
    ControlFanOut fanout(config, 3);
    auto reply = std::async(std::launch::async, [&] {
      return fanout.set_peak_params({{"minimum_snr", 8.0}});
    });
    const ControlFanOut::Job job = next_job(fanout);
    QCOMPARE(job.name, std::string("set_peak_params"));
    // The ranks get the whole validated set: the change merged onto the parameters in force.
    peaks::PeakFinderParams expected = config.peak_finding.params;
    expected.minimum_snr = 8.0;
    QCOMPARE(job.fields.at("params"), peaks::to_json(expected));
    // Not in force before the ranks have answered.
    QCOMPARE(fanout.get_config().at("config").at("peak_finding").at("params").at("minimum_snr"),
             peaks::to_json(config.peak_finding.params).at("minimum_snr"));
    fanout.complete(job.id, {{"params_version", 2}});
    QCOMPARE(reply.get().at("params_version").get<int>(), 2);
    QCOMPARE(fanout.get_config().at("config").at("peak_finding").at("params").at("minimum_snr"),
             json(8.0));
  }

  void an_apply_goes_to_the_ranks_as_the_whole_configuration_of_the_next_run() {
    EngineConfig config = peak_config();
    config.run = 4;
    config.publish = "tcp://127.0.0.1:5999";  // as bound
    ControlFanOut fanout(config, 3, "tcp://127.0.0.1:*");
    auto reply = std::async(std::launch::async, [&] {
      // "publish" as first asked for is no change.
      return fanout.apply({{"rate_hz", 7.0}, {"publish", "tcp://127.0.0.1:*"}});
    });
    const ControlFanOut::Job job = next_job(fanout);
    QCOMPARE(job.name, std::string("apply"));
    const EngineConfig sent = EngineConfig::from_json(job.fields.at("config"), "test");
    QCOMPARE(sent.rate_hz, 7.0);
    QCOMPARE(sent.run, std::int64_t(5));
    QCOMPARE(sent.publish, config.publish);
    QCOMPARE(sent.peak_finding.recent_frames, 4);  // the rest as in force
    fanout.complete(job.id, {{"ranks", {1, 2}}, {"missing_ranks", json::array()}});
    const json result = reply.get();
    QCOMPARE(result.at("run").get<int>(), 5);
    QCOMPARE(result.at("restarted").get<bool>(), true);
    QCOMPARE(fanout.get_config().at("config").at("rate_hz").get<double>(), 7.0);
  }

  void the_runs_end_answers_every_waiting_request_and_refuses_later_ones() {
    ControlFanOut fanout(peak_config(), 3);
    auto reply = std::async(std::launch::async, [&] { return fanout.rerun_peaks(2); });
    const ControlFanOut::Job job = next_job(fanout);
    QCOMPARE(job.fields.at("frames").get<int>(), 2);
    fanout.close("the MPI run is ending");
    QVERIFY_THROWS_EXCEPTION(RuntimeFault, reply.get());
    try {
      fanout.stop();
      QFAIL("a request after the end was taken");
    } catch (const RuntimeFault& e) {
      QCOMPARE(std::string(e.what()), std::string("the MPI run is ending"));
    }
  }

  void reruns_merge_in_sequence_order_with_the_newest_hit_by_pulse_id() {
    const std::vector<RankAnswer> answers = {
        rerun_answer(1, {0, 2, 4}, {3, 0, 5}, 2, 1004),
        rerun_answer(2, {1, 3}, {4, 1}, 1, 1001),
    };
    std::optional<protocol::EventPeaks> newest;
    const json merged = merge_rerun_answers(answers, {3}, newest);
    QCOMPARE(merged.at("frames").get<int>(), 5);
    QCOMPARE(merged.at("hits").get<int>(), 3);
    QCOMPARE(merged.at("peaks").get<int>(), 13);
    QCOMPARE(merged.at("sequences"), json::array({0, 1, 2, 3, 4}));
    QCOMPARE(merged.at("pulse_ids"), json::array({1000, 1001, 1002, 1003, 1004}));
    QCOMPARE(merged.at("peaks_per_frame"), json::array({3, 4, 0, 1, 5}));
    QCOMPARE(merged.at("params_version").get<int>(), 2);
    QCOMPARE(merged.at("newest_hit").at("rank").get<int>(), 1);
    QCOMPARE(merged.at("newest_hit").at("pulse_id").get<int>(), 1004);
    QCOMPARE(merged.at("missing_ranks"), json::array({3}));
    QVERIFY(newest.has_value());
    QCOMPARE(newest->pulse_id, std::uint64_t(1004));
  }

  void a_rank_that_refused_makes_the_reply_an_error_naming_it() {
    RankAnswer ok;
    ok.rank = 1;
    ok.ok = true;
    ok.result = {{"params_version", 2}};
    RankAnswer refused;
    refused.rank = 2;
    refused.error = "the engine thread did not take the request";
    try {
      merge_peak_params_answers(json::object(), {ok, refused}, {3});
      QFAIL("merged in spite of a refusal");
    } catch (const RuntimeFault& e) {
      const std::string text = e.what();
      QVERIFY2(
          text.find("rank 2: the engine thread did not take the request") != std::string::npos &&
              text.find("took effect on ranks 1") != std::string::npos &&
              text.find("ranks 3 did not answer") != std::string::npos,
          text.c_str());
    }
    const json merged = merge_peak_params_answers(json::object(), {ok}, {2});
    QCOMPARE(merged.at("params_version").get<int>(), 2);
    QCOMPARE(merged.at("missing_ranks"), json::array({2}));
  }

  void requests_and_answers_survive_their_encoding() {
    const RankRequest request{7, "rerun_peaks", {{"frames", 3}}};
    const RankRequest back = decode_request(encode_request(request));
    QCOMPARE(back.id, request.id);
    QCOMPARE(back.name, request.name);
    QCOMPARE(back.fields, request.fields);
    RankAnswer answer = rerun_answer(2, {1, 3}, {4, 1}, 1, 1003);
    answer.id = 7;
    const RankAnswer decoded = decode_answer(encode_answer(answer), 2);
    QCOMPARE(decoded.id, answer.id);
    QCOMPARE(decoded.result, answer.result);
    QVERIFY(decoded.newest_hit.has_value());
    QCOMPARE(decoded.newest_hit->pulse_id, std::uint64_t(1003));
    QCOMPARE(decoded.newest_hit->peaks.size(), std::size_t(3));
    QVERIFY_THROWS_EXCEPTION(RuntimeFault, decode_answer(encode_answer(answer), 1));
    QVERIFY_THROWS_EXCEPTION(RuntimeFault, decode_request({1, 2, 3}));
  }
#endif
};

QTEST_GUILESS_MAIN(TestMpiFanout)
#include "test_mpi_fanout.moc"
