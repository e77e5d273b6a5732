#pragma once
// Protocol types that travel through queued (cross-thread) signals. Include this header wherever such
// a signal is declared; call registerProtocolMetaTypes() once before the first queued connection.
#include <memory>

#include <QList>
#include <QMetaType>

#include "protocol/message.hpp"
#include "protocol/topics.hpp"

namespace livedrp::widgets {

// Messages are shared, not copied, between the subscriber thread and the models: an `image` message
// carries megabytes of frames.
using MessagePtr = std::shared_ptr<const protocol::Message>;
using MessageBatch = QList<MessagePtr>;

void registerProtocolMetaTypes();

}  // namespace livedrp::widgets

Q_DECLARE_METATYPE(livedrp::protocol::StatsPayload)
Q_DECLARE_METATYPE(livedrp::protocol::StatusPayload)
Q_DECLARE_METATYPE(livedrp::widgets::MessagePtr)
Q_DECLARE_METATYPE(livedrp::widgets::MessageBatch)
