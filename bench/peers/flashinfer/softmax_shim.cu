// FlashInfer's OnlineSoftmax as a C function, for cake_peer.py (issue 6).
//
// What: one exported function that calls flashinfer::sampling::OnlineSoftmax<float> from
// FlashInfer's header API (include/flashinfer/sampling.cuh, 0.7.2), on a caller's stream.
//
// Why: flashinfer.cake_sampling takes probabilities, so its honest comparison with a sampler
// that takes logits includes a softmax. On Hopper, flashinfer.sampling.softmax(logits, T)
// calls exactly this function (csrc/sampling.cu's softmax binding; the Blackwell-only softmax
// is not taken on sm_90), with a 1 MB workspace and PDL on. Building FlashInfer's whole sampling
// JIT module for one function would cost another long compile; this shim is the same call.
// It is ours; FlashInfer's headers come from the pinned wheel at build time (build_cake.py).
#include <cstddef>
#include <cstdint>

#include <flashinfer/sampling.cuh>

extern "C" int sonic_fi_online_softmax(float* logits, float* probs, uint32_t batch, uint32_t vocab,
                                       float temperature, void* workspace, size_t workspace_bytes,
                                       int enable_pdl, void* stream) {
  return static_cast<int>(flashinfer::sampling::OnlineSoftmax<float>(
      logits, probs, batch, vocab, /*temperature_arr=*/nullptr, temperature, workspace,
      workspace_bytes, enable_pdl != 0, static_cast<cudaStream_t>(stream)));
}

extern "C" const char* sonic_fi_error_string(int status) {
  return cudaGetErrorString(static_cast<cudaError_t>(status));
}
