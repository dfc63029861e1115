#include "nki/kernel.h"

#include <algorithm>
#include <cstring>
#include <cctype>
#include <map>

namespace sp::nki {

namespace {

// Magnitudes allowed anywhere in index arithmetic, so that evaluation never overflows.
constexpr int64_t kMaxMagnitude = int64_t{1} << 40;
constexpr int64_t kMaxBlocks = int64_t{1} << 22;        // logical tiles per tensor
constexpr Bytes kMaxTileBytes = int64_t{1} << 40;       // bytes per partition of one tile
constexpr int64_t kMaxTotalBlocks = int64_t{1} << 24;   // logical tiles of all tensors

bool add_ok(int64_t a, int64_t b, int64_t& out) { return !__builtin_add_overflow(a, b, &out) && out <= kMaxMagnitude && out >= -kMaxMagnitude; }
bool mul_ok(int64_t a, int64_t b, int64_t& out) { return !__builtin_mul_overflow(a, b, &out) && out <= kMaxMagnitude && out >= -kMaxMagnitude; }

struct DType {
  const char* name;
  Bytes bytes;
};
constexpr DType kDTypes[] = {{"bfloat16", 2}, {"bf16", 2},   {"float16", 2}, {"fp16", 2},   {"float32", 4},
                             {"fp32", 4},     {"float8", 1}, {"fp8", 1},     {"int8", 1},   {"uint8", 1},
                             {"int16", 2},    {"int32", 4},  {"uint32", 4},  {"tfloat32", 4},
                             // packed formats (four values per element)
                             {"float4_e2m1fn_x4", 2}, {"float8_e4m3fn_x4", 4}, {"float8_e5m2_x4", 4}};

// ---- affine expressions -------------------------------------------------------------------

class AffineParser {
 public:
  AffineParser(const std::string& text, const std::vector<std::string>& vars,
               const std::vector<std::pair<std::string, int64_t>>& consts)
      : s_(text), vars_(vars), consts_(consts) {}

  bool parse(Affine& out, std::string& error) {
    if (!expr(out) || (skip(), pos_ != s_.size() && (err_ = unexpected(), true))) {
      error = err_.empty() ? "malformed expression" : err_;
      return false;
    }
    return true;
  }

 private:
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool fail(const std::string& m) {
    if (err_.empty()) err_ = m;
    return false;
  }
  // What is wrong at pos_: an operator we do not support (% / ...) is named as such, with its
  // column, rather than reported as whatever token the grammar expected next.
  std::string unexpected() const {
    const std::string at = " at column " + std::to_string(pos_ + 1);
    const char ch = s_[pos_];
    if (std::strchr("%/^&|<>!=?:[]{}.", ch) != nullptr)
      return "unsupported operator '" + std::string(1, ch) + "'" + at +
             " (expected an affine expression: integers, names, +, - and * by a constant, parentheses; a modulo "
             "mapping is a mod_alloc or a table)";
    return "unexpected '" + std::string(1, ch) + "'" + at;
  }
  static bool add(Affine& a, const Affine& b, int64_t sign, std::string& err) {
    int64_t c = 0;
    if (!mul_ok(b.constant, sign, c) || !add_ok(a.constant, c, a.constant)) return err = "value too large", false;
    for (auto [v, k] : b.terms) {
      auto it = std::find_if(a.terms.begin(), a.terms.end(), [v = v](auto& t) { return t.first == v; });
      int64_t sk = 0;
      if (!mul_ok(k, sign, sk)) return err = "value too large", false;
      if (it == a.terms.end()) a.terms.push_back({v, sk});
      else if (!add_ok(it->second, sk, it->second)) return err = "value too large", false;
    }
    std::erase_if(a.terms, [](auto& t) { return t.second == 0; });
    return true;
  }
  bool expr(Affine& out) {
    out = Affine{};
    skip();
    int64_t sign = 1;
    if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) sign = s_[pos_++] == '-' ? -1 : 1;
    Affine t;
    if (!term(t) || !add(out, t, sign, err_)) return false;
    for (;;) {
      skip();
      if (pos_ >= s_.size() || (s_[pos_] != '+' && s_[pos_] != '-')) return true;
      sign = s_[pos_++] == '-' ? -1 : 1;
      if (!term(t) || !add(out, t, sign, err_)) return false;
    }
  }
  bool term(Affine& out) {
    if (!factor(out)) return false;
    for (;;) {
      skip();
      if (pos_ >= s_.size() || s_[pos_] != '*') return true;
      ++pos_;
      Affine rhs;
      if (!factor(rhs)) return false;
      if (!out.terms.empty() && !rhs.terms.empty()) return fail("not affine: product of two variables");
      const Affine& var = out.terms.empty() ? rhs : out;
      int64_t k = out.terms.empty() ? out.constant : rhs.constant;
      Affine r;
      if (!mul_ok(var.constant, k, r.constant)) return fail("value too large");
      for (auto [v, c] : var.terms) {
        int64_t p = 0;
        if (!mul_ok(c, k, p)) return fail("value too large");
        if (p != 0) r.terms.push_back({v, p});
      }
      out = r;
    }
  }
  bool factor(Affine& out) {
    skip();
    out = Affine{};
    if (pos_ >= s_.size()) return fail("expression ends early");
    char ch = s_[pos_];
    if (ch == '(') {
      ++pos_;
      if (!expr(out)) return false;
      skip();
      if (pos_ >= s_.size()) return fail("missing ')'");
      if (s_[pos_] != ')') return fail(unexpected());
      ++pos_;
      return true;
    }
    if (ch == '-') {
      ++pos_;
      Affine inner;
      if (!factor(inner)) return false;
      return add(out, inner, -1, err_) || fail("value too large");
    }
    if (std::isdigit(static_cast<unsigned char>(ch))) {
      int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        if (!mul_ok(v, 10, v) || !add_ok(v, s_[pos_] - '0', v)) return fail("value too large");
        ++pos_;
      }
      out.constant = v;
      return true;
    }
    if (std::isalpha(static_cast<unsigned char>(ch)) || ch == '_') {
      std::size_t b = pos_;
      while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
      std::string id = s_.substr(b, pos_ - b);
      for (std::size_t i = 0; i < vars_.size(); ++i)
        if (vars_[i] == id) {
          out.terms.push_back({static_cast<int>(i), 1});
          return true;
        }
      for (auto& [n, v] : consts_)
        if (n == id) {
          out.constant = v;
          return true;
        }
      return fail("unknown name '" + id + "'");
    }
    return fail(unexpected());
  }

