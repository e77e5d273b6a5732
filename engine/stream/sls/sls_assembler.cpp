#include "stream/sls/sls_assembler.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace livedrp::stream::sls {

SlsAssembler::SlsAssembler(SlsLayout layout, std::vector<std::string> port_names,
                           AssemblerSettings settings, EventBufferPool& pool, Deliver deliver)
    : layout_(std::move(layout)),
      port_names_(std::move(port_names)),
      settings_(settings),
      pool_(pool),
      deliver_(std::move(deliver)),
      port_generation_(port_names_.size(), 0),
      port_position_(port_names_.size(), -1),
      port_last_frame_(port_names_.size(), 0),
      port_last_frame_generation_(port_names_.size(), 0),
      port_has_frame_(port_names_.size(), 0) {
  settings_.max_pending = std::max<std::size_t>(settings_.max_pending, 1);
}

void SlsAssembler::reject(const std::string& reason, const std::string& problem) {
  const std::lock_guard lock(counts_mutex_);
  ++counts_.rejected[reason];
  counts_.last_problem = problem;
}

void SlsAssembler::count_drop(const std::string& reason, const std::string& problem,
                              std::uint64_t events) {
  const std::lock_guard lock(counts_mutex_);
  counts_.dropped[reason] += events;
  counts_.last_problem = problem;
}

void SlsAssembler::note_frame(int port, std::uint64_t frame, std::uint64_t generation) {
  if (generation < frames_generation_) return;  // a late part of an earlier acquisition
  if (generation > frames_generation_) {        // a new acquisition: its numbers start afresh
    frames_generation_ = generation;
    unaccounted_from_.reset();
    frames_begun_.clear();
  }
  const auto p = std::size_t(port);
  port_last_frame_[p] = frame;
  port_last_frame_generation_[p] = generation;
  port_has_frame_[p] = 1;
  if (!unaccounted_from_ || frame >= *unaccounted_from_) frames_begun_.insert(frame);
  // Every port's stream is in frame order: below the lowest of their latest frames, nothing more
  // can come in this acquisition.
  std::uint64_t watermark = ~std::uint64_t(0);
  for (std::size_t q = 0; q < port_last_frame_.size(); ++q) {
    if (!port_has_frame_[q] || port_last_frame_generation_[q] != generation) return;
    watermark = std::min(watermark, port_last_frame_[q]);
  }
  if (!unaccounted_from_) unaccounted_from_ = *frames_begun_.begin();
  if (watermark <= *unaccounted_from_) return;
  std::uint64_t begun = 0;
  for (auto it = frames_begun_.begin(); it != frames_begun_.end() && *it < watermark;) {
    if (*it >= *unaccounted_from_) ++begun;
    it = frames_begun_.erase(it);
  }
  const std::uint64_t missing = (watermark - *unaccounted_from_) - begun;
  if (missing > 0)
    count_drop("missing_frame",
               "frames " + std::to_string(*unaccounted_from_) + " to " +
                   std::to_string(watermark - 1) + ": " + std::to_string(missing) +
                   " of them came from no port while every port sent later ones (lost before "
                   "the streams reached this receiver)",
               missing);
  unaccounted_from_ = watermark;
}

void SlsAssembler::note_problem(const std::string& problem) {
  const std::lock_guard lock(counts_mutex_);
  counts_.last_problem = problem;
}

StreamCounts SlsAssembler::counts() const {
  const std::lock_guard lock(counts_mutex_);
  return counts_;
}

void SlsAssembler::on_message(int port, std::span<const std::span<const std::byte>> parts,
                              Clock::time_point now) {
  {
    const std::lock_guard lock(counts_mutex_);
    ++counts_.messages;
  }
  const std::string& from = port_names_.at(std::size_t(port));
  std::size_t total_bytes = 0;
  for (const auto& part : parts) total_bytes += part.size();
  if (total_bytes > settings_.max_message_bytes) {
    reject("oversized", from + ": message of " + std::to_string(total_bytes) +
                            " bytes, more than the largest accepted (" +
                            std::to_string(settings_.max_message_bytes) + ")");
    return;
  }
  if (parts.empty()) {
    reject("malformed", from + ": message without parts");
    return;
  }

  const std::span<const std::byte> first = parts[0];
  const SlsHeaderResult parsed =
      parse_sls_header(std::string_view(reinterpret_cast<const char*>(first.data()), first.size()));
  if (!parsed.header) {
    reject(parsed.reason, from + ": " + parsed.problem);
    return;
  }
  const SlsHeader& header = *parsed.header;
  if (!header.data) {
    if (parts.size() != 1) {
      reject("malformed", from + ": end-of-acquisition header (data 0) followed by " +
                              std::to_string(parts.size() - 1) + " more part(s)");
      return;
    }
    on_end(port, now);
    return;
  }

  const std::string frame_text = from + ": frame " + std::to_string(header.frame_number) +
                                 ", row " + std::to_string(header.row) + ", column " +
                                 std::to_string(header.column) + ": ";
  if (parts.size() == 1) {
    reject("truncated", frame_text + "the header announces pixels (data 1) but no pixel part came");
    return;
  }
  if (parts.size() > 2) {
    reject("malformed", frame_text + std::to_string(parts.size()) +
                            " parts; an sls frame is a header and one pixel part");
    return;
  }
  const SlsPartCheck check = layout_.place(header, parts[1].size());
  if (!check.place) {
    reject(check.reason, frame_text + check.problem);
    return;
  }
  on_part(port, header, *check.place, parts[1], now);
}

