#pragma once
// How the image dock names a detector pixel: "segment 5, ss 12, fs 300 (raw pixel 818988)" for
// the pixel under the mouse (found with core/detector_pixel_lookup.hpp from the image's
// `assembly`), and "segment 2, ss 101.3, fs 55.0" for a peak's centroid in its segment's own raw
// frame. An operator reports a hot pixel or a dead module with these numbers.
#include <QString>

#include "core/detector_pixel_lookup.hpp"
#include "protocol/peaks_topic.hpp"

namespace livedrp::widgets {

// "segment S, ss R, fs C (raw pixel N)": N is the pixel's index in the event (segment, ss, fs
// order), as the engine's masks, constants and recordings count pixels.
QString detectorPixelText(const DetectorPixel& pixel);

// What the read-out says when the image came without its assembly (an engine older than the
// `assembly` field): the segment cannot be known.
QString unknownSegmentText();

// A peak's place on the detector: its segment, and with the image's assembly (which gives the
// segment's rows) its centroid's ss and fs in the segment's frame (pixel centres at integers, as
// the slab coordinates the peak finder reports); without it the segment alone.
QString peakPixelText(const protocol::PeakRow& peak, const protocol::ImageFrame* image);

}  // namespace livedrp::widgets