  const std::string& s_;
  const std::vector<std::string>& vars_;
  const std::vector<std::pair<std::string, int64_t>>& consts_;
  std::size_t pos_ = 0;
  std::string err_;
};

// ---- reader ---------------------------------------------------------------------------------

struct Reader {
  Kernel& k;
  std::vector<std::string> loop_names;  // by LoopId
  std::vector<LoopId> scope;            // enclosing loops while reading

  Affine index_expr(const JsonCursor& c) {
    Affine a;
    if (c.node().is_number_integer()) {
      a.constant = c.as_int();
      if (a.constant > kMaxMagnitude || a.constant < -kMaxMagnitude) c.fail("index too large");
      return a;
    }
    if (!c.node().is_string()) c.fail("expected an integer or an affine expression string, got " + describe_json(c.node()));
    // Only enclosing loops are visible: map names of the scope to their loop ids.
    std::vector<std::string> names(loop_names.size(), "\x01");
    for (LoopId l : scope) names[l] = loop_names[l];
    std::string err;
    if (!parse_affine(c.as_string(), names, {}, a, err)) c.fail("bad index expression \"" + c.as_string() + "\": " + err);
    return a;
  }

  // [min, max] of an affine over the enclosing loop ranges; false when it does not fit.
  static bool range(const Kernel& k, const Affine& a, int64_t& lo, int64_t& hi) {
    lo = hi = a.constant;
    for (auto [v, c] : a.terms) {
      int64_t span = 0;
      if (__builtin_mul_overflow(c, k.loops[v].trip - 1, &span)) return false;
      if (__builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi)) return false;
    }
    return true;
  }

  Access access(const JsonCursor& c, const Instruction& ins, bool is_write) {
    c.expect_keys({"tensor", "block", "partitions", "bytes", "accumulate"});
    Access a;
    std::string name = c.at("tensor").as_string();
    a.tensor = k.find_tensor(name);
    if (a.tensor < 0) c.at("tensor").fail("unknown tensor \"" + name + "\"");
    const Tensor& t = k.tensors[a.tensor];
    if (t.buffer == Memory::kHbm && ins.engine != Engine::kDma)
      c.at("tensor").fail("tensor \"" + name + "\" is in HBM; only the DMA engine reads or writes HBM, not " +
                          std::string(engine_name(ins.engine)));
    std::size_t nb = t.blocks.size();
    if (!c.has("block")) {
      if (nb != 0) c.fail("expected \"block\" with " + std::to_string(nb) + " indices for tensor \"" + name + "\"");
    } else {
      auto b = c.at("block");
      if (b.array_size() != nb)
        b.fail("tensor \"" + name + "\" has " + std::to_string(nb) + " block dims, got " + std::to_string(b.array_size()) +
               " indices");
      for (std::size_t d = 0; d < nb; ++d) a.index.push_back(index_expr(b.at(d)));
    }
    int64_t stride = 1;
    a.linear = Affine{};
    for (std::size_t d = nb; d-- > 0;) {
      int64_t lo = 0, hi = 0;
      // Loops of one trip contribute nothing; dropping them keeps every coefficient small.
      std::erase_if(a.index[d].terms, [&](auto& x) { return k.loops[x.first].trip == 1; });
      if (!range(k, a.index[d], lo, hi)) c.at("block").at(d).fail("block index expression too large");
      if (lo < 0 || hi >= t.blocks[d])
        c.at("block").at(d).fail("block index " + affine_to_string(a.index[d], loop_names) + " of tensor \"" + name +
                                 "\" ranges over [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                 "] but block dim " + std::to_string(d) + " has size " + std::to_string(t.blocks[d]));
      Affine scaled;
      scaled.constant = a.index[d].constant * stride;
      for (auto [v, co] : a.index[d].terms) scaled.terms.push_back({v, co * stride});
      // Both fit: every term spans less than the block dim, and strides are below kMaxBlocks.
      a.linear.constant += scaled.constant;
      for (auto [v, co] : scaled.terms) {
        auto it = std::find_if(a.linear.terms.begin(), a.linear.terms.end(), [v = v](auto& x) { return x.first == v; });
        if (it == a.linear.terms.end()) a.linear.terms.push_back({v, co});
        else it->second += co;
      }
      stride *= t.blocks[d];
    }
    std::erase_if(a.linear.terms, [](auto& x) { return x.second == 0; });
    // Part of the tile: [lo, hi) within its partitions and within the bytes of each partition.
    auto range_in = [&](const char* key, int64_t size, int64_t& lo, int64_t& hi) {
      if (!c.has(key)) return;
      auto r = c.at(key);
      auto v = r.as_int_array(0);
      if (v.size() != 2 || v[0] < 0 || v[0] >= v[1] || v[1] > size)
        r.fail(std::string("expected [lo, hi) with 0 <= lo < hi <= ") + std::to_string(size) + " (the tile's " + key + ")");
      lo = v[0];
      hi = v[1];
    };
    range_in("partitions", t.pdim, a.p0, a.p1);
    range_in("bytes", t.fbytes(), a.b0, a.b1);
    if (c.has("accumulate")) {
      if (!is_write) c.at("accumulate").fail("only a write accumulates");
      a.accumulate = c.at("accumulate").as_bool();
    }
    return a;
  }

  void instruction(const JsonCursor& c) {
    c.expect_keys({"name", "engine", "cost", "reads", "writes", "source", "when", "comment"});
    Instruction ins;
    ins.json_path = c.path();
    if (c.has("source")) ins.source = c.at("source").as_string();
    ins.name = c.has("name") ? c.at("name").as_string() : "op" + std::to_string(k.instrs.size());
    std::string e = c.at("engine").as_string();
    static const std::map<std::string, Engine> kEngines = {
        {"DMA", Engine::kDma},       {"dma", Engine::kDma},       {"Scalar", Engine::kScalar},
        {"scalar", Engine::kScalar}, {"Act", Engine::kScalar},    {"Vector", Engine::kVector},
        {"vector", Engine::kVector}, {"Tensor", Engine::kTensor}, {"tensor", Engine::kTensor},
        {"PE", Engine::kTensor},     {"GpSimd", Engine::kGpSimd}, {"gpsimd", Engine::kGpSimd},
        {"Pool", Engine::kGpSimd}};
    auto it = kEngines.find(e);
    if (it == kEngines.end())
      c.at("engine").fail("unknown engine \"" + e + "\" (expected DMA, Scalar, Vector, Tensor or GpSimd)");
    ins.engine = it->second;
    ins.cost = c.has("cost") ? c.at("cost").as_int_at_least(0) : 1;
    if (ins.cost > kMaxMagnitude) c.at("cost").fail("cost too large");
    ins.loops = scope;
    // Guards: affine expressions over the enclosing loops; the instruction runs when all are >= 0.
    if (c.has("when"))
      for (auto& g : c.at("when").elements()) {
        Affine a = index_expr(g);
        int64_t lo = 0, hi = 0;
        if (!range(k, a, lo, hi)) g.fail("guard expression too large");
        ins.when.push_back(std::move(a));
      }
    if (c.has("reads"))
      for (auto& r : c.at("reads").elements()) ins.reads.push_back(access(r, ins, false));
    if (c.has("writes"))
      for (auto& w : c.at("writes").elements()) ins.writes.push_back(access(w, ins, true));
    k.instrs.push_back(std::move(ins));
  }

  void body(const JsonCursor& c, std::vector<Node>& out, int64_t mult) {
    for (auto& n : c.elements()) {
      n.require_object();
      if (n.has("loop")) {
        n.expect_keys({"loop", "trip", "body", "kind", "source", "comment"});
        Loop l;
        l.var = n.at("loop").as_string();
        if (n.has("kind")) {
          l.kind = n.at("kind").as_string();
          if (l.kind != "affine" && l.kind != "sequential" && l.kind != "spmd")
            n.at("kind").fail("expected \"affine\", \"sequential\" or \"spmd\"");
        }
        if (l.var.empty() || !(std::isalpha(static_cast<unsigned char>(l.var[0])) || l.var[0] == '_'))
          n.at("loop").fail("expected a loop variable name");
        for (LoopId s : scope)
          if (loop_names[s] == l.var) n.at("loop").fail("loop variable \"" + l.var + "\" shadows an enclosing loop");
        int64_t trip = n.at("trip").as_int();
        if (trip <= 0)
          n.at("trip").fail("loop bound must be positive, got " + std::to_string(trip));
        l.trip = trip;
        l.parent = scope.empty() ? -1 : scope.back();
        LoopId id = static_cast<LoopId>(k.loops.size());
        k.loops.push_back(l);
        loop_names.push_back(l.var);
        int64_t m = 0;
        if (__builtin_mul_overflow(mult, trip, &m) || m > kMaxDynamicInstructions) m = kMaxDynamicInstructions + 1;
        Node node{true, id, {}};
        scope.push_back(id);
        body(n.at("body"), node.body, m);
        scope.pop_back();
        // A loop without instructions does nothing; dropping it keeps every walk bounded by
        // the number of instruction executions.
        if (!node.body.empty()) out.push_back(std::move(node));
      } else {
        if (!n.has("engine")) n.fail("expected an instruction (with \"engine\") or a loop (with \"loop\")");
        instruction(n);
        k.dynamic_instructions += mult;
        if (k.dynamic_instructions > kMaxDynamicInstructions)
          n.fail("the loop nest executes more than " + std::to_string(kMaxDynamicInstructions) +
                 " instructions; too large to simulate exactly");
        out.push_back(Node{false, static_cast<int>(k.instrs.size()) - 1, {}});
      }
    }
  }

  void allocation(const JsonCursor& c, Tensor& t, Bytes& factory_next) {
    c.expect_keys({"kind", "base_addr", "base_partition", "base_bank", "num_bank_tiles", "num_free_tiles", "num_par_tiles",
                   "start_partition", "byte_addr", "total_fdim_size", "tiles", "align", "compiler_placed", "comment"});
    Allocation& a = t.alloc;
    std::string kind = c.has("kind") ? c.at("kind").as_string() : "auto";
    // A key of another kind would be silently ignored: each kind lists the keys it reads.
    const bool psum = t.buffer == Memory::kPsum;
    const std::map<std::string, std::vector<std::string>> kKindKeys = {
        {"auto", {"compiler_placed"}},
        {"mod_alloc", psum ? std::vector<std::string>{"base_addr", "base_partition", "base_bank", "num_bank_tiles", "num_par_tiles"}
                           : std::vector<std::string>{"base_addr", "base_partition", "num_free_tiles", "num_par_tiles"}},
        {"func", {"start_partition", "byte_addr"}},
        {"factory", {"total_fdim_size"}},
        {"table", {"tiles", "align"}}};
    if (auto kk = kKindKeys.find(kind); kk != kKindKeys.end())
      for (const auto& [key, value] : c.node().items()) {
        if (key == "kind" || key == "comment" || is_extension_key(key)) continue;
        if (std::find(kk->second.begin(), kk->second.end(), key) != kk->second.end()) continue;
        std::string reads;
        for (const auto& x : kk->second) reads += (reads.empty() ? "" : ", ") + x;
        c.at(key).fail("does not apply to a " + std::string(psum ? "PSUM " : "") + kind + " allocation (it reads " +
                       (reads.empty() ? std::string("no other key") : reads) + ")");
      }
    const std::size_t nb = t.blocks.size();
    auto tiles = [&](const char* key) {
      std::vector<int64_t> v;
      if (!c.has(key)) return v;
      // Any length: the reference model zips the tuple with the block index (truncation).
      v = c.at(key).as_int_array(1);
      int64_t prod = 1;
      for (int64_t x : v)
        if (__builtin_mul_overflow(prod, x, &prod) || prod > kMaxBlocks) c.at(key).fail("too many tiles");
      return v;
    };
    auto small_int = [&](const char* key, int64_t def) {
      if (!c.has(key)) return def;
      int64_t v = c.at(key).as_int();
      if (v > kMaxMagnitude || v < -kMaxMagnitude) c.at(key).fail("value too large");
      return v;
    };
    if (kind == "auto") {
      a.kind = AllocKind::kAuto;
      if (c.has("compiler_placed")) {
        a.compiler_placed = c.at("compiler_placed").as_bool();
        if (a.compiler_placed && t.buffer == Memory::kHbm) c.at("compiler_placed").fail("applies to SBUF and PSUM tensors only");
      }
    } else if (kind == "mod_alloc") {
      a.kind = AllocKind::kModAlloc;
      a.base_addr = small_int("base_addr", 0);
      a.base_partition = small_int("base_partition", 0);
      if (t.buffer == Memory::kPsum) {
        a.base_bank = static_cast<int>(std::clamp<int64_t>(small_int("base_bank", 0), -1'000'000, 1'000'000));
        a.num_bank_tiles = tiles("num_bank_tiles");
      } else if (c.has("base_bank") || c.has("num_bank_tiles")) {
        c.at(c.has("base_bank") ? "base_bank" : "num_bank_tiles").fail("only PSUM mod_alloc has banks");
      }
      a.num_free_tiles = tiles("num_free_tiles");
      a.num_par_tiles = tiles("num_par_tiles");
    } else if (kind == "func") {
      a.kind = AllocKind::kFunc;
      std::vector<std::string> vars;
      for (std::size_t d = 0; d < nb; ++d) vars.push_back("idx" + std::to_string(d));
      if (nb == 1) vars[0] = "idx";  // the seed unpacks a 1-tuple into `idx`
      std::vector<std::pair<std::string, int64_t>> consts = {{"pdim_size", t.pdim}, {"fdim_size", t.fbytes()}};
      for (auto [key, dst] : {std::pair{"start_partition", &a.start_partition_fn}, std::pair{"byte_addr", &a.byte_addr_fn}}) {
        std::string err;
        auto f = c.at(key);
        if (f.node().is_number_integer()) {
          dst->constant = small_int(key, 0);
        } else if (!parse_affine(f.as_string(), vars, consts, *dst, err)) {
          f.fail("bad allocation function \"" + f.as_string() + "\": " + err +
                 (nb == 1 ? " (variables: idx, pdim_size, fdim_size)" : " (variables: idx0.., pdim_size, fdim_size)"));
        }
      }
    } else if (kind == "factory") {
      if (t.buffer != Memory::kSbuf) c.at("kind").fail("the factory allocator is for SBUF tensors");
      a.kind = AllocKind::kFactory;
      a.factory_size = c.at("total_fdim_size").as_int_at_least(0);
      if (a.factory_size > kMaxMagnitude) c.at("total_fdim_size").fail("value too large");
      a.base_addr = factory_next;
      factory_next += a.factory_size;
      if (factory_next > kMaxMagnitude) c.at("total_fdim_size").fail("value too large");
    } else if (kind == "table") {
      a.kind = AllocKind::kTable;
      auto tl = c.at("tiles");
      if (static_cast<int64_t>(tl.array_size()) != t.num_blocks())
        tl.fail("expected one [start_partition, byte_addr] per logical block (" + std::to_string(t.num_blocks()) +
                "), got " + std::to_string(tl.array_size()));
      for (std::size_t i = 0; i < tl.array_size(); ++i) {
        auto e = tl.at(i);
        if (e.array_size() != 2) e.fail("expected [start_partition, byte_addr]");
        int64_t p = e.at(0).as_int(), b = e.at(1).as_int();
        if (std::abs(p) > kMaxMagnitude || std::abs(b) > kMaxMagnitude) e.fail("value too large");
        a.table.push_back({p, b});
      }
      if (c.has("align")) {
        a.align = c.at("align").as_int_at_least(1);
        if (a.align > (1 << 20)) c.at("align").fail("at most 1048576");
      }
    } else {
      c.at("kind").fail("unknown allocation kind \"" + kind + "\" (expected auto, mod_alloc, func, factory or table)");
    }
  }

  void tensor(const JsonCursor& c, Bytes& factory_next) {
    c.expect_keys({"name", "buffer", "role", "shared", "blocks", "partitions", "free", "dtype", "alloc", "source", "comment"});
    Tensor t;
    t.json_path = c.path();
    if (c.has("source")) t.source = c.at("source").as_string();
    t.name = c.at("name").as_string();
    if (t.name.empty()) c.at("name").fail("expected a non-empty name");
    if (k.find_tensor(t.name) >= 0) c.at("name").fail("duplicate tensor name \"" + t.name + "\"");
    std::string buf = c.has("buffer") ? c.at("buffer").as_string() : "sbuf";
    if (buf == "sbuf") t.buffer = Memory::kSbuf;
    else if (buf == "psum") t.buffer = Memory::kPsum;
    else if (buf == "hbm") t.buffer = Memory::kHbm;
    else c.at("buffer").fail("unknown buffer \"" + buf + "\" (expected sbuf, psum or hbm)");
    if (c.has("role")) {
      std::string r = c.at("role").as_string();
      if (t.buffer != Memory::kHbm) c.at("role").fail("only HBM tensors have a role");
      if (r == "input") t.role = HbmRole::kInput;
      else if (r == "output") t.role = HbmRole::kOutput;
      else if (r == "internal") t.role = HbmRole::kNone;
      else if (r == "scratch") t.role = HbmRole::kScratch;
      else c.at("role").fail("expected \"input\", \"output\", \"internal\" or \"scratch\"");
    }
    if (c.has("shared")) {
      if (t.buffer != Memory::kHbm) c.at("shared").fail("only HBM tensors are shared by logical cores");
      t.shared_by_cores = c.at("shared").as_bool();
    }
    if (c.has("blocks")) t.blocks = c.at("blocks").as_int_array(1);
    int64_t nblocks = 1;
    for (int64_t b : t.blocks)
      if (__builtin_mul_overflow(nblocks, b, &nblocks) || nblocks > kMaxBlocks)
        c.at("blocks").fail("more than " + std::to_string(kMaxBlocks) + " logical tiles");
    t.pdim = c.at("partitions").as_int_at_least(1);
    if (t.buffer != Memory::kHbm && t.pdim > k.hw.partitions)
      c.at("partitions").fail("partition dim " + std::to_string(t.pdim) + " exceeds the " +
                              std::to_string(k.hw.partitions) + " partitions of " + k.hw.name);
    if (t.pdim > kMaxMagnitude) c.at("partitions").fail("value too large");
    t.free = c.has("free") ? c.at("free").as_int_array(1) : std::vector<int64_t>{};
    t.dtype = c.has("dtype") ? c.at("dtype").as_string() : "bfloat16";
    auto dt = std::find_if(std::begin(kDTypes), std::end(kDTypes), [&](const DType& d) { return t.dtype == d.name; });
    if (dt == std::end(kDTypes)) c.at("dtype").fail("unknown dtype \"" + t.dtype + "\"");
    t.dtype_bytes = dt->bytes;
    Bytes fb = t.dtype_bytes;
    for (int64_t f : t.free)
      if (__builtin_mul_overflow(fb, f, &fb) || fb > kMaxTileBytes) c.at("free").fail("tile too large");
    if (c.has("alloc")) {
      if (t.buffer == Memory::kHbm) c.at("alloc").fail("HBM tensors have no SBUF/PSUM allocation");
      allocation(c.at("alloc"), t, factory_next);
    }
    k.tensors.push_back(std::move(t));
  }
};

}  // namespace

