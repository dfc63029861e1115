// What `nki check` and `nki plan` print: the machine-readable JSON (--json) and the readable
// summary, shared by the CLI and the Python bindings so both say exactly the same thing.
#pragma once

#include <string>

#include "core/json_reader.h"
#include "nki/check.h"
#include "nki/plan.h"

namespace sp::nki {

// `nki check --json`; `kernel_label` is the path (or name) shown as "kernel".
Json check_report_to_json(const std::string& kernel_label, const Kernel& k, const CheckReport& rep);
// `nki check` without --json.
std::string check_report_text(const std::string& kernel_label, const Kernel& k, const CheckReport& rep);
// `nki plan --json`.
Json plan_result_to_json(const std::string& kernel_label, const PlanResult& p);
// `nki plan` without --json.
std::string plan_result_text(const std::string& kernel_label, const PlanResult& p);

}  // namespace sp::nki
