// FlashInfer peer harness for the sonic sampler benchmark (issue 6).
//
// What: times FlashInfer's own CUDA sampling kernels, called through its C++ header API
// (include/flashinfer/sampling.cuh, topk.cuh), on the same shapes and the same kind of
// LLM-like logits as sonic-bench, and writes JSON in the schema of torch_peers.py.
//
// Why: FlashInfer is the strongest public GPU sampler; these are the figures to beat.
// The harness is ours. FlashInfer's headers are NOT in this repository: `cargo xtask bundle`
// (with SONIC_FLASHINFER=1) downloads the pinned flashinfer-python wheel from PyPI into an
// ignored folder and compiles this file against the headers inside it (see
// bench/peers/flashinfer/build.sh). Every call below uses the 0.7.2 signatures as written in
// those headers.
//
// Timed calls (one call per batch for the homogeneous workloads; heterogeneous below uses
// FlashInfer's per-row arrays and one call chain per group of rows it cannot mix):
//   topk50_topp09_t07  OnlineSoftmax (temperature 0.7 applied inside it) followed by
//                      TopKTopPSamplingFromProb (k 50, p 0.9): the two calls together, f32
//   heterogeneous      sonic-bench's per-row mix (same distribution as
//                      sampler_tests::mixed_params, drawn here by a fixed hash): 1/4 greedy,
//                      else T 0.3..1.5, top-k (2/5 1..128, 1/5 129..4128), top-p 0.5..0.99 on 3/5,
//                      min-p 0.001..0.2 on 1/3; f32. Rows are ordered by group, so each group
//                      is one contiguous slice and no gather is needed:
//                        all rows   OnlineSoftmax with the per-row temperature array
//                        group A    rows without min-p, greedy ones as k = 1 (FlashInfer's
//                                   header API has no argmax): one TopKTopPSamplingFromProb with
//                                   per-row top_k/top_p arrays
//                        group B    min-p only: MinPSamplingFromProb, per-row min_p
//                        group C    min-p with top-k and/or top-p (FlashInfer has no fused
//                                   kernel for these): RadixTopKRenormProbMultiCTA (per-row k),
//                                   TopPRenormProb (per-row p), MinPSamplingFromProb
//                      Per-row seeds and offsets go through seed_arr/offset_arr. Not supported by
//                      FlashInfer and left out (so the figure is a lower bound): repetition,
//                      frequency and presence penalties, logit bias, the grammar bitmask fused
//                      with sampling, logprobs.
//   random_full        SamplingFromLogits (Gumbel-max over the full vocabulary), f32
//   topk128            TopKDispatch (what flashinfer.top_k's native backend calls: its
//                      heuristic picks FilteredTopK or RadixTopKMultiCTA), plus each of the
//                      two forced, so the fastest entry point is visible; f32 and bf16
//   topk_mask50        RadixTopKMaskLogitsMultiCTA (what flashinfer.top_k_mask_logits calls),
//                      f32 and bf16
//   verify4            ChainSpeculativeSampling, 4 draft tokens, probabilities in, f32
//   verify_uniform     sonic-bench's verify_uniform: B requests x 4 drafts from target LOGITS:
//                      OnlineSoftmax (T 1) of the 5 target rows per request, then
//                      ChainSpeculativeSampling with the draft probabilities; both timed, f32
//   verify_hetero      sonic-bench's verify_hetero shape: 0..7 drafts per request. FlashInfer
//                      takes one draft count per call, so one group per draft count: softmax +
//                      ChainSpeculativeSampling per group (softmax + SamplingFromProb for the
//                      requests without drafts), all groups timed together. FlashInfer has no
//                      penalties, bitmask, top-k/top-p/min-p or one-hot drafts in this path, so
//                      every request runs T 1 with dense draft probabilities: a lower bound.
//                      Shapes: V 128256, 151936; B 1, 8, 32, 128 (--quick: V 128256, B 1, 32).
// The sampling entry points are bound for f32 only in FlashInfer's Python package, so they
// run in f32 only here; the top-k entry points take bf16 too.
//
// Timer: CUDA events around the call(s) only; a 256 MB memset before every run (outside the
// timed region) flushes the L2; 10 warm-up runs, then >= 100 timed runs; median/p10/p90.
// Deterministic sampling (FlashInfer's Python default) is used.
//
// Inputs: N(0, 2) logits from a counter hash (Box-Muller), plus 20 tokens per row raised by
// +8 to +14, as in sonic-bench. Never zeros.
//
// Usage: flashinfer_peers --out FILE.json [--quick] [--runs N] [--vocabs a,b] [--batches a,b]
//        flashinfer_peers --help
// Exit status: 0 done, 1 a CUDA error that left the context unusable, 2 usage / no CUDA device.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <flashinfer/sampling.cuh>
#include <flashinfer/topk.cuh>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#ifndef FLASHINFER_VERSION_STR
#define FLASHINFER_VERSION_STR "unknown"
#endif

namespace fi = flashinfer::sampling;

// ---------------------------------------------------------------- input generation

__device__ __forceinline__ uint32_t mix32(uint32_t x) {
  x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;
  return x;
}
__device__ __forceinline__ float unit(uint32_t h) {  // (0, 1]
  return ((h >> 8) + 1u) * (1.0f / 16777216.0f);
}