// ---- small helpers ---------------------------------------------------------------------------

const char* engine_name(Engine e) {
  switch (e) {
    case Engine::kDma: return "DMA";
    case Engine::kScalar: return "Scalar";
    case Engine::kVector: return "Vector";
    case Engine::kTensor: return "Tensor";
    case Engine::kGpSimd: return "GpSimd";
  }
  return "?";
}

const char* memory_name(Memory b) { return b == Memory::kSbuf ? "sbuf" : b == Memory::kPsum ? "psum" : "hbm"; }

const char* alloc_kind_name(AllocKind k) {
  switch (k) {
    case AllocKind::kAuto: return "auto";
    case AllocKind::kModAlloc: return "mod_alloc";
    case AllocKind::kFunc: return "func";
    case AllocKind::kFactory: return "factory";
    case AllocKind::kTable: return "table";
  }
  return "?";
}

int64_t Tensor::num_blocks() const {
  int64_t n = 1;
  for (int64_t b : blocks) n *= b;
  return n;
}

Bytes Tensor::fbytes() const {
  Bytes n = dtype_bytes;
  for (int64_t f : free) n *= f;
  return n;
}

std::vector<int64_t> Tensor::unflatten(int64_t linear) const {
  std::vector<int64_t> idx(blocks.size());
  for (std::size_t d = blocks.size(); d-- > 0;) {
    idx[d] = linear % blocks[d];
    linear /= blocks[d];
  }
  return idx;
}

