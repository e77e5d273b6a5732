// Publisher and Subscriber over real ZeroMQ sockets: delivery, late joiners, bad endpoints,
// malformed input and concurrent publishing. Every wait is bounded; every port is picked by the OS.
#include <QtTest/QtTest>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "core/error.hpp"
#include "protocol/message.hpp"
#include "protocol/subscriber.hpp"
#include "protocol/topics.hpp"
#include "publish/publisher.hpp"

using namespace std::chrono_literals;
using livedrp::InputError;
using livedrp::Publisher;
using namespace livedrp::protocol;

namespace {

// Generous bounds for a loaded 2-core CI machine; a passing run takes a small fraction of them.
constexpr auto kDeliveryBound = 5s;
// After the first warm-up message arrives, this much silence means the rest have arrived too.
constexpr auto kQuietAfterWarmUp = 150ms;

constexpr const char* kAnyFreeLocalPort = "tcp://127.0.0.1:*";

// A message of `topic` that test assertions never look at: ZeroMQ connects asynchronously, so each
// test first publishes these until the subscriber sees one, then drains the stragglers.
Message warm_up_message(const std::string& topic, std::uint64_t sequence) {
  Message message;
  message.topic = topic;
  message.sequence = sequence;
  message.payload = {{"warm_up", true}};
  return message;
}

bool wait_until_connected(Publisher& publisher, Subscriber& subscriber, const std::string& topic) {
  const auto deadline = std::chrono::steady_clock::now() + kDeliveryBound;
  std::uint64_t sequence = 0;
  bool connected = false;
  while (!connected && std::chrono::steady_clock::now() < deadline) {
    publisher.publish(warm_up_message(topic, ++sequence));
    connected = subscriber.receive(20ms).has_value();
  }
  if (!connected) return false;
  while (subscriber.receive(kQuietAfterWarmUp)) {
  }
  return true;
}

std::optional<Message> receive_topic(Subscriber& subscriber, const std::string& topic,
                                     std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (true) {
    const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (remaining <= 0ms) return std::nullopt;
    auto message = subscriber.receive(remaining);
    if (message && message->topic == topic) return message;
  }
}

StatsPayload stats_numbered(std::uint64_t number) {
  StatsPayload stats;
  stats.events_in = number * 10;
  stats.events_processed = number * 10 - 1;
  stats.events_dropped = 1;
  stats.drops_by_reason = {{"ring_full", 1}};
  stats.elapsed_s = 0.25 * static_cast<double>(number);
  stats.event_rate_hz = 1000.0 + static_cast<double>(number);
  stats.backend = "cpu";
  stats.device = "CPU (2 threads)";
  stats.stages = {{"calibrate", 1.5, 3.0, 12.0}};
  return stats;
}

StatusPayload status_in_state(const std::string& state) {
  StatusPayload status;
  status.state = state;
  status.message = "state " + state;
  status.source = "sim:epix10ka2m";
  status.detector = "epix10ka2m";
  status.backend = "cpu";
  status.device = "CPU (2 threads)";
  return status;
}

// A uint32 frame whose every element is derived from `sequence`, so a mixed-up frame shows.
Frame frame_for(std::uint64_t sequence) {
  constexpr std::size_t kElements = 16;
  Frame frame;
  frame.dtype = DType::UInt32;
  frame.shape = {kElements};
  frame.data.resize(kElements * sizeof(std::uint32_t));
  for (std::size_t index = 0; index < kElements; ++index) {
    const auto value = static_cast<std::uint32_t>(sequence * 100 + index);
    std::memcpy(frame.data.data() + index * sizeof value, &value, sizeof value);
  }
  return frame;
}

}  // namespace

class TestPublisher : public QObject {
  Q_OBJECT

 private slots:
  void bindingAnyFreePortReportsTheRealPort() {
    Publisher publisher(kAnyFreeLocalPort);
    const QString endpoint = QString::fromStdString(publisher.endpoint());
    QVERIFY2(endpoint.startsWith("tcp://127.0.0.1:"), qPrintable(endpoint));
    bool is_number = false;
    const int port = endpoint.section(':', -1).toInt(&is_number);
    QVERIFY2(is_number && port > 0 && port < 65536, qPrintable(endpoint));
  }

