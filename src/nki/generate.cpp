#include "nki/generate.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/rng.h"

namespace sp::nki {

Json generate_kernel_json(const GenerateOptions& opt) {
  Rng rng(opt.seed);
  Json tensors = Json::array();
  Json body = Json::array();
  // Split loops into stages: one outer loop each, some with one inner loop.
  std::vector<int> depth;  // loops per stage (1 or 2)
  for (int used = 0; used < opt.loops;) {
    int d = (opt.loops - used >= 2 && rng.chance(0.5)) ? 2 : 1;
    depth.push_back(d);
    used += d;
  }
  const int stages = static_cast<int>(depth.size());
  int remaining = opt.tensors;
  int loop_id = 0, tensor_id = 0, op_id = 0;
  std::string carried;          // last SBUF tensor of the previous stage (1-D blocks)
  int64_t carried_blocks = 0;
  auto name = [&](const char* p) { return std::string(p) + std::to_string(tensor_id++); };
  auto tensor = [&](const std::string& n, const char* buf, const char* role, const std::vector<int64_t>& blocks,
                    int64_t free, const char* dtype) {
    Json t = {{"name", n}, {"buffer", buf}, {"blocks", blocks}, {"partitions", 128}, {"free", {free}}, {"dtype", dtype}};
    if (role) t["role"] = role;
    tensors.push_back(t);
  };
  for (int s = 0; s < stages; ++s) {
    // Tensors of this stage: an input, a chain, an output; at least 3.
    int share = std::max(3, remaining / (stages - s));
    if (s == stages - 1) share = std::max(3, remaining);
    remaining -= share;
    std::vector<std::string> vars = {"l" + std::to_string(loop_id++)};
    std::vector<int64_t> trips = {rng.range(2, opt.max_trip)};
    if (depth[s] == 2) {
      vars.push_back("l" + std::to_string(loop_id++));
      trips.push_back(rng.range(2, std::max(2, opt.max_trip / 2)));
    }
    std::vector<int64_t> blocks = trips;
    Json index = Json::array();
    for (auto& v : vars) index.push_back(v);
    auto op = [&](const char* engine, int64_t cost, Json reads, Json writes) {
      return Json{{"name", std::string(engine) + std::to_string(op_id++)}, {"engine", engine}, {"cost", cost},
                  {"reads", reads}, {"writes", writes}};
    };
    Json inner = Json::array();
    int64_t free = 128 * (int64_t{1} << rng.range(1, 3));  // 256..1024 elements
    std::string in = name("in"), out = name("out");
    tensor(in, "hbm", "input", blocks, free, "bfloat16");
    std::string prev = name("s");
    tensor(prev, "sbuf", nullptr, blocks, free, "bfloat16");
    inner.push_back(op("DMA", rng.range(500, 2000), Json::array({{{"tensor", in}, {"block", index}}}),
                       Json::array({{{"tensor", prev}, {"block", index}}})));
    const char* engines[] = {"Scalar", "Vector", "GpSimd", "Tensor"};
    int psum_in_stage = 0;
    for (int c = 3; c < share; ++c) {
      const char* e = engines[rng.below(4)];
      // TensorE reads SBUF and writes PSUM; at most two PSUM tensors per stage keep the banks enough.
      if (std::string(e) == "Tensor" && (psum_in_stage >= 2 || prev[0] == 'p')) e = "Vector";
      bool psum = std::string(e) == "Tensor";
      psum_in_stage += psum;
      std::string cur = name(psum ? "p" : "s");
      // PSUM tiles fit one 2 KiB bank: at most 512 fp32.
      tensor(cur, psum ? "psum" : "sbuf", nullptr, blocks, psum ? std::min<int64_t>(free, 512) : free,
             psum ? "float32" : "bfloat16");
      Json reads = Json::array({{{"tensor", prev}, {"block", index}}});
      if (!carried.empty() && c == 3 && carried_blocks >= trips[0])
        reads.push_back({{"tensor", carried}, {"block", {vars[0]}}});
      inner.push_back(op(e, rng.range(200, 1500), reads, Json::array({{{"tensor", cur}, {"block", index}}})));
      prev = cur;
    }
    if (std::string(tensors.back()["buffer"]) == "psum") {  // DMA reads SBUF: copy out of PSUM first
      std::string cur = name("s");
      tensor(cur, "sbuf", nullptr, blocks, free, "bfloat16");
      inner.push_back(op("Vector", rng.range(200, 800), Json::array({{{"tensor", prev}, {"block", index}}}),
                         Json::array({{{"tensor", cur}, {"block", index}}})));
      prev = cur;
      --remaining;
    }
    tensor(out, "hbm", "output", blocks, free, "bfloat16");
    inner.push_back(op("DMA", rng.range(500, 2000), Json::array({{{"tensor", prev}, {"block", index}}}),
                       Json::array({{{"tensor", out}, {"block", index}}})));
    carried = depth[s] == 1 ? prev : "";
    carried_blocks = trips[0];
    Json loop = {{"loop", vars.back()}, {"trip", trips.back()}, {"body", inner}};
    if (depth[s] == 2) loop = {{"loop", vars[0]}, {"trip", trips[0]}, {"body", Json::array({loop})}};
    body.push_back(loop);
  }
  return Json{{"hardware", "neuroncore-v2"}, {"tensors", tensors}, {"body", body}};
}

}  // namespace sp::nki