TensorId Kernel::find_tensor(const std::string& name) const {
  for (std::size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == name) return static_cast<TensorId>(i);
  return -1;
}

bool Kernel::uses_direct_allocation() const {
  return std::any_of(tensors.begin(), tensors.end(),
                     [](const Tensor& t) { return t.buffer != Memory::kHbm && t.alloc.kind != AllocKind::kAuto; });
}

int64_t eval(const Affine& a, const std::vector<int64_t>& vars) {
  int64_t v = a.constant;
  for (auto [id, c] : a.terms) v += c * vars[id];
  return v;
}

std::string affine_to_string(const Affine& a, const std::vector<std::string>& names) {
  std::string s;
  for (auto [v, c] : a.terms) {
    std::string name = v < static_cast<int>(names.size()) ? names[v] : "v" + std::to_string(v);
    if (!s.empty()) s += c < 0 ? " - " : " + ";
    else if (c < 0) s += "-";
    int64_t m = c < 0 ? -c : c;
    s += m == 1 ? name : std::to_string(m) + "*" + name;
  }
  if (s.empty()) return std::to_string(a.constant);
  if (a.constant > 0) s += " + " + std::to_string(a.constant);
  if (a.constant < 0) s += " - " + std::to_string(-a.constant);
  return s;
}

