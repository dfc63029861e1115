// The one result shape of every independent checker (alloc, lx, nki): a list of typed
// violations, each naming its kind, what it involves and one line of explanation. Each checker
// supplies its own Kind enum and, where its reports need more structure, a Detail struct.
#pragma once

#include <string>
#include <vector>

namespace sp {

struct NoDetail {};

template <class Kind, class Detail = NoDetail>
struct Violation {
  Kind kind{};                        // which rule is broken
  std::vector<std::string> involved;  // the buffers, tensors or ops involved, by name
  std::string message;                // one line
  Detail detail{};                    // checker-specific structure (indices, lines, counts)
};

template <class Kind, class Detail = NoDetail>
struct CheckResult {
  std::vector<Violation<Kind, Detail>> violations;  // empty = the plan keeps every rule
  bool ok() const { return violations.empty(); }
};

}  // namespace sp
