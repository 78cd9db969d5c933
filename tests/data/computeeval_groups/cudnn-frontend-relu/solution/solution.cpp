#include "relu_forward.h"

#include <memory>
#include <unordered_map>

#include <cuda_runtime.h>
#include <cudnn_frontend.h>

namespace fe = cudnn_frontend;

int relu_forward(cudnnHandle_t handle, int64_t n, int64_t c, int64_t h, int64_t w,
                 const float* d_x, float* d_y) {
    fe::graph::Graph graph;
    graph.set_io_data_type(fe::DataType_t::FLOAT).set_compute_data_type(fe::DataType_t::FLOAT);
    auto x = graph.tensor(fe::graph::Tensor_attributes()
                              .set_name("x")
                              .set_dim({n, c, h, w})
                              .set_stride({c * h * w, h * w, w, 1}));
    auto y = graph.pointwise(
        x, fe::graph::Pointwise_attributes().set_mode(fe::PointwiseMode_t::RELU_FWD));
    y->set_output(true);
    if (!graph.validate().is_good()) return 1;
    if (!graph.build_operation_graph(handle).is_good()) return 2;
    if (!graph.create_execution_plans({fe::HeurMode_t::A}).is_good()) return 3;
    if (!graph.check_support(handle).is_good()) return 4;
    if (!graph.build_plans(handle).is_good()) return 5;
    int64_t workspace_bytes = 0;
    if (!graph.get_workspace_size(workspace_bytes).is_good()) return 6;
    void* workspace = nullptr;
    if (workspace_bytes > 0 && cudaMalloc(&workspace, workspace_bytes) != cudaSuccess) return 7;
    std::unordered_map<std::shared_ptr<fe::graph::Tensor_attributes>, void*> pack = {
        {x, const_cast<float*>(d_x)}, {y, d_y}};
    bool ok = graph.execute(handle, pack, workspace).is_good();
    cudaDeviceSynchronize();
    cudaFree(workspace);
    return ok ? 0 : 8;
}