SlsAssembler::PendingMap::iterator SlsAssembler::begin_event(int port, const SlsHeader& header,
                                                             Clock::time_point now) {
  if (live_ >= settings_.max_pending) drop_oldest_waiting(now);
  Pending event;
  event.data = PooledBuffer(pool_, pool_.acquire());
  event.seen.assign(std::size_t(layout_.ports()), 0);
  event.timestamp_ns = epoch_timestamp_ns(header);
  event.deadline = now + settings_.module_timeout;
  event.generation = port_generation_[std::size_t(port)];
  ++live_;
  return pending_.insert_or_assign(header.frame_number, std::move(event)).first;
}

void SlsAssembler::on_part(int port, const SlsHeader& header, const SlsPartPlace& place,
                           std::span<const std::byte> pixels, Clock::time_point now) {
  const auto port_index = std::size_t(port);
  const std::string where =
      port_names_[port_index] + ": frame " + std::to_string(header.frame_number) + ", row " +
      std::to_string(header.row) + ", column " + std::to_string(header.column);
  auto it = pending_.find(header.frame_number);
  if (it != pending_.end() && it->second.seen[std::size_t(place.position)] &&
      it->second.generation < port_generation_[port_index]) {
    // The same frame number again in a later acquisition (the detector's frame numbers were
    // reset): what is left of the earlier one cannot complete any more.
    if (!it->second.dropped())
      drop(it, "cut_by_end",
           where +
               ": the frame number came again in a later acquisition before the earlier "
               "frame was complete",
           now);
    pending_.erase(header.frame_number);
    it = pending_.end();
  }
  if (it == pending_.end()) it = begin_event(port, header, now);
  Pending& event = it->second;

  if (event.seen[std::size_t(place.position)]) {
    reject("wrong_detector", where + ": this position came twice for the frame (ports " +
                                 port_at(place.position) + " and " + port_names_[port_index] +
                                 " report the same module position)");
    return;
  }
  // Parts of one frame belong to one acquisition; a port behind the frame's generation missed an
  // end-of-acquisition message.
  const std::uint64_t generation = std::max(event.generation, port_generation_[port_index]);
  event.generation = generation;
  const bool caught_up = port_generation_[port_index] < generation;
  port_generation_[port_index] = generation;
  port_position_[port_index] = place.position;
  note_frame(port, header.frame_number, generation);
  event.seen[std::size_t(place.position)] = 1;
  ++event.parts_seen;
  if (std::int64_t(generation) > highest_data_generation_) {
    highest_data_generation_ = std::int64_t(generation);
    const std::lock_guard lock(counts_mutex_);
    ++counts_.acquisitions;
  }

  if (event.dropped()) {
    if (event.parts_seen == layout_.ports()) pending_.erase(it);
  } else if (!header.complete_image) {
    drop(it, "incomplete",
         where + ": the receiver missed packets of this part (completeImage 0, " +
             std::to_string(header.packets) + " packets caught)",
         now);
  } else {
    std::byte* const to = event.data.get() + place.byte_offset;
    if (batching_)
      copies_.push_back({to, pixels.data(), pixels.size()});
    else
      std::memcpy(to, pixels.data(), pixels.size());
  }
  if (caught_up) advance_generations(now);
  release_ready();
}

void SlsAssembler::on_end(int port, Clock::time_point now) {
  const auto port_index = std::size_t(port);
  const std::uint64_t ended = port_generation_[port_index]++;
  const int position = port_position_[port_index];
  if (position >= 0) {
    // This port sends nothing more for its acquisition: events of it that lack its part are cut.
    for (auto it = pending_.begin(); it != pending_.end();) {
      const Pending& event = it->second;
      if (!event.dropped() && event.generation <= ended && !event.seen[std::size_t(position)])
        it = drop(it, "cut_by_end",
                  port_names_[port_index] + ": end of acquisition before its part of frame " +
                      std::to_string(it->first) + " came",
                  now);
      else
        ++it;
    }
  }
  advance_generations(now);
  release_ready();
}

