#pragma once
// The detector image's data as files: the assembled calibrated frame the plot shows, every pixel
// as received (float32), gaps between panels NaN as on the wire.
//  - .npy (NumPy format 1.0, '<f4', C order, shape (rows, columns)): the whole frame in 4 bytes a
//    pixel, read with numpy.load; the form for a 2-Mpixel image.
//  - .csv: "# " lines naming the event, size and unit, then one line per image row (row 0 first),
//    one value per column, "nan" in gaps, no header line (numpy.loadtxt(f, delimiter=",")).
//    Values in the shortest text that reads back to the same float32.
#include <QByteArray>

#include "protocol/peaks_topic.hpp"

namespace livedrp::widgets {

QByteArray imageNpy(const protocol::ImageFrame& image);
QByteArray imageCsv(const protocol::ImageFrame& image);

}  // namespace livedrp::widgets
