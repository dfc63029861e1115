// Pictures of a plan: engines x time (planned and all-single-buffered, same scale) and the
// SBUF partitions x bytes map with every physical tile, plus the PSUM banks.
#pragma once

#include <string>

#include "nki/plan.h"

namespace sp::nki {

std::string plan_svg(const PlanResult& plan);

}  // namespace sp::nki