// N(0, 2): standard deviation 2.
__global__ void make_logits_f32(float* out, uint32_t rows, uint32_t vocab, uint32_t seed) {
  size_t n = (size_t)rows * vocab;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    uint32_t h1 = mix32((uint32_t)i * 2u + 0x9e3779b9u * seed + (uint32_t)(i >> 32));
    uint32_t h2 = mix32(h1 ^ 0x85ebca6bu);
    float r = sqrtf(-2.0f * logf(unit(h1)));
    out[i] = 2.0f * r * cospif(2.0f * unit(h2));
  }
}

// About 20 boosted tokens per row, +8 to +14 (a duplicate position is boosted twice; harmless).
__global__ void boost_logits_f32(float* out, uint32_t rows, uint32_t vocab, uint32_t seed) {
  uint32_t row = blockIdx.x, j = threadIdx.x;  // 20 threads per row
  if (row >= rows || j >= 20) return;
  uint32_t h = mix32(row * 0x632be5abu + j * 0x9e3779b9u + seed * 0x2545f491u);
  uint32_t col = h % vocab;
  out[(size_t)row * vocab + col] += 8.0f + 6.0f * unit(mix32(h));
}

__global__ void to_bf16(const float* in, __nv_bfloat16* out, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    out[i] = __float2bfloat16(in[i]);
}

// ---------------------------------------------------------------- helpers

static bool g_fatal = false;  // a sticky CUDA error: stop measuring, keep what we have

static std::string err_str(cudaError_t e) { return std::string(cudaGetErrorString(e)); }

static bool is_sticky(cudaError_t e) {
  return e == cudaErrorIllegalAddress || e == cudaErrorLaunchFailure ||
         e == cudaErrorMisalignedAddress || e == cudaErrorIllegalInstruction ||
         e == cudaErrorHardwareStackError || e == cudaErrorAssert;
}

struct DevBuf {  // cudaMalloc'd bytes, freed on scope exit
  void* p = nullptr;
  DevBuf() = default;
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  cudaError_t alloc(size_t bytes) { return cudaMalloc(&p, bytes); }
  void reset() { if (p) cudaFree(p); p = nullptr; }
  ~DevBuf() { reset(); }
  template <typename T> T* as() const { return static_cast<T*>(p); }
};

static cudaError_t fill_logits(float* out, uint32_t rows, uint32_t vocab, uint32_t seed) {
  make_logits_f32<<<4096, 256>>>(out, rows, vocab, seed);
  boost_logits_f32<<<rows, 32>>>(out, rows, vocab, seed);
  return cudaGetLastError();
}

struct Timing {
  double median = 0, p10 = 0, p90 = 0;
  std::string error;  // empty: ok
};

static double quantile(std::vector<float> v, double q) {  // linear, as torch.quantile
  std::sort(v.begin(), v.end());
  double pos = q * (v.size() - 1);
  size_t lo = (size_t)std::floor(pos), hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - lo) * (v[hi] - v[lo]);
}

struct Timer {
  void* flush = nullptr;
  size_t flush_bytes = 256u << 20;
  cudaEvent_t start{}, stop{};
  int runs = 100, warmup = 10;

  // `call` launches the FlashInfer work on stream 0 and returns its cudaError_t.
  Timing time(const std::function<cudaError_t()>& call) {
    Timing t;
    std::vector<float> us;
    for (int i = 0; i < warmup + runs; ++i) {
      cudaMemsetAsync(flush, i & 0xff, flush_bytes);
      cudaEventRecord(start);
      cudaError_t e = call();
      cudaEventRecord(stop);
      cudaError_t s = cudaEventSynchronize(stop);
      if (e == cudaSuccess) e = s;
      if (e == cudaSuccess) e = cudaGetLastError();
      if (e != cudaSuccess) {
        t.error = "error: " + err_str(e);
        if (is_sticky(e)) g_fatal = true;
        else cudaGetLastError();
        return t;
      }
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      if (i >= warmup) us.push_back(ms * 1e3f);
    }
    t.median = quantile(us, 0.5);
    t.p10 = quantile(us, 0.1);
    t.p90 = quantile(us, 0.9);
    return t;
  }
};

// ---------------------------------------------------------------- JSON output

static std::string jstr(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') { o += '\\'; o += c; }
    else if ((unsigned char)c < 0x20) { char b[8]; snprintf(b, sizeof b, "\\u%04x", c); o += b; }
    else o += c;
  }
  return o + "\"";
}

struct Row {
  std::string impl, workload, dtype, note;
  uint32_t batch, vocab;
  size_t bytes;
  Timing t;
};

