#include <cstdio>
#include <cstdlib>
#include <vector>
#include "count.h"

int main() {
    std::vector<int> v;
    int expected = 0;
    for (int i = 0; i < 1000; ++i) {
        int x = (i * 37) % 11 - 5;
        v.push_back(x);
        expected += x > 0;
    }
    int got = count_positive(v);
    if (got != expected) {
        std::fprintf(stderr, "count_positive: got %d, expected %d\n", got, expected);
        return 1;
    }
    std::puts("ok");
    return 0;
}
