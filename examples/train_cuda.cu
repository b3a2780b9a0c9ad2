// SPDX-License-Identifier: MIT
// train_cuda.cu: the CUDA main job. An MLP (784-1024-1024-10) trained by SGD on synthetic,
// deterministic data, with cuBLAS matmuls and small kernels for the rest. Like a framework
// without a caching allocator it cudaMallocs its activations and gradients every step and frees
// them at the step's end (weights and data once), so a run under ndmem has device traffic to
// account. stdout carries only the losses and is the same, byte for byte, on every run on one
// GPU (the GPU tier compares it with and without ndmem); timings and the program's own count of
// its device allocations go to stderr.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vector>

enum { IN = 784, HID = 1024, OUT = 10, SAMPLES = 8192, PRINT_EVERY = 20 };
static const float LR = 0.1f;

static void cuda_check(cudaError_t e, const char *what, int line) {
  if (e == cudaSuccess) return;
  fprintf(stderr, "train_cuda: %s (line %d): %s\n", what, line, cudaGetErrorString(e));
  exit(1);
}
static void cublas_check(cublasStatus_t s, const char *what, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  fprintf(stderr, "train_cuda: %s (line %d): cuBLAS status %d\n", what, line, (int)s);
  exit(1);
}
#define CK(x) cuda_check((x), #x, __LINE__)
#define CB(x) cublas_check((x), #x, __LINE__)

// The program's own count of its device memory, printed on stderr at exit: the GPU tier checks
// ndmem's sites against it (cuBLAS's own allocations come on top).
static struct {
  uint64_t allocs, frees, alloc_bytes, live, peak, leaked, leaked_blocks;
} own;

// Macros, not functions: each cudaMalloc call sits on the line that uses it, so every buffer is
// its own allocation site in ndmem's report (a helper function would make them all one site).
#define DALLOC(p, n)                                                                               \
  do {                                                                                             \
    CK(cudaMalloc((void **)&(p), (n)));                                                            \
    own_alloc(n);                                                                                  \
  } while (0)
#define DFREE(p, n)                                                                                \
  do {                                                                                             \
    CK(cudaFree(p));                                                                               \
    own_free(n);                                                                                   \
  } while (0)

static void own_alloc(size_t n) {
  own.allocs++;
  own.alloc_bytes += n;
  own.live += n;
  if (own.live > own.peak) own.peak = own.live;
}
static void own_free(size_t n) {
  own.frees++;
  own.live -= n;
}

// ---- kernels. Every reduction runs in a fixed order with no atomics: the losses reproduce.

// z = z + b (per column); a = relu(z) when a is given
__global__ void bias_act(float *z, const float *b, float *a, int rows, int cols) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= (size_t)rows * cols) return;
  float v = z[i] + b[i % cols];
  z[i] = v;
  if (a) a[i] = v > 0.f ? v : 0.f;
}

// One thread per row: the row's cross-entropy loss and d(mean loss)/d(logits).
__global__ void softmax_xent(const float *z, const int *y, float *dz, float *loss, int rows,
                             int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float *zr = z + (size_t)r * cols;
  float m = zr[0];
  for (int c = 1; c < cols; c++) m = fmaxf(m, zr[c]);
  float s = 0.f;
  for (int c = 0; c < cols; c++) s += expf(zr[c] - m);
  int t = y[r];
  loss[r] = logf(s) - (zr[t] - m);
  for (int c = 0; c < cols; c++)
    dz[(size_t)r * cols + c] = (expf(zr[c] - m) / s - (c == t ? 1.f : 0.f)) / (float)rows;
}

// One block of MEAN_THREADS: strided partial sums, then a fixed tree.
#define MEAN_THREADS 256
__global__ void mean(const float *v, int n, float *out) {
  __shared__ float part[MEAN_THREADS];
  float acc = 0.f;
  for (int i = threadIdx.x; i < n; i += MEAN_THREADS) acc += v[i];
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int w = MEAN_THREADS / 2; w > 0; w >>= 1) {
    if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = part[0] / (float)n;
}