static void write_json(const char* path, const std::string& device, int runs,
                       const std::vector<Row>& rows) {
  std::string tmp = std::string(path) + ".tmp";
  FILE* f = fopen(tmp.c_str(), "w");
  if (!f) { fprintf(stderr, "cannot write %s\n", tmp.c_str()); return; }
  char date[16];
  time_t now = time(nullptr);
  strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
  fprintf(f, "{\n \"producer\": \"flashinfer-peers\",\n \"device\": %s,\n \"date\": \"%s\",\n",
          jstr(device).c_str(), date);
  fprintf(f, " \"flashinfer\": \"%s\",\n \"api\": \"C++ headers (include/flashinfer), nvcc %d.%d\",\n",
          FLASHINFER_VERSION_STR, __CUDACC_VER_MAJOR__, __CUDACC_VER_MINOR__);
  fprintf(f, " \"timer\": \"cuda-events, 256 MB L2 flush before each run, 10 warm-up, %d runs\",\n", runs);
  fprintf(f, " \"not_built\": [\n"
             "  {\"impl\": \"flashinfer.cake_sampling\", \"note\": \"not in this harness: a JIT module (tens of minutes of nvcc), built ahead of time by build_cake.sh and timed by cake_peer.py into cake-peers.json (SONIC_FLASHINFER_CAKE=1 bundle, run.sh cake)\"},\n"
             "  {\"impl\": \"flashinfer.top_k(cub)\", \"note\": \"not built: the CUB DeviceBatchedTopK backend lives in FlashInfer's csrc/cub_topk.cu (a TVM-FFI binding), not in its header API\"},\n"
             "  {\"impl\": \"flashinfer.topk_clusters_exact\", \"note\": \"not built: FlashInfer selects it only on compute capability 10.x, not on an H200\"}\n"
             " ],\n");
  fprintf(f, " \"results\": [");
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    bool ok = r.t.error.empty();
    std::string note = ok ? r.note : (r.note.empty() ? r.t.error : r.note + "; " + r.t.error);
    fprintf(f, "%s\n  {\"impl\": %s, \"workload\": %s, \"dtype\": %s, \"batch\": %u, \"vocab\": %u, ",
            i ? "," : "", jstr(r.impl).c_str(), jstr(r.workload).c_str(), jstr(r.dtype).c_str(),
            r.batch, r.vocab);
    if (ok)
      fprintf(f, "\"median_us\": %.4f, \"p10_us\": %.4f, \"p90_us\": %.4f, \"bytes\": %zu, "
                 "\"gb_per_s\": %.4f, ",
              r.t.median, r.t.p10, r.t.p90, r.bytes, r.bytes / (r.t.median * 1e3));
    else
      fprintf(f, "\"median_us\": null, \"p10_us\": null, \"p90_us\": null, \"bytes\": %zu, "
                 "\"gb_per_s\": null, ", r.bytes);
    fprintf(f, "\"copy_fraction\": null, \"note\": %s}", jstr(note).c_str());
  }
  fprintf(f, "\n ]\n}\n");
  fclose(f);
  rename(tmp.c_str(), path);
}

// ---------------------------------------------------------------- one shape

constexpr uint64_t SEED = 0x5eed, OFFSET = 0;
constexpr size_t ROW_STATES_BYTES = 1u << 20;   // as flashinfer.top_k allocates (1 MB, zeroed)
constexpr size_t SOFTMAX_WS_BYTES = 8u << 20;   // flashinfer.softmax uses 1 MB; 8 MB is ample

template <typename T>
static void topk_rows(Timer& timer, std::vector<Row>& out, const char* dtype, const T* logits_c,
                      uint32_t B, uint32_t V, fi::RadixRowState* row_states) {
  T* logits = const_cast<T*>(logits_c);
  size_t bytes = (size_t)B * V * sizeof(T);
  DevBuf idx, vals, masked;
  cudaError_t e;
  if ((e = idx.alloc((size_t)B * 128 * sizeof(int32_t))) != cudaSuccess ||
      (e = vals.alloc((size_t)B * 128 * sizeof(T))) != cudaSuccess ||
      (e = masked.alloc(bytes)) != cudaSuccess) {
    cudaGetLastError();
    for (const char* impl : {"flashinfer.top_k", "flashinfer.filtered_topk",
                             "flashinfer.radix_topk_multi_cta", "flashinfer.top_k_mask_logits"})
      out.push_back({impl, strstr(impl, "mask") ? "topk_mask50" : "topk128", dtype,
                     "skipped: " + err_str(e), B, V, bytes, {}});
    return;
  }
  const uint32_t k = 128;
  Row r{"flashinfer.top_k", "topk128", dtype,
        "TopKDispatch: FlashInfer's heuristic picks FilteredTopK or RadixTopKMultiCTA; unsorted",
        B, V, bytes, {}};
  r.t = timer.time([&] {
    return fi::TopKDispatch<T, int32_t>(logits, idx.as<int32_t>(), vals.as<T>(), B, k, V,
                                        row_states, /*sorted_output=*/false,
                                        /*deterministic=*/false, fi::TopKTieBreak::None, 0);
  });
  out.push_back(r);
  if (g_fatal) return;

  r = Row{"flashinfer.filtered_topk", "topk128", dtype, "FilteredTopK forced", B, V, bytes, {}};
  if (fi::CanImplementFilteredTopK())
    r.t = timer.time([&] {
      return fi::FilteredTopK<T, int32_t>(logits, idx.as<int32_t>(), vals.as<T>(), nullptr, B, k,
                                          V, false, fi::TopKTieBreak::None, 0);
    });
  else
    r.t.error = "skipped: CanImplementFilteredTopK() is false on this GPU";
  out.push_back(r);
  if (g_fatal) return;

  r = Row{"flashinfer.radix_topk_multi_cta", "topk128", dtype, "RadixTopKMultiCTA forced", B, V,
          bytes, {}};
  r.t = timer.time([&] {
    return fi::RadixTopKMultiCTA<T, int32_t>(logits, idx.as<int32_t>(), vals.as<T>(), nullptr, B,
                                             k, V, row_states, false, 0);
  });
  out.push_back(r);
  if (g_fatal) return;

  r = Row{"flashinfer.top_k_mask_logits", "topk_mask50", dtype,
          "RadixTopKMaskLogitsMultiCTA, k 50, writes a masked copy", B, V, bytes, {}};
  r.t = timer.time([&] {
    return fi::RadixTopKMaskLogitsMultiCTA<T, int>(logits, masked.as<T>(), nullptr, B, 50, V,
                                                   row_states, 0);
  });
  out.push_back(r);
}

