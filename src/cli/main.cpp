// scratchplan <verb> ...: entry point. Exit codes: 0 ok, 2 bad input, 1 internal error.
#include <algorithm>
#include <exception>
#include <iostream>

#include "cli/options.h"
#include "cli/verbs.h"
#include "core/json_reader.h"
#include "core/result.h"

namespace {
// The first "--flag" on the command line that `verb` does not know, as "unknown flag '--x' (did
// you mean '--y'?)" (or with the list of its flags), or "" when every flag is known.
std::string unknown_flag(const CLI::App& verb, int argc, char** argv) {
  std::vector<std::string> known = {"--help"};
  for (const CLI::Option* opt : verb.get_options())
    for (const std::string& name : opt->get_lnames()) known.push_back("--" + name);
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") break;  // what follows is positional
    if (arg.rfind("--", 0) != 0) continue;
    arg = arg.substr(0, arg.find('='));
    if (std::find(known.begin(), known.end(), arg) != known.end() || arg == "--version") continue;
    const std::string hint = sp::closest_word(arg, known);
    if (!hint.empty()) return "unknown flag '" + arg + "' (did you mean '" + hint + "'?)";
    std::string list;
    for (std::size_t k = 1; k < known.size(); ++k) list += (list.empty() ? "" : ", ") + known[k];
    return "unknown flag '" + arg + "'" + (list.empty() ? "" : " (flags: " + list + ")");
  }
  return "";
}
}  // namespace

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
    // A mistyped flag is named with the verb's closest flag, as a mistyped verb is.
    if (std::string unknown = unknown_flag(*level, argc, argv); !unknown.empty()) {
      std::cerr << sp::cli::kErrorPrefix << unknown << " (see --help)\n";
      return sp::kExitBadInput;
    }
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
