// Pictures: for a plan, engines x time (planned and all-single-buffered, same scale) and the
// SBUF partitions x bytes map with every physical tile, plus the PSUM banks; for a check, the
// kernel's own memory map with the tiles involved in violations outlined, and the violations.
#pragma once

#include <string>
#include <vector>

#include "nki/check.h"
#include "nki/plan.h"

namespace sp::nki {

std::string plan_svg(const PlanResult& plan);
std::string check_svg(const Kernel& k, const CheckReport& report);
// A launch over logical cores (`--lnc N`): one picture with a section per core, in core order;
// the plans' timelines share one time scale.
std::string plan_svg(const std::vector<const PlanResult*>& cores);
std::string check_svg(const std::vector<const Kernel*>& cores, const std::vector<const CheckReport*>& reports);

}  // namespace sp::nki