// Draws of the heterogeneous mix: a counter hash of (row, draw), uniform in [0, 1).
static double hash_unit(uint32_t row, uint32_t draw, uint32_t salt) {
  uint64_t x = ((uint64_t)row << 32 | draw) ^ ((uint64_t)salt * 0x9e3779b97f4a7c15ull);
  x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull; x ^= x >> 33;
  return (x >> 11) * (1.0 / 9007199254740992.0);
}

struct HeteroRow {
  int group;  // 0: C (min-p with top-k/top-p), 1: B (min-p only), 2: A (the rest); the order
  float temperature, top_p, min_p;
  int32_t top_k;
  uint64_t seed;
  bool greedy;
};

// One row's settings as mixed_params draws them (its distribution, not its draws). "Off" is
// k = V and p = 1 (FlashInfer's no-op values) and min-p 0.
static HeteroRow hetero_settings(uint32_t r, uint32_t V) {
  auto u = [&](uint32_t d) { return hash_unit(r, d, V); };
  HeteroRow h{2, 1.0f, 1.0f, 0.0f, (int32_t)V, 0x5eedull + r, u(0) < 0.25};
  double kind = u(1);
  if (h.greedy) {  // greedy ignores every truncation (docs/SEMANTICS.md): argmax as k = 1
    h.top_k = 1;
    return h;
  }
  h.temperature = 0.3f + (float)u(2) * 1.2f;
  if (kind >= 0.4 && kind < 0.8) h.top_k = 1 + (int32_t)(u(3) * 128);
  else if (kind >= 0.8) h.top_k = 129 + (int32_t)(u(3) * 4000);
  if (h.top_k > (int32_t)V) h.top_k = (int32_t)V;
  if (u(4) < 0.6) h.top_p = 0.5f + 0.49f * (float)u(5);
  if (u(6) < 1.0 / 3.0) {
    h.min_p = 0.001f + 0.2f * (float)u(7);
    h.group = (h.top_k < (int32_t)V || h.top_p < 1.0f) ? 0 : 1;
  }
  return h;
}

