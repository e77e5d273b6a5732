#include "stages/integrate/integrate_stage.hpp"

#include <vector>

#include "exec/backend.hpp"
#include "protocol/profile_topic.hpp"
#include "stages/integrate/live_integrator.hpp"

namespace livedrp::stages {

IntegrateStage::IntegrateStage(integrate::Integrator integrator, IntegrationBookSettings book)
    : integrator_(std::move(integrator)), book_(std::move(book)) {
  // Built now, not on the first event: the first event must not pay for the tables.
  integrator_.csr();
  integrator_.normalization();
}

std::any IntegrateStage::run_cpu(const CpuEvent& event) {
  integrator_.set_thread_pool(event.pool);
  return ProfileResult(profile_intensities(integrator_.integrate(event.calibrated)));
}

std::unique_ptr<StageBook> IntegrateStage::make_book() const {
  return std::make_unique<IntegrationBook>(book_);
}

std::shared_ptr<IntegrateStage> make_integrate_stage(const LiveIntegrationConfig& config,
                                                     const DetectorDescription& detector,
                                                     const CalibrationConstants& constants) {
  integrate::Integrator integrator = make_live_integrator(config, detector, constants);
  IntegrationBookSettings book;
  book.unit = protocol::radial_unit_from_string(config.unit);
  // The centres as the integrator reports them (the device parts report the same).
  book.centres = integrator.integrate(std::vector<float>(detector.pixels(), 0.0f)).radial;
  book.average_events = std::uint64_t(config.average_events);
  book.publish_hz = config.publish_hz;
  return std::make_shared<IntegrateStage>(std::move(integrator), std::move(book));
}

}  // namespace livedrp::stages
