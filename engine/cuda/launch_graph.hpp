#pragma once
// A launch sequence captured once as a CUDA graph and replayed: host-to-device copies of K events
// followed by whatever kernels `body` enqueues. Plain C++ (no CUDA headers) for engine/exec.
//
// The copies' sources change from launch to launch (each event sits in another ring slot), so the
// memcpy nodes of the instantiated graph are re-pointed before each replay
// (cudaGraphExecMemcpyNodeSetParams1D): a host-side parameter update, no re-instantiation and no
// device wait. Capturing one graph per ring slot instead would tie the backend to the ring's size
// and layout, which the Backend contract does not give it.
#include <cstddef>
#include <functional>
#include <vector>

#include "cuda/device.hpp"

struct CUgraph_st;
struct CUgraphExec_st;
struct CUgraphNode_st;

namespace livedrp::gpu {

struct GraphCopy {
  void* device_destination = nullptr;
  const void* host_source = nullptr;  // pinned; replaced per replay by set_source
  std::size_t bytes = 0;
};

class LaunchGraph {
 public:
  // Captures, on `stream` (thread-local capture mode: other threads may keep querying events), the
  // copies in order and then body(stream), and instantiates the result. Set-up, not per event.
  LaunchGraph(const Stream& stream, const std::vector<GraphCopy>& copies,
              const std::function<void(const Stream&)>& body);
  ~LaunchGraph();
  LaunchGraph(const LaunchGraph&) = delete;
  LaunchGraph& operator=(const LaunchGraph&) = delete;

  // Points copy `index` (order of the constructor's list) at another pinned host source.
  void set_source(int index, const void* host_source);
  // cudaGraphLaunch on `stream`.
  void launch(const Stream& stream);
  int copies() const { return int(copies_.size()); }

 private:
  std::vector<GraphCopy> copies_;
  std::vector<CUgraphNode_st*> copy_nodes_;  // copy_nodes_[i] does copies_[i]
  CUgraph_st* graph_ = nullptr;
  CUgraphExec_st* exec_ = nullptr;
};

}  // namespace livedrp::gpu
