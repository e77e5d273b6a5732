// The `log` topic: the engine process's warnings and errors reach subscribers, rate-limited, with
// an exact account of what the limit held back; texts are made valid UTF-8 and bounded; a
// subscriber refuses malformed entries with a reason.
#include <QtTest>

#include <chrono>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "protocol/log_topic.hpp"
#include "protocol/subscriber.hpp"
#include "publish/log_forwarder.hpp"
#include "publish/publisher.hpp"

using namespace std::chrono_literals;
using namespace livedrp;
using namespace livedrp::protocol;

namespace {

constexpr auto kDeliveryBound = 10s;  // generous for a loaded 2-core CI machine

// Publishes `warm` messages until the subscriber has one: ZeroMQ connects asynchronously.
bool connect_subscriber(Publisher& publisher, Subscriber& subscriber) {
  const auto deadline = std::chrono::steady_clock::now() + kDeliveryBound;
  std::uint64_t sequence = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    Message warm;
    warm.topic = "warm";
    warm.sequence = ++sequence;
    publisher.publish(warm);
    if (auto message = subscriber.receive(20ms); message && message->topic == "warm") {
      while (subscriber.receive(150ms)) {
      }
      return true;
    }
  }
  return false;
}

// Receives `log` entries until their account (1 + suppressed each) reaches `total`.
std::vector<LogEntry> receive_entries(Subscriber& subscriber, std::uint64_t total) {
  std::vector<LogEntry> entries;
  std::uint64_t accounted = 0;
  const auto deadline = std::chrono::steady_clock::now() + kDeliveryBound;
  while (accounted < total && std::chrono::steady_clock::now() < deadline) {
    auto message = subscriber.receive(100ms);
    if (!message || message->topic != kTopicLog) continue;
    entries.push_back(log_entry_from_message(*message));
    accounted += 1 + entries.back().suppressed;
  }
  return entries;
}

}  // namespace

class TestLogTopic : public QObject {
  Q_OBJECT

 private slots:
  void warnings_and_errors_arrive_in_order_with_their_levels() {
    Publisher publisher("tcp://127.0.0.1:*");
    Subscriber subscriber(publisher.endpoint(), {std::string(kTopicLog), "warm"});
    QVERIFY(connect_subscriber(publisher, subscriber));
    publisher.forward_log();
    spdlog::info("not forwarded: below warning");
    spdlog::warn("ring nearly full: {} of {} slots", 30, 32);
    spdlog::error("backend fault on lane {}", 3);
    spdlog::critical("device lost");
    const std::vector<LogEntry> entries = receive_entries(subscriber, 3);
    QCOMPARE(entries.size(), std::size_t(3));
    QCOMPARE(entries[0].level, LogLevel::Warning);
    QCOMPARE(entries[0].text, std::string("ring nearly full: 30 of 32 slots"));
    QCOMPARE(entries[1].level, LogLevel::Error);
    QCOMPARE(entries[1].text, std::string("backend fault on lane 3"));
    QCOMPARE(entries[2].level, LogLevel::Critical);
    for (std::size_t k = 0; k < entries.size(); ++k) {
      QCOMPARE(entries[k].index, std::uint64_t(k + 1));
      QCOMPARE(entries[k].suppressed, std::uint64_t(0));
      QVERIFY(entries[k].time_ns > 1'700'000'000'000'000'000);  // a wall-clock time of this era
    }
  }

  void the_rate_limit_accounts_for_every_entry_it_holds_back() {
    Publisher publisher("tcp://127.0.0.1:*");
    Subscriber subscriber(publisher.endpoint(), {std::string(kTopicLog), "warm"});
    QVERIFY(connect_subscriber(publisher, subscriber));
    // A burst of 5 and practically no refill: the first 5 of 50 go out, 45 are held back.
    publisher.forward_log({1e-6, 5});
    constexpr int kLogged = 50;
    for (int k = 0; k < kLogged; ++k) spdlog::warn("repeated fault {}", k);
    // Ending the forwarder (a new one replaces it) sends the account of what was held back.
    publisher.forward_log({1e-6, 5});
    const std::vector<LogEntry> entries = receive_entries(subscriber, kLogged + 1);
    QCOMPARE(entries.size(), std::size_t(6));
    for (int k = 0; k < 5; ++k) {
      QCOMPARE(entries[std::size_t(k)].text, "repeated fault " + std::to_string(k));
      QCOMPARE(entries[std::size_t(k)].suppressed, std::uint64_t(0));
    }
    const LogEntry& last = entries.back();
    QCOMPARE(last.suppressed, std::uint64_t(45));
    QCOMPARE(last.index, std::uint64_t(kLogged + 1));
    QVERIFY2(last.text.find("45 more warnings and errors were held back") != std::string::npos,
             last.text.c_str());
  }

