// Timelines of `nki plan --trace` and `nki check --trace` in the Chrome trace event format
// (core/trace.h): one track per engine queue with every recorded instruction execution named by
// its source line and op, and SBUF/PSUM bytes per partition in use as counters. Time is in
// cycles of the cycle model's reference clock (reference_clock_ghz, 1.4 GHz by default).
#pragma once

#include <string>
#include <vector>

#include "nki/check.h"
#include "nki/plan.h"

namespace sp::nki {

// The planned timeline and the plan's memory.
std::string plan_trace(const std::string& kernel_label, const PlanResult& plan);
// The kernel's own allocation on the planner's timeline (simulate_allocation), with the check's
// verdict in otherData.
std::string check_trace(const std::string& kernel_label, const Kernel& k, const CheckReport& report);
// A launch over logical cores (`--lnc N`): a process per core, in core order, on one clock.
std::string plan_trace(const std::string& kernel_label, const std::vector<const PlanResult*>& cores);
std::string check_trace(const std::string& kernel_label, const std::vector<const Kernel*>& cores,
                        const std::vector<const CheckReport*>& reports);

}  // namespace sp::nki
