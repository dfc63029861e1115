// Checkable lower bounds on the height of a packing (pack --minimize): a certificate names a
// sub-instance (some buffers, lifetimes possibly narrowed) and a height H; an exhaustive search
// written only for this purpose shows that the sub-instance has no packing below H, which bounds
// every packing of the whole instance. Shares no code with the solvers.
// The completeness argument: docs/log/alloc-bounds-log.md, "Height certificates".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "alloc/problem.h"
#include "core/json_reader.h"
#include "core/result.h"

namespace sp::alloc {

// One buffer of the certificate's sub-instance: a buffer of the instance, live on [start, end),
// which must lie inside the buffer's own lifetime (narrowing only removes conflicts).
struct CertifiedBuffer {
  std::string id;  // the instance buffer's id
  Time start = 0;  // first tick kept (inclusive), >= the buffer's start
  Time end = 1;    // first tick dropped (exclusive), <= the buffer's end, > start
};

// Claim: no packing of `buffers` (with their sizes from the instance) has height < lower_bound,
// hence no packing of the instance does.
struct HeightCertificate {
  std::string instance;                  // file name of the instance it was made for (informational)
  Size lower_bound = 0;                  // the height every packing reaches
  std::vector<CertifiedBuffer> buffers;  // the sub-instance
};

Result<HeightCertificate> certificate_from_json(const Json& j, const std::string& source);
Result<HeightCertificate> read_certificate(const std::string& path);
Json certificate_to_json(const HeightCertificate& c);

enum class FitVerdict {
  kFits,        // a packing within the capacity was found (in `offsets`)
  kDoesNotFit,  // the search completed: no packing within the capacity exists
  kUnknown,     // the node budget ran out first
};

struct FitSearch {
  FitVerdict verdict = FitVerdict::kUnknown;  // outcome
  int64_t nodes = 0;                          // search nodes visited
  std::vector<Offset> offsets;                // kFits: one offset per buffer of the problem
};

// Exhaustive search: does every buffer of `p` fit below `capacity` (sizes and lifetimes only;
// alignment, pinned offsets and hand-offs are not modelled, so `p` must have none)? Enumerates
// the supported packings in (offset, index) order with sound pruning only (docs/log/alloc-bounds-log.md,
// "Height certificates"). Deterministic; stops after max_nodes nodes (kUnknown).
FitSearch search_fit(const Problem& p, Size capacity, int64_t max_nodes, bool memo = true);

// The sub-instance a certificate describes, or a one-line error (unknown or repeated id, a
// lifetime not inside the buffer's own, a buffer the search cannot model).
Result<Problem> certificate_subproblem(const Problem& p, const HeightCertificate& c);

// Checks the claim: builds the sub-instance and searches it below lower_bound. kDoesNotFit means
// the certificate is verified; error on a malformed certificate.
Result<FitSearch> check_certificate(const Problem& p, const HeightCertificate& c, int64_t max_nodes);

// Certificate search over time windows: for windows [a, b) around the instants of maximum load,
// the buffers live in the window, clipped to it; raises the height while search_fit proves the
// window cannot be packed below it (each proof within max_nodes), then drops buffers whose removal
// keeps the proof. The best certificate found (lower_bound = max load when nothing better).
struct WindowSearchOptions {
  int64_t max_nodes = 2'000'000;  // per proof attempt
  int max_sections = 12;          // widest window, in time sections on each side of a peak instant
  int max_raise = 64;             // most heights tried above the max load (in size-gcd steps)
  bool shrink = true;             // drop buffers that the proof does not need
};
HeightCertificate find_window_certificate(const Problem& p, const WindowSearchOptions& o);

}  // namespace sp::alloc