  void texts_are_made_valid_and_bounded() {
    QCOMPARE(loggable_text("plain"), std::string("plain"));
    QCOMPARE(loggable_text("\xC3\xA9t\xC3\xA9"), std::string("\xC3\xA9t\xC3\xA9"));  // "été"
    // A stray continuation byte, an overlong form, a surrogate and a cut sequence: U+FFFD each.
    QCOMPARE(loggable_text("a\x80"
                           "b"),
             std::string("a\xEF\xBF\xBD"
                         "b"));
    QCOMPARE(loggable_text("\xC0\xAF"), std::string("\xEF\xBF\xBD\xEF\xBF\xBD"));
    QCOMPARE(loggable_text("\xED\xA0\x80"), std::string("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"));
    QCOMPARE(loggable_text("x\xE2\x82"), std::string("x\xEF\xBF\xBD\xEF\xBF\xBD"));
    const std::string long_text(10'000, 'z');
    const std::string cut = loggable_text(long_text);
    QCOMPARE(cut.size(), kMaxLogTextBytes);
    QCOMPARE(cut.substr(cut.size() - 3), std::string("..."));
    // A text of exactly the limit stays whole.
    QCOMPARE(loggable_text(std::string(kMaxLogTextBytes, 'y')).size(), kMaxLogTextBytes);
  }

  void malformed_entries_are_refused_with_the_reason() {
    LogEntry entry;
    entry.text = "fine";
    entry.index = 3;
    entry.suppressed = 2;
    const Message good = make_log_message(entry);
    QCOMPARE(log_entry_from_message(good).suppressed, std::uint64_t(2));
    QCOMPARE(good.sequence, std::uint64_t(3));

    const auto refusal = [](Message message) -> std::string {
      try {
        log_entry_from_message(message);
      } catch (const ProtocolError& error) {
        return error.what();
      }
      return "accepted";
    };
    Message bad = good;
    bad.payload["level"] = "debug";
    QVERIFY(refusal(bad).find("level 'debug' is not one of") != std::string::npos);
    bad = good;
    bad.payload["suppressed"] = 3;
    QVERIFY(refusal(bad).find("suppressed 3 is not below index 3") != std::string::npos);
    bad = good;
    bad.payload["index"] = 0;
    QVERIFY(refusal(bad).find("index is 0") != std::string::npos);
    bad = good;
    bad.payload["text"] = "";
    QVERIFY(refusal(bad).find("text is empty") != std::string::npos);
    bad = good;
    bad.payload["text"] = 12;
    QVERIFY(refusal(bad).find("text") != std::string::npos);
    bad = good;
    bad.payload.erase("logger");
    QVERIFY(refusal(bad).find("logger") != std::string::npos);

    QVERIFY_THROWS_EXCEPTION(InputError, LogForwarder([](const Message&) {}, {0.0, 5}));
    QVERIFY_THROWS_EXCEPTION(InputError, LogForwarder([](const Message&) {}, {1.0, 0}));
  }

  void a_send_that_fails_is_counted_not_lost() {
    int calls = 0;
    std::vector<LogEntry> delivered;
    {
      LogForwarder forwarder(
          [&](const Message& message) {
            if (++calls == 1) throw std::runtime_error("socket gone");
            delivered.push_back(log_entry_from_message(message));
          },
          {1e6, 1000});
      spdlog::warn("first, whose send fails");
      spdlog::warn("second");
      QCOMPARE(forwarder.logged(), std::uint64_t(2));
      QCOMPARE(forwarder.sent(), std::uint64_t(1));
    }
    QCOMPARE(delivered.size(), std::size_t(1));
    QCOMPARE(delivered[0].text, std::string("second"));
    QCOMPARE(delivered[0].suppressed, std::uint64_t(1));  // the first, not delivered
    QCOMPARE(delivered[0].index, std::uint64_t(2));
  }
};

QTEST_GUILESS_MAIN(TestLogTopic)
#include "test_log_topic.moc"
