// The doorbell ring: order, a full ring refuses events, re-arming frees slots, and a producer and
// a consumer on two threads pass every event intact and in order.
#include <QtTest>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "ring/doorbell_ring.hpp"

using namespace livedrp;

namespace {
DoorbellRing make_ring(std::size_t slot_count, std::size_t bytes) {
  return DoorbellRing(
      slot_count, bytes, [](std::size_t n) { return ::operator new(n); },
      [](void* p) { ::operator delete(p); });
}
}  // namespace

class TestRing : public QObject {
  Q_OBJECT
 private slots:
  void empty_ring_has_nothing_for_the_consumer() {
    auto ring = make_ring(4, 16);
    QCOMPARE(ring.consumer_peek(), -1);
    QCOMPARE(ring.occupancy(), std::size_t(0));
    QCOMPARE(ring.producer_claim(), 0);
  }

  void full_ring_refuses_until_a_slot_is_rearmed() {
    auto ring = make_ring(3, 8);
    for (int i = 0; i < 3; ++i) {
      const int slot = ring.producer_claim();
      QCOMPARE(slot, i);
      ring.slot_header(slot).sequence = std::uint64_t(i);
      ring.ring_doorbell(slot);
    }
    QCOMPARE(ring.occupancy(), std::size_t(3));
    QCOMPARE(ring.producer_claim(), -1);  // full: the producer must drop
    const int first = ring.consumer_peek();
    QCOMPARE(first, 0);
    ring.consumer_advance();
    QCOMPARE(ring.producer_claim(), -1);  // taken but not re-armed: still not free
    ring.rearm(first);
    QCOMPARE(ring.producer_claim(), 0);
    QCOMPARE(ring.occupancy(), std::size_t(2));
  }

  // A consumer that holds every slot's event (a backend with more launches in flight than the
  // ring has slots) must not see the oldest one's doorbell, still set, as a new event: taking it
  // again processed that event twice, and its re-arm then cleared the doorbell of the event the
  // producer had put in the slot meanwhile, which was lost (seen on the GPU with 16 lanes).
  void a_slot_taken_and_not_rearmed_is_never_offered_again() {
    auto ring = make_ring(3, 8);
    std::vector<int> taken;
    for (int i = 0; i < 3; ++i) {
      const int slot = ring.producer_claim();
      ring.slot_header(slot).sequence = std::uint64_t(i);
      ring.ring_doorbell(slot);
      QCOMPARE(ring.consumer_peek(), slot);
      ring.consumer_advance();
      taken.push_back(slot);
    }
    QCOMPARE(ring.consumer_peek(), -1);  // slot 0 still holds event 0, already taken
    ring.rearm(taken[0]);
    QCOMPARE(ring.consumer_peek(), -1);  // re-armed, nothing new in it yet
    const int slot = ring.producer_claim();
    QCOMPARE(slot, 0);
    ring.slot_header(slot).sequence = 3;
    ring.ring_doorbell(slot);
    QCOMPARE(ring.consumer_peek(), 0);
    QCOMPARE(ring.slot_header(0).sequence, std::uint64_t(3));
    ring.consumer_advance();
    // The others are re-armed in the order taken; the new event's doorbell stays until its own.
    ring.rearm(taken[1]);
    ring.rearm(taken[2]);
    QCOMPARE(ring.occupancy(), std::size_t(1));
    QCOMPARE(ring.producer_claim(), 1);
  }

  void consumer_sees_events_in_production_order() {
    auto ring = make_ring(4, 8);
    std::uint64_t next = 0;
    for (int round = 0; round < 10; ++round) {
      for (int i = 0; i < 3; ++i) {
        const int slot = ring.producer_claim();
        QVERIFY(slot >= 0);
        ring.slot_header(slot).sequence = next++;
        ring.ring_doorbell(slot);
      }
      for (int i = 0; i < 3; ++i) {
        const int slot = ring.consumer_peek();
        QVERIFY(slot >= 0);
        QCOMPARE(ring.slot_header(slot).sequence, next - 3 + std::uint64_t(i));
        ring.consumer_advance();
        ring.rearm(slot);
      }
    }
  }

