#pragma once

int plan_size(int rows, int cols);
