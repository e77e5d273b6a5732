#include "cuda/launch_graph.hpp"

#include <cuda_runtime.h>

#include <string>

#include "core/error.hpp"

namespace livedrp::gpu {
namespace {

void check(cudaError_t status, const std::string& call) {
  if (status != cudaSuccess)
    throw RuntimeFault(call + ": " + cudaGetErrorString(status) + " (" +
                       cudaGetErrorName(status) + ")");
}

}  // namespace

LaunchGraph::LaunchGraph(const Stream& stream, const std::vector<GraphCopy>& copies,
                         const std::function<void(const Stream&)>& body)
    : copies_(copies) {
  const cudaStream_t s = stream.get();
  check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  try {
    for (const GraphCopy& copy : copies_)
      check(cudaMemcpyAsync(copy.device_destination, copy.host_source, copy.bytes,
                            cudaMemcpyHostToDevice, s),
            "cudaMemcpyAsync (captured raw event copy)");
    body(stream);
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(s, &broken);  // leave the stream usable; the error is the one thrown
    if (broken) cudaGraphDestroy(broken);
    throw;
  }
  check(cudaStreamEndCapture(s, &graph_), "cudaStreamEndCapture");

  // Find the memcpy node of each copy by its destination.
  std::size_t count = 0;
  check(cudaGraphGetNodes(graph_, nullptr, &count), "cudaGraphGetNodes (count)");
  std::vector<cudaGraphNode_t> nodes(count);
  check(cudaGraphGetNodes(graph_, nodes.data(), &count), "cudaGraphGetNodes");
  copy_nodes_.assign(copies_.size(), nullptr);
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    check(cudaGraphNodeGetType(node, &type), "cudaGraphNodeGetType");
    if (type != cudaGraphNodeTypeMemcpy) continue;
    cudaMemcpy3DParms parms{};
    check(cudaGraphMemcpyNodeGetParams(node, &parms), "cudaGraphMemcpyNodeGetParams");
    for (std::size_t i = 0; i < copies_.size(); ++i)
      if (parms.dstPtr.ptr == copies_[i].device_destination && !copy_nodes_[i])
        copy_nodes_[i] = node;
  }
  for (std::size_t i = 0; i < copies_.size(); ++i)
    if (!copy_nodes_[i])
      throw RuntimeFault("LaunchGraph: captured graph has no memcpy node for copy " +
                         std::to_string(i));
  check(cudaGraphInstantiate(&exec_, graph_, 0), "cudaGraphInstantiate");
}

LaunchGraph::~LaunchGraph() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
}

void LaunchGraph::set_source(int index, const void* host_source) {
  if (index < 0 || index >= int(copies_.size()))
    throw RuntimeFault("LaunchGraph::set_source: copy " + std::to_string(index) + " of " +
                       std::to_string(copies_.size()));
  GraphCopy& copy = copies_[std::size_t(index)];
  if (copy.host_source == host_source) return;
  check(cudaGraphExecMemcpyNodeSetParams1D(exec_, copy_nodes_[std::size_t(index)],
                                           copy.device_destination, host_source, copy.bytes,
                                           cudaMemcpyHostToDevice),
        "cudaGraphExecMemcpyNodeSetParams1D (raw event source)");
  copy.host_source = host_source;
}

void LaunchGraph::launch(const Stream& stream) {
  check(cudaGraphLaunch(exec_, stream.get()), "cudaGraphLaunch");
}

}  // namespace livedrp::gpu
