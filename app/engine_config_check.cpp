#include "app/engine_config_check.hpp"

#include <exception>
#include <memory>
#include <utility>

#include <QCoreApplication>
#include <QPointer>
#include <QThreadPool>

#include "exec/config_check.hpp"

namespace livedrp::app {

EngineConfigCheck::EngineConfigCheck(QObject* parent, Check check)
    : QObject(parent), check_(check ? std::move(check) : Check(&check_engine_config)) {}

void EngineConfigCheck::start(const EngineConfig& config) {
  const std::uint64_t ticket = ++ticket_;
  running_ = true;
  QPointer<EngineConfigCheck> self(this);
  auto checked = std::make_shared<const EngineConfig>(config);
  QThreadPool::globalInstance()->start([self, ticket, checked, check = check_] {
    QString reason;
    bool ok = false;
    try {
      check(*checked);
      ok = true;
    } catch (const std::exception& error) {
      reason = QString::fromUtf8(error.what());
    } catch (...) {
      reason = QStringLiteral("the check failed with an unknown error");
    }
    // Back on the GUI thread, where `self` is looked at: it may be gone by then. With the
    // application ending (its destructor waits for this thread) the answer goes nowhere.
    QCoreApplication* const application = QCoreApplication::instance();
    if (!application) return;
    QMetaObject::invokeMethod(
        application,
        [self, ticket, checked, reason, ok] {
          if (self) self->answer(ticket, *checked, reason, ok);
        },
        Qt::QueuedConnection);
  });
}

void EngineConfigCheck::cancel() {
  ++ticket_;
  running_ = false;
}

void EngineConfigCheck::answer(std::uint64_t ticket, const EngineConfig& config,
                               const QString& reason, bool ok) {
  if (ticket != ticket_) return;  // superseded or cancelled
  running_ = false;
  if (ok)
    emit passed(config);
  else
    emit refused(reason);
}

}  // namespace livedrp::app
