// Everything generated code includes. Each group header holds forward functions and their adjoints side by side.
#pragma once
#include "core.h"
#include "scalar_ops.h"
#include "scalar_math.h"
#include "vec.h"
#include "mat.h"
#include "quat.h"
#include "transform.h"
#include "array.h"
#include "tile.h"
#include "random.h"
#include "debug_print.h"
#include "expect.h"
