#pragma once

void scale_add(int n, float alpha, const float* x, float* y);
