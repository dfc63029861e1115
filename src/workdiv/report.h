// What `scratchplan divide` prints: the JSON (--json) and the readable text, shared by the CLI
// and the Python bindings.
#pragma once

#include <string>
#include <vector>

#include "core/json_reader.h"
#include "program/layout_compat.h"
#include "program/program.h"
#include "workdiv/workdiv.h"

namespace sp::workdiv {

Json division_report_json(const program::Program& p, const Division& d, const std::vector<program::LayoutIssue>& issues);
// `candidates`: also list each op's candidate menu (--candidates).
std::string division_report_text(const program::Program& p, const Division& d,
                                 const std::vector<program::LayoutIssue>& issues, bool candidates);

}  // namespace sp::workdiv