// db[c] = sum over rows of dz[r][c], one thread per column (adjacent threads, adjacent columns)
__global__ void col_sum(const float *dz, float *db, int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float acc = 0.f;
  for (int r = 0; r < rows; r++) acc += dz[(size_t)r * cols + c];
  db[c] = acc;
}

// dz = da where the pre-activation z was positive
__global__ void relu_back(const float *da, const float *z, float *dz, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) dz[i] = z[i] > 0.f ? da[i] : 0.f;
}

__global__ void sgd(float *w, const float *g, float lr, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) w[i] -= lr * g[i];
}

static unsigned blocks(size_t n) { return (unsigned)((n + 255) / 256); }

// C[M x N] = op(A) op(B), all row-major; op(A) is M x K, op(B) is K x N. cuBLAS is
// column-major, where a row-major matrix reads as its transpose: it computes C^T = op(B)^T
// op(A)^T with the operands swapped. ld of a row-major matrix is its row length as stored.
static void gemm(cublasHandle_t h, bool ta, bool tb, int M, int N, int K, const float *A,
                 const float *B, float *C) {
  const float one = 1.f, zero = 0.f;
  CB(cublasSgemm(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &one,
                 B, tb ? K : N, A, ta ? M : K, &zero, C, N));
}

// ---- data: splitmix64, so the data and the initial weights depend on the seed alone
static uint64_t rng_state;
static uint64_t splitmix64(void) {
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static float uniform(float a) { // [-a, a)
  return ((float)(splitmix64() >> 40) * (1.f / 16777216.f) * 2.f - 1.f) * a;
}
static void fill(std::vector<float> &v, float a) {
  for (float &x : v) x = uniform(a);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int parse_int(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: train_cuda [--steps N] [--batch N] [--seed N] [--leak] [--pace-ms N]\n"
          "  --steps N    SGD steps (default 200)\n"
          "  --batch N    minibatch size, at most %d (default 256)\n"
          "  --seed N     seed of the synthetic data and the initial weights (default 42)\n"
          "  --leak       keep one activation per step (a growing device leak)\n"
          "  --pace-ms N  sleep N ms after each step (spreads a run over time)\n"
          "stdout: the loss every %d steps and at the last, then 'final loss X'\n",
          SAMPLES, PRINT_EVERY);
}

int main(int argc, char **argv) {
  long steps = 200, batch = 256, seed = 42, pace_ms = 0;
  bool leak = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    long *dst = NULL, lo = 1, hi = 1000000000;
    if (!strcmp(a, "--leak")) {
      leak = true;
      continue;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--steps")) {
      dst = &steps;
    } else if (!strcmp(a, "--batch")) {
      dst = &batch, hi = SAMPLES;
    } else if (!strcmp(a, "--seed")) {
      dst = &seed, lo = 0;
    } else if (!strcmp(a, "--pace-ms")) {
      dst = &pace_ms, lo = 0, hi = 60000;
    }
    if (!dst || i + 1 >= argc || parse_int(argv[++i], lo, hi, dst)) {
      fprintf(stderr, "train_cuda: bad argument near '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  const int B = (int)batch;

  // Inputs uniform in [-1, 1); the label is the argmax of a fixed random linear teacher, so
  // there is something to learn and the loss falls.
  rng_state = (uint64_t)seed;
  std::vector<float> x((size_t)SAMPLES * IN), teacher((size_t)IN * OUT);
  std::vector<int> y(SAMPLES);
  fill(x, 1.f);
  fill(teacher, 1.f);
  for (int s = 0; s < SAMPLES; s++) {
    int best = 0;
    double best_v = 0;
    for (int c = 0; c < OUT; c++) {
      double v = 0;
      for (int k = 0; k < IN; k++) v += (double)x[(size_t)s * IN + k] * teacher[(size_t)k * OUT + c];
      if (c == 0 || v > best_v) best = c, best_v = v;
    }
    y[s] = best;
  }
  std::vector<float> w1((size_t)IN * HID), w2((size_t)HID * HID), w3((size_t)HID * OUT);
  fill(w1, sqrtf(6.f / IN)); // He-uniform for the ReLU layers
  fill(w2, sqrtf(6.f / HID));
  fill(w3, sqrtf(6.f / (HID + OUT)));

  cublasHandle_t h;
  CB(cublasCreate(&h));
  CB(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH)); // FP32, no TF32: same bits every run

  // ---- once: data and parameters
  float *d_x, *d_w1, *d_w2, *d_w3, *d_b1, *d_b2, *d_b3;
  int *d_y;
  DALLOC(d_x, x.size() * sizeof(float));
  DALLOC(d_y, y.size() * sizeof(int));
  DALLOC(d_w1, w1.size() * sizeof(float));
  DALLOC(d_w2, w2.size() * sizeof(float));
  DALLOC(d_w3, w3.size() * sizeof(float));
  DALLOC(d_b1, HID * sizeof(float));
  DALLOC(d_b2, HID * sizeof(float));
  DALLOC(d_b3, OUT * sizeof(float));
  CK(cudaMemcpy(d_x, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_y, y.data(), y.size() * sizeof(int), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_w1, w1.data(), w1.size() * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_w2, w2.data(), w2.size() * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_w3, w3.data(), w3.size() * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemset(d_b1, 0, HID * sizeof(float)));
  CK(cudaMemset(d_b2, 0, HID * sizeof(float)));
  CK(cudaMemset(d_b3, 0, OUT * sizeof(float)));

  const size_t act = (size_t)B * HID * sizeof(float), logits = (size_t)B * OUT * sizeof(float);
  const size_t nh = (size_t)B * HID;
  const int batches = SAMPLES / B;
  float loss = 0.f;
  double t0 = now();
  for (long step = 0; step < steps; step++) {
    const float *xb = d_x + (size_t)(step % batches) * B * IN;
    const int *yb = d_y + (size_t)(step % batches) * B;
    float *z1, *a1, *z2, *a2, *z3, *dz3, *rowloss, *d_loss;
    float *dw3, *db3, *da2, *dz2, *dw2, *db2, *da1, *dz1, *dw1, *db1;

    // forward
    DALLOC(z1, act);
    DALLOC(a1, act); // LEAK: with --leak, one of these per step is never freed
    DALLOC(z2, act);
    DALLOC(a2, act);
    DALLOC(z3, logits);
    gemm(h, false, false, B, HID, IN, xb, d_w1, z1);
    bias_act<<<blocks(nh), 256>>>(z1, d_b1, a1, B, HID);
    gemm(h, false, false, B, HID, HID, a1, d_w2, z2);
    bias_act<<<blocks(nh), 256>>>(z2, d_b2, a2, B, HID);
    gemm(h, false, false, B, OUT, HID, a2, d_w3, z3);
    bias_act<<<blocks((size_t)B * OUT), 256>>>(z3, d_b3, NULL, B, OUT);
    DALLOC(dz3, logits);
    DALLOC(rowloss, B * sizeof(float));
    DALLOC(d_loss, sizeof(float));
    softmax_xent<<<blocks(B), 256>>>(z3, yb, dz3, rowloss, B, OUT);
    mean<<<1, MEAN_THREADS>>>(rowloss, B, d_loss);
    CK(cudaGetLastError());

    // backward: dW = A^T dZ, db = column sums of dZ, dA = dZ W^T
    DALLOC(dw3, (size_t)HID * OUT * sizeof(float));
    DALLOC(db3, OUT * sizeof(float));
    DALLOC(da2, act);
    DALLOC(dz2, act);
    gemm(h, true, false, HID, OUT, B, a2, dz3, dw3);
    col_sum<<<blocks(OUT), 256>>>(dz3, db3, B, OUT);
    gemm(h, false, true, B, HID, OUT, dz3, d_w3, da2);
    relu_back<<<blocks(nh), 256>>>(da2, z2, dz2, nh);
    DALLOC(dw2, (size_t)HID * HID * sizeof(float));
    DALLOC(db2, HID * sizeof(float));
    DALLOC(da1, act);
    DALLOC(dz1, act);
    gemm(h, true, false, HID, HID, B, a1, dz2, dw2);
    col_sum<<<blocks(HID), 256>>>(dz2, db2, B, HID);
    gemm(h, false, true, B, HID, HID, dz2, d_w2, da1);
    relu_back<<<blocks(nh), 256>>>(da1, z1, dz1, nh);
    DALLOC(dw1, (size_t)IN * HID * sizeof(float));
    DALLOC(db1, HID * sizeof(float));
    gemm(h, true, false, IN, HID, B, xb, dz1, dw1);
    col_sum<<<blocks(HID), 256>>>(dz1, db1, B, HID);

    // update
    sgd<<<blocks((size_t)IN * HID), 256>>>(d_w1, dw1, LR, (size_t)IN * HID);
    sgd<<<blocks((size_t)HID * HID), 256>>>(d_w2, dw2, LR, (size_t)HID * HID);
    sgd<<<blocks((size_t)HID * OUT), 256>>>(d_w3, dw3, LR, (size_t)HID * OUT);
    sgd<<<blocks(HID), 256>>>(d_b1, db1, LR, HID);
    sgd<<<blocks(HID), 256>>>(d_b2, db2, LR, HID);
    sgd<<<blocks(OUT), 256>>>(d_b3, db3, LR, OUT);
    CK(cudaGetLastError());

    bool last = step == steps - 1;
    if (step % PRINT_EVERY == 0 || last) {
      CK(cudaMemcpy(&loss, d_loss, sizeof loss, cudaMemcpyDeviceToHost));
      printf("step %5ld  loss %.8f\n", step, (double)loss);
    }

    // cudaFree waits for the work queued on the buffer (it synchronises the device), so the
    // step's kernels are done before its memory goes back.
    DFREE(z1, act);
    if (leak) {
      own.leaked += act;
      own.leaked_blocks++;
    } else {
      DFREE(a1, act);
    }
    DFREE(z2, act);
    DFREE(a2, act);
    DFREE(z3, logits);
    DFREE(dz3, logits);
    DFREE(rowloss, B * sizeof(float));
    DFREE(d_loss, sizeof(float));
    DFREE(dw3, (size_t)HID * OUT * sizeof(float));
    DFREE(db3, OUT * sizeof(float));
    DFREE(da2, act);
    DFREE(dz2, act);
    DFREE(dw2, (size_t)HID * HID * sizeof(float));
    DFREE(db2, HID * sizeof(float));
    DFREE(da1, act);
    DFREE(dz1, act);
    DFREE(dw1, (size_t)IN * HID * sizeof(float));
    DFREE(db1, HID * sizeof(float));
    if (pace_ms) {
      struct timespec ts = {pace_ms / 1000, (pace_ms % 1000) * 1000000L};
      while (nanosleep(&ts, &ts) && errno == EINTR) {
      }
    }
  }
  CK(cudaDeviceSynchronize());
  double secs = now() - t0;
  printf("final loss %.8f\n", (double)loss);
  fflush(stdout);

  DFREE(d_x, x.size() * sizeof(float));
  DFREE(d_y, y.size() * sizeof(int));
  DFREE(d_w1, w1.size() * sizeof(float));
  DFREE(d_w2, w2.size() * sizeof(float));
  DFREE(d_w3, w3.size() * sizeof(float));
  DFREE(d_b1, HID * sizeof(float));
  DFREE(d_b2, HID * sizeof(float));
  DFREE(d_b3, OUT * sizeof(float));
  CB(cublasDestroy(h));

  fprintf(stderr, "train_cuda: %ld steps, batch %d, %.3f s (%.3f ms/step)\n", steps, B, secs,
          secs * 1e3 / (double)steps);
  // One line the GPU tier parses (tests/gpu/real/t_train_cuda.py): keep its format.
  fprintf(stderr,
          "train_cuda: own device memory: allocs %llu frees %llu alloc_bytes %llu peak %llu "
          "leaked %llu blocks %llu\n",
          (unsigned long long)own.allocs, (unsigned long long)own.frees,
          (unsigned long long)own.alloc_bytes, (unsigned long long)own.peak,
          (unsigned long long)own.leaked, (unsigned long long)own.leaked_blocks);
  return 0;
}