bool parse_affine(const std::string& text, const std::vector<std::string>& vars,
                  const std::vector<std::pair<std::string, int64_t>>& consts, Affine& out, std::string& error) {
  if (text.size() > 4096) {
    error = "expression too long";
    return false;
  }
  AffineParser p(text, vars, consts);
  return p.parse(out, error);
}

int64_t modulo_linear(const std::vector<int64_t>& tiles, const std::vector<int64_t>& idx) {
  int64_t lin = 0;
  const std::size_t n = std::min(tiles.size(), idx.size());
  for (std::size_t d = 0; d < n; ++d) {
    const int64_t t = std::max<int64_t>(tiles[d], 1);
    lin = lin * t + ((idx[d] % t) + t) % t;
  }
  return lin;
}

const std::vector<std::pair<std::string, double>>& default_cycle_model() {
  static const std::vector<std::pair<std::string, double>> m = {
      {"reference_clock_ghz", 1.4},  // timeline unit: cycles of this clock
      {"tensor_clock_ghz", 2.8},     {"vector_clock_ghz", 1.12}, {"scalar_clock_ghz", 1.4},
      {"gpsimd_clock_ghz", 1.4},     {"min_ii", 64},             {"matmul_fp32_factor", 4},
      {"gpsimd_fixed", 150},         {"dma_fixed", 2000},        {"dma_bytes_per_cycle", 32}};
  return m;
}

