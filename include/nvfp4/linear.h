// The one place where the runtime meets the kernels: a prepared linear layer y = W x over a
// window of n activation columns (x[t*n_in + i], y[t*n_out + r]).
//
// Linear::prepare() keeps whatever weight layout the fastest kernel of this machine wants
// (repacking happens once, at load); forward() dispatches to the variant chosen at start
// (see kernels.h: scalar reference, AVX2, AVX-512). Integer-exact modes give the reference's bits
// for every ISA, thread count and n.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "nvfp4/huge_pages.h"
#include "nvfp4/kernels_ref.h"
#include "nvfp4/matrix.h"
#include "nvfp4/thread_pool.h"

namespace nvfp4 {

// The prepared activations of a window (a16q8: megabytes for a prompt), kept by the caller across
// calls so that each call neither allocates nor page-faults them. One per thread of control that
// calls forward(); not shared between concurrent callers.
class LinearScratch {
 public:
  LinearScratch();
  ~LinearScratch();
  LinearScratch(LinearScratch&&) noexcept;
  LinearScratch& operator=(LinearScratch&&) noexcept;
  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

class Linear {
 public:
  Linear();
  ~Linear();
  Linear(Linear&&) noexcept;
  Linear& operator=(Linear&&) noexcept;

  // Copies the weights into the kernels' layout. input_scale: the checkpoint's activation scale
  // (W4A4 checkpoints), 0 when it has none (then Mode::w4a4 is refused). arena: where the weight
  // stream goes (a model's loader passes one, so small layers share huge pages); null: a mapping
  // of its own when it is 2 MiB or more (nvfp4/huge_pages.h).
  static Linear prepare(const RowView& w, float input_scale = 0.0f, const std::string& name = "",
                        std::shared_ptr<HugeArena> arena = nullptr, ThreadPool* pool = nullptr);
  // The same from ggml's NVFP4 blocks (a GGUF tensor where the file maps it), packed straight
  // into the kernels' layout. pool (either form): its threads pack the tiles side by side.
  static Linear prepare(const GgmlView& w, float input_scale = 0.0f, const std::string& name = "",
                        std::shared_ptr<HugeArena> arena = nullptr, ThreadPool* pool = nullptr);

  int64_t n_out() const;
  int64_t n_in() const;
  bool has_input_scale() const;
  // y = W x for n columns. Throws nvfp4::Error for a mode this layer cannot serve. scratch: the
  // caller's buffers for the prepared activations (null: a temporary one for this call).
  void forward(Mode mode, const float* x, int64_t n, float* y, ThreadPool& pool,
               LinearScratch* scratch = nullptr) const;
  // forward() of several layers that read the same x (n_in equal), e.g. q/k/v or gate/up: the
  // activations are prepared once and one dispatch covers the union of their row tiles. Each
  // layer's y[i] equals its own forward() bit for bit (a tile's arithmetic does not depend on
  // which call or thread runs it). w4a4 layers, whose input scales differ, each
  // get their own prepared activations, then the same one dispatch.
  static void forward_group(Mode mode, std::span<const Linear* const> layers, const float* x, int64_t n,
                            std::span<float* const> y, ThreadPool& pool, LinearScratch* scratch = nullptr);
  // forward_group of layers with one n_out (gate and up), dispatched by row tile instead of over
  // the union: a chunk of the pool computes tiles [b, e) of every layer, then calls
  // rows(r0, r1) with the output rows [r0, r1) those tiles hold (r1 <= n_out), so an elementwise
  // op over the layers' outputs at those rows, for every column (SwiGLU of gate and up), runs in
  // the same hand-off. Each row of [0, n_out) is in exactly one rows() call; each y[i] equals
  // its own forward() bit for bit (w4a4: each layer's activations prepared with its own scale).
  static void forward_rows(Mode mode, std::span<const Linear* const> layers, const float* x, int64_t n,
                           std::span<float* const> y, ThreadPool& pool, LinearScratch* scratch,
                           const std::function<void(int64_t, int64_t)>& rows);
  // forward() of several layers, each over its own input: layer i reads xs[i] (ns[i] columns of
  // its n_in) and writes ys[i]. Activations are prepared per layer, then one dispatch covers the
  // union of all row tiles (a mixture-of-experts layer's experts over the tokens routed to each).
  // Each y equals its own forward() bit for bit. A layer with ns[i] == 0 is skipped.
  static void forward_many(Mode mode, std::span<const Linear* const> layers, std::span<const float* const> xs,
                           std::span<const int64_t> ns, std::span<float* const> ys, ThreadPool& pool,
                           LinearScratch* scratch = nullptr);
  // forward_many over rows of one input x (n columns of the layers' common n_in): layer i reads
  // columns rows[i][0..ns[i]) of x, in that order (a MoE layer: the tokens routed to an expert).
  // In a16q8 x is quantized once and each layer's columns are copied from it, so a token routed to
  // k experts is prepared once rather than 2k times; consecutive layers with the same rows (an
  // expert's gate and up) share one block. Other modes gather the float columns (w4a4: each layer
  // quantizes them with its own input scale). Each y equals forward() of its columns bit for bit.
  static void forward_routed(Mode mode, std::span<const Linear* const> layers, const float* x, int64_t n,
                             std::span<const int64_t* const> rows, std::span<const int64_t> ns,
                             std::span<float* const> ys, ThreadPool& pool, LinearScratch* scratch = nullptr);
  // The name of the kernel forward() runs for (mode, n), for logs: e.g. "gemv_a16q8_avx512vnni".
  std::string kernel_name(Mode mode, int64_t n) const;
  // Bytes of the prepared weight stream (what one forward() reads): benchmarks' roofline.
  int64_t weight_bytes() const;
  // The packed weight stream (weight_bytes() less the block summaries), as the kernels read it:
  // what an expert store writes to its file (src/models/expert_store.h).
  std::span<const uint8_t> stream() const;
  // Frees the weight stream; the layer then runs only while attach_stream() lends it one (forward
  // of a detached layer throws nvfp4::Error). The block summaries stay.
  void release_stream();
  // Reads the stream from p (stream().size() bytes, the same bytes stream() gave, kept alive and
  // unchanged until detached); null detaches it.
  void attach_stream(const uint8_t* p);
  // A deep copy (benchmarks rotate among copies to stream them from DRAM); huge_pages = false
  // puts its weight stream on 4 KiB pages (nvfp4/huge_pages.h), to time what huge pages give.
  Linear clone(bool huge_pages = true) const;
  // A deep copy whose weight stream is carved from arena, back to back with the arena's other
  // blocks, as a loaded model's layers are.
  Linear clone(std::shared_ptr<HugeArena> arena) const;

  struct Impl;

 private:
  Linear clone_with(const HugePageAllocator<uint8_t>& alloc) const;  // the copy, its stream from alloc
  static void check_resident(const Linear& l);  // nvfp4::Error when its stream is released
  std::unique_ptr<Impl> impl_;
};

}  // namespace nvfp4