static void hetero_rows(Timer& timer, std::vector<Row>& out, const float* logits_c, uint32_t B,
                        uint32_t V, fi::RadixRowState* row_states) {
  float* logits = const_cast<float*>(logits_c);
  size_t bytes = (size_t)B * V * sizeof(float);
  std::vector<HeteroRow> rows;
  for (uint32_t r = 0; r < B; ++r) rows.push_back(hetero_settings(r, V));
  std::stable_sort(rows.begin(), rows.end(),
                   [](const HeteroRow& a, const HeteroRow& b) { return a.group < b.group; });
  uint32_t n[3] = {0, 0, 0}, greedy = 0;
  for (const HeteroRow& h : rows) { n[h.group] += 1; greedy += h.greedy; }
  std::vector<float> temp, top_p, min_p;
  std::vector<int32_t> top_k;
  std::vector<uint64_t> seeds, offsets(B, 0);
  for (const HeteroRow& h : rows) {
    temp.push_back(h.temperature); top_p.push_back(h.top_p); min_p.push_back(h.min_p);
    top_k.push_back(h.top_k); seeds.push_back(h.seed);
  }
  char note[640];
  snprintf(note, sizeof note,
           "per-row mix in %u/%u/%u rows (A: TopKTopPSamplingFromProb, %u of them greedy as k 1; "
           "B: MinPSamplingFromProb; C: RadixTopKRenormProbMultiCTA + TopPRenormProb + "
           "MinPSamplingFromProb), after one OnlineSoftmax with per-row T; per-row seeds via "
           "seed_arr; top-p before min-p in C. Not supported by FlashInfer, left out (a lower "
           "bound): penalties, logit bias, grammar bitmask fused with sampling, logprobs; "
           "deterministic; all calls timed",
           n[2], n[1], n[0], greedy);
  Row r{"flashinfer.softmax+per_row_sampling", "heterogeneous", "f32", note, B, V, bytes, {}};
  DevBuf probs, tmp, ws, ids, valid, d_temp, d_top_p, d_min_p, d_top_k, d_seeds, d_offsets;
  cudaError_t e;
  if ((e = probs.alloc(bytes)) != cudaSuccess || (e = tmp.alloc(bytes)) != cudaSuccess ||
      (e = ws.alloc(SOFTMAX_WS_BYTES)) != cudaSuccess ||
      (e = ids.alloc(B * sizeof(int32_t))) != cudaSuccess || (e = valid.alloc(B)) != cudaSuccess ||
      (e = d_temp.alloc(B * sizeof(float))) != cudaSuccess ||
      (e = d_top_p.alloc(B * sizeof(float))) != cudaSuccess ||
      (e = d_min_p.alloc(B * sizeof(float))) != cudaSuccess ||
      (e = d_top_k.alloc(B * sizeof(int32_t))) != cudaSuccess ||
      (e = d_seeds.alloc(B * sizeof(uint64_t))) != cudaSuccess ||
      (e = d_offsets.alloc(B * sizeof(uint64_t))) != cudaSuccess ||
      (e = cudaMemcpy(d_temp.p, temp.data(), B * sizeof(float), cudaMemcpyHostToDevice)) != cudaSuccess ||
      (e = cudaMemcpy(d_top_p.p, top_p.data(), B * sizeof(float), cudaMemcpyHostToDevice)) != cudaSuccess ||
      (e = cudaMemcpy(d_min_p.p, min_p.data(), B * sizeof(float), cudaMemcpyHostToDevice)) != cudaSuccess ||
      (e = cudaMemcpy(d_top_k.p, top_k.data(), B * sizeof(int32_t), cudaMemcpyHostToDevice)) != cudaSuccess ||
      (e = cudaMemcpy(d_seeds.p, seeds.data(), B * sizeof(uint64_t), cudaMemcpyHostToDevice)) != cudaSuccess ||
      (e = cudaMemcpy(d_offsets.p, offsets.data(), B * sizeof(uint64_t), cudaMemcpyHostToDevice)) != cudaSuccess) {
    if (is_sticky(e)) g_fatal = true;
    cudaGetLastError();
    r.t.error = "skipped: " + err_str(e);
    out.push_back(r);
    return;
  }
  // Group slices: C from row 0, then B, then A; the per-row arrays are offset the same way.
  // `prow(buf, row)` is the start of a row of probabilities.
  const uint32_t c0 = 0, b0 = n[0], a0 = n[0] + n[1];
  auto prow = [&](DevBuf& b, uint32_t row) { return b.as<float>() + (size_t)row * V; };
  r.t = timer.time([&] {
    cudaError_t s = fi::OnlineSoftmax<float>(logits, probs.as<float>(), B, V, d_temp.as<float>(),
                                             1.0f, ws.p, SOFTMAX_WS_BYTES, false, 0);
    if (s != cudaSuccess) return s;
    if (n[2] > 0) {
      s = fi::TopKTopPSamplingFromProb<float, int32_t>(
          prow(probs, a0), d_top_k.as<int32_t>() + a0, d_top_p.as<float>() + a0,
          ids.as<int32_t>() + a0, valid.as<bool>() + a0, nullptr, n[2], 0, 1.0f, V,
          /*deterministic=*/true, d_seeds.as<uint64_t>() + a0, 0, d_offsets.as<uint64_t>() + a0,
          0, 0, /*seed_stride=*/1, /*offset_stride=*/1);
      if (s != cudaSuccess) return s;
    }
    if (n[1] > 0) {
      s = fi::MinPSamplingFromProb<float, int32_t>(
          prow(probs, b0), d_min_p.as<float>() + b0, ids.as<int32_t>() + b0,
          valid.as<bool>() + b0, nullptr, n[1], 0.0f, V, true, d_seeds.as<uint64_t>() + b0, 0,
          d_offsets.as<uint64_t>() + b0, 0, 0, 1, 1);
      if (s != cudaSuccess) return s;
    }
    if (n[0] > 0) {
      s = fi::RadixTopKRenormProbMultiCTA<float, int32_t>(prow(probs, c0), prow(tmp, c0),
                                                          d_top_k.as<int32_t>() + c0, n[0], 0, V,
                                                          row_states, /*deterministic=*/true, 0);
      if (s != cudaSuccess) return s;
      s = fi::TopPRenormProb<float>(prow(tmp, c0), prow(probs, c0), d_top_p.as<float>() + c0,
                                    n[0], 1.0f, V, 0);
      if (s != cudaSuccess) return s;
      s = fi::MinPSamplingFromProb<float, int32_t>(
          prow(probs, c0), d_min_p.as<float>() + c0, ids.as<int32_t>() + c0,
          valid.as<bool>() + c0, nullptr, n[0], 0.0f, V, true, d_seeds.as<uint64_t>() + c0, 0,
          d_offsets.as<uint64_t>() + c0, 0, 0, 1, 1);
    }
    return s;
  });
  out.push_back(r);
}

static void sampling_rows(Timer& timer, std::vector<Row>& out, const float* logits_c, uint32_t B,
                          uint32_t V) {
  float* logits = const_cast<float*>(logits_c);
  size_t bytes = (size_t)B * V * sizeof(float);
  DevBuf probs, ws, ids, valid;
  cudaError_t e;
  if ((e = probs.alloc(bytes)) != cudaSuccess || (e = ws.alloc(SOFTMAX_WS_BYTES)) != cudaSuccess ||
      (e = ids.alloc(B * sizeof(int32_t))) != cudaSuccess ||
      (e = valid.alloc(B)) != cudaSuccess) {
    cudaGetLastError();
    out.push_back({"flashinfer.softmax+top_k_top_p_sampling_from_probs", "topk50_topp09_t07",
                   "f32", "skipped: " + err_str(e), B, V, bytes, {}});
    out.push_back({"flashinfer.sampling_from_logits", "random_full", "f32",
                   "skipped: " + err_str(e), B, V, bytes, {}});
    return;
  }
  Row r{"flashinfer.softmax+top_k_top_p_sampling_from_probs", "topk50_topp09_t07", "f32",
        "OnlineSoftmax (temperature 0.7 inside it) then TopKTopPSamplingFromProb (k 50, p 0.9), "
        "deterministic; both calls timed",
        B, V, bytes, {}};
  r.t = timer.time([&] {
    cudaError_t s = fi::OnlineSoftmax<float>(logits, probs.as<float>(), B, V, nullptr, 0.7f,
                                             ws.p, SOFTMAX_WS_BYTES, /*enable_pdl=*/false, 0);
    if (s != cudaSuccess) return s;
    return fi::TopKTopPSamplingFromProb<float, int32_t>(
        probs.as<float>(), nullptr, nullptr, ids.as<int32_t>(), valid.as<bool>(), nullptr, B, 50,
        0.9f, V, /*deterministic=*/true, nullptr, SEED, nullptr, OFFSET, 0);
  });
  out.push_back(r);
  if (g_fatal) return;

  r = Row{"flashinfer.sampling_from_logits", "random_full", "f32",
          "SamplingFromLogits, no truncation, T 1, deterministic", B, V, bytes, {}};
  r.t = timer.time([&] {
    return fi::SamplingFromLogits<float, int32_t>(logits, ids.as<int32_t>(), nullptr, B, V, true,
                                                  nullptr, SEED, nullptr, OFFSET, 0);
  });
  out.push_back(r);
}