  void subscriberReceivesPublishedStatsWithEqualContent() {
    Publisher publisher(kAnyFreeLocalPort);
    Subscriber subscriber(publisher.endpoint(), {std::string(kTopicStats)});
    QVERIFY(wait_until_connected(publisher, subscriber, std::string(kTopicStats)));

    constexpr std::uint64_t kCount = 5;
    std::vector<Message> sent;
    for (std::uint64_t number = 1; number <= kCount; ++number) {
      Message message = make_stats_message(stats_numbered(number));
      message.run = 4;
      message.sequence = 1000 + number;
      message.pulse_id = 50000 + number;
      message.frames = {frame_for(number)};
      publisher.publish(message);
      sent.push_back(std::move(message));
    }

    for (const Message& expected : sent) {
      const auto received = subscriber.receive(kDeliveryBound);
      QVERIFY(received.has_value());
      QCOMPARE(received->topic, expected.topic);
      QCOMPARE(received->run, expected.run);
      QCOMPARE(received->sequence, expected.sequence);
      QCOMPARE(received->pulse_id, expected.pulse_id);
      QCOMPARE(received->time_ns, expected.time_ns);
      QCOMPARE(received->payload, expected.payload);
      QCOMPARE(received->frames.size(), std::size_t{1});
      QCOMPARE(received->frames[0].data, expected.frames[0].data);
      const StatsPayload stats = stats_from_json(received->payload);
      QCOMPARE(stats.events_in, (expected.sequence - 1000) * 10);
    }
    QCOMPARE(subscriber.malformed_count(), std::uint64_t{0});
  }

  void lateJoinerReceivesTheLastStatusAtOnce() {
    Publisher publisher(kAnyFreeLocalPort);
    // An early subscriber proves the status messages have left before the late one connects, and
    // its subscription to "status" makes the late one's a repeat, which only XPUB_VERBOSE reports.
    Subscriber early(publisher.endpoint(), {std::string(kTopicStatus)});
    QVERIFY(wait_until_connected(publisher, early, std::string(kTopicStatus)));

    publisher.publish(make_status_message(status_in_state("starting")));
    Message running = make_status_message(status_in_state("running"));
    running.sequence = 77;
    publisher.publish(running);
    for (const char* state : {"starting", "running"}) {
      const auto seen = early.receive(kDeliveryBound);
      QVERIFY(seen.has_value());
      QCOMPARE(status_from_json(seen->payload).state, std::string(state));
    }

    const auto joined_at = std::chrono::steady_clock::now();
    Subscriber late(publisher.endpoint(), {std::string(kTopicStatus)});
    const auto first = late.receive(kDeliveryBound);
    QVERIFY(first.has_value());
    QVERIFY(std::chrono::steady_clock::now() - joined_at < kDeliveryBound);
    QCOMPARE(first->sequence, running.sequence);
    QCOMPARE(first->time_ns, running.time_ns);
    QCOMPARE(status_from_json(first->payload).state, std::string("running"));
  }

  void existingSubscriberDoesNotSeeTheReplayForALateJoiner() {
    Publisher publisher(kAnyFreeLocalPort);
    Subscriber early(publisher.endpoint(), {std::string(kTopicStatus)});
    QVERIFY(wait_until_connected(publisher, early, std::string(kTopicStatus)));
    publisher.publish(make_status_message(status_in_state("running")));
    QVERIFY(early.receive(kDeliveryBound).has_value());

    Subscriber late(publisher.endpoint(), {std::string(kTopicStatus)});
    QVERIFY(late.receive(kDeliveryBound).has_value());  // the replay reached every subscriber...
    QVERIFY(!early.receive(200ms).has_value());         // ...and the early one skipped its copy
  }

  // A client subscribing thousands of times (each a notice XPUB passes up) must not make the
  // publisher replay its cache thousands of times to every viewer: replays are coalesced, a few
  // a second at most. Before, 3,000 notices gave the viewer 3,000 copies of the status.
  void aSubscriptionFloodDoesNotFloodOtherViewers() {
    Publisher publisher(kAnyFreeLocalPort);
    zmq::socket_t viewer(shared_zmq_context(), zmq::socket_type::sub);
    viewer.set(zmq::sockopt::subscribe, std::string(kTopicStatus));
    viewer.connect(publisher.endpoint());
    Message status = make_status_message(status_in_state("running"));
    status.sequence = 5;
    // Until the viewer is connected: each status it gets is one published or one replayed.
    bool connected = false;
    const auto deadline = std::chrono::steady_clock::now() + kDeliveryBound;
    zmq::message_t part;
    while (!connected && std::chrono::steady_clock::now() < deadline) {
      publisher.publish(status);
      connected = viewer.recv(part, zmq::recv_flags::dontwait).has_value();
      if (!connected) std::this_thread::sleep_for(20ms);
    }
    QVERIFY(connected);
    auto copies_until_quiet = [&] {
      int copies = 0;
      viewer.set(zmq::sockopt::rcvtimeo, 1000);
      while (viewer.recv(part).has_value()) {
        ++copies;  // a message's first part; the rest are drained
        while (part.more() && viewer.recv(part).has_value()) {
        }
      }
      return copies;
    };
    copies_until_quiet();  // the warm-up's stragglers

    constexpr int kNotices = 3000;
    zmq::socket_t flooder(shared_zmq_context(), zmq::socket_type::sub);
    flooder.connect(publisher.endpoint());
    for (int k = 0; k < kNotices; ++k) flooder.set(zmq::sockopt::subscribe, std::string("s"));
    // The flooder itself is a subscriber of "status" now: it gets the status within the period.
    flooder.set(zmq::sockopt::rcvtimeo, int(std::chrono::milliseconds(kDeliveryBound).count()));
    QVERIFY(flooder.recv(part).has_value());
    const int copies = copies_until_quiet();
    QVERIFY2(
        copies >= 1 && copies < 50,
        qPrintable(QString("the viewer got %1 copies for %2 notices").arg(copies).arg(kNotices)));
  }

