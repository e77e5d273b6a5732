#pragma once
// pyFAI's detector orientation (PONI 2.1's Detector_config "orientation"; pyFAI >= 2023.12,
// pyFAI/detectors/orientation.py), the EXIF convention of where the image's first pixel lies:
//   1 TopLeft     origin top left looking at the sample (a camera's default)
//   2 TopRight    origin top left looking from the sample
//   3 BottomRight origin bottom left looking from the sample: pyFAI's native frame, the default
//                 of every PONI before 2.1 and of pyFAI before 2024
//   4 BottomLeft  origin bottom left looking at the sample
// pyFAI applies it in two places, and livedrp does the same:
//  - Detector.calc_cartesian_positions re-indexes the pixels before placing them: a flipped axis
//    of n pixels puts index i where index n - 1 - i sits in orientation 3 (a corner k where
//    corner n - k sits). Axis 1 (rows) flips for 1 and 2, axis 2 (columns) for 1 and 4. poni1,
//    poni2 and the rotations stay in the native frame.
//  - _geometry.calc_pos_zyx negates the lab coordinate t1 for orientations 1 and 2 and t2 for 1
//    and 4, so that chi turns with the image as it is stored. 2theta, q and r do not see it.
// 5-8 (transposed, rotated) are not supported by pyFAI either.
namespace livedrp::integrate {

inline constexpr int kDefaultOrientation = 3;

constexpr bool orientation_supported(int orientation) {
  return orientation >= 1 && orientation <= 4;
}
// Whether the orientation flips axis 1 (rows; pyFAI's d1) or axis 2 (columns; d2).
constexpr bool orientation_flips_rows(int orientation) {
  return orientation == 1 || orientation == 2;
}
constexpr bool orientation_flips_columns(int orientation) {
  return orientation == 1 || orientation == 4;
}

}  // namespace livedrp::integrate