// Chain speculative verification: 4 draft tokens. Inputs are probabilities (softmax of
// independent LLM-like logits), built outside the timed region; the draft tokens are sampled
// from the draft probabilities, as a draft model would.
static void verify_rows(Timer& timer, std::vector<Row>& out, uint32_t B, uint32_t V) {
  const uint32_t n = 4;
  size_t bytes = (size_t)B * V * sizeof(float);
  Row r{"flashinfer.chain_speculative_sampling", "verify4", "f32",
        "ChainSpeculativeSampling, 4 drafts, probabilities in, deterministic; bytes counts one row "
        "per batch row like the other workloads (the kernel reads up to 4 draft + 5 target rows)",
        B, V, bytes, {}};
  DevBuf draft, target, draft_ids, out_ids, accepted, emitted, valid, ws;
  cudaError_t e;
  if ((e = draft.alloc((size_t)B * n * V * sizeof(float))) != cudaSuccess ||
      (e = target.alloc((size_t)B * (n + 1) * V * sizeof(float))) != cudaSuccess ||
      (e = draft_ids.alloc((size_t)B * n * sizeof(int32_t))) != cudaSuccess ||
      (e = out_ids.alloc((size_t)B * (n + 1) * sizeof(int32_t))) != cudaSuccess ||
      (e = accepted.alloc(B * sizeof(int32_t))) != cudaSuccess ||
      (e = emitted.alloc(B * sizeof(int32_t))) != cudaSuccess ||
      (e = valid.alloc((size_t)B * n)) != cudaSuccess ||
      (e = ws.alloc(SOFTMAX_WS_BYTES)) != cudaSuccess) {
    cudaGetLastError();
    r.t.error = "skipped: " + err_str(e);
    out.push_back(r);
    return;
  }
  // Setup (untimed): logits -> probabilities in place, then sample the draft tokens.
  e = fill_logits(draft.as<float>(), B * n, V, 11);
  if (e == cudaSuccess) e = fill_logits(target.as<float>(), B * (n + 1), V, 12);
  if (e == cudaSuccess)
    e = fi::OnlineSoftmax<float>(draft.as<float>(), draft.as<float>(), B * n, V, nullptr, 1.0f,
                                 ws.p, SOFTMAX_WS_BYTES, false, 0);
  if (e == cudaSuccess)
    e = fi::OnlineSoftmax<float>(target.as<float>(), target.as<float>(), B * (n + 1), V, nullptr,
                                 1.0f, ws.p, SOFTMAX_WS_BYTES, false, 0);
  if (e == cudaSuccess)
    e = fi::SamplingFromProb<float, int32_t>(draft.as<float>(), draft_ids.as<int32_t>(),
                                             valid.as<bool>(), nullptr, B * n, V, true, nullptr,
                                             SEED + 1, nullptr, OFFSET, 0);
  if (e == cudaSuccess) e = cudaMemset(accepted.p, 0, B * sizeof(int32_t));
  if (e == cudaSuccess) e = cudaMemset(emitted.p, 0, B * sizeof(int32_t));
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    if (is_sticky(e)) g_fatal = true;
    cudaGetLastError();
    r.t.error = "error in setup: " + err_str(e);
    out.push_back(r);
    return;
  }
  // The kernel adds to the accepted / emitted counters; their values are not read here.
  r.t = timer.time([&] {
    return fi::ChainSpeculativeSampling<float, int32_t>(
        draft.as<float>(), draft_ids.as<int32_t>(), target.as<float>(), out_ids.as<int32_t>(),
        accepted.as<int32_t>(), emitted.as<int32_t>(), B, n, V, true, nullptr, SEED, nullptr,
        OFFSET, 0);
  });
  out.push_back(r);
}

// sonic-bench's verification workloads: target logits in (softmax timed), draft probabilities
// in, draft tokens sampled from them (untimed setup). One group per draft count.
struct VerifyGroup {
  uint32_t count = 0, n = 0;
  DevBuf logits, probs, draft, draft_ids, out_ids, accepted, emitted, valid, ws;
};

