#pragma once

// 5 x 5 box blur (radius 2) of a single-channel float image with clamp-to-edge addressing.
//
// `in` and `out` are distinct DEVICE arrays of width * height floats, row-major with no padding:
// pixel (x, y) is at index y * width + x, 0 <= x < width, 0 <= y < height.
//
//   out(x, y) = ( sum_{dy=-2}^{2} sum_{dx=-2}^{2} in(clamp(x+dx, 0, width-1),
//                                                   clamp(y+dy, 0, height-1)) ) / 25
//
// 0 <= width, height <= 2^19 and width * height < 2^31; nothing to do when either is 0.
// Work is issued on the default stream; the caller synchronizes.
void box_blur5(const float* in, float* out, int width, int height);
