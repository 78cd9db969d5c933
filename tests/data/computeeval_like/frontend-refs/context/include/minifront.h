#pragma once
// A tiny graph "frontend", shaped like the C++ frontends of GPU libraries: classes in a
// nested namespace, used through a namespace alias.
#include <cstdint>
#include <memory>
#include <vector>

namespace minifront {
namespace graph {

class Tensor_attributes {
public:
    Tensor_attributes& set_dim(std::vector<int64_t> dims) { dims_ = std::move(dims); return *this; }
    int64_t elements() const {
        int64_t n = 1;
        for (int64_t d : dims_) n *= d;
        return n;
    }
private:
    std::vector<int64_t> dims_;
};

class Scale_attributes {};
class Bias_attributes {};

class Graph {
public:
    std::shared_ptr<Tensor_attributes> tensor(const Tensor_attributes& t) {
        tensors_.push_back(std::make_shared<Tensor_attributes>(t));
        return tensors_.back();
    }
    void scale(const std::shared_ptr<Tensor_attributes>&, const Scale_attributes&) { ++nodes_; }
    void bias(const std::shared_ptr<Tensor_attributes>&, const Bias_attributes&) { ++nodes_; }
    int nodes() const { return nodes_; }
private:
    std::vector<std::shared_ptr<Tensor_attributes>> tensors_;
    int nodes_ = 0;
};

}  // namespace graph
}  // namespace minifront