  void subscriberReceivesOnlyTheTopicsItNamed() {
    Publisher publisher(kAnyFreeLocalPort);
    // "stats_extra" shares the prefix "stats": ZeroMQ would let it through, the subscriber must
    // not.
    Message extra = warm_up_message("stats_extra", 1);
    publisher.publish(extra);
    publisher.publish(make_status_message(status_in_state("running")));
    Message stats = make_stats_message(stats_numbered(3));
    stats.sequence = 3;
    publisher.publish(stats);

    Subscriber subscriber(publisher.endpoint(), {std::string(kTopicStats)});
    const auto first = subscriber.receive(kDeliveryBound);
    QVERIFY(first.has_value());
    QCOMPARE(first->topic, std::string(kTopicStats));
    QCOMPARE(first->sequence, stats.sequence);
    QVERIFY(!subscriber.receive(200ms).has_value());
  }

  void bindingABadEndpointThrowsInputErrorNamingIt_data() {
    QTest::addColumn<QString>("endpoint");
    QTest::newRow("no port") << "tcp://127.0.0.1";
    QTest::newRow("unknown transport") << "carrier-pigeon://loft";
    QTest::newRow("not an endpoint") << "localhost:5555";
    QTest::newRow("host not local") << "tcp://192.0.2.1:5555";  // TEST-NET-1, never local
  }

  void bindingABadEndpointThrowsInputErrorNamingIt() {
    QFETCH(QString, endpoint);
    try {
      Publisher publisher(endpoint.toStdString());
      QFAIL(qPrintable("bound " + endpoint));
    } catch (const InputError& error) {
      const QString text = QString::fromUtf8(error.what());
      const QString prefix = "cannot bind publisher to '" + endpoint + "': ";
      QVERIFY2(text.startsWith(prefix), error.what());
      QVERIFY2(text.size() > prefix.size(), "ZeroMQ's reason is missing");
    }
  }

  void bindingAnAddressInUseThrowsInputError() {
    Publisher first(kAnyFreeLocalPort);
    try {
      Publisher second(first.endpoint());
      QFAIL("two publishers bound one port");
    } catch (const InputError& error) {
      const QString text = QString::fromUtf8(error.what());
      QVERIFY2(text.contains(QString::fromStdString(first.endpoint())), error.what());
      QVERIFY2(text.contains("in use", Qt::CaseInsensitive), error.what());
    }
  }

  void subscriberToABadEndpointThrowsProtocolErrorNamingIt() {
    try {
      Subscriber subscriber("carrier-pigeon://loft");
      QFAIL("connected to an unknown transport");
    } catch (const ProtocolError& error) {
      QVERIFY2(QString::fromUtf8(error.what())
                   .startsWith("cannot connect subscriber to 'carrier-pigeon://loft': "),
               error.what());
    }
  }