  void consumer_wait_times_out_on_an_idle_ring() {
    auto ring = make_ring(2, 8);
    QElapsedTimer timer;
    timer.start();
    QCOMPARE(ring.consumer_wait(std::chrono::milliseconds(20), [] { return true; }), -1);
    QVERIFY(timer.elapsed() >= 19);
    QCOMPARE(ring.consumer_wait(std::chrono::seconds(10), [] { return false; }), -1);
  }

  // Two threads, 200000 events through 8 slots: each event's payload is checked against its
  // sequence, so a doorbell seen before the data would show up as a mismatch.
  void producer_and_consumer_threads_pass_every_event_intact() {
    constexpr std::uint64_t kEvents = 200000;
    constexpr std::size_t kWords = 64;
    auto ring = make_ring(8, kWords * sizeof(std::uint64_t));
    std::uint64_t dropped = 0;
    std::thread producer([&] {
      for (std::uint64_t i = 0; i < kEvents; ++i) {
        int slot;
        while ((slot = ring.producer_claim()) < 0) std::this_thread::yield();
        auto* words = static_cast<std::uint64_t*>(ring.slot_data(slot));
        for (std::size_t w = 0; w < kWords; ++w) words[w] = i * 1000 + w;
        ring.slot_header(slot).sequence = i;
        ring.ring_doorbell(slot);
      }
    });
    std::uint64_t received = 0, mismatches = 0;
    while (received < kEvents) {
      const int slot = ring.consumer_wait(std::chrono::seconds(5), [] { return true; });
      if (slot < 0) break;
      const auto* words = static_cast<const std::uint64_t*>(ring.slot_data(slot));
      if (ring.slot_header(slot).sequence != received) ++mismatches;
      for (std::size_t w = 0; w < kWords; ++w)
        if (words[w] != received * 1000 + w) ++mismatches;
      ring.consumer_advance();
      ring.rearm(slot);
      ++received;
    }
    producer.join();
    QCOMPARE(received, kEvents);
    QCOMPARE(mismatches, std::uint64_t(0));
    QCOMPARE(dropped, std::uint64_t(0));
    QCOMPARE(ring.occupancy(), std::size_t(0));
  }

  void a_lent_buffer_is_shown_and_only_the_rings_own_buffers_are_freed() {
    std::vector<void*> allocated, freed;
    const unsigned char lent[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    void* handed_back = nullptr;
    void* replacement = ::operator new(8);
    {
      DoorbellRing ring(
          2, 8,
          [&](std::size_t n) {
            allocated.push_back(::operator new(n));
            return allocated.back();
          },
          [&](void* p) {
            freed.push_back(p);
            ::operator delete(p);
          });
      const int slot = ring.producer_claim();
      ring.lend_slot_data(slot, lent);
      ring.ring_doorbell(slot);
      const int taken = ring.consumer_peek();
      QCOMPARE(taken, slot);
      QVERIFY(ring.slot_data(taken) == static_cast<const void*>(lent));
      QCOMPARE(std::memcmp(ring.slot_data(taken), lent, sizeof lent), 0);
      ring.consumer_advance();
      ring.rearm(taken);
      // Exchanging a slot that shows a lent buffer hands back the ring's own one, never the lent.
      ring.producer_claim();
      ring.producer_claim();  // the same slot until the doorbell rings
      handed_back = ring.exchange_slot_data(slot, replacement);
      QVERIFY(handed_back == allocated[std::size_t(slot)]);
      QVERIFY(ring.slot_data(slot) == replacement);
    }
    // The replacement and the other slot's own buffer are freed; the lent one never is.
    QCOMPARE(freed.size(), std::size_t(2));
    QVERIFY(std::find(freed.begin(), freed.end(), replacement) != freed.end());
    QVERIFY(std::find(freed.begin(), freed.end(), static_cast<const void*>(lent)) == freed.end());
    ::operator delete(handed_back);
  }

  void zero_slots_is_an_error() { QVERIFY_THROWS_EXCEPTION(std::exception, make_ring(0, 8)); }
};

QTEST_GUILESS_MAIN(TestRing)
#include "test_ring.moc"
