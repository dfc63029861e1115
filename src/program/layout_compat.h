// Layout compatibility of a program's ops, per op kind, and restickify detection: pointwise ops need one stick
// variable for all operands; a reduction along the stick dim produces a sparse output; matmul
// needs A sticked on K, B and C on N, and B's K padded to whole sticks of A. Every operand that
// breaks a rule is reported as needing a restickify (or padding) before the op.
#pragma once

#include <string>
#include <vector>

#include "layout/layout.h"
#include "program/program.h"

namespace sp::program {

using layout::Layout;

enum class FixKind { kRestickify, kPadding };

struct LayoutIssue {
  program::OpId op = -1;          // the op whose rule is broken
  int operand = -1;               // operand index (inputs then outputs)
  program::TensorId tensor = -1;  // the operand's tensor
  FixKind fix = FixKind::kRestickify;
  std::string message;            // one line
  Dim pad_from = 0, pad_to = 0;   // padding: the padded dim's extent before and after (0 otherwise)
};

// The iteration var that indexes the stick dim of operand `m` of op `o`, or -1 (sparse,
// broadcast or constant).
int stick_var(const program::Program& p, program::OpId o, int m, const Layout& l);

// messages = false leaves LayoutIssue::message empty (cheaper, for callers that need the fixes only).
std::vector<LayoutIssue> check_op_layouts(const program::Program& p, program::OpId o, const std::vector<Layout>& layouts,
                                         bool messages = true);
// All ops; layouts are program::tensor_layout of every tensor (the program must be finalized).
Result<std::vector<LayoutIssue>> check_program_layouts(const program::Program& p);

// Chooses the layouts a finalized program leaves open, in program order: an intermediate tensor
// with neither dim_order nor layout, written by a reduction whose first input's stick dim is
// indexed by one reduction var (reduced away) or by a pointwise op whose operands of its shape are
// all sparse, gets the sparse layout (its dims in order, then -1) that op writes natively, if that
// layout is no larger than the op's first input and the op then needs no fix for it and no more
// fixes than before. Then an open load-time graph input (weights, folded constants: laid out once
// when the model is loaded) gets the layout (one host dim as its stick, or sparse) that leaves its
// readers the fewest fixes, if strictly fewer than the default and at most (1 + 2 x fixes
// removed) times its bytes.
// Every other tensor keeps the default layout; other graph inputs and outputs keep theirs (the
// caller provides or reads them). The program is not changed: set each dim_order to apply.
struct OpenLayout {
  program::TensorId tensor = -1;  // an open tensor
  std::vector<int> dim_order;     // the layout chosen for it
};
std::vector<OpenLayout> infer_open_layouts(const program::Program& p);

}  // namespace sp::program
