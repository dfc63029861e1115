// Reading and writing allocation problems and plans: MiniMalloc CSV (id,lower,upper,size[,offset])
// and JSON (alignment, in-place parents, spill costs, torch-spyre `uses`). See docs/alloc.md.
#pragma once

#include <string>

#include "alloc/problem.h"
#include "alloc/solver.h"
#include "core/json_reader.h"

namespace sp::alloc {

// CSV text -> problem (capacity left kUnbounded). Errors name source and line.
Result<Problem> problem_from_csv(const std::string& text, const std::string& source);
// JSON value -> problem. Errors name source and JSON path.
Result<Problem> problem_from_json(const Json& j, const std::string& source);
// Reads a file: .csv is CSV, .json JSON, any other name (or - for stdin) by content ('{' starts JSON).
Result<Problem> read_problem(const std::string& path);

// Plan as MiniMalloc CSV (offset column; empty offset = spilled).
std::string plan_to_csv(const Problem& p, const Placement& pl);
// The one-line reason a pack found no plan (`r.feasible` false), for `source`: proven
// infeasible (with the bound that proves it) or not found in time; the CLI and Python say it alike.
std::string no_plan_message(const std::string& source, const Problem& p, const SolveResult& r);
// The plan's "objective": "pack", "pack-min" (height minimized) or "select".
const char* objective_name(const SolveOptions& o);
// Plan and result summary as JSON.
Json result_to_json(const Problem& p, const SolveResult& r, const SolveOptions& o);
// The same plan as text, byte for byte result_to_json(...).dump(1) + "\n", with the buffer list
// written directly (building the JSON tree of a large plan would not fit the time the CLI
// reserves after the solver).
std::string result_to_json_text(const Problem& p, const SolveResult& r, const SolveOptions& o);
// Problem back to JSON (round trip for tests and fuzzing).
Json problem_to_json(const Problem& p);
// Address x time picture (docs/alloc.md): one colour per role with a legend, buffers below one
// pixel (and past a budget of rectangles) as an occupancy band, so that it stays small at any
// count; spilled ones listed (bounded). With minimize_bound >= 0 (pack --minimize) the address
// axis is scaled to the height reached and the lower bound is drawn; otherwise to the capacity.
std::string plan_to_svg(const Problem& p, const Placement& pl, const std::string& title, Size minimize_bound = -1);

}  // namespace sp::alloc
