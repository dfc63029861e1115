// The CLI: one file per verb. Each register_* adds a subcommand whose callback stores the
// process exit code in `exit_code`. Verbs are thin: parse flags, call the library, print/write.
#pragma once

#include <CLI/CLI.hpp>

namespace sp::cli {

void register_evaluate(CLI::App& app, int& exit_code);
void register_layout(CLI::App& app, int& exit_code);
void register_divide(CLI::App& app, int& exit_code);
void register_nki(CLI::App& app, int& exit_code);
void register_schedule(CLI::App& app, int& exit_code);
void register_alloc(CLI::App& app, int& exit_code);
void register_plan(CLI::App& app, int& exit_code);

}  // namespace sp::cli