static cudaError_t setup_group(VerifyGroup& g, uint32_t V, uint32_t seed) {
  uint32_t rows = g.count * (g.n + 1), drafted = g.count * g.n;
  cudaError_t e;
  if ((e = g.logits.alloc((size_t)rows * V * sizeof(float))) != cudaSuccess ||
      (e = g.probs.alloc((size_t)rows * V * sizeof(float))) != cudaSuccess ||
      (e = g.draft.alloc((size_t)std::max(drafted, 1u) * V * sizeof(float))) != cudaSuccess ||
      (e = g.draft_ids.alloc((size_t)std::max(drafted, 1u) * sizeof(int32_t))) != cudaSuccess ||
      (e = g.out_ids.alloc((size_t)rows * sizeof(int32_t))) != cudaSuccess ||
      (e = g.accepted.alloc(g.count * sizeof(int32_t))) != cudaSuccess ||
      (e = g.emitted.alloc(g.count * sizeof(int32_t))) != cudaSuccess ||
      (e = g.valid.alloc((size_t)std::max(rows, drafted))) != cudaSuccess ||
      (e = g.ws.alloc(SOFTMAX_WS_BYTES)) != cudaSuccess)
    return e;
  e = fill_logits(g.logits.as<float>(), rows, V, seed);
  if (e == cudaSuccess && drafted > 0) {
    e = fill_logits(g.draft.as<float>(), drafted, V, seed + 1000);
    if (e == cudaSuccess)
      e = fi::OnlineSoftmax<float>(g.draft.as<float>(), g.draft.as<float>(), drafted, V, nullptr,
                                   1.0f, g.ws.p, SOFTMAX_WS_BYTES, false, 0);
    if (e == cudaSuccess)
      e = fi::SamplingFromProb<float, int32_t>(g.draft.as<float>(), g.draft_ids.as<int32_t>(),
                                               g.valid.as<bool>(), nullptr, drafted, V, true,
                                               nullptr, SEED + 1, nullptr, OFFSET, 0);
  }
  if (e == cudaSuccess) e = cudaMemset(g.accepted.p, 0, g.count * sizeof(int32_t));
  if (e == cudaSuccess) e = cudaMemset(g.emitted.p, 0, g.count * sizeof(int32_t));
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  return e;
}

static cudaError_t run_group(VerifyGroup& g, uint32_t V) {
  uint32_t rows = g.count * (g.n + 1);
  cudaError_t e = fi::OnlineSoftmax<float>(g.logits.as<float>(), g.probs.as<float>(), rows, V,
                                           nullptr, 1.0f, g.ws.p, SOFTMAX_WS_BYTES, false, 0);
  if (e != cudaSuccess) return e;
  if (g.n == 0)
    return fi::SamplingFromProb<float, int32_t>(g.probs.as<float>(), g.out_ids.as<int32_t>(),
                                                g.valid.as<bool>(), nullptr, g.count, V, true,
                                                nullptr, SEED, nullptr, OFFSET, 0);
  return fi::ChainSpeculativeSampling<float, int32_t>(
      g.draft.as<float>(), g.draft_ids.as<int32_t>(), g.probs.as<float>(), g.out_ids.as<int32_t>(),
      g.accepted.as<int32_t>(), g.emitted.as<int32_t>(), g.count, g.n, V, true, nullptr, SEED,
      nullptr, OFFSET, 0);
}