std::string block_string(const std::vector<int64_t>& idx) {
  std::string s = "(";
  for (std::size_t i = 0; i < idx.size(); ++i) s += (i ? ", " : "") + std::to_string(idx[i]);
  return s + (idx.size() == 1 ? ",)" : ")");
}

std::string iteration_string(const Kernel& k, const Instruction& ins, const std::vector<int64_t>& vals) {
  std::string s = "{";
  for (std::size_t i = 0; i < ins.loops.size(); ++i)
    s += (i ? ", " : "") + k.loops[ins.loops[i]].var + "=" + std::to_string(vals[ins.loops[i]]);
  return s + "}";
}

// ---- hardware ---------------------------------------------------------------------------------

Result<Hardware> builtin_hardware(const std::string& name) {
  if (name == "neuroncore-v2" || name == "v2" || name == "trn1" || name == "inf2") return Hardware{};
  if (name == "trn2" || name == "neuroncore-v3" || name == "v3") {
    // Trn2 (NeuronCore-v3): 224 KiB per SBUF partition, 16 KiB of it the compiler's
    // (nl.tile_size.total_available_sbuf_size = 212,992 B; nki-library budgets 224*1024 - 16384 - ...);
    // PSUM as on v2: 8 banks of 2 KiB per partition.
    Hardware h;
    h.name = "trn2";
    h.sbuf_partition_bytes = 224 * 1024;
    h.sbuf_reserved_bytes = 16 * 1024;
    return h;
  }
  return bad_input("unknown built-in hardware \"" + name + "\" (built in: trn1 (neuroncore-v2, inf2), trn2 "
                   "(neuroncore-v3); others via a JSON file)");
}

bool is_builtin_hardware_name(const std::string& name) {
  for (const char* n : {"neuroncore-v2", "v2", "trn1", "inf2", "trn2", "neuroncore-v3", "v3"})
    if (name == n) return true;
  return false;
}