void SlsAssembler::advance_generations(Clock::time_point now) {
  const std::uint64_t lowest = *std::min_element(port_generation_.begin(), port_generation_.end());
  if (lowest <= ended_generation_) return;
  // Acquisitions that had data and have now ended on every port.
  const std::int64_t with_data_end =
      std::min<std::int64_t>(std::int64_t(lowest), highest_data_generation_ + 1);
  const std::int64_t newly_ended = with_data_end - std::int64_t(ended_generation_);
  if (newly_ended > 0) {
    const std::lock_guard lock(counts_mutex_);
    counts_.acquisitions_ended += std::uint64_t(newly_ended);
  }
  ended_generation_ = lowest;
  // Every port has ended these events' acquisition: no more parts can come for them.
  // (A complete event still waiting behind an older incomplete one is kept: it goes out when
  // that one is dropped.)
  for (auto it = pending_.begin(); it != pending_.end();) {
    const Pending& event = it->second;
    if (event.generation >= lowest || event.parts_seen == layout_.ports()) {
      ++it;
    } else if (event.dropped()) {
      it = pending_.erase(it);
    } else {
      drop(it, "cut_by_end",
           "frame " + std::to_string(it->first) + ": every port ended the acquisition before " +
               missing_parts(event) + " came",
           now);
      it = pending_.erase(it);  // incomplete, so drop() kept it; no late parts can come
    }
  }
}

SlsAssembler::PendingMap::iterator SlsAssembler::drop(PendingMap::iterator it,
                                                      const std::string& reason,
                                                      const std::string& problem,
                                                      Clock::time_point now) {
  Pending& event = it->second;
  count_drop(reason, problem);
  if (batching_)
    parked_.push_back(std::move(event.data));  // a copy into it may still be pending
  else
    event.data.reset();
  --live_;
  event.deadline = now + settings_.module_timeout;
  if (event.parts_seen == layout_.ports()) return pending_.erase(it);
  return std::next(it);
}

void SlsAssembler::drop_oldest_waiting(Clock::time_point now) {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->second.dropped() || it->second.parts_seen == layout_.ports()) continue;
    drop(it, "missing_module",
         "frame " + std::to_string(it->first) + ": more than " +
             std::to_string(settings_.max_pending) + " events waiting for parts; still missing " +
             missing_parts(it->second),
         now);
    return;
  }
}

void SlsAssembler::expire(Clock::time_point now) {
  bool dropped_any = false;
  for (auto it = pending_.begin(); it != pending_.end();) {
    // A complete event waiting behind an older incomplete one is not late: it goes out as soon as
    // that one is dropped.
    if (it->second.deadline > now || it->second.parts_seen == layout_.ports()) {
      ++it;
    } else if (it->second.dropped()) {
      it = pending_.erase(it);
    } else {
      it = drop(it, "missing_module",
                "frame " + std::to_string(it->first) + ": " + missing_parts(it->second) +
                    " did not come within " + std::to_string(settings_.module_timeout.count()) +
                    " ms",
                now);
      dropped_any = true;
    }
  }
  if (dropped_any) release_ready();
}

SlsAssembler::Clock::time_point SlsAssembler::next_deadline() const {
  Clock::time_point earliest = Clock::time_point::max();
  for (const auto& [frame, event] : pending_)
    if (event.parts_seen < layout_.ports()) earliest = std::min(earliest, event.deadline);
  return earliest;
}

void SlsAssembler::begin_batch() {
  batching_ = true;
}

void SlsAssembler::end_batch(const CopyParts& copy) {
  if (!copies_.empty()) {
    if (copy)
      copy(copies_);
    else
      for (const PartCopy& part : copies_) std::memcpy(part.to, part.from, part.bytes);
  }
  copies_.clear();
  parked_.clear();  // gives the dropped events' buffers back
  batching_ = false;
  release_ready();
}

void SlsAssembler::release_ready() {
  if (batching_) return;  // their parts may not be copied yet: end_batch() hands them on
  for (auto it = pending_.begin(); it != pending_.end();) {
    Pending& event = it->second;
    if (event.dropped()) {
      ++it;
      continue;
    }
    if (event.parts_seen < layout_.ports()) break;
    AssembledEvent finished{it->first, event.timestamp_ns, std::move(event.data)};
    --live_;
    it = pending_.erase(it);
    // Counted under the same lock as the handing on, so that whoever takes the event from the
    // engine's queue finds it counted.
    std::unique_lock lock(counts_mutex_);
    if (deliver_(finished)) {
      ++counts_.events;
    } else {
      ++counts_.dropped["engine_busy"];
      counts_.last_problem = "frame " + std::to_string(finished.frame_number) +
                             ": the engine's queue of assembled events is full";
      lock.unlock();
      finished.data.reset();
    }
  }
}

std::string SlsAssembler::port_at(int position) const {
  for (std::size_t port = 0; port < port_position_.size(); ++port)
    if (port_position_[port] == position) return port_names_[port];
  return "(a port not heard from yet)";
}

std::string SlsAssembler::missing_parts(const Pending& event) const {
  std::vector<int> missing;
  for (std::size_t position = 0; position < event.seen.size(); ++position)
    if (!event.seen[position]) missing.push_back(int(position));
  if (missing.empty()) return "no part";
  const int first = missing.front();
  std::string text = "the part of row " + std::to_string(first / layout_.port_columns()) +
                     ", column " + std::to_string(first % layout_.port_columns()) + " (" +
                     port_at(first) + ")";
  if (missing.size() > 1) text += " and " + std::to_string(missing.size() - 1) + " more";
  return text;
}

}  // namespace livedrp::stream::sls