static void verify_workload_rows(Timer& timer, std::vector<Row>& out, uint32_t B, uint32_t V,
                                 bool hetero) {
  // Draft counts per request: 4 each (uniform), or 0..7 from a fixed hash (hetero).
  std::vector<uint32_t> per_n(8, 0);
  for (uint32_t r = 0; r < B; ++r) {
    uint32_t h = (r * 0x9e3779b9u) ^ (B * 0x85ebca6bu) ^ (V * 0xc2b2ae35u);
    h ^= h >> 16; h *= 0x7feb352dU; h ^= h >> 15;
    per_n[hetero ? h % 8 : 4] += 1;
  }
  size_t target_rows = 0, draft_rows = 0;
  for (uint32_t n = 0; n < 8; ++n) {
    target_rows += (size_t)per_n[n] * (n + 1);
    draft_rows += (size_t)per_n[n] * n;
  }
  size_t bytes = (target_rows + draft_rows) * V * sizeof(float);
  Row r{"flashinfer.softmax+chain_speculative_sampling", hetero ? "verify_hetero" : "verify_uniform",
        "f32",
        hetero ? "one OnlineSoftmax + ChainSpeculativeSampling call pair per draft count (softmax + "
                 "SamplingFromProb for 0 drafts); T 1, dense draft probabilities, no penalties, "
                 "bitmask or truncation (FlashInfer has none in this path): a lower bound; "
                 "deterministic; bytes = target + draft rows"
               : "OnlineSoftmax (T 1) of the target logits, then ChainSpeculativeSampling, 4 "
                 "drafts, deterministic; bytes = target + draft rows",
        B, V, bytes, {}};
  std::vector<std::unique_ptr<VerifyGroup>> groups;
  for (uint32_t n = 0; n < 8; ++n) {
    if (per_n[n] == 0) continue;
    auto g = std::make_unique<VerifyGroup>();
    g->count = per_n[n];
    g->n = n;
    cudaError_t e = setup_group(*g, V, 21 + n);
    if (e != cudaSuccess) {
      if (is_sticky(e)) g_fatal = true;
      cudaGetLastError();
      r.t.error = "skipped in setup: " + err_str(e);
      out.push_back(r);
      return;
    }
    groups.push_back(std::move(g));
  }
  r.t = timer.time([&] {
    for (auto& g : groups) {
      cudaError_t e = run_group(*g, V);
      if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
  });
  out.push_back(r);
}

static void measure_shape(Timer& timer, std::vector<Row>& out, uint32_t B, uint32_t V,
                          fi::RadixRowState* row_states) {
  size_t n = (size_t)B * V;
  DevBuf f32, bf16;
  cudaError_t e = f32.alloc(n * sizeof(float));
  if (e == cudaSuccess) e = fill_logits(f32.as<float>(), B, V, 7);
  if (e == cudaSuccess) e = bf16.alloc(n * sizeof(__nv_bfloat16));
  if (e == cudaSuccess) {
    to_bf16<<<4096, 256>>>(f32.as<float>(), bf16.as<__nv_bfloat16>(), n);
    e = cudaDeviceSynchronize();
  }
  if (e != cudaSuccess) {
    if (is_sticky(e)) g_fatal = true;
    cudaGetLastError();
    out.push_back({"flashinfer.*", "*", "*", "skipped making logits: " + err_str(e), B, V,
                   n * sizeof(float), {}});
    return;
  }
  sampling_rows(timer, out, f32.as<float>(), B, V);
  if (!g_fatal) hetero_rows(timer, out, f32.as<float>(), B, V, row_states);
  if (!g_fatal) topk_rows<float>(timer, out, "f32", f32.as<float>(), B, V, row_states);
  if (!g_fatal)
    topk_rows<__nv_bfloat16>(timer, out, "bf16", bf16.as<__nv_bfloat16>(), B, V, row_states);
  f32.reset();  // free before verify's 9 rows per batch row
  bf16.reset();
  if (!g_fatal) verify_rows(timer, out, B, V);
}

// ---------------------------------------------------------------- main

static std::vector<uint32_t> parse_list(const char* s) {
  std::vector<uint32_t> v;
  for (const char* p = s; *p;) {
    char* end;
    unsigned long x = strtoul(p, &end, 10);
    if (end == p || x == 0) return {};
    v.push_back((uint32_t)x);
    p = (*end == ',') ? end + 1 : end;
    if (*end && *end != ',') return {};
  }
  return v;
}

static int usage(FILE* f, int rc) {
  fprintf(f,
          "flashinfer_peers: FlashInfer %s sampling kernels (C++ header API) on sonic-bench shapes\n"
          "usage: flashinfer_peers --out FILE.json [--quick] [--runs N] [--vocabs a,b,..] "
          "[--batches a,b,..]\n"
          "  --quick     vocab 128256, batches 1,64\n"
          "  --runs N    timed runs per cell after 10 warm-up runs (default 100)\n"
          "defaults: vocabs 32000,128256,151936,262144; batches 1,8,64,256,1024\n"
          "then sonic-bench's verification grid: vocabs 128256,151936; batches 1,8,32,128\n"
          "  (--quick: vocab 128256, batches 1,32)\n"
          "exit: 0 done, 1 fatal CUDA error, 2 usage or no CUDA device\n",
          FLASHINFER_VERSION_STR);
  return rc;
}

int main(int argc, char** argv) {
  const char* out_path = nullptr;
  bool quick = false;
  int runs = 100;
  std::vector<uint32_t> vocabs = {32000, 128256, 151936, 262144};
  std::vector<uint32_t> batches = {1, 8, 64, 256, 1024};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") return usage(stdout, 0);
    if (a == "--quick") quick = true;
    else if (a == "--out" && i + 1 < argc) out_path = argv[++i];
    else if (a == "--runs" && i + 1 < argc) runs = atoi(argv[++i]);
    else if (a == "--vocabs" && i + 1 < argc) vocabs = parse_list(argv[++i]);
    else if (a == "--batches" && i + 1 < argc) batches = parse_list(argv[++i]);
    else return usage(stderr, 2);
  }
  if (quick) { vocabs = {128256}; batches = {1, 64}; }
  if (!out_path || runs < 1 || vocabs.empty() || batches.empty()) return usage(stderr, 2);

  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    fprintf(stderr, "no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "count 0");
    return 2;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  printf("device: %s (sm_%d%d, %d SMs); FlashInfer %s\n", prop.name, prop.major, prop.minor,
         prop.multiProcessorCount, FLASHINFER_VERSION_STR);

  Timer timer;
  timer.runs = runs;
  DevBuf flush, row_states;
  if (flush.alloc(timer.flush_bytes) != cudaSuccess ||
      row_states.alloc(ROW_STATES_BYTES) != cudaSuccess ||
      cudaMemset(row_states.p, 0, ROW_STATES_BYTES) != cudaSuccess) {
    fprintf(stderr, "cannot allocate the flush / row-state buffers\n");
    return 1;
  }
  timer.flush = flush.p;
  cudaEventCreate(&timer.start);
  cudaEventCreate(&timer.stop);

  std::vector<Row> rows;
  for (uint32_t V : vocabs) {
    for (uint32_t B : batches) {
      measure_shape(timer, rows, B, V, row_states.as<fi::RadixRowState>());
      write_json(out_path, prop.name, runs, rows);  // after every shape: a crash keeps what ran
      printf("vocab %u batch %u: done\n", V, B);
      fflush(stdout);
      if (g_fatal) {
        fprintf(stderr, "a sticky CUDA error ended the run; %s holds what ran\n", out_path);
        return 1;
      }
    }
  }
  // sonic-bench's verification grid (its own shapes).
  std::vector<uint32_t> vvocabs = {128256, 151936}, vbatches = {1, 8, 32, 128};
  if (quick) { vvocabs = {128256}; vbatches = {1, 32}; }
  for (uint32_t V : vvocabs) {
    for (uint32_t B : vbatches) {
      for (bool hetero : {false, true}) {
        verify_workload_rows(timer, rows, B, V, hetero);
        if (g_fatal) break;
      }
      write_json(out_path, prop.name, runs, rows);
      printf("verify vocab %u batch %u: done\n", V, B);
      fflush(stdout);
      if (g_fatal) {
        fprintf(stderr, "a sticky CUDA error ended the run; %s holds what ran\n", out_path);
        return 1;
      }
    }
  }
  printf("wrote %s (%zu rows)\n", out_path, rows.size());
  return 0;
}