Result<Hardware> hardware_from_json(const JsonCursor& c) {
  try {
    c.expect_keys({"name", "partitions", "sbuf_partition_bytes", "sbuf_reserved_bytes", "sbuf_min_align", "psum_banks",
                   "psum_bank_bytes", "dma_queues", "cycle_model", "comment"});
    Hardware h;
    if (c.has("cycle_model")) {
      auto cm = c.at("cycle_model");
      std::vector<std::string> names;
      for (auto& [n, v] : h.cycle_model) names.push_back(n);
      cm.expect_keys(names);
      for (auto& [n, v] : h.cycle_model)
        if (cm.has(n)) {
          auto x = cm.at(n);
          if (!x.node().is_number()) x.fail("expected a number, got " + describe_json(x.node()));
          v = x.node().get<double>();
          if (!(v >= 0 && v <= 1e12)) x.fail("expected a finite number in [0, 1e12]");
        }
    }
    if (c.has("name")) h.name = c.at("name").as_string();
    auto get = [&](const char* key, int64_t def, int64_t min) {
      if (!c.has(key)) return def;
      int64_t v = c.at(key).as_int_at_least(min);
      if (v > kMaxMagnitude) c.at(key).fail("value too large");
      return v;
    };
    h.partitions = get("partitions", h.partitions, 1);
    if (h.partitions > (1 << 16)) c.at("partitions").fail("at most 65536 partitions");
    h.sbuf_partition_bytes = get("sbuf_partition_bytes", h.sbuf_partition_bytes, 1);
    h.sbuf_reserved_bytes = get("sbuf_reserved_bytes", h.sbuf_reserved_bytes, 0);
    h.sbuf_min_align = get("sbuf_min_align", h.sbuf_min_align, 1);
    h.psum_banks = static_cast<int>(std::min<int64_t>(get("psum_banks", h.psum_banks, 1), 1 << 16));
    h.psum_bank_bytes = get("psum_bank_bytes", h.psum_bank_bytes, 1);
    h.dma_queues = static_cast<int>(get("dma_queues", h.dma_queues, 1));
    if (h.dma_queues > 64) c.at("dma_queues").fail("at most 64 DMA queues");
    if (h.psum_bank_bytes > (int64_t{1} << 30)) c.at("psum_bank_bytes").fail("at most 2^30 bytes per bank");
    if (h.sbuf_reserved_bytes >= h.sbuf_partition_bytes)
      c.at("sbuf_reserved_bytes").fail("the reserved bytes leave no usable SBUF");
    return h;
  } catch (const JsonInputError& e) {
    return bad_input(e.what());
  }
}

Result<Hardware> read_hardware_file(const std::string& path) {
  auto j = read_json_file(path);
  if (!j) return j.error();
  return hardware_from_json(JsonCursor(*j, input_name(path)));
}

// ---- kernel reader / writer -----------------------------------------------------------------

Result<Kernel> kernel_from_json(const Json& json, const std::string& source, const Hardware* hw_override) {
  try {
    JsonCursor root(json, source);
    root.expect_keys({"format", "version", "hardware", "tensors", "body", "comment", "modelled_generically"});
    root.expect_format("scratchplan-nki-kernel", 1);
    Kernel k;
    k.source = source;
    if (root.has("hardware")) {
      auto hc = root.at("hardware");
      if (hc.node().is_string()) {
        auto hw = builtin_hardware(hc.as_string());
        if (!hw) hc.fail(hw.error().message);
        k.hw = *hw;
      } else {
        auto hw = hardware_from_json(hc);  // its errors are already located ($.hardware.<key>)
        if (!hw) throw JsonInputError(hw.error().message);
        k.hw = *hw;
      }
    }
    if (hw_override) k.hw = *hw_override;
    if (root.has("modelled_generically"))
      for (auto& g : root.at("modelled_generically").elements()) {
        g.expect_keys({"call", "source"});
        k.generic_calls.emplace_back(g.at("call").as_string(), g.has("source") ? g.at("source").as_string() : "");
      }
    Reader r{k, {}, {}};
    Bytes factory_next = 0;
    int64_t total_blocks = 0;
    for (auto& t : root.at("tensors").elements()) {
      r.tensor(t, factory_next);
      total_blocks += k.tensors.back().num_blocks();
      if (total_blocks > kMaxTotalBlocks)
        t.fail("the tensors have more than " + std::to_string(kMaxTotalBlocks) + " logical tiles in total");
    }
    r.body(root.at("body"), k.body, 1);
    return k;
  } catch (const JsonInputError& e) {
    return bad_input(e.what());
  }
}

Result<Kernel> read_kernel(const std::string& path, const Hardware* hw) {
  auto j = read_json_file(path);
  if (!j) return j.error();
  return kernel_from_json(*j, input_name(path), hw);
}