  void subscriberCountsMalformedMessagesAndKeepsReceiving() {
    // A foreign publisher that sends garbage before each valid message.
    zmq::socket_t rogue(shared_zmq_context(), zmq::socket_type::pub);
    rogue.set(zmq::sockopt::linger, 0);
    rogue.bind(kAnyFreeLocalPort);
    Subscriber subscriber(rogue.get(zmq::sockopt::last_endpoint));

    const std::vector<std::string> valid = encode(make_status_message(status_in_state("idle")));
    const auto deadline = std::chrono::steady_clock::now() + kDeliveryBound;
    std::optional<Message> received;
    while (!received && std::chrono::steady_clock::now() < deadline) {
      rogue.send(zmq::buffer(std::string_view("status")), zmq::send_flags::sndmore);
      rogue.send(zmq::buffer(std::string_view("{not json")), zmq::send_flags::none);
      rogue.send(zmq::buffer(std::string_view("single-part")), zmq::send_flags::none);
      rogue.send(zmq::buffer(valid[0]), zmq::send_flags::sndmore);
      rogue.send(zmq::buffer(valid[1]), zmq::send_flags::none);
      received = subscriber.receive(20ms);
    }
    QVERIFY(received.has_value());
    QCOMPARE(status_from_json(received->payload).state, std::string("idle"));
    // Both bad messages of the round that got through were counted, in order.
    QVERIFY(subscriber.malformed_count() >= 2);
    QVERIFY2(QString::fromStdString(subscriber.last_error()).contains("at least 2"),
             subscriber.last_error().c_str());
  }

  void publishingFromFourThreadsDeliversEveryMessageIntact() {
    Publisher publisher(kAnyFreeLocalPort);
    Subscriber subscriber(publisher.endpoint(), {std::string(kTopicStats)});
    QVERIFY(wait_until_connected(publisher, subscriber, std::string(kTopicStats)));

    // 100 messages in all: below the send high-water mark, so none may be dropped.
    constexpr std::uint64_t kThreads = 4;
    constexpr std::uint64_t kPerThread = 25;
    std::vector<std::thread> threads;
    for (std::uint64_t thread = 0; thread < kThreads; ++thread) {
      threads.emplace_back([&publisher, thread] {
        for (std::uint64_t index = 0; index < kPerThread; ++index) {
          const std::uint64_t sequence = thread * 1000 + index + 1;
          Message message = make_stats_message(stats_numbered(sequence));
          message.sequence = sequence;
          message.frames = {frame_for(sequence)};
          publisher.publish(message);
        }
      });
    }
    for (std::thread& thread : threads) thread.join();

    std::set<std::uint64_t> seen;
    std::map<std::uint64_t, std::uint64_t> last_by_thread;
    while (seen.size() < kThreads * kPerThread) {
      const auto message = subscriber.receive(kDeliveryBound);
      QVERIFY2(message.has_value(), qPrintable(QString("only %1 arrived").arg(seen.size())));
      const std::uint64_t sequence = message->sequence;
      QVERIFY(seen.insert(sequence).second);
      QCOMPARE(stats_from_json(message->payload).events_in, sequence * 10);
      QCOMPARE(message->frames.size(), std::size_t{1});
      QCOMPARE(message->frames[0].data, frame_for(sequence).data);
      // One thread's messages keep their order through the queue.
      const std::uint64_t thread = sequence / 1000;
      QVERIFY(sequence > last_by_thread[thread]);
      last_by_thread[thread] = sequence;
    }
    QCOMPARE(subscriber.malformed_count(), std::uint64_t{0});
    QCOMPARE(publisher.dropped_count(), std::uint64_t{0});
  }

  void inprocEndpointConnectsWithinOneProcess() {
    Publisher publisher("inproc://livedrp-test-publisher");
    QCOMPARE(publisher.endpoint(), std::string("inproc://livedrp-test-publisher"));
    Subscriber subscriber(publisher.endpoint());
    QVERIFY(wait_until_connected(publisher, subscriber, std::string(kTopicStatus)));
    Message status = make_status_message(status_in_state("running"));
    status.sequence = 9;
    publisher.publish(status);
    const auto received = receive_topic(subscriber, std::string(kTopicStatus), 2s);
    QVERIFY(received.has_value());
    QCOMPARE(received->sequence, status.sequence);
  }

  void destroyingThePublisherDoesNotWaitForASubscriberThatStoppedReading() {
    auto publisher = std::make_unique<Publisher>(kAnyFreeLocalPort);
    Subscriber idle(publisher->endpoint());
    QVERIFY(wait_until_connected(*publisher, idle, std::string(kTopicStats)));
    Message big;
    big.topic = "image";
    big.frames = {Frame{DType::Float32, {1024, 1024}, std::vector<std::byte>(4 * 1024 * 1024)}};
    for (int repeat = 0; repeat < 20; ++repeat) publisher->publish(big);

    const auto started = std::chrono::steady_clock::now();
    publisher.reset();
    QVERIFY(std::chrono::steady_clock::now() - started < 1s);
  }
};

QTEST_GUILESS_MAIN(TestPublisher)
#include "test_publisher.moc"
