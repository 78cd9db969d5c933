// cuemu stand-in for cuda_fp16.h: __half as its bits, arithmetic rounded to half per operation.
#pragma once
#include "../cuemu.h"

inline uint16_t cuemu_f2h(float f) {  // round to nearest even, by bit manipulation
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint16_t sign = (x >> 16) & 0x8000;
    const uint32_t a = x & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00;
    if (a >= 0x477ff000u) return sign | 0x7c00;  // >= 65520 rounds to infinity
    if (a < 0x38800000u) {                        // below 2^-14: a subnormal half
        float v;
        memcpy(&v, &a, 4);
        return sign | (uint16_t)nearbyintf(v * 16777216.0f);
    }
    uint32_t h = (((a >> 23) - 112) << 10) | ((a >> 13) & 0x3ff);
    const uint32_t rem = a & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
    return sign | (uint16_t)h;
}
inline float cuemu_h2f(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 31, m = h & 1023;
    if (e == 0) {
        float v = (float)m * 0x1p-24f;
        return sign ? -v : v;
    }
    uint32_t bits = sign | (e == 31 ? (0xffu << 23) | (m << 13) : ((e + 112) << 23) | (m << 13));
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

struct __half {
    uint16_t bits;
    __half() = default;
    __half(float f) : bits(cuemu_f2h(f)) {}
    __half(double d) : bits(cuemu_f2h((float)d)) {}
    __half(int i) : bits(cuemu_f2h((float)i)) {}
    operator float() const { return cuemu_h2f(bits); }
};
inline float __half2float(__half h) { return cuemu_h2f(h.bits); }
inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline __half operator+(__half a, __half b) { return __half(__half2float(a) + __half2float(b)); }
inline __half operator-(__half a, __half b) { return __half(__half2float(a) - __half2float(b)); }
inline __half operator*(__half a, __half b) { return __half(__half2float(a) * __half2float(b)); }
inline __half operator/(__half a, __half b) { return __half(__half2float(a) / __half2float(b)); }
inline __half __hadd(__half a, __half b) { return a + b; }
inline __half __hmul(__half a, __half b) { return a * b; }
inline bool __hgt(__half a, __half b) { return __half2float(a) > __half2float(b); }
inline bool __hlt(__half a, __half b) { return __half2float(a) < __half2float(b); }
