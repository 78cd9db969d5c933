#include "minifront.h"
#include "plan.h"

int plan_size(int rows, int cols) {
    namespace mf = minifront;
    mf::graph::Graph graph;
    auto x = graph.tensor(mf::graph::Tensor_attributes().set_dim({rows, cols}));
    graph.scale(x, mf::graph::Scale_attributes());
    return static_cast<int>(graph.nodes() * x->elements());
}
