#pragma once
#include <cmath>
#define CUDART_INF_F INFINITY
#define CUDART_INF INFINITY
#define CUDART_NAN_F NAN