namespace {

Json alloc_to_json(const Tensor& t) {
  const Allocation& a = t.alloc;
  Json j;
  j["kind"] = alloc_kind_name(a.kind);
  switch (a.kind) {
    case AllocKind::kAuto:
      if (a.compiler_placed) j["compiler_placed"] = true;
      break;
    case AllocKind::kModAlloc:
      j["base_addr"] = a.base_addr;
      j["base_partition"] = a.base_partition;
      if (t.buffer == Memory::kPsum) {
        j["base_bank"] = a.base_bank;
        j["num_bank_tiles"] = a.num_bank_tiles;
      } else {
        j["num_free_tiles"] = a.num_free_tiles;  // PSUM rotates banks, not free-dim tiles
      }
      j["num_par_tiles"] = a.num_par_tiles;
      break;
    case AllocKind::kFunc: {
      std::vector<std::string> vars;
      for (std::size_t d = 0; d < t.blocks.size(); ++d) vars.push_back("idx" + std::to_string(d));
      if (vars.size() == 1) vars[0] = "idx";
      j["start_partition"] = affine_to_string(a.start_partition_fn, vars);
      j["byte_addr"] = affine_to_string(a.byte_addr_fn, vars);
      break;
    }
    case AllocKind::kFactory: j["total_fdim_size"] = a.factory_size; break;
    case AllocKind::kTable: {
      Json tiles = Json::array();
      for (auto [p, b] : a.table) tiles.push_back({p, b});
      j["tiles"] = tiles;
      if (a.align > 0) j["align"] = a.align;
      break;
    }
  }
  return j;
}

void body_to_json(const Kernel& k, const std::vector<Node>& nodes, Json& out, std::vector<std::string>& names) {
  for (const Node& n : nodes) {
    if (n.is_loop) {
      Json l;
      l["loop"] = k.loops[n.id].var;
      l["trip"] = k.loops[n.id].trip;
      if (k.loops[n.id].kind != "affine") l["kind"] = k.loops[n.id].kind;
      Json b = Json::array();
      body_to_json(k, n.body, b, names);
      l["body"] = b;
      out.push_back(l);
      continue;
    }
    const Instruction& ins = k.instrs[n.id];
    Json j;
    j["name"] = ins.name;
    j["engine"] = engine_name(ins.engine);
    j["cost"] = ins.cost;
    if (!ins.source.empty()) j["source"] = ins.source;
    if (!ins.when.empty()) {
      Json w = Json::array();
      for (const Affine& g : ins.when) w.push_back(affine_to_string(g, names));
      j["when"] = w;
    }
    for (auto [key, list] : {std::pair{"reads", &ins.reads}, std::pair{"writes", &ins.writes}}) {
      Json arr = Json::array();
      for (const Access& a : *list) {
        Json aj;
        aj["tensor"] = k.tensors[a.tensor].name;
        Json b = Json::array();
        for (const Affine& e : a.index) b.push_back(affine_to_string(e, names));
        aj["block"] = b;
        if (a.p1 >= 0) aj["partitions"] = {a.p0, a.p1};
        if (a.b1 >= 0) aj["bytes"] = {a.b0, a.b1};
        if (a.accumulate) aj["accumulate"] = true;
        arr.push_back(aj);
      }
      j[key] = arr;
    }
    out.push_back(j);
  }
}

}  // namespace

Json hardware_to_json(const Hardware& h) {
  Json hw;
  hw["name"] = h.name;
  hw["partitions"] = h.partitions;
  hw["sbuf_partition_bytes"] = h.sbuf_partition_bytes;
  hw["sbuf_reserved_bytes"] = h.sbuf_reserved_bytes;
  hw["sbuf_min_align"] = h.sbuf_min_align;
  hw["psum_banks"] = h.psum_banks;
  hw["psum_bank_bytes"] = h.psum_bank_bytes;
  hw["dma_queues"] = h.dma_queues;
  Json cm = Json::object();
  for (auto& [n, v] : h.cycle_model) cm[n] = v;
  hw["cycle_model"] = cm;
  return hw;
}

Json kernel_to_json(const Kernel& k) {
  Json j;
  j["format"] = "scratchplan-nki-kernel";
  j["version"] = 1;
  Json hw;
  hw["name"] = k.hw.name;
  hw["partitions"] = k.hw.partitions;
  hw["sbuf_partition_bytes"] = k.hw.sbuf_partition_bytes;
  hw["sbuf_reserved_bytes"] = k.hw.sbuf_reserved_bytes;
  hw["sbuf_min_align"] = k.hw.sbuf_min_align;
  hw["psum_banks"] = k.hw.psum_banks;
  hw["psum_bank_bytes"] = k.hw.psum_bank_bytes;
  hw["dma_queues"] = k.hw.dma_queues;
  Json cm = Json::object();
  for (auto& [n, v] : k.hw.cycle_model) cm[n] = v;
  hw["cycle_model"] = cm;
  j["hardware"] = hw;
  if (!k.generic_calls.empty()) {
    Json g = Json::array();
    for (const auto& [call, src] : k.generic_calls) {
      Json e;
      e["call"] = call;
      if (!src.empty()) e["source"] = src;
      g.push_back(e);
    }
    j["modelled_generically"] = g;
  }
  Json ts = Json::array();
  for (const Tensor& t : k.tensors) {
    Json tj;
    tj["name"] = t.name;
    tj["buffer"] = memory_name(t.buffer);
    if (t.buffer == Memory::kHbm)
      tj["role"] = t.role == HbmRole::kInput    ? "input"
                   : t.role == HbmRole::kOutput ? "output"
                   : t.role == HbmRole::kScratch ? "scratch"
                                                 : "internal";
    if (t.shared_by_cores) tj["shared"] = true;
    tj["blocks"] = t.blocks;
    tj["partitions"] = t.pdim;
    tj["free"] = t.free;
    tj["dtype"] = t.dtype;
    if (!t.source.empty()) tj["source"] = t.source;
    if (t.buffer != Memory::kHbm) tj["alloc"] = alloc_to_json(t);
    ts.push_back(tj);
  }
  j["tensors"] = ts;
  std::vector<std::string> names;
  for (const Loop& l : k.loops) names.push_back(l.var);
  Json body = Json::array();
  body_to_json(k, k.body, body, names);
  j["body"] = body;
  return j;
}

}  // namespace sp::nki
