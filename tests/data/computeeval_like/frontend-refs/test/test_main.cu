#include <cstdio>
#include "plan.h"

int main() {
    int got = plan_size(3, 5);
    if (got != 15) {
        std::fprintf(stderr, "plan_size(3, 5) = %d, expected 15\n", got);
        return 1;
    }
    std::puts("ok");
    return 0;
}
