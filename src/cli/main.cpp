// scratchplan <verb> ...: entry point. Exit codes: 0 ok, 2 bad input, 1 internal error.
#include <algorithm>
#include <exception>
#include <iostream>

#include "cli/options.h"
#include "cli/verbs.h"
#include "core/json_reader.h"
#include "core/result.h"

int main(int argc, char** argv) {
  // Named here: CLI11 would otherwise show argv[0], the binary's full path, in every usage line.
  CLI::App app{"scratchplan: plans the on-chip memory of ML accelerators", "scratchplan"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "scratchplan 0.1.0");
  int exit_code = sp::kExitOk;
  sp::cli::register_evaluate(app, exit_code);
  sp::cli::register_layout(app, exit_code);
  sp::cli::register_divide(app, exit_code);
  sp::cli::register_nki(app, exit_code);
  sp::cli::register_schedule(app, exit_code);
  sp::cli::register_alloc(app, exit_code);
  sp::cli::register_plan(app, exit_code);
  // After the verbs: CLI11 copies a footer into subcommands created after it.
  app.footer("Also installed: mlsys INPUT.json OUTPUT.json, the MLSys 2026 contest entry point (same scheduler as schedule).");
  // An unknown verb (or nki sub-verb) would otherwise be reported as "A subcommand is required".
  CLI::App* level = &app;
  std::string prefix = "scratchplan";
  for (int i = 1; i < argc && argv[i][0] != '-' && !level->get_subcommands({}).empty(); ++i) {
    std::vector<std::string> verbs;
    for (const CLI::App* sub : level->get_subcommands({})) verbs.push_back(sub->get_name());
    const std::string verb = argv[i];
    if (std::find(verbs.begin(), verbs.end(), verb) == verbs.end()) {
      const std::string hint = sp::closest_word(verb, verbs);
      std::string list;
      for (const auto& v : verbs) list += (list.empty() ? "" : ", ") + v;
      std::cerr << sp::cli::kErrorPrefix << "unknown verb '" << (i > 1 ? prefix.substr(12) + " " : "") << verb << "'"
                << (hint.empty() ? " (verbs: " + list + ")" : " (did you mean '" + hint + "'?)") << "\n";
      return sp::kExitBadInput;
    }
    level = level->get_subcommand(verb);
    prefix += " " + verb;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string m = e.what();
    for (char& c : m)
      if (c == '\n') c = ' ';
    std::cerr << sp::cli::kErrorPrefix << m << " (see --help)\n";
    return sp::kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << sp::cli::kErrorPrefix << "internal error: " << e.what() << "\n";
    return sp::kExitInternal;
  }
  return exit_code;
}
