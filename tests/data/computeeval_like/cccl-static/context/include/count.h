#pragma once
#include <vector>

int count_positive(const std::vector<int>& values);
